/* ir/scalar.c: ir_scalar_eval, the one evaluator of an element-wise op, a cast or a
 * constant on scalar values (see scalar.h), and the scalar value of a reduction's identity.
 * Which family an op belongs to is read from its class and flags in the op table
 * (ops.def); what it computes comes from the X-macro lists of scalar_ops.h, the same lists
 * the interpreter's loops expand.
 */
#include "scalar.h"

#include "scalar_ops.h"

/* 1 and *r set when op is in the list; 0 for an op the list does not define. */
static int float_op(ir_op op, double a, double b, double c, double *r) {
    switch (op) {
#define FLOAT_CASE(E, EXPR)                                                                        \
    case IR_OP_##E: *r = (EXPR); return 1;
        IR_SCALAR_FLOAT_OPS(FLOAT_CASE)
#undef FLOAT_CASE
    default: return 0;
    }
}

static int int_op(ir_op op, ir_dtype t, int64_t a, int64_t b, int64_t c, int64_t *r) {
    switch (op) {
#define INT_CASE(E, EXPR)                                                                          \
    case IR_OP_##E: *r = (EXPR); return 1;
        IR_SCALAR_INT_OPS(INT_CASE)
#undef INT_CASE
    default: return 0;
    }
}

/* Ops that give a bool (-1 for an op not listed): on floats, comparisons and predicates;
 * on integers and bools, comparisons and logic. The comparisons' EXPR serves both. */
#define TEST_CASE(E, EXPR)                                                                         \
    case IR_OP_##E: return (EXPR);

static int float_test(ir_op op, double a, double b) {
    switch (op) {
        IR_SCALAR_CMP_OPS(TEST_CASE)
        IR_SCALAR_PRED_OPS(TEST_CASE)
    default: return -1;
    }
}

static int int_test(ir_op op, int64_t a, int64_t b) {
    switch (op) {
        IR_SCALAR_CMP_OPS(TEST_CASE)
        IR_SCALAR_LOGIC_OPS(TEST_CASE)
    default: return -1;
    }
}
#undef TEST_CASE

int ir_scalar_eval(ir_op op, ir_dtype result_dtype, ir_dtype operand_dtype, const ir_scalar *args,
                   int nargs, ir_scalar *out) {
    if ((unsigned)op >= IR_OP_COUNT || (unsigned)result_dtype >= IR_DTYPE_COUNT ||
        (unsigned)operand_dtype >= IR_DTYPE_COUNT || !out)
        return -1;
    const ir_op_info *oi = &ir_ops[op];
    if (oi->cls != IR_CLASS_EW && oi->cls != IR_CLASS_CAST) return -1;
    if (nargs != oi->arity || (nargs > 0 && !args)) return -1;
    /* operands past the arity are 0, as the lists of scalar_ops.h promise */
    ir_scalar x[3] = {{0, 0}, {0, 0}, {0, 0}};
    for (int k = 0; k < nargs; k++)
        x[k] = args[k];
    ir_scalar r = {0, 0};
    int known = 1;
    if (oi->cls == IR_CLASS_CAST) {
        r = ir_scalar_cast(x[0], operand_dtype, result_dtype);
    } else if ((oi->flags & (IR_OPF_CMP | IR_OPF_PRED)) && ir_dtype_is_float(operand_dtype)) {
        r.i = float_test(op, x[0].f, x[1].f);
        known = r.i >= 0;
    } else if (oi->flags & (IR_OPF_CMP | IR_OPF_LOGIC)) {
        r.i = int_test(op, x[0].i, x[1].i);
        known = r.i >= 0;
    } else if (oi->flags & IR_OPF_SELECT) {
        const ir_scalar *pick = x[0].i != 0 ? &x[1] : &x[2];
        if (ir_dtype_is_float(result_dtype))
            r.f = pick->f;
        else
            r.i = pick->i;
    } else if (ir_dtype_is_float(result_dtype)) {
        known = float_op(op, x[0].f, x[1].f, x[2].f, &r.f);
    } else {
        known = int_op(op, result_dtype, x[0].i, x[1].i, x[2].i, &r.i);
    }
    if (!known) return -1;
    *out = r;
    return 0;
}

ir_scalar ir_scalar_of_const(const ir_node *n) {
    ir_scalar s = {0, 0};
    if (ir_dtype_is_float(n->dtype))
        s.f = n->value.f;
    else
        s.i = ir_wrap_int(n->value.i, n->dtype);
    return s;
}

/* The value is first cut to 53 bits rounding to odd (the lost bits stick in the lowest
 * kept bit), which then rounds to 24 bits or fewer exactly as the integer itself would. */
double ir_scalar_int_to_float(int64_t v, ir_dtype t) {
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

ir_scalar ir_reduce_identity(ir_op op, ir_dtype t) {
    ir_scalar s = {0, 0};
    int is_float = ir_dtype_is_float(t);
    switch (ir_ops[op].identity) {
    case IR_ID_NONE:
    case IR_ID_ZERO: break;
    case IR_ID_ONE:
        if (is_float)
            s.f = 1.0;
        else
            s.i = 1;
        break;
    case IR_ID_LOWEST:
        if (is_float)
            s.f = -INFINITY;
        else
            s.i = t == IR_BOOL ? 0 : t == IR_I32 ? INT32_MIN : INT64_MIN;
        break;
    case IR_ID_HIGHEST:
        if (is_float)
            s.f = INFINITY;
        else
            s.i = t == IR_BOOL ? 1 : t == IR_I32 ? INT32_MAX : INT64_MAX;
        break;
    }
    return s;
}
