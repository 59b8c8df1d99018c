/* frontend/check_graph.c: the file's call graph, looked at before anything is lowered.
 *
 * Calls are inlined, so a cycle would inline forever and a chain of functions that each
 * call the next twice grows exponentially. Both are found here from the syntax tree alone,
 * in time linear in the file:
 * - names: the first definition of a name is the one calls reach; later ones and functions
 *   named like a built-in are reported when their turn comes (check.c);
 * - cycles: a depth-first search (iterative: a long chain of functions must not exhaust the
 *   stack) finds every cycle through at least one back edge; the call on that edge gets
 *   the error, naming the cycle, and the functions on it are never inlined;
 * - sizes: for each function not reaching a cycle, the expression visits, the depth of
 *   nested calls and the expression nesting it takes once every call is inlined. check.c
 *   compares them with the limits before lowering, so an entry point that is too large is
 *   reported at once instead of after a long walk.
 */
#include "check_internal.h"

#include <string.h>

/* Sizes saturate here, far above every limit, so sums cannot overflow. */
#define GRAPH_SATURATE ((int64_t)1 << 48)

static int64_t sat_add(int64_t a, int64_t b) {
    return a + b > GRAPH_SATURATE ? GRAPH_SATURATE : a + b;
}

/* Counts e's expressions and records its calls of file functions. The parser bounds the
 * height of every tree, so this recursion is bounded too. */
static int walk(check_ctx *c, check_fninfo *fi, const ast_expr *e, int32_t depth) {
    if (!e) return 1;
    fi->own_visits++;
    if (depth > fi->own_nest) fi->own_nest = depth;
    switch (e->kind) {
    case AST_INT:
    case AST_FLOAT:
    case AST_BOOL:
    case AST_NAME: return 1;
    case AST_UNARY: return walk(c, fi, e->u.unary.x, depth + 1);
    case AST_BINARY:
        return walk(c, fi, e->u.binary.l, depth + 1) && walk(c, fi, e->u.binary.r, depth + 1);
    case AST_TERNARY:
        return walk(c, fi, e->u.ternary.c, depth + 1) && walk(c, fi, e->u.ternary.a, depth + 1) &&
               walk(c, fi, e->u.ternary.b, depth + 1);
    case AST_CAST: return walk(c, fi, e->u.cast.x, depth + 1);
    case AST_CALL: {
        ir_op op;
        const char *name = e->u.call.name ? e->u.call.name : "";
        if (!ir_op_lookup_builtin(name, strlen(name), &op)) {
            int32_t callee = check_map_get(&c->funcs, name);
            if (callee >= 0) {
                check_edge edge = {callee, depth, e};
                IR_VEC_PUSH(c->a, fi->edges, fi->nedges, fi->cap_edges, edge);
                if (!fi->edges) return 0;
            }
        }
        for (int32_t i = 0; i < e->u.call.nargs; i++)
            if (!walk(c, fi, e->u.call.args[i].expr, depth + 1)) return 0;
        return 1;
    }
    }
    return 1;
}

typedef struct dfs_item {
    int32_t fn, next_edge;
} dfs_item;

/* The back edge from stack[top].fn (its edge k) to `to`, which is on the stack at `at`. */
static int record_cycle(check_ctx *c, const dfs_item *stack, int32_t top, int32_t at, int32_t k) {
    const ast_func *funcs = c->file->funcs;
    int32_t from = stack[top].fn, to = stack[at].fn;
    ir_buf path;
    ir_buf_init(&path, c->a);
    for (int32_t s = at; s <= top; s++) {
        ir_buf_printf(&path, "%s -> ", funcs[stack[s].fn].name);
        c->info[stack[s].fn].in_cycle = 1;
    }
    ir_buf_puts(&path, funcs[to].name);
    if (!path.data) return 0;
    check_recursion rec = {c->info[from].edges[k].call, path.data};
    check_fninfo *fi = &c->info[from];
    IR_VEC_PUSH(c->a, fi->recs, fi->nrecs, fi->cap_recs, rec);
    return fi->recs != NULL;
}

/* A function's sizes from its callees', once they are final. */
static void finish(check_ctx *c, int32_t u) {
    check_fninfo *fi = &c->info[u];
    fi->cost = fi->own_visits;
    fi->calldepth = 0;
    fi->nest = fi->own_nest;
    for (int32_t k = 0; k < fi->nedges; k++) {
        const check_fninfo *g = &c->info[fi->edges[k].callee];
        if (g->in_cycle || g->reaches_cycle || g->state == 1) {
            fi->reaches_cycle = 1;
            continue;
        }
        fi->cost = sat_add(fi->cost, g->cost);
        if (g->calldepth + 1 > fi->calldepth) fi->calldepth = g->calldepth + 1;
        if (fi->edges[k].depth + g->nest > fi->nest)
            fi->nest = sat_add(fi->edges[k].depth, g->nest);
    }
    fi->state = 2;
}

int check_graph(check_ctx *c) {
    const ast_file *file = c->file;
    int32_t n = file->nfuncs;
    c->info = ir_arena_calloc(c->a, (size_t)(n > 0 ? n : 1), sizeof *c->info);
    if (!c->info || !check_map_init(c, &c->funcs, n)) return 0;
    for (int32_t i = 0; i < n; i++) {
        const char *name = file->funcs[i].name ? file->funcs[i].name : "";
        ir_op op;
        c->info[i].dup_of = check_map_get(&c->funcs, name);
        if (c->info[i].dup_of >= 0) continue;
        if (ir_op_lookup_builtin(name, strlen(name), &op)) {
            c->info[i].builtin_name = 1;
            continue;
        }
        check_map_put(&c->funcs, name, i);
    }

    for (int32_t i = 0; i < n; i++) {
        check_fninfo *fi = &c->info[i];
        const ast_func *fn = &file->funcs[i];
        if (fi->dup_of >= 0 || fi->builtin_name) continue;
        for (int32_t k = 0; k < fn->nlets; k++)
            if (!walk(c, fi, fn->lets[k].value, 1)) return 0;
        for (int32_t k = 0; k < fn->nresults; k++)
            if (!walk(c, fi, fn->results[k], 1)) return 0;
    }

    dfs_item *stack = ir_arena_calloc(c->a, (size_t)(n > 0 ? n : 1), sizeof *stack);
    if (!stack) return 0;
    for (int32_t root = 0; root < n; root++) {
        if (c->info[root].dup_of >= 0 || c->info[root].builtin_name || c->info[root].state)
            continue;
        int32_t top = 0;
        stack[0] = (dfs_item){root, 0};
        c->info[root].state = 1;
        while (top >= 0) {
            dfs_item *it = &stack[top];
            check_fninfo *fi = &c->info[it->fn];
            if (it->next_edge == fi->nedges) {
                finish(c, it->fn);
                top--;
                continue;
            }
            int32_t k = it->next_edge++;
            int32_t v = fi->edges[k].callee;
            if (c->info[v].state == 0) {
                c->info[v].state = 1;
                stack[++top] = (dfs_item){v, 0};
            } else if (c->info[v].state == 1) {
                int32_t at = top;
                while (stack[at].fn != v)
                    at--;
                if (!record_cycle(c, stack, top, at, k)) return 0;
            }
        }
    }
    return 1;
}

const char *check_recursion_at(const check_ctx *c, int32_t fn, const ast_expr *e) {
    const check_fninfo *fi = &c->info[fn];
    for (int32_t i = 0; i < fi->nrecs; i++)
        if (fi->recs[i].call == e) return fi->recs[i].path;
    return NULL;
}
