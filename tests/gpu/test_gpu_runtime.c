/* tests/gpu/test_gpu_runtime.c: the CUDA runtime on a GPU, through fusec.h: an upload read at
 * once on a non-blocking stream; launches from two
 * threads on two streams of their own, bit-identical to one thread's; a plan replayed 1000
 * times, re-bound to other buffers and to misaligned ones (another kernel variant), always
 * equal to stream launches; a --no-fuse chain as a plan; a plan with a result in place on two
 * streams in turn, freed after both are gone; plans made, run and freed during stream captures
 * (as torch.cuda.graph makes them), the captures intact and their graphs replayed; all against
 * the reference interpreter. Exits 77 (skipped) without a GPU. */
#include "fusec.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"
#include "runtime/cuda/cuda_driver.h"

static const char *SRC =
    "fn gelu(x: f32[N]) -> f32[N] {\n"
    "    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));\n"
    "}\n"
    "fn softmax(x: f32[R, C]) -> f32[R, C] {\n"
    "    let e = exp(x - max(x, axis=1));\n"
    "    return e / sum(e, axis=1);\n"
    "}\n"
    "fn scale_total(x: f32[R, C]) -> (f32[R, C], f32[R]) {\n"
    "    return x * 2.0, sum(x, axis=1);\n"
    "}\n";

/* elements of gelu's input, rows of softmax's; a tenth and a fifth with FUSEC_GPU_TEST_QUICK=1
 * (the emulated GPU, which runs every thread of every block on the CPU with ASan's checks, and
 * compute-sanitizer): the grids still hold many blocks, more than the emulated GPU's SMs */
static int N = 1000003, R = 333;
#define C 1031

static fusec_module *compile(fusec_target t, int no_fuse) {
    return api_compile(SRC, t, no_fuse, NULL, 1);
}

static fusec_function *fn(fusec_module *m, const char *name) {
    return api_fn(m, name);
}

static fusec_tensor t1(void *p, int64_t n) {
    fusec_tensor t = {p, FUSEC_F32, 1, {n}, NULL};
    return t;
}

static fusec_tensor t2(void *p, int64_t r, int64_t c) {
    fusec_tensor t = {p, FUSEC_F32, 2, {r, c}, NULL};
    return t;
}

static uint32_t rng = 4242;
static float frand(void) {
    return api_frand(&rng, 4.0f);
}

static fusec_module *gpu, *ref;
static float *hx, *hs, *want_gelu, *want_softmax; /* inputs, reference results */
static float *gelu_bits, *softmax_bits;           /* one thread's GPU results */

static void *dev_copy(const float *h, size_t n) {
    void *d = NULL;
    CHECK(fusec_memory_alloc(gpu, n * sizeof(float), &d) == FUSEC_OK);
    CHECK(fusec_memory_upload(gpu, d, h, n * sizeof(float)) == FUSEC_OK);
    return d;
}

static void *dev_poisoned(size_t n) {
    float *p = malloc(n * sizeof(float));
    memset(p, 0xff, n * sizeof(float));
    void *d = dev_copy(p, n);
    free(p);
    return d;
}

static float *host_copy(const void *d, size_t n) {
    float *h = malloc(n * sizeof(float));
    CHECK(fusec_synchronize(gpu, NULL) == FUSEC_OK);
    CHECK(fusec_memory_download(gpu, h, d, n * sizeof(float)) == FUSEC_OK);
    return h;
}

/* SPEC §5 for f32; softmax's sum carries 1e-5 relative through the division */
static int close_to(const float *got, const float *want, size_t n, double rel) {
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= rel * fabs((double)want[i]) + 1e-6)) {
            fprintf(stderr, "  at %zu: got %.9g, want %.9g\n", i, got[i], want[i]);
            return 0;
        }
    return 1;
}

