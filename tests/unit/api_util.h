/* tests/unit/api_util.h: what the tests that go through fusec.h share: compiling a source
 * string for a target, looking a function up, and a fixed stream of non-zero floats.
 * Failures are counted through check.h. */
#ifndef FUSEC_TESTS_API_UTIL_H
#define FUSEC_TESTS_API_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fusec.h"
#include "runtime/cuda/cuda_driver.h"

/* The module of `src` for target t (arch NULL: the GPU's own), built when `build` is set. */
static inline fusec_module *api_compile(const char *src, fusec_target t, int no_fuse,
                                        const char *arch, int build) {
    fusec_options o;
    fusec_options_init(&o);
    o.target = t;
    o.no_fuse = no_fuse;
    o.arch = arch;
    fusec_module *m = NULL;
    fusec_status st = fusec_module_compile_string("test.fuse", src, strlen(src), &o, &m);
    if (st == FUSEC_OK && build) st = fusec_module_build(m);
    CHECK_MSG(st == FUSEC_OK, "%s %s", fusec_module_message(m), fusec_module_diagnostics(m));
    return m;
}

/* The module of `src` built for the CPU level `cpu` (NULL: this host's). */
static inline fusec_module *api_compile_cpu(const char *src, const char *cpu) {
    fusec_options o;
    fusec_options_init(&o);
    o.target = FUSEC_TARGET_CPU;
    o.cpu = cpu;
    fusec_module *m = NULL;
    fusec_status st = fusec_module_compile_string("cpu.fuse", src, strlen(src), &o, &m);
    if (st == FUSEC_OK) st = fusec_module_build(m);
    CHECK_MSG(st == FUSEC_OK, "%s", fusec_module_message(m));
    return m;
}

static inline fusec_function *api_fn(fusec_module *m, const char *name) {
    fusec_function *f = NULL;
    CHECK_MSG(fusec_module_function(m, name, &f) == FUSEC_OK, "%s", name);
    return f;
}

/* A descriptor of `rank` dims from shape (strides NULL: dense row-major). */
static inline fusec_tensor api_tensor(void *data, fusec_dtype dt, int rank, const int64_t *shape,
                                      const int64_t *strides) {
    fusec_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dt;
    t.rank = rank;
    for (int i = 0; i < rank; i++)
        t.shape[i] = shape[i];
    t.strides = strides;
    return t;
}

/* A non-blocking stream of the test's own (as a framework's side stream): device 0's primary
 * context is made current on this thread until api_stream_done (*pushed says whether it was
 * pushed). NULL, counted as a failure, when the driver refuses. */
static inline rt_cu_stream api_stream(int *pushed) {
    char err[256];
    rt_cu_stream s = NULL;
    if (rt_cuda_enter(0, pushed, err, sizeof err) != 0) {
        CHECK_MSG(0, "%s", err);
        return NULL;
    }
    CHECK(rt_cuda_api()->StreamCreate(&s, RT_CU_STREAM_NON_BLOCKING) == RT_CU_SUCCESS);
    return s;
}

/* Waits for s, destroys it and leaves the context api_stream entered. */
static inline void api_stream_done(rt_cu_stream s, int pushed) {
    const rt_cu_api *cu = rt_cuda_api();
    if (s)
        CHECK(cu->StreamSynchronize(s) == RT_CU_SUCCESS && cu->StreamDestroy(s) == RT_CU_SUCCESS);
    rt_cuda_leave(pushed);
}

/* Uniform in [-half, half), never 0 (a zero hides unwritten results and wrong indexing). */
static inline float api_frand(uint32_t *state, float half) {
    *state = *state * 1664525u + 1013904223u;
    float v = (float)(*state >> 8) * (2.0f * half / 16777216.0f) - half;
    return v == 0 ? half / 8 : v;
}

/* The targets every API test runs on, in order: the reference, the CPU, CUDA. */
#define API_NTARGETS 3
static const fusec_target api_targets[API_NTARGETS] = {FUSEC_TARGET_REF, FUSEC_TARGET_CPU,
                                                       FUSEC_TARGET_CUDA};
static const char *const api_target_names[API_NTARGETS] = {"ref", "cpu", "cuda"};

/* Whether target i runs here (CUDA: a GPU, or the emulated driver; the CPU: a build with
 * LLVM), saying which on stdout. */
static inline int api_target_runs(int i) {
    if (api_targets[i] == FUSEC_TARGET_CUDA && !rt_cuda_probe(NULL, NULL, 0)) return 0;
    fusec_options o;
    fusec_options_init(&o);
    o.target = api_targets[i];
    fusec_module *m = NULL;
    fusec_status st = fusec_module_compile_string("x.fuse", "", 0, &o, &m);
    fusec_module_free(m);
    if (st == FUSEC_ERR_UNSUPPORTED) {
        printf("target %s: not in this build\n", api_target_names[i]);
        return 0;
    }
    printf("target %s\n", api_target_names[i]);
    return 1;
}

/* test(target, its name, no_fuse) on every target that runs here, fused then --no-fuse. */
static inline void api_each_target(void (*test)(fusec_target, const char *, int)) {
    for (int i = 0; i < API_NTARGETS; i++) {
        if (!api_target_runs(i)) continue;
        test(api_targets[i], api_target_names[i], 0);
        test(api_targets[i], api_target_names[i], 1);
    }
}

#endif
