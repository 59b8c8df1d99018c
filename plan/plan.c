/* plan/plan.c: builds the kernel plan of plan/plan.h: each function's buffer table, its
 * launch checks and scratch, and for each kernel (each part of a combined kernel) its
 * collapsed iteration space, accesses, layout, reduction levels, rounding and split.
 */
#include "plan/plan.h"

#include <string.h>

/* Sweeps of reductions a kernel may chain, at most (a bit each in 32-bit masks). */
#define PLAN_MAX_SWEEPS 30

/* ---- shapes ------------------------------------------------------------------------------ */

ir_shape plan_sub_shape(const ir_shape *d, uint32_t mask) {
    ir_shape s;
    memset(&s, 0, sizeof s);
    for (int32_t a = 0; a < d->rank; a++)
        if (mask & (1u << a)) s.dims[s.rank++] = d->dims[a];
    return s;
}

ir_shape plan_axes_shape(const plan_kernel *p, uint32_t mask) {
    uint32_t dims = 0;
    for (int32_t c = 0; c < p->naxes; c++)
        if (mask & (1u << c)) dims |= p->axis_dims[c];
    return plan_sub_shape(&p->dom, dims);
}

/* 1 when s broadcasts into d unchanged (s "fits" d). */
static int fits(const ir_shape *s, const ir_shape *d) {
    ir_shape out;
    if (s->rank > d->rank || ir_shape_broadcast(s, d, &out) >= 0) return 0;
    return ir_shape_equal(&out, d);
}

/* Bit a set when a value of shape s, read at a point of domain d, varies along axis a. */
static uint32_t presence(const ir_shape *s, const ir_shape *d) {
    uint32_t m = 0;
    for (int32_t a = 0; a < d->rank; a++) {
        int32_t j = a - (d->rank - s->rank);
        if (j >= 0 && !ir_dim_is_one(s->dims[j])) m |= 1u << a;
    }
    return m;
}

static int node_in_kernel(const ir_func *f, ir_ref q, int32_t k) {
    return f->nodes[q].kernel == k && ir_ops[f->nodes[q].op].cls != IR_CLASS_LEAF &&
           f->nodes[q].op != IR_OP_OUTPUT;
}

int32_t plan_home_buf(const plan_func *pf, ir_ref r) {
    for (int32_t i = 0; i < pf->nbufs; i++)
        if (pf->bufs[i].node == r) return i;
    return -1;
}

int plan_checks_hold(const plan_func *pf, const int64_t *sym_values, char *err, size_t errlen) {
    for (int32_t i = 0; i < pf->nchecks; i++)
        if (plan_shape_count(&pf->checks[i].shape, sym_values) == 0)
            return ir_fail(err, errlen, "%s over an empty axis", ir_ops[pf->checks[i].op].name);
    return 0;
}

/* ---- one kernel ----------------------------------------------------------------------------- */

static void add_access(plan_kernel *p, ir_arena *a, int32_t *cap, ir_ref node, int32_t buf,
                       int store) {
    for (int32_t i = 0; i < p->nacc; i++)
        if (p->acc[i].node == node && p->acc[i].buf == buf && p->acc[i].store == store) return;
    plan_access x = {node, buf, store, 0, PLAN_DENSE};
    IR_VEC_PUSH(a, p->acc, p->nacc, *cap, x);
}

