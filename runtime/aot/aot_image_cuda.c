/* runtime/aot/aot_image_cuda.c: CUDA's part of an image (runtime/aot/aot_image.h): per function
 * its launches (variants, conditions, grids, arguments, splits), scratch buffers, checks,
 * in-place hazards and gather kernels, then the module's function names: codegen/cuda/cuda.h's
 * cuda_module without its source, which runtime/cuda/cuda_launch.c loads and launches. Its
 * name and counts are the signature's. Every index is checked against what it indexes.
 */
#include "runtime/aot/aot_image_io.h"

static void w_size(rt_wbuf *w, const cuda_size *s) {
    rt_w_i64(w, s->coeff);
    rt_w_i32(w, s->nsyms);
    for (int32_t i = 0; i < s->nsyms; i++)
        rt_w_i32(w, s->syms[i]);
}

static void w_variant(rt_wbuf *w, const cuda_variant *v) {
    rt_w_str(w, v->name);
    rt_w_i32(w, v->nconds);
    for (int32_t i = 0; i < v->nconds; i++) {
        rt_w_i32(w, (int32_t)v->conds[i].kind);
        rt_w_i32(w, v->conds[i].arg);
        w_size(w, &v->conds[i].size);
        rt_w_i64(w, v->conds[i].value);
    }
    rt_w_i32(w, v->nparts);
    for (int32_t i = 0; i < v->nparts; i++) {
        const cuda_grid *g = &v->parts[i];
        rt_w_i32(w, (int32_t)g->kind);
        w_size(w, &g->work);
        w_size(w, &g->row_len);
        rt_w_i32(w, g->per_thread);
        rt_w_i32(w, g->row_min_t);
        rt_w_i32(w, g->block);
        rt_w_i32(w, g->blocks_per_sm);
        rt_w_i32(w, g->max_blocks);
    }
    rt_w_i32(w, v->smem_bytes);
}

static void w_launch(rt_wbuf *w, const cuda_launch *l) {
    rt_w_i32(w, l->kernel);
    rt_w_str(w, l->what);
    rt_w_i32(w, l->nvariants);
    for (int32_t i = 0; i < l->nvariants; i++)
        w_variant(w, &l->variants[i]);
    rt_w_i32(w, l->nargs);
    for (int32_t i = 0; i < l->nargs; i++) {
        rt_w_i32(w, (int32_t)l->args[i].kind);
        rt_w_i32(w, l->args[i].index);
        w_size(w, &l->args[i].size);
        rt_w_str(w, l->args[i].name);
    }
    rt_w_i32(w, l->max_block);
    rt_w_i32(w, l->split);
    w_size(w, &l->split_len);
    w_size(w, &l->split_cols);
}

static void w_func(rt_wbuf *w, const cuda_func *f) {
    rt_w_i32(w, f->nlaunches);
    for (int32_t i = 0; i < f->nlaunches; i++)
        w_launch(w, &f->launches[i]);
    rt_w_i32(w, f->nscratch);
    for (int32_t i = 0; i < f->nscratch; i++) {
        w_size(w, &f->scratch[i].bytes);
        rt_w_i32(w, f->scratch[i].node);
        rt_w_i32(w, f->scratch[i].split_launch);
    }
    rt_w_i32(w, f->nchecks);
    for (int32_t i = 0; i < f->nchecks; i++) {
        w_size(w, &f->checks[i].extent);
        rt_w_str(w, f->checks[i].message);
    }
    rt_w_bytes(w, f->inplace_hazard, (size_t)f->nresults * (size_t)f->nparams);
    for (int32_t p = 0; p < f->nparams; p++)
        rt_w_str(w, f->gather ? f->gather[p] : NULL);
}

void rt_img_write_cuda(rt_wbuf *w, const rt_image *img) {
    for (int32_t f = 0; f < img->nfuncs; f++)
        w_func(w, &img->cuda.funcs[f]);
    rt_w_i32(w, img->cuda.nnames);
    for (int32_t i = 0; i < img->cuda.nnames; i++)
        rt_w_str(w, img->cuda.names[i]);
}

/* ---- reading ------------------------------------------------------------------------------- */

