/* plan/plan.h: the kernel plan, computed once per partition kernel from the IR and read by
 * both code generators (codegen/cuda/, codegen/cpu/) and their runtimes. Everything two
 * backends would otherwise each work out for themselves lives here, so that what the CPU
 * tests verify of it holds for the CUDA path too:
 *
 *   buffers     each function's buffer table: its parameters, its results (the stored value
 *               each output reads), then every other stored value (a temporary the launch
 *               allocates); a value is read from its home, the first buffer holding it
 *   iteration   a kernel's (or a combined kernel's part's) domain, collapsed: axes of
 *               literal size 1 dropped, neighbours merged when every access varies along both
 *               or neither and both are reduced or both kept (see "collapse" in plan.c)
 *   accesses    each load (of an input, or of a value an earlier kernel stored) and store,
 *               the collapsed axes it varies along, dense or broadcast; an index (rand's
 *               counter) is an access without a buffer, its value the offset itself
 *   layout      how the reduction runs: element-wise, rows (the last collapsed axis is
 *               reduced), columns (the last is kept), the whole domain
 *   levels      each reduction's sweep (one more than the reductions it reads), the values
 *               per result (per row, per column) and the per-element values of each level,
 *               the sweep that writes each stored value
 *   rounding    stored f16/bf16 values the kernel reads again, which the readers see rounded
 *   split       how the reduced axis of a column or full reduction is cut into pieces that
 *               workers reduce apart, and the order their partial results combine in
 *   checks      reductions that fail over nothing (max, min: IR_OPF_NONEMPTY), with the
 *               shape whose product must not be zero
 *   scratch     every temporary and the split's partial results, with symbolic sizes
 *   in place    which result written into a parameter's own buffer would clobber it before
 *               its last read (so that the runtime gives that result a temporary)
 *
 * A backend decides only what is its own: threads and blocks, vector widths, loops, what to
 * keep in registers or scratch between sweeps. plan_verify checks a plan against the IR;
 * plan_print is `fusec --emit=plan`. Plain C, no backend: the LLVM module (libfusec_llvm.so)
 * carries its own copy, as it does of ir/.
 */
#ifndef FUSEC_PLAN_PLAN_H
#define FUSEC_PLAN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* ---- buffers ----------------------------------------------------------------------------- */

typedef enum plan_buf_kind {
    PLAN_BUF_PARAM,  /* a parameter: the caller's input */
    PLAN_BUF_RESULT, /* a result: the caller's output */
    PLAN_BUF_TEMP,   /* an intermediate the partition stores: allocated per launch */
} plan_buf_kind;

typedef struct plan_buf {
    plan_buf_kind kind;
    int32_t index;  /* PARAM / RESULT: its position; TEMP: its position among the temps */
    ir_ref node;    /* the INPUT node, or the stored node */
    ir_dtype dtype; /* elements are stored in this dtype's storage type */
    ir_shape shape; /* TEMP: |shape| * ir_dtypes[dtype].bytes bytes */
} plan_buf;

/* ---- one kernel -------------------------------------------------------------------------- */

typedef enum plan_layout {
    PLAN_ELEMENTWISE, /* no reduced axis of more than one element: every point once */
    PLAN_ROW,         /* the last collapsed axis is reduced: a row (one point of the kept axes,
                         along the reduced ones) at a time */
    PLAN_COLUMN,      /* some axis reduced, the last kept: columns side by side */
    PLAN_FULL,        /* every collapsed axis reduced: one result from the whole domain */
} plan_layout;

typedef enum plan_access_kind {
    PLAN_DENSE,     /* varies along every collapsed axis */
    PLAN_BROADCAST, /* constant along some: read at the same place there */
} plan_access_kind;

/* The buffer of an access that reads no memory: an INDEX, computed at each point (its value
 * is the offset a dense buffer of its shape would have there). */
#define PLAN_NO_BUF (-1)

