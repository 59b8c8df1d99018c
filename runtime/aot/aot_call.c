/* runtime/aot/aot_call.c: the runtime of a library built ahead of time (runtime/aot/aot_abi.h),
 * part of libfusec_rt: on the first call, the library's image is read and the best of its codes
 * that this machine runs is picked and loaded: on the CPU the widest vectors ($FUSEC_CPU names
 * one instead), loaded by fusec's own loader (runtime/cpu/cpu_elf.c); on CUDA device 0's own
 * architecture's cubin, else the nearest older one of its major version, else PTX the driver
 * compiles, loaded by the driver (runtime/cuda/cuda_launch.c). Every call then checks its
 * arguments as fusec_launch does and runs: on the thread pool (runtime/cpu/cpu_launch.c), or
 * on the caller's stream.
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

#include "runtime/aot/aot_image.h"
#include "runtime/args.h"
#include "runtime/cpu/cpu_elf.h"
#include "runtime/cpu/cpu_launch.h"
#include "runtime/cpu/cpu_target.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_launch.h"

typedef struct aot_state {
    fusec_status status; /* of the load: FUSEC_OK, or what every call returns */
    char message[1024];
    rt_image *img;
    rt_elf *elf;          /* CPU */
    rt_cpu_program *prog; /* CPU */
    rt_cuda_gpu *gpu;     /* CUDA */
    const char *arch;     /* the code's CPU or GPU architecture */
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

/* The list of what the image holds, for messages. */
static void held(const rt_image *img, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < img->ncode && used + 1 < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", img->code[i].arch);
}

/* The code this CPU runs best: the one $FUSEC_CPU names, else the widest vectors (the later
 * of equals: the writer keeps the order it was given). -1 with s's message when none. */
static int pick_cpu(aot_state *s) {
    const rt_image *img = s->img;
    const char *want = getenv("FUSEC_CPU");
    if (want && (!strcmp(want, "native") || !strcmp(want, "host"))) want = NULL;
    int best = -1, best_bytes = 0;
    char lack[256], list[256];
    for (int32_t i = 0; i < img->ncode; i++) {
        const rt_cpu_target *t = rt_cpu_target_find(img->code[i].arch);
        if (!t || (want && *want && strcmp(want, img->code[i].arch))) continue;
        if (rt_cpu_target_missing(t, lack, sizeof lack)) continue;
        if (best < 0 || t->vector_bytes >= best_bytes) best = i, best_bytes = t->vector_bytes;
    }
    if (best >= 0) return best;
    held(img, list, sizeof list);
    s->status = FUSEC_ERR_UNSUPPORTED;
    if (want && *want)
        snprintf(s->message, sizeof s->message,
                 "FUSEC_CPU=%s: the library holds no code for it that this CPU runs (it holds "
                 "code for %s)",
                 want, list);
    else
        snprintf(s->message, sizeof s->message,
                 "the library holds code for %s, none of which this CPU runs", list);
    return -1;
}

/* A GPU architecture's compute capability, major * 10 + minor ("sm_90" 90, "sm_100a" 100,
 * "compute_120" 120); *exact: a cubin for that device alone ("a" suffix); *ptx: PTX. */
static int capability(const char *arch, int *exact, int *ptx) {
    *ptx = !strncmp(arch, "compute_", 8);
    const char *p = arch + (*ptx ? 8 : 3);
    int v = 0;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (*p++ - '0');
    *exact = *p == 'a';
    return v;
}

/* The code device d runs best: a cubin of its major version built for its minor or an older
 * one (the newest such), else PTX for its capability or an older one (the newest); -1 with
 * why when none runs there. */
static int pick_gpu(const aot_state *s, const rt_cuda_device *d, char *err, size_t errlen) {
    int dev = d->major * 10 + d->minor, best = -1, best_cc = -1, best_ptx = 1;
    for (int32_t i = 0; i < s->img->ncode; i++) {
        int exact, ptx, cc = capability(s->img->code[i].arch, &exact, &ptx);
        int runs = ptx ? cc <= dev : exact ? cc == dev : cc / 10 == d->major && cc <= dev;
        if (!runs) continue;
        /* a cubin before any PTX; then the newest */
        if (best < 0 || (best_ptx && !ptx) || (best_ptx == ptx && cc > best_cc))
            best = i, best_cc = cc, best_ptx = ptx;
    }
    if (best >= 0) return best;
    char list[256];
    held(s->img, list, sizeof list);
    snprintf(err, errlen,
             "the library holds code for %s, none of which the GPU (device %d, %s, sm_%d%d) "
             "runs",
             list, d->ordinal, d->name, d->major, d->minor);
    return -1;
}

static void load_cpu(aot_state *s) {
    char err[512];
    int i = pick_cpu(s);
    if (i < 0) return;
    const rt_image_code *c = &s->img->code[i];
    const rt_cpu_target *t = rt_cpu_target_find(c->arch);
    s->arch = c->arch;
    if (!(s->elf = rt_elf_load(c->data, (size_t)c->len, err, sizeof err)) ||
        !(s->prog = rt_cpu_program_new(&s->img->cpu, t->vector_bytes, elf_lookup, s->elf, NULL, err,
                                       sizeof err))) {
        s->status = FUSEC_ERR_UNSUPPORTED;
        snprintf(s->message, sizeof s->message, "loading the code for %s: %s", c->arch, err);
    }
}

