/* tests/mock/test_cuda_mock.c: the CUDA launcher's host side against the stand-in driver
 * (tests/mock/cuda_mock.c, which $FUSEC_CUDA_DRIVER makes fusec load): the kernels and
 * grids it launches, graphs with one node per launch, re-binding by node updates, scratch
 * from the pool returned, contexts popped, events and streams destroyed, device memory
 * balanced; a module freed after a launch waiting for it; and refusals before anything reaches
 * the driver. Nothing runs on a device, so
 * no result is checked here: tests/gpu does that on a GPU. */
#include "fusec.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"
#include "runtime/cuda/cuda_driver.h"
#include "tests/mock/cuda_mock.h"

static mock_stats *stats;

static const char *SRC = "fn gelu(x: f32[N]) -> f32[N] {\n"
                         "    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x "
                         "* x * x)));\n"
                         "}\n"
                         "fn total(x: f32[N]) -> f32[] { return sum(x); }\n"
                         "fn top(x: f32[R, C]) -> f32[R] { return max(x, axis=1); }\n";

static fusec_module *compile(int no_fuse) {
    return api_compile(SRC, FUSEC_TARGET_CUDA, no_fuse, NULL, 1);
}

static fusec_function *fn(fusec_module *m, const char *name) {
    return api_fn(m, name);
}

static void *dev(fusec_module *m, size_t bytes) {
    void *p = NULL;
    CHECK(fusec_memory_alloc(m, bytes, &p) == FUSEC_OK);
    return p;
}

/* Everything given back, but for fusec's own stream (made at the first module's load, kept). */
static void balanced(const char *when) {
    CHECK_MSG(stats->pushes == stats->pops, "%s: %d context pushes, %d pops", when, stats->pushes,
              stats->pops);
    CHECK_MSG(stats->pool_allocs == stats->pool_frees, "%s: %d pool allocations, %d freed", when,
              stats->pool_allocs, stats->pool_frees);
    CHECK_MSG(stats->events == 0 && stats->streams == 1 && stats->graphs == 0,
              "%s: %d events, %d streams, %d graphs left", when, stats->events, stats->streams,
              stats->graphs);
}

static void test_launches(void) {
    enum { N = 1000003 };
    fusec_module *m = compile(0), *u = compile(1);
    void *x = dev(m, N * 4), *y = dev(m, N * 4), *s = dev(m, 4);
    fusec_tensor tx = {x, FUSEC_F32, 1, {N}, NULL}, ty = {y, FUSEC_F32, 1, {N}, NULL},
                 ts = {s, FUSEC_F32, 0, {0}, NULL};

    int before = stats->launches;
    CHECK_MSG(fusec_launch(fn(m, "gelu"), &tx, 1, &ty, 1, NULL) == FUSEC_OK, "%s",
              fusec_module_message(m));
    CHECK(stats->launches == before + 1);
    CHECK_MSG(strncmp(stats->last_kernel, "fusec_gelu_k", 12) == 0, "%s", stats->last_kernel);
    /* a grid-stride kernel: capped at a few blocks per multiprocessor, never one per element */
    CHECK_MSG(stats->last_grid > 0 && stats->last_grid <= 132 * 32, "grid %u", stats->last_grid);

    before = stats->launches;
    CHECK(fusec_launch(fn(u, "gelu"), &tx, 1, &ty, 1, NULL) == FUSEC_OK);
    CHECK_MSG(stats->launches - before == fusec_function_num_kernels(fn(u, "gelu")),
              "--no-fuse: %d launches for %d kernels", stats->launches - before,
              fusec_function_num_kernels(fn(u, "gelu")));
    CHECK(stats->pool_allocs > 0); /* its intermediates */

    /* a full reduction: partials into scratch, then the final pass */
    before = stats->launches;
    int pool_before = stats->pool_allocs;
    CHECK(fusec_launch(fn(m, "total"), &tx, 1, &ts, 1, NULL) == FUSEC_OK);
    CHECK(stats->launches == before + 2 && stats->pool_allocs == pool_before + 1);
    CHECK_MSG(strstr(stats->last_kernel, "_final") != NULL, "%s", stats->last_kernel);

    /* empty: nothing launched (a sum of nothing is still written, by the final pass) */
    fusec_tensor e = {x, FUSEC_F32, 1, {0}, NULL}, ey = {y, FUSEC_F32, 1, {0}, NULL};
    before = stats->launches;
    CHECK(fusec_launch(fn(m, "gelu"), &e, 1, &ey, 1, NULL) == FUSEC_OK);
    CHECK(stats->launches == before);
    /* the max of an empty row is an error before any launch */
    fusec_tensor er = {x, FUSEC_F32, 2, {3, 0}, NULL}, ery = {y, FUSEC_F32, 1, {3}, NULL};
    CHECK(fusec_launch(fn(m, "top"), &er, 1, &ery, 1, NULL) == FUSEC_ERR_RUNTIME);
    CHECK(strstr(fusec_module_message(m), "empty") != NULL);
    CHECK(stats->launches == before);
    balanced("launches");

    /* the same dims again take the kept resolution: same kernel, same grid */
    CHECK(fusec_launch(fn(m, "gelu"), &tx, 1, &ty, 1, NULL) == FUSEC_OK);
    unsigned grid = stats->last_grid;
    CHECK(fusec_launch(fn(m, "gelu"), &tx, 1, &ty, 1, NULL) == FUSEC_OK);
    CHECK(stats->last_grid == grid);

    fusec_memory_free(m, x);
    fusec_memory_free(m, y);
    fusec_memory_free(m, s);
    fusec_module_free(m);
    fusec_module_free(u);
}

