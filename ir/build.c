/* ir/build.c: modules, functions and the node builders.
 *
 * Builders append one node and return its ref. Misuse (wrong arity, operands of the wrong
 * shape or dtype) is an internal error caught by assert: checking the user's program is the
 * front end's job. In debug builds every new node also goes through the verifier's per-node
 * check, so a builder can never create a node that ir_verify would reject.
 *
 * Allocation failure: with the arena's `oom` set, a failed allocation longjmps out of here.
 * Without it, a builder returns IR_NONE, and every builder handed an IR_NONE operand returns
 * IR_NONE too, so a caller may check once at the end.
 */
#include "ir.h"

#include <assert.h>
#include <string.h>

ir_module *ir_module_new(ir_arena *a) {
    ir_module *m = ir_arena_alloc(a, sizeof(*m));
    if (!m) return NULL;
    m->arena = a;
    return m;
}

ir_func *ir_func_new(ir_module *m, const char *name) {
    ir_func *f = ir_arena_alloc(m->arena, sizeof(*f));
    if (!f) return NULL;
    f->arena = m->arena;
    f->name = ir_arena_strdup(m->arena, name);
    if (!f->name) return NULL;
    if (m->nfuncs >= m->cap_funcs) {
        ir_func **p =
            ir_arena_grow(m->arena, m->funcs, sizeof(*m->funcs), &m->cap_funcs, m->nfuncs + 1);
        if (!p) return NULL;
        m->funcs = p;
    }
    m->funcs[m->nfuncs++] = f;
    return f;
}

ir_func *ir_module_find(const ir_module *m, const char *name) {
    for (int32_t i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i]->name, name) == 0) return m->funcs[i];
    return NULL;
}

int32_t ir_func_symbol(ir_func *f, const char *name) {
    for (int32_t i = 0; i < f->nsyms; i++)
        if (strcmp(f->syms[i], name) == 0) return i;
    const char *copy = ir_arena_strdup(f->arena, name);
    if (!copy) return -1;
    if (f->nsyms >= f->cap_syms) {
        const char **p =
            ir_arena_grow(f->arena, f->syms, sizeof(*f->syms), &f->cap_syms, f->nsyms + 1);
        if (!p) return -1;
        f->syms = p;
    }
    f->syms[f->nsyms] = copy;
    return f->nsyms++;
}

/* Appends a node with the defaults every node starts from (no kernel, no flags, no
 * operands); IR_NONE when the arena is out of memory. */
static ir_ref new_node(ir_func *f, ir_op op, ir_dtype t, const ir_shape *shape) {
    assert(shape->rank >= 0 && shape->rank <= IR_MAX_RANK);
    ir_shape s = *shape; /* `shape` may point into the node array that is about to move */
    if (f->nnodes >= f->cap_nodes) {
        ir_node *p =
            ir_arena_grow(f->arena, f->nodes, sizeof(*f->nodes), &f->cap_nodes, f->nnodes + 1);
        if (!p) return IR_NONE;
        f->nodes = p;
    }
    ir_node *n = &f->nodes[f->nnodes];
    memset(n, 0, sizeof(*n));
    n->op = op;
    n->dtype = t;
    n->shape = s;
    n->args[0] = n->args[1] = n->args[2] = IR_NONE;
    n->index = 0;
    n->kernel = -1;
    n->flags = 0;
    return f->nnodes++;
}

/* For asserts only: unused under NDEBUG. */
__attribute__((unused)) static int valid_ref(const ir_func *f, ir_ref r) {
    return r >= 0 && r < f->nnodes;
}

/* The new node passes the verifier's per-node check (debug builds only). */
static ir_ref checked(const ir_func *f, ir_ref r) {
#ifndef NDEBUG
    if (r != IR_NONE) {
        char err[256];
        int bad = ir_verify_node(f, r, err, sizeof err);
        assert(!bad && "builder made a node the verifier rejects");
        (void)bad;
    }
#else
    (void)f;
#endif
    return r;
}

ir_ref ir_add_input(ir_func *f, const char *name, ir_dtype t, const ir_shape *shape) {
    return ir_add_input_as(f, name, t, shape, shape);
}

ir_ref ir_add_input_as(ir_func *f, const char *name, ir_dtype t, const ir_shape *declared,
                       const ir_shape *shape) {
    assert(ir_shape_squeeze_equal(declared, shape));
    const char *copy = ir_arena_strdup(f->arena, name);
    if (!copy) return IR_NONE;
    if (f->nparams >= f->cap_params) {
        ir_param *p =
            ir_arena_grow(f->arena, f->params, sizeof(*f->params), &f->cap_params, f->nparams + 1);
        if (!p) return IR_NONE;
        f->params = p;
    }
    ir_ref r = new_node(f, IR_OP_INPUT, t, shape);
    if (r == IR_NONE) return IR_NONE;
    f->nodes[r].index = f->nparams;
    ir_param *p = &f->params[f->nparams++];
    p->name = copy;
    p->dtype = t;
    p->shape = *declared;
    p->node = r;
    return checked(f, r);
}