static void reference(void) {
    hx = malloc(N * sizeof(float));
    hs = malloc(R * C * sizeof(float));
    want_gelu = malloc(N * sizeof(float));
    want_softmax = malloc(R * C * sizeof(float));
    for (int i = 0; i < N; i++)
        hx[i] = frand();
    for (int i = 0; i < R * C; i++)
        hs[i] = frand();
    fusec_tensor x = t1(hx, N), y = t1(want_gelu, N), s = t2(hs, R, C), z = t2(want_softmax, R, C);
    CHECK(fusec_launch(fn(ref, "gelu"), &x, 1, &y, 1, NULL) == FUSEC_OK);
    CHECK(fusec_launch(fn(ref, "softmax"), &s, 1, &z, 1, NULL) == FUSEC_OK);
}

/* One thread's results on the default stream: the bits the others must give. */
static void single(void) {
    void *dx = dev_copy(hx, N), *dy = dev_poisoned(N), *ds = dev_copy(hs, R * C),
         *dz = dev_poisoned(R * C);
    fusec_tensor x = t1(dx, N), y = t1(dy, N), s = t2(ds, R, C), z = t2(dz, R, C);
    CHECK_MSG(fusec_launch(fn(gpu, "gelu"), &x, 1, &y, 1, NULL) == FUSEC_OK, "%s",
              fusec_module_message(gpu));
    CHECK_MSG(fusec_launch(fn(gpu, "softmax"), &s, 1, &z, 1, NULL) == FUSEC_OK, "%s",
              fusec_module_message(gpu));
    gelu_bits = host_copy(dy, N);
    softmax_bits = host_copy(dz, R * C);
    CHECK_MSG(close_to(gelu_bits, want_gelu, N, 1e-5), "gelu against the reference");
    CHECK_MSG(close_to(softmax_bits, want_softmax, R * C, 3e-5), "softmax against the reference");
    void *all[] = {dx, dy, ds, dz};
    for (int i = 0; i < 4; i++)
        fusec_memory_free(gpu, all[i]);
}

/* An upload read at once by a launch on a non-blocking stream (a framework's side stream,
 * fusec_bench_run's): from pageable memory cuMemcpyHtoD returns before the copy lands, and
 * nothing orders such a stream after it, so fusec_memory_upload must wait for it (the stand-in
 * driver lands such a copy late). */
static void upload_then_side_stream(void) {
    void *dy = dev_poisoned(N), *dx = dev_copy(hx, N); /* the input's copy last */
    int pushed = 0;
    rt_cu_stream s = api_stream(&pushed);
    fusec_tensor x = t1(dx, N), y = t1(dy, N);
    CHECK_MSG(fusec_launch(fn(gpu, "gelu"), &x, 1, &y, 1, s) == FUSEC_OK, "%s",
              fusec_module_message(gpu));
    api_stream_done(s, pushed);
    float *got = host_copy(dy, N);
    CHECK_MSG(memcmp(got, gelu_bits, N * sizeof(float)) == 0,
              "a launch on a non-blocking stream right after an upload read another input");
    free(got);
    fusec_memory_free(gpu, dx);
    fusec_memory_free(gpu, dy);
}

typedef struct worker {
    int ok;
    char err[256];
} worker;

static void *work(void *arg) {
    worker *w = arg;
    int pushed = 0;
    if (rt_cuda_enter(0, &pushed, w->err, sizeof w->err) != 0) return NULL;
    const rt_cu_api *cu = rt_cuda_api();
    rt_cu_stream s = NULL;
    if (cu->StreamCreate(&s, RT_CU_STREAM_NON_BLOCKING) != RT_CU_SUCCESS) return NULL;
    void *dx = dev_copy(hx, N), *dy = dev_poisoned(N), *ds = dev_copy(hs, R * C),
         *dz = dev_poisoned(R * C);
    fusec_tensor x = t1(dx, N), y = t1(dy, N), sm = t2(ds, R, C), z = t2(dz, R, C);
    int ok = 1;
    /* the emulated GPU (FUSEC_GPU_TEST_QUICK=1) runs a block at a time: a few launches race as
     * well there as 50 */
    int launches = getenv("FUSEC_GPU_TEST_QUICK") ? 4 : 50;
    for (int i = 0; i < launches && ok; i++)
        ok = fusec_launch(fn(gpu, "gelu"), &x, 1, &y, 1, s) == FUSEC_OK &&
             fusec_launch(fn(gpu, "softmax"), &sm, 1, &z, 1, s) == FUSEC_OK;
    ok = ok && fusec_synchronize(gpu, s) == FUSEC_OK;
    float *gy = host_copy(dy, N), *gz = host_copy(dz, R * C);
    w->ok = ok && memcmp(gy, gelu_bits, N * sizeof(float)) == 0 &&
            memcmp(gz, softmax_bits, R * C * sizeof(float)) == 0;
    free(gy);
    free(gz);
    void *all[] = {dx, dy, ds, dz};
    for (int i = 0; i < 4; i++)
        fusec_memory_free(gpu, all[i]);
    cu->StreamDestroy(s);
    rt_cuda_leave(pushed);
    return NULL;
}

