/* codegen/cpu/llvm_internal.h: what the CPU code generator's files share (not for runtime/): the
 * plan of one kernel (or one part of a combined kernel), made by codegen/cpu/llvm_plan.c and
 * followed by codegen/cpu/llvm.c.
 *
 * The plan collapses the kernel's iteration domain: axes of literal size 1 are dropped, and
 * neighbouring axes are merged when every memory access (each load of an input or of a value
 * an earlier kernel stored, each store) either varies along both or along neither, and both
 * are reduced or both kept. Along a collapsed axis an access then has stride 0 (absent) or
 * the product of the collapsed dims to its right among those it varies along (present); along
 * the last collapsed axis, stride 0 or 1, which is what lets loops over it vectorize.
 */
#ifndef FUSEC_CODEGEN_LLVM_INTERNAL_H
#define FUSEC_CODEGEN_LLVM_INTERNAL_H

#include "codegen/cpu/llvm.h"

/* How a kernel's loops are laid out. */
typedef enum llvm_loop_kind {
    LLVM_LOOP_POINTWISE, /* flat elements, cut into runs along the last axis */
    LLVM_LOOP_ROW,       /* a row (the reduced suffix) at a time */
    LLVM_LOOP_COLUMN,    /* a unit of columns (kept inner axis) at a time, reducing outer axes */
    LLVM_LOOP_FULL,      /* chunks of the whole domain, then a finalize */
} llvm_loop_kind;

/* Per-element reductions and stores of a row or column kernel run in sweeps over the reduced
 * elements; at most this many. */
#define LLVM_MAX_SWEEPS 30

typedef struct llvm_access {
    ir_ref node;      /* the value read or written */
    int32_t buf;      /* index into the function's buffer table */
    int store;        /* 1: a store of a value this kernel computes */
    uint32_t present; /* bit a: the access varies along collapsed axis a */
} llvm_access;

typedef struct llvm_kplan {
    const ir_func *f;
    const llvm_func_meta *fm;
    int32_t kernel;
    int32_t part; /* combined kernels: the part; else -1 */
    llvm_loop_kind loop;
    int32_t from, to;                /* the body range [from, to) of the kernel's body */
    ir_shape dom;                    /* the iteration domain */
    uint32_t red;                    /* its reduced axes */
    ir_shape outer;                  /* dom with the reduced axes set to 1 */
    int32_t naxes;                   /* collapsed axes */
    uint32_t axis_dims[IR_MAX_RANK]; /* the domain axes merged into each (bit mask) */
    uint32_t reduced;                /* bit a: collapsed axis a is reduced */
    int32_t nacc;
    llvm_access *acc;
    int32_t *load_acc; /* by node: its load access, or -1 */
    /* by node: 1 for a stored f16/bf16 value that the kernel reads again, which those reads
     * see rounded, as the reference holds it (and as a later kernel would load it) */
    uint8_t *round_kept;
    int32_t nbufs; /* the distinct buffers the kernel touches */
    int32_t *bufs;
    /* reductions (row, column, full) */
    uint8_t *per_result; /* by node: 1 when the node fits the outer shape */
    int32_t *stage;      /* by node: the sweeps before which it can be computed */
    uint32_t *need;      /* by node (per element): the sweeps that evaluate it (bit s) */
    int32_t nsweeps;     /* sweeps that compute reductions: 0 .. nsweeps-1 */
    int final_sweep;     /* 1: sweep nsweeps writes per-element values */
    int32_t ncached;     /* per-element values kept in a row's scratch between sweeps */
    ir_ref *cached;
    int32_t *cache_slot; /* by node: its index in cached, or -1 */
    int32_t cache_bytes; /* per element of a row, over every cached value */
} llvm_kplan;

/* Plans kernel `k` (part `part` of a combined kernel, else -1) of fm->func. */
int llvm_plan_kernel(const llvm_func_meta *fm, int32_t k, int32_t part, ir_arena *arena,
                     llvm_kplan *p, char *err, size_t errlen);

/* The buffer a stored value or an INPUT is read from (its first result, else its temp, or
 * the parameter's), or -1. */
int32_t llvm_home_buf(const llvm_func_meta *fm, ir_ref r);

#endif
