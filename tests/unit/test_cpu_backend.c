/* tests/unit/test_cpu_backend.c: the CPU backend through fusec.h, against the reference
 * target on the same inputs: results written into poisoned buffers, both object loaders
 * (LLVM's ORC JIT and fusec's own, FUSEC_CPU_LOADER), run-to-run bit identity, concurrent
 * launches from several threads, integer division by zero, max over an empty axis, rounding to
 * bf16 at its edges (ties, overflow, every kind of NaN); and the
 * pieces under it: the thread pool's parts (also from several threads at once, with more
 * threads than cores), the ELF loader's refusals, the copy roofline.
 * Skipped (77) when the build has no CPU backend. */
#include "fusec.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"
#include "driver/backend.h"
#include "runtime/cpu/cpu_elf.h"
#include "runtime/cpu/threadpool.h"

static const char *SRC =
    "fn gelu(x: f32[N]) -> f32[N] {\n"
    "    let k = 0.7978845608028654;\n"
    "    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));\n"
    "}\n"
    "fn softmax(x: f32[R, C]) -> f32[R, C] {\n"
    "    let e = exp(x - max(x, axis=1));\n"
    "    return e / sum(e, axis=1);\n"
    "}\n"
    "fn stats(x: f32[N]) -> (f32[], f32[]) { return sum(x), max(x); }\n"
    "fn cols(x: f32[R, C]) -> f32[C] { return mean(x, axis=0); }\n"
    "fn divide(a: i32[N], b: i32[N]) -> (i32[N], i32[N]) { return a / b, a % b; }\n"
    "fn to_bf16(x: f32[N], y: f64[N]) -> (bf16[N], bf16[N]) { return bf16(x), bf16(y); }\n"
    "fn halves(x: f16[N], y: bf16[N]) -> (bf16[N], f16[]) {\n"
    "    return bf16(y * f32(x) + 1.0), max(x);\n"
    "}\n";

static fusec_module *compile(fusec_target t) {
    return api_compile(SRC, t, 0, NULL, 0);
}

static fusec_function *fn(fusec_module *m, const char *name) {
    return api_fn(m, name);
}

static uint32_t rng = 12345;
static float frand(void) {
    return api_frand(&rng, 4.0f);
}

/* Launches f on CPU and reference with the same inputs; results compared to rel/abs. */
static void compare(fusec_function *fc, fusec_function *fr, const fusec_tensor *in, int nin,
                    int nout, double rel, double abs_) {
    fusec_tensor oc[4], orf[4];
    CHECK(fusec_function_result_shapes(fc, in, nin, oc, nout) == FUSEC_OK);
    for (int i = 0; i < nout; i++) {
        orf[i] = oc[i];
        size_t n = 1;
        for (int d = 0; d < oc[i].rank; d++)
            n *= (size_t)oc[i].shape[d];
        size_t bytes = n * fusec_dtype_size(oc[i].dtype) + 1;
        oc[i].data = malloc(bytes);
        orf[i].data = malloc(bytes);
        memset(oc[i].data, 0xa5, bytes); /* poison: every element must be written */
        memset(orf[i].data, 0x5a, bytes);
    }
    fusec_status s1 = fusec_launch(fc, in, nin, oc, nout, NULL);
    fusec_status s2 = fusec_launch(fr, in, nin, orf, nout, NULL);
    CHECK_MSG(s1 == FUSEC_OK && s2 == FUSEC_OK, "%s / %s", fusec_function_name(fc),
              fusec_status_string(s1));
    for (int i = 0; i < nout && s1 == FUSEC_OK && s2 == FUSEC_OK; i++) {
        size_t n = 1;
        for (int d = 0; d < oc[i].rank; d++)
            n *= (size_t)oc[i].shape[d];
        int bad = 0;
        for (size_t k = 0; k < n && bad < 3; k++) {
            double g, w;
            switch (oc[i].dtype) {
            case FUSEC_F32:
                g = ((float *)oc[i].data)[k];
                w = ((float *)orf[i].data)[k];
                break;
            case FUSEC_I32:
                g = ((int32_t *)oc[i].data)[k];
                w = ((int32_t *)orf[i].data)[k];
                break;
            default: {
                /* f16 / bf16: converted through the public API */
                float a, b;
                CHECK(fusec_convert(oc[i].dtype, (char *)oc[i].data + 2 * k, FUSEC_F32, &a, 1) ==
                      FUSEC_OK);
                CHECK(fusec_convert(orf[i].dtype, (char *)orf[i].data + 2 * k, FUSEC_F32, &b, 1) ==
                      FUSEC_OK);
                g = a;
                w = b;
            }
            }
            int ok = (isnan(g) && isnan(w)) || fabs(g - w) <= rel * fabs(w) + abs_;
            if (!ok) {
                bad++;
                CHECK_MSG(ok, "%s result %d [%zu]: cpu %.9g, ref %.9g", fusec_function_name(fc), i,
                          k, g, w);
            }
        }
    }
    for (int i = 0; i < nout; i++) {
        free(oc[i].data);
        free(orf[i].data);
    }
}

