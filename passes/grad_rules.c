/* passes/grad_rules.c: the derivative rules of ir/ops.def (DERIV), read and made into nodes
 * where the gradient pass needs them. A rule is a small expression language (ops.def says
 * what it holds); each use parses its text again, which costs microseconds against a
 * compilation's milliseconds and keeps no table to fall out of step with the op table.
 *
 * Shapes. The pass keeps values in shapes padded on the left with axes of one (a broadcast's
 * gradient summed over its broadcast axes keeps them): every operand of a rule's op is one
 * shape so padded, or a rank-0 constant, and grad_ew broadcasts the shorter to the longer.
 * Dtypes: numbers are constants of the compute dtype; a float operand or result is read cast
 * to it (an f16 value computes in f32), a bool one as it is.
 */
#include "passes/grad_rules.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shapes ---------------------------------------------------------------------------- */

static int is_rank0_const(const ir_func *f, ir_ref r) {
    return f->nodes[r].op == IR_OP_CONST && f->nodes[r].shape.rank == 0;
}

ir_shape grad_pad(const ir_shape *s, int32_t rank) {
    ir_shape p;
    memset(&p, 0, sizeof p);
    p.rank = rank > s->rank ? rank : s->rank;
    int32_t k = p.rank - s->rank;
    for (int32_t d = 0; d < p.rank; d++)
        p.dims[d] = d < k ? ir_dim_lit(1) : s->dims[d - k];
    return p;
}

ir_ref grad_ew(ir_func *f, ir_op op, int n, const ir_ref *args) {
    ir_ref a[3];
    ir_dtype dts[3];
    ir_shape to;
    memset(&to, 0, sizeof to);
    int32_t rank = -1;
    for (int i = 0; i < n; i++) {
        if (args[i] == IR_NONE) return IR_NONE;
        const ir_node *x = &f->nodes[args[i]];
        if (!is_rank0_const(f, args[i]) && x->shape.rank > rank) {
            rank = x->shape.rank;
            to = x->shape;
        }
    }
    if (rank < 0) to.rank = 0; /* constants only */
    for (int i = 0; i < n; i++) {
        a[i] = args[i];
        if (!is_rank0_const(f, a[i])) a[i] = ir_broadcast(f, a[i], &to);
        if (a[i] == IR_NONE) return IR_NONE;
        dts[i] = f->nodes[a[i]].dtype;
    }
    ir_dtype t = ir_op_result_dtype(op, dts, dts[0]);
    return ir_ew(f, op, t, &to, n, a);
}

/* ---- the rule's text ------------------------------------------------------------------- */

typedef struct rule {
    ir_func *f;
    ir_ref node; /* the node differentiated */
    int operand; /* whose contribution */
    ir_ref g;
    ir_dtype t;         /* compute dtype */
    const char *s, *at; /* the rule's text, where we are */
    const char *end;    /* the end of this operand's part */
    char *err;
    size_t errlen;
    int failed;
} rule;

static ir_ref fail(rule *r, const char *what) {
    if (!r->failed)
        snprintf(r->err, r->errlen, "the derivative of %s: %s at '%.*s'",
                 ir_ops[r->f->nodes[r->node].op].name, what, (int)(r->end - r->at), r->at);
    r->failed = 1;
    return IR_NONE;
}

static void skip(rule *r) {
    while (r->at < r->end && isspace((unsigned char)*r->at))
        r->at++;
}

static int eat(rule *r, char c) {
    skip(r);
    if (r->at < r->end && *r->at == c) {
        r->at++;
        return 1;
    }
    return 0;
}

/* A forward value as a rule reads it: floats in the compute dtype. */
static ir_ref forward(rule *r, ir_ref x) {
    return ir_dtype_is_float(r->f->nodes[x].dtype) ? ir_cast(r->f, x, r->t) : x;
}

static ir_ref expr(rule *r);

/* The operand's shape (padded as e is) for bcast and the reductions. */
static ir_shape operand_shape(rule *r, int32_t rank) {
    const ir_node *n = &r->f->nodes[r->node];
    return grad_pad(&r->f->nodes[n->args[0]].shape, rank);
}

