/* bench/gelu_anchor.c: the hand-written baseline of bench/cpu_bench: the GELU formula of
 * examples/gelu.fuse as one loop in C, run on every core with OpenMP. The bench builds it
 * with gcc -O3 -march=native -ffast-math -fopenmp (so tanhf may become glibc's libmvec
 * vector tanhf), the way a programmer would write and compile it without fusec. */
#include <math.h>

void gelu_anchor(float *restrict y, const float *restrict x, long n);

void gelu_anchor(float *restrict y, const float *restrict x, long n) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
}
