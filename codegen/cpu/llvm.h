/* codegen/cpu/llvm.h: the CPU backend's code generator: LLVM IR, through the LLVM-C builder, for
 * every kernel of a fused function's partition, and the metadata that tells the runtime how
 * to run the generated functions. It loads and launches nothing (driver/cpu/cpu_backend.c does).
 *
 * Two halves:
 *   llvm_plan_module  (codegen/cpu/llvm_plan.c, plain C)   the metadata below: buffers, tasks,
 *                     iteration spaces. Needs no LLVM, so a cache hit skips IR generation.
 *   llvm_gen_module   (codegen/cpu/llvm.c, LLVM-C; declared in codegen/cpu/llvm_module.h, built
 * into the module libfusec_llvm.so)  the LLVM functions of a planned module.
 *
 * The kernel ABI. Every task function has the C type llvm_task_fn:
 *
 *     void task(void *const *bufs, const int64_t *syms, int64_t begin, int64_t end,
 *               void *scratch, int64_t flags);
 *
 *   bufs     the function's buffer table (plan_func.bufs: parameters, results, then
 *            the intermediates the partition stores), one data pointer each;
 *   syms     the values of the function's symbolic dims (ir_func.syms order);
 *   [begin, end)  the part of the task's iteration space (llvm_task.extent) to run:
 *            elements (pointwise), rows (row reductions), column units (column reductions),
 *            chunks of LLVM_FULL_CHUNK elements (full reductions);
 *   scratch  row reductions with llvm_kernel_meta.scratch_bytes > 0: this thread's scratch
 *            (rows of cached per-element values); full reductions: the partial results,
 *            npartials 8-byte slots per chunk (chunk c's slot p at c * npartials + p);
 *            otherwise unused;
 *   flags    LLVM_TASK_STREAM: write per-element results with non-temporal stores (for
 *            results much larger than the caches: no read-for-ownership of their lines,
 *            and they do not evict the inputs); computed in L1-sized blocks, each block then
 *            copied out with aligned streaming stores; the pieces of a split column kernel
 *            from bit LLVM_TASK_PIECES_SHIFT up.
 *
 * Any split of an iteration space into ranges gives the same results: a row, a column unit
 * (or a piece of one) and a chunk are each computed by one call, in an order fixed by the
 * shape alone, so a reduction sums in the same order whatever the thread count. A full
 * reduction's `finalize` function (same C type, called once with begin = number of chunks,
 * end = 0, scratch = the partials and flags = 0) combines the chunks' partials pairwise in
 * index order and computes the scalar epilogue. A split column kernel (the plan's split: few
 * columns, many rows) runs `split_pieces` over units times pieces, then `split_join` over
 * units, which combines each column's pieces in order and finishes it.
 */
#ifndef FUSEC_CODEGEN_LLVM_H
#define FUSEC_CODEGEN_LLVM_H

#include <stddef.h>
#include <stdint.h>

#include "plan/plan.h"
#include "ir/ir.h"

/* Changes whenever generated code changes for the same partition: part of cache keys. */
#define LLVM_CODEGEN_VERSION "llvm-cpu-34"

/* Elements per chunk of a full reduction: a constant, so that the summation order depends on
 * the shape only (not on the number of threads). */
#define LLVM_FULL_CHUNK 65536
/* Row kernels take rows of at most LLVM_ROW_GROUP_MAX elements LLVM_ROW_GROUP at a time: each
 * sweep walks the group's rows together, so that one row's horizontal reductions, whose latency
 * a short row cannot hide, overlap another row's work (bench/RESULTS.md, "Short rows in
 * groups"; four rows beat two by 14-35% on Zen 5, eight no further: "Rows in groups of
 * four"; groups of rows up to 1024 elements beat groups up to 256 by 4-30% on rows of 384 to
 * 1024; a limit of 4096 gained little on rows of 2048 and 4096). Their scratch then holds the
 * group's rows (16 KB of f32 values a cached value, a thread). */
#define LLVM_ROW_GROUP     4
#define LLVM_ROW_GROUP_MAX 1024
/* Columns per unit of a column reduction (the inner, contiguous axis is cut into these). */
#define LLVM_COLUMN_WIDTH 128

typedef void (*llvm_task_fn)(void *const *bufs, const int64_t *syms, int64_t begin, int64_t end,
                             void *scratch, int64_t flags);

#define LLVM_TASK_STREAM 1
/* A split column kernel's pieces and join take the launch's number of pieces in the flags'
 * bits from this one up (flags >> LLVM_TASK_PIECES_SHIFT). */
#define LLVM_TASK_PIECES_SHIFT 8
/* Results of at least this many bytes (or an eighth of the host's L3, where that is more) are
 * written with streaming stores (the runtime decides per kernel kind and run length:
 * runtime/cpu/cpu_launch.c, `streams`). */
#define LLVM_STREAM_MIN_BYTES (8u << 20)

