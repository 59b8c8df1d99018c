/* codegen/cuda/cuda.h: the CUDA code generator: CUDA C for every kernel of a module's fused
 * functions (one translation unit), and the launch metadata a Driver API launcher needs to
 * run them.
 *
 * The generator reads the IR and its fusion partition and nothing else: it loads, compiles
 * and launches nothing. Everything it makes lives in the arena it is given.
 *
 * Launching function F of a module (the runtime's job):
 *   1. check F's `checks` (a max or min over an empty axis is an error, as in the reference);
 *   2. allocate F's scratch buffers (sizes from the symbolic dims);
 *   3. for each launch of F in order: rt_cuda_resolve (runtime/cuda/cuda_resolve.h) picks the
 *      variant (the function to call)
 *      and computes grid, block and the value of every int64 argument; a launch with no work
 *      (`skip`) is left out; then cuLaunchKernel with the arguments in `args` order: device
 *      pointers (CUdeviceptr) for PARAM / RESULT / SCRATCH, int64_t values for the rest.
 * Kernels read inputs and write results of F directly; a stored value that no result holds
 * lives in a scratch buffer for the duration of the call. Results must not overlap inputs.
 */
#ifndef FUSEC_CODEGEN_CUDA_H
#define FUSEC_CODEGEN_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "plan/plan.h"
#include "ir/ir.h"

/* Bump when the generated code changes for the same IR: it is part of every cache key. */
#define CUDA_CODEGEN_VERSION 6

/* What the CUDA generator asks of the kernel plan (plan/plan.h); the units of a split
 * (plan_split_pieces) are read at launch too (runtime/cuda/cuda_resolve.c). */
extern const plan_options cuda_plan_options;
#define CUDA_PLAN_WANT_UNITS 2048

/* The most symbolic factors one size has (a shape has at most IR_MAX_RANK dims; strides
 * and products of group extents stay within one shape). */
#define CUDA_MAX_SIZE_SYMS (2 * IR_MAX_RANK)

/* The gather kernels (cuda_func.gather): their block, and the most dims of a layout they
 * take (after the launcher drops dims of 1 and merges the ones laid out together). */
#define CUDA_GATHER_BLOCK    256
#define CUDA_GATHER_MAX_RANK IR_MAX_RANK

/* Indexes below this fit the 32-bit variants of the element-wise kernels. */
#define CUDA_INDEX32_LIMIT ((int64_t)1 << 31)

/* A size known at launch: coeff times the product of symbolic dims (syms[i] indexes the
 * function's ir_func.syms; a symbol may repeat). */
typedef struct cuda_size {
    int64_t coeff;
    int32_t nsyms;
    int32_t syms[CUDA_MAX_SIZE_SYMS];
} cuda_size;

/* What one kernel argument is. Pointer kinds pass a CUdeviceptr, the others an int64_t. */
typedef enum cuda_arg_kind {
    CUDA_ARG_PARAM,       /* pointer: parameter `index` of the function */
    CUDA_ARG_RESULT,      /* pointer: result `index` of the function */
    CUDA_ARG_SCRATCH,     /* pointer: scratch buffer `index` (cuda_func.scratch) */
    CUDA_ARG_SIZE,        /* int64: `size` evaluated with the symbolic dims */
    CUDA_ARG_ROW_THREADS, /* int64: threads per row of a ROWS grid (rt_cuda_resolve) */
    CUDA_ARG_PART_BLOCK,  /* int64: the first block of part `index` of the grid */
    CUDA_ARG_GRID_OF,     /* int64: the number of blocks of launch `index` of this function */
    CUDA_ARG_PIECES,      /* int64: the pieces of a split launch (cuda_launch.split) */
} cuda_arg_kind;

typedef struct cuda_arg {
    cuda_arg_kind kind;
    int32_t index;
    cuda_size size;   /* CUDA_ARG_SIZE */
    const char *name; /* the CUDA parameter's name */
} cuda_arg;

/* How one part of a launch sizes its grid (rt_cuda_resolve applies these formulas).
 *   STRIDE  grid-stride loop over `work` elements, `per_thread` (the vector width) per
 *           thread and pass: blocks = ceil(work / (block * per_thread)), capped;
 *   ROWS    `work` rows of `row_len` elements; T threads per row, T the power of two
 *           ceil(row_len / per_thread) rounded up, within 1..1024; block = max(T, block);
 *           block / T rows per block: blocks = ceil(work / (block / T)), capped;
 *   TILES   `work` output columns in tiles of 32: blocks = ceil(work / 32), capped;
 *   ONE     one block of `block` threads, whatever the work;
 *   PIECES  `work` output columns in tiles of 32, each tile once per piece of the launch's
 *           split: blocks = ceil(work / 32) * pieces, capped;
 *   NONE    no block: the launch is skipped (the other variant of a split launch).
 * Caps: sm_count * blocks_per_sm (0: none) and max_blocks (0: none); kernels loop over
 * what a smaller grid leaves. Zero work gives zero blocks (ONE: still one). */
typedef enum cuda_grid_kind {
    CUDA_GRID_STRIDE,
    CUDA_GRID_ROWS,
    CUDA_GRID_TILES,
    CUDA_GRID_ONE,
    CUDA_GRID_PIECES,
    CUDA_GRID_NONE,
} cuda_grid_kind;

