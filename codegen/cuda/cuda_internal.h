/* codegen/cuda/cuda_internal.h: what the CUDA generator's files share: the generation state of a
 * module and of one kernel, the index space of a kernel (its domain collapsed into groups of
 * axes), the buffers a kernel reads and writes, and the emitters of each file. Their prefix is
 * cugen_ (the CUDA generator's; the CPU generator's are llvm_ and lg_, the CUDA runtime's
 * rt_cuda_).
 *
 *   cuda.c           the module: names, buffers of each function, launches, the translation
 *                    unit, cuda_resolve
 *   cuda_prelude.c   the helper functions generated code calls (conversions, NaN-aware
 *                    min/max, wrapping integer arithmetic, shuffles, vector loads)
 *   cuda_expr.c      dtypes and ops as CUDA expressions (the op table), constants, the value
 *                    of each node in the current scope, index spaces and offsets
 *   cuda_pointwise.c the element-wise engine: pointwise and combined kernels, the first stage
 *                    of a full reduction, reductions over one element
 *   cuda_reduce.c    row, column and full reductions
 *   cuda_gather.c    the gather kernels that read a strided input into a dense temporary
 *   cuda_outline.c   which math functions a kernel calls out of line (a bound on its size)
 */
#ifndef FUSEC_CODEGEN_CUDA_INTERNAL_H
#define FUSEC_CODEGEN_CUDA_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "codegen/cuda/cuda.h"
#include "ir/ir.h"

/* ---- the prelude's helpers (cuda_prelude.c) ---------------------------------------------- */

/* ORDER CG_HELPER: cuda_prelude.c's table follows this enum; helpers are emitted in this
 * order, each after the ones it needs. */
typedef enum cugen_helper {
    CG_H_TYPES,   /* fx_vec, vector loads and stores, alignment */
    CG_H_LDVS,    /* fx_ldvs / fx_stvs: a vector or its live elements one by one */
    CG_H_BITS,    /* infinities and bit casts */
    CG_H_F16,     /* f16 storage <-> f32 */
    CG_H_BF16,    /* bf16 storage <-> f32 */
    CG_H_F64HALF, /* f64 -> f16 / bf16 with one rounding */
    CG_H_MINMAX,  /* NaN-propagating minimum and maximum */
    CG_H_FLOAT,   /* sign, relu */
    CG_H_INT,     /* wrapping integer arithmetic, division by zero gives 0 */
    CG_H_CVT,     /* float -> integer: truncate, saturate, NaN -> 0 */
    CG_H_SHFL,    /* warp shuffles of any 4- or 8-byte value */
    CG_H_RAND,    /* rand: Philox4x32-10 (ir/philox.h's code in CUDA C) */
    CG_H_MATH,    /* the llvm_math_* functions: codegen/cpu/llvm_math.c, the CPU's own */
    CG_H_COUNT
} cugen_helper;

/* The helper's text; the helpers it needs are set in *deps (bit h: helper h). */
const char *cugen_helper_text(cugen_helper h, unsigned *deps);

/* ---- sizes -------------------------------------------------------------------------------- */

cuda_size cugen_size_lit(int64_t v);
cuda_size cugen_size_mul(cuda_size a, cuda_size b);
int cugen_size_equal(const cuda_size *a, const cuda_size *b);
int cugen_size_is_lit(const cuda_size *s, int64_t v); /* a literal equal to v */
cuda_size cugen_shape_elems(const ir_shape *s);       /* the element count of a shape */

/* ---- the module being generated ----------------------------------------------------------- */

/* A kernel function emitted: its text with names made canonical (cuda.c's canonical). */
typedef struct cugen_emitted {
    const char *canon, *name;
    uint64_t hash; /* of canon */
} cugen_emitted;

typedef struct cugen_module {
    ir_arena *a;
    unsigned helpers; /* bit h: helper h is used */
    /* [op][f64]: the out-of-line wrapper of op's math function is called (cuda_outline.c) */
    unsigned char outlined[IR_OP_COUNT][2];
    ir_buf text; /* the kernels, after the prelude */
    ir_failure fail;
    /* every __global__ name given, for the module's list (a kernel that an earlier one with
     * other names stands for is not in the source: cugen_emit_function) */
    const char **names;
    int32_t nnames, cap_names;
    cugen_emitted *emitted; /* the kernel functions in the source */
    int32_t nemitted, cap_emitted;
} cugen_module;

