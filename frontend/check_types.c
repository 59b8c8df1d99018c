/* frontend/check_types.c: the dtype rules of the checker (SPEC §1, "Types and shapes").
 *
 * - What dtype an op takes and gives is the IR's rule (ir/typing.c), for weak values too:
 *   a fold gives the kind of what ir_op_result_dtype gives on the dtypes they compute in.
 * - Promotion of tensors is ir_dtype_promote. Literals, and expressions made only of
 *   literals, are weak: they are folded here, at check time, into a weak constant of kind
 *   bool, int (int64, wrapping) or float (double), and take the dtype of the tensor they
 *   meet (a weak int with bool gives i32, a weak float with an integer or bool gives f32).
 *   Alone, a weak bool is bool, a weak int i32 and a weak float f32.
 * - Folding computes through ir_scalar_eval (ir/scalar.h), the evaluator the reference
 *   interpreter and constant folding share, with a weak int taken as an i64 and a weak
 *   float as an f64: integer arithmetic wraps in int64, integer division and remainder by
 *   zero give 0, INT64_MIN / -1 wraps and INT64_MIN % -1 is 0; floats are computed in
 *   double (the reference precision), NaN propagating through relu, minimum, maximum and
 *   clamp. So a weak expression folds to what the same expression on tensors computes.
 * - A weak float becomes a CONST of its context dtype holding the double unrounded (a
 *   literal is never rounded to f16/bf16); an explicit cast rounds it, as a cast does, and
 *   its result is a tensor (no longer weak). A weak int that does not fit in i32 where it
 *   becomes i32 is an error rather than a silent wrap.
 * - A weak constant returned alone, or passed as an argument, takes the declared dtype when
 *   it would take it meeting a tensor of that dtype: 2 may be returned as f16 or i64 (not as
 *   bool), 2.5 as f64 but not as i32 (an error: cast explicitly).
 */
#include "check_internal.h"

#include "ir/scalar.h"

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

/* ---- folding ---------------------------------------------------------------------------- */

/* Weak values compute in ir_scalar_eval's semantics of these dtypes: a weak int is an i64
 * (wrapping at 64 bits), a weak float an f64. */
static ir_dtype weak_eval_dtype(check_wkind wk) {
    switch (wk) {
    case CHECK_W_BOOL: return IR_BOOL;
    case CHECK_W_INT: return IR_I64;
    case CHECK_W_FLOAT: return IR_F64;
    }
    return IR_F64;
}

/* The kind of a weak value that holds a value of dtype t. */
static check_wkind weak_kind_of(ir_dtype t) {
    if (ir_dtype_is_float(t)) return CHECK_W_FLOAT;
    return t == IR_BOOL ? CHECK_W_BOOL : CHECK_W_INT;
}

check_wkind check_weak_result(ir_op op, check_wkind k) {
    ir_dtype t = weak_eval_dtype(k), args[3] = {t, t, t};
    return weak_kind_of(ir_op_result_dtype(op, args, t));
}

static ir_scalar weak_scalar(const check_val *v) {
    ir_scalar s = {0, 0};
    if (v->wk == CHECK_W_FLOAT)
        s.f = v->f;
    else
        s.i = v->i;
    return s;
}

static check_val weak_of(check_wkind wk, ir_scalar s, src_loc loc) {
    switch (wk) {
    case CHECK_W_BOOL: return weak_bool(s.i != 0, loc);
    case CHECK_W_INT: return weak_int(s.i, loc);
    case CHECK_W_FLOAT: break;
    }
    return weak_float(s.f, loc);
}

/* op on n weak operands, all of kind `in`, giving a weak value of kind `out`. The callers
 * checked the kinds, so the evaluator always knows the op; were it not to, the result
 * stays a defined 0. */
static check_val fold(ir_op op, check_wkind out, check_wkind in, const check_val *args, int n,
                      src_loc loc) {
    ir_scalar x[3], r = {0, 0};
    for (int i = 0; i < n && i < 3; i++)
        x[i] = weak_scalar(&args[i]);
    ir_scalar_eval(op, weak_eval_dtype(out), weak_eval_dtype(in), x, n, &r);
    return weak_of(out, r, loc);
}

check_val check_weak_to(const check_val *v, check_wkind wk) {
    if (v->wk == wk) return *v;
    return fold(IR_OP_CAST, wk, v->wk, v, 1, v->loc);
}

ir_ref check_materialize(check_ctx *c, const check_val *v, ir_dtype t) {
    /* not a cast: a literal is never rounded to its context's float dtype */
    if (ir_dtype_is_float(t)) return ir_const_float(c->f, t, check_weak_to(v, CHECK_W_FLOAT).f);
    if (v->wk == CHECK_W_FLOAT) /* callers promote first: cannot happen; stay defined */
        return check_const_cast(c, v, t);
    if (t == IR_I32 && (v->i < INT32_MIN || v->i > INT32_MAX)) {
        check_error(c, v->loc, "integer constant %lld does not fit in i32", (long long)v->i);
        return IR_NONE;
    }
    return ir_const_int(c->f, t, t == IR_BOOL ? v->i != 0 : v->i);
}

ir_ref check_const_cast(check_ctx *c, const check_val *v, ir_dtype t) {
    ir_scalar x = weak_scalar(v), r = {0, 0};
    ir_scalar_eval(IR_OP_CAST, t, weak_eval_dtype(v->wk), &x, 1, &r);
    if (ir_dtype_is_float(t)) return ir_const_float(c->f, t, r.f);
    return ir_const_int(c->f, t, r.i);
}

check_val check_fold_unary(ir_op op, const check_val *x) {
    /* NOT of a bool, NEG of a number (NEG of a bool was rejected) */
    return fold(op, check_weak_result(op, x->wk), x->wk, x, 1, x->loc);
}

/* Operands of a fold, converted to the kind k they are promoted to together. */
static void weak_promote(check_val *out, const check_val *v, int n, check_wkind k) {
    for (int i = 0; i < n; i++)
        out[i] = check_weak_to(&v[i], k);
}

check_val check_fold_binary(ir_op op, const check_val *l, const check_val *r) {
    check_val in[2] = {*l, *r}, v[2];
    check_wkind k = l->wk > r->wk ? l->wk : r->wk;
    if (ir_ops[op].flags & IR_OPF_LOGIC) k = CHECK_W_BOOL;
    weak_promote(v, in, 2, k);
    return fold(op, check_weak_result(op, k), k, v, 2, l->loc);
}

check_val check_fold_builtin(ir_op op, const check_val *args, int n) {
    src_loc loc = n > 0 ? args[0].loc : (src_loc){0, 0};
    unsigned flags = ir_ops[op].flags;
    check_val v[3];
    n = n < 3 ? n : 3;
    if (flags & IR_OPF_SELECT) {
        /* the condition is a bool; the two values are promoted together */
        check_wkind k = args[1].wk > args[2].wk ? args[1].wk : args[2].wk;
        v[0] = args[0];
        weak_promote(v + 1, args + 1, 2, k);
        return fold(op, check_weak_result(op, k), k, v, 3, loc);
    }
    check_wkind k = CHECK_W_BOOL;
    for (int i = 0; i < n; i++)
        if (args[i].wk > k) k = args[i].wk;
    /* numeric built-ins keep integers (a bool argument was rejected, or counts as an int);
     * float functions compute in the weak float kind */
    k = (flags & IR_OPF_NUMERIC) && k != CHECK_W_FLOAT ? CHECK_W_INT : CHECK_W_FLOAT;
    weak_promote(v, args, n, k);
    return fold(op, check_weak_result(op, k), k, v, n, loc);
}
