/* tests/unit/test_llvm_math.c: the accuracy of codegen/cpu/llvm_math.c against libm.
 *
 * f32 functions are compared with C's double functions on the same input (the SPEC's
 * float64 reference), over every 509th bit pattern of the 2^32 (NaNs included) plus dense
 * sweeps of each function's interesting ranges and a list of special values. Each point
 * checks the NaN / infinity / zero-sign pattern, the SPEC bound |got - ref| <= 1e-5 |ref| +
 * 1e-6, and the error in ulps, whose maximum must stay under the bound recorded in the
 * table below (so that a regression fails). f64 functions are compared with the long
 * double functions (libm's double ones being what is replaced) against 1e-12 relative;
 * the --fast-math variants against their documented bounds on their documented ranges.
 *
 * Environment: FUSEC_MATH_STRIDE=N sweeps every Nth bit pattern instead (1: all of them,
 * minutes per function), FUSEC_MATH_ONLY=NAME[,NAME] restricts the run to those
 * functions, FUSEC_MATH_SHARD=K/N sweeps only the K-th of N slices of the bit patterns,
 * FUSEC_MATH_DENSE=D takes a D-th of the points of the dense sweeps and random samples (the
 * sanitizers' pass, which looks at the code that generates the math, not at its accuracy).
 */
#include "codegen/cpu/llvm_math.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (failures++ < 60) {                                                                 \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static uint32_t f2u(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float u2f(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static double u2d(uint64_t u) {
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* xorshift64*: a fixed sequence, so that a failure reproduces */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

static double rng_unit(void) {
    return (double)(rng() >> 11) * 0x1p-53;
}

/* ---- options ---------------------------------------------------------------------------- */

static uint64_t opt_stride = 509;
static long opt_dense = 1; /* FUSEC_MATH_DENSE */
static const char *opt_only;
static uint64_t shard_lo, shard_hi = UINT64_C(1) << 32;

static int selected(const char *name) {
    if (!opt_only) return 1;
    size_t n = strlen(name);
    for (const char *p = opt_only; (p = strstr(p, name)) != NULL; p += n) {
        int start = p == opt_only || p[-1] == ',';
        int end = p[n] == '\0' || p[n] == ',';
        if (start && end) return 1;
    }
    return 0;
}

/* ---- measuring one f32 result ----------------------------------------------------------- */

typedef struct {
    double max_ulp;
    double worst_in, worst_in2; /* the input(s) of max_ulp */
    long points, bad;           /* bad: outside the SPEC bound or the wrong class */
} stats;

static void report_bad(const char *name, double x, double y, int binary, float got, double ref,
                       const char *why) {
    if (binary)
        CHECK(0, "%s(%a, %a) = %a, libm %a: %s", name, x, y, (double)got, ref, why);
    else
        CHECK(0, "%s(%a) = %a, libm %a: %s", name, x, (double)got, ref, why);
}

/* Compares got with the double reference: the class (NaN, the sign of an infinity, the
 * sign of a zero), the SPEC bound, and the error in ulps of the float format at ref. */
static void measure_f32(const char *name, float got, double ref, double x, double y, int binary,
                        stats *st) {
    st->points++;
    double err;
    const char *why = NULL;
    if (isnan(ref) || isnan(got)) {
        if (!(isnan(ref) && isnan(got))) why = "NaN pattern differs";
        err = 0;
    } else if (isinf(ref)) {
        if ((double)got != ref) why = "infinity differs";
        err = 0;
    } else if (fabs(ref) >= 0x1.ffffffp127) {
        /* rounds to inf as a float (from FLT_MAX + half an ulp on) */
        if (!isinf(got) || !signbit(got) != !signbit(ref)) why = "overflow differs";
        err = 0;
    } else if (fabs(ref) > FLT_MAX) {
        /* rounds to FLT_MAX: inf is an ulp away */
        if (!signbit(got) != !signbit(ref) || fabs(got) < FLT_MAX) why = "overflow differs";
        err = fabs(fmin(fabs(got), 0x1p128) - fabs(ref)) * 0x1p-104;
    } else {
        double g = isinf(got) ? copysign(0x1p128, got) : (double)got;
        int e;
        frexp(ref, &e); /* |ref| in [2^(e-1), 2^e) */
        double ulp = ldexp(1.0, e - 24 < -149 ? -149 : e - 24);
        err = fabs(g - ref) / ulp;
        if (!(fabs(g - ref) <= 1e-5 * fabs(ref) + 1e-6)) why = "outside the SPEC bound";
        if (ref == 0.0 && (got != 0.0f || !signbit(got) != !signbit(ref)))
            why = "zero or its sign differs";
    }
    if (why) {
        st->bad++;
        report_bad(name, x, y, binary, got, ref, why);
    }
    if (err > st->max_ulp) {
        st->max_ulp = err;
        st->worst_in = x;
        st->worst_in2 = y;
    }
}

