/* ir/verify.c: the IR verifier, run after the front end and between passes (debug builds).
 *
 * It checks what every later stage takes for granted: topological order, arities, the
 * shape and dtype rules of each op class, the param/output tables, and (through
 * ir_verify_partition) the fusion partition. Messages name the node ("%12: add operand 2
 * has shape [N] but node has [R, N]") so a failing pass can be found from its dump.
 */
#include "ir.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The partition's checks live with the fusion passes (ir/verify_partition.c). Until that
 * file exists, this default accepts every partition. It is left out as soon as the file is
 * there, not merely made weak: from a static library the linker never pulls an object in
 * just to replace a weak symbol it already has, so a weak default would silently win. */
#if defined(__has_include)
#if !__has_include("verify_partition.c")
__attribute__((weak)) int ir_verify_partition(const ir_func *f, char *err, size_t errlen) {
    (void)f;
    (void)err;
    (void)errlen;
    return 0;
}
#endif
#endif

/* "[R, N]" into buf (symbols by name), for messages. */
static const char *shape_str(const ir_func *f, const ir_shape *s, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (used < len) {                                                                          \
            int n_ = snprintf(buf + used, len - used, __VA_ARGS__);                                \
            if (n_ > 0) used += (size_t)n_;                                                        \
        }                                                                                          \
    } while (0)
    PUT("[");
    for (int32_t i = 0; i < s->rank && i < IR_MAX_RANK; i++) {
        if (i) PUT(", ");
        ir_dim d = s->dims[i];
        if (d.sym >= 0 && d.sym < f->nsyms && f->syms[d.sym])
            PUT("%s", f->syms[d.sym]);
        else if (d.sym >= 0)
            PUT("?sym%d", (int)d.sym);
        else
            PUT("%" PRId64, d.size);
    }
    PUT("]");
#undef PUT
    return buf;
}

static const char *dt(ir_dtype t) {
    return ir_dtypes[t].name;
}

static int check_shape(const ir_func *f, ir_ref r, const char *what, const ir_shape *s, char *err,
                       size_t errlen) {
    if (s->rank < 0 || s->rank > IR_MAX_RANK)
        return ir_fail(err, errlen, "%%%d: %s has rank %d (0 to %d allowed)", (int)r, what,
                       (int)s->rank, IR_MAX_RANK);
    for (int32_t i = 0; i < s->rank; i++) {
        ir_dim d = s->dims[i];
        if (d.sym >= f->nsyms)
            return ir_fail(err, errlen, "%%%d: %s dim %d names symbol %d of %d", (int)r, what,
                           (int)i, (int)d.sym, (int)f->nsyms);
        if (d.sym < 0 && d.size < 0)
            return ir_fail(err, errlen, "%%%d: %s dim %d has negative size %" PRId64, (int)r, what,
                           (int)i, d.size);
    }
    return 0;
}

static int is_rank0_const(const ir_node *n) {
    return n->op == IR_OP_CONST && n->shape.rank == 0;
}

/* Every operand of a NUMERIC, FLOATFN or SELECT value (from operand `from` on) has the
 * node's dtype. */
static int operands_have_dtype(const ir_func *f, ir_ref r, int from, char *err, size_t errlen) {
    const ir_node *n = &f->nodes[r];
    for (int i = from; i < ir_ops[n->op].arity; i++) {
        const ir_node *a = &f->nodes[n->args[i]];
        if (a->dtype != n->dtype)
            return ir_fail(err, errlen, "%%%d: %s operand %d has dtype %s but node has %s", (int)r,
                           ir_ops[n->op].name, i + 1, dt(a->dtype), dt(n->dtype));
    }
    return 0;
}

/* grad(L, x): L of one element, x an INPUT node whose dtype and shape the node has. */
static int check_grad(const ir_func *f, ir_ref r, char *err, size_t errlen) {
    const ir_node *n = &f->nodes[r], *l = &f->nodes[n->args[0]], *x = &f->nodes[n->args[1]];
    char s1[160];
    for (int32_t d = 0; d < l->shape.rank; d++)
        if (!ir_dim_is_one(l->shape.dims[d]))
            return ir_fail(err, errlen, "%%%d: grad of %%%d, of shape %s: not one element", (int)r,
                           (int)n->args[0], shape_str(f, &l->shape, s1, sizeof s1));
    if (!ir_dtype_is_float(l->dtype))
        return ir_fail(err, errlen, "%%%d: grad of %%%d, of dtype %s", (int)r, (int)n->args[0],
                       dt(l->dtype));
    if (x->op != IR_OP_INPUT)
        return ir_fail(err, errlen, "%%%d: grad with respect to %%%d, not an input", (int)r,
                       (int)n->args[1]);
    if (n->dtype != x->dtype || !ir_shape_equal(&n->shape, &x->shape) ||
        !ir_dtype_is_float(n->dtype))
        return ir_fail(err, errlen, "%%%d: grad must have its float input's dtype and shape",
                       (int)r);
    return 0;
}

