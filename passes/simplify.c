/* passes/simplify.c: algebraic identities that are exact in IEEE arithmetic.
 *
 * A rewrite is made only when the result is the same value for every input, -0.0, the
 * infinities and NaN included, both in the reference interpreter (floats in double, not
 * rounded between ops) and in a kernel (f32 registers). Floats are never reassociated.
 *   x * 1, 1 * x, x / 1              -> x            (floats and integers)
 *   x * -1, x / -1                   -> -x           (integers wrap the same way)
 *   x + (-0.0), (-0.0) + x, x - (+0.0) -> x          (x + (+0.0) is NOT x: -0 + +0 = +0)
 *   (-0.0) - x                       -> -x           (0.0 - x is NOT -x for x = +0)
 *   integers: x + 0, 0 + x, x - 0 -> x; 0 - x -> -x
 *   -(-x), !(!x), abs(abs(x)), relu(relu(x)), x && true, x || false -> the inner value
 *   minimum(x, x), maximum(x, x), where(c, x, x), where(true, a, b), where(false, a, b)
 *   cast(x) to x's own dtype, for integers, bool and f64 (a float cast rounds an unrounded
 *     intermediate, so it stays), and for INPUT values (already in their dtype)
 *   cast(cast(x, T1), T2) -> cast(x, T2) when T1 holds every value x can have exactly
 *     (bool into any type, i32 into i64 or f64, any float into f64)
 *   broadcast(broadcast(x)) -> broadcast(x); an element-wise operand broadcast(c) of a
 *     rank-0 constant -> c (rank-0 constants are read at every element anyway)
 * x * 0, x - x, x / x and the like are never rewritten (NaN, infinities, -0.0).
 */
#include "passes/rewrite.h"

#include <math.h>
#include <stdlib.h>

static int is_fconst(const ir_node *n, double v) {
    if (n->op != IR_OP_CONST || !ir_dtype_is_float(n->dtype)) return 0;
    return n->value.f == v && signbit(n->value.f) == signbit(v);
}

static int is_iconst(const ir_node *n, int64_t v) {
    return n->op == IR_OP_CONST && !ir_dtype_is_float(n->dtype) && n->dtype != IR_BOOL &&
           n->value.i == v;
}

static int is_bconst(const ir_node *n, int v) {
    return n->op == IR_OP_CONST && n->dtype == IR_BOOL && (n->value.i != 0) == v;
}

/* x can stand for node n: same dtype and shape. */
static int same_type(const ir_node *x, const ir_node *n) {
    return x->dtype == n->dtype && ir_shape_equal(&x->shape, &n->shape);
}

/* Every value of dtype `from` (as a kernel or the interpreter holds it) converts to `to`
 * exactly. */
static int holds_exactly(ir_dtype from, ir_dtype to) {
    if (from == IR_BOOL) return 1;
    if (from == IR_I32) return to == IR_I64 || to == IR_F64;
    if (ir_dtype_is_float(from)) return to == IR_F64;
    return 0;
}

/* A cast of x to its own dtype changes nothing. */
static int cast_is_identity(const ir_node *x) {
    return !ir_dtype_is_float(x->dtype) || x->dtype == IR_F64 || x->op == IR_OP_INPUT;
}

/* Makes n the negation of x, in place. */
static void make_neg(ir_node *n, ir_ref x) {
    n->op = IR_OP_NEG;
    n->args[0] = x;
    n->args[1] = n->args[2] = IR_NONE;
}

/* An element-wise node's operand that is a broadcast constant becomes the constant itself
 * (the node broadcasts it anyway), so the identities below see it as a constant. */
static void unwrap_const_broadcasts(ir_func *f, ir_node *n) {
    const ir_op_info *oi = &ir_ops[n->op];
    if (oi->cls != IR_CLASS_EW) return;
    for (int i = 0; i < oi->arity; i++) {
        const ir_node *a = &f->nodes[n->args[i]];
        if (a->op == IR_OP_BROADCAST && f->nodes[a->args[0]].op == IR_OP_CONST)
            n->args[i] = a->args[0];
    }
}