/* The code for device d (rt_cuda_image_fn): pick_gpu's choice for its architecture. */
static fusec_status gpu_image(void *ctx, const rt_cuda_device *d, const void **image, size_t *len,
                              char *err, size_t errlen) {
    aot_state *s = ctx;
    int i = pick_gpu(s, d, err, errlen);
    if (i < 0) return FUSEC_ERR_UNSUPPORTED;
    const rt_image_code *c = &s->img->code[i];
    *image = c->len ? c->data : NULL;
    *len = (size_t)c->len;
    return FUSEC_OK;
}

/* The library's CUDA code: chosen for the current device, and loaded there now (any other
 * device loads its own at its first call). */
static void load_cuda(aot_state *s) {
    rt_cuda_device d;
    char why[512];
    if (!rt_cuda_probe(NULL, why, sizeof why) ||
        rt_cuda_device_info(rt_cuda_current_device(), &d, why, sizeof why) != 0) {
        s->status = FUSEC_ERR_NO_DEVICE;
        snprintf(s->message, sizeof s->message, "%s", why);
        return;
    }
    int i = pick_gpu(s, &d, s->message, sizeof s->message);
    if (i < 0) {
        s->status = FUSEC_ERR_UNSUPPORTED;
        return;
    }
    const rt_image_code *c = &s->img->code[i];
    s->arch = c->arch;
    s->status = rt_cuda_gpu_new(&s->img->cuda, gpu_image, s, &s->gpu, why, sizeof why);
    if (s->status == FUSEC_OK)
        s->status = rt_cuda_gpu_load(s->gpu, d.ordinal, NULL, why, sizeof why);
    if (s->status != FUSEC_OK)
        snprintf(s->message, sizeof s->message, "loading the code for %s: %s", c->arch, why);
}

static void load(fusec_rt_lib *lib, aot_state *s) {
    char err[512];
    if (!(s->img = rt_image_read(lib->image, (size_t)lib->len, err, sizeof err))) {
        s->status = FUSEC_ERR_INTERNAL;
        snprintf(s->message, sizeof s->message, "%s", err);
        return;
    }
    if (s->img->target == RT_IMAGE_CPU)
        load_cpu(s);
    else
        load_cuda(s);
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
    return s && s->status == FUSEC_OK ? s->arch : NULL;
}

/* The call's tensors from its pointers and dims, checked as fusec_launch checks them. */
static int bind(const rt_image_sig *sig, void *const *ptrs, const int64_t *syms, ir_tensor *args) {
    for (int32_t i = 0; i < sig->nsyms; i++)
        if (syms[i] < 0)
            return fail(FUSEC_ERR_SHAPE, "%s: %s = %lld: a dim is at least 0", sig->name,
                        sig->sym_names[i], (long long)syms[i]);
    const char *names[RT_MAX_ARGS];
    int32_t np = sig->nparams, nargs = np + sig->noutputs;
    for (int32_t i = 0; i < nargs; i++) {
        const rt_image_arg *a = &sig->args[i];
        ir_tensor *t = &args[i];
        memset(t, 0, sizeof(*t));
        t->dtype = (ir_dtype)a->dtype;
        t->rank = a->shape.rank;
        ir_shape_concrete(&a->shape, syms, t->dims);
        t->data = ptrs[i];
        if (i < np) names[i] = a->name;
    }
    char err[512];
    fusec_status st = rt_check_counts(args, np, nargs, names, err, sizeof err);
    if (st != FUSEC_OK) return fail(st, "%s: %s", sig->name, err);
    for (int32_t i = 0; i < sig->nshapes; i++) {
        int64_t dims[IR_MAX_RANK];
        ir_shape_concrete(&sig->shapes[i], syms, dims);
        if (ir_dims_count(dims, sig->shapes[i].rank) < 0)
            return fail(FUSEC_ERR_SHAPE,
                        "'%s' would compute a value too large for memory at these shapes",
                        sig->name);
    }
    st = rt_check_buffers(args, np, nargs, names, err, sizeof err);
    return st == FUSEC_OK ? 0 : fail(st, "%s: %s", sig->name, err);
}

int fusec_rt_call(fusec_rt_lib *lib, int32_t func, void *const *ptrs, const int64_t *syms,
                  void *stream) {
    aot_state *s = lib ? state(lib) : NULL;
    if (!s) return fail(FUSEC_ERR_OUT_OF_MEMORY, "out of memory");
    if (s->status != FUSEC_OK) return fail(s->status, "%s", s->message);
    if (func < 0 || func >= s->img->nfuncs)
        return fail(FUSEC_ERR_INTERNAL, "internal error: no function %d", (int)func);
    const rt_image_sig *sig = &s->img->sigs[func];
    ir_tensor args[RT_MAX_ARGS];
    int rc = bind(sig, ptrs, syms, args);
    if (rc) return rc;
    char err[512];
    /* CPU calls complete before they return; CUDA's are asynchronous on the caller's stream,
     * on the device of the tensors (runtime/cuda/cuda_device.h) */
    if (s->prog) {
        fusec_status st = rt_cpu_run(s->prog, func, args, syms, err, sizeof err);
        return st == FUSEC_OK ? 0 : fail(st, "%s: %s", sig->name, err);
    }
    const char *names[RT_MAX_ARGS];
    for (int32_t i = 0; i < sig->nparams; i++)
        names[i] = sig->args[i].name;
    int dev = 0;
    fusec_status st = rt_cuda_call_device(args, sig->nparams, sig->nparams + sig->noutputs, names,
                                          stream, -1, NULL, &dev, err, sizeof err);
    if (st == FUSEC_OK)
        st = rt_cuda_gpu_launch(s->gpu, dev, func, args, syms, stream, err, sizeof err);
    return st == FUSEC_OK ? 0 : fail(st, "%s: %s", sig->name, err);
}
