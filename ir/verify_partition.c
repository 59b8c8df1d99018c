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

static int check_kernel(const ir_func *f, int32_t k, scratch *s, char *err, size_t errlen) {
    const ir_kernel *kn = &f->partition->kernels[k];
    if (kn->kind < IR_KERNEL_POINTWISE || kn->kind > IR_KERNEL_COMBINED)
        return ir_fail(err, errlen, "kernel %d: bad kind %d", (int)k, (int)kn->kind);
    if (kn->nbody <= 0) return ir_fail(err, errlen, "kernel %d: empty body", (int)k);
    if (kn->ninputs < 0 || kn->noutputs < 0 || kn->nparts < 0 || (kn->ninputs && !kn->inputs) ||
        (kn->noutputs && !kn->outputs) || (kn->nparts && !kn->parts))
        return ir_fail(err, errlen, "kernel %d: bad input, output or part arrays", (int)k);
    for (int32_t i = 0; i < kn->ninputs; i++) {
        ir_ref q = kn->inputs[i];
        if (q < 0 || q >= f->nnodes)
            return ir_fail(err, errlen, "kernel %d: input %%%d is no node", (int)k, (int)q);
        const ir_node *qn = &f->nodes[q];
        if (s->inmark[q] == k + 1)
            return ir_fail(err, errlen, "kernel %d: input %%%d listed twice", (int)k, (int)q);
        s->inmark[q] = k + 1;
        if (qn->op == IR_OP_INPUT) continue;
        if (is_leaf(qn) || qn->op == IR_OP_OUTPUT)
            return ir_fail(err, errlen, "kernel %d: input %%%d is a %s (constants are inlined)",
                           (int)k, (int)q, ir_ops[qn->op].name);
        if (s->owner[q] < 0 || s->owner[q] >= k)
            return ir_fail(err, errlen,
                           "kernel %d: input %%%d is not stored by an earlier kernel (kernel %d)",
                           (int)k, (int)q, (int)s->owner[q]);
        if (!(qn->flags & IR_NODE_STORED))
            return ir_fail(err, errlen, "kernel %d: input %%%d is not flagged stored", (int)k,
                           (int)q);
    }
    /* parts */
    if ((kn->kind == IR_KERNEL_COMBINED) != (kn->nparts > 0))
        return ir_fail(err, errlen, "kernel %d: %s kernel with %d parts", (int)k,
                       kn->kind == IR_KERNEL_COMBINED ? "a combined" : "a non-combined",
                       (int)kn->nparts);
    if (kn->kind == IR_KERNEL_COMBINED) {
        if (kn->nparts < 2 || kn->parts[0] != 0)
            return ir_fail(err, errlen, "kernel %d: combined with %d parts, first at %d", (int)k,
                           (int)kn->nparts, kn->nparts ? (int)kn->parts[0] : -1);
        for (int32_t i = 1; i < kn->nparts; i++)
            if (kn->parts[i] <= kn->parts[i - 1] || kn->parts[i] >= kn->nbody)
                return ir_fail(err, errlen, "kernel %d: part %d starts at %d", (int)k, (int)i,
                               (int)kn->parts[i]);
    }
    int32_t part = 0;
    for (int32_t i = 0; i < kn->nbody; i++) {
        ir_ref r = kn->body[i];
        if (kn->nparts && part + 1 < kn->nparts && kn->parts[part + 1] == i) part++;
        s->part[r] = part;
        const ir_node *n = &f->nodes[r];
        for (int a = 0; a < ir_ops[n->op].arity; a++) {
            ir_ref q = n->args[a];
            const ir_node *qn = &f->nodes[q];
            if (qn->op == IR_OP_CONST) continue;
            if (s->owner[q] == k) {
                if (s->pos[q] >= i)
                    return ir_fail(err, errlen, "kernel %d: %%%d reads %%%d, later in the body",
                                   (int)k, (int)r, (int)q);
                if (s->part[q] != part)
                    return ir_fail(err, errlen,
                                   "kernel %d: %%%d in part %d reads %%%d of part %d (parts must "
                                   "be independent)",
                                   (int)k, (int)r, (int)part, (int)q, (int)s->part[q]);
                continue;
            }
            if (s->inmark[q] != k + 1)
                return ir_fail(err, errlen,
                               "kernel %d: %%%d reads %%%d, neither in its body nor its inputs",
                               (int)k, (int)r, (int)q);
            s->used[q] = k + 1;
        }
    }
    for (int32_t i = 0; i < kn->ninputs; i++)
        if (s->used[kn->inputs[i]] != k + 1)
            return ir_fail(err, errlen, "kernel %d: input %%%d is never read", (int)k,
                           (int)kn->inputs[i]);
    /* outputs: exactly the stored body nodes */
    int32_t nstored = 0;
    for (int32_t i = 0; i < kn->nbody; i++)
        if (f->nodes[kn->body[i]].flags & IR_NODE_STORED) nstored++;
    for (int32_t i = 0; i < kn->noutputs; i++) {
        ir_ref q = kn->outputs[i];
        if (q < 0 || q >= f->nnodes || s->owner[q] != k)
            return ir_fail(err, errlen, "kernel %d: output %%%d is not in its body", (int)k,
                           (int)q);
        if (!(f->nodes[q].flags & IR_NODE_STORED))
            return ir_fail(err, errlen, "kernel %d: output %%%d is not flagged stored", (int)k,
                           (int)q);
        for (int32_t j = 0; j < i; j++)
            if (kn->outputs[j] == q)
                return ir_fail(err, errlen, "kernel %d: output %%%d listed twice", (int)k, (int)q);
    }
    if (nstored != kn->noutputs)
        return ir_fail(err, errlen, "kernel %d: %d stored body nodes but %d outputs", (int)k,
                       (int)nstored, (int)kn->noutputs);

    /* domains */
    char s1[32];
    if (kn->kind == IR_KERNEL_POINTWISE || kn->kind == IR_KERNEL_COMBINED) {
        if (kn->reduce_axes)
            return ir_fail(err, errlen, "kernel %d: %s with reduce axes 0x%x", (int)k,
                           kn->kind == IR_KERNEL_COMBINED ? "combined" : "pointwise",
                           (unsigned)kn->reduce_axes);
        int32_t nparts = kn->nparts ? kn->nparts : 1;
        for (int32_t pi = 0; pi < nparts; pi++) {
            int32_t from = kn->nparts ? kn->parts[pi] : 0;
            int32_t to = kn->nparts && pi + 1 < kn->nparts ? kn->parts[pi + 1] : kn->nbody;
            const ir_shape *dom = kn->nparts ? NULL : &kn->domain;
            for (int32_t i = from; i < to && !dom; i++)
                if (f->nodes[kn->body[i]].flags & IR_NODE_STORED)
                    dom = &f->nodes[kn->body[i]].shape;
            if (!dom)
                return ir_fail(err, errlen, "kernel %d: part %d stores nothing", (int)k, (int)pi);
            snprintf(s1, sizeof s1, kn->nparts ? "part %d" : "domain", (int)pi);
            for (int32_t i = from; i < to; i++) {
                const ir_node *n = &f->nodes[kn->body[i]];
                if (ir_ops[n->op].cls == IR_CLASS_REDUCE)
                    return ir_fail(err, errlen, "kernel %d: %s %%%d in a pointwise %s", (int)k,
                                   ir_ops[n->op].name, (int)kn->body[i], s1);
                if (!fits(&n->shape, dom))
                    return ir_fail(err, errlen, "kernel %d: %%%d does not fit the %s", (int)k,
                                   (int)kn->body[i], s1);
                if ((n->flags & IR_NODE_STORED) && !ir_shape_equal(&n->shape, dom))
                    return ir_fail(err, errlen,
                                   "kernel %d: output %%%d has not the shape of the %s", (int)k,
                                   (int)kn->body[i], s1);
            }
        }
        return 0;
    }
    if (ir_reduction_kind(&kn->domain, kn->reduce_axes) != kn->kind)
        return ir_fail(err, errlen, "kernel %d: the kind does not match reduce axes 0x%x", (int)k,
                       (unsigned)kn->reduce_axes);
    ir_shape outer = ir_shape_reduce(&kn->domain, kn->reduce_axes);
    int full = kn->kind == IR_KERNEL_FULL_REDUCTION && !is_scalar(&kn->domain);
    int nred = 0;
    for (int32_t i = 0; i < kn->nbody; i++) {
        ir_ref r = kn->body[i];
        const ir_node *n = &f->nodes[r];
        int red = ir_ops[n->op].cls == IR_CLASS_REDUCE;
        if (red) {
            nred++;
            if (n->axes != kn->reduce_axes ||
                !ir_shape_equal(&f->nodes[n->args[0]].shape, &kn->domain))
                return ir_fail(
                    err, errlen,
                    "kernel %d: %%%d reduces another shape or other axes than the kernel", (int)k,
                    (int)r);
        }
        if (!fits(&n->shape, &kn->domain))
            return ir_fail(err, errlen, "kernel %d: %%%d does not fit the domain", (int)k, (int)r);
        if ((n->flags & IR_NODE_STORED) && !ir_shape_equal(&n->shape, &kn->domain) &&
            !ir_shape_equal(&n->shape, &outer))
            return ir_fail(err, errlen,
                           "kernel %d: output %%%d is neither per element nor per result", (int)k,
                           (int)r);
        if (!full) continue;
        int d = 0;
        for (int a = 0; a < ir_ops[n->op].arity; a++) {
            ir_ref q = n->args[a];
            if (s->owner[q] == k && (s->dep[q] || ir_ops[f->nodes[q].op].cls == IR_CLASS_REDUCE))
                d = 1;
        }
        s->dep[r] = (unsigned char)d;
        if (d && (red || !is_scalar(&n->shape)))
            return ir_fail(
                err, errlen,
                "kernel %d: %%%d depends on the full reduction's result but is per element", (int)k,
                (int)r);
    }
    if (!nred)
        return ir_fail(err, errlen, "kernel %d: a reduction kernel without a reduction", (int)k);
    return 0;
}

