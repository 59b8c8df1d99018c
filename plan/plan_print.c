/* plan/plan_print.c: the kernel plan as text, `fusec --emit=plan`. For each function, its
 * buffers, launch checks and scratch; for each kernel (each part), the layout, the collapsed
 * axes, the accesses, and for reductions the levels: what each sweep reduces, what is
 * computed once per result after it, which sweep writes each stored value.
 *
 *   plan softmax
 *     buffer 0: param 0 "x" f32[R, C]
 *     buffer 1: result 0 %7 f32[R, C]
 *     check: max %1 over [C] (not empty)
 *     kernel 0 row-reduction
 *       row over [R, C] reducing (1)
 *       axes: 0 [R] kept, 1 [C] reduced
 *       load %0 from buffer 0: dense
 *       store %7 to buffer 1: dense, in sweep 2
 *       sweep 0: max %1
 *       sweep 1: sum %5
 *       sweep 2: per-element stores
 *
 * The format is for people and for tests that pin a plan; nothing parses it.
 */
#include "plan/plan.h"

static const char *const layout_names[] = {"element-wise", "row", "column", "full"};

static void print_axes_list(ir_buf *b, uint32_t mask) {
    int first = 1;
    ir_buf_puts(b, "(");
    for (int i = 0; i < 32; i++)
        if (mask & (1u << i)) {
            ir_buf_printf(b, first ? "%d" : ", %d", i);
            first = 0;
        }
    ir_buf_puts(b, ")");
}

static void print_bufs(ir_buf *b, const plan_func *pf) {
    const ir_func *f = pf->func;
    for (int32_t i = 0; i < pf->nbufs; i++) {
        const plan_buf *x = &pf->bufs[i];
        ir_buf_printf(b, "  buffer %d: ", (int)i);
        if (x->kind == PLAN_BUF_PARAM)
            ir_buf_printf(b, "param %d \"%s\"", (int)x->index, f->params[x->index].name);
        else
            ir_buf_printf(b, "%s %d %%%d", x->kind == PLAN_BUF_RESULT ? "result" : "temp",
                          (int)x->index, (int)x->node);
        ir_buf_printf(b, " %s", ir_dtypes[x->dtype].name);
        ir_print_shape(b, f, &x->shape);
        ir_buf_puts(b, "\n");
    }
    for (int32_t i = 0; i < pf->nchecks; i++) {
        ir_buf_printf(b, "  check: %s %%%d over ", ir_ops[pf->checks[i].op].name,
                      (int)pf->checks[i].node);
        ir_print_shape(b, f, &pf->checks[i].shape);
        ir_buf_puts(b, " (not empty)\n");
    }
    for (int32_t o = 0; o < f->noutputs; o++)
        for (int32_t p = 0; p < f->nparams; p++)
            if (pf->inplace_hazard[o * f->nparams + p])
                ir_buf_printf(b, "  in place: result %d over \"%s\" through a temporary\n", (int)o,
                              f->params[p].name);
    for (int32_t i = 0; i < pf->nscratch; i++) {
        const plan_scratch *s = &pf->scratch[i];
        ir_buf_printf(b, "  scratch %d: kernel %d's partials, %lld 8-byte slots per result of ",
                      (int)i, (int)s->kernel, (long long)s->count);
        ir_print_shape(b, f, &s->per);
        ir_buf_puts(b, "\n");
    }
}

static void print_space(ir_buf *b, const plan_kernel *p) {
    const ir_func *f = p->f;
    ir_buf_printf(b, "    %s over ", layout_names[p->layout]);
    ir_print_shape(b, f, &p->dom);
    if (p->red) {
        ir_buf_puts(b, " reducing ");
        print_axes_list(b, p->red);
    }
    ir_buf_puts(b, "\n    axes:");
    for (int32_t c = 0; c < p->naxes; c++) {
        ir_shape s = plan_sub_shape(&p->dom, p->axis_dims[c]);
        ir_buf_printf(b, "%s %d ", c ? "," : "", (int)c);
        ir_print_shape(b, f, &s);
        ir_buf_puts(b, (p->reduced >> c) & 1 ? " reduced" : " kept");
    }
    if (p->naxes == 0) ir_buf_puts(b, " none (one element)");
    ir_buf_puts(b, "\n");
}

