/* passes/passes.h: the pass pipeline that turns a checked IR function into a fusion
 * partition (ir_partition): clean-up passes, then either the fusion passes or the
 * one-operation-per-kernel baseline (--no-fuse), then the fusion report.
 *
 * Every pass has one shape, `int pass_NAME(ir_func *f, pass_ctx *c)`: it rewrites f in
 * place (allocating from f->arena only), returns 0, or -1 with a message in c->err. The
 * order is written once, in passes/pipeline.c; the verifier (ir_verify, which checks the
 * partition too) runs after every pass. The passes know no backend and no syntax.
 */
#ifndef FUSEC_PASSES_H
#define FUSEC_PASSES_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

typedef struct pass_options {
    int no_fuse;            /* every operation its own kernel (the unfused baseline) */
    const char *dump_after; /* a pass name: the IR after that pass goes to `dump`; NULL: none */
    ir_buf *dump;           /* where the dump goes (NULL: into `report`) */
    ir_buf *report;         /* where the fusion report goes when `verbose` (NULL: nowhere) */
    int verbose;            /* write the per-kernel fusion report */
    /* Concrete sizes of f's symbolic dims (f->nsyms of them) for the report's byte counts;
     * NULL: the report prints formulas in the symbols. */
    const int64_t *sym_values;
} pass_options;

/* Return values of pass_run_pipeline. */
enum {
    PASS_OK = 0,
    PASS_ERR_INTERNAL = -1, /* a pass failed or produced IR the verifier rejects */
    PASS_ERR_USAGE = -2,    /* a bad option: an unknown pass name for dump_after */
};

/* Runs the whole pipeline on f, in place; on success f->partition is set. The message of
 * a failure goes into err. An unknown dump_after fails before any pass runs, with a message
 * that lists the valid names. */
int pass_run_pipeline(ir_func *f, const pass_options *o, char *err, size_t errlen);

/* The pass names in pipeline order, comma-separated ("fold, simplify, ..."), for --help. */
const char *pass_names(void);

/* ---- the passes (one file each); pipeline.c runs them in order ------------------------- */

typedef struct pass_ctx {
    const pass_options *opt;
    char *err;
    size_t errlen;
    /* A copy of the function after the clean-up passes, before partitioning: the report
     * measures the --no-fuse baseline on it. Set by the pipeline. */
    ir_func *cleaned;
} pass_ctx;

/* The pass called `name` in the pipeline (pass_names), for running passes one at a time by
 * name (the tests of tests/ir/); NULL when there is none. The caller runs ir_verify after it,
 * as the pipeline does. */
typedef int (*pass_fn)(ir_func *f, pass_ctx *c);
pass_fn pass_find(const char *name);

int pass_grad(ir_func *f, pass_ctx *c);            /* grad(L, x): reverse-mode gradients */
int pass_fold(ir_func *f, pass_ctx *c);            /* constant folding */
int pass_simplify(ir_func *f, pass_ctx *c);        /* IEEE-exact algebraic identities */
int pass_cse(ir_func *f, pass_ctx *c);             /* common subexpressions */
int pass_dce(ir_func *f, pass_ctx *c);             /* dead code */
int pass_nofuse(ir_func *f, pass_ctx *c);          /* --no-fuse: one op a kernel */
int pass_fuse_pointwise(ir_func *f, pass_ctx *c);  /* element-wise groups */
int pass_fuse_reduction(ir_func *f, pass_ctx *c);  /* prologues, epilogues, siblings */
int pass_fuse_horizontal(ir_func *f, pass_ctx *c); /* multi-output and combined kernels */
int pass_report(ir_func *f, pass_ctx *c);          /* bytes moved, fused vs unfused */

/* The report's numbers, for tests and `bench`: the bytes the partition of f moves (each
 * kernel reads its inputs once and writes its outputs once), evaluated with sym_values
 * (NULL: every symbolic dim taken as 1, so the result is the sum of the coefficients). */
double pass_partition_bytes(const ir_func *f, const int64_t *sym_values);

#endif
