/* tools/view.c: views of `fusec run` inputs, written after the file as numpy writes them
 * (`--in x=a.npy[::2, ::-1].T`), so that strided inputs (SPEC §3) can be tried from the command
 * line: the view is described to the library by strides over the file's own data (in its
 * order, C or Fortran), never copied. The grammar, applied left to right:
 *
 *   [item, ...]         one item an axis from the first (the others kept whole): a slice
 *                       start:stop:step (numpy's rules: each part optional, negative counts
 *                       from the end, a negative step walks backwards), an index (the axis
 *                       goes), or None (a new axis of one element)
 *   .T                  the axes reversed
 *   .broadcast_to(d, ...)  numpy's broadcast_to: dims aligned on the right, an axis of one
 *                       element repeated with stride 0, new leading axes likewise
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *cli_view_split(const char *arg, size_t *path_len) {
    const char *end = arg + strlen(arg), *npy = NULL;
    for (const char *p = strstr(arg, ".npy"); p; p = strstr(p + 1, ".npy"))
        npy = p;
    /* a view starts right after the last ".npy" with '[' or '.' */
    if (npy && (npy[4] == '[' || npy[4] == '.')) end = npy + 4;
    *path_len = (size_t)(end - arg);
    return end;
}

typedef struct parser {
    const char *s, *at; /* the whole view, where we are */
    char *err;
    size_t errlen;
} parser;

static int fail(parser *p, const char *what) {
    if (*p->at)
        snprintf(p->err, p->errlen, "view '%s': %s at '%s'", p->s, what, p->at);
    else
        snprintf(p->err, p->errlen, "view '%s': %s at the end", p->s, what);
    return -1;
}

static void skip_space(parser *p) {
    while (isspace((unsigned char)*p->at))
        p->at++;
}

static int accept(parser *p, const char *word) {
    skip_space(p);
    size_t n = strlen(word);
    if (strncmp(p->at, word, n)) return 0;
    p->at += n;
    return 1;
}

/* An integer, if one is here: 1 and *v, 0 if none, -1 on overflow. */
static int integer(parser *p, int64_t *v) {
    skip_space(p);
    const char *q = p->at;
    if (*q == '-' || *q == '+') q++;
    if (!isdigit((unsigned char)*q)) return 0;
    char *end;
    errno = 0;
    long long x = strtoll(p->at, &end, 10);
    if (errno == ERANGE) return fail(p, "an integer out of range");
    p->at = end;
    *v = x;
    return 1;
}

/* numpy's slice of an axis of n elements: start, length, step (PySlice_AdjustIndices). */
static int slice(parser *p, int64_t n, int has_start, int64_t start, int64_t *first, int64_t *len,
                 int64_t *step) {
    int64_t stop = 0;
    int has_stop = integer(p, &stop), has_step = 0;
    if (has_stop < 0) return -1;
    *step = 1;
    if (accept(p, ":")) {
        has_step = integer(p, step);
        if (has_step < 0) return -1;
    }
    if (*step == 0) return fail(p, "a slice step of 0");
    if (*step == INT64_MIN) return fail(p, "a slice step out of range");
    int64_t lo = *step < 0 ? -1 : 0, hi = *step < 0 ? n - 1 : n;
    if (!has_start) start = *step < 0 ? hi : lo;
    if (!has_stop) stop = *step < 0 ? lo : hi;
    if (has_start)
        start = start < 0 ? (start + n < lo ? lo : start + n) : (start > hi ? hi : start);
    if (has_stop) stop = stop < 0 ? (stop + n < lo ? lo : stop + n) : (stop > hi ? hi : stop);
    if (*step > 0)
        *len = stop > start ? (stop - start - 1) / *step + 1 : 0;
    else
        *len = start > stop ? (start - stop - 1) / -*step + 1 : 0;
    *first = *len ? start : 0;
    return 0;
}

static int insert_axis(parser *p, cli_view *v, int at) {
    if (v->rank == FUSEC_MAX_RANK) return fail(p, "more than 8 axes");
    memmove(v->shape + at + 1, v->shape + at, sizeof(int64_t) * (size_t)(v->rank - at));
    memmove(v->strides + at + 1, v->strides + at, sizeof(int64_t) * (size_t)(v->rank - at));
    v->shape[at] = 1;
    v->strides[at] = 0;
    v->rank++;
    return 0;
}

