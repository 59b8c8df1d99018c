/* ir/verify_partition.c: the checks of a fusion partition (ir_partition), run by ir_verify
 * when f->partition is set: what the code generators take for granted.
 *
 *   membership  every node that is neither a leaf (INPUT, CONST) nor an OUTPUT is in exactly
 *               one kernel's body, and node.kernel names it; leaves and OUTPUTs are in none
 *               (constants are inlined into each kernel that uses them; an OUTPUT reads a
 *               value its kernel stores);
 *   reads       a body node reads constants, earlier nodes of the same body, or the kernel's
 *               inputs; each input is an INPUT node or a value an EARLIER kernel stores (so
 *               the kernels are in dependency order), is read, and is listed once;
 *   stores      a value is flagged IR_NODE_STORED exactly when another kernel or an OUTPUT
 *               reads it, and a kernel's outputs are exactly its stored body nodes;
 *   domains     pointwise: no reduction, every node's shape broadcasts into the domain, every
 *               output has the domain's shape; reductions: the kind matches the reduced axes,
 *               every reduction reduces the domain over reduce_axes, outputs have the
 *               domain's shape or the reduced one, and in a full reduction nothing per
 *               element (and no second reduction) depends on the kernel's own reductions;
 *               combined: two or more pointwise parts (parts[i]: where part i starts in the
 *               body) that read nothing of each other, each over the shape of its outputs.
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>

static int is_leaf(const ir_node *n) {
    return ir_ops[n->op].cls == IR_CLASS_LEAF;
}

static int is_scalar(const ir_shape *s) {
    for (int32_t i = 0; i < s->rank; i++)
        if (!ir_dim_is_one(s->dims[i])) return 0;
    return 1;
}

/* s broadcasts into d without changing it. */
static int fits(const ir_shape *s, const ir_shape *d) {
    ir_shape out;
    if (s->rank > d->rank || ir_shape_broadcast(s, d, &out) >= 0) return 0;
    return ir_shape_equal(&out, d);
}

typedef struct scratch {
    int32_t *owner;  /* kernel of each node, -1 */
    int32_t *pos;    /* place in its body */
    int32_t *inmark; /* k + 1 when an input of kernel k */
    int32_t *used;   /* k + 1 when kernel k reads it */
    int32_t *part;   /* part of each body node (combined kernels) */
    unsigned char *need, *dep;
} scratch;

/* What the steps of check_kernel share: kernel k of f's partition, the scratch, and where a
 * failure's message goes. */
typedef struct kcheck {
    const ir_func *f;
    const ir_kernel *kn;
    int32_t k;
    scratch *s;
    char *err;
    size_t errlen;
} kcheck;

/* ---- the steps of check_kernel, in the order it runs them ------------------------------- */

/* The header: a known kind, a body, and counts that agree with their arrays. Every later
 * step indexes these arrays, so they are checked before anything reads them. */
static int check_header(const kcheck *c) {
    const ir_kernel *kn = c->kn;
    int k = (int)c->k;
    if (kn->kind < IR_KERNEL_POINTWISE || kn->kind > IR_KERNEL_COMBINED)
        return ir_fail(c->err, c->errlen, "kernel %d: bad kind %d", k, (int)kn->kind);
    if (kn->nbody <= 0) return ir_fail(c->err, c->errlen, "kernel %d: empty body", k);
    if (kn->ninputs < 0 || kn->noutputs < 0 || kn->nparts < 0 || (kn->ninputs && !kn->inputs) ||
        (kn->noutputs && !kn->outputs) || (kn->nparts && !kn->parts))
        return ir_fail(c->err, c->errlen, "kernel %d: bad input, output or part arrays", k);
    return 0;
}

/* One input, q: a node, listed once (marked in inmark for the body reads), and an INPUT or
 * a value that an EARLIER kernel stores. The generated code loads each input from memory,
 * and the kernels run in partition order, so anything else is not there to load. */