/* The loads of inputs and of values earlier kernels stored, and the stores, in body order. */
static int plan_accesses(const plan_func *pf, plan_kernel *p, ir_arena *a, char *err,
                         size_t errlen) {
    const ir_func *f = p->f;
    const ir_kernel *k = &f->partition->kernels[p->kernel];
    int32_t cap = 0;
    p->load_acc = ir_arena_calloc(a, (size_t)f->nnodes, sizeof(int32_t));
    for (int32_t r = 0; r < f->nnodes; r++)
        p->load_acc[r] = -1;
    for (int32_t i = p->from; i < p->to; i++) {
        ir_ref r = k->body[i];
        const ir_node *n = &f->nodes[r];
        for (int j = 0; j < ir_ops[n->op].arity; j++) {
            ir_ref q = n->args[j];
            if (f->nodes[q].op == IR_OP_CONST || node_in_kernel(f, q, p->kernel)) continue;
            /* an index is computed at each point, as the offset into a dense buffer of its
             * shape would be: an access with no buffer */
            int32_t b = f->nodes[q].op == IR_OP_INDEX ? PLAN_NO_BUF : plan_home_buf(pf, q);
            if (b < 0 && f->nodes[q].op != IR_OP_INDEX)
                return ir_fail(err, errlen, "kernel %d: %%%d reads %%%d, which no buffer holds",
                               (int)p->kernel, (int)r, (int)q);
            if (p->load_acc[q] < 0) {
                p->load_acc[q] = p->nacc;
                add_access(p, a, &cap, q, b, 0);
            }
        }
        if (!(n->flags & IR_NODE_STORED)) continue;
        int any = 0;
        for (int32_t b = 0; b < pf->nbufs; b++)
            if (pf->bufs[b].node == r && pf->bufs[b].kind != PLAN_BUF_PARAM) {
                add_access(p, a, &cap, r, b, 1);
                any = 1;
            }
        if (!any)
            return ir_fail(err, errlen, "kernel %d: stored %%%d has no buffer", (int)p->kernel,
                           (int)r);
    }
    /* the distinct buffers, in order of first use */
    int32_t bcap = 0;
    for (int32_t i = 0; i < p->nacc; i++) {
        int seen = p->acc[i].buf == PLAN_NO_BUF;
        for (int32_t j = 0; j < p->nbufs; j++)
            seen |= p->bufs[j] == p->acc[i].buf;
        if (!seen) IR_VEC_PUSH(a, p->bufs, p->nbufs, bcap, p->acc[i].buf);
    }
    return 0;
}

/* Collapses the domain's axes and sets each access's presence and kind. Two neighbouring
 * axes merge when both are reduced or both kept and every access varies along both or along
 * neither; axes of literal size 1 belong to none. Along a collapsed axis an access then has
 * stride 0 (absent) or the product of the collapsed dims to its right among those it varies
 * along (present); along the last collapsed axis, stride 0 or 1. */
static void collapse(plan_kernel *p) {
    const ir_func *f = p->f;
    p->naxes = 0;
    p->reduced = 0;
    int32_t last = -1; /* domain axis that started the current collapsed axis */
    for (int32_t a = 0; a < p->dom.rank; a++) {
        if (ir_dim_is_one(p->dom.dims[a])) continue;
        int isred = (p->red >> a) & 1;
        int merge = last >= 0 && (int)((p->reduced >> (p->naxes - 1)) & 1) == isred;
        for (int32_t i = 0; merge && i < p->nacc; i++) {
            uint32_t m = presence(&f->nodes[p->acc[i].node].shape, &p->dom);
            merge = ((m >> a) & 1) == ((m >> last) & 1);
        }
        if (merge) {
            p->axis_dims[p->naxes - 1] |= 1u << a;
        } else {
            p->axis_dims[p->naxes] = 1u << a;
            if (isred) p->reduced |= 1u << p->naxes;
            p->naxes++;
            last = a;
        }
    }
    for (int32_t i = 0; i < p->nacc; i++) {
        p->acc[i].present = plan_presence(p, &f->nodes[p->acc[i].node].shape);
        p->acc[i].kind = p->acc[i].present == plan_all_axes(p) ? PLAN_DENSE : PLAN_BROADCAST;
    }
}

uint32_t plan_presence(const plan_kernel *p, const ir_shape *s) {
    uint32_t m = presence(s, &p->dom), c = 0;
    for (int32_t x = 0; x < p->naxes; x++)
        if (m & p->axis_dims[x]) c |= 1u << x;
    return c;
}

/* The levels: each node's stage (the sweeps before it), the reductions, which nodes are one
 * per result, whether per-element stores wait for a last sweep. */
