/* passes/fold.c: constant folding.
 *
 * An element-wise op or cast of rank 0 whose operands are all constants becomes a constant,
 * computed with exactly the reference interpreter's semantics (ir/interp.c, SPEC §1):
 * floats in double and NOT rounded to the node's dtype (within a kernel an f16 or f32
 * intermediate is not rounded either; a CONST of a float dtype holds the unrounded value),
 * except a cast, which rounds to its dtype like every cast; integers wrap at their width,
 * x / 0 and x % 0 give 0, INT_MIN / -1 wraps and INT_MIN % -1 is 0. So folding never changes
 * what the interpreter computes, bit for bit: ir_scalar_eval computes the semantics the
 * interpreter's loops expand (ir/scalar_ops.h), so the two cannot drift apart.
 */
#include "passes/rewrite.h"

#include "ir/scalar.h"

/* Folds node r in place when it can; 1 if it did. */
static int fold_node(ir_func *f, ir_ref r) {
    ir_node *n = &f->nodes[r];
    const ir_op_info *oi = &ir_ops[n->op];
    if (oi->cls != IR_CLASS_EW && oi->cls != IR_CLASS_CAST) return 0;
    if (n->shape.rank != 0) return 0;
    ir_scalar x[3];
    for (int i = 0; i < oi->arity; i++) {
        const ir_node *a = &f->nodes[n->args[i]];
        if (a->op != IR_OP_CONST) return 0;
        x[i] = ir_scalar_of_const(a);
    }
    ir_scalar v;
    if (ir_scalar_eval(n->op, n->dtype, f->nodes[n->args[0]].dtype, x, oi->arity, &v)) return 0;
    n->op = IR_OP_CONST;
    n->args[0] = n->args[1] = n->args[2] = IR_NONE;
    n->axes = 0;
    n->index = 0;
    if (ir_dtype_is_float(n->dtype))
        n->value.f = v.f;
    else
        n->value.i = v.i;
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
