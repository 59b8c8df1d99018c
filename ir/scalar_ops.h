/* ir/scalar_ops.h: the scalar semantics of every element-wise op, written once (SPEC §1).
 *
 * Each list below is an X-macro of X(ENUM, EXPR) entries: EXPR computes op IR_OP_<ENUM> on
 * one element from the operands a, b and c (those past the op's arity are 0). ir/scalar.c
 * expands the lists into the switch of ir_scalar_eval; the interpreter expands them into
 * one loop per op, so its hot loops inline EXPR and switch on the op once per node rather
 * than once per element. Which list an op is in follows its flags in ops.def:
 *   IR_SCALAR_FLOAT_OPS  float arithmetic and built-ins, in double (a, b, c: double)
 *   IR_SCALAR_INT_OPS    IR_OPF_NUMERIC ops on integers (a, b, c: int64_t, each already
 *                        wrapped to the node's dtype t; results wrap to t)
 *   IR_SCALAR_CMP_OPS    IR_OPF_CMP; the same EXPR for doubles and for integers
 *   IR_SCALAR_LOGIC_OPS  IR_OPF_LOGIC, on bools (int64_t 0/1)
 *   IR_SCALAR_PRED_OPS   IR_OPF_PRED, on a double, giving 0/1
 * WHERE and CAST are not lists: ir_scalar_eval and the interpreter pick and convert.
 * Integer arithmetic is done in uint64_t, where overflow is defined, then wrapped.
 */
#ifndef FUSEC_IR_SCALAR_OPS_H
#define FUSEC_IR_SCALAR_OPS_H

#include <math.h>

#include "ir.h"
#include "scalar.h"

/* uint64 -> int64 by value modulo 2^64 (no implementation-defined conversion), then
 * wrapped to the width of dtype t. */
static inline int64_t ir_scalar_wrap_u(uint64_t u, ir_dtype t) {
    int64_t v = u >= UINT64_C(0x8000000000000000) ? -(int64_t)(UINT64_MAX - u) - 1 : (int64_t)u;
    return ir_wrap_int(v, t);
}

/* Division by zero gives 0 on every target (never a trap); by -1 it is a negation, so
 * INT_MIN / -1 wraps to INT_MIN instead of overflowing. */
static inline int64_t ir_scalar_idiv(int64_t a, int64_t b, ir_dtype t) {
    if (b == 0) return 0;
    if (b == -1) return ir_scalar_wrap_u(0 - (uint64_t)a, t);
    return ir_wrap_int(a / b, t);
}

/* C's remainder; by 0 gives 0, and by -1 is always 0 (INT_MIN % -1 would overflow in C). */
static inline int64_t ir_scalar_imod(int64_t a, int64_t b, ir_dtype t) {
    if (b == 0 || b == -1) return 0;
    return ir_wrap_int(a % b, t);
}

/* clamp(x, lo, hi) is minimum(maximum(x, lo), hi), as for floats. */
static inline int64_t ir_scalar_iclamp(int64_t x, int64_t lo, int64_t hi) {
    int64_t m = lo > x ? lo : x;
    return hi < m ? hi : m;
}

/* numpy's minimum/maximum: a NaN operand wins (fmin/fmax would drop it). */
static inline double ir_scalar_fmin(double a, double b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return b < a ? b : a;
}

static inline double ir_scalar_fmax(double a, double b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return b > a ? b : a;
}

/* sign: NaN stays NaN; both zeros give +0. */
static inline double ir_scalar_sign(double a) {
    if (isnan(a)) return a;
    return a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0;
}

/* relu propagates NaN, and relu(-0.0) is +0.0. */
static inline double ir_scalar_relu(double a) {
    return a > 0 ? a : isnan(a) ? a : 0.0;
}

/* Round half to even, independent of the current rounding mode (nearbyint is not). */
static inline double ir_scalar_round_even(double x) {
    double r = floor(x);
    double d = x - r; /* exact: below 2^52 floor keeps all the integer bits */
    if (d > 0.5 || (d == 0.5 && fmod(r, 2.0) != 0.0)) r += 1.0;
    return r == 0.0 ? copysign(0.0, x) : r;
}

