/* ir/scalar.h: the one evaluator of an element-wise op, a cast or a constant on scalar
 * values, with the semantics of SPEC §1 as the reference interpreter defines them, and the
 * identities of the reductions.
 *
 * The interpreter (ir/interp.c), constant folding (passes/fold.c) and the front end's
 * folding of weak literals (frontend/check_types.c) all compute through it, so a literal
 * folded at check time, a constant folded by a pass and the same value computed at run time
 * by the oracle agree bit for bit. The per-op semantics themselves are in ir/scalar_ops.h.
 */
#ifndef FUSEC_IR_SCALAR_H
#define FUSEC_IR_SCALAR_H

#include "ir.h"

/* One value: f for float dtypes (a double, not rounded to the dtype: within a kernel f16
 * and f32 values are computed unrounded), i for integer dtypes (wrapped to the dtype's
 * width) and bool (0 or 1). The field the dtype does not use is 0 in a result. */
typedef struct ir_scalar {
    double f;
    int64_t i;
} ir_scalar;

/* Evaluates `op` (an element-wise op or CAST: ir_ops[op].cls is IR_CLASS_EW or
 * IR_CLASS_CAST) on nargs == ir_ops[op].arity operands into *out.
 *   result_dtype   the node's dtype: decides float or integer arithmetic and the width
 *                  integer results wrap to (the cast's target for CAST)
 *   operand_dtype  the dtype of args[0]: comparisons compare as floats or integers by it,
 *                  and CAST converts from it (WHERE's args[0] is its bool condition)
 * 0 on success; -1 (nothing written) for an op of another class, a wrong nargs, or an op
 * that has no meaning on result_dtype (exp with an integer result). Never aborts. */
int ir_scalar_eval(ir_op op, ir_dtype result_dtype, ir_dtype operand_dtype, const ir_scalar *args,
                   int nargs, ir_scalar *out);

/* The value a CONST node holds, as the interpreter reads it (integers wrapped to the
 * node's dtype; floats as stored, not rounded to a 16-bit dtype). */
ir_scalar ir_scalar_of_const(const ir_node *n);

/* An integer converted to float dtype t with a single rounding (what a CAST does). Going
 * through double first would round twice for |v| >= 2^53. */
double ir_scalar_int_to_float(int64_t v, ir_dtype t);

/* The identity of reduction op (ir_ops[op].identity) in dtype t: 0, 1, or t's lowest or
 * highest value (-inf / +inf, the least / greatest integer of t's width, false / true).
 * The interpreter and both code generators start their accumulators from it. {0, 0} for
 * an op that is no reduction. */
ir_scalar ir_reduce_identity(ir_op op, ir_dtype t);

#endif