static void test_plans(void) {
    enum { N = 4099 };
    fusec_module *u = compile(1);
    fusec_function *f = fn(u, "gelu");
    int k = fusec_function_num_kernels(f);
    void *x = dev(u, N * 4 + 4), *y = dev(u, N * 4 + 4);
    fusec_tensor tx = {x, FUSEC_F32, 1, {N}, NULL}, ty = {y, FUSEC_F32, 1, {N}, NULL};
    int nodes = stats->graph_nodes, inst = stats->instantiations;
    fusec_plan *p = NULL;
    CHECK_MSG(fusec_plan_create(f, &tx, 1, &ty, 1, NULL, &p) == FUSEC_OK, "%s",
              fusec_module_message(u));
    CHECK_MSG(stats->graph_nodes - nodes == k, "%d nodes for %d kernels",
              stats->graph_nodes - nodes, k);
    CHECK(stats->instantiations == inst + 1);
    int launches = stats->launches, graphs = stats->graph_launches;
    for (int i = 0; i < 10; i++)
        CHECK(fusec_plan_launch(p, NULL) == FUSEC_OK);
    CHECK(stats->graph_launches == graphs + 10 && stats->launches == launches + 10 * k);

    /* re-bound, also to misaligned buffers: nodes updated, never a new instantiation */
    int updates = stats->node_updates;
    fusec_tensor mx = {(char *)x + 4, FUSEC_F32, 1, {N}, NULL},
                 my = {(char *)y + 4, FUSEC_F32, 1, {N}, NULL};
    CHECK(fusec_plan_rebind(p, &mx, 1, &my, 1) == FUSEC_OK);
    CHECK(fusec_plan_rebind(p, &tx, 1, &ty, 1) == FUSEC_OK);
    CHECK(stats->node_updates == updates + 2 * k && stats->instantiations == inst + 1);
    fusec_tensor other = {x, FUSEC_F32, 1, {N - 1}, NULL},
                 other_y = {y, FUSEC_F32, 1, {N - 1}, NULL};
    CHECK(fusec_plan_rebind(p, &other, 1, &other_y, 1) == FUSEC_ERR_SHAPE);

    fusec_bench_result r;
    CHECK(fusec_bench_run(f, &tx, 1, &ty, 1, 5, 1, &r) == FUSEC_OK);
    CHECK(r.median_ms == 0.5 && r.host_us > 0);
    CHECK(fusec_bench_run(f, &tx, 1, &ty, 1, 5, 0, &r) == FUSEC_OK);
    double ms = 0;
    int allocs = stats->allocs, frees = stats->frees;
    CHECK(fusec_bench_copy(u, 1 << 20, 5, &ms) == FUSEC_OK && ms == 0.5);
    CHECK(stats->allocs - allocs == 2 && stats->frees - frees == 2);
    fusec_plan_free(p);
    balanced("plans");

    /* an empty plan (no launch) still replays */
    fusec_tensor e = {x, FUSEC_F32, 1, {0}, NULL}, ey = {y, FUSEC_F32, 1, {0}, NULL};
    CHECK(fusec_plan_create(f, &e, 1, &ey, 1, NULL, &p) == FUSEC_OK);
    CHECK(fusec_plan_launch(p, NULL) == FUSEC_OK);
    fusec_plan_free(p);
    balanced("empty plan");
    fusec_memory_free(u, x);
    fusec_memory_free(u, y);
    fusec_module_free(u);
}