/* The gather kernels of funcs (one per element size their parameters have) into out, and
 * each fs[i].gather. */
void cugen_gen_gathers(cugen_module *m, ir_func *const *funcs, int nfuncs, cuda_func *fs,
                       ir_buf *out);

#define cugen_fail(m, ...) ir_failure_set(&(m)->fail, __VA_ARGS__)

/* ---- one kernel --------------------------------------------------------------------------- */

/* A pointer argument of a kernel: a value it reads, or a place it writes a stored value. */
typedef struct cugen_buf {
    ir_ref node;        /* the INPUT node or stored node */
    int output;         /* written (else read) */
    ir_dtype dtype;     /* element dtype in memory */
    const char *name;   /* the CUDA parameter */
    cuda_arg_kind kind; /* PARAM, RESULT or SCRATCH */
    int32_t index;      /* which one */
    uint32_t mask;      /* groups of the current space it spans (space_build) */
    int computed;       /* an INDEX: no pointer, no argument; its value is the offset a
                           dense buffer of its shape would have (after the real buffers) */
} cugen_buf;

/* A group: a collapsed axis of the kernel plan (adjacent domain axes that every buffer of the
 * kernel spans alike, all reduced or all kept). Axes of literal size 1 belong to none. */
typedef struct cugen_group {
    cuda_size extent;
    int reduced;
} cugen_group;

/* A non-buffer argument of a kernel: an int64 size (kind CUDA_ARG_SIZE), or a special one
 * (threads per row, a part's first block, a grid size, the partials' scratch pointer). */
typedef struct cugen_sizearg {
    cuda_arg_kind kind;
    int32_t index;
    cuda_size size;
    const char *name;
    const char *ctype; /* its C type; NULL: the size type (I or long long) */
} cugen_sizearg;

/* A value's expression in the current scope, saved when a scope sets it. */
typedef struct cugen_saved {
    ir_ref node;
    const char *prev;
} cugen_saved;

typedef struct cugen_kernel cugen_kernel;
/* Emits (if needed) the read of input buffer `b` for node q in the current iteration context
 * and returns its value's expression. */
typedef const char *(*cugen_load_fn)(cugen_kernel *k, int b);

struct cugen_kernel {
    cugen_module *m;
    const ir_func *f;
    const ir_kernel *kn;
    int32_t kidx;
    const plan_kernel_set *plans; /* the kernel plan of the kernel, a plan a part */
    const plan_kernel *plan;      /* the current part's (cugen_space_build) */
    const char *name;             /* the base name of its functions: fusec_<fn>_k<i> */

    /* buffers: one per input, one per (stored node, destination) */
    cugen_buf *bufs;
    int32_t nbufs, cap_bufs;
    int32_t *inbuf; /* per node: the input buffer that holds it, -1 */

    /* int64 size arguments */
    cugen_sizearg *sizes;
    int32_t nsizes, cap_sizes;

    /* the current index space (space_build) */
    int32_t ngroups;
    cugen_group groups[IR_MAX_RANK];
    uint32_t reduced;  /* the mask of reduced groups */
    uint32_t *var;     /* per node: groups its value varies over */
    unsigned char *in; /* per node: in the current body range */
    int32_t from, to;  /* the current body range: kn->body[from..to) */

    /* values */
    const char **val; /* per node: its expression in the current scope, NULL */
    cugen_saved *saved;
    int32_t nsaved, cap_saved;
    cugen_load_fn load; /* how inputs are read where values are emitted */
    void *ctx;          /* the engine's state for `load` */

    /* text */
    ir_buf body;
    int ind;
    int index_template; /* the body is a template over the index type I */
    int flat_tracked;   /* the last flat sweep tracked positions in groups (broadcasts) */

    /* engine state */
    int reduce_single;    /* reductions have one element: computed as element-wise ops */
    int32_t *cache_first; /* row engine: the sweep that first computes a cached node */
    int min_blocks;       /* the functions emitted next: blocks an SM that __launch_bounds__ asks
                             for (0: none; the compiler then spends registers freely) */
    int cur_const;        /* full reduction: the partials are read, not written */
    int32_t partials_scratch; /* full reduction: its scratch buffer */
    int32_t launch_index;     /* the index of this kernel's (last) launch in the function */
    unsigned char outlined[IR_OP_COUNT][2]; /* [op][f64]: its math is called out of line */
    int outlines;                           /* some math is called out of line */
};