static void two_streams(void) {
    pthread_t th[2];
    worker w[2];
    memset(w, 0, sizeof w);
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, work, &w[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(w[i].ok, "thread %d on its own stream: not the one-thread bits %s", i, w[i].err);
    }
}

/* A plan: 1000 replays, re-bound to other buffers and to misaligned ones. */
static void plans(fusec_module *m, const char *what) {
    fusec_function *f = fn(m, "gelu");
    /* one element more, so x + 1 is a misaligned view of N elements */
    float *hx1 = malloc((N + 1) * sizeof(float));
    memcpy(hx1 + 1, hx, N * sizeof(float));
    hx1[0] = 1;
    void *dx = dev_copy(hx, N), *dy = dev_poisoned(N), *dx1 = dev_copy(hx1, N + 1),
         *dy1 = dev_poisoned(N + 1);
    fusec_tensor x = t1(dx, N), y = t1(dy, N);
    fusec_plan *p = NULL;
    CHECK_MSG(fusec_plan_create(f, &x, 1, &y, 1, NULL, &p) == FUSEC_OK, "%s: %s", what,
              fusec_module_message(m));
    /* under compute-sanitizer every replay is slow: FUSEC_GPU_TEST_QUICK=1 makes a few */
    int replays = getenv("FUSEC_GPU_TEST_QUICK") ? 10 : 1000;
    for (int i = 0; i < replays; i++)
        CHECK(fusec_plan_launch(p, NULL) == FUSEC_OK);
    float *got = host_copy(dy, N);
    CHECK_MSG(close_to(got, want_gelu, N, 1e-5), "%s: plan against the reference", what);
    free(got);

    fusec_tensor x1 = t1((char *)dx1 + sizeof(float), N), y1 = t1((char *)dy1 + sizeof(float), N);
    CHECK_MSG(fusec_plan_rebind(p, &x1, 1, &y1, 1) == FUSEC_OK, "%s: %s", what,
              fusec_module_message(m));
    CHECK(fusec_plan_launch(p, NULL) == FUSEC_OK);
    float *got1 = host_copy(dy1, N + 1);
    uint32_t first;
    memcpy(&first, got1, sizeof first);
    CHECK_MSG(first == 0xffffffffu, "%s: the misaligned plan wrote before its result", what);
    CHECK_MSG(close_to(got1 + 1, want_gelu, N, 1e-5), "%s: misaligned re-bound plan", what);
    free(got1);
    fusec_plan_free(p);
    void *all[] = {dx, dy, dx1, dy1};
    for (int i = 0; i < 4; i++)
        fusec_memory_free(m, all[i]);
    free(hx1);
}

/* A plan whose result is in place through a temporary (scale_total --no-fuse, x doubled over
 * itself: its copy into place follows the graph), launched on two streams in turn: each
 * launch must see the last one's copy, and the plan's scratch must be freed after the last
 * launch though both streams are gone by then (the stand-in driver stops at any use of a
 * destroyed stream). Then fusec_bench_run through a plan, which launches on a stream of its
 * own and destroys it before the plan. */