static void r_size(rt_rbuf *r, cuda_size *s) {
    s->coeff = rt_r_i64(r);
    s->nsyms = rt_r_index(r, 0, CUDA_MAX_SIZE_SYMS + 1);
    for (int32_t i = 0; i < s->nsyms; i++)
        s->syms[i] = rt_r_index(r, 0, r->nsyms);
}

static void r_grid(rt_rbuf *r, cuda_grid *g) {
    g->kind = (cuda_grid_kind)rt_r_index(r, CUDA_GRID_STRIDE, CUDA_GRID_NONE + 1);
    r_size(r, &g->work);
    r_size(r, &g->row_len);
    g->per_thread = rt_r_index(r, 0, 1 << 16);
    g->row_min_t = rt_r_index(r, 0, 1025);
    g->block = rt_r_index(r, 0, 1025);
    g->blocks_per_sm = rt_r_index(r, 0, 1 << 16);
    g->max_blocks = rt_r_i32(r);
    if (g->max_blocks < 0) rt_r_fail(r);
}

/* A variant of a launch of nargs arguments. */
static void r_variant(rt_rbuf *r, cuda_variant *v, int32_t nargs) {
    v->name = rt_r_str_set(r);
    v->nconds = rt_r_count(r, 20);
    cuda_cond *conds = rt_r_alloc(r, (size_t)v->nconds, sizeof(cuda_cond));
    for (int32_t i = 0; conds && i < v->nconds; i++) {
        conds[i].kind = (cuda_cond_kind)rt_r_index(r, CUDA_COND_AT_MOST, CUDA_COND_SPLIT + 1);
        conds[i].arg = rt_r_i32(r);
        if (conds[i].kind == CUDA_COND_ALIGNED && (conds[i].arg < 0 || conds[i].arg >= nargs))
            rt_r_fail(r);
        r_size(r, &conds[i].size);
        conds[i].value = rt_r_i64(r);
        if (conds[i].value <= 0 && conds[i].kind != CUDA_COND_AT_MOST &&
            conds[i].kind != CUDA_COND_AT_LEAST)
            rt_r_fail(r); /* a divisor */
    }
    v->conds = conds;
    v->nparts = rt_r_count(r, 40);
    cuda_grid *parts = rt_r_alloc(r, (size_t)v->nparts, sizeof(cuda_grid));
    for (int32_t i = 0; parts && i < v->nparts; i++)
        r_grid(r, &parts[i]);
    v->parts = parts;
    v->smem_bytes = rt_r_i32(r);
    if (v->smem_bytes < 0) rt_r_fail(r);
}

/* Launch li of f (whose launches, scratch counts are known: nlaunches, nscratch). */
static void r_launch(rt_rbuf *r, cuda_launch *l, const cuda_func *f, int32_t nscratch) {
    l->kernel = rt_r_i32(r);
    l->what = rt_r_str_set(r);
    l->nvariants = rt_r_count(r, 16);
    if (l->nvariants < 1) rt_r_fail(r);
    cuda_variant *vars = rt_r_alloc(r, (size_t)l->nvariants, sizeof(cuda_variant));
    /* the arguments come after the variants, whose ALIGNED conditions index them: read the
     * count ahead is not possible, so conditions are checked against the limit of arguments */
    for (int32_t i = 0; vars && i < l->nvariants; i++)
        r_variant(r, &vars[i], IR_MAX_ARGS * 4);
    l->variants = vars;
    int32_t min_parts = INT32_MAX; /* a PART_BLOCK argument indexes every variant's parts */
    for (int32_t i = 0; vars && i < l->nvariants; i++)
        if (vars[i].nparts < min_parts) min_parts = vars[i].nparts;
    l->nargs = rt_r_count(r, 16);
    cuda_arg *args = rt_r_alloc(r, (size_t)l->nargs, sizeof(cuda_arg));
    for (int32_t i = 0; args && i < l->nargs; i++) {
        args[i].kind = (cuda_arg_kind)rt_r_index(r, CUDA_ARG_PARAM, CUDA_ARG_PIECES + 1);
        int32_t limit = args[i].kind == CUDA_ARG_PARAM        ? f->nparams
                        : args[i].kind == CUDA_ARG_RESULT     ? f->nresults
                        : args[i].kind == CUDA_ARG_SCRATCH    ? nscratch
                        : args[i].kind == CUDA_ARG_GRID_OF    ? f->nlaunches
                        : args[i].kind == CUDA_ARG_PART_BLOCK ? min_parts
                                                              : INT32_MAX;
        args[i].index = rt_r_index(r, 0, limit);
        r_size(r, &args[i].size);
        args[i].name = rt_r_str_set(r);
    }
    l->args = args;
    for (int32_t i = 0; vars && i < l->nvariants; i++)
        for (int32_t c = 0; c < vars[i].nconds; c++)
            if (vars[i].conds[c].kind == CUDA_COND_ALIGNED && vars[i].conds[c].arg >= l->nargs)
                rt_r_fail(r);
    l->max_block = rt_r_index(r, 1, 1025);
    l->split = rt_r_i32(r);
    r_size(r, &l->split_len);
    r_size(r, &l->split_cols);
}

