/* codegen/cuda/cuda_pointwise.c: the element-wise engine. It sweeps every element of a flat index
 * space once, with a grid-stride loop:
 *
 *   - a vector path: VEC elements a step (16 bytes of the widest buffer that moves with the
 *     innermost group), one vector load per input and one vector store per output, taken when
 *     every such buffer is aligned and (with broadcasts) the innermost group holds whole
 *     vectors; the rest, or everything otherwise, goes through a scalar path;
 *   - broadcast reads without division per element: the position of the current element in
 *     each group the broadcast buffers need is divided out once per thread, then advanced by
 *     the grid stride with carries (a mixed-radix add);
 *   - values that do not vary over the innermost group are computed once per vector, values
 *     that vary over nothing once per thread;
 *   - the body is a template over the index type I: unsigned for domains below 2^31 elements
 *     (the launcher's first variant), unsigned long long otherwise.
 *
 * It serves pointwise kernels, the parts of combined kernels, reductions whose reduced axes
 * all have size 1, and the first stage of a full reduction (cuda_reduce.c).
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cuda_internal.h"

enum { BLOCK = 256 };

typedef struct flat {
    int vec;               /* in the vector path */
    int w;                 /* VEC */
    int lo;                /* lowest tracked group; ngroups: none tracked */
    const char *i;         /* the flat index (vectors in the vector path) */
    int32_t inner;         /* the innermost group */
    unsigned char *vecbuf; /* per buffer: loaded as a vector before the lanes */
    /* the sweep (cugen_flat_sweep's arguments) */
    const int32_t *outs; /* output buffers written per element */
    int32_t nouts;
    const ir_ref *reds; /* reductions each element is added into */
    int32_t nreds;
    ir_ref *targets; /* what an element computes: outputs, then reduction operands */
    int32_t nt;
    const char *n; /* the number of elements */
} flat;

/* the coordinate of group g in the current path */
static const char *coord(cugen_kernel *k, int32_t g) {
    (void)k;
    static const char *const names[IR_MAX_RANK] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"};
    return names[g];
}

/* The element offset of buffer b at the current position. */
static const char *flat_offset(cugen_kernel *k, int32_t b) {
    flat *s = k->ctx;
    uint32_t m = k->bufs[b].mask;
    uint32_t all = (1u << k->ngroups) - 1;
    if (m == all) return s->vec ? cugen_fmt(k, "%s * %d", s->i, s->w) : s->i;
    const char *sum = NULL;
    for (int32_t g = 0; g < k->ngroups; g++) {
        if (!(m & (1u << g))) continue;
        const char *x = coord(k, g);
        if (g == s->inner && s->vec) x = cugen_fmt(k, "%s * %d", x, s->w);
        cuda_size st = cugen_groups_extent(k, m & (g >= 31 ? 0 : ~((2u << g) - 1)));
        if (!cugen_size_is_lit(&st, 1))
            x = cugen_fmt(k, "%s * %s", x, cugen_size_expr(k, st, "stride"));
        sum = sum ? cugen_fmt(k, "%s + %s", sum, x) : x;
    }
    return sum ? sum : "0";
}

/* Loads for the flat engine: a lane of a vector loaded before the lanes, or one element. */
static const char *flat_load(cugen_kernel *k, int b) {
    flat *s = k->ctx;
    const cugen_buf *bf = &k->bufs[b];
    const char *v = cugen_fmt(k, "v%d", (int)bf->node);
    const char *x;
    if (bf->computed) {
        /* an index: the offset itself, lane j of a vector past its first element */
        const char *o = s ? flat_offset(k, b) : "0";
        if (s && s->vec && (bf->mask & (1u << s->inner))) o = cugen_fmt(k, "%s + j", o);
        cugen_line(k, "const long long %s = (long long)(%s);", v, o);
        return v;
    }
    if (s && s->vec && s->vecbuf[b])
        x = cugen_fmt(k, "l%d.v[j]", (int)b);
    else
        x = cugen_fmt(k, "%s[%s]", bf->name, s ? flat_offset(k, b) : "0");
    cugen_line(k, "const %s %s = %s;", cugen_ctype(bf->dtype), v,
               cugen_from_storage(k, bf->dtype, x));
    return v;
}