/* ---- f32 unary functions -------------------------------------------------------------- */

static double ref_rsqrt(double x) {
    return 1.0 / sqrt(x);
}

static double ref_sigmoid(double x) {
    return x < 0 ? exp(x) / (1.0 + exp(x)) : 1.0 / (1.0 + exp(-x));
}

typedef struct {
    const char *name;
    float (*fn)(float);
    double (*ref)(double);
    double ulp_bound;   /* the measured maximum over all floats, rounded up (with and
                           without FMA contraction: tanhf 5.2 and 6.5, expf 2.02 and 2.31) */
    float ranges[4][2]; /* swept densely; {0, 0} ends */
} unary_f32;

#define R(a, b)                                                                                    \
    { a, b }
static const unary_f32 UNARY[] = {
    {"expf", llvm_math_expf, exp, 2.5, {R(-104, 89), R(-1, 1), R(-88, -80)}},
    {"exp2f", llvm_math_exp2f, exp2, 1.5, {R(-151, 129), R(-1, 1), R(-150, -120)}},
    {"expm1f", llvm_math_expm1f, expm1, 1.75, {R(-20, 89), R(-1, 1), R(-1e-3f, 1e-3f)}},
    {"logf", llvm_math_logf, log, 1.25, {R(0, 10), R(0.5f, 2), R(0.99f, 1.01f)}},
    {"log2f", llvm_math_log2f, log2, 1.5, {R(0, 10), R(0.5f, 2), R(0.99f, 1.01f)}},
    {"log10f", llvm_math_log10f, log10, 1.5, {R(0, 10), R(0.5f, 2), R(0.99f, 1.01f)}},
    {"log1pf", llvm_math_log1pf, log1p, 1.25, {R(-1, 10), R(-0.5f, 1), R(-1e-3f, 1e-3f)}},
    {"sqrtf", llvm_math_sqrtf, sqrt, 0.51, {R(0, 10)}},
    {"rsqrtf", llvm_math_rsqrtf, ref_rsqrt, 1.5, {R(0, 10)}},
    {"sinf", llvm_math_sinf, sin, 1.25, {R(-10, 10), R(-1e4f, 1e4f), R(1e6f, 1e7f)}},
    {"cosf", llvm_math_cosf, cos, 1.25, {R(-10, 10), R(-1e4f, 1e4f), R(1e6f, 1e7f)}},
    {"tanf", llvm_math_tanf, tan, 2.75, {R(-10, 10), R(-1e4f, 1e4f), R(1.5f, 1.65f)}},
    {"asinf", llvm_math_asinf, asin, 1.25, {R(-1, 1), R(0.45f, 0.55f), R(0.99f, 1)}},
    {"acosf", llvm_math_acosf, acos, 1.5, {R(-1, 1), R(0.45f, 0.55f), R(-1, -0.99f)}},
    {"atanf", llvm_math_atanf, atan, 2.0, {R(-10, 10), R(0.9f, 1.1f), R(-1e3f, 1e3f)}},
    {"sinhf", llvm_math_sinhf, sinh, 2.0, {R(-90, 90), R(-2, 2), R(88, 90)}},
    {"coshf", llvm_math_coshf, cosh, 1.75, {R(-90, 90), R(-2, 2), R(88, 90)}},
    {"tanhf", llvm_math_tanhf, tanh, 6.75, {R(-10, 10), R(-1, 1), R(-1e-3f, 1e-3f), R(5, 9.5f)}},
    {"asinhf", llvm_math_asinhf, asinh, 2.25, {R(-10, 10), R(-1, 1), R(4000, 5000)}},
    {"acoshf", llvm_math_acoshf, acosh, 2.75, {R(1, 10), R(1, 1.01f), R(4000, 5000)}},
    {"atanhf", llvm_math_atanhf, atanh, 2.25, {R(-1, 1), R(0.45f, 0.55f), R(0.99f, 1)}},
    {"erff", llvm_math_erff, erf, 1.5, {R(-5, 5), R(0.9f, 1.1f), R(3.8f, 4)}},
    {"sigmoidf", llvm_math_sigmoidf, ref_sigmoid, 2.75, {R(-110, 20), R(-5, 5), R(-90, -80)}},
};
#undef R