/* The scratch count is read after the launches, which index scratch: the launches are read
 * into place first, then checked against it. */
static void r_func(rt_rbuf *r, cuda_func *f, const rt_image_sig *s) {
    f->name = s->name;
    f->nparams = s->nparams;
    f->nresults = s->noutputs;
    f->nsyms = r->nsyms = s->nsyms;
    f->nlaunches = rt_r_count(r, 32);
    cuda_launch *launches = rt_r_alloc(r, (size_t)f->nlaunches, sizeof(cuda_launch));
    for (int32_t i = 0; launches && i < f->nlaunches; i++)
        r_launch(r, &launches[i], f, INT32_MAX);
    f->launches = launches;
    f->nscratch = rt_r_count(r, 16);
    cuda_scratch *scratch = rt_r_alloc(r, (size_t)f->nscratch, sizeof(cuda_scratch));
    for (int32_t i = 0; scratch && i < f->nscratch; i++) {
        r_size(r, &scratch[i].bytes);
        scratch[i].node = rt_r_i32(r);
        scratch[i].split_launch = rt_r_index(r, -1, f->nlaunches);
    }
    f->scratch = scratch;
    for (int32_t i = 0; launches && i < f->nlaunches; i++)
        for (int32_t a = 0; a < launches[i].nargs; a++)
            if (launches[i].args[a].kind == CUDA_ARG_SCRATCH &&
                launches[i].args[a].index >= f->nscratch)
                rt_r_fail(r);
    f->nchecks = rt_r_count(r, 16);
    cuda_check *checks = rt_r_alloc(r, (size_t)f->nchecks, sizeof(cuda_check));
    for (int32_t i = 0; checks && i < f->nchecks; i++) {
        r_size(r, &checks[i].extent);
        checks[i].message = rt_r_str_set(r);
    }
    f->checks = checks;
    size_t hz = (size_t)f->nresults * (size_t)f->nparams;
    uint8_t *hazard = rt_r_alloc(r, hz, 1);
    for (size_t i = 0; hazard && i < hz; i++)
        hazard[i] = rt_r_u8(r);
    f->inplace_hazard = hazard;
    const char **gather = rt_r_alloc(r, (size_t)f->nparams, sizeof(char *));
    for (int32_t p = 0; gather && p < f->nparams; p++)
        gather[p] = rt_r_str(r);
    f->gather = gather;
}

void rt_img_read_cuda(rt_rbuf *r, rt_image *img) {
    img->cuda.nfuncs = img->nfuncs;
    cuda_func *funcs = rt_r_alloc(r, (size_t)img->nfuncs, sizeof(cuda_func));
    for (int32_t f = 0; funcs && f < img->nfuncs; f++)
        r_func(r, &funcs[f], &img->sigs[f]);
    img->cuda.funcs = funcs;
    r->nsyms = 0;
    img->cuda.nnames = rt_r_count(r, 5);
    const char **names = rt_r_alloc(r, (size_t)img->cuda.nnames, sizeof(char *));
    for (int32_t i = 0; names && i < img->cuda.nnames; i++)
        names[i] = rt_r_str_set(r);
    img->cuda.names = names;
}
