/* tests/unit/test_cpu_build_threads.c: a CPU module built across threads (driver/cpu/cpu_jit.c,
 * cpu_jit_split.c) runs as the module built whole. Two programs: five row kernels (softmax,
 * layernorm, rmsnorm, logsumexp, and softmax's gradient), which are built in parts, and
 * layernorm alone, whose one kernel is split between its bodies (its row body, short-row body
 * and one-element body apart, the entry last; softmax alone is too small to split at
 * x86-64-v3 and v2, layernorm splits at every level). Each is built with
 * FUSEC_CPU_BUILD_THREADS=1 and =3, each into its own cold cache, and then once more from the
 * second cache (the parts' blob loaded as it was stored), every build in a process of its own.
 * Checked: the threaded build says it made several parts and the whole one none
 * (fusec_module_report, verbose); every function writes the same bits in the three modules,
 * over rows of 64 and of 1000 (short rows have a body of their own), into results poisoned
 * first. Skipped (77) when the build has no CPU backend, and where fusec's own loader does not
 * load (LLVM's JIT takes one object). */
#include "fusec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_util.h"
#include "check.h"
#include "driver/backend.h"

static const char SRC[] = "fn softmax(x: f32[R, C]) -> f32[R, C] {\n"
                          "    let e = exp(x - max(x, axis=1));\n"
                          "    return e / sum(e, axis=1);\n"
                          "}\n"
                          "fn dsoftmax = grad(softmax);\n"
                          "fn layernorm(x: f32[R, C], w: f32[C], b: f32[C]) -> f32[R, C] {\n"
                          "    let mu = mean(x, axis=1);\n"
                          "    let d = x - mu;\n"
                          "    return d * rsqrt(mean(d * d, axis=1) + 1e-5) * w + b;\n"
                          "}\n"
                          "fn rmsnorm(x: f32[R, C], w: f32[C]) -> f32[R, C] {\n"
                          "    return x * rsqrt(mean(x * x, axis=1) + 1e-6) * w;\n"
                          "}\n"
                          "fn logsumexp(x: f32[R, C]) -> f32[R, 1] {\n"
                          "    let m = max(x, axis=1);\n"
                          "    return m + log(sum(exp(x - m), axis=1));\n"
                          "}\n";

#define R 37
static const int64_t COLS[] = {64, 1000};
#define NCOLS 2
#define MAXC  1000

typedef struct fn_case {
    const char *name;
    int nin;      /* inputs: x [R, C], then vectors of C */
    int out_cols; /* 1: a result of [R, 1], else [R, C] */
} fn_case;

static const fn_case FNS[] = {{"softmax", 1, 0},
                              {"dsoftmax", 2, 0},
                              {"layernorm", 3, 0},
                              {"rmsnorm", 2, 0},
                              {"logsumexp", 1, 1}};
#define LAYERNORM 2 /* FNS[LAYERNORM]: the one-kernel program */
#define NFNS      ((int)(sizeof FNS / sizeof FNS[0]))

static float in[3][R * MAXC];
/* results[build][fn][cols], in memory shared with the children that build (a process keeps
 * a module it built in memory, by the same key, whatever the cache directory) */
typedef float results[3][NFNS][NCOLS][R * MAXC];
static results *out;

/* the program of this run: src_len bytes of src, whose functions are FNS[f_lo .. f_hi) */
static const char *src = SRC;
static size_t src_len = sizeof SRC - 1;
static int f_lo = 0, f_hi = NFNS;

static fusec_module *build(const char *threads, const char *cache, int *parts) {
    setenv("FUSEC_CPU_BUILD_THREADS", threads, 1);
    fusec_options o;
    fusec_options_init(&o);
    o.target = FUSEC_TARGET_CPU;
    o.cache_dir = cache;
    o.verbose = 1;
    fusec_module *m = NULL;
    fusec_status st = fusec_module_compile_string("threads.fuse", src, src_len, &o, &m);
    if (st == FUSEC_OK) st = fusec_module_build(m);
    CHECK_MSG(st == FUSEC_OK, "%s", fusec_module_message(m));
    const char *rep = m ? fusec_module_report(m) : NULL;
    const char *at = rep ? strstr(rep, "object code in ") : NULL;
    *parts = at ? atoi(at + strlen("object code in ")) : 1;
    if (rep && strstr(rep, "loaded by LLVM ORC")) *parts = -1;
    return m;
}

