/* tests/unit/test_devices.c: one module on every CUDA device of a machine (issue 32), through
 * fusec.h. With the stand-in driver of two devices of two kinds (ctest emu.devices:
 * FUSEC_MOCK_DEVICES=2, FUSEC_MOCK_CC=90,80; the kernels run in the emulator) or on a machine of
 * two GPUs or more: each call runs on the device of its tensors, whatever the current device
 * (the stand-in fails a kernel that touches memory of another device than its context's, so a
 * call on the wrong device fails here); a module built on device 0 and first launched on
 * device 1 loads (and, for another architecture, builds) its kernels there; plans are bound to
 * their device; two threads launch on the two devices at once; tensors of two devices in one
 * call, a stream of another device and a module pinned to another device
 * (fusec_options.device) are refused with messages naming them. Skips (77) with fewer than
 * two devices. */
#include "fusec.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"
#include "runtime/cuda/cuda_driver.h"

enum { N = 1001, R = 37, C = 211 };

static const char *SRC = "fn affine(x: f32[N]) -> f32[N] { return x * 2.0 + 1.0; }\n"
                         "fn rowsum(x: f32[R, C]) -> f32[R] { return sum(x * 0.5, axis=1); }\n";

/* n floats of device d, uploaded from host (NULL: poisoned with NaN). */
static void *on_device(fusec_module *m, int d, const float *host, size_t n) {
    int pushed = 0;
    char err[256];
    void *p = NULL;
    CHECK_MSG(rt_cuda_enter(d, &pushed, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(fusec_memory_alloc(m, n * 4, &p) == FUSEC_OK, "%s", fusec_module_message(m));
    float *poison = NULL;
    if (!host && (poison = malloc(n * 4)))
        for (size_t i = 0; i < n; i++)
            poison[i] = __builtin_nanf("");
    CHECK(fusec_memory_upload(m, p, host ? host : poison, n * 4) == FUSEC_OK);
    free(poison);
    rt_cuda_leave(pushed);
    return p;
}

static void download(fusec_module *m, float *host, const void *p, size_t n) {
    CHECK_MSG(fusec_memory_download(m, host, p, n * 4) == FUSEC_OK, "%s", fusec_module_message(m));
}

static float xs[R * C], want_affine[N], want_rowsum[R];

static void make_inputs(void) {
    for (int i = 0; i < R * C; i++)
        xs[i] = (float)((i * 7919) % 2003 - 1001) / 256.0f + 0.125f;
    for (int i = 0; i < N; i++)
        want_affine[i] = xs[i] * 2.0f + 1.0f;
    /* the sums' values, not their bits: the order is the plan's, checked elsewhere */
    for (int r = 0; r < R; r++) {
        double s = 0;
        for (int c = 0; c < C; c++)
            s += xs[r * C + c] * 0.5;
        want_rowsum[r] = (float)s;
    }
}

static int affine_right(fusec_module *m, const void *y) {
    static float got[N];
    download(m, got, y, N);
    for (int i = 0; i < N; i++)
        if (got[i] != want_affine[i]) return 0;
    return 1;
}

static int rowsum_right(fusec_module *m, const void *y) {
    float got[R];
    download(m, got, y, R);
    for (int r = 0; r < R; r++)
        if (!(got[r] - want_rowsum[r] < 1e-3f && want_rowsum[r] - got[r] < 1e-3f)) return 0;
    return 1;
}

static fusec_tensor vec(void *p, int64_t n) {
    return api_tensor(p, FUSEC_F32, 1, &n, NULL);
}

static fusec_tensor mat(void *p) {
    int64_t shape[2] = {R, C};
    return api_tensor(p, FUSEC_F32, 2, shape, NULL);
}

/* Each device's tensors, whatever the current device: the call runs where they are. */
static void test_follows_tensors(fusec_module *m) {
    fusec_function *f = api_fn(m, "affine"), *g = api_fn(m, "rowsum");
    for (int d = 1; d >= 0; d--) {
        void *x = on_device(m, d, xs, N), *y = on_device(m, d, NULL, N);
        void *a = on_device(m, d, xs, R * C), *b = on_device(m, d, NULL, R);
        fusec_tensor tx = vec(x, N), ty = vec(y, N), ta = mat(a), tb = vec(b, R);
        CHECK_MSG(fusec_launch(f, &tx, 1, &ty, 1, NULL) == FUSEC_OK, "device %d: %s", d,
                  fusec_module_message(m));
        CHECK_MSG(fusec_launch(g, &ta, 1, &tb, 1, NULL) == FUSEC_OK, "device %d: %s", d,
                  fusec_module_message(m));
        CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
        CHECK_MSG(affine_right(m, y), "affine on device %d", d);
        CHECK_MSG(rowsum_right(m, b), "rowsum on device %d", d);
        /* device 1 current while device 0's tensors are used: still device 0 */
        int pushed = 0;
        char err[256];
        CHECK(rt_cuda_enter(1 - d, &pushed, err, sizeof err) == 0);
        CHECK(fusec_memory_upload(m, y, xs, 4) == FUSEC_OK); /* spoil one result */
        CHECK_MSG(fusec_launch(f, &tx, 1, &ty, 1, NULL) == FUSEC_OK, "device %d from %d: %s", d,
                  1 - d, fusec_module_message(m));
        rt_cuda_leave(pushed);
        CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
        CHECK_MSG(affine_right(m, y), "affine on device %d with device %d current", d, 1 - d);
        void *ps[] = {x, y, a, b};
        for (int i = 0; i < 4; i++)
            CHECK(fusec_memory_free(m, ps[i]) == FUSEC_OK);
    }
}

/* A stream of device d, made in its primary context (as a framework's). */
static rt_cu_stream stream_of(int d) {
    int pushed = 0;
    char err[256];
    rt_cu_stream s = NULL;
    CHECK(rt_cuda_enter(d, &pushed, err, sizeof err) == 0);
    CHECK(rt_cuda_api()->StreamCreate(&s, RT_CU_STREAM_NON_BLOCKING) == RT_CU_SUCCESS);
    rt_cuda_leave(pushed);
    return s;
}

static void stream_free(rt_cu_stream s, int d) {
    int pushed = 0;
    char err[256];
    CHECK(rt_cuda_enter(d, &pushed, err, sizeof err) == 0);
    CHECK(rt_cuda_api()->StreamSynchronize(s) == RT_CU_SUCCESS);
    CHECK(rt_cuda_api()->StreamDestroy(s) == RT_CU_SUCCESS);
    rt_cuda_leave(pushed);
}

static void refused(fusec_module *m, fusec_status st, const char *what, const char *want1,
                    const char *want2) {
    const char *msg = fusec_module_message(m);
    CHECK_MSG(st == FUSEC_ERR_INVALID_ARGUMENT, "%s: status %d (%s)", what, (int)st, msg);
    CHECK_MSG(strstr(msg, want1) && strstr(msg, want2), "%s: the message '%s' lacks '%s' or '%s'",
              what, msg, want1, want2);
}

/* Mixed devices, a stream of another device: refused before anything runs. */
static void test_refusals(fusec_module *m) {
    fusec_function *f = api_fn(m, "affine");
    void *x0 = on_device(m, 0, xs, N), *y1 = on_device(m, 1, NULL, N),
         *y0 = on_device(m, 0, NULL, N);
    fusec_tensor tx = vec(x0, N), ty1 = vec(y1, N), ty0 = vec(y0, N);
    refused(m, fusec_launch(f, &tx, 1, &ty1, 1, NULL), "x on 0, the result on 1", "parameter 'x'",
            "result 0 of device 1");
    rt_cu_stream s1 = stream_of(1);
    refused(m, fusec_launch(f, &tx, 1, &ty0, 1, s1), "a stream of device 1",
            "stream belongs to CUDA device 1", "device 0");
    fusec_plan *p = NULL;
    refused(m, fusec_plan_create(f, &tx, 1, &ty1, 1, NULL, &p), "a plan over two devices",
            "device 0", "device 1");
    CHECK(p == NULL);
    /* a plan of device 0 runs on its streams only */
    CHECK(fusec_plan_create(f, &tx, 1, &ty0, 1, NULL, &p) == FUSEC_OK);
    refused(m, fusec_plan_launch(p, s1), "a plan of device 0 on a stream of 1",
            "the plan runs on CUDA device 0", "the stream belongs to device 1");
    /* and is re-bound to its device's tensors only */
    refused(m, fusec_plan_rebind(p, &tx, 1, &ty1, 1), "a plan of device 0 re-bound to device 1",
            "parameter 'x' is memory of CUDA device 0", "result 0 of device 1");
    void *x1 = on_device(m, 1, xs, N);
    fusec_tensor tx1 = vec(x1, N);
    refused(m, fusec_plan_rebind(p, &tx1, 1, &ty1, 1), "a plan of device 0 re-bound to device 1's",
            "the plan runs on CUDA device 0", "parameter 'x' is memory of device 1");
    CHECK(fusec_memory_free(m, x1) == FUSEC_OK);
    rt_cu_stream s0 = stream_of(0);
    CHECK_MSG(fusec_plan_launch(p, s0) == FUSEC_OK, "%s", fusec_module_message(m));
    stream_free(s0, 0);
    CHECK_MSG(affine_right(m, y0), "a plan of device 0");
    fusec_plan_free(p);
    stream_free(s1, 1);
    void *ps[] = {x0, y1, y0};
    for (int i = 0; i < 3; i++)
        CHECK(fusec_memory_free(m, ps[i]) == FUSEC_OK);
}

/* A module pinned to device 1 (fusec_options.device): device 0's tensors (made through `any`,
 * a module of no device, with device 0 current) refused. */
static void test_pinned(fusec_module *any) {
    fusec_options o;
    fusec_options_init(&o);
    CHECK(o.device == -1);
    o.target = FUSEC_TARGET_CUDA;
    o.device = 1;
    fusec_module *m = NULL;
    CHECK(fusec_module_compile_string("pinned.fuse", SRC, strlen(SRC), &o, &m) == FUSEC_OK);
    CHECK_MSG(fusec_module_build(m) == FUSEC_OK, "%s", fusec_module_message(m));
    fusec_function *f = api_fn(m, "affine");
    void *x0 = on_device(any, 0, xs, N), *y0 = on_device(any, 0, NULL, N);
    void *x1 = on_device(any, 1, xs, N), *y1 = on_device(any, 1, NULL, N);
    /* its memory is device 1's, whatever the current device */
    void *z = NULL;
    CHECK(fusec_memory_alloc(m, 64, &z) == FUSEC_OK);
    CHECK_MSG(rt_cuda_pointer_device(z) == 1,
              "fusec_memory_alloc of a module of device 1: "
              "device %d",
              rt_cuda_pointer_device(z));
    CHECK(fusec_memory_free(m, z) == FUSEC_OK);
    fusec_tensor a = vec(x0, N), b = vec(y0, N), c = vec(x1, N), d = vec(y1, N);
    refused(m, fusec_launch(f, &a, 1, &b, 1, NULL), "device 0 for a module of device 1",
            "fusec_options.device", "device 0");
    CHECK_MSG(fusec_launch(f, &c, 1, &d, 1, NULL) == FUSEC_OK, "%s", fusec_module_message(m));
    CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
    CHECK(affine_right(m, y1));
    void *ps[] = {x0, y0, x1, y1};
    for (int i = 0; i < 4; i++)
        CHECK(fusec_memory_free(any, ps[i]) == FUSEC_OK);
    fusec_module_free(m);
    o.device = -2;
    m = NULL;
    CHECK(fusec_module_compile_string("bad.fuse", SRC, strlen(SRC), &o, &m) ==
          FUSEC_ERR_INVALID_ARGUMENT);
    fusec_module_free(m);
}

/* Threads, each on its device with its stream and its plan, at once. */
typedef struct worker {
    fusec_module *m;
    int device, ok;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    fusec_function *f = api_fn(w->m, "affine");
    rt_cu_stream s = stream_of(w->device);
    void *x = on_device(w->m, w->device, xs, N), *y = on_device(w->m, w->device, NULL, N);
    fusec_tensor tx = vec(x, N), ty = vec(y, N);
    fusec_plan *p = NULL;
    w->ok = fusec_plan_create(f, &tx, 1, &ty, 1, s, &p) == FUSEC_OK;
    for (int i = 0; i < 20 && w->ok; i++)
        w->ok =
            fusec_launch(f, &tx, 1, &ty, 1, s) == FUSEC_OK && fusec_plan_launch(p, s) == FUSEC_OK;
    stream_free(s, w->device);
    w->ok = w->ok && affine_right(w->m, y);
    fusec_plan_free(p);
    fusec_memory_free(w->m, x);
    fusec_memory_free(w->m, y);
    return NULL;
}

/* (two threads on device 1: both meet its first load at once) */
static void test_threads(fusec_module *m) {
    worker w[3] = {{m, 0, 0}, {m, 1, 0}, {m, 1, 0}};
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        CHECK_MSG(w[i].ok, "thread %d, of device %d: %s", i, w[i].device, fusec_module_message(m));
    }
}

int main(void) {
    rt_cuda_device d;
    char why[512];
    if (!rt_cuda_probe(&d, why, sizeof why) || d.count < 2) {
        printf("test_devices: skipped (%s)\n", d.count ? "one CUDA device" : why);
        return 77;
    }
    make_inputs();
    /* built (and loaded) on device 0, the current one; device 1 loads it at its first call */
    fusec_module *m = api_compile(SRC, FUSEC_TARGET_CUDA, 0, NULL, 1);
    if (!m) return check_exit("test_devices");
    test_threads(m); /* first: device 1 loads (and builds for sm_80) while device 0 runs */
    test_follows_tensors(m);
    test_refusals(m);
    test_pinned(m);
    fusec_module_free(m);
    return check_exit("test_devices");
}
