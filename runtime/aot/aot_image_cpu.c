/* runtime/aot/aot_image_cpu.c: the CPU's part of an image (runtime/aot/aot_image.h): per
 * function its buffers, checks, in-place hazards and kernels (every field of llvm_kernel_meta
 * that runtime/cpu/cpu_launch.c reads). Its name and counts are the signature's.
 */
#include "runtime/aot/aot_image_io.h"

static void w_kernel(rt_wbuf *w, const llvm_kernel_meta *k) {
    rt_w_i32(w, k->kernel);
    rt_w_i32(w, (int32_t)k->kind);
    rt_w_shape(w, &k->domain);
    rt_w_i32(w, k->elem_out_bytes);
    rt_w_i32(w, k->expensive);
    rt_w_i32(w, k->ntasks);
    for (int32_t t = 0; t < k->ntasks; t++) {
        rt_w_str(w, k->tasks[t].symbol);
        rt_w_shape(w, &k->tasks[t].extent.outer);
        rt_w_shape(w, &k->tasks[t].extent.inner);
        rt_w_i64(w, k->tasks[t].extent.block);
    }
    rt_w_shape(w, &k->run_shape);
    rt_w_shape(w, &k->scratch_shape);
    rt_w_i32(w, k->scratch_bytes);
    rt_w_str(w, k->finalize);
    rt_w_i32(w, k->npartials);
    rt_w_str(w, k->split_pieces);
    rt_w_str(w, k->split_join);
    rt_w_i32(w, k->split_nreds);
    rt_w_shape(w, &k->split_len);
    rt_w_shape(w, &k->split_cols);
}

static void w_func(rt_wbuf *w, const rt_cpu_func *f) {
    rt_w_i32(w, f->nbufs);
    for (int32_t i = 0; i < f->nbufs; i++) {
        rt_w_i32(w, (int32_t)f->bufs[i].kind);
        rt_w_i32(w, f->bufs[i].index);
        rt_w_i32(w, f->bufs[i].elem_bytes);
        rt_w_shape(w, &f->bufs[i].shape);
    }
    rt_w_i32(w, f->nchecks);
    for (int32_t i = 0; i < f->nchecks; i++) {
        rt_w_str(w, f->checks[i].op);
        rt_w_shape(w, &f->checks[i].shape);
    }
    rt_w_bytes(w, f->inplace_hazard, (size_t)f->noutputs * (size_t)f->nparams);
    rt_w_i32(w, f->nkernels);
    for (int32_t k = 0; k < f->nkernels; k++)
        w_kernel(w, &f->kernels[k]);
}

void rt_img_write_cpu(rt_wbuf *w, const rt_image *img) {
    for (int32_t f = 0; f < img->nfuncs; f++)
        w_func(w, &img->cpu.funcs[f]);
}

static void r_kernel(rt_rbuf *r, llvm_kernel_meta *k) {
    k->kernel = rt_r_i32(r);
    k->kind = (ir_kernel_kind)rt_r_index(r, 0, IR_KERNEL_COMBINED + 1);
    rt_r_shape(r, &k->domain);
    k->elem_out_bytes = rt_r_i32(r);
    k->expensive = rt_r_i32(r);
    k->ntasks = rt_r_count(r, 4);
    if (k->ntasks < 1) rt_r_fail(r);
    k->tasks = rt_r_alloc(r, (size_t)k->ntasks, sizeof(llvm_task));
    for (int32_t t = 0; k->tasks && t < k->ntasks; t++) {
        k->tasks[t].symbol = rt_r_str_set(r);
        rt_r_shape(r, &k->tasks[t].extent.outer);
        rt_r_shape(r, &k->tasks[t].extent.inner);
        k->tasks[t].extent.block = rt_r_i64(r);
    }
    rt_r_shape(r, &k->run_shape);
    rt_r_shape(r, &k->scratch_shape);
    k->scratch_bytes = rt_r_i32(r);
    k->finalize = rt_r_str(r);
    k->npartials = rt_r_i32(r);
    k->split_pieces = rt_r_str(r);
    k->split_join = rt_r_str(r);
    k->split_nreds = rt_r_i32(r);
    rt_r_shape(r, &k->split_len);
    rt_r_shape(r, &k->split_cols);
    if (k->scratch_bytes < 0 || k->npartials < 0 || k->split_nreds < 0 || k->elem_out_bytes < 0 ||
        (k->split_pieces && !k->split_join))
        rt_r_fail(r);
}

static void r_bufs(rt_rbuf *r, rt_cpu_func *f) {
    f->nbufs = rt_r_count(r, 12);
    f->bufs = rt_r_alloc(r, (size_t)f->nbufs, sizeof(rt_cpu_buf));
    for (int32_t i = 0; f->bufs && i < f->nbufs; i++) {
        rt_cpu_buf *b = &f->bufs[i];
        b->kind = (plan_buf_kind)rt_r_index(r, PLAN_BUF_PARAM, PLAN_BUF_TEMP + 1);
        int32_t limit = b->kind == PLAN_BUF_PARAM    ? f->nparams
                        : b->kind == PLAN_BUF_RESULT ? f->noutputs
                                                     : f->nbufs;
        b->index = rt_r_index(r, 0, limit);
        b->elem_bytes = rt_r_index(r, 1, 9);
        rt_r_shape(r, &b->shape);
    }
}

static void r_func(rt_rbuf *r, rt_cpu_func *f, const rt_image_sig *s) {
    f->name = s->name;
    f->nparams = s->nparams;
    f->noutputs = s->noutputs;
    f->nsyms = r->nsyms = s->nsyms;
    r_bufs(r, f);
    f->nchecks = rt_r_count(r, 8);
    f->checks = rt_r_alloc(r, (size_t)f->nchecks, sizeof(rt_cpu_check));
    for (int32_t i = 0; f->checks && i < f->nchecks; i++) {
        f->checks[i].op = rt_r_str_set(r);
        rt_r_shape(r, &f->checks[i].shape);
    }
    size_t hz = (size_t)f->noutputs * (size_t)f->nparams;
    f->inplace_hazard = rt_r_alloc(r, hz, 1);
    for (size_t i = 0; f->inplace_hazard && i < hz; i++)
        f->inplace_hazard[i] = rt_r_u8(r);
    f->nkernels = rt_r_count(r, 8);
    f->kernels = rt_r_alloc(r, (size_t)f->nkernels, sizeof(llvm_kernel_meta));
    for (int32_t k = 0; f->kernels && k < f->nkernels; k++)
        r_kernel(r, &f->kernels[k]);
}

void rt_img_read_cpu(rt_rbuf *r, rt_image *img) {
    img->cpu.nfuncs = img->nfuncs;
    img->cpu.funcs = rt_r_alloc(r, (size_t)img->nfuncs, sizeof(rt_cpu_func));
    for (int32_t f = 0; img->cpu.funcs && f < img->nfuncs; f++)
        r_func(r, &img->cpu.funcs[f], &img->sigs[f]);
}
