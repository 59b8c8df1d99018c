/* passes/nofuse.c: the unfused baseline (`--no-fuse`): every operation its own kernel, every
 * intermediate written to memory and read back, as an eager framework runs the program.
 *
 * Element-wise ops, casts and reductions each get a kernel. A broadcast is not an operation
 * of its own here, as in eager frameworks: it is a view, read with stride 0 by the kernel of
 * each operation that uses it (a copy of the broadcast node in each such kernel). Only a
 * broadcast that is itself a result (or feeds another broadcast, which simplify removes) is
 * written out by a kernel of its own. Constants are never kernels: each kernel inlines them.
 */
#include "passes/rewrite.h"

/* Requires: no partition; nodes in topological order. */
int pass_nofuse(ir_func *f, pass_ctx *c) {
    if (f->partition) return pass_fail(c, "nofuse: the function is already partitioned");
    ir_arena *A = f->arena;
    int32_t n = f->nnodes;
    int32_t nl = 0;
    for (ir_ref r = 0; r < n; r++) {
        ir_node *nd = &f->nodes[r];
        nd->kernel = -1;
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT || nd->op == IR_OP_BROADCAST) continue;
        nd->kernel = nl++;
    }
    /* users of each broadcast (CSR over all nodes; only broadcasts are looked up) */
    int32_t *start = ir_arena_calloc(A, (size_t)n + 2, sizeof(int32_t));
    int32_t *fill = ir_arena_calloc(A, (size_t)n + 1, sizeof(int32_t));
    if (!start || !fill) return pass_fail(c, "out of memory");
    for (ir_ref r = 0; r < n; r++) {
        const ir_node *nd = &f->nodes[r];
        for (int i = 0; i < ir_ops[nd->op].arity; i++)
            start[nd->args[i] + 1]++;
    }
    for (ir_ref r = 0; r < n; r++)
        start[r + 1] += start[r];
    ir_ref *users = ir_arena_calloc(A, (size_t)start[n] + 1, sizeof(ir_ref));
    if (!users) return pass_fail(c, "out of memory");
    for (ir_ref r = 0; r < n; r++) {
        const ir_node *nd = &f->nodes[r];
        for (int i = 0; i < ir_ops[nd->op].arity; i++)
            users[start[nd->args[i]] + fill[nd->args[i]]++] = r;
    }
    for (ir_ref b = 0; b < n; b++) {
        if (f->nodes[b].op != IR_OP_BROADCAST) continue;
        int own = 0;
        for (int32_t i = start[b]; i < start[b + 1]; i++) {
            ir_op uop = f->nodes[users[i]].op;
            if (uop == IR_OP_OUTPUT || uop == IR_OP_BROADCAST) own = 1;
        }
        if (own) f->nodes[b].kernel = nl++;
        /* the first using kernel gets the node itself, each other one a copy */
        for (int32_t i = start[b]; i < start[b + 1]; i++) {
            ir_ref u = users[i];
            int32_t k = f->nodes[u].kernel;
            if (k < 0 || f->nodes[u].op == IR_OP_BROADCAST) continue;
            if (f->nodes[b].kernel < 0) {
                f->nodes[b].kernel = k;
                continue;
            }
            if (f->nodes[b].kernel == k) continue;
            ir_node copy = f->nodes[b];
            copy.kernel = k;
            if (f->nnodes >= f->cap_nodes) {
                ir_node *p =
                    ir_arena_grow(A, f->nodes, sizeof(*f->nodes), &f->cap_nodes, f->nnodes + 1);
                if (!p) return pass_fail(c, "out of memory");
                f->nodes = p;
            }
            ir_ref cr = f->nnodes++;
            f->nodes[cr] = copy;
            ir_node *un = &f->nodes[u];
            for (int a = 0; a < ir_ops[un->op].arity; a++)
                if (un->args[a] == b) un->args[a] = cr;
        }
        if (f->nodes[b].kernel < 0) f->nodes[b].kernel = nl++; /* unused: dropped by build */
    }
    return pass_partition_build(f, nl, NULL, c);
}
