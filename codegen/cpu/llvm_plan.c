/* codegen/cpu/llvm_plan.c: the CPU backend's plan of a partition, in plain C (no LLVM): from the
 * kernel plan (plan/plan.h), the tasks of each function (the metadata of codegen/cpu/llvm.h)
 * and the CPU's plan of each kernel that codegen/cpu/llvm.c follows (codegen/cpu/llvm_internal.h):
 * its loops, and the per-element values a row keeps in scratch between sweeps.
 *
 * The metadata depends on the partition only, so a cache hit plans and loads without
 * generating any LLVM IR.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cpu/llvm_internal.h"

const plan_options llvm_plan_options = {1, LLVM_WANT_UNITS};

static int node_in_kernel(const ir_func *f, ir_ref q, int32_t k) {
    return f->nodes[q].kernel == k && ir_ops[f->nodes[q].op].cls != IR_CLASS_LEAF &&
           f->nodes[q].op != IR_OP_OUTPUT;
}

/* The loops of a layout: reductions over one element run as rows of one. */
static llvm_loop_kind loop_of(const plan_kernel *pk) {
    switch (pk->layout) {
    case PLAN_ELEMENTWISE: return pk->nreds ? LLVM_LOOP_ROW : LLVM_LOOP_POINTWISE;
    case PLAN_ROW: return LLVM_LOOP_ROW;
    case PLAN_COLUMN: return LLVM_LOOP_COLUMN;
    case PLAN_FULL: return LLVM_LOOP_FULL;
    }
    return LLVM_LOOP_POINTWISE;
}

/* Which sweeps evaluate each per-element value; an expensive value several sweeps need is
 * computed once and kept in the row's scratch (row kernels only). */
static void plan_cache(llvm_kplan *p, ir_arena *a) {
    const plan_kernel *pk = p->pk;
    const ir_func *f = pk->f;
    const ir_kernel *k = &f->partition->kernels[pk->kernel];
    size_t nn = (size_t)f->nnodes;
    p->need = ir_arena_calloc(a, nn, sizeof(uint32_t));
    p->cache_slot = ir_arena_calloc(a, nn, sizeof(int32_t));
    for (size_t r = 0; r < nn; r++)
        p->cache_slot[r] = -1;
    int32_t cap = 0;
    for (int32_t i = pk->to - 1; i >= pk->from; i--) {
        ir_ref r = k->body[i];
        const ir_node *n = &f->nodes[r];
        int red = ir_ops[n->op].cls == IR_CLASS_REDUCE;
        if (pk->per_result[r] && !red) continue; /* computed per result, not in sweeps */
        if (red) {
            p->need[n->args[0]] |= 1u << (pk->stage[r] - 1);
            continue;
        }
        if (n->flags & IR_NODE_STORED) p->need[r] |= 1u << pk->stage[r];
        uint32_t m = p->need[r];
        if (p->loop == LLVM_LOOP_ROW && (ir_ops[n->op].flags & IR_OPF_EXPENSIVE) && (m & (m - 1))) {
            p->cache_slot[r] = p->ncached;
            IR_VEC_PUSH(a, p->cached, p->ncached, cap, r);
            m &= ~(m - 1); /* evaluated in its first sweep only; loaded after that */
        }
        for (int j = 0; j < ir_ops[n->op].arity; j++) {
            ir_ref q = n->args[j];
            if (node_in_kernel(f, q, pk->kernel) && !pk->per_result[q]) p->need[q] |= m;
        }
    }
    p->cache_bytes = 0;
    for (int32_t i = 0; i < p->ncached; i++)
        p->cache_bytes += f->nodes[p->cached[i]].dtype == IR_F64 ? 8 : 4;
}

int llvm_plan_kernel(const llvm_func_meta *fm, int32_t kidx, int32_t part, ir_arena *a,
                     llvm_kplan *p, char *err, size_t errlen) {
    memset(p, 0, sizeof(*p));
    if (kidx < 0 || kidx >= fm->plan->nkernels)
        return ir_fail(err, errlen, "kernel %d is not planned", (int)kidx);
    const plan_kernel_set *ks = &fm->plan->kernels[kidx];
    if (part >= ks->nparts) return ir_fail(err, errlen, "kernel %d has no part %d", kidx, part);
    p->pk = &ks->parts[part >= 0 ? part : 0];
    p->fm = fm;
    p->loop = loop_of(p->pk);
    if (p->loop != LLVM_LOOP_POINTWISE) plan_cache(p, a);
    return 0;
}

static const char *symbol(ir_arena *a, int fi, const ir_func *f, int32_t k, int32_t part,
                          const char *suffix) {
    if (part >= 0)
        return ir_arena_printf(a, "f%d_%s_k%d_p%d%s", fi, f->name, (int)k, (int)part, suffix);
    return ir_arena_printf(a, "f%d_%s_k%d%s", fi, f->name, (int)k, suffix);
}

/* What decides whether a kernel's results stream (streams, driver/cpu/cpu_backend.c): the
 * bytes of per-element results an element writes, and whether it computes a transcendental. */
static void task_weight(const ir_func *f, const ir_kernel *kn, const llvm_kplan *p,
                        llvm_kernel_meta *km) {
    for (int32_t i = p->pk->from; i < p->pk->to; i++) {
        const ir_node *n = &f->nodes[kn->body[i]];
        if ((n->flags & IR_NODE_STORED) && ir_shape_equal(&n->shape, &p->pk->dom))
            km->elem_out_bytes += ir_dtypes[n->dtype].bytes;
        if ((ir_ops[n->op].flags & IR_OPF_EXPENSIVE) && ir_shape_equal(&n->shape, &p->pk->dom))
            km->expensive = 1;
    }
}

