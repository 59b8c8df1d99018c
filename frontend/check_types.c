/* frontend/check_types.c: the dtype rules of the checker (SPEC §1, "Types and shapes").
 *
 * - Promotion of tensors is ir_dtype_promote. Literals, and expressions made only of
 *   literals, are weak: they are folded here, at check time, into a weak constant of kind
 *   bool, int (int64, wrapping) or float (double), and take the dtype of the tensor they
 *   meet (a weak int with bool gives i32, a weak float with an integer or bool gives f32).
 *   Alone, a weak bool is bool, a weak int i32 and a weak float f32.
 * - Folding follows the SPEC's semantics: integer arithmetic wraps in int64, integer
 *   division and remainder by zero give 0, INT64_MIN / -1 wraps and INT64_MIN % -1 is 0;
 *   floats are computed in double (the reference precision), NaN propagating through
 *   relu, minimum, maximum and clamp.
 * - A weak float becomes a CONST of its context dtype holding the double unrounded (a
 *   literal is never rounded to f16/bf16); an explicit cast rounds it, as a cast does, and
 *   its result is a tensor (no longer weak). A weak int that does not fit in i32 where it
 *   becomes i32 is an error rather than a silent wrap.
 * - A weak constant returned alone, or passed as an argument, takes the declared dtype when
 *   it would take it meeting a tensor of that dtype: 2 may be returned as f16 or i64 (not as
 *   bool), 2.5 as f64 but not as i32 (an error: cast explicitly).
 */
#include "check_internal.h"

#include <math.h>

ir_dtype check_wk_dtype(check_wkind wk) {
    switch (wk) {
    case CHECK_W_BOOL: return IR_BOOL;
    case CHECK_W_INT: return IR_I32;
    case CHECK_W_FLOAT: return IR_F32;
    }
    return IR_F32;
}

check_type check_type_of(const check_ctx *c, const check_val *v) {
    check_type t = {0, CHECK_W_BOOL, IR_BOOL};
    if (v->kind == CHECK_WEAK) {
        t.weak = 1;
        t.wk = v->wk;
        t.t = check_wk_dtype(v->wk);
    } else if (v->kind == CHECK_TENSOR) {
        t.t = c->f->nodes[v->ref].dtype;
    }
    return t;
}

/* Messages name a weak value by the dtype it would have alone. */
const char *check_type_name(const check_type *t) {
    return ir_dtypes[t->weak ? check_wk_dtype(t->wk) : t->t].name;
}

ir_dtype check_weak_meets(check_wkind wk, ir_dtype t) {
    switch (wk) {
    case CHECK_W_BOOL: return t;
    case CHECK_W_INT: return t == IR_BOOL ? IR_I32 : t;
    case CHECK_W_FLOAT: return ir_dtype_is_float(t) ? t : IR_F32;
    }
    return t;
}

check_type check_promote(const check_ctx *c, const check_val *v, int n) {
    check_type r = {1, CHECK_W_BOOL, IR_BOOL};
    int any_strong = 0, any_weak = 0;
    check_wkind wk = CHECK_W_BOOL;
    ir_dtype t = IR_BOOL;
    for (int i = 0; i < n; i++) {
        if (v[i].kind == CHECK_WEAK) {
            if (!any_weak || v[i].wk > wk) wk = v[i].wk;
            any_weak = 1;
        } else if (v[i].kind == CHECK_TENSOR) {
            ir_dtype vt = c->f->nodes[v[i].ref].dtype;
            t = any_strong ? ir_dtype_promote(t, vt) : vt;
            any_strong = 1;
        }
    }
    if (!any_strong) {
        r.wk = wk;
        r.t = check_wk_dtype(wk);
        return r;
    }
    r.weak = 0;
    r.t = any_weak ? check_weak_meets(wk, t) : t;
    return r;
}

static double weak_double(const check_val *v) {
    return v->wk == CHECK_W_FLOAT ? v->f : (double)v->i;
}

static check_val weak_int(int64_t i, src_loc loc) {
    check_val v = {CHECK_WEAK, CHECK_W_INT, i, 0, IR_NONE, 0, 0, loc};
    return v;
}

static check_val weak_bool(int b, src_loc loc) {
    check_val v = {CHECK_WEAK, CHECK_W_BOOL, b != 0, 0, IR_NONE, 0, 0, loc};
    return v;
}

static check_val weak_float(double f, src_loc loc) {
    check_val v = {CHECK_WEAK, CHECK_W_FLOAT, 0, f, IR_NONE, 0, 0, loc};
    return v;
}

check_val check_weak_to(const check_val *v, check_wkind wk) {
    if (v->wk == wk) return *v;
    switch (wk) {
    case CHECK_W_FLOAT: return weak_float(weak_double(v), v->loc);
    case CHECK_W_INT: return weak_int(v->i, v->loc); /* only bool widens to int */
    case CHECK_W_BOOL: break;
    }
    return weak_bool(v->wk == CHECK_W_FLOAT ? v->f != 0 : v->i != 0, v->loc);
}

