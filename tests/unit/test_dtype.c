/* tests/unit/test_dtype.c: f16/bf16 conversions, rounding to a dtype, integer wrap-around and
 * saturation.
 *
 * The 16-bit conversions are checked exhaustively (every bit pattern round-trips) and
 * against an independent reference: the two neighbours of x on the 16-bit grid found by
 * binary search over the ordered bit patterns, and x compared with their midpoint, which is
 * exact in double (both neighbours have at most 11 significant bits).
 */
#include "ir/ir.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void) {
    /* splitmix64: fixed seed, so a failure reproduces */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static double from_bits(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

typedef struct fmt16 {
    const char *name;
    uint16_t (*from)(double);
    double (*to)(uint16_t);
    uint16_t max_finite; /* pattern of the largest finite value */
    uint16_t inf;
    uint16_t quiet; /* the quiet bit of a NaN */
    double beyond;  /* the value the next pattern past max_finite would have */
} fmt16;

static const fmt16 F16 = {"f16",  ir_f16_from_double, ir_f16_to_double, 0x7bff, 0x7c00, 0x0200,
                          65536.0};
static const fmt16 BF16 = {"bf16", ir_bf16_from_double, ir_bf16_to_double, 0x7f7f, 0x7f80, 0x0040,
                           0x1p128};

/* Round to nearest even by neighbours and midpoint (see the top of the file). */
static uint16_t reference_round(const fmt16 *f, double x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    if (isnan(x)) return 0; /* not used for NaN */
    /* largest pattern p with value(p) <= a */
    int lo = 0, hi = f->max_finite;
    if (a >= f->to(f->max_finite)) {
        lo = f->max_finite;
    } else {
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (f->to((uint16_t)mid) <= a)
                lo = mid;
            else
                hi = mid - 1;
        }
    }
    double vlo = f->to((uint16_t)lo);
    double vhi = lo == f->max_finite ? f->beyond : f->to((uint16_t)(lo + 1));
    if (a == vlo) return (uint16_t)(sign | lo);
    double midpoint = (vlo + vhi) / 2; /* exact */
    int up = a > midpoint || (a == midpoint && (lo & 1));
    int p = up ? lo + 1 : lo;
    if (p > f->max_finite) p = f->inf;
    return (uint16_t)(sign | p);
}

static void check_format(const fmt16 *f) {
    /* every pattern survives to double and back; NaNs come back quiet with their sign */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        double d = f->to((uint16_t)h);
        uint16_t back = f->from(d);
        int is_nan = (h & f->inf) == f->inf && (h & ~(f->inf | 0x8000u)) != 0;
        CHECK((isnan(d) != 0) == is_nan);
        uint16_t want = is_nan ? (uint16_t)(h | f->quiet) : (uint16_t)h;
        if (back != want && bad++ < 5)
            fprintf(stderr, "%s: 0x%04x -> %.17g -> 0x%04x\n", f->name, (unsigned)h, d,
                    (unsigned)back);
    }
    CHECK(bad == 0);

    /* the midpoints between neighbours, and just either side of them */
    bad = 0;
    for (uint32_t h = 0; h < f->max_finite; h++) {
        double lo = f->to((uint16_t)h), hi = f->to((uint16_t)(h + 1));
        double mid = (lo + hi) / 2;
        double xs[3] = {mid, nextafter(mid, 0), nextafter(mid, INFINITY)};
        for (int i = 0; i < 3; i++) {
            for (int s = 0; s < 2; s++) {
                double x = s ? -xs[i] : xs[i];
                if (f->from(x) != reference_round(f, x) && bad++ < 5)
                    fprintf(stderr, "%s: %.17g gives 0x%04x, want 0x%04x\n", f->name, x,
                            (unsigned)f->from(x), (unsigned)reference_round(f, x));
            }
        }
    }
    CHECK(bad == 0);

    /* random doubles: across the format's range, and anywhere */
    bad = 0;
    for (int i = 0; i < 2000000; i++) {
        uint64_t u = rng();
        double x;
        if (i % 4 == 3) {
            x = from_bits(u);
            if (isnan(x)) continue;
        } else {
            /* exponent spread over the format's range and a little past both ends */
            int span = f == &F16 ? 50 : 290;
            int e = (int)(u % (uint64_t)span) - span / 2 - (f == &F16 ? 6 : 0);
            double m = (double)(rng() >> 11) * 0x1p-53; /* [0, 1) */
            x = ldexp(1.0 + m, e);
            if (u & (UINT64_C(1) << 63)) x = -x;
        }
        if (f->from(x) != reference_round(f, x) && bad++ < 5)
            fprintf(stderr, "%s: %.17g gives 0x%04x, want 0x%04x\n", f->name, x,
                    (unsigned)f->from(x), (unsigned)reference_round(f, x));
    }
    CHECK(bad == 0);

    /* special values */
    CHECK(f->from(INFINITY) == f->inf);
    CHECK(f->from(-INFINITY) == (0x8000 | f->inf));
    CHECK(f->from(0.0) == 0);
    CHECK(f->from(-0.0) == 0x8000);
    CHECK(f->from(1e300) == f->inf);
    CHECK(f->from(-1e300) == (0x8000 | f->inf));
    CHECK(f->from(1e-300) == 0);
    CHECK(f->from(-1e-300) == 0x8000);
    CHECK(f->from(from_bits(1)) == 0); /* the smallest double subnormal */
    uint16_t n = f->from(NAN);
    CHECK((n & f->inf) == f->inf && (n & f->quiet));
    n = f->from(-NAN);
    CHECK((n & 0x8000) && (n & f->inf) == f->inf && (n & f->quiet));
    CHECK(isnan(f->to(n)) && signbit(f->to(n)));
}

