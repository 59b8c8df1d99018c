/* ir/read.c: the IR reader's entry points (ir/read.h) and its second half: a function as its
 * lines state it (ir/read_parse.c) into an ir_func. The nodes are made in number order by the
 * builders of ir/build.c, each first held to the verifier's per-node rules (the builders
 * assert what the verifier rejects, and this is user input); then the parameters and outputs
 * take the numbers their lines give, the header is checked against them, the partition is
 * filled from the kernel lines, and ir_verify has the last word. */
#include "read.h"

#include <stdlib.h>
#include <string.h>

#include "read_parse.h"

/* What building one function needs: the text's tables, the node lines by number, and where a
 * message goes. */
typedef struct rd_build {
    ir_rd_func *rf;
    ir_func *f;
    ir_rd_node **by_ref; /* the line of each node number */
    char *err;
    size_t errlen;
} rd_build;

static int oom(const rd_build *b, ir_rd_pos pos) {
    return ir_rd_fail(b->err, b->errlen, pos, "out of memory");
}

/* "f32[R, C]" in f's arena, for messages. */
static const char *type_str(ir_func *f, ir_dtype t, const ir_shape *s) {
    ir_buf buf;
    ir_buf_init(&buf, f->arena);
    ir_buf_puts(&buf, ir_dtypes[t].name);
    ir_print_shape(&buf, f, s);
    return buf.data ? buf.data : "?";
}

/* Every node line by its number: the numbers run from %0 without a gap, each once, and every
 * operand names one of them. */
static int index_nodes(rd_build *b) {
    ir_rd_func *rf = b->rf;
    int32_t n = rf->nnodes;
    b->by_ref = ir_arena_calloc(b->f->arena, (size_t)n + 1, sizeof *b->by_ref);
    if (!b->by_ref) return oom(b, rf->pos);
    for (int32_t i = 0; i < n; i++) {
        ir_rd_node *nd = &rf->nodes[i];
        if (nd->ref >= n)
            return ir_rd_fail(b->err, b->errlen, nd->pos,
                              "%%%d in a function of %d nodes: they are numbered from %%0 "
                              "without a gap",
                              (int)nd->ref, (int)n);
        if (b->by_ref[nd->ref])
            return ir_rd_fail(b->err, b->errlen, nd->pos,
                              "%%%d is defined twice (first at line %d)", (int)nd->ref,
                              (int)b->by_ref[nd->ref]->pos.line);
        b->by_ref[nd->ref] = nd;
    }
    for (int32_t i = 0; i < n; i++) {
        const ir_rd_node *nd = &rf->nodes[i];
        for (int a = 0; a < ir_ops[nd->node.op].arity; a++)
            if (nd->node.args[a] >= n)
                return ir_rd_fail(b->err, b->errlen, nd->arg_pos[a], "undefined %%%d",
                                  (int)nd->node.args[a]);
    }
    return 0;
}

/* Room for one more node (and output) in f's tables; 0, or -1 when out of memory. */
static int room(ir_func *f, int output) {
    if (f->nnodes >= f->cap_nodes) {
        ir_node *p =
            ir_arena_grow(f->arena, f->nodes, sizeof(*f->nodes), &f->cap_nodes, f->nnodes + 1);
        if (!p) return -1;
        f->nodes = p;
    }
    if (output && f->noutputs >= f->cap_outputs) {
        ir_output *p = ir_arena_grow(f->arena, f->outputs, sizeof(*f->outputs), &f->cap_outputs,
                                     f->noutputs + 1);
        if (!p) return -1;
        f->outputs = p;
    }
    return 0;
}

/* Node n, as the next node, against the verifier's per-node rules before a builder makes it.
 * An OUTPUT is checked with the output entry ir_add_output will give it. */