static int check_ew(const ir_func *f, ir_ref r, char *err, size_t errlen) {
    const ir_node *n = &f->nodes[r];
    const ir_op_info *oi = &ir_ops[n->op];
    char s1[160], s2[160];
    if (n->op == IR_OP_GRAD) return check_grad(f, r, err, errlen);
    for (int i = 0; i < oi->arity; i++) {
        const ir_node *a = &f->nodes[n->args[i]];
        if (!ir_shape_equal(&a->shape, &n->shape) && !is_rank0_const(a))
            return ir_fail(err, errlen, "%%%d: %s operand %d has shape %s but node has %s", (int)r,
                           oi->name, i + 1, shape_str(f, &a->shape, s1, sizeof s1),
                           shape_str(f, &n->shape, s2, sizeof s2));
    }
    const ir_node *a0 = &f->nodes[n->args[0]];
    /* The node's dtype must be one the op can give: fed operands of that very dtype, the op
     * gives it back. Comparisons, logic and predicates give only bool, float functions only
     * floats, the other ops any dtype. The operands are checked after, each op's rule below. */
    ir_dtype same[3] = {n->dtype, n->dtype, n->dtype};
    ir_dtype gives = ir_op_result_dtype(n->op, same, n->dtype);
    if (gives != n->dtype)
        return ir_fail(err, errlen, "%%%d: %s gives %s but node has %s", (int)r, oi->name,
                       gives == IR_BOOL ? "bool" : "a float", dt(n->dtype));
    if (oi->flags & IR_OPF_CMP) {
        for (int i = 1; i < oi->arity; i++) {
            const ir_node *a = &f->nodes[n->args[i]];
            if (a->dtype != a0->dtype)
                return ir_fail(err, errlen, "%%%d: %s compares %s with %s", (int)r, oi->name,
                               dt(a0->dtype), dt(a->dtype));
        }
        return 0;
    }
    if (oi->flags & IR_OPF_LOGIC) {
        for (int i = 0; i < oi->arity; i++) {
            const ir_node *a = &f->nodes[n->args[i]];
            if (a->dtype != IR_BOOL)
                return ir_fail(err, errlen, "%%%d: %s operand %d has dtype %s but must be bool",
                               (int)r, oi->name, i + 1, dt(a->dtype));
        }
        return 0;
    }
    if (oi->flags & IR_OPF_PRED) {
        if (!ir_dtype_is_float(a0->dtype))
            return ir_fail(err, errlen, "%%%d: %s operand 1 has dtype %s but must be a float",
                           (int)r, oi->name, dt(a0->dtype));
        return 0;
    }
    if (oi->flags & IR_OPF_SELECT) {
        if (a0->dtype != IR_BOOL)
            return ir_fail(err, errlen, "%%%d: %s operand 1 has dtype %s but must be bool", (int)r,
                           oi->name, dt(a0->dtype));
        return operands_have_dtype(f, r, 1, err, errlen);
    }
    if (oi->flags & (IR_OPF_FLOATFN | IR_OPF_NUMERIC))
        return operands_have_dtype(f, r, 0, err, errlen);
    if (oi->flags & IR_OPF_RANDOM) {
        for (int i = 0; i < oi->arity; i++)
            if (f->nodes[n->args[i]].dtype != IR_I64)
                return ir_fail(err, errlen, "%%%d: %s operand %d has dtype %s but must be i64",
                               (int)r, oi->name, i + 1, dt(f->nodes[n->args[i]].dtype));
        if (n->index < 0)
            return ir_fail(err, errlen, "%%%d: %s has stream %d", (int)r, oi->name, (int)n->index);
        return 0;
    }
    return ir_fail(err, errlen, "%%%d: %s has no dtype rule", (int)r, oi->name);
}

