/* bench/aot_calls.c: what bench/aot.py times, one program built two ways: with -DFUSEC_AOT
 * against the library `fusec --emit=lib` wrote (kernels.h, libkernels.a: examples/aot's), else
 * against libfusec (the JIT, compiling the examples on first use through the kernel cache).
 *
 *   aot_calls first [SRC]   GELU [1003], softmax [37, 100] and layernorm bf16 [37, 96] once
 *                           each: the process's time to its first results (small, so that
 *                           what is timed is the start, not the work)
 *   aot_calls loop REPS [SRC]  REPS calls of GELU on 1000 elements after one warm-up: prints
 *                           the nanoseconds of one call
 *
 * SRC: fusec's source tree, for the JIT's .fuse files (default "."). Exit 0, or 1 with why.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef FUSEC_AOT
#include "kernels.h"
#else
#include <fusec.h>
#endif

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#ifdef FUSEC_AOT
static int gelu(const char *src, const float *x, float *y, int64_t n) {
    (void)src;
    return kernels_gelu(x, y, n, NULL);
}
static int softmax(const char *src, const float *x, float *y, int64_t r, int64_t c) {
    (void)src;
    return kernels_softmax(x, y, r, c, NULL);
}
static int layernorm(const char *src, const uint16_t *x, const uint16_t *w, const uint16_t *b,
                     uint16_t *y, int64_t r, int64_t c) {
    (void)src;
    return kernels_layernorm(x, w, b, y, r, c, NULL);
}
static const char *why(void) {
    return kernels_last_error();
}
#else
static const char *message = "";

static fusec_module *modules[3]; /* gelu's, softmax's, layernorm's: the message's */

/* examples/NAME.fuse's function NAME, its module compiled into modules[i]; built on first use. */
static fusec_function *function(const char *src, const char *name, int i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/%s.fuse", src, name);
    fusec_options opt;
    fusec_options_init(&opt);
    opt.target = FUSEC_TARGET_CPU;
    fusec_function *f = NULL;
    if (fusec_module_compile_file(path, &opt, &modules[i]) != FUSEC_OK ||
        fusec_module_function(modules[i], name, &f) != FUSEC_OK) {
        message = modules[i] ? fusec_module_message(modules[i]) : "out of memory";
        return NULL;
    }
    return f;
}

static fusec_tensor tensor(fusec_dtype t, void *data, int rank, int64_t d0, int64_t d1) {
    fusec_tensor x;
    memset(&x, 0, sizeof x);
    x.dtype = t;
    x.rank = rank;
    x.shape[0] = d0;
    x.shape[1] = d1;
    x.data = data;
    return x;
}

static int call(fusec_function *f, int i, const fusec_tensor *in, int nin,
                const fusec_tensor *out) {
    int rc = f ? (int)fusec_launch(f, in, nin, out, 1, NULL) : 1;
    if (rc && f) message = fusec_module_message(modules[i]);
    return rc;
}

static int gelu(const char *src, const float *x, float *y, int64_t n) {
    static fusec_function *f;
    if (!f) f = function(src, "gelu", 0);
    fusec_tensor in = tensor(FUSEC_F32, (void *)x, 1, n, 0), out = tensor(FUSEC_F32, y, 1, n, 0);
    return call(f, 0, &in, 1, &out);
}
static int softmax(const char *src, const float *x, float *y, int64_t r, int64_t c) {
    fusec_function *f = function(src, "softmax", 1);
    fusec_tensor in = tensor(FUSEC_F32, (void *)x, 2, r, c), out = tensor(FUSEC_F32, y, 2, r, c);
    return call(f, 1, &in, 1, &out);
}
static int layernorm(const char *src, const uint16_t *x, const uint16_t *w, const uint16_t *b,
                     uint16_t *y, int64_t r, int64_t c) {
    fusec_function *f = function(src, "layernorm", 2);
    fusec_tensor in[3] = {tensor(FUSEC_BF16, (void *)x, 2, r, c),
                          tensor(FUSEC_BF16, (void *)w, 1, c, 0),
                          tensor(FUSEC_BF16, (void *)b, 1, c, 0)};
    fusec_tensor out = tensor(FUSEC_BF16, y, 2, r, c);
    return call(f, 2, in, 3, &out);
}
static const char *why(void) {
    return message;
}
#endif

static int first(const char *src) {
    enum { N = 1003, R = 37, C = 100, LC = 96 };
    float *x = calloc(N, 4), *y = calloc(N, 4), *s = calloc((size_t)R * C, 4),
          *t = calloc((size_t)R * C, 4);
    uint16_t *lx = calloc((size_t)R * LC, 2), *ly = calloc((size_t)R * LC, 2), *w = calloc(LC, 2),
             *b = calloc(LC, 2);
    if (!x || !y || !s || !t || !lx || !ly || !w || !b) return 1;
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 997) / 100.0f - 5.0f;
    if (gelu(src, x, y, N) || softmax(src, s, t, R, C) || layernorm(src, lx, w, b, ly, R, LC)) {
        fprintf(stderr, "aot_calls: %s\n", why());
        return 1;
    }
    return 0;
}

static int loop(const char *src, long reps) {
    float x[1000], y[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)i / 500.0f;
    if (gelu(src, x, y, 1000)) {
        fprintf(stderr, "aot_calls: %s\n", why());
        return 1;
    }
    double t0 = now_ns();
    for (long k = 0; k < reps; k++)
        if (gelu(src, x, y, 1000)) return 1;
    printf("%.1f\n", (now_ns() - t0) / (double)reps);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "first")) return first(argc > 2 ? argv[2] : ".");
    if (argc >= 3 && !strcmp(argv[1], "loop")) return loop(argc > 3 ? argv[3] : ".", atol(argv[2]));
    fprintf(stderr, "usage: aot_calls first [SRC] | aot_calls loop REPS [SRC]\n");
    return 2;
}