static int check_input(const kcheck *c, ir_ref q) {
    const ir_func *f = c->f;
    int k = (int)c->k;
    if (q < 0 || q >= f->nnodes)
        return ir_fail(c->err, c->errlen, "kernel %d: input %%%d is no node", k, (int)q);
    const ir_node *qn = &f->nodes[q];
    if (c->s->inmark[q] == c->k + 1)
        return ir_fail(c->err, c->errlen, "kernel %d: input %%%d listed twice", k, (int)q);
    c->s->inmark[q] = c->k + 1;
    if (qn->op == IR_OP_INPUT) return 0;
    if (is_leaf(qn) || qn->op == IR_OP_OUTPUT)
        return ir_fail(c->err, c->errlen, "kernel %d: input %%%d is a %s (constants are inlined)",
                       k, (int)q, ir_ops[qn->op].name);
    if (c->s->owner[q] < 0 || c->s->owner[q] >= c->k)
        return ir_fail(c->err, c->errlen,
                       "kernel %d: input %%%d is not stored by an earlier kernel (kernel %d)", k,
                       (int)q, (int)c->s->owner[q]);
    if (!(qn->flags & IR_NODE_STORED))
        return ir_fail(c->err, c->errlen, "kernel %d: input %%%d is not flagged stored", k, (int)q);
    return 0;
}

/* The parts: a combined kernel, and only it, has parts; at least two (one part alone is a
 * pointwise kernel), the first at 0, each after the one before and inside the body, so
 * that they cut the body into non-empty ranges that the code generators launch apart. */
static int check_parts(const kcheck *c) {
    const ir_kernel *kn = c->kn;
    int k = (int)c->k;
    if ((kn->kind == IR_KERNEL_COMBINED) != (kn->nparts > 0))
        return ir_fail(c->err, c->errlen, "kernel %d: %s kernel with %d parts", k,
                       kn->kind == IR_KERNEL_COMBINED ? "a combined" : "a non-combined",
                       (int)kn->nparts);
    if (kn->kind != IR_KERNEL_COMBINED) return 0;
    if (kn->nparts < 2 || kn->parts[0] != 0)
        return ir_fail(c->err, c->errlen, "kernel %d: combined with %d parts, first at %d", k,
                       (int)kn->nparts, kn->nparts ? (int)kn->parts[0] : -1);
    for (int32_t i = 1; i < kn->nparts; i++)
        if (kn->parts[i] <= kn->parts[i - 1] || kn->parts[i] >= kn->nbody)
            return ir_fail(c->err, c->errlen, "kernel %d: part %d starts at %d", k, (int)i,
                           (int)kn->parts[i]);
    return 0;
}

/* One operand q of body node r (at place i of the body, in part `part`): a constant (inlined),
 * an earlier node of the same part (computed in registers, in body order; parts run apart
 * and cannot see each other's registers), or an input of the kernel (marked used). */
static int check_read(const kcheck *c, ir_ref r, int32_t i, int32_t part, ir_ref q) {
    scratch *s = c->s;
    int k = (int)c->k;
    if (ir_op_is_inline_leaf(c->f->nodes[q].op)) return 0;
    if (s->owner[q] == c->k) {
        if (s->pos[q] >= i)
            return ir_fail(c->err, c->errlen, "kernel %d: %%%d reads %%%d, later in the body", k,
                           (int)r, (int)q);
        if (s->part[q] != part)
            return ir_fail(c->err, c->errlen,
                           "kernel %d: %%%d in part %d reads %%%d of part %d (parts must "
                           "be independent)",
                           k, (int)r, (int)part, (int)q, (int)s->part[q]);
        return 0;
    }
    if (s->inmark[q] != c->k + 1)
        return ir_fail(c->err, c->errlen,
                       "kernel %d: %%%d reads %%%d, neither in its body nor its inputs", k, (int)r,
                       (int)q);
    s->used[q] = c->k + 1;
    return 0;
}

/* The body reads: every operand of every body node passes check_read (which also records
 * each body node's part), and then every input was read: an unread input would be loaded
 * for nothing, and counted by the report as bytes moved. */