ir_ref check_materialize(check_ctx *c, const check_val *v, ir_dtype t) {
    if (ir_dtype_is_float(t)) return ir_const_float(c->f, t, weak_double(v));
    if (v->wk == CHECK_W_FLOAT) /* callers promote first: cannot happen; stay defined */
        return ir_const_int(c->f, t, ir_float_to_int(v->f, t));
    if (t == IR_I32 && (v->i < INT32_MIN || v->i > INT32_MAX)) {
        check_error(c, v->loc, "integer constant %lld does not fit in i32", (long long)v->i);
        return IR_NONE;
    }
    return ir_const_int(c->f, t, t == IR_BOOL ? v->i != 0 : v->i);
}

ir_ref check_const_cast(check_ctx *c, const check_val *v, ir_dtype t) {
    if (ir_dtype_is_float(t)) return ir_const_float(c->f, t, ir_round_to_dtype(weak_double(v), t));
    if (v->wk == CHECK_W_FLOAT) return ir_const_int(c->f, t, ir_float_to_int(v->f, t));
    return ir_const_int(c->f, t, ir_wrap_int(v->i, t));
}

/* ---- folding ---------------------------------------------------------------------------- */

/* Integer arithmetic wraps: done in uint64_t, where overflow is defined. */
static int64_t wrap(uint64_t u) {
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(UINT64_MAX - u) - 1;
}

static int64_t int_div(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return wrap(0 - (uint64_t)a); /* INT64_MIN / -1 wraps to INT64_MIN */
    return a / b;
}

static int64_t int_mod(int64_t a, int64_t b) {
    if (b == 0 || b == -1) return 0;
    return a % b;
}

check_val check_fold_unary(ir_op op, const check_val *x) {
    if (op == IR_OP_NOT) return weak_bool(!x->i, x->loc);
    /* NEG of a number (bool was rejected) */
    if (x->wk == CHECK_W_FLOAT) return weak_float(-x->f, x->loc);
    return weak_int(wrap(0 - (uint64_t)x->i), x->loc);
}

static int cmp_holds(ir_op op, int c) {
    switch (op) {
    case IR_OP_EQ: return c == 0;
    case IR_OP_NE: return c != 0;
    case IR_OP_LT: return c < 0;
    case IR_OP_LE: return c <= 0;
    case IR_OP_GT: return c > 0;
    case IR_OP_GE: return c >= 0;
    default: return 0;
    }
}

check_val check_fold_binary(ir_op op, const check_val *l, const check_val *r) {
    src_loc loc = l->loc;
    if (op == IR_OP_AND) return weak_bool(l->i && r->i, loc);
    if (op == IR_OP_OR) return weak_bool(l->i || r->i, loc);
    check_wkind k = l->wk > r->wk ? l->wk : r->wk;
    if (ir_ops[op].flags & IR_OPF_CMP) {
        if (k == CHECK_W_FLOAT) {
            double a = weak_double(l), b = weak_double(r);
            /* every comparison with NaN is false, except != */
            if (isnan(a) || isnan(b)) return weak_bool(op == IR_OP_NE, loc);
            return weak_bool(cmp_holds(op, a < b ? -1 : a > b ? 1 : 0), loc);
        }
        return weak_bool(cmp_holds(op, l->i < r->i ? -1 : l->i > r->i ? 1 : 0), loc);
    }
    if (k == CHECK_W_FLOAT) {
        double a = weak_double(l), b = weak_double(r);
        switch (op) {
        case IR_OP_ADD: return weak_float(a + b, loc);
        case IR_OP_SUB: return weak_float(a - b, loc);
        case IR_OP_MUL: return weak_float(a * b, loc);
        case IR_OP_DIV: return weak_float(a / b, loc);
        case IR_OP_MOD: return weak_float(fmod(a, b), loc);
        default: break;
        }
        return weak_float(NAN, loc);
    }
    int64_t a = l->i, b = r->i;
    switch (op) {
    case IR_OP_ADD: return weak_int(wrap((uint64_t)a + (uint64_t)b), loc);
    case IR_OP_SUB: return weak_int(wrap((uint64_t)a - (uint64_t)b), loc);
    case IR_OP_MUL: return weak_int(wrap((uint64_t)a * (uint64_t)b), loc);
    case IR_OP_DIV: return weak_int(int_div(a, b), loc);
    case IR_OP_MOD: return weak_int(int_mod(a, b), loc);
    default: break;
    }
    return weak_int(0, loc);
}

/* minimum and maximum propagate NaN (as numpy), unlike fmin and fmax. */
static double nan_min(double a, double b) {
    if (isnan(a) || isnan(b)) return NAN;
    return a < b ? a : b;
}

static double nan_max(double a, double b) {
    if (isnan(a) || isnan(b)) return NAN;
    return a > b ? a : b;
}

