/* ir/dtypes.c: the dtype table, expanded from dtypes.def: on its own because the runtime
 * library (libfusec_rt) reads element sizes and names and needs nothing else of ir/. */
#include "ir.h"

const ir_dtype_info ir_dtypes[IR_DTYPE_COUNT] = {
#define IR_DTYPE(E, NAME, BYTES, KIND, RANK) {NAME, BYTES, KIND, RANK},
#include "dtypes.def"
#undef IR_DTYPE
};