static int check_body_reads(const kcheck *c) {
    const ir_kernel *kn = c->kn;
    int32_t part = 0;
    for (int32_t i = 0; i < kn->nbody; i++) {
        ir_ref r = kn->body[i];
        if (kn->nparts && part + 1 < kn->nparts && kn->parts[part + 1] == i) part++;
        c->s->part[r] = part;
        const ir_node *n = &c->f->nodes[r];
        for (int a = 0; a < ir_ops[n->op].arity; a++)
            if (check_read(c, r, i, part, n->args[a])) return -1;
    }
    for (int32_t i = 0; i < kn->ninputs; i++)
        if (c->s->used[kn->inputs[i]] != c->k + 1)
            return ir_fail(c->err, c->errlen, "kernel %d: input %%%d is never read", (int)c->k,
                           (int)kn->inputs[i]);
    return 0;
}

/* The outputs: exactly the stored body nodes, each listed once. The code generators write
 * what `outputs` lists, and later kernels and OUTPUT nodes read what is flagged stored, so
 * the two must agree. */
static int check_outputs(const kcheck *c) {
    const ir_func *f = c->f;
    const ir_kernel *kn = c->kn;
    int k = (int)c->k;
    int32_t nstored = 0;
    for (int32_t i = 0; i < kn->nbody; i++)
        if (f->nodes[kn->body[i]].flags & IR_NODE_STORED) nstored++;
    for (int32_t i = 0; i < kn->noutputs; i++) {
        ir_ref q = kn->outputs[i];
        if (q < 0 || q >= f->nnodes || c->s->owner[q] != c->k)
            return ir_fail(c->err, c->errlen, "kernel %d: output %%%d is not in its body", k,
                           (int)q);
        if (!(f->nodes[q].flags & IR_NODE_STORED))
            return ir_fail(c->err, c->errlen, "kernel %d: output %%%d is not flagged stored", k,
                           (int)q);
        for (int32_t j = 0; j < i; j++)
            if (kn->outputs[j] == q)
                return ir_fail(c->err, c->errlen, "kernel %d: output %%%d listed twice", k, (int)q);
    }
    if (nstored != kn->noutputs)
        return ir_fail(c->err, c->errlen, "kernel %d: %d stored body nodes but %d outputs", k,
                       (int)nstored, (int)kn->noutputs);
    return 0;
}

/* Part pi of a pointwise or combined kernel (the whole body when it has no parts) over its
 * domain: the kernel's domain, or for a part the shape of its first stored node (a combined
 * kernel's domain is only its first part's). One thread per element of that domain: so no
 * reduction, every node broadcasts into the domain, and every output covers it exactly. */
static int check_pointwise_part(const kcheck *c, int32_t pi) {
    const ir_func *f = c->f;
    const ir_kernel *kn = c->kn;
    int k = (int)c->k;
    int32_t from = kn->nparts ? kn->parts[pi] : 0;
    int32_t to = kn->nparts && pi + 1 < kn->nparts ? kn->parts[pi + 1] : kn->nbody;
    const ir_shape *dom = kn->nparts ? NULL : &kn->domain;
    for (int32_t i = from; i < to && !dom; i++)
        if (f->nodes[kn->body[i]].flags & IR_NODE_STORED) dom = &f->nodes[kn->body[i]].shape;
    if (!dom) return ir_fail(c->err, c->errlen, "kernel %d: part %d stores nothing", k, (int)pi);
    char what[32];
    if (kn->nparts)
        snprintf(what, sizeof what, "part %d", (int)pi);
    else
        snprintf(what, sizeof what, "domain");
    for (int32_t i = from; i < to; i++) {
        const ir_node *n = &f->nodes[kn->body[i]];
        if (ir_ops[n->op].cls == IR_CLASS_REDUCE)
            return ir_fail(c->err, c->errlen, "kernel %d: %s %%%d in a pointwise %s", k,
                           ir_ops[n->op].name, (int)kn->body[i], what);
        if (!fits(&n->shape, dom))
            return ir_fail(c->err, c->errlen, "kernel %d: %%%d does not fit the %s", k,
                           (int)kn->body[i], what);
        if ((n->flags & IR_NODE_STORED) && !ir_shape_equal(&n->shape, dom))
            return ir_fail(c->err, c->errlen, "kernel %d: output %%%d has not the shape of the %s",
                           k, (int)kn->body[i], what);
    }
    return 0;
}

