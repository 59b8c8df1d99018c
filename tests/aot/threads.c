/* tests/aot/threads.c: a library built ahead of time, first called from several threads at
 * once (the library loads on its first call, under its lock: every thread must see it loaded
 * once and get the same bits), then with bad arguments. Links libkernels.a (examples/aot's
 * library). Exit 0, or 1 naming what failed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define THREADS 8
#define N       30011

static float x[N], y[THREADS][N];
static int rc[THREADS];

static void *run(void *arg) {
    int t = (int)(intptr_t)arg;
    rc[t] = kernels_gelu(x, y[t], N, NULL);
    return NULL;
}

static int fails = 0;
static void expect(int cond, const char *what) {
    if (!cond) {
        printf("FAIL: %s (last error: %s)\n", what, kernels_last_error());
        fails++;
    }
}

int main(void) {
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 1999 - 999) / 250.0f;
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, run, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++) {
        expect(rc[t] == 0, "a first call from one of several threads");
        expect(!memcmp(y[t], y[0], sizeof y[0]), "every thread's result has the same bits");
    }
    expect(kernels_target() != NULL, "the library names the code it runs");
    /* bad arguments: statuses and messages, nothing run */
    expect(kernels_gelu(NULL, y[0], N, NULL) == 1, "no input: an invalid argument");
    expect(strstr(kernels_last_error(), "parameter 'x'") != NULL, "the message names x");
    expect(kernels_gelu(x, x + 1, N - 1, NULL) == 1, "overlapping buffers: refused");
    expect(kernels_gelu(x, y[0], -5, NULL) == 5, "a negative dim: a shape error");
    expect(strstr(kernels_last_error(), "N = -5") != NULL, "the message names the dim");
    expect(kernels_gelu(x, y[0], INT64_MAX, NULL) == 5, "a dim past memory: a shape error");
    expect(kernels_gelu((const float *)((char *)x + 1), y[0], 10, NULL) == 1,
           "a misaligned input: refused");
    expect(kernels_gelu(x, x, N, NULL) == 0, "in place over its own input");
    expect(!memcmp(x, y[0], sizeof y[0]), "in place gives the same bits");
    expect(kernels_gelu(NULL, NULL, 0, NULL) == 0, "no elements: nothing to do");
    expect(kernels_softmax(x, y[0], 7, 0, NULL) == 12, "max over an empty axis: a run-time error");
    printf("%s\n", fails ? "threads: FAILED" : "threads: passed");
    return fails ? 1 : 0;
}
