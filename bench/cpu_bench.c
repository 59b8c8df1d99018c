/* bench/cpu_bench.c: the CPU backend's speed, side by side in one run (bench/cpu_bench.sh
 * builds and runs it; the numbers go into bench/RESULTS.md):
 *
 *   gelu       bench/cpu_bench.fuse:gelu on 2^26 f32 through fusec_launch (--target=cpu),
 *              against the backend's multithreaded copy of the same bytes (copy_time) and the
 *              same formula as one OpenMP loop in C (bench/gelu_anchor.c, gcc -O3
 *              -march=native -ffast-math -fopenmp);
 *   softmax, layernorm   [16384, 4096] f32, against the copy;
 *   compile    gelu.fuse cold (no cache) in process, and whole `fusec` processes cold and
 *              from the cache.
 *
 * Every figure is a median over rounds (the big cases also print the fastest round); the
 * rounds interleave the contenders, so a busy machine slows all of them alike. Usage:
 * cpu_bench FUSEC_BINARY SRC_DIR [ROUNDS]
 */
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fusec.h"
#include "driver/backend.h"

void gelu_anchor(float *restrict y, const float *restrict x, long n);

extern char **environ;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what, fusec_module *m) {
    fprintf(stderr, "cpu_bench: %s: %s%s\n", what, m ? fusec_module_message(m) : "",
            m ? fusec_module_diagnostics(m) : "");
    exit(1);
}

static float *random_floats(size_t n, unsigned seed) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!p) die("out of memory", NULL);
    uint32_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)(s >> 8) * (8.0f / 16777216.0f) - 4.0f;
    }
    return p;
}

/* A copy of `bytes` (read once, written once: 2 * bytes moved, as copy_time counts). */
static double copy_ms(size_t bytes) {
    double ms;
    char err[256];
    if (rt_backend_cpu.copy_time(-1, 2 * bytes, 3, &ms, err, sizeof err) != FUSEC_OK)
        die(err, NULL);
    return ms;
}

static double launch_ms(fusec_function *f, const fusec_tensor *in, int nin, fusec_tensor *out,
                        fusec_module *m) {
    double t0 = now_ms();
    if (fusec_launch(f, in, nin, out, 1, NULL) != FUSEC_OK) die("launch", m);
    return now_ms() - t0;
}