typedef struct plan_access {
    ir_ref node;      /* the value read or written */
    int32_t buf;      /* index into the function's buffer table; PLAN_NO_BUF for an index */
    int store;        /* 1: a store of a value this kernel computes */
    uint32_t present; /* bit a: the access varies along collapsed axis a */
    plan_access_kind kind;
} plan_access;

/* Whether the reduced elements of each result may be cut into pieces reduced apart (column
 * reductions with one level of reductions and nothing per element after it): at launch,
 * plan_split_pieces picks the pieces from the shape; piece p of a result reduces the reduced
 * (collapsed) elements [p * rows, (p + 1) * rows) in order into partial results, and a second
 * step combines each result's partials in piece order and finishes the result. The cut
 * depends on the shape alone, so results are the same run after run, whatever the thread
 * or block count. (A full reduction is always cut, into chunks of the backend's size.) */
typedef struct plan_split {
    int splittable;
    int32_t scratch; /* its partials' entry in plan_func.scratch */
} plan_split;

typedef struct plan_kernel {
    const ir_func *f;
    int32_t kernel; /* its index in the partition */
    int32_t part;   /* a combined kernel's part, else -1 */
    plan_layout layout;
    int32_t from, to; /* its body range [from, to) of the kernel's body */
    ir_shape dom;     /* the iteration domain (a part's: the shape of its outputs) */
    uint32_t red;     /* the domain axes reduced (0 for element-wise) */
    ir_shape outer;   /* dom with the reduced axes set to 1: the results' shape */

    /* the collapsed iteration space */
    int32_t naxes;
    uint32_t axis_dims[IR_MAX_RANK]; /* the domain axes merged into each (bit mask) */
    uint32_t reduced;                /* bit a: collapsed axis a is reduced */

    /* memory */
    int32_t nacc;
    plan_access *acc;  /* loads in order of first use, then stores */
    int32_t *load_acc; /* by node: its load access, or -1 */
    int32_t nbufs;     /* the distinct buffers the kernel touches, in order of first use */
    int32_t *bufs;
    /* by node: 1 for a stored f16/bf16 value that the kernel reads again, which those reads
     * see rounded, as the reference holds it (and as a later kernel would load it) */
    uint8_t *round_kept;

    /* reductions (every layout but element-wise without reductions) */
    int32_t nreds;
    ir_ref *reds;        /* the reductions, in body order */
    uint8_t *per_result; /* by node: 1 when the node fits the outer shape (one per result) */
    int32_t *stage;      /* by node: how many sweeps must come before it can be computed */
    int32_t nsweeps;     /* sweeps that compute reductions: 0 .. nsweeps-1 */
    int final_sweep;     /* 1: a sweep nsweeps writes per-element values after them all */
    plan_split split;    /* column and full reductions */
} plan_kernel;

/* A kernel of the partition: its parts (a combined kernel) or its one plan. */
typedef struct plan_kernel_set {
    int32_t kernel;
    ir_kernel_kind kind;
    int32_t nparts; /* combined kernels: one per part; else 1 */
    plan_kernel *parts;
} plan_kernel_set;

/* A reduction that fails over nothing: the launch checks that |shape| is not zero. */
typedef struct plan_check {
    ir_ref node;
    ir_op op;
    ir_shape shape; /* the reduced dims of its operand */
} plan_check;

/* Scratch beyond the temporaries: a split kernel's partial results, 8 bytes each (every
 * accumulator fits in a double or an int64), |per| * count * 8 bytes. */
typedef struct plan_scratch {
    int32_t kernel; /* whose partials */
    ir_shape per;   /* the results' shape (the kept dims) */
    int64_t count;  /* slots a result: pieces at most times reductions */
} plan_scratch;