/* the special values every unary function sees, beside the sweeps */
static const float SPECIALS[] = {0.0f,
                                 -0.0f,
                                 0x1p-149f,
                                 -0x1p-149f,
                                 0x1p-126f,
                                 -0x1p-126f,
                                 0x1.fffffcp-127f,
                                 FLT_MAX,
                                 -FLT_MAX,
                                 INFINITY,
                                 -INFINITY,
                                 NAN,
                                 -NAN,
                                 1.0f,
                                 -1.0f,
                                 0.5f,
                                 -0.5f,
                                 2.0f,
                                 -2.0f,
                                 0x1.fffffep-1f,
                                 -0x1.fffffep-1f,
                                 0x1.000002p+0f,
                                 -0x1.000002p+0f,
                                 0x1p-24f,
                                 -0x1p-24f,
                                 0x1p-12f,
                                 0x1p12f,
                                 0x1.000002p12f,
                                 88.7228f,
                                 88.7229f,
                                 -87.3365f,
                                 -103.97f,
                                 -104.0f,
                                 128.0f,
                                 -149.0f,
                                 -150.0f,
                                 0x1.921fb6p+0f,
                                 0x1.921fb6p-1f,
                                 3.14159274f,
                                 0x1.5fdbbep+25f,
                                 0x1.fe8p+126f,
                                 3.92f,
                                 3.9193f,
                                 9.0f,
                                 10.0f,
                                 89.4159f,
                                 89.5f,
                                 0x1.6a09e6p-1f,
                                 0x1.6a09e8p-1f,
                                 0x1.6a09e6p+0f};

static double sweep_unary(const unary_f32 *u, int index, stats *st) {
    clock_t t0 = clock();
    /* all bit patterns with the stride, from an offset that differs per function */
    uint64_t start = shard_lo + (uint64_t)(index * 7919) % opt_stride;
    for (uint64_t b = start; b < shard_hi; b += opt_stride) {
        float x = u2f((uint32_t)b);
        measure_f32(u->name, u->fn(x), u->ref(x), x, 0, 0, st);
    }
    /* dense sweeps: evenly spaced values and evenly spaced bit patterns */
    if (opt_stride > 1) {
        for (int r = 0; r < 4 && u->ranges[r][0] < u->ranges[r][1]; r++) {
            float lo = u->ranges[r][0], hi = u->ranges[r][1];
            const int n = (1 << 18) / (int)opt_dense;
            for (int i = 0; i <= n; i++) {
                float x = lo + (hi - lo) * ((float)i / (float)n);
                measure_f32(u->name, u->fn(x), u->ref(x), x, 0, 0, st);
            }
            /* over the bit patterns of [lo, hi] when it has one sign */
            if (lo >= 0 || hi <= 0) {
                uint32_t bl = f2u(fabsf(lo) < fabsf(hi) ? fabsf(lo) : fabsf(hi));
                uint32_t bh = f2u(fabsf(lo) < fabsf(hi) ? fabsf(hi) : fabsf(lo));
                uint32_t sign = (lo < 0 || hi <= 0) ? 0x80000000u : 0u;
                uint64_t step = (bh - bl) / (uint64_t)n + 1;
                for (uint64_t b = bl; b <= bh; b += step) {
                    float x = u2f((uint32_t)b | sign);
                    measure_f32(u->name, u->fn(x), u->ref(x), x, 0, 0, st);
                }
            }
        }
    }
    for (size_t i = 0; i < sizeof SPECIALS / sizeof SPECIALS[0]; i++) {
        float x = SPECIALS[i];
        measure_f32(u->name, u->fn(x), u->ref(x), x, 0, 0, st);
    }
    return (double)(clock() - t0) / CLOCKS_PER_SEC;
}

static void print_row(const char *name, const stats *st, double bound, double secs, int binary) {
    char in[96];
    if (binary)
        snprintf(in, sizeof in, "%.9g, %.9g", st->worst_in, st->worst_in2);
    else
        snprintf(in, sizeof in, "%.9g (0x%08x)", st->worst_in, f2u((float)st->worst_in));
    printf("| %-10s | %7.3f | %-32s | %5.2f | %10ld | %4.1fs |\n", name, st->max_ulp, in, bound,
           st->points, secs);
}

static void test_unary_f32(void) {
    for (size_t i = 0; i < sizeof UNARY / sizeof UNARY[0]; i++) {
        const unary_f32 *u = &UNARY[i];
        if (!selected(u->name)) continue;
        stats st = {0};
        double secs = sweep_unary(u, (int)i, &st);
        print_row(u->name, &st, u->ulp_bound, secs, 0);
        CHECK(st.bad == 0, "%s: %ld points outside the SPEC bound or class", u->name, st.bad);
        CHECK(st.max_ulp <= u->ulp_bound, "%s: max error %.3f ulp at %a, bound %.1f", u->name,
              st.max_ulp, st.worst_in, u->ulp_bound);
    }
}

/* ---- f32 binary functions ------------------------------------------------------------- */

typedef struct {
    const char *name;
    float (*fn)(float, float);
    double (*ref)(double, double);
    double ulp_bound;
} binary_f32;

static const binary_f32 BINARY[] = {
    {"powf", llvm_math_powf, pow, 1.0},
    {"atan2f", llvm_math_atan2f, atan2, 2.0},
    {"hypotf", llvm_math_hypotf, hypot, 0.51},
    {"fmodf", llvm_math_fmodf, fmod, 0.0}, /* exact */
};