static double float_fn(ir_op op, const double *x) {
    double a = x[0], b = x[1];
    switch (op) {
    case IR_OP_ABS: return fabs(a);
    case IR_OP_SIGN: return a > 0 ? 1.0 : a < 0 ? -1.0 : a; /* keeps 0, -0 and NaN */
    case IR_OP_EXP: return exp(a);
    case IR_OP_EXP2: return exp2(a);
    case IR_OP_EXPM1: return expm1(a);
    case IR_OP_LOG: return log(a);
    case IR_OP_LOG2: return log2(a);
    case IR_OP_LOG10: return log10(a);
    case IR_OP_LOG1P: return log1p(a);
    case IR_OP_SQRT: return sqrt(a);
    case IR_OP_RSQRT: return 1.0 / sqrt(a);
    case IR_OP_SIN: return sin(a);
    case IR_OP_COS: return cos(a);
    case IR_OP_TAN: return tan(a);
    case IR_OP_ASIN: return asin(a);
    case IR_OP_ACOS: return acos(a);
    case IR_OP_ATAN: return atan(a);
    case IR_OP_SINH: return sinh(a);
    case IR_OP_COSH: return cosh(a);
    case IR_OP_TANH: return tanh(a);
    case IR_OP_ASINH: return asinh(a);
    case IR_OP_ACOSH: return acosh(a);
    case IR_OP_ATANH: return atanh(a);
    case IR_OP_ERF: return erf(a);
    case IR_OP_SIGMOID: return 1.0 / (1.0 + exp(-a));
    case IR_OP_RELU: return isnan(a) ? a : a > 0 ? a : 0.0;
    case IR_OP_FLOOR: return floor(a);
    case IR_OP_CEIL: return ceil(a);
    case IR_OP_ROUND: return nearbyint(a); /* half to even in the default rounding mode */
    case IR_OP_TRUNC: return trunc(a);
    case IR_OP_POW: return pow(a, b);
    case IR_OP_ATAN2: return atan2(a, b);
    case IR_OP_HYPOT: return hypot(a, b);
    case IR_OP_COPYSIGN: return copysign(a, b);
    case IR_OP_MINIMUM: return nan_min(a, b);
    case IR_OP_MAXIMUM: return nan_max(a, b);
    case IR_OP_CLAMP: return nan_min(nan_max(a, b), x[2]);
    default: return NAN;
    }
}

static int64_t int_fn(ir_op op, const int64_t *x) {
    int64_t a = x[0], b = x[1];
    switch (op) {
    case IR_OP_ABS: return a < 0 ? wrap(0 - (uint64_t)a) : a;
    case IR_OP_SIGN: return (a > 0) - (a < 0);
    case IR_OP_MINIMUM: return a < b ? a : b;
    case IR_OP_MAXIMUM: return a > b ? a : b;
    case IR_OP_CLAMP: {
        int64_t m = a > b ? a : b;
        return m < x[2] ? m : x[2];
    }
    default: return 0;
    }
}

check_val check_fold_builtin(ir_op op, const check_val *args, int n) {
    src_loc loc = n > 0 ? args[0].loc : (src_loc){0, 0};
    unsigned flags = ir_ops[op].flags;
    if (flags & IR_OPF_SELECT) {
        check_wkind k = args[1].wk > args[2].wk ? args[1].wk : args[2].wk;
        check_val r = check_weak_to(&args[args[0].i ? 1 : 2], k);
        r.loc = loc;
        return r;
    }
    check_wkind k = CHECK_W_BOOL;
    for (int i = 0; i < n; i++)
        if (args[i].wk > k) k = args[i].wk;
    if ((flags & IR_OPF_NUMERIC) && k != CHECK_W_FLOAT) {
        int64_t x[3] = {0, 0, 0};
        for (int i = 0; i < n && i < 3; i++)
            x[i] = args[i].i;
        return weak_int(int_fn(op, x), loc);
    }
    double x[3] = {0, 0, 0};
    for (int i = 0; i < n && i < 3; i++)
        x[i] = weak_double(&args[i]);
    if (flags & IR_OPF_PRED) return weak_bool(op == IR_OP_ISNAN ? isnan(x[0]) : isinf(x[0]), loc);
    return weak_float(float_fn(op, x), loc);
}

const char *check_op_token(ir_op op) {
    switch (op) {
    case IR_OP_NEG: return "-";
    case IR_OP_NOT: return "!";
    case IR_OP_ADD: return "+";
    case IR_OP_SUB: return "-";
    case IR_OP_MUL: return "*";
    case IR_OP_DIV: return "/";
    case IR_OP_MOD: return "%";
    case IR_OP_EQ: return "==";
    case IR_OP_NE: return "!=";
    case IR_OP_LT: return "<";
    case IR_OP_LE: return "<=";
    case IR_OP_GT: return ">";
    case IR_OP_GE: return ">=";
    case IR_OP_AND: return "&&";
    case IR_OP_OR: return "||";
    default: return ir_ops[op].name;
    }
}
