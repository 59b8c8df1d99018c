/* passes/grad.c: the gradient pass: every grad(L, x) node (what the front end makes of
 * `fn d = grad(f)`, SPEC §1) becomes the gradient of L with respect to parameter x, built by
 * reverse-mode differentiation from each op's rule in ir/ops.def (passes/grad_rules.c). It
 * runs first, so the backward is cleaned, fused and compiled like any other function.
 *
 * The front end writes L as the sum over every element of each float result times its
 * cotangent (a parameter): the gradient of L with respect to x, the cotangents held constant,
 * is the vector-Jacobian product the SPEC asks for. L itself is then dead and goes.
 *
 * The function is rebuilt node by node, in order. At the first grad node of an L, one
 * backward sweep from L (its seed 1) over the nodes before it gives every value's cotangent,
 * accumulated over its uses in the compute dtype (f32, f64 for f64), and each grad(L, x) takes
 * x's, cast to x's dtype (0 where x does not reach L). A grad node later in the function (the
 * gradient of a gradient) then differentiates through the nodes the first sweep made.
 *
 * Shapes: a broadcast's cotangent summed over the broadcast axes keeps them, as axes of one
 * on the left of the operand's shape (the IR has no op that drops an axis). Values so padded
 * stay so: a node copied after one gets the longer shape too (its other operands broadcast,
 * a reduction's axes shifted), which holds the same elements in the same order; a result may
 * be declared without those axes (an OUTPUT takes either).
 */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "passes/grad_rules.h"
#include "passes/rewrite.h"

static ir_ref push(ir_func *f, const ir_node *n) {
    ir_node copy = *n; /* n may point into the array about to move */
    IR_VEC_PUSH(f->arena, f->nodes, f->nnodes, f->cap_nodes, copy);
    return f->nnodes - 1;
}

/* Old node o copied with its operands mapped, its shape padded as its operands' now are. */
static ir_ref copy_node(ir_func *f, const ir_node *o, const ir_ref *map, const ir_node *old) {
    ir_node n = *o;
    int32_t grown = 0; /* axes of one its operands gained */
    for (int i = 0; i < ir_ops[o->op].arity; i++) {
        n.args[i] = map[o->args[i]];
        int32_t d = f->nodes[n.args[i]].shape.rank - old[o->args[i]].shape.rank;
        if (d > grown) grown = d;
    }
    n.kernel = -1;
    n.flags = 0;
    if (!grown || o->op == IR_OP_OUTPUT) return push(f, &n);
    switch (ir_ops[o->op].cls) {
    case IR_CLASS_EW:
        n.shape = grad_pad(&o->shape, o->shape.rank + grown);
        for (int i = 0; i < ir_ops[o->op].arity; i++)
            if (f->nodes[n.args[i]].op != IR_OP_CONST || f->nodes[n.args[i]].shape.rank)
                n.args[i] = ir_broadcast(f, n.args[i], &n.shape);
        break;
    case IR_CLASS_CAST: n.shape = f->nodes[n.args[0]].shape; break;
    case IR_CLASS_BROADCAST: n.shape = grad_pad(&o->shape, f->nodes[n.args[0]].shape.rank); break;
    case IR_CLASS_REDUCE: {
        int32_t d = f->nodes[n.args[0]].shape.rank - old[o->args[0]].shape.rank;
        n.axes = o->axes << d;
        n.shape = ir_shape_reduce(&f->nodes[n.args[0]].shape, n.axes);
        break;
    }
    default: break;
    }
    return push(f, &n);
}

/* ---- the backward sweep -------------------------------------------------------------- */

typedef struct sweep {
    ir_ref l;    /* the L it started from */
    ir_ref *adj; /* [nodes before it]: each value's cotangent, IR_NONE for none */
    int32_t n;
} sweep;

/* adj[a] += v, in the longer of the two shapes */
static ir_ref accumulate(ir_func *f, ir_ref have, ir_ref v) {
    if (have == IR_NONE) return v;
    ir_ref args[2] = {have, v};
    return grad_ew(f, IR_OP_ADD, 2, args);
}