static void plan_streams(void) {
    fusec_module *m = compile(FUSEC_TARGET_CUDA, 1);
    fusec_function *f = fn(m, "scale_total");
    void *dx = dev_copy(hs, R * C), *dt = dev_poisoned(R);
    fusec_tensor x = t2(dx, R, C), outs[2] = {t2(dx, R, C), t1(dt, R)};
    fusec_plan *p = NULL;
    CHECK_MSG(fusec_plan_create(f, &x, 1, outs, 2, NULL, &p) == FUSEC_OK, "%s",
              fusec_module_message(m));
    int pushed = 0;
    char err[256];
    CHECK(rt_cuda_enter(0, &pushed, err, sizeof err) == 0);
    const rt_cu_api *cu = rt_cuda_api();
    rt_cu_stream s[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++)
        CHECK(cu->StreamCreate(&s[i], RT_CU_STREAM_NON_BLOCKING) == RT_CU_SUCCESS);
    enum { LAUNCHES = 5 }; /* x becomes x * 2^5, exactly; the total is that of x * 2^4 */
    for (int i = 0; i < LAUNCHES; i++)
        CHECK_MSG(fusec_plan_launch(p, s[i % 2]) == FUSEC_OK, "%s", fusec_module_message(m));
    for (int i = 0; i < 2; i++) {
        CHECK(cu->StreamSynchronize(s[i]) == RT_CU_SUCCESS);
        CHECK(cu->StreamDestroy(s[i]) == RT_CU_SUCCESS);
    }
    rt_cuda_leave(pushed);
    fusec_plan_free(p);
    float *gx = host_copy(dx, R * C), *gt = host_copy(dt, R);
    int bad = 0;
    for (int i = 0; i < R * C; i++)
        bad += gx[i] != hs[i] * (float)(1 << LAUNCHES);
    CHECK_MSG(!bad, "a plan in place on two streams: %d elements not x * 2^%d", bad, LAUNCHES);
    for (int r = 0; r < R && !bad; r++) {
        double want = 0, mag = 0;
        for (int c = 0; c < C; c++) {
            want += (double)hs[r * C + c] * (1 << (LAUNCHES - 1));
            mag += fabs((double)hs[r * C + c]) * (1 << (LAUNCHES - 1));
        }
        bad += !(fabs(gt[r] - want) <= 1e-5 * mag);
    }
    CHECK_MSG(!bad, "a plan in place on two streams: %d row totals wrong", bad);
    free(gx);
    free(gt);
    fusec_bench_result br;
    CHECK_MSG(fusec_bench_run(f, &x, 1, outs, 2, 3, 1, &br) == FUSEC_OK, "%s",
              fusec_module_message(m));
    fusec_memory_free(m, dx);
    fusec_memory_free(m, dt);
    fusec_module_free(m);
}

/* ---- stream capture ------------------------------------------------------------------------- */

/* cuStreamBeginCapture_v2 and cuStreamEndCapture of the driver fusec loaded: not in fusec's
 * table (only a caller begins a capture, as torch.cuda.graph does). */
typedef struct capture_api {
    rt_cu_result (*begin)(rt_cu_stream stream, int mode);
    rt_cu_result (*end)(rt_cu_stream stream, rt_cu_graph *graph);
} capture_api;

enum { CAPTURE_GLOBAL = 0 }; /* CU_STREAM_CAPTURE_MODE_GLOBAL: torch.cuda.graph's default */

static int capture_api_get(capture_api *c) {
    const char *path = getenv("FUSEC_CUDA_DRIVER");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *b = lib ? dlsym(lib, "cuStreamBeginCapture_v2") : NULL;
    void *e = lib ? dlsym(lib, "cuStreamEndCapture") : NULL;
    memcpy(&c->begin, &b, sizeof b);
    memcpy(&c->end, &e, sizeof e);
    if (lib) dlclose(lib); /* fusec keeps it loaded */
    CHECK_MSG(b && e, "the driver's capture entry points were not found");
    return b && e;
}