static int plan_levels(plan_kernel *p, ir_arena *a, char *err, size_t errlen) {
    const ir_func *f = p->f;
    const ir_kernel *k = &f->partition->kernels[p->kernel];
    size_t nn = (size_t)f->nnodes;
    p->per_result = ir_arena_calloc(a, nn, 1);
    p->stage = ir_arena_calloc(a, nn, sizeof(int32_t));
    p->reds = ir_arena_calloc(a, (size_t)(p->to - p->from + 1), sizeof(ir_ref));
    for (int32_t i = p->from; i < p->to; i++) {
        ir_ref r = k->body[i];
        const ir_node *n = &f->nodes[r];
        p->per_result[r] = (uint8_t)fits(&n->shape, &p->outer);
        int32_t s = 0;
        for (int j = 0; j < ir_ops[n->op].arity; j++) {
            ir_ref q = n->args[j];
            if (node_in_kernel(f, q, p->kernel) && p->stage[q] > s) s = p->stage[q];
        }
        if (ir_ops[n->op].cls == IR_CLASS_REDUCE) {
            s++;
            if (s > p->nsweeps) p->nsweeps = s;
            p->reds[p->nreds++] = r;
        }
        p->stage[r] = s;
    }
    if (p->nsweeps > PLAN_MAX_SWEEPS)
        return ir_fail(err, errlen, "kernel %d of '%s' chains %d reductions (%d at most)",
                       (int)p->kernel, f->name, (int)p->nsweeps, PLAN_MAX_SWEEPS);
    for (int32_t i = p->from; i < p->to; i++) {
        ir_ref r = k->body[i];
        const ir_node *n = &f->nodes[r];
        if ((n->flags & IR_NODE_STORED) && !p->per_result[r] && p->stage[r] == p->nsweeps &&
            p->nsweeps > 0)
            p->final_sweep = 1;
    }
    return 0;
}

/* The layout, from the collapsed axes and the levels. */
static plan_layout layout_of(const plan_kernel *p) {
    if (p->reduced == 0) return PLAN_ELEMENTWISE;
    if (p->reduced == plan_all_axes(p) && p->nsweeps == 1 && !p->final_sweep) return PLAN_FULL;
    if ((p->reduced >> (p->naxes - 1)) & 1) return PLAN_ROW;
    return PLAN_COLUMN;
}

/* Stored f16/bf16 values the kernel's part reads again. */
static void plan_rounding(plan_kernel *p, ir_arena *a) {
    const ir_func *f = p->f;
    const ir_kernel *k = &f->partition->kernels[p->kernel];
    p->round_kept = ir_arena_calloc(a, (size_t)f->nnodes, 1);
    for (int32_t i = p->from; i < p->to; i++) {
        const ir_node *n = &f->nodes[k->body[i]];
        for (int j = 0; j < ir_ops[n->op].arity; j++) {
            const ir_node *q = &f->nodes[n->args[j]];
            if ((q->flags & IR_NODE_STORED) && (q->dtype == IR_F16 || q->dtype == IR_BF16) &&
                node_in_kernel(f, n->args[j], p->kernel))
                p->round_kept[n->args[j]] = 1;
        }
    }
}

/* The range and domain of kernel kidx (part `part` of a combined kernel, else -1). */
static void plan_space(plan_kernel *p, const ir_kernel *k, int32_t part) {
    const ir_func *f = p->f;
    p->from = 0;
    p->to = k->nbody;
    if (part >= 0) {
        p->from = k->parts[part];
        p->to = part + 1 < k->nparts ? k->parts[part + 1] : k->nbody;
    }
    p->dom = k->domain;
    int elementwise = k->kind == IR_KERNEL_POINTWISE || k->kind == IR_KERNEL_COMBINED;
    p->red = elementwise ? 0 : k->reduce_axes;
    if (part >= 0) {
        /* a part iterates over the shape of its outputs */
        for (int32_t i = p->from; i < p->to; i++)
            if (f->nodes[k->body[i]].flags & IR_NODE_STORED) {
                p->dom = f->nodes[k->body[i]].shape;
                break;
            }
    }
    p->outer = ir_shape_reduce(&p->dom, p->red);
}

static int plan_kernel_build(plan_func *pf, const plan_options *opt, int32_t kidx, int32_t part,
                             ir_arena *a, plan_kernel *p, char *err, size_t errlen) {
    const ir_func *f = pf->func;
    const ir_kernel *k = &f->partition->kernels[kidx];
    memset(p, 0, sizeof(*p));
    p->f = f;
    p->kernel = kidx;
    p->part = part;
    p->split.scratch = -1;
    plan_space(p, k, part);
    plan_rounding(p, a);
    if (plan_accesses(pf, p, a, err, errlen)) return -1;
    collapse(p);
    if (plan_levels(p, a, err, errlen)) return -1;
    p->layout = layout_of(p);
    for (int32_t i = 0; i < p->nreds; i++)
        if (p->per_result[f->nodes[p->reds[i]].args[0]] && p->layout != PLAN_ROW &&
            p->layout != PLAN_ELEMENTWISE)
            return ir_fail(err, errlen, "kernel %d: %%%d reduces a per-result value", (int)kidx,
                           (int)p->reds[i]);
    p->split.splittable =
        opt && opt->split_columns && p->layout == PLAN_COLUMN && p->nsweeps == 1 && !p->final_sweep;
    return 0;
}