static inline double ir_scalar_sigmoid(double x) {
    /* never exp of a large positive number: no overflow to inf/inf */
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

#define IR_SCALAR_FLOAT_OPS(X)                                                                     \
    X(NEG, -a)                                                                                     \
    X(ADD, a + b)                                                                                  \
    X(SUB, a - b)                                                                                  \
    X(MUL, a *b)                                                                                   \
    X(DIV, a / b)                                                                                  \
    X(MOD, fmod(a, b))                                                                             \
    X(ABS, fabs(a))                                                                                \
    X(SIGN, ir_scalar_sign(a))                                                                     \
    X(MINIMUM, ir_scalar_fmin(a, b))                                                               \
    X(MAXIMUM, ir_scalar_fmax(a, b))                                                               \
    X(CLAMP, ir_scalar_fmin(ir_scalar_fmax(a, b), c))                                              \
    X(EXP, exp(a))                                                                                 \
    X(EXP2, exp2(a))                                                                               \
    X(EXPM1, expm1(a))                                                                             \
    X(LOG, log(a))                                                                                 \
    X(LOG2, log2(a))                                                                               \
    X(LOG10, log10(a))                                                                             \
    X(LOG1P, log1p(a))                                                                             \
    X(SQRT, sqrt(a))                                                                               \
    X(RSQRT, 1.0 / sqrt(a))                                                                        \
    X(SIN, sin(a))                                                                                 \
    X(COS, cos(a))                                                                                 \
    X(TAN, tan(a))                                                                                 \
    X(ASIN, asin(a))                                                                               \
    X(ACOS, acos(a))                                                                               \
    X(ATAN, atan(a))                                                                               \
    X(SINH, sinh(a))                                                                               \
    X(COSH, cosh(a))                                                                               \
    X(TANH, tanh(a))                                                                               \
    X(ASINH, asinh(a))                                                                             \
    X(ACOSH, acosh(a))                                                                             \
    X(ATANH, atanh(a))                                                                             \
    X(ERF, erf(a))                                                                                 \
    X(SIGMOID, ir_scalar_sigmoid(a))                                                               \
    X(RELU, ir_scalar_relu(a))                                                                     \
    X(FLOOR, floor(a))                                                                             \
    X(CEIL, ceil(a))                                                                               \
    X(ROUND, ir_scalar_round_even(a))                                                              \
    X(TRUNC, trunc(a))                                                                             \
    X(POW, pow(a, b))                                                                              \
    X(ATAN2, atan2(a, b))                                                                          \
    X(HYPOT, hypot(a, b))                                                                          \
    X(COPYSIGN, copysign(a, b))

#define IR_SCALAR_INT_OPS(X)                                                                       \
    X(NEG, ir_scalar_wrap_u(0 - (uint64_t)a, t))                                                   \
    X(ADD, ir_scalar_wrap_u((uint64_t)a + (uint64_t)b, t))                                         \
    X(SUB, ir_scalar_wrap_u((uint64_t)a - (uint64_t)b, t))                                         \
    X(MUL, ir_scalar_wrap_u((uint64_t)a *(uint64_t)b, t))                                          \
    X(DIV, ir_scalar_idiv(a, b, t))                                                                \
    X(MOD, ir_scalar_imod(a, b, t))                                                                \
    X(ABS, a < 0 ? ir_scalar_wrap_u(0 - (uint64_t)a, t) : a)                                       \
    X(SIGN, (a > 0) - (a < 0))                                                                     \
    X(MINIMUM, b < a ? b : a)                                                                      \
    X(MAXIMUM, b > a ? b : a)                                                                      \
    X(CLAMP, ir_scalar_iclamp(a, b, c))

#define IR_SCALAR_CMP_OPS(X)                                                                       \
    X(EQ, a == b)                                                                                  \
    X(NE, a != b)                                                                                  \
    X(LT, a < b)                                                                                   \
    X(LE, a <= b)                                                                                  \
    X(GT, a > b)                                                                                   \
    X(GE, a >= b)

#define IR_SCALAR_LOGIC_OPS(X)                                                                     \
    X(NOT, !a)                                                                                     \
    X(AND, a &&b)                                                                                  \
    X(OR, a || b)

#define IR_SCALAR_PRED_OPS(X)                                                                      \
    X(ISNAN, isnan(a) != 0)                                                                        \
    X(ISINF, isinf(a) != 0)

/* A cast of x from dtype `from` to dtype `to` (SPEC §1, docs/language.md): floats round to
 * the target's precision, floats to integers by ir_float_to_int (NaN 0, truncate,
 * saturate), integers to floats with one rounding, integers wrap, anything to bool != 0. */
static inline ir_scalar ir_scalar_cast(ir_scalar x, ir_dtype from, ir_dtype to) {
    ir_scalar r = {0, 0};
    if (ir_dtype_is_float(from) && ir_dtype_is_float(to))
        r.f = ir_round_to_dtype(x.f, to);
    else if (ir_dtype_is_float(from))
        r.i = ir_float_to_int(x.f, to);
    else if (ir_dtype_is_float(to))
        r.f = ir_scalar_int_to_float(x.i, to);
    else
        r.i = ir_wrap_int(x.i, to);
    return r;
}

#endif