static int precheck(rd_build *b, const ir_node *n, ir_rd_pos pos) {
    ir_func *f = b->f;
    int output = n->op == IR_OP_OUTPUT;
    if (room(f, output)) return oom(b, pos);
    ir_ref r = f->nnodes++;
    f->nodes[r] = *n;
    if (output) {
        f->nodes[r].index = f->noutputs;
        ir_output o = {n->dtype, n->shape, r};
        f->outputs[f->noutputs++] = o;
    }
    char msg[256];
    int bad = ir_verify_node(f, r, msg, sizeof msg);
    f->nnodes--;
    if (output) f->noutputs--;
    return bad ? ir_rd_fail(b->err, b->errlen, pos, "%s", msg) : 0;
}

/* A node as written, appended without a builder: for the two valid nodes whose builders make
 * none, returning the operand instead (below). */
static ir_ref append_as_written(ir_func *f, const ir_node *n) {
    if (room(f, 0)) return IR_NONE;
    f->nodes[f->nnodes] = *n;
    f->nodes[f->nnodes].kernel = -1;
    f->nodes[f->nnodes].flags = 0;
    return f->nnodes++;
}

/* The node of line nd, made by the builder of its class. A cast to its operand's own dtype
 * (a returned parameter's copy kernel is one) or a broadcast to its operand's own shape is
 * valid IR, but ir_cast and ir_broadcast return the operand for it: those are appended as
 * written. */
static ir_ref build_one(ir_func *f, const ir_rd_node *nd) {
    const ir_node *n = &nd->node;
    const ir_node *a = n->args[0] >= 0 ? &f->nodes[n->args[0]] : NULL;
    switch (ir_ops[n->op].cls) {
    case IR_CLASS_LEAF:
        if (n->op == IR_OP_INPUT) return ir_add_input(f, nd->name, n->dtype, &n->shape);
        if (n->op == IR_OP_INDEX) return ir_index(f, &n->shape);
        if (ir_dtype_is_float(n->dtype)) return ir_const_float(f, n->dtype, n->value.f);
        return ir_const_int(f, n->dtype, n->value.i);
    case IR_CLASS_EW: {
        ir_ref r = ir_ew(f, n->op, n->dtype, &n->shape, ir_ops[n->op].arity, n->args);
        if (r != IR_NONE) f->nodes[r].index = n->index; /* rand's stream */
        return r;
    }
    case IR_CLASS_CAST:
        if (a->dtype == n->dtype) return append_as_written(f, n);
        return ir_cast(f, n->args[0], n->dtype);
    case IR_CLASS_BROADCAST:
        if (ir_shape_equal(&a->shape, &n->shape)) return append_as_written(f, n);
        return ir_broadcast(f, n->args[0], &n->shape);
    case IR_CLASS_REDUCE: return ir_reduce(f, n->op, n->args[0], n->axes, n->dtype);
    case IR_CLASS_OUTPUT: return ir_add_output(f, n->args[0], n->dtype, &n->shape);
    }
    return IR_NONE;
}

/* Every node in number order, so each operand exists before its user; then its flags. An
 * INPUT needs no check first: ir_add_input makes its parameter from the node itself, and the
 * parser admits only shapes the verifier does. */
static int build_nodes(rd_build *b) {
    for (ir_ref r = 0; r < b->rf->nnodes; r++) {
        const ir_rd_node *nd = b->by_ref[r];
        if (nd->node.op != IR_OP_INPUT && precheck(b, &nd->node, nd->pos)) return -1;
        ir_ref got = build_one(b->f, nd);
        if (got == IR_NONE) return oom(b, nd->pos);
        if (got != r)
            return ir_rd_fail(b->err, b->errlen, nd->pos, "internal error: %%%d was built as %%%d",
                              (int)r, (int)got);
        b->f->nodes[r].flags = nd->node.flags;
    }
    return 0;
}

/* The parameters (op INPUT) or outputs (op OUTPUT) in the order their lines number them: the
 * builders numbered them in node order, which need not be that order. Each number from 0 up
 * must be used once. */