static const float BIN_SPECIALS[] = {0.0f,
                                     -0.0f,
                                     0x1p-149f,
                                     -0x1p-149f,
                                     0x1p-126f,
                                     1.0f,
                                     -1.0f,
                                     0.5f,
                                     -0.5f,
                                     2.0f,
                                     -2.0f,
                                     3.0f,
                                     -3.0f,
                                     2.5f,
                                     -2.5f,
                                     0.33333334f,
                                     -0.33333334f,
                                     1e10f,
                                     -1e10f,
                                     0x1p24f,
                                     -0x1p24f,
                                     0x1.000002p24f,
                                     0x1.fffffep23f,
                                     0x1.fffffcp23f,
                                     FLT_MAX,
                                     -FLT_MAX,
                                     INFINITY,
                                     -INFINITY,
                                     NAN,
                                     -8.0f,
                                     127.0f,
                                     -126.0f,
                                     0x1.fffffep-1f,
                                     0x1.000002p+0f};

static void binary_point(const binary_f32 *b, float x, float y, stats *st) {
    measure_f32(b->name, b->fn(x, y), b->ref(x, y), x, y, 1, st);
}

static float rnd_bits(void) {
    return u2f((uint32_t)rng());
}

/* a float of random sign with its magnitude uniform in log scale over [2^lo, 2^hi) */
static float rnd_log(int lo, int hi) {
    double m = 1.0 + rng_unit(); /* one call per statement: the order is fixed */
    int e = lo + (int)(rng() % (uint64_t)(hi - lo));
    float v = (float)ldexp(m, e);
    return (rng() & 1) ? -v : v;
}

static void test_binary_f32(void) {
    const long n = 3000000 / opt_dense;
    for (size_t i = 0; i < sizeof BINARY / sizeof BINARY[0]; i++) {
        const binary_f32 *b = &BINARY[i];
        if (!selected(b->name)) continue;
        clock_t t0 = clock();
        stats st = {0};
        for (size_t p = 0; p < sizeof BIN_SPECIALS / sizeof BIN_SPECIALS[0]; p++)
            for (size_t q = 0; q < sizeof BIN_SPECIALS / sizeof BIN_SPECIALS[0]; q++)
                binary_point(b, BIN_SPECIALS[p], BIN_SPECIALS[q], &st);
        for (long k = 0; k < n; k++) {
            float x, y;
            switch (k % 6) {
            case 0: x = rnd_bits(), y = rnd_bits(); break;
            case 1: x = rnd_log(-149, 128), y = rnd_log(-149, 128); break;
            case 2: x = rnd_log(-10, 10), y = rnd_log(-10, 10); break;
            case 3: x = (float)(rng_unit() * 20 - 10), y = (float)(rng_unit() * 20 - 10); break;
            case 4: /* pow: results near the float range's ends; others: close magnitudes */
                x = fabsf(rnd_log(-149, 128));
                y = (float)((rng() & 1 ? 127.9 : -149.9) / log2(x));
                y *= (float)(1 + 1e-3 * rng_unit());
                break;
            default: /* negative bases with integer exponents, and x near 1 */
                x = (rng() & 1) ? -(float)(rng() % 100) / 8.0f : 1.0f + (float)rng_unit() * 1e-3f;
                y = (float)((int)(rng() % 401) - 200);
                y = (rng() & 1) ? y : y / 8.0f;
                break;
            }
            if (strcmp(b->name, "powf") != 0 && k % 6 == 4)
                y = x * (float)(1 + (rng_unit() - 0.5) * 1e-6);
            binary_point(b, x, y, &st);
        }
        print_row(b->name, &st, b->ulp_bound, (double)(clock() - t0) / CLOCKS_PER_SEC, 1);
        CHECK(st.bad == 0, "%s: %ld points outside the SPEC bound or class", b->name, st.bad);
        CHECK(st.max_ulp <= b->ulp_bound, "%s: max error %.3f ulp at (%a, %a), bound %.1f", b->name,
              st.max_ulp, st.worst_in, st.worst_in2, b->ulp_bound);
    }
}

/* ---- f32 exact helpers ---------------------------------------------------------------- */

static int same_bits(float a, float b) {
    return (isnan(a) && isnan(b)) || f2u(a) == f2u(b);
}

/* expf_nonpos is expf, bit for bit, wherever its argument is <= 0 or NaN and expf's result is
 * normal (x >= -0x1.5d589ep6), and +0 below (where expf's result is below 2^-126): every
 * negative float with the stride, every bit pattern in [-104, -80] (the edge and the
 * subnormal band), specials. */
static int nonpos_ok(float x) {
    float got = llvm_math_expf_nonpos(x), want = llvm_math_expf(x);
    if (x < -0x1.5d589ep6f) return f2u(got) == 0 && want < 0x1p-126f;
    return same_bits(got, want) && (isnan(want) || want >= 0x1p-126f);
}