/* Position tracking: x_g for the tracked groups from `start` (in units of the path), and the
 * per-step advance d_g of `step`. */
static void track_init(cugen_kernel *k, const char *start, const char *step) {
    flat *s = k->ctx;
    if (s->lo >= k->ngroups) return;
    const char *ext[IR_MAX_RANK];
    for (int32_t g = s->lo; g < k->ngroups; g++)
        ext[g] = g == s->inner && s->vec ? "w_in" : cugen_size_expr(k, k->groups[g].extent, "ext");
    for (int pass = 0; pass < 2; pass++) {
        const char *src = pass ? step : start;
        const char *pre = pass ? "d" : "x";
        cugen_line(k, "%sI t%s = %s;", pass ? "" : "", pass ? "s" : "p", src);
        for (int32_t g = k->ngroups - 1; g >= s->lo; g--) {
            const char *t = pass ? "ts" : "tp";
            if (g == 0)
                cugen_line(k, "%sI %s%d = %s;", pass ? "const " : "", pre, (int)g, t);
            else
                cugen_line(k, "%sI %s%d = %s %% %s;", pass ? "const " : "", pre, (int)g, t, ext[g]);
            if (g > s->lo) cugen_line(k, "%s /= %s;", t, ext[g]);
        }
    }
}

static void track_advance(cugen_kernel *k) {
    flat *s = k->ctx;
    if (s->lo >= k->ngroups) return;
    for (int32_t g = k->ngroups - 1; g >= s->lo; g--)
        cugen_line(k, "x%d += d%d;", (int)g, (int)g);
    for (int32_t g = k->ngroups - 1; g >= s->lo; g--) {
        if (g == 0) continue;
        const char *e =
            g == s->inner && s->vec ? "w_in" : cugen_size_expr(k, k->groups[g].extent, "ext");
        if (g > s->lo)
            cugen_line(k, "if (x%d >= %s) x%d -= %s, x%d += 1;", (int)g, e, (int)g, e, (int)g - 1);
        else
            cugen_line(k, "if (x%d >= %s) x%d -= %s;", (int)g, e, (int)g, e);
    }
}

/* Accumulates every reduction's operand into its accumulator. */
static void accumulate(cugen_kernel *k, const ir_ref *reds, int32_t nreds) {
    for (int32_t r = 0; r < nreds; r++) {
        const ir_node *n = &k->f->nodes[reds[r]];
        const char *x = cugen_operand(k, n->args[0]);
        if (k->f->nodes[n->args[0]].dtype != n->dtype)
            x = cugen_fmt(k, "(%s)%s", cugen_ctype(n->dtype), x); /* sum of i32 or bool into i64 */
        const char *acc = cugen_fmt(k, "a%d", (int)reds[r]);
        cugen_line(k, "%s = %s;", acc, cugen_red_combine(k, reds[r], acc, x));
    }
}

/* The values an element computes: the outputs' nodes, then the reductions' operands. */
static void flat_targets(cugen_kernel *k, flat *s) {
    s->nt = 0;
    s->targets = ir_arena_calloc(k->m->a, (size_t)(s->nouts + s->nreds + 1), sizeof(ir_ref));
    for (int32_t o = 0; o < s->nouts; o++)
        s->targets[s->nt++] = k->bufs[s->outs[o]].node;
    for (int32_t r = 0; r < s->nreds; r++)
        s->targets[s->nt++] = k->f->nodes[s->reds[r]].args[0];
}

/* The lowest group a broadcast buffer needs (positions are tracked from there down to the
 * innermost), and the vector width: 16 bytes of the widest buffer that moves with the
 * innermost group, at most 8 elements. */
