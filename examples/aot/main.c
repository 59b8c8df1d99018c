/* examples/aot/main.c: a C program that runs fusec's kernels with no compiler at run time. It
 * includes the header `fusec --emit=lib` wrote for examples/gelu.fuse, softmax.fuse and
 * layernorm.fuse (library name `kernels`) and links libkernels.a, with -lpthread -lm -ldl and
 * nothing else (see examples/aot/README.md for the command line, CMake and pkg-config):
 *
 *     fusec --emit=lib --target=cpu -o out/kernels examples/{gelu,softmax,layernorm}.fuse
 *     cc -O2 examples/aot/main.c -Iout -Lout -lkernels -lpthread -lm -ldl -o aot_demo
 *     ./aot_demo [DIR]
 *
 * Built with -DKERNELS_CUDA against a CUDA library (--target=cuda), it puts its inputs in
 * device memory first and takes the results back after the calls, through the CUDA driver,
 * which it loads with dlopen as the library does ($FUSEC_CUDA_DRIVER, else libcuda.so.1).
 *
 * It runs each function once on inputs it makes up (odd sizes), checks GELU and softmax
 * against formulas in double precision, and prints which CPU's code the library picked
 * ($FUSEC_CPU names one of those it holds) or which GPU architecture's. With DIR, it writes
 * every input and result there as .npy files (bf16 widened to f32, exactly, as `fusec run`
 * writes it), so that a test can compare them with `fusec run` bit for bit. Exit 0, or 1 with
 * a message.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

/* ---- where the kernels' tensors live: host memory, or (KERNELS_CUDA) device memory --------- */

#ifdef KERNELS_CUDA
#include <dlfcn.h>

static struct {
    int (*init)(unsigned);
    int (*device_get)(int *, int);
    int (*ctx_retain)(void **, int);
    int (*ctx_push)(void *);
    int (*alloc)(unsigned long long *, size_t);
    int (*htod)(unsigned long long, const void *, size_t);
    int (*dtoh)(void *, unsigned long long, size_t);
    int (*sync)(void);
    int (*free)(unsigned long long);
} cu;

/* The driver, device 0's primary context made current: the memory below is device 0's, where
 * the library then runs (a call runs on the device of its memory: docs/devices.md). */
static int device_setup(void) {
    const char *path = getenv("FUSEC_CUDA_DRIVER");
    void *h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return -1;
    void *slots[] = {&cu.init, &cu.device_get, &cu.ctx_retain, &cu.ctx_push, &cu.alloc,
                     &cu.htod, &cu.dtoh,       &cu.sync,       &cu.free};
    const char *names[] = {
        "cuInit",        "cuDeviceGet",     "cuDevicePrimaryCtxRetain", "cuCtxPushCurrent_v2",
        "cuMemAlloc_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",          "cuCtxSynchronize",
        "cuMemFree_v2"};
    for (int i = 0; i < 9; i++) {
        void *f = dlsym(h, names[i]);
        if (!f) return -1;
        memcpy(slots[i], &f, sizeof f); /* an object pointer to a function pointer, as dlsym's */
    }
    int dev;
    void *ctx;
    return cu.init(0) || cu.device_get(&dev, 0) || cu.ctx_retain(&ctx, dev) || cu.ctx_push(ctx) ? -1
                                                                                                : 0;
}

/* n bytes of device memory holding h's (h NULL: uninitialized). */
static void *put(const void *h, size_t n) {
    unsigned long long d = 0;
    if (cu.alloc(&d, n ? n : 1) || (h && cu.htod(d, h, n))) return NULL;
    return (void *)(uintptr_t)d;
}

/* The results in d into h, once every call is done. */
static int get(void *h, const void *d, size_t n) {
    return cu.sync() || cu.dtoh(h, (unsigned long long)(uintptr_t)d, n) ? -1 : 0;
}

/* d, which put gave for h, is no longer needed. */
static void release(void *d, const void *h) {
    (void)h;
    cu.free((unsigned long long)(uintptr_t)d);
}
#else
static int device_setup(void) {
    return 0;
}
static void *put(const void *h, size_t n) {
    return h ? (void *)h : malloc(n ? n : 1);
}
static int get(void *h, const void *d, size_t n) {
    if (h != d) memcpy(h, d, n);
    return 0;
}
static void release(void *d, const void *h) {
    if (d != h) free(d);
}
#endif

