/* tests/unit/test_cuda_nvrtc.c: the generated CUDA through NVRTC (no GPU needed). Every
 * example and test program builds to a cubin for sm_90 (fused; the examples --no-fuse too), the
 * examples also for sm_80 and with fast math; and the PTX holds the memory traffic the design
 * promises: gelu's vector loop moves each element with one 16-byte load and one 16-byte store, its
 * scalar tail with one load and one store; softmax and layernorm, whose sums follow the plan's
 * order, read the row with 16-byte vectors once a sweep and write it once.
 * Exits 77 (skipped) when NVRTC is not installed. FUSEC_TEST_SHARD=i/n builds every n-th
 * program (ctest splits the test so); FUSEC_TEST_QUICK=1 the examples only, fused, for sm_90. */
#include "codegen/cuda/cuda.h"
#include "frontend/frontend.h"
#include "passes/passes.h"
#include "driver/cuda/nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fused_util.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The generated source of a file (arena a), NULL on failure. */
static const char *generate(ir_arena *a, const char *path, int no_fuse) {
    int n = 0;
    ir_func **fs = fused_funcs(a, path, no_fuse, &n);
    if (!fs) return NULL;
    cuda_module *mod = NULL;
    char err[512];
    if (cuda_generate(a, fs, n, &mod, err, sizeof err) != 0) {
        CHECK_MSG(0, "%s: %s", path, err);
        return NULL;
    }
    return mod->source;
}

static double slowest;
static char slowest_what[256];

/* Builds src; 1 when NVRTC accepts it (a cubin is ELF; PTX has entries). */
static int build(const char *what, const char *src, const char *arch, int fast, int ptx,
                 char **out) {
    void *img = NULL;
    size_t len = 0;
    char *log = NULL;
    double t0 = now_ms();
    rt_nvrtc_status st = rt_nvrtc_compile(src, "fusec.cu", arch, fast, ptx, &img, &len, &log);
    double ms = now_ms() - t0;
    if (ms > slowest) {
        slowest = ms;
        snprintf(slowest_what, sizeof slowest_what, "%s", what);
    }
    CHECK_MSG(st == RT_NVRTC_OK, "%s for %s%s: %s\n%s", what, arch, fast ? " (fast math)" : "",
              rt_nvrtc_status_string(st), log ? log : "");
    int ok = st == RT_NVRTC_OK &&
             (ptx ? strstr(img, ".entry") != NULL : len > 4 && memcmp(img, "\177ELF", 4) == 0);
    CHECK_MSG(ok || st != RT_NVRTC_OK, "%s: not a %s", what, ptx ? "PTX" : "cubin");
    free(log);
    if (out && ok)
        *out = img;
    else
        free(img);
    return ok;
}

static void build_program(const char *path, int example, void *ctx) {
    (void)ctx;
    /* FUSEC_TEST_SHARD: every n-th program; FUSEC_TEST_QUICK (the sanitizer pass, which is
     * for fusec's own memory errors, not NVRTC's): the examples only, every test program
     * having been built by the plain pass */
    static int k;
    int index = k++;
    if (!check_in_shard(index) || (!example && getenv("FUSEC_TEST_QUICK"))) return;
    ir_arena a;
    ir_arena_init(&a);
    const char *fused = generate(&a, path, 0);
    /* --no-fuse for the examples: its kernels are one operation each, the same few patterns
     * in every program (the emulated random programs and the GPU suite run --no-fuse too) */
    const char *unfused = example ? generate(&a, path, 1) : NULL;
    /* (the sanitizer pass: the examples fused for sm_90 once: fusec's code around NVRTC is
     * what it looks at) */
    int quick = getenv("FUSEC_TEST_QUICK") != NULL;
    if (quick) unfused = NULL;
    /* sm_90 for every program; sm_80 and fast math for the examples (the generated
     * source does not change with either; NVRTC's code for it does) */
    if (fused) build(path, fused, "sm_90", 0, 0, NULL);
    if (unfused) build(path, unfused, "sm_90", 0, 0, NULL);
    if (fused && example && !quick) {
        build(path, fused, "sm_80", 0, 0, NULL);
        build(path, fused, "sm_90", 1, 0, NULL);
        if (unfused) build(path, unfused, "sm_80", 1, 0, NULL);
    }
    ir_arena_free(&a);
}

static void test_all_programs(void) {
    for_each_program(build_program, NULL);
}