static void test_expf_nonpos(void) {
    if (!selected("expf_nonpos")) return;
    long bad = 0, points = 0;
    for (uint64_t b = 0x80000000u + shard_lo / 2; b < 0x80000000u + shard_hi / 2; b += opt_stride) {
        bad += !nonpos_ok(u2f((uint32_t)b));
        points++;
    }
    for (uint32_t b = f2u(-80.0f); b <= f2u(-104.0f); b += opt_stride > 1 ? 7 : 1) {
        bad += !nonpos_ok(u2f(b));
        points++;
    }
    const float specials[] = {0.0f,      -0.0f,  -0x1p-149f,     -FLT_MAX,      -INFINITY,
                              NAN,       -NAN,   -104.0f,        -103.97f,      -87.3365f,
                              -0x1p-24f, -87.0f, -0x1.5d589ep6f, -0x1.5d58a0p6f};
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) {
        bad += !nonpos_ok(specials[i]);
        points++;
    }
    CHECK(llvm_math_expf_nonpos(-0x1.5d589ep6f) == llvm_math_expf(-0x1.5d589ep6f),
          "expf_nonpos at the least normal result");
    CHECK(f2u(llvm_math_expf_nonpos(-0x1.5d58a0p6f)) == 0, "expf_nonpos flushes below it");
    CHECK(bad == 0, "expf_nonpos differs from expf at %ld of %ld points", bad, points);
    printf("| %-10s | %7s | %-32s | %5s | %10ld |       |\n", "expf_np", "= expf", "", "", points);
}

static void test_helpers_f32(void) {
    if (!selected("helpers")) return;
    /* relu, sign */
    CHECK(same_bits(llvm_math_reluf(-0.0f), 0.0f), "relu(-0) = %a", llvm_math_reluf(-0.0f));
    CHECK(isnan(llvm_math_reluf(NAN)), "relu(NaN)");
    CHECK(llvm_math_reluf(-INFINITY) == 0.0f && llvm_math_reluf(INFINITY) == INFINITY, "relu inf");
    CHECK(llvm_math_reluf(-3.0f) == 0.0f && llvm_math_reluf(3.5f) == 3.5f, "relu values");
    CHECK(same_bits(llvm_math_signf(-0.0f), 0.0f) && same_bits(llvm_math_signf(0.0f), 0.0f),
          "sign(+-0)");
    CHECK(isnan(llvm_math_signf(NAN)), "sign(NaN)");
    CHECK(llvm_math_signf(-0x1p-149f) == -1.0f && llvm_math_signf(INFINITY) == 1.0f, "sign");
    /* minimum and maximum: NaN from either side, -0 < +0 */
    CHECK(isnan(llvm_math_minimumf(NAN, 1.0f)) && isnan(llvm_math_minimumf(1.0f, NAN)), "min NaN");
    CHECK(isnan(llvm_math_maximumf(NAN, 1.0f)) && isnan(llvm_math_maximumf(1.0f, NAN)), "max NaN");
    CHECK(same_bits(llvm_math_minimumf(0.0f, -0.0f), -0.0f) &&
              same_bits(llvm_math_minimumf(-0.0f, 0.0f), -0.0f),
          "minimum(+0, -0)");
    CHECK(same_bits(llvm_math_maximumf(0.0f, -0.0f), 0.0f) &&
              same_bits(llvm_math_maximumf(-0.0f, 0.0f), 0.0f),
          "maximum(+0, -0)");
    CHECK(llvm_math_minimumf(-INFINITY, 1.0f) == -INFINITY, "min -inf");
    CHECK(llvm_math_maximumf(2.0f, -1.0f) == 2.0f, "max");
    CHECK(same_bits(llvm_math_copysignf(3.0f, -0.0f), -3.0f), "copysign");
    CHECK(same_bits(llvm_math_fabsf(-0.0f), 0.0f), "fabs(-0)");
    /* round: half to even, against rintf in the default rounding mode; floor, ceil, trunc
     * against libm, over a stride of all floats */
    CHECK(llvm_math_roundf(0.5f) == 0.0f && llvm_math_roundf(1.5f) == 2.0f &&
              llvm_math_roundf(2.5f) == 2.0f && llvm_math_roundf(-2.5f) == -2.0f,
          "round half to even");
    CHECK(same_bits(llvm_math_roundf(-0.4f), -0.0f), "round(-0.4) = -0");
    CHECK(llvm_math_roundf(0x1.fffffep22f) == 0x1p23f, "round(2^23 - 1/2)");
    long bad = 0;
    for (uint64_t b = 17; b < (UINT64_C(1) << 32); b += 997) {
        float x = u2f((uint32_t)b);
        bad += !same_bits(llvm_math_roundf(x), rintf(x));
        bad += !same_bits(llvm_math_floorf(x), floorf(x));
        bad += !same_bits(llvm_math_ceilf(x), ceilf(x));
        bad += !same_bits(llvm_math_truncf(x), truncf(x));
        float y = u2f((uint32_t)(b * 2654435761u));
        float mn = llvm_math_minimumf(x, y), mx = llvm_math_maximumf(x, y);
        if (isnan(x) || isnan(y))
            bad += !isnan(mn) + !isnan(mx);
        else
            bad += mn != fminf(x, y) || mx != fmaxf(x, y);
    }
    CHECK(bad == 0, "round/floor/ceil/trunc/minimum/maximum: %ld mismatches", bad);
    printf("| helpers    | exact   | relu sign round floor ceil trunc copysign min max |\n");
}