int ir_verify_partition(const ir_func *f, char *err, size_t errlen) {
    const ir_partition *p = f->partition;
    if (!p) return 0;
    if (p->nkernels < 0 || (p->nkernels > 0 && !p->kernels))
        return ir_fail(err, errlen, "partition: bad kernel array");
    size_t n = (size_t)f->nnodes + 1;
    scratch s;
    s.owner = malloc(n * sizeof(int32_t));
    s.pos = malloc(n * sizeof(int32_t));
    s.inmark = calloc(n, sizeof(int32_t));
    s.used = calloc(n, sizeof(int32_t));
    s.part = calloc(n, sizeof(int32_t));
    s.need = calloc(n, 1);
    s.dep = calloc(n, 1);
    int rc = 0;
    if (!s.owner || !s.pos || !s.inmark || !s.used || !s.part || !s.need || !s.dep) {
        rc = ir_fail(err, errlen, "out of memory");
        goto done;
    }
    for (ir_ref r = 0; r < f->nnodes; r++)
        s.owner[r] = -1;
    for (int32_t k = 0; k < p->nkernels && !rc; k++) {
        const ir_kernel *kn = &p->kernels[k];
        if (kn->nbody < 0 || (kn->nbody && !kn->body)) {
            rc = ir_fail(err, errlen, "kernel %d: bad body array", (int)k);
            break;
        }
        for (int32_t i = 0; i < kn->nbody; i++) {
            ir_ref r = kn->body[i];
            if (r < 0 || r >= f->nnodes) {
                rc = ir_fail(err, errlen, "kernel %d: body holds %%%d, no node", (int)k, (int)r);
                break;
            }
            const ir_node *nd = &f->nodes[r];
            if (is_leaf(nd) || nd->op == IR_OP_OUTPUT) {
                rc = ir_fail(err, errlen, "kernel %d: body holds %%%d, a %s", (int)k, (int)r,
                             ir_ops[nd->op].name);
                break;
            }
            if (s.owner[r] >= 0) {
                rc = ir_fail(err, errlen, "%%%d is in the bodies of kernels %d and %d", (int)r,
                             (int)s.owner[r], (int)k);
                break;
            }
            if (nd->kernel != k) {
                rc = ir_fail(err, errlen, "%%%d is in kernel %d but node.kernel is %d", (int)r,
                             (int)k, (int)nd->kernel);
                break;
            }
            s.owner[r] = k;
            s.pos[r] = i;
        }
    }
    if (rc) goto done;
    /* membership of every node; what must be stored */
    for (ir_ref r = 0; r < f->nnodes && !rc; r++) {
        const ir_node *nd = &f->nodes[r];
        if (is_leaf(nd) || nd->op == IR_OP_OUTPUT) {
            if (nd->kernel != -1 || (nd->flags & IR_NODE_STORED))
                rc = ir_fail(err, errlen, "%%%d: a %s has kernel %d%s", (int)r, ir_ops[nd->op].name,
                             (int)nd->kernel, nd->flags & IR_NODE_STORED ? " and is stored" : "");
            if (nd->op == IR_OP_OUTPUT && !rc) {
                ir_ref q = nd->args[0];
                if (s.owner[q] < 0)
                    rc = ir_fail(err, errlen, "%%%d: output of %%%d, which no kernel computes",
                                 (int)r, (int)q);
                else
                    s.need[q] = 1;
            }
            continue;
        }
        if (s.owner[r] < 0) {
            rc = ir_fail(err, errlen, "%%%d (%s) is in no kernel", (int)r, ir_ops[nd->op].name);
            break;
        }
        for (int a = 0; a < ir_ops[nd->op].arity; a++) {
            ir_ref q = nd->args[a];
            if (s.owner[q] >= 0 && s.owner[q] != s.owner[r]) s.need[q] = 1;
        }
    }
    for (ir_ref r = 0; r < f->nnodes && !rc; r++) {
        if (s.owner[r] < 0) continue;
        int stored = (f->nodes[r].flags & IR_NODE_STORED) != 0;
        if (stored != s.need[r])
            rc = ir_fail(err, errlen, "%%%d is %s but %s", (int)r, stored ? "stored" : "not stored",
                         s.need[r] ? "another kernel or an output reads it"
                                   : "no other kernel or output reads it");
    }
    for (int32_t k = 0; k < p->nkernels && !rc; k++)
        rc = check_kernel(f, k, &s, err, errlen);
done:
    free(s.owner);
    free(s.pos);
    free(s.inmark);
    free(s.used);
    free(s.part);
    free(s.need);
    free(s.dep);
    return rc;
}