static int differentiable(const ir_node *n) {
    return ir_dtype_is_float(n->dtype) && n->op != IR_OP_CONST && n->op != IR_OP_INDEX;
}

/* Cotangents of every value L depends on. */
static int backward(ir_func *f, ir_ref l, sweep *s, pass_ctx *c) {
    s->l = l;
    s->n = l + 1;
    s->adj = ir_arena_calloc(f->arena, (size_t)s->n, sizeof(ir_ref));
    for (ir_ref r = 0; r < s->n; r++)
        s->adj[r] = IR_NONE;
    s->adj[l] = ir_const_float(f, grad_compute_dtype(f->nodes[l].dtype), 1.0);
    for (ir_ref r = l; r >= 0; r--) {
        ir_node n = f->nodes[r];
        if (s->adj[r] == IR_NONE || ir_ops[n.op].cls == IR_CLASS_LEAF) continue;
        for (int i = 0; i < ir_ops[n.op].arity; i++) {
            ir_ref a = n.args[i], v;
            if (!differentiable(&f->nodes[a])) continue;
            if (grad_rule(f, r, i, s->adj[r], &v, c->err, c->errlen) != 0) return -1;
            if (v == IR_NONE) continue;
            v = ir_cast(f, v, grad_compute_dtype(f->nodes[a].dtype));
            s->adj[a] = accumulate(f, s->adj[a], v);
        }
    }
    return 0;
}

/* x's gradient from the sweep: its cotangent in x's dtype and (padded) shape, or 0. */
static ir_ref gradient(ir_func *f, const sweep *s, ir_ref x) {
    const ir_node *xn = &f->nodes[x];
    ir_shape shape = xn->shape;
    ir_dtype t = xn->dtype;
    ir_ref v = s->adj[x];
    if (v == IR_NONE) return ir_broadcast(f, ir_const_float(f, t, 0.0), &shape);
    v = ir_cast(f, v, t);
    if (f->nodes[v].shape.rank < shape.rank) v = ir_broadcast(f, v, &shape);
    return v;
}

/* ---- the pass ------------------------------------------------------------------------- */

static int rebuild(ir_func *f, const ir_node *old, int32_t nold, pass_ctx *c) {
    ir_ref *map = ir_arena_calloc(f->arena, (size_t)nold + 1, sizeof(ir_ref));
    sweep *sweeps = ir_arena_calloc(f->arena, (size_t)nold + 1, sizeof(sweep));
    int32_t nsweeps = 0;
    for (ir_ref r = 0; r < nold; r++) {
        const ir_node *o = &old[r];
        if (o->op != IR_OP_GRAD) {
            map[r] = copy_node(f, o, map, old);
            if (o->op == IR_OP_INPUT) f->params[o->index].node = map[r];
            if (o->op == IR_OP_OUTPUT) f->outputs[o->index].node = map[r];
            continue;
        }
        ir_ref l = map[o->args[0]];
        int32_t k = 0;
        while (k < nsweeps && sweeps[k].l != l)
            k++;
        if (k == nsweeps && backward(f, l, &sweeps[nsweeps++], c) != 0) return -1;
        map[r] = gradient(f, &sweeps[k], map[o->args[1]]);
    }
    return 0;
}

int pass_grad(ir_func *f, pass_ctx *c) {
    int32_t n = f->nnodes, want = 0;
    for (ir_ref r = 0; r < n; r++)
        want |= f->nodes[r].op == IR_OP_GRAD;
    if (!want) return 0;
    if (f->partition) return pass_fail(c, "grad: the function is already partitioned");
    /* the builders longjmp here when the arena runs out */
    jmp_buf oom;
    jmp_buf *saved = f->arena->oom;
    if (setjmp(oom)) {
        f->arena->oom = saved;
        return pass_fail(c, "out of memory");
    }
    f->arena->oom = &oom;
    const ir_node *old = f->nodes;
    f->nodes = NULL;
    f->nnodes = f->cap_nodes = 0;
    int rc = rebuild(f, old, n, c);
    f->arena->oom = saved;
    return rc;
}