typedef struct plan_func {
    const ir_func *func;
    int32_t nbufs; /* params, then results, then temps */
    plan_buf *bufs;
    int32_t ntemps;
    int32_t nkernels;
    plan_kernel_set *kernels;
    int32_t nchecks;
    plan_check *checks;
    int32_t nscratch;
    plan_scratch *scratch;
    /* In place (SPEC §3: a result may be the very buffer of a parameter of its dtype and
     * shape, and the call is as if every input were read first): inplace_hazard[o * nparams
     * + p] is 1 when result o, written where the plan writes it, could be overwritten over
     * parameter p before the last read of p: p is read by a later kernel, by another part of
     * the same combined launch, or by a later sweep of the same kernel. Where the caller
     * passes such a pair as one buffer, the runtime writes the result to a temporary and
     * copies it into place after the call. Parameters and results of other dtypes can never
     * be one buffer: 0. */
    uint8_t *inplace_hazard;
} plan_func;

typedef struct plan_module {
    int32_t nfuncs;
    plan_func *funcs;
} plan_module;

/* 0 when every launch check of pf holds for these sizes, else -1 with the message (the
 * reference's: "max over an empty axis"). */
int plan_checks_hold(const plan_func *pf, const int64_t *sym_values, char *err, size_t errlen);

/* ---- the split of a reduced axis ---------------------------------------------------------- */

/* What a backend asks of splits: whether it splits column reductions at all, and how many
 * units of work (its units of columns, times pieces) keep its workers busy: a constant of
 * the backend, never of the machine, so that results do not depend on the machine. */
typedef struct plan_options {
    int split_columns;
    int64_t want_units;
} plan_options;

/* Pieces a result's `len` reduced elements are cut into, when the kernel has `units` units
 * of columns and `want` keep the workers busy: 1 when the units are enough or the rows too
 * few to be worth it; otherwise up to PLAN_SPLIT_MAX pieces of at least PLAN_SPLIT_MIN_ROWS
 * rows. *rows gets the rows of a piece, ceil(len / pieces) (len when 1). A function of the
 * shape alone. */
int64_t plan_split_pieces(int64_t len, int64_t units, int64_t want, int64_t *rows);

enum {
    PLAN_SPLIT_MAX = 64,       /* pieces a result at most (its partials' scratch) */
    PLAN_SPLIT_MIN_ROWS = 256, /* reduced elements a piece at least */
};

/* ---- planning ----------------------------------------------------------------------------- */

/* Plans every function (each must have its partition); *out lives in `arena`. 0, or -1 with
 * a message in err (an unsupported construct, which the verifier should have refused). */
int plan_module_build(ir_func *const *funcs, int nfuncs, const plan_options *opt, ir_arena *arena,
                      plan_module **out, char *err, size_t errlen);

/* The buffer a stored value or an INPUT is read from (its first result, else its temp, or
 * the parameter's), or -1. */
int32_t plan_home_buf(const plan_func *pf, ir_ref r);

/* |s| under sym_values (0 when a dim is 0). */
int64_t plan_shape_count(const ir_shape *s, const int64_t *sym_values);
/* The shape made of the domain axes in `mask`, in order. */
ir_shape plan_sub_shape(const ir_shape *d, uint32_t mask);
/* The shape of collapsed axes `mask` of p (their domain axes, in order). */
ir_shape plan_axes_shape(const plan_kernel *p, uint32_t mask);
/* The collapsed axes of p along which a value of shape s varies (bit a: axis a). */
uint32_t plan_presence(const plan_kernel *p, const ir_shape *s);
/* All collapsed axes of p: (1 << naxes) - 1. */
static inline uint32_t plan_all_axes(const plan_kernel *p) {
    return p->naxes >= 32 ? ~0u : (1u << p->naxes) - 1;
}

/* Checks the plan against its IR: every access in bounds and of the right buffer, collapsed
 * axes covering the domain's non-unit axes once, layouts consistent with the reduced axes,
 * stages and sweeps consistent with the body. 0, or -1 with a message. */
int plan_verify(const plan_module *m, char *err, size_t errlen);

/* The plan as text (`fusec --emit=plan`). */
void plan_print(ir_buf *b, const plan_module *m);

#endif