ir_ref ir_const_float(ir_func *f, ir_dtype t, double v) {
    assert(ir_dtype_is_float(t));
    ir_shape s = {0};
    ir_ref r = new_node(f, IR_OP_CONST, t, &s);
    if (r == IR_NONE) return IR_NONE;
    f->nodes[r].value.f = v;
    return checked(f, r);
}

ir_ref ir_const_int(ir_func *f, ir_dtype t, int64_t v) {
    assert(!ir_dtype_is_float(t));
    ir_shape s = {0};
    ir_ref r = new_node(f, IR_OP_CONST, t, &s);
    if (r == IR_NONE) return IR_NONE;
    /* stored as the dtype holds it, so every consumer sees the same value */
    f->nodes[r].value.i = ir_wrap_int(v, t);
    return checked(f, r);
}

ir_ref ir_ew(ir_func *f, ir_op op, ir_dtype t, const ir_shape *shape, int nargs,
             const ir_ref *args) {
    assert(op >= 0 && op < IR_OP_COUNT && ir_ops[op].cls == IR_CLASS_EW);
    assert(nargs == ir_ops[op].arity && nargs <= 3);
    for (int i = 0; i < nargs; i++) {
        if (args[i] == IR_NONE) return IR_NONE;
        assert(valid_ref(f, args[i]));
    }
    ir_ref r = new_node(f, op, t, shape);
    if (r == IR_NONE) return IR_NONE;
    for (int i = 0; i < nargs; i++)
        f->nodes[r].args[i] = args[i];
    return checked(f, r);
}

ir_ref ir_index(ir_func *f, const ir_shape *shape) {
    ir_ref r = new_node(f, IR_OP_INDEX, IR_I64, shape);
    if (r == IR_NONE) return IR_NONE;
    return checked(f, r);
}

ir_ref ir_rand(ir_func *f, ir_ref seed, const ir_shape *shape, int32_t stream) {
    if (seed == IR_NONE) return IR_NONE;
    assert(valid_ref(f, seed) && f->nodes[seed].dtype == IR_I64);
    ir_ref s = f->nodes[seed].op == IR_OP_CONST ? seed : ir_broadcast(f, seed, shape);
    ir_ref i = ir_index(f, shape);
    if (s == IR_NONE || i == IR_NONE) return IR_NONE;
    ir_ref r = new_node(f, IR_OP_RAND, IR_F32, shape);
    if (r == IR_NONE) return IR_NONE;
    f->nodes[r].args[0] = s;
    f->nodes[r].args[1] = i;
    f->nodes[r].index = stream;
    return checked(f, r);
}

ir_ref ir_cast(ir_func *f, ir_ref x, ir_dtype t) {
    if (x == IR_NONE) return IR_NONE;
    assert(valid_ref(f, x));
    if (f->nodes[x].dtype == t) return x;
    ir_shape s = f->nodes[x].shape;
    ir_ref r = new_node(f, IR_OP_CAST, t, &s);
    if (r == IR_NONE) return IR_NONE;
    f->nodes[r].args[0] = x;
    return checked(f, r);
}

ir_ref ir_broadcast(ir_func *f, ir_ref x, const ir_shape *to) {
    if (x == IR_NONE) return IR_NONE;
    assert(valid_ref(f, x));
    if (ir_shape_equal(&f->nodes[x].shape, to)) return x;
    ir_dtype t = f->nodes[x].dtype;
    ir_ref r = new_node(f, IR_OP_BROADCAST, t, to);
    if (r == IR_NONE) return IR_NONE;
    f->nodes[r].args[0] = x;
    return checked(f, r);
}

ir_ref ir_reduce(ir_func *f, ir_op op, ir_ref x, uint32_t axes, ir_dtype t) {
    assert(op >= 0 && op < IR_OP_COUNT && ir_ops[op].cls == IR_CLASS_REDUCE);
    if (x == IR_NONE) return IR_NONE;
    assert(valid_ref(f, x));
    ir_shape s = ir_shape_reduce(&f->nodes[x].shape, axes);
    ir_ref r = new_node(f, op, t, &s);
    if (r == IR_NONE) return IR_NONE;
    f->nodes[r].args[0] = x;
    f->nodes[r].axes = axes;
    return checked(f, r);
}

ir_ref ir_add_output(ir_func *f, ir_ref x, ir_dtype t, const ir_shape *declared) {
    if (x == IR_NONE) return IR_NONE;
    assert(valid_ref(f, x));
    if (f->noutputs >= f->cap_outputs) {
        ir_output *p = ir_arena_grow(f->arena, f->outputs, sizeof(*f->outputs), &f->cap_outputs,
                                     f->noutputs + 1);
        if (!p) return IR_NONE;
        f->outputs = p;
    }
    ir_ref r = new_node(f, IR_OP_OUTPUT, t, declared);
    if (r == IR_NONE) return IR_NONE;
    f->nodes[r].args[0] = x;
    f->nodes[r].index = f->noutputs;
    ir_output *o = &f->outputs[f->noutputs++];
    o->dtype = t;
    o->shape = *declared;
    o->node = r;
    return checked(f, r);
}