/* ---- f64 ------------------------------------------------------------------------------ */

static long double refl_sigmoid(long double x) {
    return x < 0 ? expl(x) / (1.0L + expl(x)) : 1.0L / (1.0L + expl(-x));
}

static long double refl_rsqrt(long double x) {
    return 1.0L / sqrtl(x);
}

typedef struct {
    const char *name;
    double (*fn)(double);
    long double (*ref)(long double);
    double ulp_bound;
    double lo, hi; /* a dense range */
} unary_f64;

static const unary_f64 UNARY64[] = {
    {"exp", llvm_math_exp, expl, 1.0, -746, 710},
    {"exp2", llvm_math_exp2, exp2l, 1.5, -1080, 1025},
    {"expm1", llvm_math_expm1, expm1l, 2.5, -40, 710},
    {"log", llvm_math_log, logl, 1.0, 0, 100},
    {"log2", llvm_math_log2, log2l, 2.0, 0, 100},
    {"log10", llvm_math_log10, log10l, 2.0, 0, 100},
    {"log1p", llvm_math_log1p, log1pl, 1.0, -1, 100},
    {"sqrt", llvm_math_sqrt, sqrtl, 0.5, 0, 100},
    {"rsqrt", llvm_math_rsqrt, refl_rsqrt, 1.5, 0, 100},
    {"sinh", llvm_math_sinh, sinhl, 2.5, -712, 712},
    {"cosh", llvm_math_cosh, coshl, 1.5, -712, 712},
    {"tanh", llvm_math_tanh, tanhl, 2.5, -25, 25},
    {"asinh", llvm_math_asinh, asinhl, 2.0, -100, 100},
    {"acosh", llvm_math_acosh, acoshl, 2.0, 1, 100},
    {"atanh", llvm_math_atanh, atanhl, 2.0, -1, 1},
    {"erf", llvm_math_erf, erfl, 1.5, -7, 7},
    {"sigmoid", llvm_math_sigmoid, refl_sigmoid, 2.0, -750, 40},
};

static const double SPECIALS64[] = {
    0.0,      -0.0,      0x1p-1074, -0x1p-1074, 0x1p-1022, -0x1p-1022, DBL_MAX, -DBL_MAX,
    INFINITY, -INFINITY, NAN,       1.0,        -1.0,      0.5,        -0.5,    2.0,
    -2.0,     0x1p-54,   0x1p-28,   0x1p28,     709.78,    709.79,     -745.1,  -745.2,
    1024.0,   -1074.0,   -1075.0,   6.0,        5.92,      22.0,       710.47,  710.48};

static void test_unary_f64(void) {
    const long n = 400000 / opt_dense;
    for (size_t i = 0; i < sizeof UNARY64 / sizeof UNARY64[0]; i++) {
        const unary_f64 *u = &UNARY64[i];
        if (!selected(u->name)) continue;
        clock_t t0 = clock();
        double max_ulp = 0, worst = 0, max_rel = 0;
        long bad = 0, points = 0;
        for (long k = 0; k < n + (long)(sizeof SPECIALS64 / sizeof SPECIALS64[0]); k++) {
            double x;
            if (k >= n)
                x = SPECIALS64[k - n];
            else if (k % 3 == 0) /* every exponent alike */
                x = u2d(rng());
            else if (k % 3 == 1)
                x = u->lo + (u->hi - u->lo) * rng_unit();
            else { /* near 0 and the small scales */
                double m = rng_unit() + 1.0;
                x = ldexp(m, -(int)(rng() % 60));
                x = (rng() & 1) ? x : -x;
            }
            double got = u->fn(x);
            long double ref = u->ref(x);
            double refd = (double)ref;
            points++;
            if (isnan(refd) || isnan(got) || isinf(refd) || isinf(got)) {
                int ok = (isnan(refd) && isnan(got)) || (double)got == refd;
                /* a finite result just under DBL_MAX where ref rounds to inf: allow */
                ok = ok || (isinf(refd) && fabsl(ref) < 0x1.00000000000008p1024L &&
                            !signbit(got) == !signbit(refd) && fabs(got) == DBL_MAX);
                if (!ok) {
                    bad++;
                    CHECK(0, "%s(%a) = %a, want %La: class differs", u->name, x, got, ref);
                }
                continue;
            }
            long double d = fabsl((long double)got - ref);
            int e;
            frexpl(ref, &e);
            long double ulp = ldexpl(1.0L, e - 53 < -1074 ? -1074 : e - 53);
            double ue = (double)(d / ulp);
            if (ue > max_ulp) max_ulp = ue, worst = x;
            if (fabsl(ref) >= DBL_MIN && (double)(d / fabsl(ref)) > max_rel)
                max_rel = (double)(d / fabsl(ref));
            int ok = d <= 1e-12L * fabsl(ref) || d <= 0x1p-1074L;
            if (ref == 0 && (got != 0 || !signbit(got) != !signbit(refd))) ok = 0;
            if (!ok) {
                bad++;
                CHECK(0, "%s(%a) = %a, want %La: beyond 1e-12 relative", u->name, x, got, ref);
            }
        }
        printf("| %-10s | %7.3f | %-32.17g | %5.1f | %10ld | %4.1fs | rel %.2g\n", u->name, max_ulp,
               worst, u->ulp_bound, points, (double)(clock() - t0) / CLOCKS_PER_SEC, max_rel);
        CHECK(bad == 0, "%s: %ld bad points", u->name, bad);
        CHECK(max_ulp <= u->ulp_bound, "%s: max error %.3f ulp at %a, bound %.1f", u->name, max_ulp,
              worst, u->ulp_bound);
    }
}

