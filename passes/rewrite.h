/* passes/rewrite.h: what the passes share (not passes themselves):
 *   rewrite.c    compacting the node array after a rewrite; node hashing; building a
 *                partition from per-node kernel labels (topological order, stored values,
 *                kernel inputs and outputs, kinds)
 *   kgraph.c     the kernel graph the fusion passes merge kernels on, with the legality
 *                rules (signatures, no cycles, full reductions), and the rounds of merging,
 *                recomputing and rebuilding the partition that two of them run
 *   recompute.c  the recompute-or-store rule for values several kernels need
 */
#ifndef FUSEC_PASSES_REWRITE_H
#define FUSEC_PASSES_REWRITE_H

#include "passes/passes.h"

/* Writes a printf-like message into c->err and returns -1 (`return pass_fail(c, ...)`). */
int pass_fail(pass_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- rewrite.c ------------------------------------------------------------------------- */

static inline int pass_is_leaf(const ir_node *n) {
    return ir_ops[n->op].cls == IR_CLASS_LEAF;
}
static inline int pass_is_pointwise(const ir_node *n) {
    ir_class k = ir_ops[n->op].cls;
    return k == IR_CLASS_EW || k == IR_CLASS_CAST || k == IR_CLASS_BROADCAST;
}
static inline int pass_is_reduce(const ir_node *n) {
    return ir_ops[n->op].cls == IR_CLASS_REDUCE;
}

/* Applies a replacement map to an unpartitioned function whose nodes are in topological
 * index order: repl[r] == r keeps node r; repl[r] == s with s < r makes every use of r a use
 * of s and drops r. With drop_dead, nodes no OUTPUT needs are dropped too (INPUT nodes always
 * stay: they are the parameters). The kept nodes keep their relative order; args, params and
 * outputs are renumbered. 0, or -1 when out of memory. */
int pass_compact(ir_func *f, ir_ref *repl, int drop_dead);

/* A hash of what makes two nodes compute the same value (op, dtype, shape, operands, axes,
 * the bits of a constant, the index of an INPUT/OUTPUT), and equality on the same. */
uint64_t pass_node_hash(const ir_node *n);
int pass_node_same(const ir_node *a, const ir_node *b);

/* The number of elements of a shape is 1 (rank 0, or every dim the literal 1). */
int pass_shape_is_scalar(const ir_shape *s);

/* Builds f->partition from kernel labels: node.kernel of every non-leaf, non-OUTPUT node
 * holds a label in [0, nlabels). Nodes may be out of topological order on entry (clones are
 * appended at the end). `group` (NULL: each label alone) maps labels to launches: labels of
 * one group become one COMBINED kernel with a part each. The build
 *   - drops nodes no OUTPUT needs, and merges identical nodes of one label;
 *   - gives an OUTPUT of a leaf (an INPUT or CONST returned as is) a copy kernel (a cast to
 *     its own dtype), so every result is written by a kernel;
 *   - orders the launches by their dependencies (ties: source order) and renumbers the nodes:
 *     leaves, then each kernel's body in order, then the OUTPUT nodes;
 *   - flags IR_NODE_STORED on each value another kernel or an OUTPUT reads, and fills each
 *     kernel's kind, domain, reduce axes, body, inputs, outputs and parts.
 * Fails (-1) on a cycle between launches: a pass merged what it must not. */
int pass_partition_build(ir_func *f, int32_t nlabels, const int32_t *group, pass_ctx *c);

/* ---- kgraph.c -------------------------------------------------------------------------- */

/* What a kernel iterates over, which decides what it may be merged with. */
typedef struct pass_ksig {
    int red;       /* reduces: `dom` is the shape reduced, `axes` the reduced axes */
    ir_shape dom;  /* pointwise: the iteration domain (the shape of what it stores) */
    uint32_t axes; /* reductions only */
    int combined;  /* a COMBINED launch group (kgraph_combine) */
} pass_ksig;

typedef struct pass_kgraph pass_kgraph;

/* The most reductions one kernel holds: each is an accumulator in every thread, combined
 * across a block through shared memory, of which a kernel may declare 48 KB statically on
 * CUDA; a column kernel takes 2 KB a reduction of 8-byte values, so 24 would be the end (25
 * f64 column sums of one input failed NVRTC's ptxas). Past this, siblings go to another
 * kernel, which reads the shared inputs again. */
#define PASS_MAX_KERNEL_REDUCTIONS 16

/* The most levels of reductions one kernel holds, a reduction's level being one more than
 * the deepest reduction it depends on in the kernel (softmax and layernorm: 2; the second
 * derivative of a cross-entropy, tests/programs/grad.fuse's d2xent: 5). Each level is one
 * sweep over a row or column, and a sweep computes the cone of per-element values below its
 * reductions again from the inputs: d levels cost d(d+1)/2 cones of work per element, and as
 * much code. Unbounded, a chain of 100 dependent row softmaxes made kernels of 16 levels that
 * took 11.5 s to compile for the CPU and over 60 s through NVRTC with the gradient; at 5,
 * 1.2 s and 9 s (d2xent stays one kernel: split at 4, it moved 2.2 times the bytes). */
#define PASS_MAX_KERNEL_LEVELS 5

/* The graph of the labels in node.kernel (0 .. nlabels-1) with the signatures `sig`
 * (copied): an edge A -> B where a node of B reads a node of A. Node refs must be in
 * topological order. NULL when out of memory. */
pass_kgraph *pass_kgraph_new(ir_func *f, int32_t nlabels, const pass_ksig *sig);
/* Labels and signatures of f's current partition (node.kernel already holds the kernel
 * indices); the array has f->partition->nkernels entries. */
pass_ksig *pass_sigs_of_partition(ir_func *f);

int32_t pass_kgraph_find(pass_kgraph *g, int32_t u);
/* Merges the kernels of u and v into one when their signatures agree (kgraph.c states the
 * rule) and the merge makes no cycle and breaks no rule of a full reduction. 1: merged. */
int pass_kgraph_try_merge(pass_kgraph *g, int32_t u, int32_t v);
/* Tries every producer -> consumer pair of kernels for which want(producer, consumer) holds,
 * in dependency order, round after round until a round merges nothing or
 * MERGE_EDGES_ROUNDS_MAX rounds or the graph's budget run out (kgraph.c). Returns the number
 * of merges. */
int pass_kgraph_merge_edges(pass_kgraph *g, int (*want)(const pass_ksig *p, const pass_ksig *c));
/* Merges kernels over a common domain (pointwise domain, reduced shape, or reduction
 * result) for which want(a, b) holds; with shared_only, only kernels that also read a
 * common input (an INPUT or a stored value). Greedy, in dependency order: each kernel
 * joins the first of the nearest groups formed so far (up to 16) it may merge with, else
 * starts a group. Returns the number of merges. */
int pass_kgraph_merge_pairs(pass_kgraph *g, int shared_only,
                            int (*want)(const pass_ksig *a, const pass_ksig *b));
/* Rule 2 (combined launches): groups pointwise kernels that depend on each other in no
 * way (directly or through other kernels) into one launch each, greedily as merge_pairs
 * does. Only the launch graph changes: the labels stay (one per part). Returns the number
 * of groups of two or more kernels. */
int pass_kgraph_combine(pass_kgraph *g);
/* Writes the merged labels back: node.kernel = a dense label per merged kernel; group
 * (nlabels entries, may be NULL) receives the launch group of each new label. Returns the
 * number of labels. */
int32_t pass_kgraph_relabel(pass_kgraph *g, int32_t **group);
/* The signatures of the new labels after pass_kgraph_relabel. */
pass_ksig *pass_kgraph_sigs(pass_kgraph *g);
/* Rounds of fusion on f's partition: the kernel graph of the partition, merge(g), Rule 1
 * (pass_recompute, into any kernel), and a new partition; again while Rule 1 copied
 * something, up to a bound (kgraph.c says why). 0, or -1 with a message in c->err. */
int pass_fuse_rounds(ir_func *f, pass_ctx *c, void (*merge)(pass_kgraph *g));

/* ---- recompute.c ----------------------------------------------------------------------- */

/* Rule 1 (recompute or store): for every value V that a kernel K reads from another kernel
 * H, with V computed element-wise from H's inputs (no reduction of H in between), copies
 * V's element-wise cone into K, when may_receive[K] (NULL: any), where the rule says so
 * (recompute.c). Labels are node.kernel, nodes in topological order on entry; copies are
 * appended with K's label (out of order: pass_partition_build sorts). Returns the number
 * of values recomputed, or -1. */
int pass_recompute(ir_func *f, int32_t nlabels, const unsigned char *may_receive, pass_ctx *c);

#endif