static int check_reduce(const ir_func *f, ir_ref r, char *err, size_t errlen) {
    const ir_node *n = &f->nodes[r];
    const ir_node *a = &f->nodes[n->args[0]];
    const char *name = ir_ops[n->op].name;
    char s1[160], s2[160], s3[160];
    uint32_t valid = a->shape.rank >= 32 ? UINT32_MAX : (1u << a->shape.rank) - 1;
    if (n->axes & ~valid)
        return ir_fail(err, errlen, "%%%d: %s reduces axes 0x%x of a rank-%d operand", (int)r, name,
                       (unsigned)n->axes, (int)a->shape.rank);
    if (n->axes == 0 && a->shape.rank > 0)
        return ir_fail(err, errlen, "%%%d: %s reduces no axis", (int)r, name);
    ir_shape want = ir_shape_reduce(&a->shape, n->axes);
    if (!ir_shape_equal(&want, &n->shape))
        return ir_fail(err, errlen, "%%%d: %s of shape %s gives %s but node has %s", (int)r, name,
                       shape_str(f, &a->shape, s1, sizeof s1), shape_str(f, &want, s2, sizeof s2),
                       shape_str(f, &n->shape, s3, sizeof s3));
    /* the dtype the rule gives (sum of i32: i64), or the operand's: the IR admits a sum that
     * keeps its operand's dtype too */
    if (n->dtype != a->dtype && n->dtype != ir_op_result_dtype(n->op, &a->dtype, a->dtype))
        return ir_fail(err, errlen, "%%%d: %s of %s cannot give %s", (int)r, name, dt(a->dtype),
                       dt(n->dtype));
    if ((ir_ops[n->op].flags & IR_OPF_FLOATONLY) && !ir_dtype_is_float(n->dtype))
        return ir_fail(err, errlen, "%%%d: %s of %s (floats only)", (int)r, name, dt(a->dtype));
    return 0;
}

int ir_verify_node(const ir_func *f, ir_ref r, char *err, size_t errlen) {
    char s1[160], s2[160];
    if (r < 0 || r >= f->nnodes)
        return ir_fail(err, errlen, "%%%d: no such node (%d nodes)", (int)r, (int)f->nnodes);
    const ir_node *n = &f->nodes[r];
    if (n->op < 0 || n->op >= IR_OP_COUNT)
        return ir_fail(err, errlen, "%%%d: bad op %d", (int)r, (int)n->op);
    const ir_op_info *oi = &ir_ops[n->op];
    if (n->dtype < 0 || n->dtype >= IR_DTYPE_COUNT)
        return ir_fail(err, errlen, "%%%d: %s has bad dtype %d", (int)r, oi->name, (int)n->dtype);
    if (check_shape(f, r, oi->name, &n->shape, err, errlen)) return -1;
    for (int i = 0; i < 3; i++) {
        ir_ref a = n->args[i];
        if (i >= oi->arity) {
            if (a != IR_NONE)
                return ir_fail(err, errlen, "%%%d: %s takes %d operands but has operand %d = %%%d",
                               (int)r, oi->name, oi->arity, i + 1, (int)a);
            continue;
        }
        if (a < 0 || a >= r)
            return ir_fail(err, errlen, "%%%d: %s operand %d is %%%d, not an earlier node", (int)r,
                           oi->name, i + 1, (int)a);
        /* a result is no value: the passes would take it for one and fail (or worse) */
        if (f->nodes[a].op == IR_OP_OUTPUT)
            return ir_fail(err, errlen, "%%%d: %s operand %d is %%%d, an output", (int)r, oi->name,
                           i + 1, (int)a);
    }

    switch (oi->cls) {
    case IR_CLASS_LEAF:
        if (n->op == IR_OP_INDEX) {
            if (n->dtype != IR_I64)
                return ir_fail(err, errlen, "%%%d: index has dtype %s but must be i64", (int)r,
                               dt(n->dtype));
            return 0;
        }
        if (n->op == IR_OP_CONST) {
            if (n->shape.rank != 0)
                return ir_fail(err, errlen, "%%%d: const has rank %d (must be 0)", (int)r,
                               (int)n->shape.rank);
            if (n->dtype == IR_BOOL && n->value.i != 0 && n->value.i != 1)
                return ir_fail(err, errlen, "%%%d: bool const has value %" PRId64, (int)r,
                               n->value.i);
            if (n->dtype == IR_I32 && ir_wrap_int(n->value.i, IR_I32) != n->value.i)
                return ir_fail(err, errlen, "%%%d: i32 const has value %" PRId64, (int)r,
                               n->value.i);
            return 0;
        }
        if (n->index < 0 || n->index >= f->nparams)
            return ir_fail(err, errlen, "%%%d: input %d of %d parameters", (int)r, (int)n->index,
                           (int)f->nparams);
        {
            const ir_param *p = &f->params[n->index];
            if (p->node != r)
                return ir_fail(err, errlen, "%%%d: input %d but parameter %d is node %%%d", (int)r,
                               (int)n->index, (int)n->index, (int)p->node);
            if (p->dtype != n->dtype || !ir_shape_squeeze_equal(&p->shape, &n->shape))
                return ir_fail(err, errlen, "%%%d: input is %s%s but parameter '%s' is %s%s",
                               (int)r, dt(n->dtype), shape_str(f, &n->shape, s1, sizeof s1),
                               p->name ? p->name : "?", dt(p->dtype),
                               shape_str(f, &p->shape, s2, sizeof s2));
        }
        return 0;
    case IR_CLASS_EW: return check_ew(f, r, err, errlen);
    case IR_CLASS_CAST: {
        const ir_node *a = &f->nodes[n->args[0]];
        if (!ir_shape_equal(&a->shape, &n->shape))
            return ir_fail(err, errlen, "%%%d: cast operand 1 has shape %s but node has %s", (int)r,
                           shape_str(f, &a->shape, s1, sizeof s1),
                           shape_str(f, &n->shape, s2, sizeof s2));
        return 0;
    }
    case IR_CLASS_BROADCAST: {
        const ir_node *a = &f->nodes[n->args[0]];
        ir_shape out;
        if (a->dtype != n->dtype)
            return ir_fail(err, errlen, "%%%d: broadcast operand 1 has dtype %s but node has %s",
                           (int)r, dt(a->dtype), dt(n->dtype));
        if (a->shape.rank > n->shape.rank || ir_shape_broadcast(&a->shape, &n->shape, &out) >= 0 ||
            !ir_shape_equal(&out, &n->shape))
            return ir_fail(err, errlen,
                           "%%%d: broadcast operand 1 has shape %s, which does not "
                           "broadcast to %s",
                           (int)r, shape_str(f, &a->shape, s1, sizeof s1),
                           shape_str(f, &n->shape, s2, sizeof s2));
        return 0;
    }
    case IR_CLASS_REDUCE:
        if (oi->flags & IR_OPF_ARGREDUCE)
            return ir_fail(err, errlen, "%%%d: %s is lowered by the front end (to max or min)",
                           (int)r, oi->name);
        return check_reduce(f, r, err, errlen);
    case IR_CLASS_OUTPUT: {
        const ir_node *a = &f->nodes[n->args[0]];
        if (a->dtype != n->dtype)
            return ir_fail(err, errlen, "%%%d: output operand 1 has dtype %s but node has %s",
                           (int)r, dt(a->dtype), dt(n->dtype));
        if (!ir_shape_squeeze_equal(&a->shape, &n->shape))
            return ir_fail(err, errlen, "%%%d: output operand 1 has shape %s but node has %s",
                           (int)r, shape_str(f, &a->shape, s1, sizeof s1),
                           shape_str(f, &n->shape, s2, sizeof s2));
        if (n->index < 0 || n->index >= f->noutputs)
            return ir_fail(err, errlen, "%%%d: output %d of %d outputs", (int)r, (int)n->index,
                           (int)f->noutputs);
        const ir_output *o = &f->outputs[n->index];
        if (o->node != r)
            return ir_fail(err, errlen, "%%%d: output %d but that output is node %%%d", (int)r,
                           (int)n->index, (int)o->node);
        if (o->dtype != n->dtype || !ir_shape_equal(&o->shape, &n->shape))
            return ir_fail(err, errlen, "%%%d: output node is %s%s but output %d is declared %s%s",
                           (int)r, dt(n->dtype), shape_str(f, &n->shape, s1, sizeof s1),
                           (int)n->index, dt(o->dtype), shape_str(f, &o->shape, s2, sizeof s2));
        return 0;
    }
    }
    return ir_fail(err, errlen, "%%%d: %s has no class", (int)r, oi->name);
}