/* Ends the capture on s, replays the graph on s once and waits: 1 when all of it worked. */
static int end_and_replay(const capture_api *cap, rt_cu_stream s, const char *what) {
    const rt_cu_api *cu = rt_cuda_api();
    rt_cu_graph g = NULL;
    rt_cu_graph_exec e = NULL;
    rt_cu_result r = cap->end(s, &g);
    CHECK_MSG(r == RT_CU_SUCCESS && g, "%s: the capture failed (error %d)", what, r);
    if (!g) return 0;
    int ok = cu->GraphInstantiateWithFlags(&e, g, 0) == RT_CU_SUCCESS &&
             cu->GraphLaunch(e, s) == RT_CU_SUCCESS && cu->StreamSynchronize(s) == RT_CU_SUCCESS;
    CHECK_MSG(ok, "%s: the captured graph did not run", what);
    if (e) cu->GraphExecDestroy(e);
    cu->GraphDestroy(g);
    return ok;
}

/* A plan made and run inside a capture (torch.cuda.graph around a call that makes one), in
 * global mode on a non-blocking stream, as PyTorch captures: the plan's scratch (--no-fuse's
 * intermediates) must be taken outside the capture without synchronizing the capturing
 * stream, or the capture is invalidated; the captured graph, replayed, gives the results. */
static void capture_plan_create(const capture_api *cap, fusec_module *m) {
    void *dx = dev_copy(hx, N), *dy = dev_poisoned(N);
    fusec_tensor x = t1(dx, N), y = t1(dy, N);
    int pushed = 0;
    rt_cu_stream s = api_stream(&pushed);
    fusec_plan *p = NULL;
    CHECK(cap->begin(s, CAPTURE_GLOBAL) == RT_CU_SUCCESS);
    CHECK_MSG(fusec_plan_create(fn(m, "gelu"), &x, 1, &y, 1, s, &p) == FUSEC_OK,
              "a plan made in a capture: %s", fusec_module_message(m));
    if (p) CHECK(fusec_plan_launch(p, s) == FUSEC_OK);
    if (end_and_replay(cap, s, "a plan made in a capture")) {
        float *got = host_copy(dy, N);
        CHECK_MSG(close_to(got, want_gelu, N, 1e-5), "a plan made in a capture, replayed");
        free(got);
    }
    fusec_plan_free(p); /* after the captured graph, which ran its kernels on its scratch */
    api_stream_done(s, pushed);
    fusec_memory_free(m, dx);
    fusec_memory_free(m, dy);
}

/* A plan run on a stream of its own, then rebound to another result and run inside a capture
 * on another stream: the capture must not be made to wait for the first run's event, recorded
 * outside it (a dependency across the capture's boundary invalidates it), nor hold a
 * cuGraphLaunch (which a real driver refuses to capture); the captured kernels write where
 * the plan was rebound to. */
static void capture_plan_launch(const capture_api *cap, fusec_module *m) {
    void *dx = dev_copy(hx, N), *dy = dev_poisoned(N), *dy2 = dev_poisoned(N);
    fusec_tensor x = t1(dx, N), y = t1(dy, N), y2 = t1(dy2, N);
    fusec_plan *p = NULL;
    CHECK(fusec_plan_create(fn(m, "gelu"), &x, 1, &y, 1, NULL, &p) == FUSEC_OK);
    int pushed = 0, pushed2 = 0;
    rt_cu_stream a = api_stream(&pushed), s = api_stream(&pushed2);
    CHECK(fusec_plan_launch(p, a) == FUSEC_OK);
    CHECK(rt_cuda_api()->StreamSynchronize(a) == RT_CU_SUCCESS);
    CHECK(fusec_plan_rebind(p, &x, 1, &y2, 1) == FUSEC_OK);
    CHECK(cap->begin(s, CAPTURE_GLOBAL) == RT_CU_SUCCESS);
    CHECK_MSG(fusec_plan_launch(p, s) == FUSEC_OK, "a plan run in a capture: %s",
              fusec_module_message(m));
    if (end_and_replay(cap, s, "a plan run before, then in a capture")) {
        float *got = host_copy(dy2, N);
        CHECK_MSG(close_to(got, want_gelu, N, 1e-5), "a plan rebound, captured and replayed");
        free(got);
    }
    fusec_plan_free(p);
    api_stream_done(s, pushed2);
    api_stream_done(a, pushed);
    fusec_memory_free(m, dx);
    fusec_memory_free(m, dy);
    fusec_memory_free(m, dy2);
}

