/* codegen/cpu/llvm_internal.h: what the CPU code generator's files share (not for runtime/): the
 * CPU's plan of one kernel (or one part of a combined kernel), made by codegen/cpu/llvm_plan.c
 * from the kernel plan (plan/plan.h) and followed by codegen/cpu/llvm.c: the loops it runs
 * as, and which per-element values each sweep evaluates or keeps in a row's scratch.
 */
#ifndef FUSEC_CODEGEN_LLVM_INTERNAL_H
#define FUSEC_CODEGEN_LLVM_INTERNAL_H

#include "codegen/cpu/llvm.h"

/* How a kernel's loops are laid out (from the plan's layout). */
typedef enum llvm_loop_kind {
    LLVM_LOOP_POINTWISE, /* flat elements, cut into runs along the last axis */
    LLVM_LOOP_ROW,       /* a row (the reduced suffix) at a time; also reductions over one
                            element (an element-wise layout with reductions): rows of one */
    LLVM_LOOP_COLUMN,    /* a unit of columns (kept inner axis) at a time, reducing outer axes */
    LLVM_LOOP_FULL,      /* chunks of the whole domain, then a finalize */
} llvm_loop_kind;

typedef struct llvm_kplan {
    const plan_kernel *pk; /* the kernel plan of this kernel or part */
    const llvm_func_meta *fm;
    llvm_loop_kind loop;
    /* reductions (row, column, full) */
    uint32_t *need;  /* by node (per element): the sweeps that evaluate it (bit s) */
    int32_t ncached; /* per-element values kept in a row's scratch between sweeps */
    ir_ref *cached;
    int32_t *cache_slot; /* by node: its index in cached, or -1 */
    int32_t cache_bytes; /* per element of a row, over every cached value */
} llvm_kplan;

/* The CPU's plan of kernel `k` (part `part` of a combined kernel, else -1) of fm->func. */
int llvm_plan_kernel(const llvm_func_meta *fm, int32_t k, int32_t part, ir_arena *arena,
                     llvm_kplan *p, char *err, size_t errlen);

#endif
