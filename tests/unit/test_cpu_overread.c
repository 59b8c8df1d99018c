/* tests/unit/test_cpu_overread.c: row kernels whose rows end in a partial round of lanes read
 * that round whole, past the row's end, when the reads stay in the page of the row's last
 * element (codegen/cpu/llvm.c, rows_overread), and mask it otherwise. Each case runs twice:
 * every input placed so that its last byte ends a page followed by an inaccessible one (a read
 * past it faults: the code must mask), and every input in the middle of its memory (the code
 * reads whole); the two results must be equal bit for bit, and equal to the reference's within
 * the SPEC's bounds. The result is placed the same way, and nothing may be written past it.
 * Row lengths below one and two rounds, row counts that fill groups of rows (of 4 in the row
 * kernels, of 16 where short rows run as columns: gen_narrow) and leave some over, f32, f64 and
 * bf16, two inputs read along the row, a weight read along it, a sum and a product in one sweep
 * (the identities +0 and 1), a softmax (rows as columns up to 31 elements);
 * code for the host and for x86-64-v3 and x86-64-v2 (FUSEC_TEST_SHARD=i/n: every n-th of these).
 * Skipped (77) without a CPU backend. */
#define _DEFAULT_SOURCE
#include "fusec.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api_util.h"
#include "check.h"
#include "driver/backend.h"

static const char *SRC =
    "fn ln(x: f32[R, C], w: f32[C], b: f32[C]) -> f32[R, C] {\n"
    "    let mu = mean(x, axis=1);\n"
    "    let d = x - mu;\n"
    "    return d * rsqrt(mean(d * d, axis=1) + 1e-5) * w + b;\n"
    "}\n"
    "fn dot(x: f32[R, C], y: f32[R, C]) -> f32[R, C] { return x / sum(x * y, axis=1); }\n"
    "fn sp(x: f32[R, C], y: f32[R, C]) -> f32[R, C] {\n"
    "    return x / sum(y, axis=1) + prod(x * y, axis=1);\n"
    "}\n"
    "fn sm(x: f32[R, C], y: f32[R, C]) -> f32[R, C] {\n"
    "    let e = exp(x - max(x, axis=1));\n"
    "    return e / sum(e * y, axis=1);\n"
    "}\n"
    "fn lnd(x: f64[R, C], w: f64[C], b: f64[C]) -> f64[R, C] {\n"
    "    let d = x - mean(x, axis=1);\n"
    "    return d / sqrt(mean(d * d, axis=1) + 1e-9) * w + b;\n"
    "}\n"
    "fn lnb(x: bf16[R, C], w: bf16[C], b: bf16[C]) -> bf16[R, C] {\n"
    "    let mu = mean(x, axis=1);\n"
    "    let d = x - mu;\n"
    "    return d * rsqrt(mean(d * d, axis=1) + 1e-5) * w + b;\n"
    "}\n";

static uint32_t rng = 4242;
static size_t page;

/* A region whose last `bytes` end a page followed by an inaccessible page (at_end), or the
 * first `bytes` of a region with a page to spare after them. */
typedef struct region {
    unsigned char *base;
    size_t len;
    void *data;
} region;

