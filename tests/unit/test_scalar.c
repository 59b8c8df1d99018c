/* tests/unit/test_scalar.c: the shared scalar evaluator (ir/scalar.h). Its edge cases are
 * pinned one by one (integer division, wrap-around, NaN rules, signed zeros, rounding,
 * conversions); then the three users are held to one semantics: constant folding through
 * the pass pipeline against the interpreter on random ops and operands, bit for bit, and
 * the front end's folding of weak literals against the interpreter on the same expression
 * over tensors. */
#include "frontend/frontend.h"
#include "ir/scalar.h"
#include "passes/passes.h"

#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int fold_cases, weak_cases; /* comparisons made, for the summary line */

static uint64_t bits(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static int same_bits(double a, double b) {
    return bits(a) == bits(b);
}

/* A NaN computed at run time, as the hardware makes it (0/0 is not folded by the compiler
 * through a volatile). */
static double runtime_nan(void) {
    volatile double z = 0.0;
    return z / z;
}

/* ---- one op on scalars ----------------------------------------------------------------- */

static ir_scalar F(double f) {
    ir_scalar s = {f, 0};
    return s;
}

static ir_scalar I(int64_t i) {
    ir_scalar s = {0, i};
    return s;
}

/* op with result and operand dtype t (comparisons: bool result) on up to three operands */
static ir_scalar ev(ir_op op, ir_dtype t, int n, ir_scalar a, ir_scalar b, ir_scalar c) {
    ir_scalar args[3] = {a, b, c}, r = {-1, -1};
    ir_dtype rt = (ir_ops[op].flags & (IR_OPF_CMP | IR_OPF_PRED)) ? IR_BOOL : t;
    int rc = ir_scalar_eval(op, rt, t, args, n, &r);
    CHECK_MSG(rc == 0, "%s on %s", ir_ops[op].name, ir_dtypes[t].name);
    return r;
}

static int64_t iop2(ir_op op, ir_dtype t, int64_t a, int64_t b) {
    return ev(op, t, 2, I(a), I(b), I(0)).i;
}

static double fop1(ir_op op, double a) {
    return ev(op, IR_F64, 1, F(a), F(0), F(0)).f;
}

static double fop2(ir_op op, double a, double b) {
    return ev(op, IR_F64, 2, F(a), F(b), F(0)).f;
}

static ir_scalar cast(ir_scalar x, ir_dtype from, ir_dtype to) {
    ir_scalar r = {-1, -1};
    CHECK(ir_scalar_eval(IR_OP_CAST, to, from, &x, 1, &r) == 0);
    return r;
}

static void test_int_edges(void) {
    /* truncating division and C's remainder; by zero gives 0, never a trap */
    CHECK(iop2(IR_OP_DIV, IR_I32, -7, 2) == -3 && iop2(IR_OP_MOD, IR_I32, -7, 3) == -1);
    CHECK(iop2(IR_OP_MOD, IR_I32, 7, -3) == 1);
    CHECK(iop2(IR_OP_DIV, IR_I32, 7, 0) == 0 && iop2(IR_OP_MOD, IR_I32, 7, 0) == 0);
    CHECK(iop2(IR_OP_DIV, IR_I64, INT64_MIN, 0) == 0 && iop2(IR_OP_MOD, IR_I64, -1, 0) == 0);
    /* INT_MIN / -1 wraps to INT_MIN, INT_MIN % -1 is 0, at both widths */
    CHECK(iop2(IR_OP_DIV, IR_I32, INT32_MIN, -1) == INT32_MIN);
    CHECK(iop2(IR_OP_MOD, IR_I32, INT32_MIN, -1) == 0);
    CHECK(iop2(IR_OP_DIV, IR_I64, INT64_MIN, -1) == INT64_MIN);
    CHECK(iop2(IR_OP_MOD, IR_I64, INT64_MIN, -1) == 0);
    /* wrap-around at the dtype's width */
    CHECK(iop2(IR_OP_ADD, IR_I32, INT32_MAX, 1) == INT32_MIN);
    CHECK(iop2(IR_OP_SUB, IR_I32, INT32_MIN, 1) == INT32_MAX);
    CHECK(iop2(IR_OP_MUL, IR_I32, 65536, 65536) == 0);
    CHECK(iop2(IR_OP_MUL, IR_I32, INT32_MIN, INT32_MIN) == 0);
    CHECK(iop2(IR_OP_ADD, IR_I64, INT32_MAX, 1) == (int64_t)INT32_MAX + 1);
    CHECK(iop2(IR_OP_ADD, IR_I64, INT64_MAX, 1) == INT64_MIN);
    CHECK(iop2(IR_OP_MUL, IR_I64, INT64_MIN, -1) == INT64_MIN);
    CHECK(ev(IR_OP_NEG, IR_I32, 1, I(INT32_MIN), I(0), I(0)).i == INT32_MIN);
    CHECK(ev(IR_OP_NEG, IR_I64, 1, I(INT64_MIN), I(0), I(0)).i == INT64_MIN);
    CHECK(ev(IR_OP_ABS, IR_I32, 1, I(INT32_MIN), I(0), I(0)).i == INT32_MIN);
    CHECK(ev(IR_OP_ABS, IR_I64, 1, I(-5), I(0), I(0)).i == 5);
    CHECK(ev(IR_OP_SIGN, IR_I64, 1, I(INT64_MIN), I(0), I(0)).i == -1);
    CHECK(ev(IR_OP_SIGN, IR_I32, 1, I(0), I(0), I(0)).i == 0);
    CHECK(iop2(IR_OP_MINIMUM, IR_I64, INT64_MIN, 3) == INT64_MIN);
    CHECK(iop2(IR_OP_MAXIMUM, IR_I32, -4, -9) == -4);
    /* clamp is minimum(maximum(x, lo), hi): with lo > hi, hi wins */
    CHECK(ev(IR_OP_CLAMP, IR_I32, 3, I(10), I(0), I(3)).i == 3);
    CHECK(ev(IR_OP_CLAMP, IR_I32, 3, I(-10), I(0), I(3)).i == 0);
    CHECK(ev(IR_OP_CLAMP, IR_I32, 3, I(1), I(5), I(2)).i == 2);
    /* comparisons of integers are exact, beyond 2^53 too */
    CHECK(iop2(IR_OP_LT, IR_I64, (INT64_C(1) << 53), (INT64_C(1) << 53) + 1) == 1);
    CHECK(iop2(IR_OP_EQ, IR_I64, INT64_MAX, INT64_MAX - 1) == 0);
    /* logic on bools */
    CHECK(ev(IR_OP_NOT, IR_BOOL, 1, I(0), I(0), I(0)).i == 1);
    CHECK(iop2(IR_OP_AND, IR_BOOL, 1, 0) == 0 && iop2(IR_OP_OR, IR_BOOL, 1, 0) == 1);
}

static void test_float_edges(void) {
    double nan = runtime_nan(), neg_nan = -fabs(nan), pos_nan = fabs(nan);
    /* minimum/maximum/clamp/relu propagate NaN, whichever operand holds it; the NaN that
     * comes out is that operand itself */
    CHECK(isnan(fop2(IR_OP_MINIMUM, nan, 1.0)) && isnan(fop2(IR_OP_MINIMUM, 1.0, nan)));
    CHECK(isnan(fop2(IR_OP_MAXIMUM, nan, 1.0)) && isnan(fop2(IR_OP_MAXIMUM, 1.0, nan)));
    CHECK(same_bits(fop2(IR_OP_MINIMUM, 1.0, neg_nan), neg_nan));
    CHECK(same_bits(fop2(IR_OP_MAXIMUM, pos_nan, 1.0), pos_nan));
    CHECK(fop2(IR_OP_MINIMUM, -1.0, 2.0) == -1.0 && fop2(IR_OP_MAXIMUM, -1.0, 2.0) == 2.0);
    CHECK(isnan(ev(IR_OP_CLAMP, IR_F64, 3, F(nan), F(0), F(1)).f));
    CHECK(isnan(ev(IR_OP_CLAMP, IR_F64, 3, F(0.5), F(nan), F(1)).f));
    CHECK(isnan(ev(IR_OP_CLAMP, IR_F64, 3, F(0.5), F(0), F(nan)).f));
    CHECK(ev(IR_OP_CLAMP, IR_F64, 3, F(7), F(0), F(1)).f == 1.0);
    CHECK(ev(IR_OP_CLAMP, IR_F64, 3, F(-INFINITY), F(0), F(1)).f == 0.0);
    CHECK(isnan(fop1(IR_OP_RELU, nan)));
    /* relu(-0.0) and relu of a negative are +0.0 */
    CHECK(same_bits(fop1(IR_OP_RELU, -0.0), 0.0) && same_bits(fop1(IR_OP_RELU, -3.0), 0.0));
    CHECK(fop1(IR_OP_RELU, 2.5) == 2.5 && fop1(IR_OP_RELU, INFINITY) == INFINITY);
    /* sign: NaN stays NaN, both zeros give +0 */
    CHECK(isnan(fop1(IR_OP_SIGN, nan)));
    CHECK(same_bits(fop1(IR_OP_SIGN, 0.0), 0.0) && same_bits(fop1(IR_OP_SIGN, -0.0), 0.0));
    CHECK(fop1(IR_OP_SIGN, -1e-300) == -1.0 && fop1(IR_OP_SIGN, INFINITY) == 1.0);
    /* round half to even, whatever the rounding mode, keeping the sign of a zero */
    for (int mode = 0; mode < 2; mode++) {
#ifdef FE_UPWARD
        if (mode == 1) fesetround(FE_UPWARD);
#endif
        CHECK(fop1(IR_OP_ROUND, 0.5) == 0.0 && fop1(IR_OP_ROUND, 1.5) == 2.0);
        CHECK(fop1(IR_OP_ROUND, 2.5) == 2.0 && fop1(IR_OP_ROUND, -2.5) == -2.0);
        CHECK(fop1(IR_OP_ROUND, 2.5000000000000004) == 3.0);
        CHECK(same_bits(fop1(IR_OP_ROUND, -0.5), -0.0) && same_bits(fop1(IR_OP_ROUND, -0.2), -0.0));
        CHECK(fop1(IR_OP_ROUND, 0x1p52 + 1) == 0x1p52 + 1 && isnan(fop1(IR_OP_ROUND, nan)));
        CHECK(fop1(IR_OP_ROUND, -INFINITY) == -INFINITY);
    }
    fesetround(FE_TONEAREST);
    /* float % is fmod: the sign of the dividend */
    CHECK(fop2(IR_OP_MOD, -7.5, 2.0) == -1.5 && fop2(IR_OP_MOD, 7.5, -2.0) == 1.5);
    CHECK(same_bits(fop2(IR_OP_MOD, -0.0, 3.0), -0.0) &&
          same_bits(fop2(IR_OP_MOD, -4.0, 2.0), -0.0));
    CHECK(isnan(fop2(IR_OP_MOD, 1.0, 0.0)) && isnan(fop2(IR_OP_MOD, INFINITY, 1.0)));
    CHECK(fop2(IR_OP_MOD, 5.0, INFINITY) == 5.0);
    /* division by zero: IEEE */
    CHECK(fop2(IR_OP_DIV, 1.0, -0.0) == -INFINITY && isnan(fop2(IR_OP_DIV, 0.0, 0.0)));
    /* comparisons with NaN are false, but != */
    CHECK(ev(IR_OP_EQ, IR_F64, 2, F(nan), F(nan), F(0)).i == 0);
    CHECK(ev(IR_OP_NE, IR_F64, 2, F(nan), F(nan), F(0)).i == 1);
    CHECK(ev(IR_OP_GE, IR_F64, 2, F(nan), F(1), F(0)).i == 0);
    CHECK(ev(IR_OP_EQ, IR_F64, 2, F(-0.0), F(0.0), F(0)).i == 1);
    CHECK(ev(IR_OP_ISNAN, IR_F64, 1, F(nan), F(0), F(0)).i == 1);
    CHECK(ev(IR_OP_ISINF, IR_F64, 1, F(-INFINITY), F(0), F(0)).i == 1);
    CHECK(ev(IR_OP_ISINF, IR_F64, 1, F(nan), F(0), F(0)).i == 0);
    /* sigmoid: no inf/inf at either end */
    CHECK(fop1(IR_OP_SIGMOID, 800.0) == 1.0 && fop1(IR_OP_SIGMOID, -800.0) >= 0.0);
    CHECK(fop1(IR_OP_SIGMOID, 0.0) == 0.5 && isnan(fop1(IR_OP_SIGMOID, nan)));
    CHECK(fop1(IR_OP_RSQRT, 0.0) == INFINITY && fop1(IR_OP_RSQRT, -0.0) == -INFINITY);
    /* where picks without converting */
    CHECK(same_bits(ev(IR_OP_WHERE, IR_F64, 3, I(1), F(-0.0), F(2)).f, -0.0));
    ir_scalar w[3] = {I(0), I(5), I(-6)}, r;
    CHECK(ir_scalar_eval(IR_OP_WHERE, IR_I32, IR_BOOL, w, 3, &r) == 0 && r.i == -6 && r.f == 0);
}

static void test_casts(void) {
    double nan = runtime_nan();
    /* float -> int: NaN 0, truncation, saturation (2^63 is the case a plain C conversion
     * gets wrong: it is just out of range) */
    CHECK(cast(F(-2.9), IR_F64, IR_I32).i == -2 && cast(F(2.9), IR_F32, IR_I64).i == 2);
    CHECK(cast(F(nan), IR_F64, IR_I32).i == 0 && cast(F(nan), IR_F64, IR_I64).i == 0);
    CHECK(cast(F(3e9), IR_F64, IR_I32).i == INT32_MAX);
    CHECK(cast(F(-3e9), IR_F64, IR_I32).i == INT32_MIN);
    CHECK(cast(F(2147483647.9), IR_F64, IR_I32).i == INT32_MAX);
    CHECK(cast(F(-2147483648.9), IR_F64, IR_I32).i == INT32_MIN);
    CHECK(cast(F(0x1p63), IR_F64, IR_I64).i == INT64_MAX);
    CHECK(cast(F(-0x1p63), IR_F64, IR_I64).i == INT64_MIN);
    CHECK(cast(F(1e300), IR_F64, IR_I64).i == INT64_MAX);
    CHECK(cast(F(INFINITY), IR_F32, IR_I64).i == INT64_MAX);
    CHECK(cast(F(-INFINITY), IR_F16, IR_I32).i == INT32_MIN);
    CHECK(cast(F(0x1p62), IR_F64, IR_I64).i == (INT64_C(1) << 62));
    /* anything to bool is != 0, NaN included; integers do not wrap to bool by their low bits */
    CHECK(cast(F(nan), IR_F64, IR_BOOL).i == 1 && cast(F(-0.0), IR_F64, IR_BOOL).i == 0);
    CHECK(cast(F(0.25), IR_F16, IR_BOOL).i == 1);
    CHECK(cast(I(INT64_C(1) << 32), IR_I64, IR_BOOL).i == 1 && cast(I(0), IR_I32, IR_BOOL).i == 0);
    CHECK(cast(I(-2), IR_I32, IR_BOOL).i == 1);
    /* integers wrap to a narrower dtype */
    CHECK(cast(I((INT64_C(1) << 32) + 5), IR_I64, IR_I32).i == 5);
    CHECK(cast(I(INT64_C(0x80000000)), IR_I64, IR_I32).i == INT32_MIN);
    CHECK(cast(I(1), IR_BOOL, IR_I64).i == 1);
    /* integers to floats round once: 2^60 + 2^52 + 1 is past bf16's halfway point */
    int64_t big = (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1;
    CHECK(cast(I(big), IR_I64, IR_BF16).f == 0x1p60 + 0x1p53);
    CHECK(cast(I(big - 1), IR_I64, IR_BF16).f == 0x1p60); /* the tie goes to even */
    CHECK(cast(I(-big), IR_I64, IR_BF16).f == -(0x1p60 + 0x1p53));
    CHECK(cast(I(INT64_MIN), IR_I64, IR_F16).f == -INFINITY);
    CHECK(cast(I(16777217), IR_I32, IR_F32).f == 16777216.0);
    CHECK(cast(I((INT64_C(1) << 53) + 1), IR_I64, IR_F64).f == 0x1p53);
    CHECK(cast(I(1), IR_BOOL, IR_F16).f == 1.0);
    CHECK(ir_scalar_int_to_float(-3, IR_F16) == -3.0);
    /* floats round to the target's precision; f64 keeps the value */
    CHECK(cast(F(0.1), IR_F64, IR_F16).f == ir_f16_to_double(0x2e66));
    CHECK(cast(F(0.1), IR_F64, IR_BF16).f == ir_bf16_to_double(0x3dcd));
    CHECK(cast(F(0.1), IR_F16, IR_F32).f == (double)0.1f);
    CHECK(cast(F(0.1), IR_F16, IR_F64).f == 0.1);
    CHECK(cast(F(1e300), IR_F64, IR_F32).f == INFINITY &&
          cast(F(7e4), IR_F32, IR_F16).f == INFINITY);
    CHECK(isnan(cast(F(nan), IR_F64, IR_BF16).f));
    CHECK(same_bits(cast(F(-0.0), IR_F64, IR_F16).f, -0.0));
}

/* f16/bf16 values are computed unrounded; only an explicit cast rounds (SPEC §1) */
static void test_16bit_consts(void) {
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = ir_module_new(&a);
    ir_func *f = ir_func_new(m, "k");
    ir_ref h = ir_const_float(f, IR_F16, 0.1), b = ir_const_float(f, IR_BF16, 0.1);
    ir_ref i = ir_const_int(f, IR_I32, 7);
    CHECK(ir_scalar_of_const(&f->nodes[h]).f == 0.1 && ir_scalar_of_const(&f->nodes[b]).f == 0.1);
    CHECK(ir_scalar_of_const(&f->nodes[i]).i == 7 && ir_scalar_of_const(&f->nodes[i]).f == 0);
    /* a CONST holding more than its dtype does (as a pass may leave it) reads wrapped */
    f->nodes[i].value.i = (INT64_C(1) << 32) - 1;
    CHECK(ir_scalar_of_const(&f->nodes[i]).i == -1);
    ir_scalar x = ir_scalar_of_const(&f->nodes[h]), r;
    ir_scalar xs[2] = {x, x};
    CHECK(ir_scalar_eval(IR_OP_ADD, IR_F16, IR_F16, xs, 2, &r) == 0 && r.f == 0.2);
    CHECK(ir_scalar_eval(IR_OP_MUL, IR_BF16, IR_BF16, xs, 2, &r) == 0 && r.f == 0.1 * 0.1);
    CHECK(ir_scalar_eval(IR_OP_CAST, IR_F16, IR_F32, &x, 1, &r) == 0 &&
          r.f == ir_round_to_dtype(0.1, IR_F16) && r.f != 0.1);
    ir_arena_free(&a);
}

/* What the evaluator refuses, and that it knows every element-wise op of ops.def. */
static void test_coverage(void) {
    ir_scalar x[3] = {{1, 1}, {2, 2}, {3, 3}}, r = {0, 0};
    CHECK(ir_scalar_eval(IR_OP_EXP, IR_I32, IR_I32, x, 1, &r) == -1);
    CHECK(ir_scalar_eval(IR_OP_SUM, IR_F32, IR_F32, x, 1, &r) == -1);
    CHECK(ir_scalar_eval(IR_OP_CONST, IR_F32, IR_F32, x, 0, &r) == -1);
    CHECK(ir_scalar_eval(IR_OP_ADD, IR_F32, IR_F32, x, 1, &r) == -1);
    CHECK(ir_scalar_eval(IR_OP_ADD, IR_F32, IR_F32, NULL, 2, &r) == -1);
    CHECK(ir_scalar_eval(IR_OP_COUNT, IR_F32, IR_F32, x, 2, &r) == -1);
    CHECK(ir_scalar_eval(IR_OP_ADD, IR_DTYPE_COUNT, IR_F32, x, 2, &r) == -1);
    /* rand's value depends on its stream and position too, not on its operands alone: the
     * evaluator refuses it, so fold leaves it alone */
    CHECK(ir_scalar_eval(IR_OP_RAND, IR_F32, IR_I64, x, 2, &r) == -1);
    for (int op = 0; op < IR_OP_COUNT; op++) {
        const ir_op_info *oi = &ir_ops[op];
        if (oi->cls != IR_CLASS_EW && oi->cls != IR_CLASS_CAST) continue;
        if (oi->flags & (IR_OPF_RANDOM | IR_OPF_GRADREQ)) continue;
        unsigned fl = oi->flags;
        ir_dtype t = (fl & IR_OPF_LOGIC) ? IR_BOOL : IR_F32;
        ir_dtype rt = (fl & (IR_OPF_CMP | IR_OPF_LOGIC | IR_OPF_PRED)) ? IR_BOOL : t;
        CHECK_MSG(ir_scalar_eval((ir_op)op, rt, t, x, oi->arity, &r) == 0, "%s", oi->name);
        if (fl & (IR_OPF_NUMERIC | IR_OPF_CMP))
            CHECK_MSG(ir_scalar_eval((ir_op)op, (fl & IR_OPF_CMP) ? IR_BOOL : IR_I64, IR_I64, x,
                                     oi->arity, &r) == 0,
                      "%s on i64", oi->name);
    }
}

/* ---- fold against the interpreter ---------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void) {
    /* xorshift64*: fixed seed, so a failure reproduces */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

static int pick(int n) {
    return (int)(rnd() % (uint64_t)n);
}

/* Storage of one element of dtype t, as an input tensor holds it. */
typedef union elem {
    uint8_t b;
    int32_t i32;
    int64_t i64;
    uint16_t h;
    float f32;
    double f64;
} elem;

static elem store(ir_dtype t, ir_scalar v) {
    elem e;
    memset(&e, 0, sizeof e);
    switch (t) {
    case IR_BOOL: e.b = v.i != 0; break;
    case IR_I32: e.i32 = (int32_t)ir_wrap_int(v.i, IR_I32); break;
    case IR_I64: e.i64 = v.i; break;
    case IR_F16: e.h = ir_f16_from_double(v.f); break;
    case IR_BF16: e.h = ir_bf16_from_double(v.f); break;
    case IR_F32: e.f32 = (float)v.f; break;
    default: e.f64 = v.f; break;
    }
    return e;
}

static ir_scalar load(ir_dtype t, const elem *e) {
    ir_scalar v = {0, 0};
    switch (t) {
    case IR_BOOL: v.i = e->b; break;
    case IR_I32: v.i = e->i32; break;
    case IR_I64: v.i = e->i64; break;
    case IR_F16: v.f = ir_f16_to_double(e->h); break;
    case IR_BF16: v.f = ir_bf16_to_double(e->h); break;
    case IR_F32: v.f = e->f32; break;
    default: v.f = e->f64; break;
    }
    return v;
}

/* A random operand of dtype t that the dtype's storage holds exactly (so a CONST and an
 * INPUT of it are the same value): edge cases half of the time. */
static ir_scalar random_value(ir_dtype t) {
    static const double fl[] = {0.0,     -0.0,  1.0,   -1.0,   0.5,      -0.5,     1.5,
                                2.5,     -2.5,  3.0,   -7.25,  0.1,      1e-8,     65504,
                                7e4,     3e9,   -3e9,  1e10,   9.3e18,   -9.3e18,  0x1p63,
                                -0x1p63, 1e300, 800.0, -800.0, INFINITY, -INFINITY};
    static const int64_t in[] = {0,
                                 1,
                                 -1,
                                 2,
                                 -2,
                                 3,
                                 7,
                                 -7,
                                 5,
                                 INT32_MIN,
                                 INT32_MAX,
                                 INT64_MIN,
                                 INT64_MAX,
                                 INT64_C(1) << 32,
                                 (INT64_C(1) << 53) + 1,
                                 (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1};
    ir_scalar v = {0, 0};
    int edge = pick(2);
    if (ir_dtype_is_float(t)) {
        int n = (int)(sizeof fl / sizeof fl[0]);
        if (edge)
            v.f = pick(n + 2) < n ? fl[pick(n)] : (pick(2) ? runtime_nan() : -runtime_nan());
        else
            v.f = ((double)(rnd() >> 11) / 0x1p53 - 0.5) * (pick(2) ? 20.0 : 2e6);
    } else {
        int n = (int)(sizeof in / sizeof in[0]);
        v.i = edge ? in[pick(n)] : (int64_t)(rnd() % 2001) - 1000;
        if (!edge && pick(4) == 0) v.i = (int64_t)(rnd() >> 1) * (pick(2) ? 1 : -1);
    }
    elem e = store(t, v);
    return load(t, &e);
}

/* The op's result dtype and its operands' dtypes, as the verifier admits them. */
static void random_signature(ir_op op, ir_dtype *rt, ir_dtype *at) {
    static const ir_dtype all[] = {IR_BOOL, IR_I32, IR_I64, IR_F16, IR_BF16, IR_F32, IR_F64};
    static const ir_dtype fl[] = {IR_F16, IR_BF16, IR_F32, IR_F64};
    unsigned f = ir_ops[op].flags;
    ir_dtype t = all[pick(7)];
    if (f & IR_OPF_FLOATFN) t = fl[pick(4)];
    if (f & IR_OPF_LOGIC) t = IR_BOOL;
    *rt = t;
    at[0] = at[1] = at[2] = t;
    if (f & (IR_OPF_CMP | IR_OPF_LOGIC | IR_OPF_PRED)) *rt = IR_BOOL;
    if (f & IR_OPF_SELECT) at[0] = IR_BOOL;
    if (op == IR_OP_CAST) *rt = all[pick(7)];
}

/* The widest dtype of v's kind: a cast to it keeps the value exactly, so the output shows
 * the unrounded result. */
static ir_dtype widest(ir_dtype t) {
    return ir_dtype_is_float(t) ? IR_F64 : t == IR_BOOL ? IR_BOOL : IR_I64;
}

/* op on `vals`: with CONST operands (consts), or with INPUT operands (inputs). */
static ir_func *build(ir_module *m, ir_op op, ir_dtype rt, const ir_dtype *at,
                      const ir_scalar *vals, int inputs) {
    ir_func *f = ir_func_new(m, inputs ? "in" : "k");
    ir_shape s0 = {0};
    ir_ref args[3];
    const char *names[3] = {"a", "b", "c"};
    int n = ir_ops[op].arity;
    for (int i = 0; i < n; i++) {
        if (inputs)
            args[i] = ir_add_input(f, names[i], at[i], &s0);
        else if (ir_dtype_is_float(at[i]))
            args[i] = ir_const_float(f, at[i], vals[i].f);
        else
            args[i] = ir_const_int(f, at[i], vals[i].i);
    }
    ir_ref r = op == IR_OP_CAST ? ir_cast(f, args[0], rt) : ir_ew(f, op, rt, &s0, n, args);
    r = ir_cast(f, r, widest(rt));
    ir_add_output(f, r, widest(rt), &s0);
    return f;
}

/* Interprets f (rank-0 inputs holding vals) into *out; 0 on success. */
static int interp(ir_func *f, const ir_dtype *at, const ir_scalar *vals, elem *out) {
    elem in[3];
    ir_tensor tin[3], tout;
    memset(tin, 0, sizeof tin);
    memset(&tout, 0, sizeof tout);
    for (int i = 0; i < f->nparams; i++) {
        in[i] = store(at[i], vals[i]);
        tin[i].dtype = at[i];
        tin[i].data = &in[i];
    }
    memset(out, 0, sizeof *out);
    tout.dtype = f->outputs[0].dtype;
    tout.data = out;
    char err[256];
    int rc = ir_interp_run(f, tin, &tout, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    return rc;
}

static void test_fold_matches_interp(void) {
    ir_op ops[IR_OP_COUNT];
    int nops = 0;
    for (int op = 0; op < IR_OP_COUNT; op++)
        if ((ir_ops[op].cls == IR_CLASS_EW || ir_ops[op].cls == IR_CLASS_CAST) &&
            !(ir_ops[op].flags & (IR_OPF_RANDOM | IR_OPF_GRADREQ))) /* (no functions of
                                                                     * their operands) */
            ops[nops++] = op;
    int mismatches = 0;
    for (int iter = 0; iter < 6000 && mismatches < 10; iter++) {
        ir_op op = ops[pick(nops)];
        ir_dtype rt, at[3];
        random_signature(op, &rt, at);
        ir_scalar vals[3];
        for (int i = 0; i < 3; i++)
            vals[i] = random_value(at[i]);
        ir_arena a;
        ir_arena_init(&a);
        ir_module *m = ir_module_new(&a);
        ir_func *fk = build(m, op, rt, at, vals, 0), *fi = build(m, op, rt, at, vals, 1);
        ir_func *fu = ir_func_clone(&a, fk); /* the constants, not folded */
        char err[256] = "";
        pass_options o = {0};
        int rc = pass_run_pipeline(fk, &o, err, sizeof err);
        CHECK_MSG(rc == 0, "%s", err);
        /* folded: the output is the constant itself, or the copy kernel of it */
        const ir_node *v = &fk->nodes[fk->nodes[fk->outputs[0].node].args[0]];
        if (v->op == IR_OP_CAST) v = &fk->nodes[v->args[0]];
        CHECK_MSG(v->op == IR_OP_CONST, "%s was not folded", ir_ops[op].name);
        elem ek, ei, eu;
        fold_cases++;
        if (rc || interp(fk, at, vals, &ek) || interp(fi, at, vals, &ei) ||
            interp(fu, at, vals, &eu)) {
            mismatches++;
        } else if (memcmp(&ek, &ei, sizeof ek) != 0 || memcmp(&eu, &ei, sizeof eu) != 0) {
            mismatches++;
            fprintf(stderr,
                    "fold/interp mismatch: %s -> %s on %s (%.17g|%lld, %.17g|%lld, %.17g|%lld): "
                    "folded %016llx, unfolded %016llx, interpreted %016llx\n",
                    ir_ops[op].name, ir_dtypes[rt].name, ir_dtypes[at[0]].name, vals[0].f,
                    (long long)vals[0].i, vals[1].f, (long long)vals[1].i, vals[2].f,
                    (long long)vals[2].i, (unsigned long long)ek.i64, (unsigned long long)eu.i64,
                    (unsigned long long)ei.i64);
        }
        ir_arena_free(&a);
    }
    CHECK(mismatches == 0);
}

/* ---- the front end's weak literals against the interpreter ---------------------------- */

/* Compiles src and interprets its function "f" on rank-0 inputs; the output element (of
 * dtype `want`) into *out. 0 on success. */
static int run_source(const char *src, const elem *in, ir_dtype want, elem *out) {
    ir_arena a;
    ir_arena_init(&a);
    size_t len = strlen(src);
    char *copy = ir_arena_alloc(&a, len + 1);
    memcpy(copy, src, len + 1);
    diag_ctx d;
    diag_init(&d, &a, "t.fuse", copy, len);
    ast_file *file = NULL;
    ir_module *m = NULL;
    int rc = -1;
    if (parse_file(&d, &file) == 0 && check_file(&d, file, &m) == 0) {
        ir_func *f = ir_module_find(m, "f");
        ir_tensor tin[3], tout;
        memset(tin, 0, sizeof tin);
        memset(&tout, 0, sizeof tout);
        for (int i = 0; f && i < f->nparams && i < 3; i++) {
            tin[i].dtype = f->params[i].dtype;
            tin[i].data = (void *)&in[i];
        }
        memset(out, 0, sizeof *out);
        tout.dtype = want;
        tout.data = out;
        char err[256] = "";
        if (f && f->noutputs == 1 && f->outputs[0].dtype == want)
            rc = ir_interp_run(f, tin, &tout, err, sizeof err);
        if (rc) fprintf(stderr, "%s: %s\n", src, err);
    } else {
        fprintf(stderr, "%s:\n%s", src, d.out.data ? d.out.data : "");
    }
    ir_arena_free(&a);
    return rc;
}

typedef struct lit {
    const char *text; /* a weak literal expression */
    double f;         /* its value as a float */
    int64_t i;        /* its value as an integer (int literals only) */
} lit;

/* `weak` (no parameters) and `tensor` (parameters a, b, c of the literals' values) compute
 * the same thing and must agree bit for bit. */
static void same_result(const char *weak, const char *tensor, const elem *in, ir_dtype t) {
    elem w, x;
    weak_cases++;
    int rw = run_source(weak, NULL, t, &w), rx = run_source(tensor, in, t, &x);
    CHECK_MSG(rw == 0 && rx == 0, "%s | %s", weak, tensor);
    if (rw == 0 && rx == 0 && memcmp(&w, &x, sizeof w) != 0) {
        fprintf(stderr, "weak fold differs: %s gives %016llx, %s gives %016llx\n", weak,
                (unsigned long long)w.i64, tensor, (unsigned long long)x.i64);
        failures++;
    }
}

/* x OP y (an operator, or a function's name) on two weak literals against the same on
 * parameters of dtype t (f64 or i64). The float forms multiply by 1.0 first, so that two
 * integer literals compute as floats too. */
static void binary_case(const char *op, const lit *x, const lit *y, ir_dtype t) {
    char ws[512], ts[512];
    elem args[2];
    int is_fn = op[0] >= 'a' && op[0] <= 'z';
    ir_dtype rt = strchr("<=!>", op[0]) ? IR_BOOL : t;
    const char *tn = ir_dtypes[t].name, *rn = ir_dtypes[rt].name;
    const char *one = t == IR_F64 ? "1.0 * " : "";
    if (is_fn) {
        snprintf(ws, sizeof ws, "fn f() -> %s[] { return %s(%s, %s); }", rn, op, x->text, y->text);
        snprintf(ts, sizeof ts, "fn f(a: %s[], b: %s[]) -> %s[] { return %s(a, b); }", tn, tn, rn,
                 op);
    } else {
        snprintf(ws, sizeof ws, "fn f() -> %s[] { return %s%s %s %s; }", rn, one, x->text, op,
                 y->text);
        snprintf(ts, sizeof ts, "fn f(a: %s[], b: %s[]) -> %s[] { return %sa %s b; }", tn, tn, rn,
                 one, op);
    }
    if (t == IR_F64) {
        args[0].f64 = x->f;
        args[1].f64 = y->f;
    } else {
        args[0].i64 = x->i;
        args[1].i64 = y->i;
    }
    same_result(ws, ts, args, rt);
}

static void test_weak_matches_interp(void) {
    double nan = runtime_nan();
    const lit fl[] = {
        {"0.0", 0.0, 0},
        {"-0.0", -0.0, 0},
        {"0.5", 0.5, 0},
        {"-2.5", -2.5, 0},
        {"1e300", 1e300, 0},
        {"-800.0", -800.0, 0},
        {"(0.0 / 0.0)", nan, 0},
        {"(1.0 / 0.0)", INFINITY, 0},
        {"(-1.0 / 0.0)", -INFINITY, 0},
        {"3", 3.0, 3},
        {"-7", -7.0, -7},
        {"0.1", 0.1, 0},
    };
    const lit in[] = {
        {"7", 7, 7},
        {"-7", -7, -7},
        {"0", 0, 0},
        {"-1", -1, -1},
        {"3", 3, 3},
        {"9223372036854775807", 0, INT64_MAX},
        {"(-9223372036854775807 - 1)", 0, INT64_MIN},
        {"2147483648", 0, INT64_C(2147483648)},
    };
    enum { NF = sizeof fl / sizeof fl[0], NI = sizeof in / sizeof in[0] };
    char ws[512], ts[512];
    elem args[3];
    /* unary float functions, and the numeric ones on floats */
    for (int op = 0; op < IR_OP_COUNT; op++) {
        unsigned f = ir_ops[op].flags;
        if (!(f & IR_OPF_BUILTIN) || ir_ops[op].cls != IR_CLASS_EW || ir_ops[op].arity != 1)
            continue;
        ir_dtype rt = (f & IR_OPF_PRED) ? IR_BOOL : IR_F64;
        const char *rn = ir_dtypes[rt].name, *name = ir_ops[op].name;
        for (int k = 0; k < NF; k++) {
            snprintf(ws, sizeof ws, "fn f() -> %s[] { return %s(%s); }", rn, name, fl[k].text);
            snprintf(ts, sizeof ts, "fn f(a: f64[]) -> %s[] { return %s(a); }", rn, name);
            args[0].f64 = fl[k].f;
            same_result(ws, ts, args, rt);
        }
    }
    /* binary operators and functions on floats, and on integers */
    static const char *fbin[] = {"+",        "-",       "*",   "/",     "%",
                                 "minimum",  "maximum", "pow", "atan2", "hypot",
                                 "copysign", "<",       "==",  "!=",    ">="};
    for (size_t o = 0; o < sizeof fbin / sizeof fbin[0]; o++)
        for (int k = 0; k < NF; k++)
            for (int l = 0; l < NF; l += 1 + (k % 2))
                binary_case(fbin[o], &fl[k], &fl[l], IR_F64);
    static const char *ibin[] = {"+", "-", "*", "/", "%", "minimum", "maximum", "<", "=="};
    for (size_t o = 0; o < sizeof ibin / sizeof ibin[0]; o++)
        for (int k = 0; k < NI; k++)
            for (int l = 0; l < NI; l++)
                binary_case(ibin[o], &in[k], &in[l], IR_I64);
    /* unary integer ops, clamp, and casts of weak literals (a cast rounds once) */
    for (int k = 0; k < NI; k++) {
        static const char *iun[] = {"-", "abs", "sign"};
        for (int o = 0; o < 3; o++) {
            snprintf(ws, sizeof ws, "fn f() -> i64[] { return %s(%s); }", iun[o], in[k].text);
            snprintf(ts, sizeof ts, "fn f(a: i64[]) -> i64[] { return %s(a); }", iun[o]);
            args[0].i64 = in[k].i;
            same_result(ws, ts, args, IR_I64);
        }
        snprintf(ws, sizeof ws, "fn f() -> i64[] { return clamp(%s, -7, 3); }", in[k].text);
        snprintf(ts, sizeof ts,
                 "fn f(a: i64[], b: i64[], c: i64[]) -> i64[] { return clamp(a, b, c); }");
        args[0].i64 = in[k].i;
        args[1].i64 = -7;
        args[2].i64 = 3;
        same_result(ws, ts, args, IR_I64);
    }
    const char *big[] = {"1157425104234217473", "1152921504606846977", "9007199254740993",
                         "-1157425104234217473", "16777217"};
    const int64_t bigv[] = {INT64_C(1157425104234217473), INT64_C(1152921504606846977),
                            INT64_C(9007199254740993), -INT64_C(1157425104234217473), 16777217};
    static const char *fdt[] = {"bf16", "f16", "f32"};
    for (int k = 0; k < 5; k++) {
        for (int d = 0; d < 3; d++) {
            /* bf16 and f16 outputs go out as 16-bit patterns, f32 as a float */
            ir_dtype t = d == 0 ? IR_BF16 : d == 1 ? IR_F16 : IR_F32;
            snprintf(ws, sizeof ws, "fn f() -> %s[] { return %s(%s); }", fdt[d], fdt[d], big[k]);
            snprintf(ts, sizeof ts, "fn f(a: i64[]) -> %s[] { return %s(a); }", fdt[d], fdt[d]);
            args[0].i64 = bigv[k];
            same_result(ws, ts, args, t);
        }
    }
    for (int k = 0; k < NF; k++) {
        static const char *idt[] = {"i32", "i64", "bool"};
        static const ir_dtype idv[] = {IR_I32, IR_I64, IR_BOOL};
        for (int d = 0; d < 3; d++) {
            snprintf(ws, sizeof ws, "fn f() -> %s[] { return %s(%s * 1e10); }", idt[d], idt[d],
                     fl[k].text);
            snprintf(ts, sizeof ts, "fn f(a: f64[]) -> %s[] { return %s(a * 1e10); }", idt[d],
                     idt[d]);
            args[0].f64 = fl[k].f;
            same_result(ws, ts, args, idv[d]);
        }
    }
}

int main(void) {
    test_int_edges();
    test_float_edges();
    test_casts();
    test_16bit_consts();
    test_coverage();
    test_fold_matches_interp();
    test_weak_matches_interp();
    if (failures) {
        fprintf(stderr, "test_scalar: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_scalar: ok (%d folds, %d weak expressions against the interpreter)\n", fold_cases,
           weak_cases);
    return 0;
}