/* Text: a line at the current indentation. */
void cugen_line(cugen_kernel *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cugen_fmt(cugen_kernel *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cugen_use(cugen_kernel *k, cugen_helper h);

/* ---- dtypes and values (cuda_expr.c) ------------------------------------------------------ */

const char *cugen_ctype(ir_dtype t); /* compute type: float, double, int, long long, bool */
const char *cugen_stype(ir_dtype t); /* storage type: unsigned short for f16 and bf16, ... */
int cugen_ctype_words(ir_dtype t);   /* 32-bit registers of one computed value */
/* A value read from storage (expr of the storage type) as the compute type. */
const char *cugen_from_storage(cugen_kernel *k, ir_dtype t, const char *expr);
/* A computed value as the storage type. */
const char *cugen_to_storage(cugen_kernel *k, ir_dtype t, const char *expr);

/* Scopes: cugen_scope_mark, then values set with cugen_set_val, then cugen_scope_pop(mark) forgets
 * them and restores what they shadowed. */
int32_t cugen_scope_mark(cugen_kernel *k);
void cugen_scope_pop(cugen_kernel *k, int32_t mark);
void cugen_set_val(cugen_kernel *k, ir_ref r, const char *expr);

/* Marks in need[] the nodes of the current range needed to compute `targets` that have no
 * value yet (and the input nodes among them); reductions never (they must have values). */
void cugen_need(cugen_kernel *k, const ir_ref *targets, int32_t n, unsigned char *need);
/* Emits, in body order, every node need[] marks (inputs through k->load). */
void cugen_emit_needed(cugen_kernel *k, const unsigned char *need);
/* Emits one body node (its operands have values). */
void cugen_emit_node(cugen_kernel *k, ir_ref r);
/* The value of an operand: a literal for constants, else val[]. */
const char *cugen_operand(cugen_kernel *k, ir_ref r);
/* Emits the definitions of the targets (and their cones) in the current scope. */
void cugen_emit_values(cugen_kernel *k, const ir_ref *targets, int32_t n);

/* op's math function (f32 or f64) applied to `a` (and `b`), as the op table writes it. */
const char *cugen_math_call(cugen_module *m, int op, int dbl);

/* ---- math out of line (cuda_outline.c) ---------------------------------------------------- */

/* Decides which math functions kernel k calls out of line (k->outlined), from its body. */
void cugen_outline_plan(cugen_kernel *k);
/* The template ($0, $1) that calls op's function for f32 or f64 out of line, marking its
 * wrapper used in the module; NULL where k inlines it. */
const char *cugen_outline_call(cugen_kernel *k, int op, int dbl);
/* The wrappers of every math function the module's kernels call out of line. */
void cugen_outline_emit(cugen_module *m, ir_buf *out);

/* Reductions as CUDA: identity and combination of accumulators. */
const char *cugen_red_init(cugen_kernel *k, ir_ref r);
const char *cugen_red_combine(cugen_kernel *k, ir_ref r, const char *acc, const char *x);
/* The reduction's result from its accumulator (mean divides by the count expr). */
const char *cugen_red_finish(cugen_kernel *k, ir_ref r, const char *acc, const char *count);

/* ---- index spaces (cuda_expr.c) ------------------------------------------------------------ */

/* Makes part `part` (0 for a kernel of one part) current: its body range, its groups (the
 * plan's collapsed axes), every buffer's mask (the groups it spans in the plan) and every
 * node's var. */
void cugen_space_build(cugen_kernel *k, int32_t part);
/* 1 if buffer b is used by the current range. */
int cugen_buf_used(const cugen_kernel *k, int32_t b);
/* The expression of a size: a literal, or the name of an int64 argument (added if new). */
const char *cugen_size_expr(cugen_kernel *k, cuda_size s, const char *hint);
/* The product of the extents of the groups in `mask`. */
cuda_size cugen_groups_extent(const cugen_kernel *k, uint32_t mask);
/* The offset in buffer b of the point whose kept groups have linear index `o` and whose
 * reduced groups have linear index `l` (either NULL when b spans none of them); `cast` is
 * prepended to each size ("(I)", "(long long)" or ""). */
const char *cugen_offset(cugen_kernel *k, int32_t b, const char *o, const char *l,
                         const char *cast);
/* The part of that offset from the kept groups alone, and from the reduced ones alone. */
const char *cugen_offset_kept(cugen_kernel *k, int32_t b, const char *o, const char *cast);
const char *cugen_offset_reduced(cugen_kernel *k, int32_t b, const char *l, const char *cast);
/* Whether the reduced part of b's offset is the reduced index itself. */
int cugen_reduced_linear(const cugen_kernel *k, int32_t b);

/* ---- the engines ---------------------------------------------------------------------------- */

/* cuda_pointwise.c: a pointwise or combined kernel, or a reduction over one element a
 * result (every reduced axis of literal size 1). Fills the launch. */
void cugen_gen_elementwise(cugen_kernel *k, cuda_launch *l);
/* cuda_pointwise.c: the sweep of a flat (element-wise) space: every element of the current
 * space once, vectorized where alignment allows, writing the output buffers `outs` (each
 * spans the whole space) and adding each of `reds` into its accumulator (named "a<node>",
 * compensation "a<node>c", declared by the caller). Block and grid come from `bid` and
 * `nblk` (expressions of type I). Returns the vector width. */
int cugen_flat_sweep(cugen_kernel *k, const int32_t *outs, int32_t nouts, const ir_ref *reds,
                     int32_t nreds, const char *bid, const char *nblk);
/* cuda_reduce.c */
void cugen_gen_row(cugen_kernel *k, cuda_launch *l);
void cugen_gen_column(cugen_kernel *k, cuda_launch *l);
/* A column reduction the plan lets split: two launches, l2 - 1 the column kernel or, when the
 * launch's split cuts the rows into pieces, the pieces' partial results; l2 the join of the
 * pieces (skipped when not split). */
void cugen_gen_column_split(cugen_kernel *k, cuda_launch *l2);
/* A full reduction: two launches (partials, then the final combine). */
void cugen_gen_full(cugen_kernel *k, cuda_launch *l2);

/* cuda.c: a special argument (its name; added once per kind and index). ctype NULL: the
 * size type. */
const char *cugen_special_arg(cugen_kernel *k, cuda_arg_kind kind, int32_t index, const char *name,
                              const char *ctype);
/* The buffers with a pointer: all but the computed ones, which come after them. */
static inline int32_t cugen_real_bufs(const cugen_kernel *k) {
    int32_t n = 0;
    while (n < k->nbufs && !k->bufs[n].computed)
        n++;
    return n;
}
/* Compute-type classes: which template column of the op table applies (f16 and bf16 compute
 * in float). */
typedef enum cugen_cclass { CG_CC_FLOAT, CG_CC_DOUBLE, CG_CC_INT, CG_CC_BOOL } cugen_cclass;
cugen_cclass cugen_class_of(ir_dtype t);

/* The launch's arguments: the kernel's buffers, then its size and special arguments. */
void cugen_launch_args(cugen_kernel *k, cuda_launch *l);
/* Emits kernel functions with `body` (indented one level). CG_FN_PLAIN: one entry point
 * `name`. CG_FN_TEMPLATE: a template over the index type I and the entry points `name`
 * (I = unsigned) and `name`_i64 (I = unsigned long long). CG_FN_CHUNKED (a flat sweep over
 * one group, no broadcast tracking, the only size argument the element count): one entry
 * point that runs the unsigned body over chunks of 2^30 elements. The signature: the
 * buffers, then the arguments registered so far. Returns the name to launch: `name`, or
 * that of an earlier kernel of the module whose functions are these with other names
 * (emitted once; its _i64 entry point too). */
enum { CG_FN_PLAIN, CG_FN_TEMPLATE, CG_FN_CHUNKED };
const char *cugen_emit_function(cugen_kernel *k, const char *name, int max_block, const char *body,
                                int templ);
/* A __global__ name of this kernel (fusec_<function>_k<index><suffix>), recorded. */
const char *cugen_global_name(cugen_kernel *k, const char *suffix);

/* The most partial results (blocks) of the first stage of a full reduction; each reduction
 * has CG_MAX_PARTIALS * 8 bytes of scratch for them. */
#define CG_MAX_PARTIALS 1024

/* Elements a chunked kernel gives its 32-bit body at once (a multiple of every vector). */
#define CG_CHUNK (INT64_C(1) << 30)

/* Returns the name of the first element-wise op that lacks a CUDA template its flags call
 * for, NULL if none (tests). */
const char *cugen_op_table_check(void);

#endif
