/* ir/typing.c: the dtype rules of SPEC §1, stated once: the promotion of two dtypes, the
 * dtype each operand of an op is converted to, and the dtype of an op's result. The front
 * end lowers by them (frontend/check.c, and its folding of weak literals in
 * check_types.c); the verifier holds the IR to them (ir/verify.c). What the flags of
 * ops.def mean for dtypes is read here and nowhere else.
 */
#include "ir.h"

ir_dtype ir_dtype_promote(ir_dtype a, ir_dtype b) {
    if (a == b) return a;
    if ((a == IR_F16 && b == IR_BF16) || (a == IR_BF16 && b == IR_F16)) return IR_F32;
    return ir_dtypes[a].rank >= ir_dtypes[b].rank ? a : b;
}

ir_dtype ir_op_operand_dtype(ir_op op, int i, ir_dtype promoted) {
    unsigned flags = ir_ops[op].flags;
    if (flags & IR_OPF_LOGIC) return IR_BOOL;
    if (flags & IR_OPF_RANDOM) return IR_I64; /* the seed and the index */
    if ((flags & IR_OPF_SELECT) && i == 0) return IR_BOOL;
    if (flags & IR_OPF_FLOATFN) return ir_dtype_is_float(promoted) ? promoted : IR_F32;
    /* a sum or product of i32 (or a count of bools) would wrap at 32 bits far too soon */
    if ((flags & IR_OPF_WIDEN) && (promoted == IR_BOOL || promoted == IR_I32)) return IR_I64;
    return promoted;
}

ir_dtype ir_op_result_dtype(ir_op op, const ir_dtype *args, ir_dtype target) {
    const ir_op_info *oi = &ir_ops[op];
    if (oi->cls == IR_CLASS_LEAF || oi->cls == IR_CLASS_CAST) return target;
    if (oi->flags & (IR_OPF_CMP | IR_OPF_LOGIC | IR_OPF_PRED)) return IR_BOOL;
    if (oi->flags & IR_OPF_RANDOM) return IR_F32;
    /* the values' dtype: where's condition takes no part in it */
    int from = (oi->flags & IR_OPF_SELECT) ? 1 : 0;
    ir_dtype t = args[from];
    for (int i = from + 1; i < oi->arity; i++)
        t = ir_dtype_promote(t, args[i]);
    /* the result is computed in the dtype the operands are converted to */
    return ir_op_operand_dtype(op, oi->arity - 1, t);
}
