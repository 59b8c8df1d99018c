/* frontend/check_grad.c: `fn NAME = grad(FN);` and `fn NAME = grad(FN, wrt=(a, b));` (SPEC
 * §1, "Gradients"): their checks, and their IR, which passes/grad.c then differentiates.
 *
 * NAME's IR is FN's checked IR with NAME's parameters (FN's, then one cotangent per result of
 * FN with that result's declared type: dy, or dy0, dy1, ...; a name FN already has gets '_'
 * appended until it is free), L = the sum over every element of each float result times its
 * cotangent, and per parameter x in wrt (default: every float parameter of FN) a result
 * grad(L, x) of x's type. FN may itself be a gradient (the gradient of a gradient): its IR
 * still holds its grad nodes, which the pass expands first. Functions are checked in file
 * order, but a gradient has the function it differentiates checked first.
 *
 * Messages:
 *   unknown function 'f'                          (at FN)
 *   grad of built-in 'exp': write a function that calls it
 *   recursive grad: 'e' is defined through its own gradient ('d' is a gradient of it)
 *   'f' has no parameter 'z'                      (at the name in wrt)
 *   parameter 'n' of 'f' is i32: only float parameters have gradients
 *   'x' is repeated in wrt
 *   'f' has no float parameter to differentiate with respect to
 *   'f' has no float result to differentiate
 *   gradient 'd' has 130 parameters and results; a launch takes at most 128
 */
#include "check_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- checks ---------------------------------------------------------------------------- */

/* The parameters of g in wrt order (indexes into g->params) into *out; 0 after an error. */
static int wrt_params(check_ctx *c, const ast_func *fn, const ir_func *g, int32_t **out,
                      int32_t *n) {
    int32_t *idx = ir_arena_calloc(c->a, (size_t)g->nparams + (size_t)fn->nwrt + 1, sizeof *idx);
    *out = idx;
    *n = 0;
    int ok = 1;
    if (!fn->has_wrt) {
        for (int32_t p = 0; p < g->nparams; p++)
            if (ir_dtype_is_float(g->params[p].dtype)) idx[(*n)++] = p;
        if (*n == 0) {
            check_error(c, fn->grad_loc,
                        "'%s' has no float parameter to differentiate with respect to", g->name);
            return 0;
        }
        return 1;
    }
    for (int32_t i = 0; i < fn->nwrt; i++) {
        int32_t p = 0;
        while (p < g->nparams && strcmp(g->params[p].name, fn->wrt[i]) != 0)
            p++;
        if (p == g->nparams) {
            check_error(c, fn->wrt_locs[i], "'%s' has no parameter '%s'", g->name, fn->wrt[i]);
            ok = 0;
            continue;
        }
        if (!ir_dtype_is_float(g->params[p].dtype)) {
            check_error(c, fn->wrt_locs[i],
                        "parameter '%s' of '%s' is %s: only float parameters have gradients",
                        fn->wrt[i], g->name, ir_dtypes[g->params[p].dtype].name);
            ok = 0;
            continue;
        }
        for (int32_t j = 0; j < *n; j++)
            if (idx[j] == p) {
                check_error(c, fn->wrt_locs[i], "'%s' is repeated in wrt", fn->wrt[i]);
                ok = 0;
            }
        idx[(*n)++] = p;
    }
    return ok;
}

static int has_float_result(const ir_func *g) {
    for (int32_t k = 0; k < g->noutputs; k++)
        if (ir_dtype_is_float(g->outputs[k].dtype)) return 1;
    return 0;
}

/* ---- the IR ---------------------------------------------------------------------------- */

typedef struct grad_build {
    check_ctx *c;
    const ir_func *g; /* FN's IR */
    ir_func *f;       /* NAME's */
    int32_t *sym;     /* g's symbol i is f's sym[i] */
    ir_ref *map;      /* g's node r is f's map[r] */
} grad_build;

static ir_shape shape_of(const grad_build *b, const ir_shape *s) {
    ir_shape t = *s;
    for (int32_t d = 0; d < t.rank; d++)
        if (t.dims[d].sym >= 0) t.dims[d].sym = b->sym[t.dims[d].sym];
    return t;
}

/* The cotangent of result k: dy or dyK, with '_' appended while g has a parameter of that
 * name. */
