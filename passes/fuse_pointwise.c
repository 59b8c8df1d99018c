/* passes/fuse_pointwise.c: pointwise fusion, the first partitioning pass.
 *
 * Maximal groups of element-wise ops (casts and broadcasts included) over one iteration
 * domain become one kernel; each reduction is a kernel of its own for now (fuse_reduction
 * fuses around them).
 *
 * The iteration domain of an element-wise op is its shape: EW ops and casts have the shape
 * of their operands, so they group with them. A broadcast belongs to the domain it
 * broadcasts INTO: inside that kernel it is an indexed read of its operand (a [C] bias
 * broadcast into [B, C] is read inside the [B, C] kernel, with stride 0 along B). Its
 * operand, a smaller domain, is either a kernel input (a parameter or a stored value) or,
 * when it is computed element-wise, recomputed inside the larger kernel per element or
 * stored by a kernel of its own: Rule 1 (passes/recompute.c) decides, as for any value
 * several kernels need. For example `x + b * 2.0` with b: [C] computes b * 2.0 inside the
 * [B, C] kernel (it reads b instead of a stored b * 2.0: fewer bytes, one launch less).
 *
 * How: each node gets a stage, the number of reductions on the longest path from the
 * inputs to it. Element-wise nodes of one shape and one stage, connected by operand edges,
 * form a group: such groups can never depend on each other in a cycle (a path that leaves
 * a group and comes back to its shape must pass a reduction, which raises the stage). Then
 * groups of one domain that feed each other across stages are merged where that makes no
 * cycle (kgraph), and Rule 1 copies element-wise values into the groups that need them.
 */
#include "passes/rewrite.h"

static int32_t uf_find(int32_t *p, int32_t x) {
    while (p[x] != x) {
        p[x] = p[p[x]];
        x = p[x];
    }
    return x;
}

static int want_pointwise(const pass_ksig *p, const pass_ksig *c) {
    return !p->red && !c->red;
}

/* Requires: no partition; nodes in topological order (the clean-up passes ran). */
int pass_fuse_pointwise(ir_func *f, pass_ctx *c) {
    if (f->partition) return pass_fail(c, "fuse_pointwise: the function is already partitioned");
    ir_arena *A = f->arena;
    int32_t n = f->nnodes;
    int32_t *stage = ir_arena_calloc(A, (size_t)n + 1, sizeof(int32_t));
    int32_t *uf = ir_arena_calloc(A, (size_t)n + 1, sizeof(int32_t));
    int32_t *label = ir_arena_calloc(A, (size_t)n + 1, sizeof(int32_t));
    if (!stage || !uf || !label) return pass_fail(c, "out of memory");
    for (ir_ref r = 0; r < n; r++) {
        const ir_node *nd = &f->nodes[r];
        int32_t s = 0;
        for (int i = 0; i < ir_ops[nd->op].arity; i++)
            if (stage[nd->args[i]] > s) s = stage[nd->args[i]];
        stage[r] = s + (pass_is_reduce(nd) ? 1 : 0);
        uf[r] = r;
    }
    for (ir_ref r = 0; r < n; r++) {
        const ir_node *nd = &f->nodes[r];
        if (!pass_is_pointwise(nd)) continue;
        for (int i = 0; i < ir_ops[nd->op].arity; i++) {
            ir_ref a = nd->args[i];
            const ir_node *an = &f->nodes[a];
            if (!pass_is_pointwise(an) || stage[a] != stage[r]) continue;
            if (!ir_shape_equal(&an->shape, &nd->shape)) continue;
            int32_t x = uf_find(uf, a), y = uf_find(uf, r);
            if (x != y) uf[x < y ? y : x] = x < y ? x : y;
        }
    }
    /* labels: one per group, one per reduction */
    int32_t nl = 0;
    for (ir_ref r = 0; r < n; r++)
        label[r] = -1;
    pass_ksig *sig = ir_arena_calloc(A, (size_t)n + 1, sizeof(pass_ksig));
    if (!sig) return pass_fail(c, "out of memory");
    for (ir_ref r = 0; r < n; r++) {
        ir_node *nd = &f->nodes[r];
        nd->kernel = -1;
        nd->flags = 0;
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT) continue;
        if (pass_is_reduce(nd)) {
            sig[nl] = (pass_ksig){1, f->nodes[nd->args[0]].shape, nd->axes, 0};
            nd->kernel = nl++;
            continue;
        }
        int32_t root = uf_find(uf, r);
        if (label[root] < 0) {
            label[root] = nl;
            sig[nl] = (pass_ksig){0, f->nodes[root].shape, 0, 0};
            nl++;
        }
        nd->kernel = label[root];
    }

    /* groups of one domain that feed each other across stages */
    pass_kgraph *g = pass_kgraph_new(f, nl, sig);
    if (!g) return pass_fail(c, "out of memory");
    pass_kgraph_merge_edges(g, want_pointwise);
    nl = pass_kgraph_relabel(g, NULL);
    if (nl < 0) return pass_fail(c, "out of memory");
    pass_ksig *s2 = pass_kgraph_sigs(g);

    /* Rule 1, into element-wise kernels only: reductions take their prologues next pass */
    unsigned char *recv = ir_arena_calloc(A, (size_t)nl + 1, 1);
    if (!recv) return pass_fail(c, "out of memory");
    for (int32_t l = 0; l < nl; l++)
        recv[l] = !s2[l].red;
    if (pass_recompute(f, nl, recv, c) < 0) return -1;
    return pass_partition_build(f, nl, NULL, c);
}