/* bcast(e), sumr(e), prodr(e), unbcast(e) */
static ir_ref special(rule *r, const char *name, ir_ref e) {
    ir_func *f = r->f;
    ir_node n = f->nodes[r->node];
    int32_t ra = f->nodes[n.args[0]].shape.rank, re = f->nodes[e].shape.rank;
    if (!strcmp(name, "bcast")) {
        ir_shape to = operand_shape(r, re);
        return ir_broadcast(f, e, &to);
    }
    if (!strcmp(name, "sumr") || !strcmp(name, "prodr")) {
        if (ir_ops[n.op].cls != IR_CLASS_REDUCE) return fail(r, "a reduction's rule only");
        ir_shape to = operand_shape(r, re);
        e = ir_broadcast(f, e, &to); /* (a constant: to the operand's shape) */
        uint32_t axes = n.axes << (to.rank - ra);
        return ir_reduce(f, name[0] == 's' ? IR_OP_SUM : IR_OP_PROD, e, axes, r->t);
    }
    if (!strcmp(name, "unbcast")) {
        if (n.op != IR_OP_BROADCAST) return fail(r, "a broadcast's rule only");
        const ir_shape *a = &f->nodes[n.args[0]].shape, *es = &f->nodes[e].shape;
        uint32_t axes = 0;
        for (int32_t i = 0; i < re; i++) {
            int32_t j = i - (re - a->rank);
            if (j < 0 || (ir_dim_is_one(a->dims[j]) && !ir_dim_is_one(es->dims[i])))
                axes |= 1u << i;
        }
        return axes ? ir_reduce(f, IR_OP_SUM, e, axes, r->t) : e;
    }
    return IR_NONE;
}

/* name "(" expr { "," expr } ")" */
static ir_ref call(rule *r, const char *name) {
    ir_ref args[3];
    int n = 0;
    if (!eat(r, '(')) return fail(r, "expected '('");
    do {
        if (n == 3) return fail(r, "more than 3 arguments");
        args[n] = expr(r);
        if (r->failed) return IR_NONE;
        n++;
    } while (eat(r, ','));
    if (!eat(r, ')')) return fail(r, "expected ')'");
    if (!strcmp(name, "bcast") || !strcmp(name, "sumr") || !strcmp(name, "prodr") ||
        !strcmp(name, "unbcast")) {
        if (n != 1) return fail(r, "one argument");
        ir_ref v = special(r, name, args[0]);
        return r->failed ? IR_NONE : v;
    }
    for (int op = 0; op < IR_OP_COUNT; op++) {
        if (ir_ops[op].cls != IR_CLASS_EW || op == IR_OP_GRAD || strcmp(ir_ops[op].name, name))
            continue;
        if (n != ir_ops[op].arity) return fail(r, "the wrong number of arguments");
        return grad_ew(r->f, (ir_op)op, n, args);
    }
    return fail(r, "an unknown function");
}

static ir_ref expr(rule *r) {
    skip(r);
    const char *p = r->at;
    if (p < r->end && (isdigit((unsigned char)*p) || *p == '-' || *p == '.')) {
        char buf[64], *endp;
        size_t len = 0;
        while (p + len < r->end && len < sizeof buf - 1 && strchr("0123456789.-+e", p[len]))
            len++;
        memcpy(buf, p, len);
        buf[len] = 0;
        double v = strtod(buf, &endp);
        if (endp == buf) return fail(r, "a bad number");
        r->at = p + (endp - buf);
        return ir_const_float(r->f, r->t, v);
    }
    size_t len = 0;
    while (p + len < r->end && (isalnum((unsigned char)p[len]) || p[len] == '_'))
        len++;
    if (!len) return fail(r, "expected a value");
    char name[32];
    if (len >= sizeof name) return fail(r, "a name too long");
    memcpy(name, p, len);
    name[len] = 0;
    r->at = p + len;
    const ir_node n = r->f->nodes[r->node];
    if (len == 1 && name[0] >= 'a' && name[0] <= 'c') {
        int i = name[0] - 'a';
        if (i >= ir_ops[n.op].arity) return fail(r, "no such operand");
        return forward(r, n.args[i]);
    }
    if (!strcmp(name, "y")) return forward(r, r->node);
    if (!strcmp(name, "g")) return r->g;
    return call(r, name);
}

int grad_rule(ir_func *f, ir_ref node, int i, ir_ref g, ir_ref *out, char *err, size_t errlen) {
    *out = IR_NONE;
    rule r;
    memset(&r, 0, sizeof r);
    r.f = f;
    r.node = node;
    r.operand = i;
    r.g = g;
    r.t = grad_compute_dtype(f->nodes[node].dtype);
    r.err = err;
    r.errlen = errlen;
    /* the i-th part of the rule, between semicolons */
    const char *s = ir_ops[f->nodes[node].op].deriv;
    for (int k = 0; k < i && s; k++) {
        s = strchr(s, ';');
        if (s) s++;
    }
    if (!s)
        return snprintf(err, errlen, "the derivative of %s has no part %d",
                        ir_ops[f->nodes[node].op].name, i + 1),
               -1;
    const char *end = strchr(s, ';');
    r.s = r.at = s;
    r.end = end ? end : s + strlen(s);
    skip(&r);
    if (r.end - r.at == 1 && *r.at == '0') return 0;
    if (r.end - r.at == 1 && *r.at == '-') {
        snprintf(err, errlen, "%s has no derivative", ir_ops[f->nodes[node].op].name);
        return -1;
    }
    ir_ref v = expr(&r);
    skip(&r);
    if (!r.failed && r.at != r.end) fail(&r, "text after the expression");
    if (r.failed) return -1;
    *out = v;
    return v == IR_NONE ? -1 : 0;
}