static const char *cotangent_name(const grad_build *b, int32_t k) {
    char name[64];
    if (b->g->noutputs == 1)
        snprintf(name, sizeof name, "dy");
    else
        snprintf(name, sizeof name, "dy%d", (int)k);
    for (int clash = 1; clash && strlen(name) + 1 < sizeof name;) {
        clash = 0;
        for (int32_t p = 0; p < b->g->nparams && !clash; p++)
            clash = !strcmp(b->g->params[p].name, name);
        if (clash) strcat(name, "_");
    }
    return ir_arena_strdup(b->c->a, name);
}

/* g's nodes but its parameters and results, in order. */
static void copy_body(grad_build *b) {
    ir_func *f = b->f;
    for (ir_ref r = 0; r < b->g->nnodes; r++) {
        ir_node n = b->g->nodes[r];
        if (n.op == IR_OP_INPUT || n.op == IR_OP_OUTPUT) continue;
        for (int i = 0; i < ir_ops[n.op].arity; i++)
            n.args[i] = b->map[n.args[i]];
        n.shape = shape_of(b, &n.shape);
        IR_VEC_PUSH(f->arena, f->nodes, f->nnodes, f->cap_nodes, n);
        b->map[r] = f->nnodes - 1;
    }
}

/* x and y in the longer of their shapes (they differ by axes of one on the left: a rank-0
 * value's). */
static void same_rank(ir_func *f, ir_ref *x, ir_ref *y) {
    if (f->nodes[*x].shape.rank < f->nodes[*y].shape.rank)
        *x = ir_broadcast(f, *x, &f->nodes[*y].shape);
    else if (f->nodes[*y].shape.rank < f->nodes[*x].shape.rank)
        *y = ir_broadcast(f, *y, &f->nodes[*x].shape);
}

/* L: the sum over every element of each float result times its cotangent (dy[k]). */
static ir_ref loss(grad_build *b, const ir_ref *dy) {
    ir_func *f = b->f;
    ir_dtype lt = IR_F32;
    for (int32_t k = 0; k < b->g->noutputs; k++)
        if (b->g->outputs[k].dtype == IR_F64) lt = IR_F64;
    ir_ref l = IR_NONE;
    for (int32_t k = 0; k < b->g->noutputs; k++) {
        const ir_output *o = &b->g->outputs[k];
        if (!ir_dtype_is_float(o->dtype)) continue;
        ir_dtype t = o->dtype == IR_F64 ? IR_F64 : IR_F32;
        ir_ref y = ir_cast(f, b->map[b->g->nodes[o->node].args[0]], t);
        ir_ref d = ir_cast(f, dy[k], t);
        same_rank(f, &y, &d);
        ir_ref args[2] = {d, y};
        ir_shape s = f->nodes[y].shape;
        ir_ref v = ir_ew(f, IR_OP_MUL, t, &s, 2, args);
        uint32_t all = s.rank ? (uint32_t)((1u << s.rank) - 1) : 0;
        if (s.rank) v = ir_reduce(f, IR_OP_SUM, v, all, t);
        v = ir_cast(f, v, lt);
        if (l != IR_NONE) {
            same_rank(f, &l, &v);
            ir_ref sum[2] = {l, v};
            ir_shape ls = f->nodes[l].shape;
            v = ir_ew(f, IR_OP_ADD, lt, &ls, 2, sum);
        }
        l = v;
    }
    return l;
}