static void test_against_reference(fusec_module *mc, fusec_module *mr) {
    for (int64_t n = 1; n <= 100003; n = n * 7 + 3) {
        float *x = malloc((size_t)n * sizeof(float));
        for (int64_t i = 0; i < n; i++)
            x[i] = frand();
        fusec_tensor t = {x, FUSEC_F32, 1, {n}, NULL};
        compare(fn(mc, "gelu"), fn(mr, "gelu"), &t, 1, 1, 1e-5, 1e-6);
        /* sum: 1e-5 * sum(|x|) <= 4e-5 n; max exact */
        compare(fn(mc, "stats"), fn(mr, "stats"), &t, 1, 2, 1e-5, 4e-5 * (double)n);
        free(x);
    }
    int64_t shapes[][2] = {{1, 1}, {3, 7}, {5, 1000}, {1, 4099}, {130, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t r = shapes[s][0], c = shapes[s][1];
        float *x = malloc((size_t)(r * c) * sizeof(float));
        for (int64_t i = 0; i < r * c; i++)
            x[i] = frand();
        fusec_tensor t = {x, FUSEC_F32, 2, {r, c}, NULL};
        compare(fn(mc, "softmax"), fn(mr, "softmax"), &t, 1, 1, 2e-5, 1e-6);
        compare(fn(mc, "cols"), fn(mr, "cols"), &t, 1, 1, 1e-5, 4e-5);
        free(x);
    }
    /* integers: division and remainder by zero and INT_MIN / -1 never trap */
    int32_t a[9] = {7, -7, 7, INT32_MIN, INT32_MIN, 5, 0, -3, 100};
    int32_t b[9] = {0, 2, -1, -1, 0, 3, 0, 0, -7};
    fusec_tensor ab[2] = {{a, FUSEC_I32, 1, {9}, NULL}, {b, FUSEC_I32, 1, {9}, NULL}};
    compare(fn(mc, "divide"), fn(mr, "divide"), ab, 2, 2, 0, 0);
    /* 16-bit floats: one unit in the last place of bf16 */
    uint16_t h[37], bf[37];
    for (int i = 0; i < 37; i++) {
        float v = frand(), w = frand();
        fusec_convert(FUSEC_F32, &v, FUSEC_F16, &h[i], 1);
        fusec_convert(FUSEC_F32, &w, FUSEC_BF16, &bf[i], 1);
    }
    fusec_tensor hb[2] = {{h, FUSEC_F16, 1, {37}, NULL}, {bf, FUSEC_BF16, 1, {37}, NULL}};
    compare(fn(mc, "halves"), fn(mr, "halves"), hb, 2, 2, 1.0 / 128, 1e-6);
}

/* Rounding to bf16 at its edges, from f32 and from f64: ties to even, overflow to infinity,
 * subnormals, and NaNs of every payload and sign (each must stay a NaN: a rounding add on the
 * bits carries into the exponent or the sign for some of them). Finite and infinite results
 * must be the reference's bits. */
static void test_bf16_edges(fusec_module *mc, fusec_module *mr) {
    static const uint32_t bits[] = {
        0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffffffffu, 0x7fff8000u,
        0xffff7fffu, 0x7f807fffu, 0x7fbfffffu, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0xff7fffffu,
        0x7f7f7fffu, 0x7f7f8000u, 0x3f808000u, 0x3f818000u, 0x3f807fffu, 0xbf808001u, 0x00000001u,
        0x80008000u, 0x00018000u, 0x00000000u, 0x80000000u, 0x3f800000u, 0x4049fdb0u};
    enum { N = sizeof bits / sizeof bits[0] };
    float x[N];
    double y[N];
    uint16_t got[2][N], want[2][N];
    for (int i = 0; i < N; i++) {
        memcpy(&x[i], &bits[i], 4);
        y[i] = (double)x[i] * (1.0 + 0x1p-30); /* just past x: ties break upwards */
    }
    fusec_tensor in[2] = {{x, FUSEC_F32, 1, {N}, NULL}, {y, FUSEC_F64, 1, {N}, NULL}};
    for (int r = 0; r < 2; r++) {
        fusec_tensor out[2] = {{got[0], FUSEC_BF16, 1, {N}, NULL},
                               {got[1], FUSEC_BF16, 1, {N}, NULL}};
        if (r) {
            out[0].data = want[0];
            out[1].data = want[1];
        }
        memset(out[0].data, 0xa5, sizeof got[0]);
        memset(out[1].data, 0xa5, sizeof got[1]);
        fusec_status st = fusec_launch(fn(r ? mr : mc, "to_bf16"), in, 2, out, 2, NULL);
        CHECK_MSG(st == FUSEC_OK, "%s", fusec_status_string(st));
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < N; i++) {
            int gn = (got[k][i] & 0x7f80) == 0x7f80 && (got[k][i] & 0x7f) != 0;
            int wn = (want[k][i] & 0x7f80) == 0x7f80 && (want[k][i] & 0x7f) != 0;
            CHECK_MSG(gn == wn && (gn || got[k][i] == want[k][i]),
                      "bf16(%s 0x%08x): cpu 0x%04x, ref 0x%04x", k ? "f64 past" : "f32",
                      (unsigned)bits[i], got[k][i], want[k][i]);
        }
}

/* Two launches of a big softmax give the same bytes. */
static void test_bit_identical(fusec_module *mc) {
    int64_t r = 64, c = 10007;
    size_t n = (size_t)(r * c);
    float *x = malloc(n * sizeof(float)), *y1 = malloc(n * sizeof(float)),
          *y2 = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        x[i] = frand();
    fusec_tensor in = {x, FUSEC_F32, 2, {r, c}, NULL}, o1 = {y1, FUSEC_F32, 2, {r, c}, NULL},
                 o2 = {y2, FUSEC_F32, 2, {r, c}, NULL};
    CHECK(fusec_launch(fn(mc, "softmax"), &in, 1, &o1, 1, NULL) == FUSEC_OK);
    CHECK(fusec_launch(fn(mc, "softmax"), &in, 1, &o2, 1, NULL) == FUSEC_OK);
    CHECK(memcmp(y1, y2, n * sizeof(float)) == 0);
    float s1 = 0, s2 = 1, m1 = 0, m2 = 1;
    fusec_tensor in1 = {x, FUSEC_F32, 1, {(int64_t)n}, NULL};
    fusec_tensor st1[2] = {{&s1, FUSEC_F32, 0, {0}, NULL}, {&m1, FUSEC_F32, 0, {0}, NULL}};
    fusec_tensor st2[2] = {{&s2, FUSEC_F32, 0, {0}, NULL}, {&m2, FUSEC_F32, 0, {0}, NULL}};
    CHECK(fusec_launch(fn(mc, "stats"), &in1, 1, st1, 2, NULL) == FUSEC_OK);
    CHECK(fusec_launch(fn(mc, "stats"), &in1, 1, st2, 2, NULL) == FUSEC_OK);
    CHECK(memcmp(&s1, &s2, sizeof s1) == 0 && memcmp(&m1, &m2, sizeof m1) == 0);
    free(x);
    free(y1);
    free(y2);
}

typedef struct thread_arg {
    fusec_function *f;
    float *x, *y;
    int64_t n;
    int ok;
} thread_arg;

static void *launcher(void *p) {
    thread_arg *a = p;
    fusec_tensor in = {a->x, FUSEC_F32, 1, {a->n}, NULL}, out = {a->y, FUSEC_F32, 1, {a->n}, NULL};
    a->ok = 1;
    for (int i = 0; i < 20; i++)
        a->ok &= fusec_launch(a->f, &in, 1, &out, 1, NULL) == FUSEC_OK;
    return NULL;
}

/* Launches from several threads at once (the pool takes turns) all complete and agree. */
static void test_threads(fusec_module *mc) {
    enum { T = 4 };
    int64_t n = 200003;
    float *x = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        x[i] = frand();
    pthread_t th[T];
    thread_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (thread_arg){fn(mc, "gelu"), x, malloc((size_t)n * sizeof(float)), n, 0};
        pthread_create(&th[i], NULL, launcher, &args[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        CHECK(args[i].ok);
        if (i) CHECK(memcmp(args[0].y, args[i].y, (size_t)n * sizeof(float)) == 0);
    }
    for (int i = 0; i < T; i++)
        free(args[i].y);
    free(x);
}

static void test_empty_max(fusec_module *mc) {
    float dummy = 0, s = 1, m = 1;
    fusec_tensor in = {&dummy, FUSEC_F32, 1, {0}, NULL};
    fusec_tensor out[2] = {{&s, FUSEC_F32, 0, {0}, NULL}, {&m, FUSEC_F32, 0, {0}, NULL}};
    fusec_status st = fusec_launch(fn(mc, "stats"), &in, 1, out, 2, NULL);
    CHECK_MSG(st == FUSEC_ERR_RUNTIME, "%s", fusec_status_string(st));
    CHECK(strstr(fusec_module_message(mc), "empty") != NULL);
}

typedef struct pool_ctx {
    int64_t n;
    unsigned char *seen;
    int bad;
} pool_ctx;

static void mark(void *p, int64_t b, int64_t e, int worker) {
    pool_ctx *c = p;
    if (worker < 0 || worker >= rt_pool_size() || b < 0 || e > c->n || b >= e) c->bad = 1;
    for (int64_t i = b; i < e && i < c->n; i++)
        c->seen[i]++;
}

/* Every item of every run is run exactly once. */
static void test_pool(void) {
    CHECK(rt_pool_size() >= 1);
    for (int64_t n = 0; n < 40; n++) {
        for (int parts = 0; parts < 4; parts++) {
            pool_ctx c = {n, calloc((size_t)n + 1, 1), 0};
            rt_pool_run(n, parts, mark, &c);
            CHECK(!c.bad);
            for (int64_t i = 0; i < n; i++)
                CHECK_MSG(c.seen[i] == 1, "n %lld item %lld run %d times", (long long)n,
                          (long long)i, c.seen[i]);
            free(c.seen);
        }
    }
}

/* Many small runs from several threads at once, more threads than cores: the pool's workers
 * are often not running when a run starts, so callers take their parts, and workers wake to
 * parts taken, or to a later run's. Every item of every run is still run exactly once, and
 * only inside its run. */
static void *pool_stress(void *arg) {
    int *bad = arg;
    for (int r = 0; r < 3000; r++) {
        int64_t n = 2 + r % 37;
        unsigned char seen[40] = {0};
        pool_ctx c = {n, seen, 0};
        rt_pool_run(n, 0, mark, &c);
        for (int64_t i = 0; i < n; i++)
            c.bad |= seen[i] != 1;
        if (c.bad) {
            *bad = r + 1;
            break;
        }
    }
    return NULL;
}

static void test_pool_stress(void) {
    pthread_t t[3];
    int bad[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&t[i], NULL, pool_stress, &bad[i]) == 0);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        CHECK_MSG(bad[i] == 0, "thread %d: run %d ran an item other than once", i, bad[i] - 1);
    }
}

