/* runtime/cuda_backend.c: the cuda backend (placeholder until its code generator lands):
 * it reports itself unavailable, so --target=auto falls back and --target=cuda fails cleanly. */
#include <stdio.h>

#include "runtime/backend.h"

static int cuda_available(char *why, size_t whylen) {
    snprintf(why, whylen, "the cuda backend is not part of this build of fusec");
    return 0;
}

static fusec_status cuda_emit(const rt_backend_request *req, fusec_emit kind, ir_buf *out,
                              char *err, size_t errlen) {
    (void)req, (void)kind, (void)out;
    cuda_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

static fusec_status cuda_compile(const rt_backend_request *req, void **program, char *err,
                                 size_t errlen) {
    (void)req;
    *program = NULL;
    cuda_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

static fusec_status cuda_launch(void *program, int func, const ir_tensor *args, const int64_t *syms,
                                void *stream, char *err, size_t errlen) {
    (void)program, (void)func, (void)args, (void)syms, (void)stream;
    cuda_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

static void cuda_destroy(void *program) {
    (void)program;
}

static fusec_status cuda_copy_time(size_t bytes, int reps, double *median_ms, char *err,
                                   size_t errlen) {
    (void)bytes, (void)reps;
    *median_ms = 0;
    cuda_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

const rt_backend rt_backend_cuda = {
    .name = "cuda",
    .target = FUSEC_TARGET_CUDA,
    .available = cuda_available,
    .emit = cuda_emit,
    .compile = cuda_compile,
    .launch = cuda_launch,
    .destroy = cuda_destroy,
    .copy_time = cuda_copy_time,
};
