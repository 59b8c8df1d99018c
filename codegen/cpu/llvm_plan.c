/* codegen/cpu/llvm_plan.c: the CPU backend's plan of a partition, in plain C (no LLVM): the
 * buffer table and the tasks of each function (the metadata of codegen/cpu/llvm.h), and the plan
 * of each kernel that codegen/cpu/llvm.c follows (codegen/cpu/llvm_internal.h).
 *
 * The metadata depends on the partition only, so a cache hit plans and loads without
 * generating any LLVM IR.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cpu/llvm_internal.h"

int64_t llvm_shape_count(const ir_shape *s, const int64_t *sym_values) {
    int64_t n = 1;
    for (int32_t i = 0; i < s->rank; i++) {
        int64_t d = s->dims[i].sym >= 0 ? sym_values[s->dims[i].sym] : s->dims[i].size;
        if (d <= 0) return 0;
        n *= d; /* launch checks keep every tensor's element count far inside int64 */
    }
    return n;
}

int64_t llvm_extent_count(const llvm_extent *e, const int64_t *sym_values) {
    int64_t o = llvm_shape_count(&e->outer, sym_values);
    int64_t i = llvm_shape_count(&e->inner, sym_values);
    int64_t b = e->block > 0 ? e->block : 1;
    return o * ((i + b - 1) / b);
}

static int node_in_kernel(const ir_func *f, ir_ref q, int32_t k) {
    return f->nodes[q].kernel == k && ir_ops[f->nodes[q].op].cls != IR_CLASS_LEAF &&
           f->nodes[q].op != IR_OP_OUTPUT;
}

int32_t llvm_home_buf(const llvm_func_meta *fm, ir_ref r) {
    for (int32_t i = 0; i < fm->nbufs; i++)
        if (fm->bufs[i].node == r) return i;
    return -1;
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

static void add_access(llvm_kplan *p, ir_arena *a, int32_t *cap, ir_ref node, int32_t buf,
                       int store) {
    for (int32_t i = 0; i < p->nacc; i++)
        if (p->acc[i].node == node && p->acc[i].buf == buf && p->acc[i].store == store) return;
    llvm_access x = {node, buf, store, 0};
    IR_VEC_PUSH(a, p->acc, p->nacc, *cap, x);
}

/* The loop layout of a kernel kind over its domain. */
static llvm_loop_kind loop_kind(const ir_kernel *k) {
    switch (k->kind) {
    case IR_KERNEL_POINTWISE:
    case IR_KERNEL_COMBINED: return LLVM_LOOP_POINTWISE;
    case IR_KERNEL_ROW_REDUCTION: return LLVM_LOOP_ROW;
    case IR_KERNEL_COLUMN_REDUCTION: return LLVM_LOOP_COLUMN;
    case IR_KERNEL_FULL_REDUCTION:
        /* a domain of literal 1s is one row of one element: per-element nodes may then use
         * the reduction (the verifier allows it), which only the row layout provides */
        for (int32_t i = 0; i < k->domain.rank; i++)
            if (!ir_dim_is_one(k->domain.dims[i])) return LLVM_LOOP_FULL;
        return LLVM_LOOP_ROW;
    }
    return LLVM_LOOP_POINTWISE;
}

/* Collapses the domain's axes (see llvm_internal.h) and sets each access's presence. */
static void collapse(llvm_kplan *p) {
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
        uint32_t m = presence(&f->nodes[p->acc[i].node].shape, &p->dom);
        p->acc[i].present = 0;
        for (int32_t c = 0; c < p->naxes; c++)
            if (m & p->axis_dims[c]) p->acc[i].present |= 1u << c;
    }
}