static void check_known_values(void) {
    /* f16 */
    CHECK(ir_f16_from_double(1.0) == 0x3c00);
    CHECK(ir_f16_from_double(-2.0) == 0xc000);
    CHECK(ir_f16_from_double(65504.0) == 0x7bff);
    CHECK(ir_f16_from_double(65519.99) == 0x7bff);
    CHECK(ir_f16_from_double(65520.0) == 0x7c00); /* the tie goes to even: inf */
    CHECK(ir_f16_from_double(0x1p-24) == 0x0001); /* smallest subnormal */
    CHECK(ir_f16_from_double(0x1p-25) == 0x0000); /* a tie with 0: to even */
    CHECK(ir_f16_from_double(nextafter(0x1p-25, 1)) == 0x0001);
    CHECK(ir_f16_from_double(0x1.8p-24) == 0x0002);   /* tie 1.5 ulp: to even 2 */
    CHECK(ir_f16_from_double(0x1p-14) == 0x0400);     /* smallest normal */
    CHECK(ir_f16_from_double(0x1.ff8p-15) == 0x03ff); /* the largest subnormal */
    CHECK(ir_f16_from_double(0x1.ffcp-15) == 0x0400); /* a tie past it: to even, normal */
    CHECK(ir_f16_to_double(0x0001) == 0x1p-24);
    CHECK(ir_f16_to_double(0x3555) == 0x1.554p-2);
    CHECK(ir_f16_to_double(0xfbff) == -65504.0);
    /* double rounding through float would give 1.0 here: float keeps no bit of 2^-40, so
     * the value lands exactly on the f16 halfway point and goes to even */
    CHECK(ir_f16_from_double(1.0 + 0x1p-11 + 0x1p-40) == 0x3c01);
    CHECK(ir_f16_from_double(1.0 + 0x1p-11) == 0x3c00);
    CHECK(ir_f16_from_double(1.0 + 3 * 0x1p-11) == 0x3c02);
    /* bf16 */
    CHECK(ir_bf16_from_double(1.0) == 0x3f80);
    CHECK(ir_bf16_from_double(1.0 + 0x1p-8) == 0x3f80); /* tie: to even */
    CHECK(ir_bf16_from_double(1.0 + 0x1p-8 + 0x1p-40) == 0x3f81);
    CHECK(ir_bf16_from_double(1.0 + 3 * 0x1p-8) == 0x3f82);
    CHECK(ir_bf16_from_double(0x1p-133) == 0x0001);
    CHECK(ir_bf16_from_double(0x1p-134) == 0x0000);
    CHECK(ir_bf16_from_double(3.0e38) == 0x7f62);
    CHECK(ir_bf16_from_double(0x1.ffp127) == 0x7f80); /* halfway past the max: inf */
    CHECK(ir_bf16_to_double(0x4049) == 3.140625);
}

