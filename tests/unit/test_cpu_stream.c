/* tests/unit/test_cpu_stream.c: the CPU backend's streamed results (non-temporal stores
 * through a staging block) into buffers that start anywhere within a cache line: every
 * element written and equal to the reference's, nothing written before or after the buffer,
 * for row lengths around the staging block's and the cache line's sizes, in f32, bf16 and
 * f64, with code built for the host and for x86-64-v2 and x86-64-v3 (each CPU streams
 * vectors of its own width). Streaming is forced for every size (FUSEC_CPU_STREAM_MIN_BYTES=0).
 * Skipped (77) when the build has no CPU backend. */
#include "fusec.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"
#include "driver/backend.h"

static const char *SRC =
    "fn softmax(x: f32[R, C]) -> f32[R, C] {\n"
    "    let e = exp(x - max(x, axis=1));\n"
    "    return e / sum(e, axis=1);\n"
    "}\n"
    "fn centre(x: f32[R, C]) -> bf16[R, C] { return bf16(x - mean(x, axis=1)); }\n"
    "fn scale(x: f64[R, C]) -> f64[R, C] { return x / sum(abs(x), axis=1); }\n";

#define GUARD  128 /* poisoned bytes on either side of a result */
#define POISON 0xa5

static uint32_t rng = 777;

/* Runs fn on CPU and reference for an [r, c] input, the CPU's result at byte offset `off`
 * into its allocation; checks the guards and the values. */
static void run_case(fusec_module *mc, fusec_module *mr, const char *name, fusec_dtype in_dt,
                     int64_t r, int64_t c, size_t off, double rel) {
    size_t n = (size_t)(r * c);
    size_t in_es = fusec_dtype_size(in_dt);
    char *x = malloc(n * in_es);
    for (size_t i = 0; i < n; i++) {
        float v = api_frand(&rng, 4.0f);
        CHECK(fusec_convert(FUSEC_F32, &v, in_dt, x + i * in_es, 1) == FUSEC_OK);
    }
    fusec_tensor in = {x, in_dt, 2, {r, c}, NULL};
    fusec_function *fc = api_fn(mc, name), *fr = api_fn(mr, name);
    fusec_tensor oc, orf;
    CHECK(fusec_function_result_shapes(fc, &in, 1, &oc, 1) == FUSEC_OK);
    orf = oc;
    size_t es = fusec_dtype_size(oc.dtype), bytes = n * es;
    unsigned char *block = malloc(bytes + 2 * GUARD + 64);
    /* a 64-byte boundary, then `off` past it */
    unsigned char *line = block + (64 - (uintptr_t)block % 64) % 64;
    memset(block, POISON, bytes + 2 * GUARD + 64);
    oc.data = line + GUARD + off;
    orf.data = malloc(bytes);
    fusec_status s1 = fusec_launch(fc, &in, 1, &oc, 1, NULL);
    fusec_status s2 = fusec_launch(fr, &in, 1, &orf, 1, NULL);
    CHECK_MSG(s1 == FUSEC_OK && s2 == FUSEC_OK, "%s: %s", name, fusec_status_string(s1));
    int bad = 0;
    for (unsigned char *p = block; p < (unsigned char *)oc.data && bad < 3; p++)
        if (*p != POISON) {
            bad++;
            CHECK_MSG(0, "%s [%lld, %lld] at +%zu: byte %td before the result written", name,
                      (long long)r, (long long)c, off, (unsigned char *)oc.data - p);
        }
    for (unsigned char *p = (unsigned char *)oc.data + bytes;
         p < block + bytes + 2 * GUARD + 64 && bad < 3; p++)
        if (*p != POISON) {
            bad++;
            CHECK_MSG(0, "%s [%lld, %lld] at +%zu: byte %td after the result written", name,
                      (long long)r, (long long)c, off, p - ((unsigned char *)oc.data + bytes));
        }
    for (size_t k = 0; k < n && bad < 3 && s1 == FUSEC_OK && s2 == FUSEC_OK; k++) {
        double g, w;
        if (oc.dtype == FUSEC_F64) {
            memcpy(&g, (char *)oc.data + k * 8, 8);
            memcpy(&w, (char *)orf.data + k * 8, 8);
        } else {
            float a, b;
            CHECK(fusec_convert(oc.dtype, (char *)oc.data + k * es, FUSEC_F32, &a, 1) == FUSEC_OK);
            CHECK(fusec_convert(oc.dtype, (char *)orf.data + k * es, FUSEC_F32, &b, 1) == FUSEC_OK);
            g = a;
            w = b;
        }
        if (!(fabs(g - w) <= rel * fabs(w) + (oc.dtype == FUSEC_F64 ? 1e-12 : 1e-6))) {
            bad++;
            CHECK_MSG(0, "%s [%lld, %lld] at +%zu: [%zu] cpu %.9g, ref %.9g", name, (long long)r,
                      (long long)c, off, k, g, w);
        }
    }
    free(x);
    free(block);
    free(orf.data);
}

/* Row lengths: under a line, a line's worth, around the 512-element staging block and its
 * multiples, and long odd rows; every result at every offset into a line. */
static void run_cases(fusec_module *mc, fusec_module *mr) {
    const int64_t cols[] = {1, 3, 16, 17, 511, 512, 513, 1031, 4099};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        int64_t c = cols[i], r = c > 1000 ? 3 : 5;
        for (size_t off = 0; off < 64; off += 4)
            run_case(mc, mr, "softmax", FUSEC_F32, r, c, off, 2e-5);
        for (size_t off = 0; off < 64; off += 2)
            run_case(mc, mr, "centre", FUSEC_F32, r, c, off, 1.0 / 128);
        for (size_t off = 0; off < 64; off += 8)
            run_case(mc, mr, "scale", FUSEC_F64, r, c, off, 1e-12);
    }
}

int main(void) {
    char why[512];
    if (!rt_backend_cpu.available(why, sizeof why)) {
        printf("the cpu backend is not available: %s; skipping\n", why);
        return 77;
    }
    /* read at the first launch: every result below is streamed */
    setenv("FUSEC_CPU_STREAM_MIN_BYTES", "0", 1);
    fusec_module *mr = api_compile(SRC, FUSEC_TARGET_REF, 0, NULL, 1);
    /* the staged copy's vector width is the CPU's: the host's, and 16 and 32 bytes */
    const char *cpus[] = {NULL, "x86-64-v2", "x86-64-v3"};
    for (int k = 0; k < 3 && !failures; k++) {
        fusec_module *mc = api_compile_cpu(SRC, cpus[k]);
        fusec_tensor x = {NULL, FUSEC_F32, 2, {0, 4}, NULL}, y = {NULL, FUSEC_F32, 2, {0, 4}, NULL};
        if (fusec_launch(api_fn(mc, "softmax"), &x, 1, &y, 1, NULL) == FUSEC_ERR_UNSUPPORTED) {
            printf("this host cannot run code for %s: skipped\n", cpus[k]);
        } else {
            printf("code for %s\n", cpus[k] ? cpus[k] : "the host");
            run_cases(mc, mr);
        }
        fusec_module_free(mc);
    }
    fusec_module_free(mr);
    return check_exit("test_cpu_stream");
}