/* The domains of a pointwise or combined kernel: no reduce axes (nothing is reduced), then
 * each part as check_pointwise_part says. */
static int check_pointwise_domains(const kcheck *c) {
    const ir_kernel *kn = c->kn;
    if (kn->reduce_axes)
        return ir_fail(c->err, c->errlen, "kernel %d: %s with reduce axes 0x%x", (int)c->k,
                       kn->kind == IR_KERNEL_COMBINED ? "combined" : "pointwise",
                       (unsigned)kn->reduce_axes);
    int32_t nparts = kn->nparts ? kn->nparts : 1;
    for (int32_t pi = 0; pi < nparts; pi++)
        if (check_pointwise_part(c, pi)) return -1;
    return 0;
}

/* Body node r of a reduction kernel over its domain D: a reduction reduces D over the
 * kernel's axes (one sweep shape for all of them); every node broadcasts into D; an output
 * is per element (D) or per result (reduce(D, axes)), the two things a block can write. */
static int check_reduction_node(const kcheck *c, ir_ref r, const ir_shape *outer) {
    const ir_func *f = c->f;
    const ir_kernel *kn = c->kn;
    const ir_node *n = &f->nodes[r];
    int k = (int)c->k;
    if (ir_ops[n->op].cls == IR_CLASS_REDUCE &&
        (n->axes != kn->reduce_axes || !ir_shape_equal(&f->nodes[n->args[0]].shape, &kn->domain)))
        return ir_fail(c->err, c->errlen,
                       "kernel %d: %%%d reduces another shape or other axes than the kernel", k,
                       (int)r);
    if (!fits(&n->shape, &kn->domain))
        return ir_fail(c->err, c->errlen, "kernel %d: %%%d does not fit the domain", k, (int)r);
    if ((n->flags & IR_NODE_STORED) && !ir_shape_equal(&n->shape, &kn->domain) &&
        !ir_shape_equal(&n->shape, outer))
        return ir_fail(c->err, c->errlen,
                       "kernel %d: output %%%d is neither per element nor per result", k, (int)r);
    return 0;
}

/* Body node r of a full reduction, in body order: whether it depends on one of the kernel's
 * own reductions (kept in dep). No block owns the whole domain, so such a node can only be
 * a scalar computed after the final combine: not per element, and not a reduction. */
static int check_full_node(const kcheck *c, ir_ref r) {
    const ir_func *f = c->f;
    const ir_node *n = &f->nodes[r];
    int d = 0;
    for (int a = 0; a < ir_ops[n->op].arity; a++) {
        ir_ref q = n->args[a];
        if (c->s->owner[q] == c->k &&
            (c->s->dep[q] || ir_ops[f->nodes[q].op].cls == IR_CLASS_REDUCE))
            d = 1;
    }
    c->s->dep[r] = (unsigned char)d;
    if (d && (ir_ops[n->op].cls == IR_CLASS_REDUCE || !is_scalar(&n->shape)))
        return ir_fail(c->err, c->errlen,
                       "kernel %d: %%%d depends on the full reduction's result but is per element",
                       (int)c->k, (int)r);
    return 0;
}

/* The domain of a reduction kernel: its kind is the one its domain and axes make (the code
 * generators pick the launch shape by kind), each body node passes check_reduction_node
 * (and check_full_node in a full reduction over more than one element), and the body holds
 * a reduction at all. */