static void remove_axis(cli_view *v, int at) {
    memmove(v->shape + at, v->shape + at + 1, sizeof(int64_t) * (size_t)(v->rank - at - 1));
    memmove(v->strides + at, v->strides + at + 1, sizeof(int64_t) * (size_t)(v->rank - at - 1));
    v->rank--;
}

/* One item of [...] on axis *axis (advanced past the axes it keeps or makes). */
static int item(parser *p, cli_view *v, int *axis) {
    if (accept(p, "None")) {
        if (insert_axis(p, v, *axis) != 0) return -1;
        ++*axis;
        return 0;
    }
    if (*axis >= v->rank) return fail(p, "more indices than axes");
    int64_t n = v->shape[*axis], start = 0;
    int has_start = integer(p, &start);
    if (has_start < 0) return -1;
    if (!accept(p, ":")) {
        if (!has_start) return fail(p, "expected an index, a slice or None");
        int64_t i = start < 0 ? start + n : start;
        if (i < 0 || i >= n) {
            char what[128];
            snprintf(what, sizeof what, "index %lld is out of bounds for axis %d with size %lld",
                     (long long)start, *axis, (long long)n);
            return fail(p, what);
        }
        v->offset += i * v->strides[*axis];
        remove_axis(v, *axis);
        return 0;
    }
    int64_t first = 0, len = 0, step = 1;
    if (slice(p, n, has_start, start, &first, &len, &step) != 0) return -1;
    v->offset += first * v->strides[*axis];
    v->shape[*axis] = len;
    if (len > 1) v->strides[*axis] *= step; /* then |step| < n: within the array's span */
    ++*axis;
    return 0;
}

static int broadcast_to(parser *p, cli_view *v) {
    int64_t to[FUSEC_MAX_RANK];
    int k = 0;
    if (!accept(p, "(")) return fail(p, "expected '('");
    do {
        if (k == FUSEC_MAX_RANK) return fail(p, "more than 8 axes");
        int got = integer(p, &to[k]);
        if (got < 0) return -1;
        if (!got || to[k] < 0) return fail(p, "expected a dim (0 or more)");
        k++;
    } while (accept(p, ","));
    if (!accept(p, ")")) return fail(p, "expected ')'");
    if (k < v->rank) return fail(p, "fewer dims than the array has axes");
    cli_view b = *v;
    b.rank = k;
    for (int d = k - 1, s = v->rank - 1; d >= 0; d--, s--) {
        b.shape[d] = to[d];
        b.strides[d] = s >= 0 && v->shape[s] == to[d] ? v->strides[s] : 0;
        if (s >= 0 && v->shape[s] != to[d] && v->shape[s] != 1)
            return fail(p, "an axis that is neither the same size nor 1");
    }
    *v = b;
    return 0;
}

int cli_view_parse(const char *expr, int rank, const int64_t *shape, int fortran, cli_view *v,
                   char *err, size_t errlen) {
    parser p = {expr, expr, err, errlen};
    memset(v, 0, sizeof *v);
    v->rank = rank;
    int64_t stride = 1;
    for (int k = 0; k < rank; k++) { /* the axis whose index varies fastest first */
        int d = fortran ? k : rank - 1 - k;
        v->shape[d] = shape[d];
        v->strides[d] = stride;
        stride *= shape[d];
    }
    for (skip_space(&p); *p.at; skip_space(&p)) {
        if (accept(&p, "[")) {
            int axis = 0;
            if (!accept(&p, "]")) {
                do {
                    if (item(&p, v, &axis) != 0) return -1;
                } while (accept(&p, ","));
                if (!accept(&p, "]")) return fail(&p, "expected ',' or ']'");
            }
        } else if (accept(&p, ".T")) {
            for (int d = 0; d < v->rank / 2; d++) {
                int e = v->rank - 1 - d;
                int64_t t = v->shape[d];
                v->shape[d] = v->shape[e], v->shape[e] = t;
                t = v->strides[d];
                v->strides[d] = v->strides[e], v->strides[e] = t;
            }
        } else if (accept(&p, ".broadcast_to")) {
            if (broadcast_to(&p, v) != 0) return -1;
        } else {
            return fail(&p, "expected [...], .T or .broadcast_to(...)");
        }
    }
    return 0;
}