/* Stages, sweeps and the values cached between sweeps of a reduction kernel. */
static int plan_sweeps(llvm_kplan *p, ir_arena *a, char *err, size_t errlen) {
    const ir_func *f = p->f;
    const ir_kernel *k = &f->partition->kernels[p->kernel];
    size_t nn = (size_t)f->nnodes;
    p->per_result = ir_arena_calloc(a, nn, 1);
    p->stage = ir_arena_calloc(a, nn, sizeof(int32_t));
    p->need = ir_arena_calloc(a, nn, sizeof(uint32_t));
    p->cache_slot = ir_arena_calloc(a, nn, sizeof(int32_t));
    for (size_t r = 0; r < nn; r++)
        p->cache_slot[r] = -1;
    p->nsweeps = 0;
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
            if (p->per_result[n->args[0]] && p->loop != LLVM_LOOP_ROW)
                return ir_fail(err, errlen, "kernel %d: %%%d reduces a per-result value",
                               (int)p->kernel, (int)r);
            s++;
            if (s > p->nsweeps) p->nsweeps = s;
        }
        p->stage[r] = s;
    }
    if (p->nsweeps > LLVM_MAX_SWEEPS)
        return ir_fail(err, errlen, "kernel %d: more than %d chained reductions", (int)p->kernel,
                       LLVM_MAX_SWEEPS);
    /* which sweeps evaluate each per-element value; an expensive value several sweeps need
     * is computed once and kept in the row's scratch (row kernels only) */
    int32_t cap = 0;
    p->final_sweep = 0;
    for (int32_t i = p->to - 1; i >= p->from; i--) {
        ir_ref r = k->body[i];
        const ir_node *n = &f->nodes[r];
        int red = ir_ops[n->op].cls == IR_CLASS_REDUCE;
        if (p->per_result[r] && !red) continue; /* computed per result, not in sweeps */
        if (red) {
            p->need[n->args[0]] |= 1u << (p->stage[r] - 1);
            continue;
        }
        if (n->flags & IR_NODE_STORED) {
            p->need[r] |= 1u << p->stage[r];
            if (p->stage[r] == p->nsweeps) p->final_sweep = 1;
        }
        uint32_t m = p->need[r];
        if (p->loop == LLVM_LOOP_ROW && (ir_ops[n->op].flags & IR_OPF_EXPENSIVE) && (m & (m - 1))) {
            p->cache_slot[r] = p->ncached;
            IR_VEC_PUSH(a, p->cached, p->ncached, cap, r);
            m &= ~(m - 1); /* evaluated in its first sweep only; loaded after that */
        }
        for (int j = 0; j < ir_ops[n->op].arity; j++) {
            ir_ref q = n->args[j];
            if (node_in_kernel(f, q, p->kernel) && !p->per_result[q]) p->need[q] |= m;
        }
    }
    p->cache_bytes = 0;
    for (int32_t i = 0; i < p->ncached; i++)
        p->cache_bytes += f->nodes[p->cached[i]].dtype == IR_F64 ? 8 : 4;
    return 0;
}

int llvm_plan_kernel(const llvm_func_meta *fm, int32_t kidx, int32_t part, ir_arena *a,
                     llvm_kplan *p, char *err, size_t errlen) {
    const ir_func *f = fm->func;
    const ir_kernel *k = &f->partition->kernels[kidx];
    memset(p, 0, sizeof(*p));
    p->f = f;
    p->fm = fm;
    p->kernel = kidx;
    p->part = part;
    p->loop = loop_kind(k);
    p->from = 0;
    p->to = k->nbody;
    if (part >= 0) {
        p->from = k->parts[part];
        p->to = part + 1 < k->nparts ? k->parts[part + 1] : k->nbody;
    }
    p->dom = k->domain;
    p->red = p->loop == LLVM_LOOP_POINTWISE ? 0 : k->reduce_axes;
    if (part >= 0) {
        /* a part iterates over the shape of its outputs */
        for (int32_t i = p->from; i < p->to; i++)
            if (f->nodes[k->body[i]].flags & IR_NODE_STORED) {
                p->dom = f->nodes[k->body[i]].shape;
                break;
            }
    }
    p->outer = ir_shape_reduce(&p->dom, p->red);

    p->round_kept = ir_arena_calloc(a, (size_t)f->nnodes, 1);
    for (int32_t i = p->from; i < p->to; i++) {
        const ir_node *n = &f->nodes[k->body[i]];
        for (int j = 0; j < ir_ops[n->op].arity; j++) {
            const ir_node *q = &f->nodes[n->args[j]];
            if ((q->flags & IR_NODE_STORED) && (q->dtype == IR_F16 || q->dtype == IR_BF16) &&
                node_in_kernel(f, n->args[j], kidx))
                p->round_kept[n->args[j]] = 1;
        }
    }

    /* accesses: loads of inputs and of values earlier kernels stored; stores */
    int32_t cap = 0;
    p->load_acc = ir_arena_calloc(a, (size_t)f->nnodes, sizeof(int32_t));
    for (int32_t r = 0; r < f->nnodes; r++)
        p->load_acc[r] = -1;
    for (int32_t i = p->from; i < p->to; i++) {
        ir_ref r = k->body[i];
        const ir_node *n = &f->nodes[r];
        for (int j = 0; j < ir_ops[n->op].arity; j++) {
            ir_ref q = n->args[j];
            if (f->nodes[q].op == IR_OP_CONST || node_in_kernel(f, q, kidx)) continue;
            int32_t b = llvm_home_buf(fm, q);
            if (b < 0)
                return ir_fail(err, errlen, "kernel %d: %%%d reads %%%d, which no buffer holds",
                               (int)kidx, (int)r, (int)q);
            if (p->load_acc[q] < 0) {
                p->load_acc[q] = p->nacc;
                add_access(p, a, &cap, q, b, 0);
            }
        }
        if (n->flags & IR_NODE_STORED) {
            int any = 0;
            for (int32_t b = 0; b < fm->nbufs; b++)
                if (fm->bufs[b].node == r && fm->bufs[b].kind != LLVM_BUF_PARAM) {
                    add_access(p, a, &cap, r, b, 1);
                    any = 1;
                }
            if (!any)
                return ir_fail(err, errlen, "kernel %d: stored %%%d has no buffer", (int)kidx,
                               (int)r);
        }
    }
    collapse(p);
    /* reductions whose last collapsed axis is reduced go a unit (one point of the kept axes)
     * at a time, along the reduced ones; those whose last axis is kept, a block of columns at
     * a time (a column "reduction" may also reduce inner axes, and a row one outer axes of
     * size 1) */
    if (p->loop == LLVM_LOOP_ROW || p->loop == LLVM_LOOP_COLUMN)
        p->loop = p->reduced == 0 || ((p->reduced >> (p->naxes - 1)) & 1) ? LLVM_LOOP_ROW
                                                                          : LLVM_LOOP_COLUMN;

    /* the distinct buffers, in order of first use */
    int32_t bcap = 0;
    for (int32_t i = 0; i < p->nacc; i++) {
        int seen = 0;
        for (int32_t j = 0; j < p->nbufs; j++)
            seen |= p->bufs[j] == p->acc[i].buf;
        if (!seen) IR_VEC_PUSH(a, p->bufs, p->nbufs, bcap, p->acc[i].buf);
    }
    if (p->loop != LLVM_LOOP_POINTWISE) return plan_sweeps(p, a, err, errlen);
    return 0;
}