static int check_reduction_domain(const kcheck *c) {
    const ir_kernel *kn = c->kn;
    if (ir_reduction_kind(&kn->domain, kn->reduce_axes) != kn->kind)
        return ir_fail(c->err, c->errlen, "kernel %d: the kind does not match reduce axes 0x%x",
                       (int)c->k, (unsigned)kn->reduce_axes);
    ir_shape outer = ir_shape_reduce(&kn->domain, kn->reduce_axes);
    int full = kn->kind == IR_KERNEL_FULL_REDUCTION && !is_scalar(&kn->domain);
    int nred = 0;
    for (int32_t i = 0; i < kn->nbody; i++) {
        ir_ref r = kn->body[i];
        if (check_reduction_node(c, r, &outer) || (full && check_full_node(c, r))) return -1;
        if (ir_ops[c->f->nodes[r].op].cls == IR_CLASS_REDUCE) nred++;
    }
    if (!nred)
        return ir_fail(c->err, c->errlen, "kernel %d: a reduction kernel without a reduction",
                       (int)c->k);
    return 0;
}

/* Kernel k, once ir_verify_partition has indexed every body (owner, pos) and checked
 * membership and stores: the steps in order, each assuming what the ones before checked. */
static int check_kernel(const ir_func *f, int32_t k, scratch *s, char *err, size_t errlen) {
    kcheck c = {
        .f = f, .kn = &f->partition->kernels[k], .k = k, .s = s, .err = err, .errlen = errlen};
    if (check_header(&c)) return -1;
    for (int32_t i = 0; i < c.kn->ninputs; i++)
        if (check_input(&c, c.kn->inputs[i])) return -1;
    if (check_parts(&c) || check_body_reads(&c) || check_outputs(&c)) return -1;
    if (c.kn->kind == IR_KERNEL_POINTWISE || c.kn->kind == IR_KERNEL_COMBINED)
        return check_pointwise_domains(&c);
    return check_reduction_domain(&c);
}

/* ---- ir_verify_partition and its steps before the kernels ------------------------------- */

static void scratch_free(scratch *s) {
    free(s->owner);
    free(s->pos);
    free(s->inmark);
    free(s->used);
    free(s->part);
    free(s->need);
    free(s->dep);
}

/* Per-node scratch for a function of nnodes nodes; -1 when out of memory (what was
 * allocated is for scratch_free). owner starts at -1 (no kernel), the rest at 0. */
static int scratch_alloc(scratch *s, ir_ref nnodes) {
    size_t n = (size_t)nnodes + 1;
    s->owner = malloc(n * sizeof(int32_t));
    s->pos = malloc(n * sizeof(int32_t));
    s->inmark = calloc(n, sizeof(int32_t));
    s->used = calloc(n, sizeof(int32_t));
    s->part = calloc(n, sizeof(int32_t));
    s->need = calloc(n, 1);
    s->dep = calloc(n, 1);
    if (!s->owner || !s->pos || !s->inmark || !s->used || !s->part || !s->need || !s->dep)
        return -1;
    for (ir_ref r = 0; r < nnodes; r++)
        s->owner[r] = -1;
    return 0;
}

/* Kernel k's body, into owner and pos: an array of nodes that are neither leaves nor OUTPUTs,
 * in no earlier body, whose node.kernel is k. Every later check looks a node's kernel up
 * here. */
static int index_body(const ir_func *f, int32_t k, scratch *s, char *err, size_t errlen) {
    const ir_kernel *kn = &f->partition->kernels[k];
    if (kn->nbody < 0 || (kn->nbody && !kn->body))
        return ir_fail(err, errlen, "kernel %d: bad body array", (int)k);
    for (int32_t i = 0; i < kn->nbody; i++) {
        ir_ref r = kn->body[i];
        if (r < 0 || r >= f->nnodes)
            return ir_fail(err, errlen, "kernel %d: body holds %%%d, no node", (int)k, (int)r);
        const ir_node *nd = &f->nodes[r];
        if (is_leaf(nd) || nd->op == IR_OP_OUTPUT)
            return ir_fail(err, errlen, "kernel %d: body holds %%%d, a %s", (int)k, (int)r,
                           ir_ops[nd->op].name);
        if (s->owner[r] >= 0)
            return ir_fail(err, errlen, "%%%d is in the bodies of kernels %d and %d", (int)r,
                           (int)s->owner[r], (int)k);
        if (nd->kernel != k)
            return ir_fail(err, errlen, "%%%d is in kernel %d but node.kernel is %d", (int)r,
                           (int)k, (int)nd->kernel);
        s->owner[r] = k;
        s->pos[r] = i;
    }
    return 0;
}

