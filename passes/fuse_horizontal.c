/* passes/fuse_horizontal.c: horizontal fusion, the last partitioning pass.
 *
 *   multi-output  kernels that could share one launch by their signatures (same pointwise
 *                 domain; same reduced shape and axes; a pointwise kernel over a
 *                 reduction's shape or its result's shape) and that do not depend on each
 *                 other through a third kernel merge into one kernel with several outputs,
 *                 which loads the inputs they share once (`return x * y, x + y`: one kernel
 *                 reading x and y once).
 *   combined      Rule 2: pointwise kernels over DIFFERENT domains that do not depend on
 *                 each other at all (no path either way) run as one launch, a COMBINED
 *                 kernel whose parts each cover their own domain (the grid is split between
 *                 them). Each part reads and writes exactly what it did alone, so this
 *                 costs no bandwidth and saves a launch each time (the fusion report
 *                 counts an input the parts share once: docs/fusion.md). Reductions are never
 *                 combined: their launch shape (a block per row or column, or a grid-wide
 *                 tree) differs from a pointwise grid, and splitting one launch between
 *                 both schemes would cost more than the launch it saves.
 */
#include "passes/rewrite.h"

static int want_any(const pass_ksig *a, const pass_ksig *b) {
    (void)a;
    (void)b;
    return 1;
}

/* A round's merges: kernels over a common domain, into multi-output kernels. */
static void merge_multi_output(pass_kgraph *g) {
    pass_kgraph_merge_pairs(g, 0, want_any);
}

/* Requires: a partition from fuse_reduction (or any partition without combined kernels). */
int pass_fuse_horizontal(ir_func *f, pass_ctx *c) {
    if (!f->partition) return pass_fail(c, "fuse_horizontal: the function is not partitioned");
    /* a merge can give a kernel the inputs to recompute what it read from another */
    if (pass_fuse_rounds(f, c, merge_multi_output)) return -1;

    /* Rule 2 */
    int32_t nl = f->partition->nkernels;
    pass_ksig *sig = pass_sigs_of_partition(f);
    pass_kgraph *g = sig ? pass_kgraph_new(f, nl, sig) : NULL;
    if (!g) return pass_fail(c, "out of memory");
    if (pass_kgraph_combine(g) == 0) return 0;
    int32_t *group = NULL;
    nl = pass_kgraph_relabel(g, &group);
    if (nl < 0) return pass_fail(c, "out of memory");
    return pass_partition_build(f, nl, group, c);
}