static void check_round_to_dtype(void) {
    CHECK(ir_round_to_dtype(0.1, IR_F64) == 0.1);
    CHECK(ir_round_to_dtype(0.1, IR_F32) == (double)0.1f);
    CHECK(ir_round_to_dtype(1e300, IR_F32) == INFINITY);
    CHECK(ir_round_to_dtype(0.1, IR_F16) == ir_f16_to_double(0x2e66));
    CHECK(ir_round_to_dtype(0.1, IR_BF16) == ir_bf16_to_double(0x3dcd));
    CHECK(isnan(ir_round_to_dtype(NAN, IR_F16)));
    /* integers: truncation toward zero, saturation out of range, NaN gives 0 */
    CHECK(ir_round_to_dtype(3.7, IR_I32) == 3);
    CHECK(ir_round_to_dtype(-3.7, IR_I32) == -3);
    CHECK(ir_round_to_dtype(-0.5, IR_I64) == 0);
    CHECK(ir_float_to_int(2147483647.9, IR_I32) == 2147483647);
    CHECK(ir_float_to_int(2147483648.0, IR_I32) == INT32_MAX);
    CHECK(ir_float_to_int(-2147483648.9, IR_I32) == INT32_MIN);
    CHECK(ir_float_to_int(4294967296.0 + 5, IR_I32) == INT32_MAX);
    CHECK(ir_float_to_int(-4294967296.0 - 5, IR_I32) == INT32_MIN);
    CHECK(ir_float_to_int(0x1p63, IR_I64) == INT64_MAX);
    CHECK(ir_float_to_int(-0x1p63, IR_I64) == INT64_MIN);
    CHECK(ir_float_to_int(0x1p62 + 0x1p11, IR_I64) == (INT64_C(1) << 62) + 2048);
    CHECK(ir_float_to_int(0x1p100, IR_I64) == INT64_MAX);
    CHECK(ir_float_to_int(-0x1p100, IR_I32) == INT32_MIN);
    CHECK(ir_float_to_int(NAN, IR_I32) == 0);
    CHECK(ir_float_to_int(INFINITY, IR_I64) == INT64_MAX);
    CHECK(ir_float_to_int(-INFINITY, IR_I32) == INT32_MIN);
    CHECK(ir_round_to_dtype(NAN, IR_I32) == 0);
    /* bool */
    CHECK(ir_round_to_dtype(0.5, IR_BOOL) == 1);
    CHECK(ir_round_to_dtype(-0.0, IR_BOOL) == 0);
    CHECK(ir_round_to_dtype(NAN, IR_BOOL) == 1);
}

static void check_wrap(void) {
    CHECK(ir_wrap_int(5, IR_I32) == 5);
    CHECK(ir_wrap_int(2147483648LL, IR_I32) == -2147483648LL);
    CHECK(ir_wrap_int(-2147483649LL, IR_I32) == 2147483647LL);
    CHECK(ir_wrap_int(4294967296LL + 7, IR_I32) == 7);
    CHECK(ir_wrap_int(INT64_MIN, IR_I32) == 0);
    CHECK(ir_wrap_int(INT64_MAX, IR_I32) == -1);
    CHECK(ir_wrap_int(INT64_MIN, IR_I64) == INT64_MIN);
    CHECK(ir_wrap_int(2, IR_BOOL) == 1);
    CHECK(ir_wrap_int(0, IR_BOOL) == 0);
    CHECK(ir_wrap_int(-1, IR_BOOL) == 1);
}

int main(void) {
    check_format(&F16);
    check_format(&BF16);
    check_known_values();
    check_round_to_dtype();
    check_wrap();
    return check_exit("test_dtype");
}