/* The shape made of the domain axes in `mask`, in order. */
static ir_shape sub_shape(const ir_shape *d, uint32_t mask) {
    ir_shape s;
    memset(&s, 0, sizeof s);
    for (int32_t a = 0; a < d->rank; a++)
        if (mask & (1u << a)) s.dims[s.rank++] = d->dims[a];
    return s;
}

static const char *symbol(ir_arena *a, int fi, const ir_func *f, int32_t k, int32_t part,
                          const char *suffix) {
    if (part >= 0)
        return ir_arena_printf(a, "f%d_%s_k%d_p%d%s", fi, f->name, (int)k, (int)part, suffix);
    return ir_arena_printf(a, "f%d_%s_k%d%s", fi, f->name, (int)k, suffix);
}

/* The function's buffer table: its parameters, its results (each the stored value an output
 * reads), then every other stored value (a temporary). */
static int plan_buffers(ir_func *f, ir_arena *a, llvm_func_meta *fm, char *err, size_t errlen) {
    int32_t cap = 0;
    for (int32_t i = 0; i < f->nparams; i++) {
        const ir_node *n = &f->nodes[f->params[i].node];
        llvm_buf b = {LLVM_BUF_PARAM, i, f->params[i].node, n->dtype, n->shape};
        IR_VEC_PUSH(a, fm->bufs, fm->nbufs, cap, b);
    }
    for (int32_t i = 0; i < f->noutputs; i++) {
        ir_ref v = f->nodes[f->outputs[i].node].args[0];
        const ir_node *n = &f->nodes[v];
        if (!(n->flags & IR_NODE_STORED))
            return ir_fail(err, errlen, "'%s': result %d reads %%%d, which is not stored", f->name,
                           (int)i, (int)v);
        llvm_buf b = {LLVM_BUF_RESULT, i, v, n->dtype, n->shape};
        IR_VEC_PUSH(a, fm->bufs, fm->nbufs, cap, b);
    }
    for (int32_t r = 0; r < f->nnodes; r++) {
        if (!(f->nodes[r].flags & IR_NODE_STORED)) continue;
        int read_by_output = 0;
        for (int32_t i = 0; i < f->noutputs; i++)
            read_by_output |= f->nodes[f->outputs[i].node].args[0] == r;
        if (read_by_output) continue;
        llvm_buf b = {LLVM_BUF_TEMP, -1, r, f->nodes[r].dtype, f->nodes[r].shape};
        IR_VEC_PUSH(a, fm->bufs, fm->nbufs, cap, b);
    }
    return 0;
}

/* What decides whether a kernel's results stream (streams, runtime/cpu/cpu_backend.c): the
 * bytes of per-element results an element writes, and whether it computes a transcendental. */