/* ---- one function ----------------------------------------------------------------------------
 */

/* The buffer table: the parameters, the results (each the stored value an output reads),
 * then every other stored value (a temporary). */
static int plan_buffers(const ir_func *f, ir_arena *a, plan_func *pf, char *err, size_t errlen) {
    int32_t cap = 0;
    for (int32_t i = 0; i < f->nparams; i++) {
        const ir_node *n = &f->nodes[f->params[i].node];
        plan_buf b = {PLAN_BUF_PARAM, i, f->params[i].node, n->dtype, n->shape};
        IR_VEC_PUSH(a, pf->bufs, pf->nbufs, cap, b);
    }
    for (int32_t i = 0; i < f->noutputs; i++) {
        ir_ref v = f->nodes[f->outputs[i].node].args[0];
        const ir_node *n = &f->nodes[v];
        if (!(n->flags & IR_NODE_STORED))
            return ir_fail(err, errlen, "'%s': result %d reads %%%d, which is not stored", f->name,
                           (int)i, (int)v);
        plan_buf b = {PLAN_BUF_RESULT, i, v, n->dtype, n->shape};
        IR_VEC_PUSH(a, pf->bufs, pf->nbufs, cap, b);
    }
    for (int32_t r = 0; r < f->nnodes; r++) {
        if (!(f->nodes[r].flags & IR_NODE_STORED)) continue;
        int read_by_output = 0;
        for (int32_t i = 0; i < f->noutputs; i++)
            read_by_output |= f->nodes[f->outputs[i].node].args[0] == r;
        if (read_by_output) continue;
        plan_buf b = {PLAN_BUF_TEMP, pf->ntemps++, r, f->nodes[r].dtype, f->nodes[r].shape};
        IR_VEC_PUSH(a, pf->bufs, pf->nbufs, cap, b);
    }
    return 0;
}

/* The launch checks: reductions that fail over nothing, with the dims they reduce. */
static void plan_checks(const ir_func *f, ir_arena *a, plan_func *pf) {
    int32_t cap = 0;
    for (ir_ref r = 0; r < f->nnodes; r++) {
        const ir_node *n = &f->nodes[r];
        if (!(ir_ops[n->op].flags & IR_OPF_NONEMPTY)) continue;
        plan_check c = {r, n->op, plan_sub_shape(&f->nodes[n->args[0]].shape, n->axes)};
        IR_VEC_PUSH(a, pf->checks, pf->nchecks, cap, c);
    }
}

/* The sweep index (0..) at which kernel plan p writes stored value r: a per-element value in
 * the sweep of its stage, a per-result one between sweeps (as the sweep of its stage), any
 * value of an element-wise kernel in its one pass; and the last sweep index p has. */
static int32_t store_sweep(const plan_kernel *p, ir_ref r) {
    return p->nreds ? p->stage[r] : 0;
}
static int32_t last_sweep(const plan_kernel *p) {
    return p->nreds ? p->nsweeps - 1 + p->final_sweep : 0;
}

/* Whether kernel plan q reads buffer b (a load from it). */
static int reads_buf(const plan_kernel *q, int32_t b) {
    for (int32_t i = 0; i < q->nacc; i++)
        if (!q->acc[i].store && q->acc[i].buf == b) return 1;
    return 0;
}

/* Whether writing stored value r (in part pw of kernel kw) into parameter buffer b's memory
 * could overwrite it before its last read: a later kernel reads b, another part of the same
 * launch does (parts run at once), or the same part in a sweep after the store. */
static int store_hazard(const plan_func *pf, int32_t kw, int32_t pw, ir_ref r, int32_t b) {
    for (int32_t k = kw; k < pf->nkernels; k++)
        for (int32_t pi = 0; pi < pf->kernels[k].nparts; pi++) {
            const plan_kernel *q = &pf->kernels[k].parts[pi];
            if (!reads_buf(q, b)) continue;
            if (k > kw || pi != pw) return 1;
            if (store_sweep(q, r) < last_sweep(q)) return 1;
        }
    return 0;
}