static void run_all(fusec_module *m, int b) {
    for (int f = f_lo; f < f_hi; f++)
        for (int c = 0; c < NCOLS; c++) {
            int64_t C = COLS[c];
            int64_t mat[2] = {R, C}, vec[1] = {C}, col[2] = {R, 1};
            fusec_tensor x[3], y;
            /* dsoftmax: (x, dy), both [R, C]; the others: x, then vectors */
            x[0] = api_tensor(in[0], FUSEC_F32, 2, mat, NULL);
            for (int i = 1; i < FNS[f].nin; i++)
                x[i] = !strcmp(FNS[f].name, "dsoftmax")
                           ? api_tensor(in[i], FUSEC_F32, 2, mat, NULL)
                           : api_tensor(in[i], FUSEC_F32, 1, vec, NULL);
            memset((*out)[b][f][c], 0xa5, sizeof(*out)[b][f][c]);
            y = api_tensor((*out)[b][f][c], FUSEC_F32, 2, FNS[f].out_cols ? col : mat, NULL);
            fusec_function *fn = api_fn(m, FNS[f].name);
            fusec_status st =
                fn ? fusec_launch(fn, x, FNS[f].nin, &y, 1, NULL) : FUSEC_ERR_INTERNAL;
            CHECK_MSG(st == FUSEC_OK, "%s C=%lld: %s", FNS[f].name, (long long)C,
                      fusec_module_message(m));
        }
}

/* The three builds of the program (src, FNS[f_lo .. f_hi)) and the checks. 77 where LLVM's JIT
 * loads. */
static int check_program(const char *whole, const char *split) {
    int parts[3];
    const char *threads[3] = {"1", "3", "3"};
    const char *caches[3] = {whole, split, split};
    for (int b = 0; b < 3; b++) {
        int fd[2];
        if (pipe(fd) != 0) return 1;
        pid_t pid = fork();
        if (pid == 0) { /* a process of its own for each build: the exit status is its checks' */
            close(fd[0]);
            int n = 0;
            fusec_module *m = build(threads[b], caches[b], &n);
            if (m && n > 0) run_all(m, b);
            fusec_module_free(m);
            if (write(fd[1], &n, sizeof n) != (ssize_t)sizeof n) _exit(2);
            _exit(check_exit("test_cpu_build_threads (a build)"));
        }
        close(fd[1]);
        int status = 0;
        parts[b] = 0;
        if (pid < 0 || read(fd[0], &parts[b], sizeof parts[b]) != (ssize_t)sizeof parts[b])
            parts[b] = 0;
        close(fd[0]);
        if (pid > 0) waitpid(pid, &status, 0);
        CHECK_MSG(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the build with %s threads failed", threads[b]);
        if (parts[b] < 0) return 77;
    }
    printf("%d function(s): parts whole %d, threaded %d, from the cache %d\n", f_hi - f_lo,
           parts[0], parts[1], parts[2]);
    CHECK_MSG(parts[0] == 1, "FUSEC_CPU_BUILD_THREADS=1 built %d parts", parts[0]);
    CHECK_MSG(parts[1] >= 2, "FUSEC_CPU_BUILD_THREADS=3 built %d parts", parts[1]);
    CHECK_MSG(parts[2] == parts[1], "the cached blob holds %d parts, the build made %d", parts[2],
              parts[1]);
    for (int b = 1; b < 3; b++)
        for (int f = f_lo; f < f_hi; f++)
            for (int c = 0; c < NCOLS; c++) {
                size_t n = (size_t)R * (size_t)(FNS[f].out_cols ? 1 : COLS[c]);
                CHECK_MSG(memcmp((*out)[0][f][c], (*out)[b][f][c], n * sizeof(float)) == 0,
                          "%s C=%lld: the %s module's bits differ from the whole build's",
                          FNS[f].name, (long long)COLS[c], b == 1 ? "threaded" : "cached");
                int poisoned = 0;
                for (size_t i = 0; i < n; i++) {
                    uint32_t bits;
                    memcpy(&bits, &(*out)[b][f][c][i], 4);
                    poisoned += bits == 0xa5a5a5a5u;
                }
                CHECK_MSG(!poisoned, "%s C=%lld: %d results left unwritten", FNS[f].name,
                          (long long)COLS[c], poisoned);
            }
    return 0;
}

int main(void) {
    char why[512];
    if (!rt_backend_cpu.available(why, sizeof why)) {
        printf("the cpu backend is not available: %s; skipping\n", why);
        return 77;
    }
    char dir[] = "/tmp/fusec-threads-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char whole[64], split[64];
    snprintf(whole, sizeof whole, "%s/whole", dir);
    snprintf(split, sizeof split, "%s/split", dir);
    uint32_t s = 12345;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < R * MAXC; i++) {
            s = s * 1664525u + 1013904223u;
            in[k][i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 8.0f + (k ? 0.0f : 0.001f);
        }
    out = mmap(NULL, sizeof *out, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (out == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    int rc = check_program(whole, split);
    src = strstr(SRC, "fn layernorm"); /* layernorm alone: from its line to rmsnorm's */
    src_len = (size_t)(strstr(SRC, "fn rmsnorm") - src);
    f_lo = LAYERNORM;
    f_hi = LAYERNORM + 1;
    if (rc == 0) rc = check_program(whole, split);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    if (rc == 77) {
        printf("this host loads CPU code with LLVM's JIT: skipping\n");
        return 77;
    }
    return rc ? rc : check_exit("test_cpu_build_threads");
}