/* Task t's iteration space (t->extent, what begin and end count) by its loop kind, and what
 * that kind adds to the kernel's metadata: the shape of a run, a row kernel's scratch, a full
 * reduction's finalize and partials. pi: the task's index, partno: the part or -1. */
static void task_extent(const ir_func *f, int fi, const ir_kernel *kn, int32_t k, int32_t pi,
                        int32_t partno, const llvm_kplan *p, ir_arena *a, llvm_kernel_meta *km,
                        llvm_task *t) {
    memset(&t->extent, 0, sizeof t->extent);
    t->extent.block = 1;
    switch (p->loop) {
    case LLVM_LOOP_POINTWISE:
        t->extent.outer = p->pk->dom;
        if (pi == 0) {
            km->domain = p->pk->dom;
            if (p->pk->naxes > 0)
                km->run_shape = plan_sub_shape(&p->pk->dom, p->pk->axis_dims[p->pk->naxes - 1]);
        }
        break;
    case LLVM_LOOP_ROW:
        t->extent.outer = p->pk->outer;
        km->run_shape = plan_sub_shape(&p->pk->dom, p->pk->red); /* a row */
        if (p->ncached) {
            km->scratch_shape = km->run_shape;
            km->scratch_bytes = p->cache_bytes;
        }
        break;
    case LLVM_LOOP_COLUMN: {
        /* units: the kept axes but the last collapsed one, times blocks of columns */
        uint32_t inner = p->pk->axis_dims[p->pk->naxes - 1], kept = 0;
        for (int32_t c = 0; c + 1 < p->pk->naxes; c++)
            if (!((p->pk->reduced >> c) & 1)) kept |= p->pk->axis_dims[c];
        t->extent.outer = plan_sub_shape(&p->pk->dom, kept);
        t->extent.inner = plan_sub_shape(&p->pk->dom, inner);
        t->extent.block = LLVM_COLUMN_WIDTH;
        if (p->pk->split.splittable) {
            km->split_pieces = symbol(a, fi, f, k, partno, "_pieces");
            km->split_join = symbol(a, fi, f, k, partno, "_join");
            km->split_nreds = p->pk->nreds;
            km->split_len = plan_axes_shape(p->pk, p->pk->reduced);
            km->split_cols = plan_axes_shape(p->pk, plan_all_axes(p->pk) & ~p->pk->reduced);
        }
        break;
    }
    case LLVM_LOOP_FULL:
        t->extent.inner = p->pk->dom;
        t->extent.block = LLVM_FULL_CHUNK;
        km->finalize = symbol(a, fi, f, k, partno, "_fin");
        for (int32_t i = p->pk->from; i < p->pk->to; i++)
            if (ir_ops[f->nodes[kn->body[i]].op].cls == IR_CLASS_REDUCE) km->npartials++;
        break;
    }
}

/* Kernel k's metadata: one task per part of a combined kernel, else one, each planned
 * (llvm_plan_kernel) and described for the runtime. */
static int plan_kernel_meta(ir_func *f, int fi, int32_t k, ir_arena *a, llvm_func_meta *fm,
                            char *err, size_t errlen) {
    const ir_kernel *kn = &f->partition->kernels[k];
    llvm_kernel_meta *km = &fm->kernels[k];
    km->kernel = k;
    km->kind = kn->kind;
    km->domain = kn->domain;
    int32_t nparts = kn->kind == IR_KERNEL_COMBINED ? kn->nparts : 1;
    km->ntasks = nparts;
    km->tasks = ir_arena_calloc(a, (size_t)nparts, sizeof(*km->tasks));
    for (int32_t pi = 0; pi < nparts; pi++) {
        llvm_kplan p;
        int32_t partno = kn->kind == IR_KERNEL_COMBINED ? pi : -1;
        if (llvm_plan_kernel(fm, k, partno, a, &p, err, errlen)) return -1;
        llvm_task *t = &km->tasks[pi];
        task_weight(f, kn, &p, km);
        if (pi == 0) km->run_shape = p.pk->dom; /* column and full reductions */
        t->symbol = symbol(a, fi, f, k, partno, "");
        task_extent(f, fi, kn, k, pi, partno, &p, a, km, t);
    }
    return 0;
}

/* Function fi's metadata: each kernel's, from its plan. */
static int func_meta(ir_func *f, int fi, const plan_func *pf, ir_arena *a, llvm_func_meta *fm,
                     char *err, size_t errlen) {
    memset(fm, 0, sizeof(*fm));
    fm->func = f;
    fm->plan = pf;
    fm->nkernels = pf->nkernels;
    fm->kernels =
        ir_arena_calloc(a, (size_t)(pf->nkernels ? pf->nkernels : 1), sizeof(*fm->kernels));
    for (int32_t k = 0; k < pf->nkernels; k++)
        if (plan_kernel_meta(f, fi, k, a, fm, err, errlen)) return -1;
    return 0;
}

int llvm_plan_module(ir_func *const *funcs, int nfuncs, ir_arena *a, llvm_module_meta **out,
                     char *err, size_t errlen) {
    plan_module *pm;
    if (plan_module_build(funcs, nfuncs, &llvm_plan_options, a, &pm, err, errlen)) return -1;
    llvm_module_meta *m = ir_arena_calloc(a, 1, sizeof(*m));
    m->plan = pm;
    m->nfuncs = nfuncs;
    m->funcs = ir_arena_calloc(a, (size_t)(nfuncs ? nfuncs : 1), sizeof(*m->funcs));
    for (int i = 0; i < nfuncs; i++)
        if (func_meta(funcs[i], i, &pm->funcs[i], a, &m->funcs[i], err, errlen)) return -1;
    *out = m;
    return 0;
}
