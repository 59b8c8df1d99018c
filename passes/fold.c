/* passes/fold.c: constant folding.
 *
 * An element-wise op or cast of rank 0 whose operands are all constants becomes a constant,
 * computed with exactly the reference interpreter's semantics (ir/interp.c, SPEC §1):
 * floats in double and NOT rounded to the node's dtype (within a kernel an f16 or f32
 * intermediate is not rounded either; a CONST of a float dtype holds the unrounded value),
 * except a cast, which rounds to its dtype like every cast; integers wrap at their width,
 * x / 0 and x % 0 give 0, INT_MIN / -1 wraps and INT_MIN % -1 is 0. So folding never changes
 * what the interpreter computes, bit for bit.
 */
#include "passes/rewrite.h"

#include <math.h>

/* ---- scalar semantics: the same as ir/interp.c ----------------------------------------- */

static int64_t wrap_u(uint64_t u, ir_dtype t) {
    int64_t v = u >= UINT64_C(0x8000000000000000) ? -(int64_t)(UINT64_MAX - u) - 1 : (int64_t)u;
    return ir_wrap_int(v, t);
}

static double fmin_nan(double a, double b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return b < a ? b : a;
}

static double fmax_nan(double a, double b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return b > a ? b : a;
}

static double round_even(double x) {
    double r = floor(x);
    double d = x - r;
    if (d > 0.5 || (d == 0.5 && fmod(r, 2.0) != 0.0)) r += 1.0;
    return r == 0.0 ? copysign(0.0, x) : r;
}

static double sigmoid(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* 1 and *out set when op is a float op this pass knows. */
static int ew_float(ir_op op, double a, double b, double c, double *out) {
    double r;
    switch (op) {
    case IR_OP_NEG: r = -a; break;
    case IR_OP_ADD: r = a + b; break;
    case IR_OP_SUB: r = a - b; break;
    case IR_OP_MUL: r = a * b; break;
    case IR_OP_DIV: r = a / b; break;
    case IR_OP_MOD: r = fmod(a, b); break;
    case IR_OP_ABS: r = fabs(a); break;
    case IR_OP_SIGN: r = isnan(a) ? a : a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0; break;
    case IR_OP_MINIMUM: r = fmin_nan(a, b); break;
    case IR_OP_MAXIMUM: r = fmax_nan(a, b); break;
    case IR_OP_CLAMP: r = fmin_nan(fmax_nan(a, b), c); break;
    case IR_OP_EXP: r = exp(a); break;
    case IR_OP_EXP2: r = exp2(a); break;
    case IR_OP_EXPM1: r = expm1(a); break;
    case IR_OP_LOG: r = log(a); break;
    case IR_OP_LOG2: r = log2(a); break;
    case IR_OP_LOG10: r = log10(a); break;
    case IR_OP_LOG1P: r = log1p(a); break;
    case IR_OP_SQRT: r = sqrt(a); break;
    case IR_OP_RSQRT: r = 1.0 / sqrt(a); break;
    case IR_OP_SIN: r = sin(a); break;
    case IR_OP_COS: r = cos(a); break;
    case IR_OP_TAN: r = tan(a); break;
    case IR_OP_ASIN: r = asin(a); break;
    case IR_OP_ACOS: r = acos(a); break;
    case IR_OP_ATAN: r = atan(a); break;
    case IR_OP_SINH: r = sinh(a); break;
    case IR_OP_COSH: r = cosh(a); break;
    case IR_OP_TANH: r = tanh(a); break;
    case IR_OP_ASINH: r = asinh(a); break;
    case IR_OP_ACOSH: r = acosh(a); break;
    case IR_OP_ATANH: r = atanh(a); break;
    case IR_OP_ERF: r = erf(a); break;
    case IR_OP_SIGMOID: r = sigmoid(a); break;
    case IR_OP_RELU: r = a > 0 ? a : isnan(a) ? a : 0.0; break;
    case IR_OP_FLOOR: r = floor(a); break;
    case IR_OP_CEIL: r = ceil(a); break;
    case IR_OP_ROUND: r = round_even(a); break;
    case IR_OP_TRUNC: r = trunc(a); break;
    case IR_OP_POW: r = pow(a, b); break;
    case IR_OP_ATAN2: r = atan2(a, b); break;
    case IR_OP_HYPOT: r = hypot(a, b); break;
    case IR_OP_COPYSIGN: r = copysign(a, b); break;
    default: return 0;
    }
    *out = r;
    return 1;
}

static int ew_int(ir_op op, ir_dtype t, int64_t a, int64_t b, int64_t c, int64_t *out) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int64_t r;
    switch (op) {
    case IR_OP_NEG: r = wrap_u(0 - ua, t); break;
    case IR_OP_ADD: r = wrap_u(ua + ub, t); break;
    case IR_OP_SUB: r = wrap_u(ua - ub, t); break;
    case IR_OP_MUL: r = wrap_u(ua * ub, t); break;
    case IR_OP_DIV:
        if (b == 0)
            r = 0;
        else if (b == -1)
            r = wrap_u(0 - ua, t);
        else
            r = ir_wrap_int(a / b, t);
        break;
    case IR_OP_MOD: r = (b == 0 || b == -1) ? 0 : ir_wrap_int(a % b, t); break;
    case IR_OP_ABS: r = a < 0 ? wrap_u(0 - ua, t) : a; break;
    case IR_OP_SIGN: r = (a > 0) - (a < 0); break;
    case IR_OP_MINIMUM: r = b < a ? b : a; break;
    case IR_OP_MAXIMUM: r = b > a ? b : a; break;
    case IR_OP_CLAMP: {
        int64_t m = b > a ? b : a;
        r = c < m ? c : m;
        break;
    }
    default: return 0;
    }
    *out = r;
    return 1;
}

