/* passes/fuse_reduction.c: reduction fusion.
 *
 *   prologue  an element-wise kernel over the reduced shape D that feeds a reduction joins
 *             it: the reduction reads the prologue's inputs instead of a stored operand (a
 *             value the prologue also has to store, a function result or a value another
 *             kernel reads, becomes an extra output written during the same sweep);
 *   epilogue  an element-wise kernel that consumes a reduction's result and iterates over
 *             the same outer domain joins it: per element of D (x - max, e / sum: the row
 *             is gone over again by the block that owns it, not read again from memory) or
 *             per element of the reduced shape reduce(D, axes) (mean + eps, rsqrt);
 *   siblings  reductions over the same shape and axes that read a common input share one
 *             kernel (`sum(x), max(x)`).
 * Chains combine: softmax, log-softmax, layernorm and rmsnorm each become one
 * row-reduction kernel that reads a row once from memory and writes the result once.
 *
 * What is not fused (kgraph.c has the exact rule): a consumer over a different domain (a
 * row sum used by a kernel over [R, D] when the row is [R, C]) reads the stored result; two
 * reductions over different axes of one value are two kernels (the value is recomputed in
 * both or stored, by Rule 1); a full reduction takes only scalar epilogues, since no block
 * owns the whole domain to go over it again.
 */
#include "passes/rewrite.h"

static int want_around_reduction(const pass_ksig *p, const pass_ksig *c) {
    return p->red || c->red;
}

static int want_siblings(const pass_ksig *a, const pass_ksig *b) {
    return a->red && b->red;
}

/* A round's merges: prologues and epilogues, then siblings. */
static void merge_around_reductions(pass_kgraph *g) {
    pass_kgraph_merge_edges(g, want_around_reduction);
    pass_kgraph_merge_pairs(g, 1, want_siblings);
}

/* Requires: a partition from fuse_pointwise (or a later pass). */
int pass_fuse_reduction(ir_func *f, pass_ctx *c) {
    if (!f->partition) return pass_fail(c, "fuse_reduction: the function is not partitioned");
    /* a recomputed value can leave its kernel with nothing to do, or free a merge */
    return pass_fuse_rounds(f, c, merge_around_reductions);
}