/* A numpy .npy file of f32 values, or of bf16 values widened to f32 (bf16 set). */
static int write_npy(const char *dir, const char *name, const void *data, int rank,
                     const int64_t *shape, int bf16) {
    if (!dir) return 0;
    char path[4096], dict[256];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    int64_t count = 1;
    for (int i = 0; i < rank; i++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,", (long long)shape[i]);
        count *= shape[i];
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    int pad = (64 - (10 + n + 1) % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    pre[8] = (unsigned char)((n + pad + 1) & 0xff);
    pre[9] = (unsigned char)((n + pad + 1) >> 8);
    fwrite(pre, 1, 10, f);
    fwrite(dict, 1, (size_t)n, f);
    fprintf(f, "%*s\n", pad, "");
    for (int64_t i = 0; i < count; i++) {
        float v;
        if (bf16) {
            uint32_t bits = (uint32_t)((const uint16_t *)data)[i] << 16;
            memcpy(&v, &bits, 4);
        } else {
            v = ((const float *)data)[i];
        }
        fwrite(&v, 4, 1, f);
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* Made-up inputs: a fixed sequence, the same on every run. */
static float value(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)((int32_t)(*state >> 8) - (1 << 23)) / (float)(1 << 21); /* [-4, 4) */
}

static uint16_t to_bf16(float v) { /* rounded to nearest even */
    uint32_t b;
    memcpy(&b, &v, 4);
    return (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

static int failed(const char *what, int rc) {
    fprintf(stderr, "aot_demo: %s failed (%d): %s\n", what, rc, kernels_last_error());
    return 1;
}

static int gelu(const char *dir, uint32_t *seed) {
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    if (!x || !y) return failed("malloc", 0);
    for (int i = 0; i < N; i++)
        x[i] = value(seed);
    float *dx = put(x, N * sizeof *x), *dy = put(NULL, N * sizeof *y);
    if (!dx || !dy) return failed("memory for gelu", 0);
    int rc = kernels_gelu(dx, dy, N, NULL);
    if (rc) return failed("gelu", rc);
    if (get(y, dy, N * sizeof *y)) return failed("gelu's results", 0);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double v = x[i],
               want = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        double err = fabs(y[i] - want) / (1e-5 * fabs(want) + 1e-6);
        if (!(err <= worst)) worst = err;
    }
    int64_t shape[1] = {N};
    if (write_npy(dir, "gelu_x", x, 1, shape, 0) || write_npy(dir, "gelu_y", y, 1, shape, 0))
        return failed("writing gelu's files", 0);
    printf("gelu      [%d]: worst error %.3f of the tolerance\n", N, worst);
    release(dx, x);
    release(dy, NULL);
    free(x);
    free(y);
    return worst <= 1 ? 0 : failed("gelu's accuracy", 0);
}

static int softmax(const char *dir, uint32_t *seed) {
    enum { R = 37, C = 1001 };
    float *x = malloc(R * C * sizeof *x), *y = malloc(R * C * sizeof *y);
    if (!x || !y) return failed("malloc", 0);
    for (int i = 0; i < R * C; i++)
        x[i] = value(seed);
    float *dx = put(x, R * C * sizeof *x), *dy = put(NULL, R * C * sizeof *y);
    if (!dx || !dy) return failed("memory for softmax", 0);
    int rc = kernels_softmax(dx, dy, R, C, NULL);
    if (rc) return failed("softmax", rc);
    if (get(y, dy, R * C * sizeof *y)) return failed("softmax's results", 0);
    double worst = 0;
    for (int r = 0; r < R; r++) {
        double s = 0;
        for (int c = 0; c < C; c++)
            s += y[r * C + c];
        if (!(fabs(s - 1) <= worst)) worst = fabs(s - 1);
    }
    int64_t shape[2] = {R, C};
    if (write_npy(dir, "softmax_x", x, 2, shape, 0) || write_npy(dir, "softmax_y", y, 2, shape, 0))
        return failed("writing softmax's files", 0);
    printf("softmax   [%d, %d]: rows sum to 1 within %.2g\n", R, C, worst);
    release(dx, x);
    release(dy, NULL);
    free(x);
    free(y);
    return worst < 1e-4 ? 0 : failed("softmax's sums", 0);
}

static int layernorm(const char *dir, uint32_t *seed) {
    enum { R = 129, C = 771 };
    uint16_t *x = malloc(R * C * 2), *w = malloc(C * 2), *b = malloc(C * 2), *y = malloc(R * C * 2);
    if (!x || !w || !b || !y) return failed("malloc", 0);
    for (int i = 0; i < R * C; i++)
        x[i] = to_bf16(value(seed));
    for (int i = 0; i < C; i++) {
        w[i] = to_bf16(1 + value(seed) / 8);
        b[i] = to_bf16(value(seed) / 8);
    }
    uint16_t *dx = put(x, R * C * 2), *dw = put(w, C * 2), *db = put(b, C * 2),
             *dy = put(NULL, R * C * 2);
    if (!dx || !dw || !db || !dy) return failed("memory for layernorm", 0);
    int rc = kernels_layernorm(dx, dw, db, dy, R, C, NULL);
    if (rc) return failed("layernorm", rc);
    if (get(y, dy, R * C * 2)) return failed("layernorm's results", 0);
    int64_t shape[2] = {R, C}, row[1] = {C};
    if (write_npy(dir, "layernorm_x", x, 2, shape, 1) ||
        write_npy(dir, "layernorm_w", w, 1, row, 1) ||
        write_npy(dir, "layernorm_b", b, 1, row, 1) ||
        write_npy(dir, "layernorm_y", y, 2, shape, 1))
        return failed("writing layernorm's files", 0);
    printf("layernorm [%d, %d] bf16: done\n", R, C);
    release(dx, x);
    release(dw, w);
    release(db, b);
    release(dy, NULL);
    free(x);
    free(w);
    free(b);
    free(y);
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : NULL;
    uint32_t seed = 12345;
    if (device_setup()) {
        fprintf(stderr, "aot_demo: no CUDA driver or device to put the tensors on\n");
        return 1;
    }
    if (gelu(dir, &seed) || softmax(dir, &seed) || layernorm(dir, &seed)) return 1;
    printf("the library ran the code built for %s\n", kernels_target());
    return 0;
}
