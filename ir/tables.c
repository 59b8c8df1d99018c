/* ir/tables.c: the op table, expanded from ops.def, and the look-ups of ops and dtypes by name
 * (the dtype table is ir/dtypes.c). */
#include "ir.h"

#include <string.h>

const ir_op_info ir_ops[IR_OP_COUNT] = {
#define IR_OP(E, CLASS, ARITY, NAME, FLAGS, IDENTITY, DERIV)                                       \
    {NAME, CLASS, ARITY, FLAGS, IDENTITY, DERIV},
#include "ops.def"
#undef IR_OP
};

int ir_dtype_lookup(const char *name, size_t n, ir_dtype *out) {
    for (int t = 0; t < IR_DTYPE_COUNT; t++) {
        if (strlen(ir_dtypes[t].name) == n && memcmp(ir_dtypes[t].name, name, n) == 0) {
            *out = (ir_dtype)t;
            return 1;
        }
    }
    return 0;
}

int ir_op_lookup_builtin(const char *name, size_t n, ir_op *out) {
    for (int op = 0; op < IR_OP_COUNT; op++) {
        if (!(ir_ops[op].flags & IR_OPF_BUILTIN)) continue;
        if (strlen(ir_ops[op].name) == n && memcmp(ir_ops[op].name, name, n) == 0) {
            *out = (ir_op)op;
            return 1;
        }
    }
    return 0;
}
