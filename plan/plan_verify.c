/* plan/plan_verify.c: checks a kernel plan against the IR it was made from, so that a
 * planning bug is a message naming the kernel, not a wrong index in generated code. Each
 * check re-derives a fact from the IR by the plain definition (not by the planner's code):
 * buffers and homes, the collapsed axes, each access's presence, the layout, the levels, and
 * that no launch reads memory it writes (what the backends' loads rely on), in place too.
 */
#include "plan/plan.h"

#include <stdarg.h>
#include <stdio.h>

typedef struct vctx {
    const plan_func *pf;
    const plan_kernel *p;
    char *err;
    size_t errlen;
} vctx;

static int fail(vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(vctx *v, const char *fmt, ...) {
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (v->p)
        return ir_fail(v->err, v->errlen, "plan of '%s', kernel %d%s: %s", v->pf->func->name,
                       (int)v->p->kernel, v->p->part >= 0 ? " (a part)" : "", msg);
    return ir_fail(v->err, v->errlen, "plan of '%s': %s", v->pf->func->name, msg);
}

/* Params first, in order; each result the value its output reads; temps the other stored
 * values; every buffer's dtype and shape its node's. */
static int check_bufs(vctx *v) {
    const plan_func *pf = v->pf;
    const ir_func *f = pf->func;
    int32_t temps = 0;
    for (int32_t i = 0; i < pf->nbufs; i++) {
        const plan_buf *b = &pf->bufs[i];
        if (b->node < 0 || b->node >= f->nnodes) return fail(v, "buffer %d: no node", (int)i);
        const ir_node *n = &f->nodes[b->node];
        if (b->dtype != n->dtype || !ir_shape_equal(&b->shape, &n->shape))
            return fail(v, "buffer %d: not the dtype and shape of %%%d", (int)i, (int)b->node);
        int ok = 0;
        switch (b->kind) {
        case PLAN_BUF_PARAM:
            ok = i < f->nparams && b->index == i && f->params[i].node == b->node;
            break;
        case PLAN_BUF_RESULT:
            ok = b->index >= 0 && b->index < f->noutputs &&
                 f->nodes[f->outputs[b->index].node].args[0] == b->node;
            break;
        case PLAN_BUF_TEMP: ok = (n->flags & IR_NODE_STORED) && b->index == temps++; break;
        }
        if (!ok) return fail(v, "buffer %d does not hold what its kind says", (int)i);
    }
    if (temps != pf->ntemps) return fail(v, "%d temps counted, %d listed", (int)pf->ntemps, temps);
    for (ir_ref r = 0; r < f->nnodes; r++)
        if ((f->nodes[r].flags & IR_NODE_STORED) && plan_home_buf(pf, r) < 0)
            return fail(v, "stored %%%d has no buffer", (int)r);
    return 0;
}

/* Whether a value of shape s varies along domain axis a of d (right-aligned). */
static int varies(const ir_shape *s, const ir_shape *d, int32_t a) {
    int32_t j = a - (d->rank - s->rank);
    return j >= 0 && !ir_dim_is_one(s->dims[j]);
}

/* Each non-unit domain axis in exactly one collapsed axis, in order, the axes of one
 * collapsed axis adjacent (but for unit axes) and alike reduced; every access varies along
 * all of a collapsed axis's domain axes or none, and its presence says which. */
static int check_axes(vctx *v) {
    const plan_kernel *p = v->p;
    uint32_t nonunit = 0;
    int32_t prev_hi = -1;
    for (int32_t a = 0; a < p->dom.rank; a++)
        if (!ir_dim_is_one(p->dom.dims[a])) nonunit |= 1u << a;
    uint32_t seen = 0;
    for (int32_t c = 0; c < p->naxes; c++) {
        uint32_t d = p->axis_dims[c];
        if (!d || (d & ~nonunit))
            return fail(v, "collapsed axis %d: no axis or a unit one", (int)c);
        int32_t lo = __builtin_ctz(d), hi = 31 - __builtin_clz(d);
        if (lo <= prev_hi) return fail(v, "collapsed axes out of order at %d", (int)c);
        for (int32_t a = lo; a <= hi; a++)
            if (((nonunit >> a) & 1) && !((d >> a) & 1))
                return fail(v, "collapsed axis %d skips domain axis %d", (int)c, (int)a);
        int red = (p->reduced >> c) & 1;
        if (red ? (d & ~p->red) != 0 : (d & p->red) != 0)
            return fail(v, "collapsed axis %d mixes reduced and kept axes", (int)c);
        prev_hi = hi;
        seen |= d;
    }
    if (seen != nonunit) return fail(v, "the collapsed axes miss a domain axis");
    for (int32_t i = 0; i < p->nacc; i++) {
        const ir_shape *s = &p->f->nodes[p->acc[i].node].shape;
        for (int32_t c = 0; c < p->naxes; c++) {
            int32_t lo = __builtin_ctz(p->axis_dims[c]), n = 0, along = 0;
            for (int32_t a = lo; a < p->dom.rank; a++)
                if ((p->axis_dims[c] >> a) & 1) {
                    n++;
                    along += varies(s, &p->dom, a);
                }
            if (along != 0 && along != n)
                return fail(v, "access %d varies along part of collapsed axis %d", (int)i, (int)c);
            if ((along != 0) != (int)((p->acc[i].present >> c) & 1))
                return fail(v, "access %d's presence along axis %d is not its shape's", (int)i,
                            (int)c);
        }
    }
    return 0;
}

/* Every load reads its value's home; every store writes a buffer of the value it stores;
 * every operand from outside the kernel is loaded. */
static int check_accesses(vctx *v) {
    const plan_kernel *p = v->p;
    const ir_func *f = p->f;
    const ir_kernel *k = &f->partition->kernels[p->kernel];
    for (int32_t i = 0; i < p->nacc; i++) {
        const plan_access *x = &p->acc[i];
        int index = f->nodes[x->node].op == IR_OP_INDEX;
        if (index != (x->buf == PLAN_NO_BUF) || (index && x->store))
            return fail(v, "access %d: an index is read without a buffer, and nothing else",
                        (int)i);
        if (!index && (x->buf < 0 || x->buf >= v->pf->nbufs || v->pf->bufs[x->buf].node != x->node))
            return fail(v, "access %d: buffer %d does not hold %%%d", (int)i, (int)x->buf,
                        (int)x->node);
        if (!index && (x->store ? v->pf->bufs[x->buf].kind == PLAN_BUF_PARAM
                                : plan_home_buf(v->pf, x->node) != x->buf))
            return fail(v, "access %d: %%%d in the wrong buffer", (int)i, (int)x->node);
        if ((x->kind == PLAN_DENSE) != (x->present == plan_all_axes(p)))
            return fail(v, "access %d: dense or broadcast mislabelled", (int)i);
    }
    for (int32_t i = p->from; i < p->to; i++) {
        const ir_node *n = &f->nodes[k->body[i]];
        for (int j = 0; j < ir_ops[n->op].arity; j++) {
            ir_ref q = n->args[j];
            const ir_node *qn = &f->nodes[q];
            int inside = qn->kernel == p->kernel && ir_ops[qn->op].cls != IR_CLASS_LEAF;
            if (qn->op == IR_OP_CONST || inside) continue;
            int32_t a = p->load_acc[q];
            if (a < 0 || a >= p->nacc || p->acc[a].node != q || p->acc[a].store)
                return fail(v, "%%%d reads %%%d, which is not loaded", (int)k->body[i], (int)q);
        }
    }
    return 0;
}

/* The layout follows from the reduced axes and the levels. */
static int check_layout(vctx *v) {
    const plan_kernel *p = v->p;
    int last_red = p->naxes > 0 && ((p->reduced >> (p->naxes - 1)) & 1);
    switch (p->layout) {
    case PLAN_ELEMENTWISE:
        if (p->reduced) return fail(v, "element-wise, but it reduces a collapsed axis");
        break;
    case PLAN_FULL:
        if (!p->reduced || p->reduced != plan_all_axes(p) || p->nsweeps != 1 || p->final_sweep)
            return fail(v, "full, but not one level reducing every axis");
        break;
    case PLAN_ROW:
        if (!last_red) return fail(v, "a row layout whose last axis is kept");
        break;
    case PLAN_COLUMN:
        if (!p->reduced || last_red) return fail(v, "a column layout whose last axis is reduced");
        break;
    }
    if (p->split.splittable &&
        (p->layout != PLAN_COLUMN || p->nsweeps != 1 || p->final_sweep || p->split.scratch < 0 ||
         p->split.scratch >= v->pf->nscratch ||
         v->pf->scratch[p->split.scratch].count < (int64_t)PLAN_SPLIT_MAX * p->nreds))
        return fail(v, "a split it cannot make");
    return 0;
}

/* Stages: a reduction one more than its operands', others their operands' most; the
 * reductions listed in body order; nsweeps the deepest. */
static int check_levels(vctx *v) {
    const plan_kernel *p = v->p;
    const ir_func *f = p->f;
    const ir_kernel *k = &f->partition->kernels[p->kernel];
    int32_t nreds = 0, deepest = 0;
    for (int32_t i = p->from; i < p->to; i++) {
        ir_ref r = k->body[i];
        const ir_node *n = &f->nodes[r];
        int32_t s = 0;
        for (int j = 0; j < ir_ops[n->op].arity; j++) {
            const ir_node *q = &f->nodes[n->args[j]];
            if (q->kernel == p->kernel && ir_ops[q->op].cls != IR_CLASS_LEAF &&
                p->stage[n->args[j]] > s)
                s = p->stage[n->args[j]];
        }
        if (ir_ops[n->op].cls == IR_CLASS_REDUCE) {
            s++;
            if (nreds >= p->nreds || p->reds[nreds] != r)
                return fail(v, "reduction %%%d missing from its list", (int)r);
            nreds++;
        }
        if (p->stage[r] != s) return fail(v, "%%%d at stage %d, not %d", (int)r, p->stage[r], s);
        if (s > deepest) deepest = s;
    }
    if (nreds != p->nreds || deepest != p->nsweeps)
        return fail(v, "%d sweeps of %d reductions, not %d of %d", (int)p->nsweeps, (int)p->nreds,
                    (int)deepest, (int)nreds);
    return 0;
}

/* Each reduction that fails over nothing has its check. */
static int check_checks(vctx *v) {
    const ir_func *f = v->pf->func;
    for (ir_ref r = 0; r < f->nnodes; r++) {
        if (!(ir_ops[f->nodes[r].op].flags & IR_OPF_NONEMPTY)) continue;
        int found = 0;
        for (int32_t i = 0; i < v->pf->nchecks; i++)
            found |= v->pf->checks[i].node == r;
        if (!found) return fail(v, "%s %%%d has no launch check", ir_ops[f->nodes[r].op].name, r);
    }
    return 0;
}

/* ---- memory a launch reads: never what it writes --------------------------------------------
 *
 * The backends may load as if nothing a launch reads changed during it: CUDA's vector loads
 * are ld.global.nc (the non-coherent path, which does not see the launch's own stores) in
 * inline PTX that tells the compiler of no memory, so it may move them past a store. That is
 * correct while no launch reads memory it, or a launch running beside it, writes; these two
 * checks hold every plan to it. Launches of one call run in turn (a stream), so only a kernel's
 * own parts run beside it. */

/* Whether part q of a kernel loads (store 0) or stores (store 1) buffer b. */
static int touches(const plan_kernel *q, int32_t b, int store) {
    for (int32_t i = 0; i < q->nacc; i++)
        if (q->acc[i].store == store && q->acc[i].buf == b) return 1;
    return 0;
}

/* No kernel (any of its parts: they run at once) loads a buffer that it stores. */
static int check_read_only(vctx *v, int32_t k) {
    const plan_kernel_set *ks = &v->pf->kernels[k];
    for (int32_t pi = 0; pi < ks->nparts; pi++)
        for (int32_t i = 0; i < ks->parts[pi].nacc; i++) {
            const plan_access *x = &ks->parts[pi].acc[i];
            for (int32_t qi = 0; qi < ks->nparts && !x->store && x->buf != PLAN_NO_BUF; qi++)
                if (touches(&ks->parts[qi], x->buf, 1))
                    return fail(v,
                                "kernel %d loads and stores buffer %d, which its loads "
                                "(non-coherent, unordered with its stores) do not allow",
                                (int)k, (int)x->buf);
        }
    return 0;
}

/* Whether part q reads the value loaded from buffer b in a sweep after `sweep`: a node reads
 * its operands in the sweep of its stage, a reduction in the one before (it accumulates there,
 * its value ready after). */
static int read_after(const plan_kernel *q, int32_t b, int32_t sweep) {
    const ir_func *f = q->f;
    const ir_kernel *k = &f->partition->kernels[q->kernel];
    for (int32_t i = q->from; i < q->to && q->nreds; i++) {
        const ir_node *n = &f->nodes[k->body[i]];
        int32_t at = q->stage[k->body[i]] - (ir_ops[n->op].cls == IR_CLASS_REDUCE);
        for (int j = 0; j < ir_ops[n->op].arity; j++) {
            int32_t a = q->load_acc[n->args[j]];
            if (a >= 0 && q->acc[a].buf == b && at > sweep) return 1;
        }
    }
    return 0;
}

/* A result written into a parameter's own memory (SPEC §3: the caller may pass one buffer for
 * both, of one dtype and shape) without a temporary (inplace_hazard 0) is written where
 * nothing reads the parameter after it: no later kernel, no other part of its own (they run at
 * once), no later sweep of its own part. Otherwise a launch would read what it, or one before
 * it, wrote there. */
static int check_inplace(vctx *v) {
    const plan_func *pf = v->pf;
    const ir_func *f = pf->func;
    for (int32_t o = 0; o < f->noutputs; o++) {
        ir_ref r = f->nodes[f->outputs[o].node].args[0];
        int32_t kw = f->nodes[r].kernel;
        if (kw < 0 || kw >= pf->nkernels) continue;
        for (int32_t p = 0; p < f->nparams; p++) {
            if (pf->inplace_hazard[o * f->nparams + p] ||
                f->nodes[f->params[p].node].dtype != f->outputs[o].dtype)
                continue;
            int32_t b = plan_home_buf(pf, f->params[p].node);
            for (int32_t k = kw; k < pf->nkernels; k++)
                for (int32_t qi = 0; qi < pf->kernels[k].nparts; qi++) {
                    const plan_kernel *q = &pf->kernels[k].parts[qi];
                    int writes = touches(q, plan_home_buf(pf, r), 1);
                    int32_t sweep = q->nreds ? q->stage[r] : 0;
                    if (touches(q, b, 0) && (!writes || read_after(q, b, sweep)))
                        return fail(v,
                                    "result %d may be written over parameter %d before its "
                                    "last read (kernel %d), without a temporary",
                                    (int)o, (int)p, (int)k);
                }
        }
    }
    return 0;
}

int plan_verify(const plan_module *m, char *err, size_t errlen) {
    for (int32_t i = 0; i < m->nfuncs; i++) {
        vctx v = {&m->funcs[i], NULL, err, errlen};
        if (check_bufs(&v) || check_checks(&v)) return -1;
        for (int32_t k = 0; k < v.pf->nkernels; k++)
            for (int32_t pi = 0; pi < v.pf->kernels[k].nparts; pi++) {
                v.p = &v.pf->kernels[k].parts[pi];
                if (check_axes(&v) || check_accesses(&v) || check_layout(&v) || check_levels(&v))
                    return -1;
            }
        /* on accesses and levels checked */
        v.p = NULL;
        for (int32_t k = 0; k < v.pf->nkernels; k++)
            if (check_read_only(&v, k)) return -1;
        if (check_inplace(&v)) return -1;
    }
    return 0;
}