typedef struct cuda_grid {
    cuda_grid_kind kind;
    cuda_size work;
    cuda_size row_len; /* ROWS */
    int32_t per_thread;
    int32_t row_min_t; /* ROWS: threads a row at least (0: 1) */
    int32_t block;
    int32_t blocks_per_sm;
    int32_t max_blocks;
} cuda_grid;

/* A condition a variant needs. */
typedef enum cuda_cond_kind {
    CUDA_COND_AT_MOST,  /* size <= value */
    CUDA_COND_AT_LEAST, /* size >= value */
    CUDA_COND_MULTIPLE, /* size % value == 0 */
    CUDA_COND_ALIGNED,  /* the device pointer of launch argument `arg` % value == 0 */
    CUDA_COND_SPLIT,    /* the launch's split cuts the reduced elements into pieces (> 1) */
} cuda_cond_kind;

typedef struct cuda_cond {
    cuda_cond_kind kind;
    int32_t arg;
    cuda_size size;
    int64_t value;
} cuda_cond;

/* One compiled function that can serve a launch. The launcher takes the first variant whose
 * conditions all hold (the last variant of a launch has none). All variants of a launch take
 * the same arguments. A grid of several parts (a combined kernel) launches the sum of the
 * parts' blocks; CUDA_ARG_PART_BLOCK i is the sum of the parts before i. */
typedef struct cuda_variant {
    const char *name;
    int32_t nconds;
    const cuda_cond *conds;
    int32_t nparts;
    const cuda_grid *parts;
    /* dynamic shared memory a block (0: its shared memory is static); over 48 KiB the
     * launcher raises the function's limit (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) */
    int32_t smem_bytes;
} cuda_variant;

/* One kernel launch. */
typedef struct cuda_launch {
    int32_t kernel;   /* the partition's kernel it runs (a full reduction takes two launches) */
    const char *what; /* "pointwise", "row-reduction", "full-reduction partials", ... */
    int32_t nvariants;
    const cuda_variant *variants;
    int32_t nargs;
    const cuda_arg *args;
    int32_t max_block; /* the __launch_bounds__ of its functions */
    /* a column reduction the plan lets split: its reduced and kept element counts, whose
     * pieces (plan_split_pieces over its tiles of 32 columns) the launch resolves */
    int32_t split;
    cuda_size split_len, split_cols;
} cuda_launch;

/* A device buffer a call of the function needs besides its inputs and results: `bytes`, or
 * for the partials of a split launch `bytes` a piece, none when the launch is not split
 * (rt_cuda_scratch_bytes). */
typedef struct cuda_scratch {
    cuda_size bytes;
    ir_ref node;          /* the stored value it holds; IR_NONE: a reduction's partial results */
    int32_t split_launch; /* the split launch whose partials it holds; -1: none */
} cuda_scratch;

/* A launch-time error: when `extent` evaluates to 0, the call fails with `message` (the
 * reference interpreter's words, e.g. "max over an empty axis"). */
typedef struct cuda_check {
    cuda_size extent;
    const char *message;
} cuda_check;

typedef struct cuda_func {
    const char *name; /* the .fuse function */
    int32_t nparams, nresults, nsyms;
    int32_t nlaunches;
    const cuda_launch *launches;
    int32_t nscratch;
    const cuda_scratch *scratch;
    int32_t nchecks;
    const cuda_check *checks;
    /* [nresults * nparams]: result o written into parameter p's own buffer would clobber it
     * before the function's last read of it (the kernel plan's inplace_hazard): the
     * launcher then writes o to a temporary and copies it into place after the launches */
    const uint8_t *inplace_hazard;
    /* [nparams]: the kernel that reads parameter p, when the caller's strides are not dense,
     * into a dense temporary the launches read instead (NULL for a rank-0 parameter). Its
     * arguments: dst, src (CUdeviceptr: the temporary; element (0, ..., 0)), then int64s: the
     * element count, the rank r (1..CUDA_GATHER_MAX_RANK), CUDA_GATHER_MAX_RANK dims and as
     * many strides in elements (the first r of each used). Grid-stride, CUDA_GATHER_BLOCK
     * threads a block, any grid. */
    const char *const *gather;
} cuda_func;

/* All kernels of a module's functions in one translation unit, and how to launch them. */
typedef struct cuda_module {
    const char *source; /* CUDA C, NUL-terminated; byte-identical for the same IR */
    size_t source_len;
    int32_t nfuncs; /* one per function, in the order given */
    const cuda_func *funcs;
    /* every __global__ name given; one a kernel gave up for an earlier identical kernel's
     * (its launches name that one) is not defined in the source */
    int32_t nnames;
    const char *const *names;
} cuda_module;

/* Generates the module for `funcs` (each fused: f->partition set). 0 and *out, or -1 with a
 * message in err (an IR the generator cannot handle: an internal error). Allocates from a
 * only; a's oom handler, when set, is honoured. */
int cuda_generate(ir_arena *a, ir_func *const *funcs, int nfuncs, cuda_module **out, char *err,
                  size_t errlen);

#endif