static void flat_layout(cugen_kernel *k, flat *s) {
    int32_t G = k->ngroups;
    uint32_t all = G ? (1u << G) - 1 : 0;
    int maxbytes = 0;
    s->lo = G;
    for (int32_t b = 0; b < k->nbufs; b++) {
        uint32_t mk = k->bufs[b].mask;
        if (!cugen_buf_used(k, b)) continue;
        if (G && (mk & (1u << s->inner)) && !k->bufs[b].computed) {
            int by = ir_dtypes[k->bufs[b].dtype].bytes;
            if (by > maxbytes) maxbytes = by;
        }
        if (mk && mk != all)
            for (int32_t g = 0; g < G; g++)
                if ((mk & (1u << g)) && g < s->lo) s->lo = g;
    }
    int w = maxbytes ? 16 / maxbytes : 1;
    if (w > 8) w = 8;
    s->w = w;
    k->flat_tracked = s->lo < G;
}

/* Values that vary over nothing, computed once a thread before both paths (their uniform
 * reads are element 0). */
static void flat_uniform(cugen_kernel *k, flat *s) {
    unsigned char *need = ir_arena_calloc(k->m->a, (size_t)k->f->nnodes, 1);
    cugen_need(k, s->targets, s->nt, need);
    for (ir_ref r = 0; r < k->f->nnodes; r++)
        if (need[r] && k->var[r]) need[r] = 0;
    k->ctx = NULL; /* a uniform read is element 0 */
    cugen_emit_needed(k, need);
    k->ctx = s;
}

/* When the vector path is taken: the innermost group holds whole vectors (where positions
 * are tracked) and every buffer that moves with it is aligned for vector access (those are
 * marked in vecbuf). NULL: always. */
static const char *flat_vector_cond(cugen_kernel *k, flat *s) {
    int32_t G = k->ngroups;
    const char *cond = NULL;
    if (G > 1 && s->lo < G)
        cond = cugen_fmt(k, "%s %% %d == 0", cugen_size_expr(k, k->groups[s->inner].extent, "ext"),
                         s->w);
    for (int32_t b = 0; b < k->nbufs; b++) {
        if (!cugen_buf_used(k, b) || !(k->bufs[b].mask & (1u << s->inner))) continue;
        if (k->bufs[b].computed) continue;
        s->vecbuf[b] = 1;
        cugen_use(k, CG_H_TYPES);
        const char *c = cugen_fmt(k, "fx_vec_ok<%d>(%s)", s->w, k->bufs[b].name);
        cond = cond ? cugen_fmt(k, "%s && %s", cond, c) : c;
    }
    return cond;
}

/* The lanes of one vector: each element's values, its outputs into the vectors s<buf>, its
 * operands into the accumulators. */
static void flat_lanes(cugen_kernel *k, flat *s, unsigned char *need) {
    /* A kernel that calls math out of line (cuda_outline.c) is a long one: its lanes are a
     * loop, not w copies, which builds in a third of the time (tanh 150 deep with its
     * gradient: ptxas 15 s -> 6 s), where the calls cost more than the loop. */
    cugen_line(k, k->outlines ? "#pragma unroll 1" : "#pragma unroll");
    cugen_line(k, "for (int j = 0; j < %d; j++) {", s->w);
    k->ind++;
    int32_t mark = cugen_scope_mark(k);
    cugen_emit_needed(k, need);
    for (int32_t o = 0; o < s->nouts; o++) {
        const cugen_buf *bf = &k->bufs[s->outs[o]];
        cugen_line(k, "s%d.v[j] = %s;", (int)s->outs[o],
                   cugen_to_storage(k, bf->dtype, cugen_operand(k, bf->node)));
    }
    accumulate(k, s->reds, s->nreds);
    cugen_scope_pop(k, mark);
    k->ind--;
    cugen_line(k, "}");
}

/* One step of the vector path: a vector load per input that moves with the innermost group,
 * the values the same across the vector once, the lanes, a vector store per output; then
 * the tracked positions advance. */