static void test_helpers_f64(void) {
    if (!selected("helpers64")) return;
    CHECK(llvm_math_round(2.5) == 2.0 && llvm_math_round(-3.5) == -4.0, "round half even");
    CHECK(signbit(llvm_math_round(-0.2)) && llvm_math_round(0x1.fffffffffffffp51) == 0x1p52,
          "round");
    CHECK(isnan(llvm_math_relu(NAN)) && !signbit(llvm_math_relu(-0.0)), "relu");
    CHECK(llvm_math_sign(-2.0) == -1.0 && isnan(llvm_math_sign(NAN)) && llvm_math_sign(-0.0) == 0,
          "sign");
    CHECK(isnan(llvm_math_minimum(1.0, NAN)) && signbit(llvm_math_minimum(0.0, -0.0)), "minimum");
    CHECK(isnan(llvm_math_maximum(NAN, 1.0)) && !signbit(llvm_math_maximum(-0.0, 0.0)), "maximum");
    CHECK(llvm_math_floor(-0.5) == -1.0 && llvm_math_ceil(-0.5) == 0 && llvm_math_trunc(-1.5) == -1,
          "floor ceil trunc");
    /* the libm-backed ones are libm */
    CHECK(llvm_math_sin(1.0) == sin(1.0) &&
              llvm_math_pow(-8.0, 1.0 / 3) != llvm_math_pow(-8, 1.0 / 3) &&
              llvm_math_atan2(-0.0, -1.0) == -M_PI && llvm_math_fmod(7.0, -2.0) == 1.0 &&
              llvm_math_hypot(INFINITY, NAN) == INFINITY,
          "libm-backed f64");
    printf("| helpers64  | exact   | and the f64 libm calls |\n");
}

/* ---- --fast-math variants --------------------------------------------------------------- */

typedef struct {
    const char *name;
    float (*fn)(float);
    double (*ref)(double);
    double lo, hi;   /* the documented range */
    double rel, abs; /* |got - ref| <= rel |ref| + abs there */
} fast_f32;

static const fast_f32 FAST[] = {
    {"fast_expf", llvm_math_fast_expf, exp, -86.9, 88.7, 1e-5, 0},
    {"fast_logf", llvm_math_fast_logf, log, 0x1p-149, 3.4e38, 2e-5, 0},
    {"fast_tanhf", llvm_math_fast_tanhf, tanh, -20, 20, 2e-6, 0},
    {"fast_sigmoidf", llvm_math_fast_sigmoidf, ref_sigmoid, -87, 30, 1e-5, 0},
    {"fast_erff", llvm_math_fast_erff, erf, -6, 6, 5e-5, 0},
    {"fast_sinf", llvm_math_fast_sinf, sin, -1e6, 1e6, 0, 2e-6},
    {"fast_cosf", llvm_math_fast_cosf, cos, -1e6, 1e6, 0, 2e-6},
};

