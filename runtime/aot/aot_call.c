/* runtime/aot/aot_call.c: the runtime of a library built ahead of time (runtime/aot/aot_abi.h),
 * part of libfusec_rt: on the first call, the library's image is read, the best of its CPU
 * codes that this CPU runs is picked (the widest vectors; $FUSEC_CPU names one instead) and
 * loaded by fusec's own loader (runtime/cpu/cpu_elf.c); every call then checks its arguments
 * as fusec_launch does and runs on the thread pool (runtime/cpu/cpu_launch.c).
 *
 * A library's state is made once, under one lock, and published with release order: later
 * calls read it with one acquire load. A failed load is kept too, so that every call gives
 * the same status and message.
 */
#include "runtime/aot/aot_abi.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/args.h"
#include "runtime/cpu/cpu_elf.h"
#include "runtime/cpu/cpu_image.h"
#include "runtime/cpu/cpu_launch.h"
#include "runtime/cpu/cpu_target.h"

typedef struct aot_state {
    fusec_status status; /* of the load: FUSEC_OK, or what every call returns */
    char message[1024];
    rt_cpu_image *img;
    rt_elf *elf;
    rt_cpu_program *prog;
    const char *cpu; /* the code's CPU */
} aot_state;

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local char last_error[1024];

static int fail(fusec_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(fusec_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return (int)st;
}

static void *elf_lookup(void *code, const char *name, char *err, size_t errlen) {
    void *addr = rt_elf_lookup(code, name);
    if (!addr) snprintf(err, errlen, "the library's object code lacks %s", name);
    return addr;
}

/* The object this CPU runs best: the one $FUSEC_CPU names, else the widest vectors (the later
 * of equals: the writer orders them from the oldest CPU up). -1 with s's message when none. */
static int pick(aot_state *s) {
    const rt_cpu_image *img = s->img;
    const char *want = getenv("FUSEC_CPU");
    if (want && (!strcmp(want, "native") || !strcmp(want, "host"))) want = NULL;
    int best = -1, best_bytes = 0;
    char lack[256], held[256] = "";
    size_t used = 0;
    for (int32_t i = 0; i < img->nobjects; i++) {
        const char *name = img->objects[i].cpu;
        used += (size_t)snprintf(held + used, used < sizeof held ? sizeof held - used : 0, "%s%s",
                                 i ? ", " : "", name);
        if (used >= sizeof held) used = sizeof held - 1;
        const rt_cpu_target *t = rt_cpu_target_find(name);
        if (!t || (want && *want && strcmp(want, name))) continue;
        if (rt_cpu_target_missing(t, lack, sizeof lack)) continue;
        if (best < 0 || t->vector_bytes >= best_bytes) best = i, best_bytes = t->vector_bytes;
    }
    if (best >= 0) return best;
    s->status = FUSEC_ERR_UNSUPPORTED;
    if (want && *want)
        snprintf(s->message, sizeof s->message,
                 "FUSEC_CPU=%s: the library holds no code for it that this CPU runs (it holds "
                 "code for %s)",
                 want, held);
    else
        snprintf(s->message, sizeof s->message,
                 "the library holds code for %s, none of which this CPU runs", held);
    return -1;
}

static void load(fusec_rt_lib *lib, aot_state *s) {
    char err[512];
    if (!(s->img = rt_cpu_image_read(lib->image, (size_t)lib->len, err, sizeof err))) {
        s->status = FUSEC_ERR_INTERNAL;
        snprintf(s->message, sizeof s->message, "%s", err);
        return;
    }
    int i = pick(s);
    if (i < 0) return;
    const rt_image_object *o = &s->img->objects[i];
    const rt_cpu_target *t = rt_cpu_target_find(o->cpu);
    s->cpu = o->cpu;
    if (!(s->elf = rt_elf_load(o->data, (size_t)o->len, err, sizeof err)) ||
        !(s->prog = rt_cpu_program_new(&s->img->mod, t->vector_bytes, elf_lookup, s->elf, NULL, err,
                                       sizeof err))) {
        s->status = FUSEC_ERR_UNSUPPORTED;
        snprintf(s->message, sizeof s->message, "loading the code for %s: %s", o->cpu, err);
    }
}

/* The library's state, loaded on first use; NULL when out of memory. */
static aot_state *state(fusec_rt_lib *lib) {
    _Atomic(void *) *slot = (_Atomic(void *) *)&lib->state;
    aot_state *s = atomic_load_explicit(slot, memory_order_acquire);
    if (s) return s;
    pthread_mutex_lock(&load_mu);
    s = atomic_load_explicit(slot, memory_order_relaxed);
    if (!s && (s = calloc(1, sizeof(*s)))) {
        load(lib, s);
        atomic_store_explicit(slot, s, memory_order_release);
    }
    pthread_mutex_unlock(&load_mu);
    return s; /* kept for the process's life, as the library's code is */
}

const char *fusec_rt_last_error(void) {
    return last_error;
}

const char *fusec_rt_target(fusec_rt_lib *lib) {
    aot_state *s = lib ? state(lib) : NULL;
    return s && s->status == FUSEC_OK ? s->cpu : NULL;
}

/* The call's tensors from its pointers and dims, checked as fusec_launch checks them. */
static int bind(const rt_cpu_func *f, const rt_image_sig *sig, void *const *ptrs,
                const int64_t *syms, ir_tensor *args) {
    for (int32_t i = 0; i < f->nsyms; i++)
        if (syms[i] < 0)
            return fail(FUSEC_ERR_SHAPE, "%s: %s = %lld: a dim is at least 0", f->name,
                        sig->sym_names[i], (long long)syms[i]);
    const char *names[RT_MAX_ARGS];
    char name[160];
    for (int32_t i = 0; i < sig->nargs; i++) {
        const rt_image_arg *a = &sig->args[i];
        ir_tensor *t = &args[i];
        memset(t, 0, sizeof(*t));
        t->dtype = (ir_dtype)a->dtype;
        t->rank = a->shape.rank;
        for (int32_t d = 0; d < t->rank; d++)
            t->dims[d] =
                a->shape.dims[d].sym >= 0 ? syms[a->shape.dims[d].sym] : a->shape.dims[d].size;
        t->data = ptrs[i];
        if (i < f->nparams) names[i] = a->name;
        if (ir_dims_count(t->dims, t->rank) < 0)
            return fail(
                FUSEC_ERR_SHAPE, "%s: %s: a tensor of that shape is too large", f->name,
                rt_arg_name(i < f->nparams ? names[i] : NULL, f->nparams, i, name, sizeof name));
    }
    for (int32_t i = 0; i < sig->nshapes; i++) {
        int64_t dims[IR_MAX_RANK];
        for (int32_t d = 0; d < sig->shapes[i].rank; d++)
            dims[d] = sig->shapes[i].dims[d].sym >= 0 ? syms[sig->shapes[i].dims[d].sym]
                                                      : sig->shapes[i].dims[d].size;
        if (ir_dims_count(dims, sig->shapes[i].rank) < 0)
            return fail(FUSEC_ERR_SHAPE,
                        "'%s' would compute a value too large for memory at these shapes", f->name);
    }
    char err[512];
    fusec_status st = rt_check_buffers(args, f->nparams, sig->nargs, names, err, sizeof err);
    return st == FUSEC_OK ? 0 : fail(st, "%s: %s", f->name, err);
}

int fusec_rt_call(fusec_rt_lib *lib, int32_t func, void *const *ptrs, const int64_t *syms,
                  void *stream) {
    (void)stream; /* CPU calls complete before they return */
    aot_state *s = lib ? state(lib) : NULL;
    if (!s) return fail(FUSEC_ERR_OUT_OF_MEMORY, "out of memory");
    if (s->status != FUSEC_OK) return fail(s->status, "%s", s->message);
    if (func < 0 || func >= s->img->mod.nfuncs)
        return fail(FUSEC_ERR_INTERNAL, "internal error: no function %d", (int)func);
    const rt_cpu_func *f = &s->img->mod.funcs[func];
    ir_tensor args[RT_MAX_ARGS];
    int rc = bind(f, &s->img->sigs[func], ptrs, syms, args);
    if (rc) return rc;
    char err[512];
    fusec_status st = rt_cpu_run(s->prog, func, args, syms, err, sizeof err);
    return st == FUSEC_OK ? 0 : fail(st, "%s: %s", f->name, err);
}