static void flat_vector_step(cugen_kernel *k, flat *s) {
    int w = s->w;
    int32_t mark = cugen_scope_mark(k);
    unsigned char *need = ir_arena_calloc(k->m->a, (size_t)k->f->nnodes, 1);
    cugen_need(k, s->targets, s->nt, need);
    for (int32_t b = 0; b < k->nbufs; b++) {
        const cugen_buf *bf = &k->bufs[b];
        if (bf->output || !s->vecbuf[b] || !need[bf->node]) continue;
        cugen_line(k, "const fx_vec<%s, %d> l%d = fx_ldv<%d>(%s + %s);", cugen_stype(bf->dtype), w,
                   (int)b, w, bf->name, flat_offset(k, b));
    }
    /* values the same across the vector */
    unsigned char *outer = ir_arena_calloc(k->m->a, (size_t)k->f->nnodes, 1);
    for (ir_ref r = 0; r < k->f->nnodes; r++)
        outer[r] = need[r] && !(k->var[r] & (1u << s->inner));
    cugen_emit_needed(k, outer);
    for (int32_t o = 0; o < s->nouts; o++)
        cugen_line(k, "fx_vec<%s, %d> s%d;", cugen_stype(k->bufs[s->outs[o]].dtype), w,
                   (int)s->outs[o]);
    flat_lanes(k, s, need);
    for (int32_t o = 0; o < s->nouts; o++)
        cugen_line(k, "fx_stv<%d>(%s + %s, s%d);", w, k->bufs[s->outs[o]].name,
                   flat_offset(k, s->outs[o]), (int)s->outs[o]);
    track_advance(k);
    cugen_scope_pop(k, mark);
}

/* The vector path, where its condition holds: the grid-stride loop over whole vectors; it
 * leaves `done` at the elements it covered. */
static void flat_vector_path(cugen_kernel *k, flat *s) {
    const char *cond = flat_vector_cond(k, s);
    cugen_line(k, "if (%s) {", cond ? cond : "true");
    k->ind++;
    cugen_line(k, "/* %d elements a step */", s->w);
    cugen_line(k, "const I nv = %s / %d;", s->n, s->w);
    if (s->lo < k->ngroups)
        cugen_line(k, "const I w_in = %s / %d;",
                   cugen_size_expr(k, k->groups[s->inner].extent, "ext"), s->w);
    s->vec = 1;
    s->i = "i";
    track_init(k, "tid", "nth");
    cugen_line(k, "#pragma unroll 1");
    cugen_line(k, "for (I i = tid; i < nv; i += nth) {");
    k->ind++;
    flat_vector_step(k, s);
    k->ind--;
    cugen_line(k, "}");
    cugen_line(k, "done = nv * %d;", s->w);
    k->ind--;
    cugen_line(k, "}");
    s->vec = 0;
}

/* The scalar path: the elements from `done` on (all of them when the vector path was not
 * taken), one a step. */
static void flat_scalar_path(cugen_kernel *k, flat *s) {
    cugen_line(k, "{");
    k->ind++;
    s->i = "i";
    track_init(k, "done + tid", "nth");
    cugen_line(k, "#pragma unroll 1");
    cugen_line(k, "for (I i = done + tid; i < %s; i += nth) {", s->n);
    k->ind++;
    int32_t mark = cugen_scope_mark(k);
    cugen_emit_values(k, s->targets, s->nt);
    for (int32_t o = 0; o < s->nouts; o++) {
        const cugen_buf *bf = &k->bufs[s->outs[o]];
        cugen_line(k, "%s[%s] = %s;", bf->name, flat_offset(k, s->outs[o]),
                   cugen_to_storage(k, bf->dtype, cugen_operand(k, bf->node)));
    }
    accumulate(k, s->reds, s->nreds);
    track_advance(k);
    cugen_scope_pop(k, mark);
    k->ind--;
    cugen_line(k, "}");
    k->ind--;
    cugen_line(k, "}");
}

/* (cuda_internal.h) The thread's first element and the grid's stride, the values uniform over
 * the space once, the vector path where vectors fit, then the scalar path for the rest. */