/* Membership: a leaf or OUTPUT is in no kernel and not stored, and an OUTPUT reads a value
 * some kernel computes; every other node is in a kernel. Marks in need what must be stored:
 * what an OUTPUT or a node of another kernel reads. */
static int check_membership(const ir_func *f, scratch *s, char *err, size_t errlen) {
    for (ir_ref r = 0; r < f->nnodes; r++) {
        const ir_node *nd = &f->nodes[r];
        if (is_leaf(nd) || nd->op == IR_OP_OUTPUT) {
            if (nd->kernel != -1 || (nd->flags & IR_NODE_STORED))
                return ir_fail(err, errlen, "%%%d: a %s has kernel %d%s", (int)r,
                               ir_ops[nd->op].name, (int)nd->kernel,
                               nd->flags & IR_NODE_STORED ? " and is stored" : "");
            if (nd->op != IR_OP_OUTPUT) continue;
            ir_ref q = nd->args[0];
            if (s->owner[q] < 0)
                return ir_fail(err, errlen, "%%%d: output of %%%d, which no kernel computes",
                               (int)r, (int)q);
            s->need[q] = 1;
            continue;
        }
        if (s->owner[r] < 0)
            return ir_fail(err, errlen, "%%%d (%s) is in no kernel", (int)r, ir_ops[nd->op].name);
        for (int a = 0; a < ir_ops[nd->op].arity; a++) {
            ir_ref q = nd->args[a];
            if (s->owner[q] >= 0 && s->owner[q] != s->owner[r]) s->need[q] = 1;
        }
    }
    return 0;
}

/* Stores: a kernel node is flagged stored exactly when need says so. A missing store loses
 * a value another kernel loads; a needless one writes bytes nobody reads. */
static int check_stores(const ir_func *f, const scratch *s, char *err, size_t errlen) {
    for (ir_ref r = 0; r < f->nnodes; r++) {
        if (s->owner[r] < 0) continue;
        int stored = (f->nodes[r].flags & IR_NODE_STORED) != 0;
        if (stored != s->need[r])
            return ir_fail(err, errlen, "%%%d is %s but %s", (int)r,
                           stored ? "stored" : "not stored",
                           s->need[r] ? "another kernel or an output reads it"
                                      : "no other kernel or output reads it");
    }
    return 0;
}

/* The checks in the order of the header comment: every body indexed (membership needs to
 * know each node's kernel), membership, stores, then each kernel. */
static int check_partition(const ir_func *f, scratch *s, char *err, size_t errlen) {
    const ir_partition *p = f->partition;
    for (int32_t k = 0; k < p->nkernels; k++)
        if (index_body(f, k, s, err, errlen)) return -1;
    if (check_membership(f, s, err, errlen) || check_stores(f, s, err, errlen)) return -1;
    for (int32_t k = 0; k < p->nkernels; k++)
        if (check_kernel(f, k, s, err, errlen)) return -1;
    return 0;
}

int ir_verify_partition(const ir_func *f, char *err, size_t errlen) {
    const ir_partition *p = f->partition;
    if (!p) return 0;
    if (p->nkernels < 0 || (p->nkernels > 0 && !p->kernels))
        return ir_fail(err, errlen, "partition: bad kernel array");
    scratch s;
    int rc = scratch_alloc(&s, f->nnodes) ? ir_fail(err, errlen, "out of memory")
                                          : check_partition(f, &s, err, errlen);
    scratch_free(&s);
    return rc;
}
