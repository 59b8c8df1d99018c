/* passes/cse.c: common-subexpression elimination by hash-consing.
 *
 * Two nodes that compute the same value (same op, dtype, shape, operands, axes, and for a
 * constant the same bits, so 0.0 and -0.0 stay apart) become one: the first in order. INPUT
 * and OUTPUT nodes are never merged. Every op is pure, so this is always exact.
 */
#include "passes/rewrite.h"

/* Requires: no partition; nodes in topological order. */
int pass_cse(ir_func *f, pass_ctx *c) {
    if (f->partition) return pass_fail(c, "cse: the function is already partitioned");
    int32_t n = f->nnodes;
    uint32_t cap = 16;
    while (cap < (uint32_t)n * 2u + 16u)
        cap *= 2;
    ir_ref *slot = ir_arena_calloc(f->arena, cap, sizeof(ir_ref));
    ir_ref *repl = ir_arena_calloc(f->arena, (size_t)n + 1, sizeof(ir_ref));
    if (!slot || !repl) return pass_fail(c, "out of memory");
    for (uint32_t i = 0; i < cap; i++)
        slot[i] = IR_NONE;
    int changed = 0;
    for (ir_ref r = 0; r < n; r++) {
        ir_node *nd = &f->nodes[r];
        for (int i = 0; i < ir_ops[nd->op].arity; i++)
            nd->args[i] = repl[nd->args[i]];
        repl[r] = r;
        if (nd->op == IR_OP_INPUT || nd->op == IR_OP_OUTPUT) continue;
        for (uint32_t i = (uint32_t)pass_node_hash(nd) & (cap - 1);; i = (i + 1) & (cap - 1)) {
            if (slot[i] == IR_NONE) {
                slot[i] = r;
                break;
            }
            if (pass_node_same(&f->nodes[slot[i]], nd)) {
                repl[r] = slot[i];
                changed = 1;
                break;
            }
        }
    }
    if (changed && pass_compact(f, repl, 0)) return pass_fail(c, "out of memory");
    return 0;
}