/* A number of items: |outer| * ceil(|inner| / block), |s| the product of s's dims (the
 * runtime counts them: runtime/cpu/cpu_launch.c). */
typedef struct llvm_extent {
    ir_shape outer, inner;
    int64_t block;
} llvm_extent;

typedef struct llvm_task {
    const char *symbol; /* the task function's name in the generated module */
    llvm_extent extent; /* its iteration space */
} llvm_task;

typedef struct llvm_kernel_meta {
    int32_t kernel; /* index in the partition */
    ir_kernel_kind kind;
    ir_shape domain;        /* the elements it touches (to decide whether threads pay off) */
    int32_t elem_out_bytes; /* bytes of per-element results per element of the domain */
    int32_t expensive;      /* it evaluates a transcendental (IR_OPF_EXPENSIVE) per element */
    int32_t ntasks;         /* combined kernels: one per part; else 1 */
    llvm_task *tasks;
    /* the elements its loops write results along without a break: pointwise kernels, the
     * last collapsed axis (all of the domain when no operand is broadcast); row kernels, a
     * row; others, the domain; a combined kernel, its first part's */
    ir_shape run_shape;
    /* row reductions that cache per-element values: each thread's scratch holds
     * |scratch_shape| * scratch_bytes bytes (a row's), whatever the row's size, times
     * LLVM_ROW_GROUP for rows of at most LLVM_ROW_GROUP_MAX elements. Rows whose
     * cache spills from L3 pay for it, up to 1.7x what a variant of the kernel that
     * recomputed instead took; that variant was dropped because it doubled every row
     * kernel's code and compile time (bench/RESULTS.md). */
    ir_shape scratch_shape;
    int32_t scratch_bytes; /* 0: no scratch */
    /* full reductions */
    const char *finalize;
    int32_t npartials;
    /* column reductions the plan lets split (plan_split): the pieces task, over units times
     * pieces, and the join, over units (begin and end as the kernel's task), both with the
     * pieces in the flags and the partials (plan_func.scratch[split_scratch]: pieces * nreds
     * slots of 8 bytes per column) as scratch; the reduced and the kept dims, whose counts
     * and the task's units give the pieces (plan_split_pieces) */
    const char *split_pieces, *split_join;
    int32_t split_nreds;
    ir_shape split_len, split_cols;
} llvm_kernel_meta;

typedef struct llvm_func_meta {
    const ir_func *func;
    const plan_func *plan; /* the kernel plan: the buffer table, launch checks, kernels */
    int32_t nkernels;
    llvm_kernel_meta *kernels;
} llvm_func_meta;

typedef struct llvm_module_meta {
    const plan_module *plan;
    int32_t nfuncs;
    llvm_func_meta *funcs;
} llvm_module_meta;

typedef struct llvm_gen_options {
    int fast_math;    /* cheaper transcendental approximations (llvm_math_fast_*) */
    int f16c;         /* the target converts f16 in hardware: fpext/fptrunc (else integer code) */
    int x86;          /* the target is x86 (sfence after streaming stores) */
    int vector_bytes; /* the widest vector the target has: streaming stores move this many */
    /* the target has fused multiply-add instructions; without them the math's fused
     * multiply-adds are computed unfused (other bits: outside SPEC §5's one answer) */
    int fma;
    /* the processor and feature string LLVM compiles for; NULL: the host's own */
    const char *cpu, *cpu_features;
    /* short rows' copies (LLVM_NARROW_COPY_PREFIX) are called, not defined: the process has
     * them from llvm_gen_narrow_copy's objects (driver/cpu/cpu_backend.c), built once for the
     * target and cached, so that a module does not compile them again; 0: a module holds its
     * own (a library built ahead of time, objects ORC loads) */
    int shared_copies;
} llvm_gen_options;

/* The names of the functions that copy short rows (codegen/cpu/llvm.c, narrow_copy_fn):
 * "fusec_ncopy_in<bits>" and "fusec_ncopy_out<bits>", bits 8, 16, 32 or 64. */
#define LLVM_NARROW_COPY_PREFIX "fusec_ncopy_"

/* Units of work that keep the CPU's workers busy (plan_options.want_units): 64, as many threads
 * as a big host has, each with a unit or more; a 2-core host gains nothing from more, and each
 * piece costs its partials and a pass over them (measured: bench/RESULTS.md, "Column sums split
 * into pieces"). */
#define LLVM_WANT_UNITS 64

/* What the CPU backend asks of the kernel plan (plan/plan.h). */
extern const plan_options llvm_plan_options;

/* Plans every function (each must have its partition) with the kernel plan, then describes
 * its tasks: *out lives in `arena`. Symbol names are "f<i>_<name>_k<j>[_p<part>]". 0, or -1
 * with a message in err (an unsupported construct, which the verifier should have refused). */
int llvm_plan_module(ir_func *const *funcs, int nfuncs, ir_arena *arena, llvm_module_meta **out,
                     char *err, size_t errlen);

#endif