static void test_elf_refusals(void) {
    char err[256] = "";
    unsigned char junk[256];
    memset(junk, 0x7f, sizeof junk);
    CHECK(rt_elf_load(junk, sizeof junk, err, sizeof err) == NULL);
    CHECK(err[0] != 0);
    CHECK(rt_elf_load(junk, 3, err, sizeof err) == NULL);
    rt_elf_free(NULL);
}

static void test_copy_time(void) {
    double ms = -1;
    char err[256];
    CHECK(rt_backend_cpu.copy_time(-1, 1 << 20, 3, &ms, err, sizeof err) == FUSEC_OK);
    CHECK(ms > 0);
}

int main(void) {
    char why[512];
    if (!rt_backend_cpu.available(why, sizeof why)) {
        printf("the cpu backend is not available: %s; skipping\n", why);
        return 77;
    }
    test_pool();
    test_pool_stress();
    test_elf_refusals();
    test_copy_time();
    fusec_module *mr = compile(FUSEC_TARGET_REF);
    if (failures) return check_exit("test_cpu_backend");
    /* each loader in turn: LLVM's JIT, then fusec's own (objects from the cache) */
    const char *loaders[] = {"orc", "elf"};
    for (int l = 0; l < 2; l++) {
        setenv("FUSEC_CPU_LOADER", loaders[l], 1);
        fusec_module *mc = compile(FUSEC_TARGET_CPU);
        fusec_status st = fusec_module_build(mc);
        CHECK_MSG(st == FUSEC_OK, "%s", fusec_module_message(mc));
        if (st != FUSEC_OK) break;
        test_against_reference(mc, mr);
        test_bf16_edges(mc, mr);
        test_bit_identical(mc);
        test_threads(mc);
        test_empty_max(mc);
        fusec_module_free(mc);
    }
    unsetenv("FUSEC_CPU_LOADER");
    fusec_module_free(mr);
    return check_exit("test_cpu_backend");
}