static ir_func *build(check_ctx *c, const ast_func *fn, const ir_func *g, const int32_t *wrt,
                      int32_t nwrt) {
    grad_build b = {c, g, ir_func_new(c->scratch, fn->name), NULL, NULL};
    b.sym = ir_arena_calloc(c->a, (size_t)g->nsyms + 1, sizeof *b.sym);
    b.map = ir_arena_calloc(c->a, (size_t)g->nnodes + 1, sizeof *b.map);
    for (int32_t i = 0; i < g->nsyms; i++)
        b.sym[i] = ir_func_symbol(b.f, g->syms[i]);
    for (int32_t p = 0; p < g->nparams; p++) {
        const ir_param *gp = &g->params[p];
        ir_shape decl = shape_of(&b, &gp->shape), s = shape_of(&b, &g->nodes[gp->node].shape);
        b.map[gp->node] = ir_add_input_as(b.f, gp->name, gp->dtype, &decl, &s);
    }
    /* a cotangent is declared as its result is, and held in the shape of the result's value
     * (a reduction's result declared without its kept axes of one: dy is [R], its node [R, 1]) */
    ir_ref *dy = ir_arena_calloc(c->a, (size_t)g->noutputs + 1, sizeof *dy);
    for (int32_t k = 0; k < g->noutputs; k++) {
        const ir_output *o = &g->outputs[k];
        ir_shape decl = shape_of(&b, &o->shape);
        ir_shape s = shape_of(&b, &g->nodes[g->nodes[o->node].args[0]].shape);
        dy[k] = ir_add_input_as(b.f, cotangent_name(&b, k), o->dtype, &decl, &s);
    }
    copy_body(&b);
    ir_ref l = loss(&b, dy);
    for (int32_t i = 0; i < nwrt; i++) {
        const ir_param *p = &g->params[wrt[i]];
        ir_shape decl = shape_of(&b, &p->shape), s = b.f->nodes[b.map[p->node]].shape;
        ir_ref args[2] = {l, b.map[p->node]};
        ir_ref d = ir_ew(b.f, IR_OP_GRAD, p->dtype, &s, 2, args);
        ir_add_output(b.f, d, p->dtype, &decl);
    }
    b.f->grad_of = g->name;
    b.f->grad_wrt = ir_arena_calloc(c->a, (size_t)nwrt + 1, sizeof(int32_t));
    memcpy(b.f->grad_wrt, wrt, sizeof(int32_t) * (size_t)nwrt);
    return b.f;
}

/* ---- the entry ------------------------------------------------------------------------- */

/* FN's index, its IR built first when it is a gradient too; -1 after an error (or silently,
 * when FN itself failed: its errors are its own). */
static int32_t differentiated(check_ctx *c, int32_t index) {
    const ast_func *fn = &c->file->funcs[index];
    ir_op op;
    if (ir_op_lookup_builtin(fn->grad_of, strlen(fn->grad_of), &op)) {
        check_error(c, fn->grad_loc, "grad of built-in '%s': write a function that calls it",
                    fn->grad_of);
        return -1;
    }
    int32_t g = check_map_get(&c->funcs, fn->grad_of);
    if (g < 0) {
        check_error(c, fn->grad_loc, "unknown function '%s'", fn->grad_of);
        return -1;
    }
    if (!c->file->funcs[g].grad_of) check_body_entry(c, g);
    if (c->file->funcs[g].grad_of) {
        if (c->grad_state[g] == 1) {
            check_error(c, fn->grad_loc,
                        "recursive grad: '%s' is defined through its own gradient ('%s' is a "
                        "gradient of it)",
                        fn->name, fn->grad_of);
            return -1;
        }
        check_grad_entry(c, g);
    }
    return c->built[g] ? g : -1;
}

void check_grad_entry(check_ctx *c, int32_t index) {
    if (c->grad_state[index]) return;
    c->grad_state[index] = 1;
    const ast_func *fn = &c->file->funcs[index];
    int32_t reported = c->reported;
    int32_t gi = check_name_ok(c, index) ? differentiated(c, index) : -1;
    const ir_func *g = gi >= 0 ? c->built[gi] : NULL;
    int32_t *wrt = NULL, nwrt = 0;
    int ok = g != NULL;
    if (ok && !has_float_result(g)) {
        check_error(c, fn->grad_loc, "'%s' has no float result to differentiate", g->name);
        ok = 0;
    }
    if (ok && !wrt_params(c, fn, g, &wrt, &nwrt)) ok = 0;
    if (ok && g->nparams + g->noutputs + nwrt > IR_MAX_ARGS) {
        check_error(c, fn->loc,
                    "gradient '%s' has %d parameters and results; a launch takes at most %d",
                    fn->name, (int)(g->nparams + g->noutputs + nwrt), IR_MAX_ARGS);
        ok = 0;
    }
    if (ok) {
        ir_func *f = build(c, fn, g, wrt, nwrt);
        char err[256];
        if (ir_verify(f, err, sizeof err) != 0) {
            diag_internal_error(c->d, "gradient '%s' does not verify: %s", fn->name, err);
            c->reported++;
        } else {
            c->built[index] = f;
        }
    } else if (c->reported == reported) {
        c->failed_silently++;
    }
    c->grad_state[index] = 2;
}