static int renumber(rd_build *b, ir_op op) {
    ir_func *f = b->f;
    int inputs = op == IR_OP_INPUT;
    int32_t n = inputs ? f->nparams : f->noutputs;
    ir_ref *node_of = ir_arena_calloc(f->arena, (size_t)n + 1, sizeof *node_of); /* ref + 1 */
    ir_param *params = ir_arena_calloc(f->arena, (size_t)n + 1, sizeof *params);
    ir_output *outputs = ir_arena_calloc(f->arena, (size_t)n + 1, sizeof *outputs);
    if (!node_of || !params || !outputs) return oom(b, b->rf->pos);
    for (ir_ref r = 0; r < f->nnodes; r++) {
        if (f->nodes[r].op != op) continue;
        const ir_rd_node *nd = b->by_ref[r];
        int32_t k = nd->node.index;
        if (k >= n)
            return ir_rd_fail(b->err, b->errlen, nd->pos, "%s %d of %d %s", ir_ops[op].name, (int)k,
                              (int)n, inputs ? "parameters" : "outputs");
        if (node_of[k])
            return ir_rd_fail(b->err, b->errlen, nd->pos, "%s %d twice (also %%%d)",
                              ir_ops[op].name, (int)k, (int)node_of[k] - 1);
        node_of[k] = r + 1;
    }
    if (n && inputs) memcpy(params, f->params, (size_t)n * sizeof *params);
    if (n && !inputs) memcpy(outputs, f->outputs, (size_t)n * sizeof *outputs);
    for (int32_t k = 0; k < n; k++) {
        ir_ref r = node_of[k] - 1;
        int32_t j = f->nodes[r].index; /* the builder's number */
        if (inputs)
            f->params[k] = params[j];
        else
            f->outputs[k] = outputs[j];
        f->nodes[r].index = k;
    }
    return 0;
}

/* The `func` header against the function's own tables: each parameter is the INPUT node of
 * its number, with its type; each result has the type of the OUTPUT node of its number. */
static int check_header(rd_build *b) {
    const ir_rd_func *rf = b->rf;
    ir_func *f = b->f;
    if (rf->nparams != f->nparams)
        return ir_rd_fail(b->err, b->errlen, rf->pos,
                          "the header has %d parameters but the function %d input lines",
                          (int)rf->nparams, (int)f->nparams);
    for (int32_t i = 0; i < f->nparams; i++) {
        const ir_param *h = &rf->params[i].param, *p = &f->params[i];
        if (h->node != p->node)
            return ir_rd_fail(b->err, b->errlen, rf->params[i].pos,
                              "parameter %d is %%%d in the header but input %d is %%%d", (int)i,
                              (int)h->node, (int)i, (int)p->node);
        /* the header declares the parameter; its input line may add or drop axes of one */
        if (h->dtype != p->dtype || !ir_shape_squeeze_equal(&h->shape, &p->shape))
            return ir_rd_fail(b->err, b->errlen, rf->params[i].pos,
                              "parameter %d is %s in the header but %%%d is %s", (int)i,
                              type_str(f, h->dtype, &h->shape), (int)p->node,
                              type_str(f, p->dtype, &p->shape));
        f->params[i].shape = h->shape;
    }
    if (rf->noutputs != f->noutputs)
        return ir_rd_fail(b->err, b->errlen, rf->pos,
                          "the header has %d results but the function %d output lines",
                          (int)rf->noutputs, (int)f->noutputs);
    for (int32_t i = 0; i < f->noutputs; i++) {
        const ir_output *h = &rf->outputs[i], *o = &f->outputs[i];
        if (h->dtype != o->dtype || !ir_shape_equal(&h->shape, &o->shape))
            return ir_rd_fail(b->err, b->errlen, rf->pos,
                              "result %d is %s in the header but output %d (%%%d) is %s", (int)i,
                              type_str(f, h->dtype, &h->shape), (int)i, (int)o->node,
                              type_str(f, o->dtype, &o->shape));
    }
    return 0;
}

/* The partition of the kernel lines, when there are any: each kernel as its header states
 * it, its body the node lines below the header in their order, each with node.kernel set. */