static region place(size_t bytes, int at_end) {
    region r;
    size_t used = (bytes + page - 1) / page * page;
    r.len = used + page;
    r.base = mmap(NULL, r.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(r.base != MAP_FAILED);
    if (r.base == MAP_FAILED) {
        r.base = NULL;
        r.data = NULL;
        return r;
    }
    if (at_end) CHECK(mprotect(r.base + used, page, PROT_NONE) == 0);
    r.data = at_end ? r.base + used - bytes : r.base;
    return r;
}

static void unplace(region *r) {
    if (r->base) munmap(r->base, r->len);
}

/* fn over [rows, cols] (its inputs: x, then y along the row, or the [cols] weights w and b) on
 * the CPU, inputs at the ends of pages and in the middle of their memory, and the reference. */
static void run_case(fusec_module *mc, fusec_module *mr, const char *fn, int64_t rows,
                     int64_t cols) {
    fusec_dtype dt = strcmp(fn, "lnb") == 0   ? FUSEC_BF16
                     : strcmp(fn, "lnd") == 0 ? FUSEC_F64
                                              : FUSEC_F32;
    size_t es = fusec_dtype_size(dt), n = (size_t)(rows * cols);
    int two = !strcmp(fn, "dot") || !strcmp(fn, "sp") || !strcmp(fn, "sm"), nin = two ? 2 : 3;
    size_t len[3] = {n * es, two ? n * es : (size_t)cols * es, (size_t)cols * es};
    float *vals[3];
    for (int i = 0; i < nin; i++) {
        size_t cnt = len[i] / es;
        vals[i] = malloc(cnt * sizeof(float));
        for (size_t k = 0; k < cnt; k++)
            /* x of either sign for ln; dot's and the weights' positive (no cancellation in
             * the sum that divides) */
            vals[i][k] = i == 0 && !two ? api_frand(&rng, 3.0f) : 0.75f + api_frand(&rng, 0.25f);
    }
    unsigned char *out[2];
    fusec_tensor res;
    for (int at_end = 0; at_end < 2; at_end++) {
        region reg[3];
        fusec_tensor in[3];
        for (int i = 0; i < nin; i++) {
            reg[i] = place(len[i], at_end);
            if (reg[i].data)
                CHECK(fusec_convert(FUSEC_F32, vals[i], dt, reg[i].data, len[i] / es) == FUSEC_OK);
            int64_t shape[2] = {rows, cols};
            int vec = i > 0 && !two;
            in[i] = api_tensor(reg[i].data, dt, vec ? 1 : 2, vec ? shape + 1 : shape, NULL);
        }
        fusec_function *f = api_fn(mc, fn);
        CHECK(fusec_function_result_shapes(f, in, nin, &res, 1) == FUSEC_OK);
        /* the result placed alike: a write past its end faults, or shows in the page after */
        region ro = place(n * es, at_end);
        if (ro.base) memset(ro.base, 0xa5, at_end ? ro.len - page : ro.len);
        res.data = ro.data;
        fusec_status st = fusec_launch(f, in, nin, &res, 1, NULL);
        CHECK_MSG(st == FUSEC_OK, "%s [%lld, %lld]: %s", fn, (long long)rows, (long long)cols,
                  fusec_status_string(st));
        int past = 0;
        for (size_t k = n * es; !at_end && ro.base && k < ro.len; k++)
            past += ro.base[k] != 0xa5;
        CHECK_MSG(past == 0, "%s [%lld, %lld]: %d bytes written past the result", fn,
                  (long long)rows, (long long)cols, past);
        out[at_end] = malloc(n * es);
        if (ro.data) memcpy(out[at_end], ro.data, n * es);
        unplace(&ro);
        if (at_end) {
            fusec_tensor want = res;
            want.data = malloc(n * es);
            st = fusec_launch(api_fn(mr, fn), in, nin, &want, 1, NULL);
            CHECK_MSG(st == FUSEC_OK, "%s on the reference", fn);
            int bad = 0;
            for (size_t k = 0; k < n && bad < 3; k++) {
                double g, w;
                CHECK(fusec_convert(dt, out[1] + k * es, FUSEC_F64, &g, 1) == FUSEC_OK);
                CHECK(fusec_convert(dt, (char *)want.data + k * es, FUSEC_F64, &w, 1) == FUSEC_OK);
                /* outputs near 1 that cancel (d * rstd * w + b): a bound on the absolute
                 * error scaled by 1 + |w|; the placements' equal bits are the strict check */
                double tol = dt == FUSEC_BF16 ? 1.0 / 64 : dt == FUSEC_F64 ? 1e-12 : 1e-4;
                if (!(fabs(g - w) <= tol * (1 + fabs(w)))) {
                    bad++;
                    CHECK_MSG(0, "%s [%lld, %lld] [%zu]: cpu %.9g, reference %.9g", fn,
                              (long long)rows, (long long)cols, k, g, w);
                }
            }
            free(want.data);
        }
        for (int i = 0; i < nin; i++)
            unplace(&reg[i]);
    }
    CHECK_MSG(memcmp(out[0], out[1], n * es) == 0,
              "%s [%lld, %lld]: inputs at a page's end give other bits than in mid-page", fn,
              (long long)rows, (long long)cols);
    for (int i = 0; i < 2; i++)
        free(out[i]);
    for (int i = 0; i < nin; i++)
        free(vals[i]);
}

/* Function `fn` of SRC alone, its own module (malloc'd): a module's narrow bodies are within a
 * budget (codegen/cpu/llvm.c, LG_NARROW_MODULE_BUDGET) that SRC's six row kernels exceed, and
 * each alone runs its short rows as columns. */
static char *fn_source(const char *fn) {
    char head[64];
    snprintf(head, sizeof head, "fn %s(", fn);
    const char *from = strstr(SRC, head), *to = from ? strstr(from + 1, "\nfn ") : NULL;
    size_t n = from ? (to ? (size_t)(to - from) + 1 : strlen(from)) : 0;
    char *s = malloc(n + 1);
    if (n) memcpy(s, from, n);
    s[n] = 0;
    return s;
}

int main(void) {
    char why[512];
    if (!rt_backend_cpu.available(why, sizeof why)) {
        printf("the cpu backend is not available: %s; skipping\n", why);
        return 77;
    }
    page = (size_t)sysconf(_SC_PAGESIZE);
    fusec_module *mr = api_compile(SRC, FUSEC_TARGET_REF, 0, NULL, 1);
    const char *cpus[] = {NULL, "x86-64-v3", "x86-64-v2"};
    const int64_t cols[] = {1, 2, 3, 7, 10, 15, 16, 17, 31, 33, 47, 63};
    const int64_t rows[] = {1, 4, 9, 32, 37};
    const char *fns[] = {"ln", "dot", "sp", "sm", "lnd", "lnb"};
    for (int c = 0; c < 3 && !failures; c++) {
        if (!check_in_shard(c)) continue; /* FUSEC_TEST_SHARD: the CPUs in turn */
        for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
            char *src = fn_source(fns[f]);
            fusec_module *mc = api_compile_cpu(src, cpus[c]);
            free(src);
            fusec_tensor x = {NULL, FUSEC_F32, 2, {0, 4}, NULL}, y = x,
                         v = {NULL, FUSEC_F32, 1, {4}, NULL};
            fusec_tensor ins[3] = {x, v, v};
            if (f == 0 &&
                fusec_launch(api_fn(mc, "ln"), ins, 3, &y, 1, NULL) == FUSEC_ERR_UNSUPPORTED) {
                printf("this host cannot run code for %s: skipped\n", cpus[c]);
                fusec_module_free(mc);
                break;
            }
            if (f == 0) printf("code for %s\n", cpus[c] ? cpus[c] : "the host");
            for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
                for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
                    run_case(mc, mr, fns[f], rows[r], cols[i]);
            fusec_module_free(mc);
        }
    }
    fusec_module_free(mr);
    return check_exit("test_cpu_overread");
}