/* Wall time of one `argv` process, in ms. */
static double process_ms(char *const argv[]) {
    pid_t pid;
    double t0 = now_ms();
    if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0) die("spawn", NULL);
    int status;
    waitpid(pid, &status, 0);
    double t = now_ms() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("a fusec process failed", NULL);
    return t;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: cpu_bench FUSEC_BINARY SRC_DIR [ROUNDS]\n");
        return 2;
    }
    const char *fusec = argv[1], *src = argv[2];
    int rounds = argc > 3 ? atoi(argv[3]) : 7;
    if (rounds < 1) rounds = 1;
    char path[4096], gelu_path[4096];
    snprintf(path, sizeof path, "%s/bench/cpu_bench.fuse", src);
    snprintf(gelu_path, sizeof gelu_path, "%s/examples/gelu.fuse", src);

    fusec_options opt;
    fusec_options_init(&opt);
    opt.target = FUSEC_TARGET_CPU;
    fusec_module *m = NULL;
    if (fusec_module_compile_file(path, &opt, &m) != FUSEC_OK) die("compile", m);
    if (fusec_module_build(m) != FUSEC_OK) die("build", m);
    fusec_function *gelu, *softmax, *layernorm;
    if (fusec_module_function(m, "gelu", &gelu) || fusec_module_function(m, "softmax", &softmax) ||
        fusec_module_function(m, "layernorm", &layernorm))
        die("functions", m);

    /* ---- gelu on 2^26 f32 ---- */
    const size_t n = (size_t)1 << 26;
    float *x = random_floats(n, 1), *y = random_floats(n, 2), *ya = random_floats(n, 3);
    fusec_tensor tx = {x, FUSEC_F32, 1, {(int64_t)n}, NULL},
                 ty = {y, FUSEC_F32, 1, {(int64_t)n}, NULL};
    double *tg = calloc((size_t)rounds, sizeof(double)),
           *tc = calloc((size_t)rounds, sizeof(double)),
           *ta = calloc((size_t)rounds, sizeof(double));
    launch_ms(gelu, &tx, 1, &ty, m);
    gelu_anchor(ya, x, (long)n);
    for (int r = 0; r < rounds; r++) {
        tg[r] = launch_ms(gelu, &tx, 1, &ty, m);
        tc[r] = copy_ms(n * sizeof(float));
        double t0 = now_ms();
        gelu_anchor(ya, x, (long)n);
        ta[r] = now_ms() - t0;
    }
    double maxdiff = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)y[i] - (double)ya[i]);
        if (d > maxdiff) maxdiff = d;
    }
    /* medians, and the fastest rounds: on a shared machine the minimum is the steadier */
    double g = median(tg, rounds), c = median(tc, rounds), a = median(ta, rounds);
    printf("gelu 2^26 f32:      fusec %8.2f ms   copy %8.2f ms   anchor %8.2f ms   "
           "fusec/copy %.2fx (target <= 1.3)   anchor/fusec %.2fx (target >= 1.5)   "
           "max |fusec - anchor| %.2g   (min: fusec %.2f copy %.2f anchor %.2f)\n",
           g, c, a, g / c, a / g, maxdiff, tg[0], tc[0], ta[0]);
    free(ya);

    /* ---- softmax and layernorm over [16384, 4096] f32 (the same bytes as gelu) ---- */
    const int64_t R = 16384, C = 4096;
    float *w = random_floats((size_t)C, 4), *b = random_floats((size_t)C, 5);
    fusec_tensor tm = {x, FUSEC_F32, 2, {R, C}, NULL}, tmo = {y, FUSEC_F32, 2, {R, C}, NULL};
    fusec_tensor ln_in[3] = {tm, {w, FUSEC_F32, 1, {C}, NULL}, {b, FUSEC_F32, 1, {C}, NULL}};
    double *ts = calloc((size_t)rounds, sizeof(double)),
           *tl = calloc((size_t)rounds, sizeof(double));
    launch_ms(softmax, &tm, 1, &tmo, m);
    launch_ms(layernorm, ln_in, 3, &tmo, m);
    for (int r = 0; r < rounds; r++) {
        ts[r] = launch_ms(softmax, &tm, 1, &tmo, m);
        tl[r] = launch_ms(layernorm, ln_in, 3, &tmo, m);
        tc[r] = copy_ms(n * sizeof(float));
    }
    double s = median(ts, rounds), l = median(tl, rounds);
    c = median(tc, rounds);
    printf("softmax [16384, 4096] f32:   fusec %8.2f ms   copy %8.2f ms   fusec/copy %.2fx "
           "(target <= 1.5)   (min: fusec %.2f copy %.2f)\n",
           s, c, s / c, ts[0], tc[0]);
    printf("layernorm [16384, 4096] f32: fusec %8.2f ms   copy %8.2f ms   fusec/copy %.2fx "
           "(target <= 1.5)   (min: fusec %.2f)\n",
           l, c, l / c, tl[0]);
    fusec_module_free(m);
    free(x);
    free(y);
    free(w);
    free(b);

    /* ---- compile times of examples/gelu.fuse ---- */
    int creps = rounds < 5 ? 5 : rounds;
    double *tin = calloc((size_t)creps, sizeof(double));
    fusec_options cold;
    fusec_options_init(&cold);
    cold.target = FUSEC_TARGET_CPU;
    cold.no_cache = 1;
    for (int r = 0; r < creps; r++) {
        double t0 = now_ms();
        fusec_module *cm = NULL;
        if (fusec_module_compile_file(gelu_path, &cold, &cm) != FUSEC_OK) die("compile", cm);
        if (fusec_module_build(cm) != FUSEC_OK) die("build", cm);
        tin[r] = now_ms() - t0;
        fusec_module_free(cm);
    }
    char cache_dir[] = "/tmp/fusec-bench-cache-XXXXXX";
    if (!mkdtemp(cache_dir)) die("mkdtemp", NULL);
    char dir_opt[4200];
    snprintf(dir_opt, sizeof dir_opt, "--cache-dir=%s", cache_dir);
    char *cold_argv[] = {(char *)fusec, "--target=cpu", "--no-cache", gelu_path, NULL};
    char *warm_argv[] = {(char *)fusec, "--target=cpu", dir_opt, gelu_path, NULL};
    char *ref_argv[] = {(char *)fusec, "--target=ref", gelu_path, NULL};
    double *tp = calloc((size_t)creps, sizeof(double)), *tw = calloc((size_t)creps, sizeof(double)),
           *tr = calloc((size_t)creps, sizeof(double));
    process_ms(warm_argv); /* fills the cache */
    for (int r = 0; r < creps; r++) {
        tp[r] = process_ms(cold_argv);
        tw[r] = process_ms(warm_argv);
        tr[r] = process_ms(ref_argv);
    }
    printf("compile gelu.fuse:  in process, cold %.2f ms (target <= 50)   whole process: cold "
           "%.2f ms, from the cache %.2f ms (target <= 5), no backend (--target=ref) %.2f ms\n",
           median(tin, creps), median(tp, creps), median(tw, creps), median(tr, creps));
    char rm[4200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", cache_dir);
    if (system(rm) != 0) fprintf(stderr, "cpu_bench: could not remove %s\n", cache_dir);
    free(tg);
    free(tc);
    free(ta);
    free(ts);
    free(tl);
    free(tin);
    free(tp);
    free(tw);
    free(tr);
    return 0;
}