/* A plan freed while a stream captures other work (Python's garbage collector, inside
 * torch.cuda.graph), after a run on a stream of its own: its free must not wait on or use the
 * legacy stream, which a capture on a blocking stream forbids (cuStreamCreate's default: a C
 * program's), nor make a call that a capture in global mode forbids (the capture on a
 * non-blocking stream: PyTorch's). The capture's own launch must then replay right. */
static void capture_plan_free(const capture_api *cap, fusec_module *m, unsigned flags) {
    const rt_cu_api *cu = rt_cuda_api();
    void *dx = dev_copy(hx, N), *dy = dev_poisoned(N), *dz = dev_poisoned(N);
    fusec_tensor x = t1(dx, N), y = t1(dy, N), z = t1(dz, N);
    fusec_plan *p = NULL;
    CHECK(fusec_plan_create(fn(m, "gelu"), &x, 1, &y, 1, NULL, &p) == FUSEC_OK);
    int pushed = 0;
    rt_cu_stream a = api_stream(&pushed), s = NULL;
    CHECK(fusec_plan_launch(p, a) == FUSEC_OK);
    CHECK(cu->StreamCreate(&s, flags) == RT_CU_SUCCESS);
    CHECK(cap->begin(s, CAPTURE_GLOBAL) == RT_CU_SUCCESS);
    CHECK(fusec_launch(fn(gpu, "gelu"), &x, 1, &z, 1, s) == FUSEC_OK);
    fusec_plan_free(p);
    const char *what = flags ? "a plan freed during a capture on a non-blocking stream"
                             : "a plan freed during a capture on a blocking stream";
    if (end_and_replay(cap, s, what)) {
        float *got = host_copy(dz, N);
        CHECK_MSG(!memcmp(got, gelu_bits, N * sizeof(float)), "%s: replayed", what);
        free(got);
    }
    CHECK(cu->StreamDestroy(s) == RT_CU_SUCCESS);
    api_stream_done(a, pushed);
    void *all[] = {dx, dy, dz};
    for (int i = 0; i < 3; i++)
        fusec_memory_free(m, all[i]);
}

static void captures(fusec_module *nofuse) {
    capture_api cap;
    if (!capture_api_get(&cap)) return;
    capture_plan_create(&cap, nofuse);
    capture_plan_launch(&cap, nofuse);
    capture_plan_free(&cap, nofuse, 0);
    capture_plan_free(&cap, nofuse, RT_CU_STREAM_NON_BLOCKING);
}

int main(void) {
    char why[512];
    if (!rt_cuda_probe(NULL, why, sizeof why)) {
        printf("%s: skipping\n", why);
        return 77;
    }
    if (getenv("FUSEC_GPU_TEST_QUICK")) N = 100003, R = 67;
    gpu = compile(FUSEC_TARGET_CUDA, 0);
    ref = compile(FUSEC_TARGET_REF, 0);
    reference();
    single();
    upload_then_side_stream();
    two_streams();
    plans(gpu, "fused");
    fusec_module *nofuse = compile(FUSEC_TARGET_CUDA, 1);
    plans(nofuse, "--no-fuse");
    plan_streams();
    captures(nofuse);
    fusec_module_free(nofuse);
    fusec_module_free(gpu);
    fusec_module_free(ref);
    free(hx);
    free(hs);
    free(want_gelu);
    free(want_softmax);
    free(gelu_bits);
    free(softmax_bits);
    return check_exit("test_gpu_runtime");
}
