/* bench/anchor.c: the hand-written C a user would write instead of fusec: each formula as
 * one OpenMP loop (GELU's is bench/gelu_anchor.c), built by bench/run.py with
 * `gcc -O3 -march=native -ffast-math -fopenmp`.
 * It times itself and prints one JSON object.
 *
 *   anchor gelu N REPS          y = 0.5 x (1 + tanh(k (x + 0.044715 x^3))), f32
 *   anchor bias_relu B C REPS   y = max(x + b, 0), f32
 *   anchor copy N REPS          y = x, f32: the roofline
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* bench/gelu_anchor.c, shared with bench/cpu_bench */
void gelu_anchor(float *restrict y, const float *restrict x, long n);

static void bias_relu(const float *restrict x, const float *restrict b, float *restrict y,
                      long rows, long cols) {
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++) {
#pragma omp simd
        for (long c = 0; c < cols; c++) {
            float v = x[r * cols + c] + b[c];
            y[r * cols + c] = v > 0.0f ? v : 0.0f;
        }
    }
}

static void copy(const float *restrict x, float *restrict y, long n) {
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++)
        y[i] = x[i];
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: anchor gelu|copy N REPS | anchor bias_relu B C REPS\n");
        return 2;
    }
    const char *what = argv[1];
    int bias = !strcmp(what, "bias_relu");
    long rows = atol(argv[2]), cols = bias ? atol(argv[3]) : 1;
    int reps = atoi(argv[bias ? 4 : 3]);
    long n = rows * cols;
    if (n <= 0 || reps <= 0) return 2;
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    float *b = malloc(sizeof(float) * (size_t)cols);
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!x || !y || !b || !t) return 3;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        x[i] = (float)((i * 2654435761u) % 4001) / 1000.0f - 2.0f;
        y[i] = 0.0f;
    }
    for (long c = 0; c < cols; c++)
        b[c] = (float)(c % 7) - 3.0f;
    for (int r = -1; r < reps; r++) {
        double t0 = now_ms();
        if (bias)
            bias_relu(x, b, y, rows, cols);
        else if (!strcmp(what, "gelu"))
            gelu_anchor(y, x, n);
        else
            copy(x, y, n);
        if (r >= 0) t[r] = now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    double bytes = 2.0 * (double)n * sizeof(float) + (bias ? (double)cols * sizeof(float) : 0.0);
    double check = 0;
    for (long i = 0; i < n; i += n / 64 + 1)
        check += y[i];
    printf("{\"what\": \"%s\", \"n\": %ld, \"median_ms\": %.6f, \"bytes\": %.0f, "
           "\"gbps\": %.3f, \"threads\": %d, \"check\": %.6g}\n",
           what, n, med, bytes, bytes / (med * 1e6), omp_get_max_threads(), check);
    free(x);
    free(y);
    free(b);
    free(t);
    return 0;
}