static void test_fast_f32(void) {
    const long n = (1 << 20) / opt_dense;
    for (size_t i = 0; i < sizeof FAST / sizeof FAST[0]; i++) {
        const fast_f32 *f = &FAST[i];
        if (!selected(f->name)) continue;
        double max_rel = 0, max_abs = 0, worst = 0;
        long bad = 0;
        for (long k = 0; k <= 2 * n; k++) {
            double x;
            if (k <= n) {
                x = f->lo + (f->hi - f->lo) * (double)k / (double)n;
            } else { /* log-spaced on both sides of 0, inside the range */
                double m = fmax(fabs(f->lo), fabs(f->hi)) * (1.0 + rng_unit());
                x = ldexp(m, -(int)(rng() % 150) - 1) * ((k & 1) ? 1 : -1);
                if (x < f->lo || x > f->hi) continue;
            }
            float xf = (float)x;
            if (xf < f->lo || xf > f->hi) continue;
            float got = f->fn(xf);
            double ref = f->ref(xf);
            double d = fabs((double)got - ref);
            if (!(d <= f->rel * fabs(ref) + f->abs + 0x1p-149)) {
                bad++;
                CHECK(0, "%s(%a) = %a, ref %a: beyond its bound", f->name, xf, (double)got, ref);
            }
            if (ref != 0 && d / fabs(ref) > max_rel && fabs(ref) >= FLT_MIN)
                max_rel = d / fabs(ref), worst = xf;
            if (d > max_abs) max_abs = d;
        }
        printf("| %-13s | rel %.3g abs %.3g (worst rel at %.9g) | bound rel %.0e abs %.0e |\n",
               f->name, max_rel, max_abs, worst, f->rel, f->abs);
        CHECK(bad == 0, "%s: %ld points beyond the bound", f->name, bad);
    }
    if (selected("fast_powf")) {
        double max_rel = 0;
        long bad = 0;
        for (long k = 0; k < n; k++) {
            float x = fabsf(rnd_log(-100, 100));
            float y = (float)((rng_unit() * 250 - 125) / log2(x));
            if (k % 4 == 0) {
                x = -(float)(rng() % 64);
                y = (float)((int)(rng() % 41) - 20);
            }
            float got = llvm_math_fast_powf(x, y);
            double ref = pow(x, y);
            if (fabs(ref) < FLT_MIN || fabs(ref) > FLT_MAX) continue;
            double rel = fabs((double)got - ref) / fabs(ref);
            if (!(rel <= 2e-5)) {
                bad++;
                CHECK(0, "fast_powf(%a, %a) = %a, ref %a", x, y, (double)got, ref);
            }
            if (rel > max_rel) max_rel = rel;
        }
        CHECK(isnan(llvm_math_fast_powf(-8.0f, 1.0f / 3)) && llvm_math_fast_powf(NAN, 0) == 1.0f &&
                  llvm_math_fast_powf(-2.0f, 3.0f) == -8.0f,
              "fast_powf special cases");
        printf("| fast_powf     | rel %.3g | bound rel 2e-05 |\n", max_rel);
        CHECK(bad == 0, "fast_powf: %ld points beyond the bound", bad);
    }
    /* no NaN from any finite input */
    if (selected("fast_nan")) {
        long nan = 0;
        for (uint64_t b = 3; b < (UINT64_C(1) << 32); b += 4099) {
            float x = u2f((uint32_t)b);
            if (!isfinite(x)) continue;
            nan += isnan(llvm_math_fast_expf(x)) + isnan(llvm_math_fast_tanhf(x)) +
                   isnan(llvm_math_fast_sigmoidf(x)) + isnan(llvm_math_fast_erff(x)) +
                   isnan(llvm_math_fast_sinf(x)) + isnan(llvm_math_fast_cosf(x)) +
                   (x >= 0 && isnan(llvm_math_fast_logf(x)));
        }
        CHECK(nan == 0, "fast variants: %ld NaN results from finite inputs", nan);
    }
}

int main(void) {
    const char *s = getenv("FUSEC_MATH_STRIDE");
    if (s && atol(s) > 0) opt_stride = (uint64_t)atol(s);
    const char *d = getenv("FUSEC_MATH_DENSE");
    if (d && atol(d) > 0 && atol(d) <= 1024) opt_dense = atol(d);
    opt_only = getenv("FUSEC_MATH_ONLY");
    if (opt_only && !*opt_only) opt_only = NULL;
    const char *sh = getenv("FUSEC_MATH_SHARD");
    unsigned k, n;
    if (sh && sscanf(sh, "%u/%u", &k, &n) == 2 && n > 0 && k < n) {
        shard_lo = ((UINT64_C(1) << 32) / n) * k;
        shard_hi = k + 1 == n ? (UINT64_C(1) << 32) : ((UINT64_C(1) << 32) / n) * (k + 1);
    }
    clock_t t0 = clock();
    printf("| function   | max ulp | worst input                      | bound |     points |  time "
           "|\n");
    printf("|------------|---------|----------------------------------|-------|------------|-------"
           "|\n");
    test_unary_f32();
    test_expf_nonpos();
    test_binary_f32();
    test_helpers_f32();
    test_unary_f64();
    test_helpers_f64();
    test_fast_f32();
    printf("total %.1fs\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    if (failures) {
        fprintf(stderr, "test_llvm_math: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_llvm_math: ok\n");
    return 0;
}