static int compare(ir_op op, int is_float, double fa, double fb, int64_t ia, int64_t ib) {
    if (is_float) {
        switch (op) {
        case IR_OP_EQ: return fa == fb;
        case IR_OP_NE: return fa != fb;
        case IR_OP_LT: return fa < fb;
        case IR_OP_LE: return fa <= fb;
        case IR_OP_GT: return fa > fb;
        default: return fa >= fb;
        }
    }
    switch (op) {
    case IR_OP_EQ: return ia == ib;
    case IR_OP_NE: return ia != ib;
    case IR_OP_LT: return ia < ib;
    case IR_OP_LE: return ia <= ib;
    case IR_OP_GT: return ia > ib;
    default: return ia >= ib;
    }
}

/* An integer to float dtype t with one rounding (ir/interp.c: int_to_float). */
static double int_to_float(int64_t v, ir_dtype t) {
    if (t == IR_F64) return (double)v;
    if (t == IR_F32) return (double)(float)v;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    double d;
    if (u < (UINT64_C(1) << 53)) {
        d = (double)u;
    } else {
        int s = 0;
        while ((u >> s) >= (UINT64_C(1) << 53))
            s++;
        uint64_t m = u >> s;
        if (u & ((UINT64_C(1) << s) - 1)) m |= 1;
        d = ldexp((double)m, s);
    }
    return ir_round_to_dtype(v < 0 ? -d : d, t);
}

/* ---- the pass -------------------------------------------------------------------------- */

/* Folds node r in place when it can; 1 if it did. */
static int fold_node(ir_func *f, ir_ref r) {
    ir_node *n = &f->nodes[r];
    const ir_op_info *oi = &ir_ops[n->op];
    if (oi->cls != IR_CLASS_EW && oi->cls != IR_CLASS_CAST) return 0;
    if (n->shape.rank != 0) return 0;
    const ir_node *a[3] = {NULL, NULL, NULL};
    for (int i = 0; i < oi->arity; i++) {
        a[i] = &f->nodes[n->args[i]];
        if (a[i]->op != IR_OP_CONST) return 0;
    }
    ir_dtype in = a[0]->dtype, t = n->dtype;
    int fin = ir_dtype_is_float(in), fout = ir_dtype_is_float(t);
    double d = 0;
    int64_t v = 0;
    if (oi->cls == IR_CLASS_CAST) {
        if (fin && fout)
            d = ir_round_to_dtype(a[0]->value.f, t);
        else if (fin)
            v = (int64_t)ir_round_to_dtype(a[0]->value.f, t);
        else if (fout)
            d = int_to_float(a[0]->value.i, t);
        else
            v = ir_wrap_int(a[0]->value.i, t);
    } else if (oi->flags & IR_OPF_CMP) {
        v = compare(n->op, fin, fin ? a[0]->value.f : 0, fin ? a[1]->value.f : 0,
                    fin ? 0 : a[0]->value.i, fin ? 0 : a[1]->value.i);
    } else if (oi->flags & IR_OPF_LOGIC) {
        int64_t x = a[0]->value.i != 0;
        if (n->op == IR_OP_NOT)
            v = !x;
        else if (n->op == IR_OP_AND)
            v = x && a[1]->value.i != 0;
        else
            v = x || a[1]->value.i != 0;
    } else if (oi->flags & IR_OPF_PRED) {
        v = n->op == IR_OP_ISNAN ? isnan(a[0]->value.f) != 0 : isinf(a[0]->value.f) != 0;
    } else if (oi->flags & IR_OPF_SELECT) {
        const ir_node *pick = a[0]->value.i ? a[1] : a[2];
        if (fout)
            d = pick->value.f;
        else
            v = pick->value.i;
    } else if (fout) {
        if (!ew_float(n->op, a[0]->value.f, oi->arity > 1 ? a[1]->value.f : 0,
                      oi->arity > 2 ? a[2]->value.f : 0, &d))
            return 0;
    } else {
        if (!ew_int(n->op, t, a[0]->value.i, oi->arity > 1 ? a[1]->value.i : 0,
                    oi->arity > 2 ? a[2]->value.i : 0, &v))
            return 0;
    }
    n->op = IR_OP_CONST;
    n->args[0] = n->args[1] = n->args[2] = IR_NONE;
    n->axes = 0;
    n->index = 0;
    if (fout)
        n->value.f = d;
    else
        n->value.i = ir_wrap_int(v, t);
    return 1;
}

/* Requires: no partition; nodes in topological order. Leaves the folded nodes' old operands
 * for dce. */
int pass_fold(ir_func *f, pass_ctx *c) {
    if (f->partition) return pass_fail(c, "fold: the function is already partitioned");
    for (ir_ref r = 0; r < f->nnodes; r++)
        fold_node(f, r);
    return 0;
}
