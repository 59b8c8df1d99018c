/* ir/dtype.c: conversions between double and the 16-bit storage types, rounding a double to
 * what a dtype can hold, and integer wrap-around.
 *
 * f16 and bf16 are rounded straight from the bits of the double (round to nearest, ties to
 * even). Going through float first would round twice, and a double just above a halfway
 * point of the 16-bit grid can land exactly on it after the first rounding, then go the
 * wrong way (to even) in the second.
 */
#include "ir.h"

#include <math.h>
#include <string.h>

static uint64_t double_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static double bits_double(uint64_t u) {
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Rounds x to a binary format with `mbits` fraction bits and `ebits` exponent bits (IEEE
 * layout, subnormals, infinities), round to nearest even; returns the bit pattern. */
static uint32_t round_from_double(double x, int mbits, int ebits) {
    uint64_t u = double_bits(x);
    uint32_t sign = (uint32_t)(u >> 63) << (mbits + ebits);
    int dexp = (int)((u >> 52) & 0x7ff);
    uint64_t frac = u & ((UINT64_C(1) << 52) - 1);
    uint32_t inf = ((UINT32_C(1) << ebits) - 1) << mbits;

    if (dexp == 0x7ff) {
        if (frac == 0) return sign | inf;
        /* NaN: keep the sign and the top payload bits, and make it quiet */
        uint32_t payload = (uint32_t)(frac >> (52 - mbits));
        return sign | inf | (UINT32_C(1) << (mbits - 1)) | payload;
    }
    if (dexp == 0)
        return sign; /* zero, or a double subnormal: far below half the smallest
                        subnormal of either 16-bit type */

    int bias = (1 << (ebits - 1)) - 1;
    int e = dexp - 1023; /* x = m * 2^(e - 52), m with its leading bit */
    int emin = 1 - bias; /* exponent of the smallest normal number */
    if (e > bias) return sign | inf;
    uint64_t m = frac | (UINT64_C(1) << 52);

    /* keep mbits fraction bits of a normal number; below emin the grid stays that of the
     * subnormals, so fewer bits are kept */
    int shift = 52 - mbits + (e < emin ? emin - e : 0);
    if (shift >= 54) return sign; /* below half of the smallest subnormal: m < 2^(shift-1) */
    uint64_t q = m >> shift;
    uint64_t rem = m & ((UINT64_C(1) << shift) - 1);
    uint64_t half = UINT64_C(1) << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;

    uint32_t r;
    if (e < emin) {
        r = (uint32_t)q; /* a subnormal; q == 2^mbits is the smallest normal, as it should */
    } else {
        /* q holds the leading bit at 2^mbits: adding it bumps the exponent field by one,
         * and a carry out of rounding bumps it once more, both as they should */
        r = ((uint32_t)(e + bias - 1) << mbits) + (uint32_t)q;
    }
    if (r >= inf) return sign | inf;
    return sign | r;
}

uint16_t ir_f16_from_double(double x) {
    return (uint16_t)round_from_double(x, 10, 5);
}

double ir_f16_to_double(uint16_t h) {
    int sign = h >> 15;
    int e = (h >> 10) & 0x1f;
    int frac = h & 0x3ff;
    double v;
    if (e == 0x1f) {
        if (frac == 0) return sign ? -INFINITY : INFINITY;
        /* NaN: the payload moves to the top of the double's fraction, made quiet */
        uint64_t u = ((uint64_t)sign << 63) | (UINT64_C(0x7ff) << 52) | (UINT64_C(1) << 51) |
                     ((uint64_t)frac << 42);
        return bits_double(u);
    }
    if (e == 0)
        v = ldexp((double)frac, -24);
    else
        v = ldexp((double)(frac | 0x400), e - 25);
    return sign ? -v : v;
}

uint16_t ir_bf16_from_double(double x) {
    return (uint16_t)round_from_double(x, 7, 8);
}

double ir_bf16_to_double(uint16_t h) {
    /* bf16 is the top half of a float: widening is exact */
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

int64_t ir_wrap_int(int64_t v, ir_dtype t) {
    switch (t) {
    case IR_BOOL: return v != 0;
    case IR_I32: {
        /* arithmetic, not a conversion to int32_t, whose out-of-range result is only
         * implementation-defined */
        uint32_t u = (uint32_t)(uint64_t)v;
        return u >= UINT32_C(0x80000000) ? (int64_t)u - INT64_C(0x100000000) : (int64_t)u;
    }
    default: return v;
    }
}

/* A float converted to an integer dtype. C leaves NaN and values out of range undefined;
 * fusec defines them as the hardware conversions both backends use do (CUDA's cvt.rzi,
 * LLVM's fptosi.sat), so no backend pays extra instructions to match the reference:
 *   NaN            -> 0
 *   finite         -> truncated toward zero
 *   out of range   -> saturated to the dtype's minimum or maximum (infinities too) */
int64_t ir_float_to_int(double x, ir_dtype t) {
    if (t == IR_BOOL) return x != 0; /* NaN is true, as in C and numpy */
    if (isnan(x)) return 0;
    double lo = t == IR_I32 ? -2147483648.0 : -9223372036854775808.0;
    double hi = t == IR_I32 ? 2147483648.0 : 9223372036854775808.0; /* exclusive */
    if (x <= lo) return t == IR_I32 ? INT32_MIN : INT64_MIN;
    if (x >= hi) return t == IR_I32 ? INT32_MAX : INT64_MAX;
    return (int64_t)trunc(x);
}

double ir_round_to_dtype(double x, ir_dtype t) {
    switch (t) {
    case IR_F64: return x;
    case IR_F32: return (double)(float)x;
    case IR_F16: return ir_f16_to_double(ir_f16_from_double(x));
    case IR_BF16: return ir_bf16_to_double(ir_bf16_from_double(x));
    case IR_BOOL: return x != 0;
    case IR_I32:
    case IR_I64: return (double)ir_float_to_int(x, t);
    default: return x;
    }
}
