/* driver/ref_backend.c: the reference interpreter (ir/interp.c) as a backend like the others
 * (rt_backend_ref, `--target=ref`): nothing to generate or build, a launch interprets the
 * function's partition in float64 with the SPEC's integer semantics, and its roofline is one
 * memcpy (it runs on one thread).
 *
 * It interprets the partitioned function, not the checked one: values the partition's kernels
 * store are rounded to their dtype, so --no-fuse on the reference rounds as --no-fuse does on
 * every target (the fused partition stores only results, so it computes what the unpartitioned
 * function does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/backend.h"
#include "runtime/clock.h"

typedef struct ref_program {
    ir_func *const *funcs; /* the module's, which outlive the program */
    int nfuncs;
} ref_program;

static int ref_available(char *why, size_t whylen) {
    (void)why, (void)whylen;
    return 1;
}

static fusec_status ref_emit(const rt_backend_request *req, fusec_emit kind, ir_buf *out, char *err,
                             size_t errlen) {
    (void)req, (void)kind, (void)out;
    snprintf(err, errlen, "the reference interpreter generates no code");
    return FUSEC_ERR_UNSUPPORTED;
}

static fusec_status ref_compile(const rt_backend_request *req, void **program, char *err,
                                size_t errlen) {
    ref_program *p = malloc(sizeof *p);
    *program = p;
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return FUSEC_ERR_OUT_OF_MEMORY;
    }
    p->funcs = req->funcs;
    p->nfuncs = req->nfuncs;
    return FUSEC_OK;
}

static fusec_status ref_launch(void *program, int func, const ir_tensor *args, const int64_t *syms,
                               void *stream, char *err, size_t errlen) {
    (void)syms, (void)stream; /* the interpreter binds the dims itself */
    ref_program *p = program;
    if (!p || func < 0 || func >= p->nfuncs) {
        snprintf(err, errlen, "internal error: no function %d", func);
        return FUSEC_ERR_INTERNAL;
    }
    const ir_func *f = p->funcs[func];
    /* the interpreter takes its outputs' descriptors writable; the launch's are the caller's */
    ir_tensor outs[IR_MAX_ARGS];
    if (f->noutputs > IR_MAX_ARGS) {
        snprintf(err, errlen, "internal error: %d results", (int)f->noutputs);
        return FUSEC_ERR_INTERNAL;
    }
    memcpy(outs, args + f->nparams, sizeof(ir_tensor) * (size_t)f->noutputs);
    if (ir_interp_run(f, args, outs, err, errlen) != 0) return FUSEC_ERR_RUNTIME;
    return FUSEC_OK;
}

static void ref_destroy(void *program) {
    free(program);
}

/* The interpreter runs on one thread: its roofline is one memcpy of `moved` / 2 bytes. */
static fusec_status ref_copy_time(int device, size_t moved, int reps, double *median_ms, char *err,
                                  size_t errlen) {
    (void)device;
    *median_ms = 0;
    if (reps < 1) reps = 1;
    size_t half = moved / 2 ? moved / 2 : 1;
    char *a = malloc(half), *b = malloc(half);
    double *t = malloc(sizeof(double) * (size_t)reps);
    fusec_status st = FUSEC_OK;
    if (!a || !b || !t) {
        snprintf(err, errlen, "out of memory for a %zu-byte copy", half);
        st = FUSEC_ERR_OUT_OF_MEMORY;
    } else {
        memset(a, 1, half);
        memcpy(b, a, half);
        for (int r = 0; r < reps; r++) {
            double t0 = rt_now_ms();
            memcpy(b, a, half);
            t[r] = rt_now_ms() - t0;
            a[r % half] = b[(r + 1) % half]; /* keep the copies from being elided */
        }
        *median_ms = rt_median(t, reps);
    }
    free(a);
    free(b);
    free(t);
    return st;
}

const rt_backend rt_backend_ref = {
    .name = "ref",
    .target = FUSEC_TARGET_REF,
    .available = ref_available,
    .emit = ref_emit,
    .compile = ref_compile,
    .launch = ref_launch,
    .destroy = ref_destroy,
    .copy_time = ref_copy_time,
    .mem_alloc = rt_host_mem_alloc,
    .mem_free = rt_host_mem_free,
    .mem_copy = rt_host_mem_copy,
    .synchronize = rt_host_synchronize,
};