static void task_weight(const ir_func *f, const ir_kernel *kn, const llvm_kplan *p,
                        llvm_kernel_meta *km) {
    for (int32_t i = p->from; i < p->to; i++) {
        const ir_node *n = &f->nodes[kn->body[i]];
        if ((n->flags & IR_NODE_STORED) && ir_shape_equal(&n->shape, &p->dom))
            km->elem_out_bytes += ir_dtypes[n->dtype].bytes;
        if ((ir_ops[n->op].flags & IR_OPF_EXPENSIVE) && ir_shape_equal(&n->shape, &p->dom))
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
        t->extent.outer = p->dom;
        if (pi == 0) {
            km->domain = p->dom;
            if (p->naxes > 0) km->run_shape = sub_shape(&p->dom, p->axis_dims[p->naxes - 1]);
        }
        break;
    case LLVM_LOOP_ROW:
        t->extent.outer = p->outer;
        km->run_shape = sub_shape(&p->dom, p->red); /* a row */
        if (p->ncached) {
            km->scratch_shape = km->run_shape;
            km->scratch_bytes = p->cache_bytes;
        }
        break;
    case LLVM_LOOP_COLUMN: {
        /* units: the kept axes but the last collapsed one, times blocks of columns */
        uint32_t inner = p->axis_dims[p->naxes - 1], kept = 0;
        for (int32_t c = 0; c + 1 < p->naxes; c++)
            if (!((p->reduced >> c) & 1)) kept |= p->axis_dims[c];
        t->extent.outer = sub_shape(&p->dom, kept);
        t->extent.inner = sub_shape(&p->dom, inner);
        t->extent.block = LLVM_COLUMN_WIDTH;
        break;
    }
    case LLVM_LOOP_FULL:
        t->extent.inner = p->dom;
        t->extent.block = LLVM_FULL_CHUNK;
        km->finalize = symbol(a, fi, f, k, partno, "_fin");
        for (int32_t i = p->from; i < p->to; i++)
            if (ir_ops[f->nodes[kn->body[i]].op].cls == IR_CLASS_REDUCE) km->npartials++;
        break;
    }
}

/* The launch checks of the task: max and min of nothing are errors at launch (SPEC §1), so
 * the shape each one reduces over is recorded with its op. */
static void task_nonempty(const ir_func *f, const ir_kernel *kn, const llvm_kplan *p, ir_arena *a,
                          llvm_kernel_meta *km) {
    int32_t ncap = 0, ocap = 0, nops = 0;
    for (int32_t i = p->from; i < p->to; i++) {
        const ir_node *n = &f->nodes[kn->body[i]];
        if (n->op != IR_OP_MAX && n->op != IR_OP_MIN) continue;
        ir_shape rs = sub_shape(&f->nodes[n->args[0]].shape, n->axes);
        IR_VEC_PUSH(a, km->nonempty, km->nnonempty, ncap, rs);
        IR_VEC_PUSH(a, km->nonempty_op, nops, ocap, n->op);
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
        if (pi == 0) km->run_shape = p.dom; /* column and full reductions */
        t->symbol = symbol(a, fi, f, k, partno, "");
        task_extent(f, fi, kn, k, pi, partno, &p, a, km, t);
        task_nonempty(f, kn, &p, a, km);
    }
    return 0;
}

/* Function fi's metadata: its buffer table, then each kernel's. */
static int plan_func(ir_func *f, int fi, ir_arena *a, llvm_func_meta *fm, char *err,
                     size_t errlen) {
    memset(fm, 0, sizeof(*fm));
    fm->func = f;
    if (!f->partition) return ir_fail(err, errlen, "function '%s' has no partition", f->name);
    const ir_partition *part = f->partition;
    if (plan_buffers(f, a, fm, err, errlen)) return -1;
    fm->nkernels = part->nkernels;
    fm->kernels =
        ir_arena_calloc(a, (size_t)(part->nkernels ? part->nkernels : 1), sizeof(*fm->kernels));
    for (int32_t k = 0; k < part->nkernels; k++)
        if (plan_kernel_meta(f, fi, k, a, fm, err, errlen)) return -1;
    return 0;
}

int llvm_plan_module(ir_func *const *funcs, int nfuncs, ir_arena *a, llvm_module_meta **out,
                     char *err, size_t errlen) {
    llvm_module_meta *m = ir_arena_calloc(a, 1, sizeof(*m));
    m->nfuncs = nfuncs;
    m->funcs = ir_arena_calloc(a, (size_t)(nfuncs ? nfuncs : 1), sizeof(*m->funcs));
    for (int i = 0; i < nfuncs; i++)
        if (plan_func(funcs[i], i, a, &m->funcs[i], err, errlen)) return -1;
    *out = m;
    return 0;
}
