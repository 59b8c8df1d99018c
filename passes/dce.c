/* passes/dce.c: dead-code elimination.
 *
 * Drops every node no OUTPUT needs. INPUT nodes stay even when unused: they are the
 * function's parameters, and a launch passes one tensor for each.
 */
#include "passes/rewrite.h"

/* Requires: no partition; nodes in topological order. */
int pass_dce(ir_func *f, pass_ctx *c) {
    if (f->partition) return pass_fail(c, "dce: the function is already partitioned");
    ir_ref *repl = ir_arena_calloc(f->arena, (size_t)f->nnodes + 1, sizeof(ir_ref));
    if (!repl) return pass_fail(c, "out of memory");
    for (ir_ref r = 0; r < f->nnodes; r++)
        repl[r] = r;
    if (pass_compact(f, repl, 1)) return pass_fail(c, "out of memory");
    return 0;
}
