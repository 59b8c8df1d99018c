/* runtime/args.c: the checks every launch makes of its buffers (runtime/args.h), in
 * integers, so that no address outside the caller's memory is ever formed. */
#include "runtime/args.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *rt_arg_name(const char *param, int nparams, int i, char *buf, size_t len) {
    if (i < nparams)
        snprintf(buf, len, "parameter '%s'", param ? param : "?");
    else
        snprintf(buf, len, "result %d", i - nparams);
    return buf;
}

#define NAME(i, buf) rt_arg_name((i) < np ? names[i] : NULL, np, (i), (buf), sizeof(buf))

fusec_status rt_check_counts(const ir_tensor *args, int np, int nargs, const char *const *names,
                             char *err, size_t errlen) {
    char a[128];
    for (int i = 0; i < nargs; i++)
        if (ir_dims_count(args[i].dims, args[i].rank) < 0) {
            snprintf(err, errlen, "%s: a tensor of that shape is too large", NAME(i, a));
            return FUSEC_ERR_SHAPE;
        }
    return FUSEC_OK;
}

static fusec_status fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static fusec_status fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return FUSEC_ERR_INVALID_ARGUMENT;
}

/* The bytes of args[i] in memory (counts are checked: they fit). */
static uintptr_t arg_bytes(const ir_tensor *t) {
    return (uintptr_t)ir_dims_count(t->dims, t->rank) * (uintptr_t)ir_dtypes[t->dtype].bytes;
}

int rt_dense_strides(const int64_t *s, int rank, const int64_t *dims) {
    if (ir_dims_count(dims, rank) == 0) return 1;
    int64_t want = 1;
    for (int d = rank - 1; d >= 0; d--) {
        if (dims[d] != 1 && s[d] != want) return 0;
        want *= dims[d];
    }
    return 1;
}

/* The first and one past the last byte that t's elements take, as addresses; 0 when they
 * lie outside the address space: an offset overflows (a stride times a dim), or data plus one
 * wraps below address 0 or past the top, which would read anywhere (before the array). Worked
 * out in integers, so that no such address is ever formed. */
static int arg_span(const ir_tensor *t, uintptr_t *lo, uintptr_t *hi) {
    int64_t min, max;
    uintptr_t at = (uintptr_t)t->data;
    if (ir_byte_span(t->dims, t->strides, t->rank, ir_dtypes[t->dtype].bytes, &min, &max) != 0)
        return 0;
    uint64_t below = (uint64_t)0 - (uint64_t)min; /* min <= 0 */
    if (below > at || (uint64_t)max > UINTPTR_MAX - at) return 0;
    *lo = at - (uintptr_t)below;
    *hi = at + (uintptr_t)max;
    return 1;
}

fusec_status rt_check_buffers(const ir_tensor *args, int np, int nargs, const char *const *names,
                              char *err, size_t errlen) {
    char a[128], b[128];
    /* each argument's span once (lo == hi: empty), for the checks and every pair below */
    uintptr_t lo[RT_MAX_ARGS], hi[RT_MAX_ARGS];
    if (nargs > RT_MAX_ARGS) return fail(err, errlen, "more than %d arguments", RT_MAX_ARGS);
    for (int i = 0; i < nargs; i++) {
        lo[i] = hi[i] = 0;
        if (arg_bytes(&args[i]) == 0) continue;
        if (!args[i].data) return fail(err, errlen, "%s: no data", NAME(i, a));
        /* kernels load and store whole elements, vectors of them with the alignment an
         * element has (x86's aligned streaming stores fault on less) */
        int es = ir_dtypes[args[i].dtype].bytes;
        if ((uintptr_t)args[i].data % (uintptr_t)es)
            return fail(err, errlen, "%s: data at %p is not aligned to its %d-byte elements",
                        NAME(i, a), args[i].data, es);
        if (!arg_span(&args[i], &lo[i], &hi[i]))
            return fail(err, errlen,
                        "%s: its strides reach past any memory (from data at %p, an "
                        "element's address would wrap around the address space)",
                        NAME(i, a), args[i].data);
    }
    for (int i = np; i < nargs; i++) {
        for (int j = 0; j < nargs && hi[i] > lo[i]; j++) {
            if (j == i || hi[j] == lo[j] || hi[i] <= lo[j] || hi[j] <= lo[i]) continue;
            /* in place: the very buffer, dense, of the same dtype and shape */
            int in_place =
                j < np && lo[i] == lo[j] && !args[j].strides && args[i].dtype == args[j].dtype &&
                args[i].rank == args[j].rank &&
                !memcmp(args[i].dims, args[j].dims, sizeof(int64_t) * (size_t)args[i].rank);
            if (!in_place)
                return fail(err, errlen,
                            "%s overlaps %s in memory: a result may only be the very "
                            "buffer of an input of its dtype and shape",
                            NAME(i, a), NAME(j, b));
        }
    }
    return FUSEC_OK;
}