/* A module freed right after an asynchronous launch on a stream of the caller's (Python's
 * `del m`): cuModuleUnload does not wait for its queued kernels, so the free must. The
 * function's name is its own: the stand-in driver keys queued work by the module that first
 * looked a kernel's name up. */
static void test_unload_queued(void) {
    fusec_module *keep = compile(0);
    fusec_module *m = api_compile("fn unload_me(x: f32[N]) -> f32[N] { return x * 2.0; }\n",
                                  FUSEC_TARGET_CUDA, 0, NULL, 1);
    void *x = dev(keep, 4096), *y = dev(keep, 4096);
    fusec_tensor tx = {x, FUSEC_F32, 1, {1024}, NULL}, ty = {y, FUSEC_F32, 1, {1024}, NULL};
    int pushed = 0;
    rt_cu_stream s = api_stream(&pushed);
    int before = stats->unloads_queued;
    CHECK(fusec_launch(fn(m, "unload_me"), &tx, 1, &ty, 1, s) == FUSEC_OK);
    fusec_module_free(m);
    CHECK_MSG(stats->unloads_queued == before, "the module was unloaded with its kernel queued");
    api_stream_done(s, pushed);
    fusec_memory_free(keep, x);
    fusec_memory_free(keep, y);
    fusec_module_free(keep);
    balanced("unload");
}

static void test_memory(void) {
    fusec_module *m = compile(0);
    int allocs = stats->allocs, frees = stats->frees;
    float h[7] = {1, 2, 3, 4, 5, 6, 7}, back[7] = {0};
    void *d = dev(m, sizeof h);
    CHECK(fusec_memory_upload(m, d, h, sizeof h) == FUSEC_OK);
    CHECK(fusec_memory_download(m, back, d, sizeof back) == FUSEC_OK);
    CHECK(memcmp(h, back, sizeof h) == 0);
    CHECK(fusec_memory_free(m, d) == FUSEC_OK);
    CHECK(stats->allocs - allocs == 1 && stats->frees - frees == 1);
    CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
    fusec_module_free(m);
    balanced("memory");
}

int main(void) {
    rt_cuda_device d;
    char why[512];
    CHECK_MSG(rt_cuda_probe(&d, why, sizeof why), "the mock driver did not load: %s", why);
    CHECK_MSG(!strcmp(d.name, "Mock GPU"), "not the mock: %s (FUSEC_CUDA_DRIVER?)", d.name);
    const char *path = getenv("FUSEC_CUDA_DRIVER");
    void *lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *sym = lib ? dlsym(lib, "mock_get_stats") : NULL;
    CHECK(sym != NULL);
    if (!sym) return check_exit("test_cuda_mock");
    mock_stats *(*get)(void);
    memcpy(&get, &sym, sizeof get);
    stats = get();
    test_memory();
    test_launches();
    test_plans();
    test_unload_queued();
    return check_exit("test_cuda_mock");
}