/* The node n reduces to, or r itself; may rewrite n in place. */
static ir_ref simplify_node(ir_func *f, ir_ref r) {
    ir_node *n = &f->nodes[r];
    const ir_op_info *oi = &ir_ops[n->op];
    unwrap_const_broadcasts(f, n);
    ir_ref x = oi->arity > 0 ? n->args[0] : IR_NONE, y = oi->arity > 1 ? n->args[1] : IR_NONE;
    const ir_node *X = x != IR_NONE ? &f->nodes[x] : NULL;
    const ir_node *Y = y != IR_NONE ? &f->nodes[y] : NULL;
    int flt = ir_dtype_is_float(n->dtype);

    switch (n->op) {
    case IR_OP_MUL:
        if ((flt ? is_fconst(Y, 1.0) : is_iconst(Y, 1)) && same_type(X, n)) return x;
        if ((flt ? is_fconst(X, 1.0) : is_iconst(X, 1)) && same_type(Y, n)) return y;
        if ((flt ? is_fconst(Y, -1.0) : is_iconst(Y, -1)) && same_type(X, n)) {
            make_neg(n, x);
            return r;
        }
        if ((flt ? is_fconst(X, -1.0) : is_iconst(X, -1)) && same_type(Y, n)) {
            make_neg(n, y);
            return r;
        }
        break;
    case IR_OP_DIV:
        if ((flt ? is_fconst(Y, 1.0) : is_iconst(Y, 1)) && same_type(X, n)) return x;
        if ((flt ? is_fconst(Y, -1.0) : is_iconst(Y, -1)) && same_type(X, n)) {
            make_neg(n, x);
            return r;
        }
        break;
    case IR_OP_ADD:
        if ((flt ? is_fconst(Y, -0.0) : is_iconst(Y, 0)) && same_type(X, n)) return x;
        if ((flt ? is_fconst(X, -0.0) : is_iconst(X, 0)) && same_type(Y, n)) return y;
        break;
    case IR_OP_SUB:
        if ((flt ? is_fconst(Y, 0.0) : is_iconst(Y, 0)) && same_type(X, n)) return x;
        if ((flt ? is_fconst(X, -0.0) : is_iconst(X, 0)) && same_type(Y, n)) {
            make_neg(n, y);
            return r;
        }
        break;
    case IR_OP_NEG:
    case IR_OP_NOT:
        if (X->op == n->op && same_type(&f->nodes[X->args[0]], n)) return X->args[0];
        break;
    case IR_OP_ABS:
    case IR_OP_RELU:
        if (X->op == n->op && same_type(X, n)) return x;
        break;
    case IR_OP_AND:
        if (is_bconst(Y, 1) && same_type(X, n)) return x;
        if (is_bconst(X, 1) && same_type(Y, n)) return y;
        break;
    case IR_OP_OR:
        if (is_bconst(Y, 0) && same_type(X, n)) return x;
        if (is_bconst(X, 0) && same_type(Y, n)) return y;
        break;
    case IR_OP_MINIMUM:
    case IR_OP_MAXIMUM:
        if (x == y && same_type(X, n)) return x;
        break;
    case IR_OP_WHERE: {
        ir_ref a = n->args[1], b = n->args[2];
        if (a == b && same_type(&f->nodes[a], n)) return a;
        if (is_bconst(X, 1) && same_type(&f->nodes[a], n)) return a;
        if (is_bconst(X, 0) && same_type(&f->nodes[b], n)) return b;
        break;
    }
    case IR_OP_CAST:
        if (X->dtype == n->dtype && cast_is_identity(X)) return x;
        if (X->op == IR_OP_CAST) {
            const ir_node *in = &f->nodes[X->args[0]];
            if (holds_exactly(in->dtype, X->dtype)) {
                n->args[0] = X->args[0];
                if (in->dtype == n->dtype && cast_is_identity(in)) return n->args[0];
            }
        }
        break;
    case IR_OP_BROADCAST:
        if (X->op == IR_OP_BROADCAST) n->args[0] = X->args[0];
        break;
    default: break;
    }
    return r;
}

/* Requires: no partition; nodes in topological order. Replaced nodes are dropped; nodes
 * left unused are dce's. */
int pass_simplify(ir_func *f, pass_ctx *c) {
    if (f->partition) return pass_fail(c, "simplify: the function is already partitioned");
    ir_ref *repl = ir_arena_calloc(f->arena, (size_t)f->nnodes + 1, sizeof(ir_ref));
    if (!repl) return pass_fail(c, "out of memory");
    int changed = 0;
    for (ir_ref r = 0; r < f->nnodes; r++) {
        ir_node *n = &f->nodes[r];
        for (int i = 0; i < ir_ops[n->op].arity; i++)
            n->args[i] = repl[n->args[i]];
        repl[r] = n->op == IR_OP_OUTPUT || pass_is_leaf(n) ? r : simplify_node(f, r);
        if (repl[r] != r) changed = 1;
    }
    if (changed && pass_compact(f, repl, 0)) return pass_fail(c, "out of memory");
    return 0;
}