int cugen_flat_sweep(cugen_kernel *k, const int32_t *outs, int32_t nouts, const ir_ref *reds,
                     int32_t nreds, const char *bid, const char *nblk) {
    int32_t G = k->ngroups;
    uint32_t all = G ? (1u << G) - 1 : 0;
    flat s;
    memset(&s, 0, sizeof s);
    s.inner = G - 1;
    s.vecbuf = ir_arena_calloc(k->m->a, (size_t)(k->nbufs ? k->nbufs : 1), 1);
    s.outs = outs;
    s.nouts = nouts;
    s.reds = reds;
    s.nreds = nreds;
    k->ctx = &s;
    k->load = flat_load;
    flat_targets(k, &s);
    flat_layout(k, &s);
    cugen_line(k, "const I tid = %s * (I)blockDim.x + (I)threadIdx.x;", bid);
    cugen_line(k, "const I nth = %s * (I)blockDim.x;", nblk);
    s.n = cugen_size_expr(k, cugen_groups_extent(k, all), "n");
    int32_t mark0 = cugen_scope_mark(k);
    flat_uniform(k, &s);
    cugen_line(k, "I done = 0;");
    if (s.w > 1) flat_vector_path(k, &s);
    flat_scalar_path(k, &s);
    cugen_scope_pop(k, mark0);
    k->ctx = NULL;
    return s.w;
}

/* The grid of one flat part. */
static cuda_grid flat_grid(cugen_kernel *k, int w) {
    cuda_grid g;
    memset(&g, 0, sizeof g);
    g.kind = CUDA_GRID_STRIDE;
    g.work = cugen_groups_extent(k, (1u << k->ngroups) - 1);
    g.per_thread = w;
    g.block = BLOCK;
    /* as many blocks as the data needs, each thread one step of the loop (or a few, past
     * 2^30 elements): on an H100 GELU went from 93% to 100% of the copy's bandwidth, f16 from
     * 86% to 99%, against 8 blocks an SM looping over the data (2026-11-27) */
    g.blocks_per_sm = 0;
    return g;
}

/* Output buffers written by nodes of the current range. */
static int32_t range_outputs(cugen_kernel *k, int32_t *outs) {
    int32_t n = 0;
    for (int32_t b = 0; b < k->nbufs; b++)
        if (k->bufs[b].output && k->in[k->bufs[b].node]) outs[n++] = b;
    return n;
}

/* Part p of nparts (the whole kernel when nparts is 1): its index space, then its sweep in a
 * block of its own, a branch on the block index for a part of a combined kernel (its blocks
 * start at starts[p]); its grid and the condition of the 32-bit variant into *grid and *cond.
 * Returns -1 when the engine cannot do it (reported). */
static int elementwise_part(cugen_kernel *k, int32_t p, int32_t nparts, const char **starts,
                            int32_t *outs, cuda_grid *grid, cuda_cond *cond) {
    cugen_module *m = k->m;
    /* a reduction of one element a result: its reduced axes (all of size 1) drop out */
    cugen_space_build(k, nparts > 1 ? p : 0);
    const ir_shape *dom = &k->plan->dom;
    if (k->reduced) {
        cugen_fail(m,
                   "cuda codegen: kernel %d of '%s' reduces axes the element-wise engine "
                   "cannot",
                   (int)k->kidx, k->f->name);
        return -1;
    }
    int32_t nouts = range_outputs(k, outs);
    if (nparts > 1) {
        if (p == 0)
            cugen_line(k, "if (b < %s) {", starts[1]);
        else if (p + 1 < nparts)
            cugen_line(k, "} else if (b < %s) {", starts[p + 1]);
        else
            cugen_line(k, "} else {");
        k->ind++;
        ir_buf sh;
        ir_buf_init(&sh, m->a);
        ir_print_shape(&sh, k->f, dom);
        cugen_line(k, "/* part %d, over %s */", (int)p, sh.data);
    }
    const char *bid =
        nparts > 1 ? (p ? cugen_fmt(k, "(b - %s)", starts[p]) : "b") : "(I)blockIdx.x";
    const char *nblk = "(I)gridDim.x";
    if (nparts > 1) {
        const char *end = p + 1 < nparts ? starts[p + 1] : "(I)gridDim.x";
        nblk = p ? cugen_fmt(k, "(%s - %s)", end, starts[p]) : end;
    }
    cugen_line(k, "{");
    k->ind++;
    int w = cugen_flat_sweep(k, outs, nouts, NULL, 0, bid, nblk);
    k->ind--;
    cugen_line(k, "}");
    if (nparts > 1) k->ind--;
    *grid = flat_grid(k, w);
    cond->kind = CUDA_COND_AT_MOST;
    cond->size = grid->work;
    cond->value = CUDA_INDEX32_LIMIT - 1;
    return 0;
}