/* The sweep that writes stored value r (-1: once per result). */
static int32_t store_sweep(const plan_kernel *p, ir_ref r) {
    if (p->layout == PLAN_ELEMENTWISE && p->nreds == 0) return 0;
    if (p->per_result[r]) return -1;
    return p->stage[r];
}

static void print_accesses(ir_buf *b, const plan_kernel *p) {
    for (int32_t i = 0; i < p->nacc; i++) {
        const plan_access *x = &p->acc[i];
        if (x->buf == PLAN_NO_BUF)
            ir_buf_printf(b, "    index %%%d, computed: ", (int)x->node);
        else
            ir_buf_printf(b, "    %s %%%d %s buffer %d: ", x->store ? "store" : "load",
                          (int)x->node, x->store ? "to" : "from", (int)x->buf);
        if (x->kind == PLAN_DENSE) {
            ir_buf_puts(b, "dense");
        } else if (!x->present) {
            ir_buf_puts(b, "broadcast, one value");
        } else {
            ir_buf_puts(b, "broadcast, varies along ");
            print_axes_list(b, x->present);
        }
        if (x->store && p->nreds) {
            int32_t s = store_sweep(p, x->node);
            if (s < 0)
                ir_buf_printf(b, ", once per result after sweep %d", (int)p->stage[x->node] - 1);
            else
                ir_buf_printf(b, ", in sweep %d", (int)s);
        }
        if (x->store && p->round_kept[x->node]) ir_buf_puts(b, ", read again rounded");
        ir_buf_puts(b, "\n");
    }
}

static void print_levels(ir_buf *b, const plan_kernel *p) {
    const ir_func *f = p->f;
    const ir_kernel *k = &f->partition->kernels[p->kernel];
    for (int32_t s = 0; s < p->nsweeps; s++) {
        ir_buf_printf(b, "    sweep %d:", (int)s);
        for (int32_t i = 0; i < p->nreds; i++)
            if (p->stage[p->reds[i]] == s + 1)
                ir_buf_printf(b, " %s %%%d", ir_ops[f->nodes[p->reds[i]].op].name, (int)p->reds[i]);
        ir_buf_puts(b, "\n");
        int any = 0;
        for (int32_t i = p->from; i < p->to; i++) {
            ir_ref r = k->body[i];
            if (!p->per_result[r] || p->stage[r] != s + 1 ||
                ir_ops[f->nodes[r].op].cls == IR_CLASS_REDUCE)
                continue;
            ir_buf_printf(b, any ? " %%%d" : "    per result after sweep %d: %%%d",
                          any ? (int)r : (int)s, (int)r);
            any = 1;
        }
        if (any) ir_buf_puts(b, "\n");
    }
    if (p->final_sweep) ir_buf_printf(b, "    sweep %d: per-element stores\n", (int)p->nsweeps);
    if (p->split.splittable)
        ir_buf_printf(b,
                      "    split: the reduced elements cut into pieces (plan_split_pieces), "
                      "partials in scratch %d, combined in order\n",
                      (int)p->split.scratch);
}

static void print_kernel(ir_buf *b, const plan_kernel_set *ks) {
    for (int32_t pi = 0; pi < ks->nparts; pi++) {
        const plan_kernel *p = &ks->parts[pi];
        ir_buf_printf(b, "  kernel %d %s", (int)ks->kernel, ir_kernel_kind_name(ks->kind));
        if (p->part >= 0) ir_buf_printf(b, ", part %d", (int)p->part);
        ir_buf_puts(b, "\n");
        print_space(b, p);
        print_accesses(b, p);
        if (p->nreds) print_levels(b, p);
    }
}

void plan_print(ir_buf *b, const plan_module *m) {
    for (int32_t i = 0; i < m->nfuncs; i++) {
        const plan_func *pf = &m->funcs[i];
        if (i) ir_buf_puts(b, "\n");
        ir_buf_printf(b, "plan %s\n", pf->func->name);
        print_bufs(b, pf);
        for (int32_t k = 0; k < pf->nkernels; k++)
            print_kernel(b, &pf->kernels[k]);
    }
}
