/* passes/grad_rules.h: one op's derivative as ir/ops.def writes it (DERIV), made into nodes:
 * what the gradient pass (passes/grad.c) calls for each operand of each node it sweeps. */
#ifndef FUSEC_PASSES_GRAD_RULES_H
#define FUSEC_PASSES_GRAD_RULES_H

#include <stddef.h>

#include "ir/ir.h"

/* The dtype a gradient of a value of dtype t is computed in: f64 for f64, else f32 (f16 and
 * bf16 values compute in f32, SPEC §1). */
static inline ir_dtype grad_compute_dtype(ir_dtype t) {
    return t == IR_F64 ? IR_F64 : IR_F32;
}

/* s with axes of one added on the left up to `rank` (s itself when it has as many). */
ir_shape grad_pad(const ir_shape *s, int32_t rank);

/* An element-wise op on operands whose shapes are one shape padded on the left with axes of
 * one (or rank-0 constants): each broadcast to the longest first; dtype from the op's rule. */
ir_ref grad_ew(ir_func *f, ir_op op, int n, const ir_ref *args);

/* What the cotangent g (dtype grad_compute_dtype of the node's) of node `node` sends to its
 * operand i, by the op's rule: the contribution in *out (IR_NONE: none, the rule says 0).
 * 0, or -1 with a message (a rule that does not parse: an internal error; "-": the op has no
 * derivative). */
int grad_rule(ir_func *f, ir_ref node, int i, ir_ref g, ir_ref *out, char *err, size_t errlen);

#endif