static int build_partition(rd_build *b) {
    const ir_rd_func *rf = b->rf;
    ir_func *f = b->f;
    if (!rf->nkernels) return 0;
    ir_partition *p = ir_arena_alloc(f->arena, sizeof *p);
    ir_kernel *k = p ? ir_arena_calloc(f->arena, (size_t)rf->nkernels, sizeof *k) : NULL;
    if (!k) return oom(b, rf->pos);
    p->kernels = k;
    p->nkernels = p->cap_kernels = rf->nkernels;
    for (int32_t i = 0; i < rf->nkernels; i++)
        k[i] = rf->kernels[i].kernel;
    for (int32_t i = 0; i < rf->nnodes; i++) {
        const ir_rd_node *nd = &rf->nodes[i];
        if (nd->kernel < 0) continue;
        ir_kernel *kn = &k[nd->kernel];
        IR_VEC_PUSH(f->arena, kn->body, kn->nbody, kn->cap_body, nd->ref);
        if (!kn->body) return oom(b, nd->pos);
        f->nodes[nd->ref].kernel = nd->kernel;
    }
    f->partition = p;
    return 0;
}

/* ir_verify on the whole function, its message at the line it is about: the node line of a
 * message that starts "%N", the kernel line of one that starts "kernel K", else the `func`
 * line. */
static int verify(const rd_build *b) {
    char msg[512];
    if (!ir_verify(b->f, msg, sizeof msg)) return 0;
    ir_rd_pos pos = b->rf->pos;
    char *end;
    if (msg[0] == '%') {
        long v = strtol(msg + 1, &end, 10);
        if (end != msg + 1 && v >= 0 && v < b->rf->nnodes) pos = b->by_ref[v]->pos;
    } else if (!strncmp(msg, "kernel ", 7)) {
        long v = strtol(msg + 7, &end, 10);
        if (end != msg + 7 && v >= 0 && v < b->rf->nkernels) pos = b->rf->kernels[v].pos;
    }
    return ir_rd_fail(b->err, b->errlen, pos, "%s", msg);
}

/* The function rf states, built and verified. */
static int build_func(ir_rd_func *rf, char *err, size_t errlen) {
    rd_build b = {rf, rf->f, NULL, err, errlen};
    if (index_nodes(&b) || build_nodes(&b) || renumber(&b, IR_OP_INPUT) ||
        renumber(&b, IR_OP_OUTPUT) || check_header(&b) || build_partition(&b))
        return -1;
    return verify(&b);
}

static const ir_rd_pos text_start = {1, 1};

int ir_read_func(ir_module *m, const char *text, size_t len, ir_func **out, char *err,
                 size_t errlen) {
    *out = NULL;
    if (err && errlen) err[0] = 0;
    if (len >= INT32_MAX) return ir_rd_fail(err, errlen, text_start, "text too long");
    int32_t before = m->nfuncs;
    ir_rd_text t = {text, text + len, 1};
    ir_rd_func rf;
    int rc = ir_rd_parse_func(&t, m, &rf, err, errlen);
    if (rc == 1) rc = ir_rd_fail(err, errlen, text_start, "no function in the text");
    if (rc == 0) rc = build_func(&rf, err, errlen);
    if (rc == 0 && t.p < t.end) {
        ir_rd_pos pos = {t.line, 1};
        rc = ir_rd_fail(err, errlen, pos, "a second function (ir_read_module reads several)");
    }
    if (rc) {
        m->nfuncs = before; /* the function begun is not the module's */
        return -1;
    }
    *out = rf.f;
    return 0;
}

int ir_read_module(ir_arena *a, const char *text, size_t len, ir_module **out, char *err,
                   size_t errlen) {
    *out = NULL;
    if (err && errlen) err[0] = 0;
    if (len >= INT32_MAX) return ir_rd_fail(err, errlen, text_start, "text too long");
    ir_module *m = ir_module_new(a);
    if (!m) return ir_rd_fail(err, errlen, text_start, "out of memory");
    ir_rd_text t = {text, text + len, 1};
    for (;;) {
        ir_rd_func rf;
        int rc = ir_rd_parse_func(&t, m, &rf, err, errlen);
        if (rc == 1) break;
        if (rc < 0 || build_func(&rf, err, errlen)) return -1;
    }
    *out = m;
    return 0;
}
