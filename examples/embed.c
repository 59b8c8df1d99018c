/* examples/embed.c: a C program that embeds libfusec. It compiles examples/gelu.fuse once,
 * puts an input in the target's memory (the GPU's when there is one, else the host's),
 * launches, checks the result against GELU computed here in double precision, then runs the
 * same through a plan (one CUDA graph launch) replayed 1000 times.
 *
 *     build/embed [examples/gelu.fuse]
 */
#include <fusec.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1000003 /* odd on purpose: the vectorized kernels' scalar tail runs too */

static int fail(fusec_module *m, const char *what) {
    fprintf(stderr, "embed: %s failed: %s%s\n", what, fusec_module_diagnostics(m),
            fusec_module_message(m));
    fusec_module_free(m);
    return 1;
}

/* The largest error against the formula, relative to the SPEC's f32 tolerance (<= 1 passes). */
static double worst(const float *x, const float *y) {
    double w = 0;
    for (int i = 0; i < N; i++) {
        double v = x[i],
               want = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        double err = fabs(y[i] - want) / (1e-5 * fabs(want) + 1e-6);
        if (!(err <= w)) w = err; /* a NaN counts as the worst */
    }
    return w;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "examples/gelu.fuse";
    fusec_module *m = NULL;
    fusec_function *f = NULL;
    if (fusec_module_compile_file(path, NULL, &m) != FUSEC_OK) return fail(m, "compiling");
    if (fusec_module_function(m, "gelu", &f) != FUSEC_OK) return fail(m, "finding gelu");
    fusec_target t = fusec_module_target(m);
    printf("target: %s\n", t == FUSEC_TARGET_CUDA ? "cuda" : t == FUSEC_TARGET_CPU ? "cpu" : "ref");

    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (int i = 0; i < N; i++)
        x[i] = 6.0f * (float)i / N - 3.0f + 1e-3f;
    void *dx = NULL, *dy = NULL;
    if (fusec_memory_alloc(m, N * sizeof *x, &dx) != FUSEC_OK ||
        fusec_memory_alloc(m, N * sizeof *y, &dy) != FUSEC_OK ||
        fusec_memory_upload(m, dx, x, N * sizeof *x) != FUSEC_OK)
        return fail(m, "allocating");
    fusec_tensor in = {dx, FUSEC_F32, 1, {N}, NULL}, out = {dy, FUSEC_F32, 1, {N}, NULL};

    /* one launch on the default stream (asynchronous on a GPU) */
    if (fusec_launch(f, &in, 1, &out, 1, NULL) != FUSEC_OK) return fail(m, "launching");
    if (fusec_synchronize(m, NULL) != FUSEC_OK ||
        fusec_memory_download(m, y, dy, N * sizeof *y) != FUSEC_OK)
        return fail(m, "reading the result");
    double w1 = worst(x, y);
    printf("launch: worst error %.3f of the tolerance\n", w1);

    /* a plan: bound once, replayed with one call each */
    fusec_plan *p = NULL;
    if (fusec_plan_create(f, &in, 1, &out, 1, NULL, &p) != FUSEC_OK) return fail(m, "planning");
    for (int i = 0; i < 1000; i++)
        if (fusec_plan_launch(p, NULL) != FUSEC_OK) return fail(m, "replaying");
    if (fusec_synchronize(m, NULL) != FUSEC_OK ||
        fusec_memory_download(m, y, dy, N * sizeof *y) != FUSEC_OK)
        return fail(m, "reading the result");
    double w2 = worst(x, y);
    printf("plan, 1000 replays: worst error %.3f of the tolerance\n", w2);

    fusec_plan_free(p);
    fusec_memory_free(m, dx);
    fusec_memory_free(m, dy);
    fusec_module_free(m);
    free(x);
    free(y);
    return w1 <= 1 && w2 <= 1 ? 0 : 1;
}