/* The text of `.entry name(` up to the next entry (or the end). */
static char *entry_text(const char *ptx, const char *name) {
    char head[256];
    snprintf(head, sizeof head, ".entry %s(", name);
    const char *p = strstr(ptx, head);
    if (!p) return NULL;
    const char *q = strstr(p + 1, ".entry ");
    size_t n = q ? (size_t)(q - p) : strlen(p);
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

/* Lines of s holding `what`, and not `unless` (NULL: no exception). */
static int count_lines(const char *s, const char *what, const char *unless) {
    int n = 0;
    for (const char *p = s; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        if (strstr(line, what) && (!unless || !strstr(line, unless))) n++;
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

static void test_golden_ptx(void) {
    ir_arena a;
    ir_arena_init(&a);
    char *ptx = NULL;
    const char *src = generate(&a, "examples/gelu.fuse", 0);
    if (src && build("gelu", src, "sm_90", 0, 1, &ptx)) {
        char *e = entry_text(ptx, "fusec_gelu_k0");
        CHECK_MSG(e != NULL, "no entry fusec_gelu_k0 in:\n%s", ptx);
        if (e) {
            /* the vector loop: one 16-byte load and one 16-byte store for 4 elements */
            CHECK_MSG(count_lines(e, "ld.global.nc.v4.b32", NULL) == 1, "%s", e);
            CHECK_MSG(count_lines(e, "st.global.v4.b32", NULL) == 1, "%s", e);
            /* the scalar tail: one load and one store */
            CHECK_MSG(count_lines(e, "ld.global", ".v4.") == 1, "%s", e);
            CHECK_MSG(count_lines(e, "st.global", ".v4.") == 1, "%s", e);
        }
        free(e);
        free(ptx);
        ptx = NULL;
    }
    if (src && build("gelu (fast math)", src, "sm_90", 1, 1, &ptx)) {
        char *e = entry_text(ptx, "fusec_gelu_k0");
        CHECK(e && strstr(e, "tanh.approx.f32"));
        free(e);
        free(ptx);
        ptx = NULL;
    }

    /* softmax and layernorm sum in the plan's order (docs/plan.md): one kernel that sweeps
     * the row once a reduction level and once more for the results, each sweep a 16-byte
     * vector load of every row buffer where the row allows (and the element-by-element path
     * beside it), the result one 16-byte vector store */
    src = generate(&a, "examples/softmax.fuse", 0);
    if (src && build("softmax", src, "sm_90", 0, 1, &ptx)) {
        char *e = entry_text(ptx, "fusec_softmax_k0");
        CHECK_MSG(e != NULL, "no softmax entry");
        if (e) {
            int ldv = count_lines(e, "ld.global.nc.v4.b32", NULL);
            int stv = count_lines(e, "st.global.v4.b32", NULL);
            CHECK_MSG(ldv >= 3 && ldv <= 4 && stv == 1,
                      "softmax: %d vector loads, %d vector stores", ldv, stv);
            /* the lanes of a block by halves, the groups and the warps: xor shuffles */
            CHECK_MSG(count_lines(e, "shfl.sync.bfly", NULL) >= 2, "%s", e);
        }
        free(e);
        free(ptx);
        ptx = NULL;
    }

    src = generate(&a, "examples/layernorm.fuse", 0);
    if (src && build("layernorm", src, "sm_90", 0, 1, &ptx)) {
        char *e = entry_text(ptx, "fusec_layernorm_k0");
        if (e) {
            /* the row (vectors of 8 bf16) in three sweeps, w and b in the last, the result once */
            int ldv = count_lines(e, "ld.global.nc.v4.b32", NULL);
            int stv = count_lines(e, "st.global.v4.b32", NULL);
            CHECK_MSG(ldv >= 5 && ldv <= 6 && stv == 1,
                      "layernorm: %d vector loads, %d vector stores", ldv, stv);
        }
        CHECK(e != NULL);
        free(e);
        free(ptx);
    }
    ir_arena_free(&a);
}

int main(void) {
    char err[512];
    if (rt_nvrtc_load(err, sizeof err) != RT_NVRTC_OK) {
        printf("test_cuda_nvrtc: skipped: %s\n", err);
        return 77;
    }
    test_all_programs();
    if (check_in_shard(0)) test_golden_ptx();
    printf("test_cuda_nvrtc: slowest build %.0f ms (%s)\n", slowest, slowest_what);
    return check_exit("test_cuda_nvrtc");
}