/* The in-place hazards of every (result, parameter) pair of one dtype. */
static void plan_inplace(const ir_func *f, ir_arena *a, plan_func *pf) {
    int32_t np = f->nparams, no = f->noutputs;
    pf->inplace_hazard = ir_arena_calloc(a, (size_t)(np * no + 1), 1);
    for (int32_t o = 0; o < no; o++) {
        ir_ref r = f->nodes[f->outputs[o].node].args[0];
        const ir_node *n = &f->nodes[r];
        int32_t kw = n->kernel, pw = 0;
        if (kw < 0 || kw >= pf->nkernels) continue;
        const plan_kernel_set *ks = &pf->kernels[kw];
        for (int32_t pi = 0; pi < ks->nparts; pi++)
            for (int32_t i = ks->parts[pi].from; i < ks->parts[pi].to; i++)
                if (f->partition->kernels[kw].body[i] == r) pw = pi;
        for (int32_t p = 0; p < np; p++) {
            /* shapes equal at launch may differ in their symbols: every pair of a dtype */
            if (f->nodes[f->params[p].node].dtype != f->outputs[o].dtype) continue;
            int32_t b = plan_home_buf(pf, f->params[p].node);
            pf->inplace_hazard[o * np + p] = (uint8_t)store_hazard(pf, kw, pw, r, b);
        }
    }
}

/* Kernel k's plans: one per part of a combined kernel, else one; a split's scratch. */
static int plan_kernel_set_build(plan_func *pf, const plan_options *opt, int32_t k, ir_arena *a,
                                 int32_t *scap, char *err, size_t errlen) {
    const ir_kernel *kn = &pf->func->partition->kernels[k];
    plan_kernel_set *ks = &pf->kernels[k];
    ks->kernel = k;
    ks->kind = kn->kind;
    ks->nparts = kn->kind == IR_KERNEL_COMBINED ? kn->nparts : 1;
    ks->parts = ir_arena_calloc(a, (size_t)ks->nparts, sizeof(*ks->parts));
    for (int32_t pi = 0; pi < ks->nparts; pi++) {
        plan_kernel *p = &ks->parts[pi];
        int32_t partno = kn->kind == IR_KERNEL_COMBINED ? pi : -1;
        if (plan_kernel_build(pf, opt, k, partno, a, p, err, errlen)) return -1;
        if (!p->split.splittable) continue;
        plan_scratch s = {k, p->outer, (int64_t)PLAN_SPLIT_MAX * p->nreds};
        p->split.scratch = pf->nscratch;
        IR_VEC_PUSH(a, pf->scratch, pf->nscratch, *scap, s);
    }
    return 0;
}

static int plan_func_build(ir_func *f, const plan_options *opt, ir_arena *a, plan_func *pf,
                           char *err, size_t errlen) {
    memset(pf, 0, sizeof(*pf));
    pf->func = f;
    if (!f->partition) return ir_fail(err, errlen, "function '%s' has no partition", f->name);
    if (plan_buffers(f, a, pf, err, errlen)) return -1;
    plan_checks(f, a, pf);
    const ir_partition *part = f->partition;
    pf->nkernels = part->nkernels;
    pf->kernels =
        ir_arena_calloc(a, (size_t)(part->nkernels ? part->nkernels : 1), sizeof(*pf->kernels));
    int32_t scap = 0;
    for (int32_t k = 0; k < part->nkernels; k++)
        if (plan_kernel_set_build(pf, opt, k, a, &scap, err, errlen)) return -1;
    plan_inplace(f, a, pf);
    return 0;
}

int plan_module_build(ir_func *const *funcs, int nfuncs, const plan_options *opt, ir_arena *a,
                      plan_module **out, char *err, size_t errlen) {
    plan_module *m = ir_arena_calloc(a, 1, sizeof(*m));
    m->nfuncs = nfuncs;
    m->funcs = ir_arena_calloc(a, (size_t)(nfuncs ? nfuncs : 1), sizeof(*m->funcs));
    for (int i = 0; i < nfuncs; i++)
        if (plan_func_build(funcs[i], opt, a, &m->funcs[i], err, errlen)) return -1;
    if (plan_verify(m, err, errlen)) return -1;
    *out = m;
    return 0;
}