int ir_verify(const ir_func *f, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (f->nnodes < 0 || (f->nnodes > 0 && !f->nodes))
        return ir_fail(err, errlen, "function '%s': bad node array", f->name ? f->name : "?");
    for (int32_t s = 0; s < f->nsyms; s++)
        if (!f->syms[s]) return ir_fail(err, errlen, "symbol %d has no name", (int)s);
    for (ir_ref r = 0; r < f->nnodes; r++)
        if (ir_verify_node(f, r, err, errlen)) return -1;
    /* the tables point at nodes that point back (ir_verify_node checked the other way) */
    for (int32_t i = 0; i < f->nparams; i++) {
        ir_ref r = f->params[i].node;
        if (!f->params[i].name) return ir_fail(err, errlen, "parameter %d has no name", (int)i);
        if (r < 0 || r >= f->nnodes || f->nodes[r].op != IR_OP_INPUT || f->nodes[r].index != i)
            return ir_fail(err, errlen, "parameter %d ('%s') points at %%%d, not its input node",
                           (int)i, f->params[i].name, (int)r);
    }
    for (int32_t i = 0; i < f->noutputs; i++) {
        ir_ref r = f->outputs[i].node;
        if (r < 0 || r >= f->nnodes || f->nodes[r].op != IR_OP_OUTPUT || f->nodes[r].index != i)
            return ir_fail(err, errlen, "output %d points at %%%d, not its output node", (int)i,
                           (int)r);
    }
    if (f->partition) {
        for (ir_ref r = 0; r < f->nnodes; r++)
            if (f->nodes[r].op == IR_OP_GRAD)
                return ir_fail(err, errlen, "%%%d: grad in a partitioned function", (int)r);
        return ir_verify_partition(f, err, errlen);
    }
    return 0;
}