/* The launch's variants, and the kernel emitted: one body with 32-bit indexes over chunks of
 * the elements when a single part tracks no positions and has at most one size; else a
 * 32-bit variant (every part below 2^31 elements) and an _i64 one, from a template. */
static void elementwise_variants(cugen_kernel *k, cuda_launch *l, int32_t nparts, cuda_grid *grids,
                                 cuda_cond *conds) {
    cugen_module *m = k->m;
    cuda_variant *v = ir_arena_calloc(m->a, 2, sizeof(cuda_variant));
    /* (an index would need the chunk's start added: the template instead) */
    if (nparts == 1 && !k->flat_tracked && k->nsizes <= 1 && cugen_real_bufs(k) == k->nbufs) {
        /* one body: 32-bit indexes over chunks of the elements */
        v[0].name = cugen_global_name(k, "");
        v[0].nparts = 1;
        v[0].parts = grids;
        l->nvariants = 1;
        l->variants = v;
        v[0].name = cugen_emit_function(k, v[0].name, BLOCK, k->body.data ? k->body.data : "",
                                        CG_FN_CHUNKED);
        ir_buf_init(&k->body, m->a);
        return;
    }
    v[0].name = cugen_global_name(k, "");
    v[0].nconds = nparts;
    v[0].conds = conds;
    v[0].nparts = nparts;
    v[0].parts = grids;
    v[1] = v[0];
    v[1].name = cugen_global_name(k, "_i64");
    v[1].nconds = 0;
    v[1].conds = NULL;
    l->nvariants = 2;
    l->variants = v;
    v[0].name =
        cugen_emit_function(k, v[0].name, BLOCK, k->body.data ? k->body.data : "", CG_FN_TEMPLATE);
    v[1].name = cugen_fmt(k, "%s_i64", v[0].name);
    ir_buf_init(&k->body, m->a);
}

void cugen_gen_elementwise(cugen_kernel *k, cuda_launch *l) {
    cugen_module *m = k->m;
    const ir_kernel *kn = k->kn;
    int32_t nparts = kn->kind == IR_KERNEL_COMBINED ? kn->nparts : 1;
    cuda_grid *grids = ir_arena_calloc(m->a, (size_t)nparts, sizeof(cuda_grid));
    cuda_cond *conds = ir_arena_calloc(m->a, (size_t)nparts, sizeof(cuda_cond));
    int32_t *outs = ir_arena_calloc(m->a, (size_t)(k->nbufs ? k->nbufs : 1), sizeof(int32_t));
    const char **starts = ir_arena_calloc(m->a, (size_t)nparts + 1, sizeof(char *));
    k->index_template = 1;
    k->reduce_single = kn->kind != IR_KERNEL_POINTWISE && kn->kind != IR_KERNEL_COMBINED;

    if (nparts > 1) {
        cugen_line(k, "const I b = (I)blockIdx.x;");
        for (int32_t p = 1; p < nparts; p++)
            starts[p] =
                cugen_special_arg(k, CUDA_ARG_PART_BLOCK, p, cugen_fmt(k, "part%d_", (int)p), NULL);
    }
    for (int32_t p = 0; p < nparts; p++)
        if (elementwise_part(k, p, nparts, starts, outs, &grids[p], &conds[p])) return;
    if (nparts > 1) cugen_line(k, "}");

    l->what = kn->kind == IR_KERNEL_COMBINED    ? "combined"
              : kn->kind == IR_KERNEL_POINTWISE ? "pointwise"
                                                : "reduction of size-1 axes";
    l->max_block = BLOCK;
    elementwise_variants(k, l, nparts, grids, conds);
}
