/* bench/math_vec.c: does a loop over codegen/cpu/llvm_math.c vectorize, and what does it gain?
 *
 * Times y[i] = f(x[i]) over 2^24 floats for llvm_math's functions against libm's. Built with
 * llvm_math.c beside it and link-time optimization, LLVM_MATH_API set to always_inline, so
 * that the functions inline into the loops as they will in a JIT module. Not built by CMake;
 * from the repository root:
 *
 *   clang -O3 -march=native -fno-math-errno -flto -fuse-ld=lld -I. \
 *     '-DLLVM_MATH_API=__attribute__((always_inline))' \
 *     bench/math_vec.c codegen/cpu/llvm_math.c -lm -o /tmp/math_vec
 *   clang ... -Rpass=loop-vectorize -Rpass-missed=loop-vectorize    (the vectorizer's report)
 *   /tmp/math_vec [N_LOG2]
 *
 * No -ffast-math: llvm_math relies on IEEE rounding. -fno-math-errno lets libm's own
 * functions be compared as fairly as the compiler allows (it changes nothing in ours but
 * sqrt). Each bench loop is a separate noinline function, so the report names it.
 */
#include "codegen/cpu/llvm_math.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define LOOP(NAME, EXPR)                                                                           \
    static __attribute__((noinline)) void NAME(float *restrict y, const float *restrict x,         \
                                               long n) {                                           \
        for (long i = 0; i < n; i++)                                                               \
            y[i] = EXPR;                                                                           \
    }

LOOP(ours_exp, llvm_math_expf(x[i]))
LOOP(libm_exp, expf(x[i]))
LOOP(ours_log, llvm_math_logf(__builtin_fabsf(x[i])))
LOOP(libm_log, logf(__builtin_fabsf(x[i])))
LOOP(ours_tanh, llvm_math_tanhf(x[i]))
LOOP(libm_tanh, tanhf(x[i]))
LOOP(ours_sigmoid, llvm_math_sigmoidf(x[i]))
LOOP(libm_sigmoid, 1.0f / (1.0f + expf(-x[i])))
LOOP(ours_erf, llvm_math_erff(x[i]))
LOOP(libm_erf, erff(x[i]))
LOOP(ours_sin, llvm_math_sinf(x[i]))
LOOP(libm_sin, sinf(x[i]))
LOOP(ours_pow, llvm_math_powf(x[i], 1.7f))
LOOP(libm_pow, powf(x[i], 1.7f))
LOOP(ours_atan2, llvm_math_atan2f(x[i], 0.5f))
LOOP(libm_atan2, atan2f(x[i], 0.5f))
LOOP(ours_fmod, llvm_math_fmodf(x[i], 0.37f))
LOOP(libm_fmod, fmodf(x[i], 0.37f))
LOOP(fast_exp, llvm_math_fast_expf(x[i]))
LOOP(fast_tanh, llvm_math_fast_tanhf(x[i]))
LOOP(fast_sin, llvm_math_fast_sinf(x[i]))
/* the GELU of the SPEC's example, as fused code would compute it */
LOOP(ours_gelu,
     0.5f * x[i] *
         (1.0f + llvm_math_tanhf(0.7978845608028654f * (x[i] + 0.044715f * x[i] * x[i] * x[i]))))
LOOP(libm_gelu,
     0.5f * x[i] * (1.0f + tanhf(0.7978845608028654f * (x[i] + 0.044715f * x[i] * x[i] * x[i]))))

typedef void (*loop_fn)(float *restrict, const float *restrict, long);

static double best_of(loop_fn f, float *y, const float *x, long n) {
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        f(y, x, n);
        double t = now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv) {
    int lg = argc > 1 ? atoi(argv[1]) : 24;
    lg = lg > 10 && lg < 30 ? lg : 24;
    long n = 1L << lg;
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    if (!x || !y) return 1;
    unsigned s = 12345;
    for (long i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) * 0x1p-24f * 8.0f - 4.0f; /* [-4, 4) */
    }
    struct {
        const char *name;
        loop_fn ours, libm;
    } rows[] = {
        {"expf", ours_exp, libm_exp},
        {"logf (of |x| < 4)", ours_log, libm_log},
        {"tanhf", ours_tanh, libm_tanh},
        {"sigmoidf", ours_sigmoid, libm_sigmoid},
        {"erff", ours_erf, libm_erf},
        {"sinf", ours_sin, libm_sin},
        {"powf(x, 1.7)", ours_pow, libm_pow},
        {"atan2f(x, .5)", ours_atan2, libm_atan2},
        {"fmodf(x, .37)", ours_fmod, libm_fmod},
        {"gelu (tanh)", ours_gelu, libm_gelu},
        {"fast expf", fast_exp, libm_exp},
        {"fast tanhf", fast_tanh, libm_tanh},
        {"fast sinf", fast_sin, libm_sin},
    };
    printf("2^%d floats in [-4, 4): ns per element, best of 5\n", lg);
    printf("%-20s %12s %12s %8s\n", "function", "llvm_math", "libm", "speedup");
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        double a = best_of(rows[r].ours, y, x, n), b = best_of(rows[r].libm, y, x, n);
        printf("%-20s %12.3f %12.3f %7.1fx\n", rows[r].name, 1e9 * a / (double)n,
               1e9 * b / (double)n, b / a);
    }
    free(x);
    free(y);
    return 0;
}
