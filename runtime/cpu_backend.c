/* runtime/cpu_backend.c: the cpu backend (placeholder until its code generator lands):
 * it reports itself unavailable, so --target=auto falls back and --target=cpu fails cleanly. */
#include <stdio.h>

#include "runtime/backend.h"

static int cpu_available(char *why, size_t whylen) {
    snprintf(why, whylen, "the cpu backend is not part of this build of fusec");
    return 0;
}

static fusec_status cpu_emit(const rt_backend_request *req, fusec_emit kind, ir_buf *out, char *err,
                             size_t errlen) {
    (void)req, (void)kind, (void)out;
    cpu_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

static fusec_status cpu_compile(const rt_backend_request *req, void **program, char *err,
                                size_t errlen) {
    (void)req;
    *program = NULL;
    cpu_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

static fusec_status cpu_launch(void *program, int func, const ir_tensor *args, const int64_t *syms,
                               void *stream, char *err, size_t errlen) {
    (void)program, (void)func, (void)args, (void)syms, (void)stream;
    cpu_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

static void cpu_destroy(void *program) {
    (void)program;
}

static fusec_status cpu_copy_time(size_t bytes, int reps, double *median_ms, char *err,
                                  size_t errlen) {
    (void)bytes, (void)reps;
    *median_ms = 0;
    cpu_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

const rt_backend rt_backend_cpu = {
    .name = "cpu",
    .target = FUSEC_TARGET_CPU,
    .available = cpu_available,
    .emit = cpu_emit,
    .compile = cpu_compile,
    .launch = cpu_launch,
    .destroy = cpu_destroy,
    .copy_time = cpu_copy_time,
};
