/* codegen/cuda/cuda_reduce.c: reduction kernels.
 *
 * Every reduction kernel is planned the same way (plan_build): each reduction gets a sweep,
 * one more than the sweeps of the reductions it depends on; a sweep goes over the reduced
 * elements once and serves every reduction of its level; the values per result (per row,
 * per column) that depend on a sweep's reductions follow it; each per-element output is
 * written by the first sweep that can compute it, or by a last sweep. Threads combine their
 * partial accumulators in a fixed order (warp butterflies, then warps in order): results are
 * bit-identical run after run. A float sum, mean or product adds in the plan's order (docs/plan.md:
 * the CPU's bits); the other reductions are exact in any order.
 *
 * Row reductions (the reduced axes are the innermost): T threads own a row, T a power of two
 * from 1 to 1024 picked at launch from the row length (a warp or less per row for short rows,
 * a block per row for long ones). A kernel with a float sum, mean or product sums in the plan's
 * order ("rows in the plan's order" below: streamed, one variant); any other (max, min,
 * integers: exact in any order) takes one of three variants:
 *   cached  the row's inputs that several sweeps read, and the expensive values several
 *           sweeps need (softmax's exp), stay in registers: EPT elements a thread, EPT from a
 *           budget of 32 registers, so rows up to 1024 * EPT elements are read from memory
 *           once. Loads and stores move 16-byte vectors where the row allows.
 *   shared  the same for rows that take a whole block (over 512 * EPT elements), the cached
 *           values in dynamic shared memory instead: two blocks an SM at 32 registers, one
 *           loading while the other reduces.
 *   stream  any length: each sweep reads the row again (from L2 when it fits there). The only
 *           variant when nothing is read twice (a plain row sum reads each element once).
 * Column reductions (outer or middle axes reduced): a block owns 32 adjacent results and its
 * 8 warps split the reduced elements, so each load of a warp is 32 adjacent elements; later
 * sweeps read the columns again. With a float sum, mean or product, the warps take the plan's
 * lanes (column_sweep_ordered).
 * Full reductions: a grid-stride sweep writes one partial result per block, then one block
 * combines the partials in order and computes the scalar epilogue; with a float sum, mean or
 * product the sweep is an ordered row over every element ("full reductions in the plan's
 * order").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cuda_internal.h"

enum {
    ROW_MAX_T = 1024, /* threads per row at most (a block) */
    ROW_MIN_BLOCK = 256,
    ROW_BLOCKS_PER_SM = 8,
    CACHE_WORDS = 16, /* registers a thread spends on cached rows (64 in all at 1024 threads) */
    CACHE_EPT = 16,   /* elements a thread caches, at least, when that is possible */
    /* rows of a whole block cached in shared memory instead of registers: 32 registers a
     * thread, so that two blocks share an SM and one's loads overlap the other's reductions
     * (one 1024-thread block an SM, the row in 57 registers, ran softmax over rows of 16384
     * at 64% of the copy's bandwidth on an H100) */
    ROW_SHARED_BLOCKS = 2,
    /* bytes: a block's share on every GPU from sm_80 (99 KiB a block at least), two blocks an
     * SM on sm_80 and sm_90 (164 and 228 KiB an SM), one on sm_86 and sm_89 (100 KiB) */
    ROW_SHARED_MAX = 64 * 1024,
    STREAM_EPT = 16, /* elements per thread that size T for streamed rows */
    COL_W = 32,      /* results a column block owns */
    COL_H = 8,       /* warps that split the reduced elements */
    FULL_BLOCK = 256,
    /* a full reduction in the plan's order: 32 / w threads take a block of 1024 elements, so
     * 2^20 elements keep 8192 threads busy; blocks of 128 spread them over 64 SMs */
    FULL_ORDERED_BLOCK = 128,
};

typedef struct rplan {
    const ir_ref *reds;
    int32_t nreds;
    const int32_t *lev; /* per node: the sweep after which it can be computed (0: before any);
                           the plan's stage */
    int32_t nsweeps;    /* sweeps of reductions; a last one when `final_sweep` */
    int final_sweep;    /* per-element outputs wait for all reductions */
    int32_t *out_sweep; /* per buffer: the sweep that writes a per-element output */
    unsigned char *cached_node, *cached_buf;
    int32_t cache_words;
    int vec; /* the vector width of rows */
} rplan;

static int per_element(const cugen_kernel *k, ir_ref r) {
    return (k->var[r] & k->reduced) != 0;
}

static int row_linear(const cugen_kernel *k, int32_t b);

/* ---- planning -------------------------------------------------------------------------------- */

/* The targets of sweep s: operands of its reductions, and the outputs it writes. */
static int32_t sweep_targets(const cugen_kernel *k, const rplan *p, int32_t s, ir_ref *t) {
    int32_t n = 0;
    for (int32_t i = 0; i < p->nreds; i++)
        if (p->lev[p->reds[i]] == s) t[n++] = k->f->nodes[p->reds[i]].args[0];
    for (int32_t b = 0; b < k->nbufs; b++)
        if (k->bufs[b].output && p->out_sweep[b] == s) t[n++] = k->bufs[b].node;
    return n;
}

static void plan_mark(const cugen_kernel *k, ir_ref r, unsigned char *need, const int32_t *first,
                      int32_t s) {
    const ir_node *n = &k->f->nodes[r];
    if (need[r] || n->op == IR_OP_CONST || !per_element(k, r)) return;
    need[r] = 1;
    if (k->inbuf[r] >= 0) return;
    if (first[r] > 0 && first[r] < s) return; /* read from the cache */
    for (int a = 0; a < ir_ops[n->op].arity; a++)
        plan_mark(k, n->args[a], need, first, s);
}

/* For the cache set `cached`: sweeps[r] = the sweeps that compute node r (or read input r),
 * as a bit mask; first[r] = the first sweep that computes a cached node. */
static void plan_needs(const cugen_kernel *k, const rplan *p, const unsigned char *cached,
                       uint32_t *sweeps, int32_t *first) {
    int32_t nn = k->f->nnodes;
    unsigned char *need = ir_arena_alloc(k->m->a, (size_t)nn);
    ir_ref *t = ir_arena_calloc(k->m->a, (size_t)(p->nreds + k->nbufs + 1), sizeof(ir_ref));
    memset(sweeps, 0, sizeof(uint32_t) * (size_t)nn);
    memset(first, 0, sizeof(int32_t) * (size_t)nn);
    int32_t last = p->nsweeps + (p->final_sweep ? 1 : 0);
    for (int32_t s = 1; s <= last; s++) {
        memset(need, 0, (size_t)nn);
        int32_t nt = sweep_targets(k, p, s, t);
        for (int32_t i = 0; i < nt; i++)
            plan_mark(k, t[i], need, first, s);
        for (ir_ref r = 0; r < nn; r++) {
            if (!need[r]) continue;
            sweeps[r] |= 1u << s;
            if (cached && cached[r] && !first[r]) first[r] = s;
        }
    }
}

static int popcount(uint32_t x) {
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

static void plan_build(cugen_kernel *k, rplan *p, int with_cache) {
    cugen_module *m = k->m;
    const ir_func *f = k->f;
    int32_t nn = f->nnodes;
    memset(p, 0, sizeof *p);
    /* the levels are the plan's: a reduction's sweep is its stage */
    p->lev = k->plan->stage;
    p->reds = k->plan->reds;
    p->nreds = k->plan->nreds;
    p->nsweeps = k->plan->nsweeps;
    p->final_sweep = k->plan->final_sweep;
    p->out_sweep = ir_arena_calloc(m->a, (size_t)(k->nbufs + 1), sizeof(int32_t));
    p->cached_node = ir_arena_calloc(m->a, (size_t)nn, 1);
    p->cached_buf = ir_arena_calloc(m->a, (size_t)(k->nbufs + 1), 1);
    /* each per-element output: the first sweep that can compute it, else the last sweep */
    for (int32_t b = 0; b < k->nbufs; b++) {
        const cugen_buf *bf = &k->bufs[b];
        if (!bf->output || !k->in[bf->node] || !per_element(k, bf->node)) continue;
        p->out_sweep[b] = p->lev[bf->node] + 1;
    }
    if (!with_cache) return;

    /* cache the expensive values several sweeps compute, latest first (caching a later one
     * may spare an earlier one) */
    uint32_t *sweeps = ir_arena_calloc(m->a, (size_t)nn, sizeof(uint32_t));
    int32_t *first = ir_arena_calloc(m->a, (size_t)nn, sizeof(int32_t));
    for (int32_t i = k->to - 1; i >= k->from; i--) {
        ir_ref r = k->kn->body[i];
        if (!(ir_ops[f->nodes[r].op].flags & IR_OPF_EXPENSIVE) || !per_element(k, r)) continue;
        plan_needs(k, p, p->cached_node, sweeps, first);
        if (popcount(sweeps[r]) >= 2) p->cached_node[r] = 1;
    }
    plan_needs(k, p, p->cached_node, sweeps, first);
    for (ir_ref r = 0; r < nn; r++)
        if (p->cached_node[r] && popcount(sweeps[r]) < 2) p->cached_node[r] = 0;
    /* and the inputs that vary along rows and several sweeps read */
    for (int32_t b = 0; b < k->nbufs; b++) {
        const cugen_buf *bf = &k->bufs[b];
        if (bf->output || !per_element(k, bf->node) || !(bf->mask & ~k->reduced)) continue;
        if (!row_linear(k, b)) continue; /* (an index is computed, never cached) */
        if (popcount(sweeps[bf->node]) >= 2) p->cached_buf[b] = 1;
    }
    int32_t node_words = 0, buf_words = 0;
    for (ir_ref r = 0; r < nn; r++)
        if (p->cached_node[r]) node_words += cugen_ctype_words(f->nodes[r].dtype);
    for (int32_t b = 0; b < k->nbufs; b++)
        if (p->cached_buf[b]) buf_words += cugen_ctype_words(k->bufs[b].dtype);
    /* rows of CACHE_EPT * 1024 elements in registers beat sparing a recomputation: drop the
     * cached values when they would shorten the rows that fit */
    if (node_words && buf_words * CACHE_EPT <= CACHE_WORDS &&
        (buf_words + node_words) * CACHE_EPT > CACHE_WORDS) {
        memset(p->cached_node, 0, (size_t)nn);
        node_words = 0;
        plan_needs(k, p, p->cached_node, sweeps, first);
        for (int32_t b = 0; b < k->nbufs; b++) {
            const cugen_buf *bf = &k->bufs[b];
            if (bf->output || !per_element(k, bf->node) || !(bf->mask & ~k->reduced)) continue;
            if (row_linear(k, b) && popcount(sweeps[bf->node]) >= 2 && !p->cached_buf[b]) {
                p->cached_buf[b] = 1;
                buf_words += cugen_ctype_words(bf->dtype);
            }
        }
    }
    p->cache_words = node_words + buf_words;
}

/* ---- shared pieces ----------------------------------------------------------------------------
 */

static const char *acc_name(cugen_kernel *k, ir_ref r) {
    return cugen_fmt(k, "a%d", (int)r);
}

static void acc_init(cugen_kernel *k, const rplan *p, int32_t s) {
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        const char *t = cugen_ctype(k->f->nodes[r].dtype);
        cugen_line(k, "%s a%d = %s;", t, (int)r, cugen_red_init(k, r));
    }
}

static void acc_add(cugen_kernel *k, const rplan *p, int32_t s) {
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        const ir_node *n = &k->f->nodes[r];
        const char *x = cugen_operand(k, n->args[0]);
        if (k->f->nodes[n->args[0]].dtype != n->dtype)
            x = cugen_fmt(k, "(%s)%s", cugen_ctype(n->dtype), x);
        cugen_line(k, "a%d = %s;", (int)r, cugen_red_combine(k, r, acc_name(k, r), x));
    }
}

static void shared_decls(cugen_kernel *k, const rplan *p, const char *dims) {
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        cugen_line(k, "__shared__ %s red%d%s;", cugen_ctype(k->f->nodes[r].dtype), (int)r, dims);
    }
}

/* Butterfly over the lanes of groups of `width` lanes (an expression, a power of two <= 32). */
static void warp_combine(cugen_kernel *k, const rplan *p, int32_t s, const char *width) {
    cugen_use(k, CG_H_SHFL);
    cugen_line(k, "for (int o = %s >> 1; o > 0; o >>= 1) {", width);
    k->ind++;
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        const char *a = acc_name(k, r);
        /* the shuffle first, every lane: a combine that short-circuits (a bool max is
         * a || b) would leave lanes out of a full-mask shuffle */
        cugen_line(k, "const %s %s_o = fx_shfl_xor(%s, o);", cugen_ctype(k->f->nodes[r].dtype), a,
                   a);
        cugen_line(k, "%s = %s;", a, cugen_red_combine(k, r, a, cugen_fmt(k, "%s_o", a)));
    }
    k->ind--;
    cugen_line(k, "}");
}

/* Sets each reduction of sweep s to its finished value: const T v<r> = ... A stored f16 or
 * bf16 result that the kernel reads again is rounded first, as the reference holds it. */
static void acc_values(cugen_kernel *k, const rplan *p, int32_t s, const char *count) {
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        const ir_node *n = &k->f->nodes[r];
        const char *x = cugen_red_finish(k, r, acc_name(k, r), count);
        if (k->plan->round_kept[r]) {
            cugen_use(k, n->dtype == IR_F16 ? CG_H_F16 : CG_H_BF16);
            x = cugen_fmt(k, "%s(%s)", n->dtype == IR_F16 ? "fx_rnd_h" : "fx_rnd_b", x);
        }
        cugen_line(k, "const %s v%d = %s;", cugen_ctype(n->dtype), (int)r, x);
        cugen_set_val(k, r, cugen_fmt(k, "v%d", (int)r));
    }
}

/* Emits the per-result values of level s, then writes the per-result outputs that now have
 * values and are not written yet (guard: who writes, e.g. "lane == 0 && live"). */
static void per_result_stage(cugen_kernel *k, const rplan *p, int32_t s, unsigned char *written,
                             const char *guard, const char *o) {
    for (int32_t i = k->from; i < k->to; i++) {
        ir_ref r = k->kn->body[i];
        if (per_element(k, r) || p->lev[r] != s || k->val[r]) continue;
        if (ir_ops[k->f->nodes[r].op].cls == IR_CLASS_REDUCE) continue;
        cugen_emit_values(k, &r, 1);
    }
    for (int32_t b = 0; b < k->nbufs; b++) {
        const cugen_buf *bf = &k->bufs[b];
        if (!bf->output || written[b] || !k->in[bf->node] || per_element(k, bf->node)) continue;
        if (!k->val[bf->node]) continue;
        written[b] = 1;
        const char *st = cugen_fmt(k, "%s[%s] = %s;", bf->name, o ? o : "0",
                                   cugen_to_storage(k, bf->dtype, k->val[bf->node]));
        if (guard)
            cugen_line(k, "if (%s) %s", guard, st);
        else
            cugen_line(k, "%s", st);
    }
}

/* ---- rows ------------------------------------------------------------------------------------ */

/* Where the cached variants keep the row between sweeps. */
enum { ROW_STREAM, ROW_REGISTERS, ROW_SHARED };

typedef struct rowctx {
    const rplan *p;
    int cached;            /* the variant: ROW_STREAM, or where the row is cached */
    int elem;              /* in the element scope */
    const char *e;         /* the element index of the current lane (elem scope) */
    unsigned char *vecbuf; /* per buffer: loaded as a vector before the lanes */
} rowctx;

/* Buffers read or written along rows, at the row's offset plus the element index (indexes
 * are no memory: never vector loads). */
static int row_linear(const cugen_kernel *k, int32_t b) {
    return !k->bufs[b].computed && per_element(k, k->bufs[b].node) && cugen_reduced_linear(k, b);
}

/* An index's value at the current point of a reduction: the kept part of the offset, then the
 * reduced part at element index e. */
static const char *index_value(cugen_kernel *k, int b, const char *e) {
    const cugen_buf *bf = &k->bufs[b];
    const char *v = cugen_fmt(k, "v%d", (int)bf->node);
    const char *kept = (bf->mask & ~k->reduced) ? cugen_fmt(k, "o%d", (int)b) : "0";
    const char *red = e ? cugen_offset_reduced(k, b, e, "") : NULL;
    cugen_line(k, "const long long %s = (long long)(%s%s%s);", v, kept, red ? " + " : "",
               red ? red : "");
    return v;
}

static const char *row_base(cugen_kernel *k, int32_t b) {
    return (k->bufs[b].mask & ~k->reduced) ? cugen_fmt(k, "%s + o%d", k->bufs[b].name, (int)b)
                                           : k->bufs[b].name;
}

static const char *row_load(cugen_kernel *k, int b) {
    rowctx *c = k->ctx;
    const cugen_buf *bf = &k->bufs[b];
    const char *v = cugen_fmt(k, "v%d", (int)bf->node);
    const char *x;
    if (bf->computed) return index_value(k, b, c->elem ? c->e : NULL);
    /* (a full reduction's elements as one row: a value that varies along no reduced group,
     * a scalar, is read where its element needs it) */
    if (!c->elem || !(bf->mask & k->reduced)) {
        /* a value per row: the row's element, or nothing past the last row */
        const char *at = (bf->mask & ~k->reduced) ? cugen_fmt(k, "o%d", (int)b) : "0";
        x = cugen_fmt(k, "live ? %s : (%s)0",
                      cugen_from_storage(k, bf->dtype, cugen_fmt(k, "%s[%s]", bf->name, at)),
                      cugen_ctype(bf->dtype));
    } else if (c->cached && c->p->cached_buf[b]) {
        x = cugen_fmt(k, "cb%d[k][j]", (int)b);
    } else if (c->vecbuf[b]) {
        x = cugen_from_storage(k, bf->dtype, cugen_fmt(k, "u%d.v[j]", (int)b));
    } else {
        /* spans only some reduced groups: its offset by division (rare) */
        x = cugen_from_storage(
            k, bf->dtype,
            cugen_fmt(k, "(%s)[%s]", row_base(k, b), cugen_offset_reduced(k, b, c->e, "")));
    }
    cugen_line(k, "const %s %s = %s;", cugen_ctype(bf->dtype), v, x);
    return v;
}

/* Adds the element's operand of each reduction of sweep s to lane j of its lane array
 * (fmt names it from the node: "a%d[j]"). */
static void acc_add_lanes(cugen_kernel *k, const rplan *p, int32_t s, const char *fmt) {
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        const ir_node *n = &k->f->nodes[r];
        const char *x = cugen_operand(k, n->args[0]);
        if (k->f->nodes[n->args[0]].dtype != n->dtype)
            x = cugen_fmt(k, "(%s)%s", cugen_ctype(n->dtype), x);
        const char *a = cugen_fmt(k, fmt, (int)r);
        cugen_line(k, "%s = %s;", a, cugen_red_combine(k, r, a, x));
    }
}

/* The work of one chunk of a sweep at element index e: the vectors of the row's inputs it
 * reads, then each of its w elements (past the row's end: nothing) computed, accumulated into
 * acc (NULL: the reductions' own accumulators, "a<r>"; else a format for "acc[j]", as
 * "a%d[j]") and written, then the vectors of the outputs stored. Cached: the thread's chunk k
 * of whole vectors, cached values from registers or shared memory. */
static void row_chunk(cugen_kernel *k, const rplan *p, rowctx *c, int32_t s, const ir_ref *t,
                      int32_t nt, const char *acc) {
    cugen_module *m = k->m;
    int w = p->vec;
    int32_t mark = cugen_scope_mark(k);
    /* the cone of the sweep's targets, with cached values as leaves */
    if (c->cached)
        for (ir_ref r = 0; r < k->f->nnodes; r++)
            if (p->cached_node[r] && k->cache_first[r] && k->cache_first[r] < s)
                cugen_set_val(k, r, cugen_fmt(k, "cv%d[k][j]", (int)r));
    unsigned char *need = ir_arena_calloc(m->a, (size_t)k->f->nnodes, 1);
    cugen_need(k, t, nt, need);
    memset(c->vecbuf, 0, (size_t)(k->nbufs + 1));
    for (int32_t b = 0; b < k->nbufs; b++) {
        const cugen_buf *bf = &k->bufs[b];
        if (bf->output || !need[bf->node] || (c->cached && p->cached_buf[b])) continue;
        if (!row_linear(k, b)) continue;
        c->vecbuf[b] = 1;
        if (c->cached) {
            cugen_use(k, CG_H_TYPES);
            cugen_line(k, "const fx_vec<%s, %d> u%d = fx_ldv<%d>(%s + e);", cugen_stype(bf->dtype),
                       w, (int)b, w, row_base(k, b));
        } else {
            cugen_use(k, CG_H_LDVS);
            cugen_line(k, "const fx_vec<%s, %d> u%d = fx_ldvs<%d>(%s, e, n, vec);",
                       cugen_stype(bf->dtype), w, (int)b, w, row_base(k, b));
        }
    }
    for (int32_t b = 0; b < k->nbufs; b++)
        if (k->bufs[b].output && p->out_sweep[b] == s && row_linear(k, b))
            cugen_line(k, "fx_vec<%s, %d> s%d;", cugen_stype(k->bufs[b].dtype), w, (int)b);
    cugen_line(k, "#pragma unroll");
    cugen_line(k, "for (int j = 0; j < %d; j++) {", w);
    k->ind++;
    if (!c->cached) {
        cugen_line(k, "if (e + j < n) {");
        k->ind++;
    }
    int32_t mark2 = cugen_scope_mark(k);
    c->elem = 1;
    c->e = "e + j";
    cugen_emit_needed(k, need);
    if (c->cached)
        for (ir_ref r = 0; r < k->f->nnodes; r++)
            if (p->cached_node[r] && need[r] && k->cache_first[r] == s)
                cugen_line(k, "cv%d[k][j] = v%d;", (int)r, (int)r);
    if (acc)
        acc_add_lanes(k, p, s, acc);
    else
        acc_add(k, p, s);
    for (int32_t b = 0; b < k->nbufs; b++) {
        if (!k->bufs[b].output || p->out_sweep[b] != s) continue;
        const char *x = cugen_to_storage(k, k->bufs[b].dtype, cugen_operand(k, k->bufs[b].node));
        if (row_linear(k, b))
            cugen_line(k, "s%d.v[j] = %s;", (int)b, x);
        else /* kept groups between the reduced ones: element by element (rare) */
            cugen_line(k, "(%s)[%s] = %s;", row_base(k, b), cugen_offset_reduced(k, b, c->e, ""),
                       x);
    }
    c->elem = 0;
    cugen_scope_pop(k, mark2);
    if (!c->cached) {
        k->ind--;
        cugen_line(k, "}");
    }
    k->ind--;
    cugen_line(k, "}");
    for (int32_t b = 0; b < k->nbufs; b++) {
        if (!k->bufs[b].output || p->out_sweep[b] != s || !row_linear(k, b)) continue;
        if (c->cached) {
            cugen_line(k, "fx_stv<%d>(%s + e, s%d);", w, row_base(k, b), (int)b);
        } else {
            cugen_use(k, CG_H_LDVS);
            cugen_line(k, "fx_stvs<%d>(%s, e, n, vec, s%d);", w, row_base(k, b), (int)b);
        }
    }
    cugen_scope_pop(k, mark);
}

/* One sweep over the row. Cached: the K chunks of this thread unrolled, each a whole vector
 * (the launcher takes this variant only for aligned rows of whole vectors), values of the
 * cached inputs and nodes from registers. Streamed: a loop over the row with vector loads
 * where aligned, element by element otherwise. */
static void row_sweep(cugen_kernel *k, const rplan *p, rowctx *c, int32_t s, int K) {
    int w = p->vec;
    ir_ref *t = ir_arena_calloc(k->m->a, (size_t)(p->nreds + k->nbufs + 1), sizeof(ir_ref));
    int32_t nt = sweep_targets(k, p, s, t);
    cugen_line(k, "/* sweep %d */", (int)s);
    acc_init(k, p, s);
    if (c->cached) {
        cugen_line(k, "#pragma unroll");
        cugen_line(k, "for (int k = 0; k < %d; k++) {", K);
        k->ind++;
        cugen_line(k, "const int e = (k * T + lane) * %d;", w);
        cugen_line(k, "if (e < n) {");
    } else {
        cugen_line(k, "for (long long e = (long long)lane * %d; e < n; e += (long long)T * %d) {",
                   w, w);
    }
    k->ind++;
    row_chunk(k, p, c, s, t, nt, NULL);
    k->ind--;
    cugen_line(k, "}");
    if (c->cached) {
        k->ind--;
        cugen_line(k, "}");
    }
}

/* Combines the accumulators of sweep s across the T threads of each row. */
static void row_combine(cugen_kernel *k, const rplan *p, int32_t s) {
    int any = 0;
    for (int32_t i = 0; i < p->nreds; i++)
        any |= p->lev[p->reds[i]] == s;
    if (!any) return;
    warp_combine(k, p, s, "(T < 32 ? T : 32)");
    cugen_line(k, "if (T > 32) {");
    k->ind++;
    cugen_line(k, "/* the row's warps, in order */");
    for (int32_t i = 0; i < p->nreds; i++)
        if (p->lev[p->reds[i]] == s)
            cugen_line(k, "if ((threadIdx.x & 31) == 0) red%d[threadIdx.x >> 5] = a%d;",
                       (int)p->reds[i], (int)p->reds[i]);
    cugen_line(k, "__syncthreads();");
    cugen_line(k, "const int w0 = (int)(threadIdx.x / T) * (T >> 5);");
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        cugen_line(k, "a%d = red%d[w0];", (int)r, (int)r);
    }
    cugen_line(k, "for (int w = 1; w < (T >> 5); w++) {");
    k->ind++;
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        cugen_line(k, "a%d = %s;", (int)r,
                   cugen_red_combine(k, r, acc_name(k, r), cugen_fmt(k, "red%d[w0 + w]", (int)r)));
    }
    k->ind--;
    cugen_line(k, "}");
    cugen_line(k, "__syncthreads(); /* before the next row reuses the slots */");
    k->ind--;
    cugen_line(k, "}");
}

/* ---- rows in the plan's order (docs/plan.md, "The order of a reduction") -----------------
 *
 * A float sum, mean or product gives the CPU's bits only if it adds in the plan's order: element
 * f to lane f % 32 of block f / 1024, each lane in index order, the lanes by halves, the blocks
 * by the aligned binary tree. Here G = 32 / w threads hold a block (w: the vector width), thread
 * gp of them its lanes gp * w .. gp * w + w - 1, loaded as one vector a row of 32 (m): 32
 * vectors a block, each lane in index order. The halves are xor shuffles among the G threads,
 * then within the thread's vector: every thread of the group ends with the block's value. The T
 * threads of a row are T / G groups; group g takes the P blocks from g * P (P the power of two
 * that covers the row), combined by a binary counter, which makes them an aligned subtree (the
 * blocks past the row's end hold the identity, which changes no sum: no accumulator is ever
 * -0); the groups by xor shuffles (g with g ^ 1, then g ^ 2: the aligned tree) and the row's
 * warps through shared memory the same way. Every thread of the row ends with the value. */

/* Whether the kernel reduces in an order-sensitive way: a float sum, mean or product. */
static int row_needs_order(const cugen_kernel *k, const rplan *p) {
    for (int32_t i = 0; i < p->nreds; i++) {
        const ir_node *n = &k->f->nodes[p->reds[i]];
        cugen_cclass c = cugen_class_of(n->dtype);
        if ((n->op == IR_OP_SUM || n->op == IR_OP_MEAN || n->op == IR_OP_PROD) &&
            (c == CG_CC_FLOAT || c == CG_CC_DOUBLE))
            return 1;
    }
    return 0;
}

/* For each reduction r of sweep s the line "<lhs> = <rhs>;" with both printed from r: the
 * forms below. */
enum {
    SET_LANE0_FROM_LEVEL,
    SET_LEVEL_FROM_LANE0,
    SET_ACC_FROM_LANE0,
    SET_ACC_FROM_TOP,
    SET_ACC_FROM_WARPS
};
static void each_red(cugen_kernel *k, const rplan *p, int32_t s, int form) {
    for (int32_t i = 0; i < p->nreds; i++) {
        int r = (int)p->reds[i];
        if (p->lev[r] != s) continue;
        switch (form) {
        case SET_LANE0_FROM_LEVEL:
            cugen_line(
                k, "a%dl[0] = %s;", r,
                cugen_red_combine(k, r, cugen_fmt(k, "a%dt[q]", r), cugen_fmt(k, "a%dl[0]", r)));
            break;
        case SET_LEVEL_FROM_LANE0: cugen_line(k, "a%dt[q] = a%dl[0];", r, r); break;
        case SET_ACC_FROM_LANE0: cugen_line(k, "    a%d = a%dl[0];", r, r); break;
        case SET_ACC_FROM_TOP: cugen_line(k, "    a%d = a%dt[lp];", r, r); break;
        default:
            cugen_line(k, "a%d = red%d[w0 + (int)(threadIdx.x & 31 & ((T >> 5) - 1))];", r, r);
            break;
        }
    }
}

/* a<r> combined with its value o lanes away, for each reduction r of sweep s */
static void each_red_xor(cugen_kernel *k, const rplan *p, int32_t s) {
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        cugen_line(k, "const %s x%d = fx_shfl_xor(a%d, o);", cugen_ctype(k->f->nodes[r].dtype),
                   (int)r, (int)r);
        cugen_line(k, "a%d = %s;", (int)r,
                   cugen_red_combine(k, r, acc_name(k, r), cugen_fmt(k, "x%d", (int)r)));
    }
}

/* Whether a row's buffers allow 16-byte vectors: `base` (whole vectors a row), and every
 * buffer that moves along the row aligned for vectors of w. */
static const char *row_vec_cond(cugen_kernel *k, const rplan *p, int w, const char *base) {
    const char *vc = base;
    for (int32_t b = 0; b < k->nbufs; b++) {
        if (!cugen_buf_used(k, b) || !row_linear(k, b)) continue;
        if (k->bufs[b].output && !p->out_sweep[b]) continue;
        cugen_use(k, CG_H_TYPES);
        vc = cugen_fmt(k, "%s && fx_vec_ok<%d>(%s)", vc, w, k->bufs[b].name);
    }
    return vc;
}

/* The loop over a block's rows, opened: the thread's row, whether it is live, its live
 * elements n (of type ntype) and each buffer's offset of the row; the scope mark to pop. */
static int32_t row_loop_begin(cugen_kernel *k, const char *rows, const char *ntype) {
    uint32_t kept = ((1u << k->ngroups) - 1) & ~k->reduced;
    cugen_line(k,
               "for (long long row0 = (long long)blockIdx.x * rpb; row0 < %s; row0 += "
               "(long long)gridDim.x * rpb) {",
               rows);
    k->ind++;
    int32_t mark = cugen_scope_mark(k);
    cugen_line(k, "const long long row = row0 + (long long)(threadIdx.x / T);");
    cugen_line(k, "const bool live = row < %s;", rows);
    cugen_line(k, "const %s n = live ? L : 0; /* this thread's row's live elements */", ntype);
    for (int32_t b = 0; b < k->nbufs; b++)
        if (cugen_buf_used(k, b) && (k->bufs[b].mask & kept))
            cugen_line(k, "const long long o%d = %s; /* the row in %s */", (int)b,
                       cugen_offset_kept(k, b, "row", ""), k->bufs[b].name);
    return mark;
}

/* Sweep s in the order: its accumulators to every thread of the row. The row's element 0 at
 * origin (an expression and " + ", or ""). */
/* The end of block i of a group's P: the block's lanes by halves (xor shuffles among the
 * group's threads, then within the thread's vector), then the block into the binary counter. */
static void row_block_end(cugen_kernel *k, const rplan *p, int32_t s, int w) {
    cugen_use(k, CG_H_SHFL);
    cugen_line(k, "/* the block's lanes by halves: 16 .. w apart among the group's threads, ");
    cugen_line(k, "   then within the thread's vector */");
    cugen_line(k, "for (int o = %d; o > 0; o >>= 1) {", 16 / w);
    k->ind++;
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        cugen_line(k, "#pragma unroll");
        cugen_line(k, "for (int j = 0; j < %d; j++) {", w);
        cugen_line(k, "    const %s x = fx_shfl_xor(a%dl[j], o);",
                   cugen_ctype(k->f->nodes[r].dtype), (int)r);
        cugen_line(k, "    a%dl[j] = %s;", (int)r,
                   cugen_red_combine(k, r, cugen_fmt(k, "a%dl[j]", (int)r), "x"));
        cugen_line(k, "}");
    }
    k->ind--;
    cugen_line(k, "}");
    for (int h = w / 2; h > 0; h /= 2)
        for (int32_t i = 0; i < p->nreds; i++) {
            ir_ref r = p->reds[i];
            if (p->lev[r] != s) continue;
            for (int j = 0; j < h; j++)
                cugen_line(k, "a%dl[%d] = %s;", (int)r, j,
                           cugen_red_combine(k, r, cugen_fmt(k, "a%dl[%d]", (int)r, j),
                                             cugen_fmt(k, "a%dl[%d]", (int)r, j + h)));
        }
    cugen_line(k, "/* block i of the group's P: the binary counter over them (in local memory:");
    cugen_line(k, "   rows of more than 128 blocks only) */");
    cugen_line(k, "if (P == 1) {");
    each_red(k, p, s, SET_ACC_FROM_LANE0);
    cugen_line(k, "} else {");
    k->ind++;
    cugen_line(k, "int q = 0;");
    cugen_line(k, "for (long long bi = i; bi & 1; bi >>= 1, q++) {");
    k->ind++;
    each_red(k, p, s, SET_LANE0_FROM_LEVEL);
    k->ind--;
    cugen_line(k, "}");
    each_red(k, p, s, SET_LEVEL_FROM_LANE0);
    k->ind--;
    cugen_line(k, "}");
}

/* The groups' values combined to every thread of the row: the groups of a warp by xor
 * shuffles (g with g ^ 1, then g ^ 2: the aligned tree), the row's warps the same way through
 * shared memory. */
static void row_groups_combine(cugen_kernel *k, const rplan *p, int32_t s) {
    cugen_line(k, "if (P > 1) {");
    each_red(k, p, s, SET_ACC_FROM_TOP);
    cugen_line(k, "}");
    cugen_line(k, "/* the groups of the row's warp: g with g ^ 1, then g ^ 2, ... */");
    cugen_line(k, "for (int o = G; o < (T < 32 ? T : 32); o <<= 1) {");
    k->ind++;
    each_red_xor(k, p, s);
    k->ind--;
    cugen_line(k, "}");
    cugen_line(k, "if (T > 32) {");
    k->ind++;
    cugen_line(k, "/* the row's warps: the same tree, through shared memory */");
    for (int32_t i = 0; i < p->nreds; i++)
        if (p->lev[p->reds[i]] == s)
            cugen_line(k, "if ((threadIdx.x & 31) == 0) red%d[threadIdx.x >> 5] = a%d;",
                       (int)p->reds[i], (int)p->reds[i]);
    cugen_line(k, "__syncthreads();");
    cugen_line(k, "const int w0 = (int)(threadIdx.x / T) * (T >> 5);");
    each_red(k, p, s, SET_ACC_FROM_WARPS);
    cugen_line(k, "for (int o = 1; o < (T >> 5); o <<= 1) {");
    k->ind++;
    each_red_xor(k, p, s);
    k->ind--;
    cugen_line(k, "}");
    cugen_line(k, "__syncthreads(); /* before the next row reuses the slots */");
    k->ind--;
    cugen_line(k, "}");
}

static void row_sweep_ordered(cugen_kernel *k, const rplan *p, rowctx *c, int32_t s,
                              const char *origin) {
    int w = p->vec;
    ir_ref *t = ir_arena_calloc(k->m->a, (size_t)(p->nreds + k->nbufs + 1), sizeof(ir_ref));
    int32_t nt = sweep_targets(k, p, s, t);
    int any = 0;
    for (int32_t i = 0; i < p->nreds; i++)
        any |= p->lev[p->reds[i]] == s;
    cugen_line(k, "/* sweep %d, in the plan's order */", (int)s);
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        /* the finished subtrees of the binary counter, level by level */
        cugen_line(k, "%s a%d, a%dt[40];", cugen_ctype(k->f->nodes[r].dtype), (int)r, (int)r);
    }
    cugen_line(k, "for (long long i = 0; i < P; i++) {");
    k->ind++;
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        const char *id = cugen_red_init(k, r);
        cugen_line(k, "%s a%dl[%d];", cugen_ctype(k->f->nodes[r].dtype), (int)r, w);
        cugen_line(k, "#pragma unroll");
        cugen_line(k, "for (int j = 0; j < %d; j++) a%dl[j] = %s;", w, (int)r, id);
    }
    cugen_line(k, "const long long e0 = %s(grp * P + i) * 1024 + gp * %d;", origin, w);
    cugen_line(k, "for (int m = 0; m < 32; m++) {");
    k->ind++;
    cugen_line(k, "const long long e = e0 + m * 32;");
    row_chunk(k, p, c, s, t, nt, "a%dl[j]");
    k->ind--;
    cugen_line(k, "}");
    if (any) row_block_end(k, p, s, w);
    k->ind--;
    cugen_line(k, "}");
    if (any) row_groups_combine(k, p, s);
}

static void gen_row_ordered(cugen_kernel *k, const rplan *p) {
    cugen_module *m = k->m;
    int w = p->vec;
    uint32_t kept = ((1u << k->ngroups) - 1) & ~k->reduced;
    rowctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.cached = ROW_STREAM;
    c.vecbuf = ir_arena_calloc(m->a, (size_t)(k->nbufs + 1), 1);
    k->ctx = &c;
    k->load = row_load;
    const char *rows = cugen_size_expr(k, cugen_groups_extent(k, kept), "rows");
    const char *len = cugen_size_expr(k, cugen_groups_extent(k, k->reduced), "len");
    const char *tpr = cugen_special_arg(k, CUDA_ARG_ROW_THREADS, 0, "tpr_", NULL);
    cugen_line(k,
               "/* T threads a row (a power of two, G at least), blockDim.x / T rows a block; G");
    cugen_line(k, "   threads a block of 1024 elements, %d lanes each */", w);
    cugen_line(k, "const int T = (int)%s;", tpr);
    cugen_line(k, "const int G = %d;", 32 / w);
    cugen_line(k, "const int lane = (int)threadIdx.x & (T - 1);");
    cugen_line(k, "const long long grp = lane / G;");
    cugen_line(k, "const int gp = lane & (G - 1);");
    cugen_line(k, "const long long rpb = (long long)(blockDim.x / T);");
    cugen_line(k, "const long long L = %s;", len);
    cugen_line(k, "/* P blocks a group: the power of two that covers the row */");
    cugen_line(k, "long long P = 1;");
    cugen_line(k, "int lp = 0;");
    cugen_line(k, "while (P * (T / G) * 1024 < L) P *= 2, lp++;");
    shared_decls(k, p, "[32]");
    cugen_line(k, "const bool vec = %s;", row_vec_cond(k, p, w, cugen_fmt(k, "L %% %d == 0", w)));
    int32_t mark = row_loop_begin(k, rows, "long long");
    unsigned char *written = ir_arena_calloc(m->a, (size_t)(k->nbufs + 1), 1);
    per_result_stage(k, p, 0, written, "lane == 0 && live", "row");
    int32_t last = p->nsweeps + (p->final_sweep ? 1 : 0);
    for (int32_t s = 1; s <= last; s++) {
        row_sweep_ordered(k, p, &c, s, "");
        if (s > p->nsweeps) break;
        acc_values(k, p, s, "L");
        per_result_stage(k, p, s, written, "lane == 0 && live", "row");
    }
    cugen_scope_pop(k, mark);
    k->ind--;
    cugen_line(k, "}");
    k->ctx = NULL;
}

/* The bytes a block of the shared-memory variant holds its row in: every cached value of
 * ROW_MAX_T threads, ept elements each (the launch's dynamic shared memory). */
static int32_t row_shared_bytes(const rplan *p, int ept) {
    return ROW_MAX_T * ept * p->cache_words * 4;
}

/* The cached values' arrays, each read as NAME[k][j] (chunk k of the thread's K, element j of
 * its vector of w). In registers: an array a thread. In shared memory (the block is one row of
 * ROW_MAX_T threads, which the variant's condition guarantees): chunk k of every thread side
 * by side, so that a warp's vector accesses are adjacent (no bank conflicts), NAME a pointer
 * to arrays of ROW_MAX_T * w elements offset by the thread's vector. */
static void row_cache_decls(cugen_kernel *k, const rplan *p, int cached, int K, int w) {
    int32_t nn = k->f->nnodes, off = 0;
    if (cached == ROW_SHARED) {
        cugen_line(k, "/* the row in dynamic shared memory */");
        cugen_line(k, "#ifdef __CUDA_ARCH__");
        cugen_line(k, "extern __shared__ __align__(16) unsigned char fx_row[];");
        cugen_line(k, "#else");
        cugen_line(k, "static unsigned char fx_row[%d] __attribute__((aligned(16)));",
                   row_shared_bytes(p, K * w));
        cugen_line(k, "#endif");
    }
    for (int32_t i = 0; i < nn + k->nbufs; i++) {
        int node = i < nn;
        if (node ? !p->cached_node[i] : !p->cached_buf[i - nn]) continue;
        ir_dtype t = node ? k->f->nodes[i].dtype : k->bufs[i - nn].dtype;
        const char *name = cugen_fmt(k, "%s%d", node ? "cv" : "cb", (int)(node ? i : i - nn));
        if (cached == ROW_REGISTERS) {
            cugen_line(k, "%s %s[%d][%d];", cugen_ctype(t), name, K, w);
            continue;
        }
        cugen_line(k, "%s (*const %s)[%d] = (%s (*)[%d])((%s *)(fx_row + %d) + threadIdx.x * %d);",
                   cugen_ctype(t), name, ROW_MAX_T * w, cugen_ctype(t), ROW_MAX_T * w,
                   cugen_ctype(t), off, w);
        off += ROW_MAX_T * K * w * cugen_ctype_words(t) * 4;
    }
}

static void gen_row_variant(cugen_kernel *k, const rplan *p, int cached, int ept) {
    cugen_module *m = k->m;
    int w = p->vec, K = ept / w;
    uint32_t kept = ((1u << k->ngroups) - 1) & ~k->reduced;
    rowctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.cached = cached;
    c.vecbuf = ir_arena_calloc(m->a, (size_t)(k->nbufs + 1), 1);
    k->ctx = &c;
    k->load = row_load;
    const char *rows = cugen_size_expr(k, cugen_groups_extent(k, kept), "rows");
    const char *len = cugen_size_expr(k, cugen_groups_extent(k, k->reduced), "len");
    const char *tpr = cugen_special_arg(k, CUDA_ARG_ROW_THREADS, 0, "tpr_", NULL);

    cugen_line(k, "/* T threads a row (a power of two), blockDim.x / T rows a block */");
    cugen_line(k, "const int T = (int)%s;", tpr);
    cugen_line(k, "const int lane = (int)threadIdx.x & (T - 1);");
    cugen_line(k, "const long long rpb = (long long)(blockDim.x / T);");
    if (cached)
        cugen_line(k,
                   "/* rows of at most %d elements, aligned vectors of %d: the row fits the "
                   "%s */",
                   ROW_MAX_T * ept, w, cached == ROW_SHARED ? "shared memory" : "registers");
    cugen_line(k, "const %s L = %s;", cached ? "int" : "long long",
               cached ? cugen_fmt(k, "(int)%s", len) : len);
    shared_decls(k, p, "[32]");
    if (!cached) {
        /* vectors where every buffer along the row is aligned and rows hold whole vectors */
        cugen_line(k, "const bool vec = %s;",
                   row_vec_cond(k, p, w, cugen_fmt(k, "L %% %d == 0", w)));
    }
    int32_t mark = row_loop_begin(k, rows, cached ? "int" : "long long");
    unsigned char *written = ir_arena_calloc(m->a, (size_t)(k->nbufs + 1), 1);
    per_result_stage(k, p, 0, written, "lane == 0 && live", "row");

    if (cached) {
        row_cache_decls(k, p, cached, K, w);
        for (int32_t b = 0; b < k->nbufs; b++) {
            if (!p->cached_buf[b]) continue;
            const cugen_buf *bf = &k->bufs[b];
            cugen_use(k, CG_H_TYPES);
            cugen_line(k, "#pragma unroll");
            cugen_line(k, "for (int k = 0; k < %d; k++) {", K);
            k->ind++;
            cugen_line(k, "const int e = (k * T + lane) * %d;", w);
            cugen_line(k, "fx_vec<%s, %d> t = {};", cugen_stype(bf->dtype), w);
            cugen_line(k, "if (e < n) t = fx_ldv<%d>(%s + e);", w, row_base(k, b));
            cugen_line(k, "#pragma unroll");
            cugen_line(k, "for (int j = 0; j < %d; j++) cb%d[k][j] = %s;", w, (int)b,
                       cugen_from_storage(k, bf->dtype, "t.v[j]"));
            k->ind--;
            cugen_line(k, "}");
        }
    }
    int32_t last = p->nsweeps + (p->final_sweep ? 1 : 0);
    for (int32_t s = 1; s <= last; s++) {
        row_sweep(k, p, &c, s, K);
        if (s > p->nsweeps) break;
        row_combine(k, p, s);
        acc_values(k, p, s, "L");
        per_result_stage(k, p, s, written, "lane == 0 && live", "row");
    }
    cugen_scope_pop(k, mark);
    k->ind--;
    cugen_line(k, "}");
    k->ctx = NULL;
}

/* The conditions of a cached variant: rows that fit, of whole vectors, every row buffer
 * aligned; in shared memory, rows that need a whole block too (so T = ROW_MAX_T, the block is
 * the row, which its arrays' layout assumes: row_cache_decls). */
static void row_cached_conds(cugen_kernel *k, const rplan *p, cuda_variant *v, cuda_size len,
                             int ept, int shared) {
    cuda_cond *c = ir_arena_calloc(k->m->a, (size_t)(k->nbufs + 3), sizeof(cuda_cond));
    int32_t nc = 0;
    if (shared) {
        c[nc].kind = CUDA_COND_AT_LEAST;
        c[nc].size = len;
        c[nc++].value = (int64_t)ROW_MAX_T / 2 * ept + 1;
    }
    c[nc].kind = CUDA_COND_AT_MOST;
    c[nc].size = len;
    c[nc++].value = (int64_t)ROW_MAX_T * ept;
    c[nc].kind = CUDA_COND_MULTIPLE;
    c[nc].size = len;
    c[nc++].value = p->vec;
    for (int32_t b = 0; b < k->nbufs; b++) {
        if (!cugen_buf_used(k, b) || !row_linear(k, b)) continue;
        c[nc].kind = CUDA_COND_ALIGNED;
        c[nc].arg = b; /* buffers are the first arguments */
        c[nc++].value = (int64_t)p->vec * ir_dtypes[k->bufs[b].dtype].bytes;
    }
    v->nconds = nc;
    v->conds = c;
}

/* The launch of a row kernel in the plan's order: one variant, G threads a row at least, one
 * for each 32 * w elements (a block's) up to a block of ROW_MAX_T. */
static void gen_row_order_launch(cugen_kernel *k, cuda_launch *l, const rplan *p, cuda_size rows,
                                 cuda_size len) {
    cugen_module *m = k->m;
    gen_row_ordered(k, p);
    const char *body = k->body.data ? k->body.data : "";
    ir_buf_init(&k->body, m->a);
    cuda_variant *v = ir_arena_calloc(m->a, 1, sizeof(cuda_variant));
    cuda_grid *g = ir_arena_calloc(m->a, 1, sizeof(cuda_grid));
    g->kind = CUDA_GRID_ROWS;
    g->work = rows;
    g->row_len = len;
    g->per_thread = 32 * p->vec;
    g->row_min_t = 32 / p->vec;
    g->block = ROW_MIN_BLOCK;
    g->blocks_per_sm = ROW_BLOCKS_PER_SM;
    v->nparts = 1;
    v->parts = g;
    v->name = cugen_emit_function(k, cugen_global_name(k, ""), ROW_MAX_T, body, CG_FN_PLAIN);
    l->what = "row-reduction";
    l->nvariants = 1;
    l->variants = v;
    l->max_block = ROW_MAX_T;
}

/* The vector width of a row (or of a full reduction's elements): 16 bytes of the widest buffer
 * that moves along it, 8 elements at most. */
static int full_vec(cugen_kernel *k) {
    int maxbytes = 1;
    for (int32_t b = 0; b < k->nbufs; b++)
        if (cugen_buf_used(k, b) && row_linear(k, b) &&
            ir_dtypes[k->bufs[b].dtype].bytes > maxbytes)
            maxbytes = ir_dtypes[k->bufs[b].dtype].bytes;
    return 16 / maxbytes > 8 ? 8 : 16 / maxbytes;
}

void cugen_gen_row(cugen_kernel *k, cuda_launch *l) {
    cugen_module *m = k->m;
    rplan p;
    plan_build(k, &p, 1);
    if (m->fail.failed) return;
    p.vec = full_vec(k);
    /* elements a thread caches: the register budget over the cached values, a power of two */
    int ept = 0;
    if (p.cache_words > 0) {
        ept = 1;
        while (ept * 2 * p.cache_words <= CACHE_WORDS && ept < 32)
            ept *= 2;
        if (ept < p.vec) ept = p.vec;
    }
    cuda_size rows = cugen_groups_extent(k, ((1u << k->ngroups) - 1) & ~k->reduced);
    cuda_size len = cugen_groups_extent(k, k->reduced);
    if (row_needs_order(k, &p)) {
        /* FUSEC_CUDA_ROW_LANES=1 or 2: fewer lanes a thread, so more threads a row (32 / w a
         * block of 1024 elements): an experiment for the GPU check (a row of 1024 f32 has 8
         * threads by default; bench/RESULTS.md, "GPU: NVIDIA H200, 2026-11-28"). The source,
         * and so the kernel cache's key, changes with it; the bits do not (the plan's order) */
        const char *w = getenv("FUSEC_CUDA_ROW_LANES");
        if (w && (w[0] == '1' || w[0] == '2') && !w[1] && w[0] - '0' < p.vec) p.vec = w[0] - '0';
        gen_row_order_launch(k, l, &p, rows, len);
        return;
    }

    /* every body first: the signature holds every size any needs. The variants, first fit
     * first: the row in shared memory (rows that need a whole block), in registers, streamed */
    enum { NV = 3 };
    static const int where[NV] = {ROW_SHARED, ROW_REGISTERS, ROW_STREAM};
    int32_t smem = row_shared_bytes(&p, ept);
    const char *body[NV] = {0};
    k->cache_first = ir_arena_calloc(m->a, (size_t)k->f->nnodes, sizeof(int32_t));
    if (ept) {
        uint32_t *sweeps = ir_arena_calloc(m->a, (size_t)k->f->nnodes, sizeof(uint32_t));
        plan_needs(k, &p, p.cached_node, sweeps, k->cache_first);
        for (int i = 0; i < 2; i++) {
            if (where[i] == ROW_SHARED && smem > ROW_SHARED_MAX) continue;
            gen_row_variant(k, &p, where[i], ept);
            body[i] = k->body.data ? k->body.data : "";
            ir_buf_init(&k->body, m->a);
        }
    }
    memset(k->cache_first, 0, sizeof(int32_t) * (size_t)k->f->nnodes);
    gen_row_variant(k, &p, ROW_STREAM, STREAM_EPT);
    body[2] = k->body.data ? k->body.data : "";
    ir_buf_init(&k->body, m->a);

    cuda_variant *v = ir_arena_calloc(m->a, NV, sizeof(cuda_variant));
    cuda_grid *g = ir_arena_calloc(m->a, NV, sizeof(cuda_grid));
    int nv = 0;
    for (int i = 0; i < NV; i++) {
        if (!body[i]) continue;
        cuda_variant *vi = &v[nv];
        cuda_grid *gi = &g[nv++];
        gi->kind = CUDA_GRID_ROWS;
        gi->work = rows;
        gi->row_len = len;
        gi->per_thread = where[i] == ROW_STREAM ? STREAM_EPT : ept;
        gi->block = ROW_MIN_BLOCK;
        gi->blocks_per_sm = where[i] == ROW_SHARED ? ROW_SHARED_BLOCKS : ROW_BLOCKS_PER_SM;
        vi->nparts = 1;
        vi->parts = gi;
        static const char *const suffix[NV] = {"_shared", "", "_stream"};
        if (where[i] != ROW_STREAM) row_cached_conds(k, &p, vi, len, ept, where[i] == ROW_SHARED);
        if (where[i] == ROW_SHARED) vi->smem_bytes = smem;
        k->min_blocks = where[i] == ROW_SHARED ? ROW_SHARED_BLOCKS : 0;
        vi->name = cugen_emit_function(k, cugen_global_name(k, suffix[i]), ROW_MAX_T, body[i],
                                       CG_FN_PLAIN);
        k->min_blocks = 0;
    }
    l->what = "row-reduction";
    l->nvariants = nv;
    l->variants = v;
    l->max_block = ROW_MAX_T;
}

/* ---- columns ------------------------------------------------------------------------------------
 */

typedef struct colctx {
    int elem;
} colctx;

static const char *col_load(cugen_kernel *k, int b) {
    colctx *c = k->ctx;
    const cugen_buf *bf = &k->bufs[b];
    if (bf->computed) return index_value(k, b, c->elem ? "e" : NULL);
    const char *v = cugen_fmt(k, "v%d", (int)bf->node);
    const char *base = (bf->mask & ~k->reduced) ? cugen_fmt(k, "o%d", (int)b) : "0";
    const char *x;
    if (!c->elem) {
        x = cugen_fmt(k, "live ? %s : (%s)0",
                      cugen_from_storage(k, bf->dtype, cugen_fmt(k, "%s[%s]", bf->name, base)),
                      cugen_ctype(bf->dtype));
    } else {
        const char *ro = cugen_offset_reduced(k, b, "e", "");
        x = cugen_from_storage(
            k, bf->dtype,
            cugen_fmt(k, "%s[%s%s%s]", bf->name, base, ro ? " + " : "", ro ? ro : ""));
    }
    cugen_line(k, "const %s %s = %s;", cugen_ctype(bf->dtype), v, x);
    return v;
}

/* The body of a column sweep at reduced element e: the values, the accumulation (acc: as in
 * row_chunk), the per-element outputs. */
static void column_element(cugen_kernel *k, const rplan *p, colctx *c, int32_t s, const ir_ref *t,
                           int32_t nt, const char *acc) {
    uint32_t kept = ((1u << k->ngroups) - 1) & ~k->reduced;
    int32_t mark2 = cugen_scope_mark(k);
    c->elem = 1;
    cugen_emit_values(k, t, nt);
    if (acc)
        acc_add_lanes(k, p, s, acc);
    else
        acc_add(k, p, s);
    for (int32_t b = 0; b < k->nbufs; b++) {
        const cugen_buf *bf = &k->bufs[b];
        if (!bf->output || p->out_sweep[b] != s) continue;
        const char *ro = cugen_offset_reduced(k, b, "e", "");
        cugen_line(k, "%s[%s%s%s] = %s;", bf->name,
                   (bf->mask & kept) ? cugen_fmt(k, "o%d", (int)b) : "0", ro ? " + " : "",
                   ro ? ro : "", cugen_to_storage(k, bf->dtype, cugen_operand(k, bf->node)));
    }
    c->elem = 0;
    cugen_scope_pop(k, mark2);
}

/* Sweep s of a column block in the plan's order over the reduced elements [from, to) (`to` the
 * same for every thread of the block: the loop holds barriers; a thread's own elements end at
 * n): blocks of 1024 elements in order, thread ty the lanes ty + 8j (j < 4) of its column,
 * each in index order (element b0 + 32m + 8j + ty: a warp reads 32 adjacent columns); the
 * lanes by halves, within the thread (j with j + 2, then j + 1) and then across the 8 warps in
 * shared memory (ty with ty + 4, + 2, + 1); thread ty == 0 counts the blocks in a binary
 * counter and folds its pending subtrees at the end (the aligned tree, the missing blocks the
 * identity); every thread ends with the value. */
/* The end of a column's block of 1024: the lanes by halves, in the thread (j with j + 2, then
 * j + 1) and across the 8 warps in shared memory (ty with ty + 4, + 2, + 1); thread ty == 0
 * adds the block to its binary counter. */
static void column_block_end(cugen_kernel *k, const rplan *p, int32_t s) {
    cugen_line(k, "/* the lanes by halves: in the thread, then across the warps */");
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        static const int pairs[3][2] = {{0, 2}, {1, 3}, {0, 1}};
        for (int q = 0; q < 3; q++)
            cugen_line(k, "a%dl[%d] = %s;", (int)r, pairs[q][0],
                       cugen_red_combine(k, r, cugen_fmt(k, "a%dl[%d]", (int)r, pairs[q][0]),
                                         cugen_fmt(k, "a%dl[%d]", (int)r, pairs[q][1])));
        cugen_line(k, "red%d[ty][tx] = a%dl[0];", (int)r, (int)r);
    }
    cugen_line(k, "__syncthreads();");
    cugen_line(k, "if (ty == 0) {");
    k->ind++;
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        const char *v[8];
        for (int w = 0; w < 8; w++)
            v[w] = cugen_fmt(k, "red%d[%d][tx]", (int)r, w);
        for (int h = 4; h > 0; h /= 2)
            for (int w = 0; w < h; w++)
                v[w] = cugen_fmt(k, "(%s)", cugen_red_combine(k, r, v[w], v[w + h]));
        cugen_line(k, "%s c%d = %s;", cugen_ctype(k->f->nodes[r].dtype), (int)r, v[0]);
    }
    cugen_line(k, "int q = 0;");
    cugen_line(k, "for (long long bi = nbk%d; bi & 1; bi >>= 1, q++) {", (int)s);
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        cugen_line(
            k, "    c%d = %s;", (int)r,
            cugen_red_combine(k, r, cugen_fmt(k, "a%dt[q]", (int)r), cugen_fmt(k, "c%d", (int)r)));
    }
    cugen_line(k, "}");
    for (int32_t i = 0; i < p->nreds; i++)
        if (p->lev[p->reds[i]] == s)
            cugen_line(k, "a%dt[q] = c%d;", (int)p->reds[i], (int)p->reds[i]);
    k->ind--;
    cugen_line(k, "}");
    cugen_line(k, "__syncthreads();");
}

/* A column's pending subtrees folded, the lowest first and each higher one on its left, to
 * every thread of the column. */
static void column_fold(cugen_kernel *k, const rplan *p, int32_t s) {
    cugen_line(k,
               "/* the pending subtrees, the lowest first, each higher one on the left; to every ");
    cugen_line(k, "   thread */");
    cugen_line(k, "if (ty == 0) {");
    k->ind++;
    cugen_line(k, "bool have = false;");
    cugen_line(k, "for (int q = 0; q < 40; q++) {");
    cugen_line(k, "    if (!((nbk%d >> q) & 1)) continue;", (int)s);
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        cugen_line(k, "    a%d = have ? %s : a%dt[q];", (int)r,
                   cugen_red_combine(k, r, cugen_fmt(k, "a%dt[q]", (int)r), acc_name(k, r)),
                   (int)r);
    }
    cugen_line(k, "    have = true;");
    cugen_line(k, "}");
    for (int32_t i = 0; i < p->nreds; i++)
        if (p->lev[p->reds[i]] == s)
            cugen_line(k, "red%d[0][tx] = a%d;", (int)p->reds[i], (int)p->reds[i]);
    k->ind--;
    cugen_line(k, "}");
    cugen_line(k, "__syncthreads();");
    for (int32_t i = 0; i < p->nreds; i++)
        if (p->lev[p->reds[i]] == s)
            cugen_line(k, "a%d = red%d[0][tx];", (int)p->reds[i], (int)p->reds[i]);
    cugen_line(k, "__syncthreads();");
}

static void column_sweep_ordered(cugen_kernel *k, const rplan *p, colctx *c, int32_t s,
                                 const char *from, const char *to, const ir_ref *t, int32_t nt) {
    int any = 0;
    for (int32_t i = 0; i < p->nreds; i++)
        any |= p->lev[p->reds[i]] == s;
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        cugen_line(k, "%s a%d = %s, a%dt[40];", cugen_ctype(k->f->nodes[r].dtype), (int)r,
                   cugen_red_init(k, r), (int)r);
    }
    cugen_line(k, "long long nbk%d = 0;", (int)s);
    cugen_line(k, "for (long long b0 = %s; b0 < %s; b0 += 1024, nbk%d++) {", from, to, (int)s);
    k->ind++;
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        const char *id = cugen_red_init(k, r);
        cugen_line(k, "%s a%dl[4] = {%s, %s, %s, %s};", cugen_ctype(k->f->nodes[r].dtype), (int)r,
                   id, id, id, id);
    }
    cugen_line(k, "for (int m = 0; m < 32; m++) {");
    k->ind++;
    cugen_line(k, "#pragma unroll");
    cugen_line(k, "for (int j = 0; j < 4; j++) {");
    k->ind++;
    cugen_line(k, "const long long e = b0 + m * 32 + j * 8 + ty;");
    cugen_line(k, "if (e < n) {");
    k->ind++;
    column_element(k, p, c, s, t, nt, "a%dl[j]");
    k->ind--;
    cugen_line(k, "}");
    k->ind--;
    cugen_line(k, "}");
    k->ind--;
    cugen_line(k, "}");
    if (any) column_block_end(k, p, s);
    k->ind--;
    cugen_line(k, "}");
    if (any) column_fold(k, p, s);
}

/* Sweep s of a column block: its accumulators, the loop over the reduced elements from
 * `from` + ty (8 warps apart) to n, the per-element outputs it writes, the accumulators
 * finished and combined over the warps in order (shared memory: every thread of the block
 * passes the two barriers). In the plan's order (column_sweep_ordered) where the kernel has a
 * float sum, mean or product; `to` is then the uniform end of the elements. */
static void column_sweep(cugen_kernel *k, const rplan *p, colctx *c, int32_t s, const char *from,
                         const char *to) {
    cugen_module *m = k->m;
    ir_ref *t = ir_arena_calloc(m->a, (size_t)(p->nreds + k->nbufs + 1), sizeof(ir_ref));
    int32_t nt = sweep_targets(k, p, s, t);
    if (row_needs_order(k, p)) {
        cugen_line(k, "/* sweep %d, in the plan's order */", (int)s);
        column_sweep_ordered(k, p, c, s, from ? from : "0", to, t, nt);
        return;
    }
    cugen_line(k, "/* sweep %d */", (int)s);
    acc_init(k, p, s);
    cugen_line(k, "for (long long e = %s%s; e < n; e += %d) {", from ? from : "",
               from ? " + ty" : "ty", COL_H);
    k->ind++;
    column_element(k, p, c, s, t, nt, NULL);
    k->ind--;
    cugen_line(k, "}");
    if (s > p->nsweeps) return;
    cugen_line(k, "/* the %d partial results of each column, in order */", COL_H);
    for (int32_t i = 0; i < p->nreds; i++)
        if (p->lev[p->reds[i]] == s)
            cugen_line(k, "red%d[ty][tx] = a%d;", (int)p->reds[i], (int)p->reds[i]);
    cugen_line(k, "__syncthreads();");
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        if (p->lev[r] != s) continue;
        cugen_line(k, "a%d = red%d[0][tx];", (int)r, (int)r);
        cugen_line(k, "for (int w = 1; w < %d; w++) a%d = %s;", COL_H, (int)r,
                   cugen_red_combine(k, r, acc_name(k, r), cugen_fmt(k, "red%d[w][tx]", (int)r)));
    }
    cugen_line(k, "__syncthreads();");
}

/* The offsets of the current column in the buffers that vary along kept groups. */
static void column_offsets(cugen_kernel *k) {
    uint32_t kept = ((1u << k->ngroups) - 1) & ~k->reduced;
    for (int32_t b = 0; b < k->nbufs; b++)
        if (cugen_buf_used(k, b) && (k->bufs[b].mask & kept))
            cugen_line(k, "const long long o%d = %s;", (int)b, cugen_offset_kept(k, b, "col", ""));
}

/* The body of the column kernel: blocks of 32 columns, every sweep, the results. */
static void column_body(cugen_kernel *k, const rplan *p) {
    cugen_module *m = k->m;
    uint32_t kept = ((1u << k->ngroups) - 1) & ~k->reduced;
    colctx c = {0};
    k->ctx = &c;
    k->load = col_load;
    const char *cols = cugen_size_expr(k, cugen_groups_extent(k, kept), "cols");
    const char *len = cugen_size_expr(k, cugen_groups_extent(k, k->reduced), "len");
    cugen_line(k, "/* %d adjacent results a block; its %d warps split the reduced elements */",
               COL_W, COL_H);
    cugen_line(k, "const int tx = (int)threadIdx.x & 31, ty = (int)threadIdx.x >> 5;");
    shared_decls(k, p, cugen_fmt(k, "[%d][%d]", COL_H, COL_W));
    cugen_line(
        k,
        "for (long long c0 = (long long)blockIdx.x * %d; c0 < %s; c0 += (long long)gridDim.x "
        "* %d) {",
        COL_W, cols, COL_W);
    k->ind++;
    int32_t mark = cugen_scope_mark(k);
    cugen_line(k, "const long long col = c0 + tx;");
    cugen_line(k, "const bool live = col < %s;", cols);
    cugen_line(k, "const long long n = live ? %s : 0;", len);
    column_offsets(k);
    unsigned char *written = ir_arena_calloc(m->a, (size_t)(k->nbufs + 1), 1);
    per_result_stage(k, p, 0, written, "ty == 0 && live", "col");
    int32_t last = p->nsweeps + (p->final_sweep ? 1 : 0);
    for (int32_t s = 1; s <= last; s++) {
        column_sweep(k, p, &c, s, NULL, len);
        if (s > p->nsweeps) break;
        acc_values(k, p, s, len);
        per_result_stage(k, p, s, written, "ty == 0 && live", "col");
    }
    cugen_scope_pop(k, mark);
    k->ind--;
    cugen_line(k, "}");
    k->ctx = NULL;
}

/* The column kernel's grid: a block a tile of 32 columns. */
static cuda_grid *column_grid(cugen_kernel *k, cuda_grid_kind kind) {
    uint32_t kept = ((1u << k->ngroups) - 1) & ~k->reduced;
    cuda_grid *g = ir_arena_calloc(k->m->a, 1, sizeof(cuda_grid));
    g->kind = kind;
    g->work = cugen_groups_extent(k, kept);
    g->per_thread = 1;
    g->block = COL_W * COL_H;
    g->blocks_per_sm = 2048 / (COL_W * COL_H) * 4;
    return g;
}

void cugen_gen_column(cugen_kernel *k, cuda_launch *l) {
    cugen_module *m = k->m;
    rplan p;
    plan_build(k, &p, 0);
    if (m->fail.failed) return;
    column_body(k, &p);
    cuda_variant *v = ir_arena_calloc(m->a, 1, sizeof(cuda_variant));
    v->name = cugen_global_name(k, "");
    v->nparts = 1;
    v->parts = column_grid(k, CUDA_GRID_TILES);
    v->name = cugen_emit_function(k, v->name, COL_W * COL_H, k->body.data ? k->body.data : "",
                                  CG_FN_PLAIN);
    ir_buf_init(&k->body, m->a);
    l->what = "column-reduction";
    l->nvariants = 1;
    l->variants = v;
    l->max_block = COL_W * COL_H;
}

/* ---- column reductions cut into pieces (the plan's split) -------------------------------- */

/* Partial result i of piece pc for column col, in the plan's layout: 8-byte slot
 * (pc * nreds + i) * cols + col of the partials, the value at its start. */
static const char *split_slot(cugen_kernel *k, const rplan *p, const char *part, int32_t i,
                              const char *pc, const char *cols, int is_const) {
    ir_ref r = p->reds[i];
    return cugen_fmt(k, "*reinterpret_cast<%s%s *>(%s + ((%s * %d + %d) * %s + col) * 8)",
                     is_const ? "const " : "", cugen_ctype(k->f->nodes[r].dtype), part, pc,
                     (int)p->nreds, (int)i, cols);
}

/* The arguments both kernels of a split take: the partials (read-only in the join), the
 * pieces, the columns and the reduced elements; per-column loads as the column kernel's. */
typedef struct split_args {
    const char *part, *pieces, *cols, *len;
} split_args;

static split_args split_begin(cugen_kernel *k, colctx *c, int join) {
    uint32_t kept = ((1u << k->ngroups) - 1) & ~k->reduced;
    k->ctx = c;
    k->load = col_load;
    split_args a;
    a.part = cugen_special_arg(k, CUDA_ARG_SCRATCH, k->partials_scratch, "part_",
                               join ? "const unsigned char *__restrict__"
                                    : "unsigned char *__restrict__");
    a.pieces = cugen_special_arg(k, CUDA_ARG_PIECES, 0, "pieces_", NULL);
    a.cols = cugen_size_expr(k, cugen_groups_extent(k, kept), "cols");
    a.len = cugen_size_expr(k, cugen_groups_extent(k, k->reduced), "len");
    return a;
}

/* The body of the pieces kernel: each (tile, piece) item reduces the piece's rows of its 32
 * columns and writes the per-element outputs of those rows; thread ty == 0 leaves the
 * accumulators, unfinished, in the column's partial slots. */
static void pieces_body(cugen_kernel *k, const rplan *p) {
    colctx c = {0};
    split_args a = split_begin(k, &c, 0);
    const char *part = a.part, *np = a.pieces, *cols = a.cols, *len = a.len;
    cugen_line(k,
               "/* a block a tile of %d columns and a piece of their rows; its %d warps split "
               "the piece */",
               COL_W, COL_H);
    cugen_line(k, "const int tx = (int)threadIdx.x & 31, ty = (int)threadIdx.x >> 5;");
    shared_decls(k, p, cugen_fmt(k, "[%d][%d]", COL_H, COL_W));
    if (row_needs_order(k, p)) {
        /* pieces of a power of two of 1024-element blocks: each an aligned subtree of the
         * order's tree over blocks (those past the end empty: the identity) */
        cugen_line(k, "long long rows = 1024;");
        cugen_line(k, "while (rows * %s < %s) rows *= 2;", np, len);
    } else {
        cugen_line(k, "const long long rows = (%s + %s - 1) / %s;", len, np, np);
    }
    cugen_line(k, "const long long items = (%s + %d) / %d * %s;", cols, COL_W - 1, COL_W, np);
    cugen_line(k, "for (long long it = blockIdx.x; it < items; it += gridDim.x) {");
    k->ind++;
    int32_t mark = cugen_scope_mark(k);
    cugen_line(k, "const long long pc = it %% %s;", np);
    cugen_line(k, "const long long col = it / %s * %d + tx;", np, COL_W);
    cugen_line(k, "const bool live = col < %s;", cols);
    cugen_line(k, "const long long lo = pc * rows;");
    cugen_line(k, "const long long hi = %s - lo < rows ? %s : lo + rows;", len, len);
    cugen_line(k, "const long long n = live ? hi : lo;");
    column_offsets(k);
    column_sweep(k, p, &c, 1, "lo", "hi");
    cugen_line(k, "if (ty == 0 && live) {");
    k->ind++;
    for (int32_t i = 0; i < p->nreds; i++)
        cugen_line(k, "%s = a%d;", split_slot(k, p, part, i, "pc", cols, 0), (int)p->reds[i]);
    k->ind--;
    cugen_line(k, "}");
    cugen_scope_pop(k, mark);
    k->ind--;
    cugen_line(k, "}");
    k->ctx = NULL;
}

/* Values of reduction r in the order's tree over them: value (an expression of the loop
 * variable var) for var from 0 to n - 1 in a binary counter, its pending subtrees folded, the
 * lowest first and each higher one on its left, into a<r> (declared by the caller). */
static void tree_over(cugen_kernel *k, ir_ref r, const char *n, const char *var,
                      const char *value) {
    const char *t = cugen_ctype(k->f->nodes[r].dtype);
    cugen_line(k, "%s a%dt[40];", t, (int)r);
    cugen_line(k, "for (long long %s = 0; %s < %s; %s++) {", var, var, n, var);
    cugen_line(k, "    %s c = %s;", t, value);
    cugen_line(k, "    int q = 0;");
    cugen_line(k, "    for (long long bi = %s; bi & 1; bi >>= 1, q++) c = %s;", var,
               cugen_red_combine(k, r, cugen_fmt(k, "a%dt[q]", (int)r), "c"));
    cugen_line(k, "    a%dt[q] = c;", (int)r);
    cugen_line(k, "}");
    cugen_line(k, "bool have%d = false;", (int)r);
    cugen_line(k, "for (int q = 0; q < 40; q++) {");
    cugen_line(k, "    if (!(((long long)%s >> q) & 1)) continue;", n);
    cugen_line(k, "    a%d = have%d ? %s : a%dt[q];", (int)r, (int)r,
               cugen_red_combine(k, r, cugen_fmt(k, "a%dt[q]", (int)r), acc_name(k, r)), (int)r);
    cugen_line(k, "    have%d = true;", (int)r);
    cugen_line(k, "}");
}

/* The pieces' partial results of a column combined in the order's tree over them (piece c
 * with c + 1, then c with c + 2, ...; pieces are at most PLAN_SPLIT_MAX). */
static void join_ordered(cugen_kernel *k, const rplan *p, split_args a) {
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        cugen_line(k, "%s a%d = %s;", cugen_ctype(k->f->nodes[r].dtype), (int)r,
                   cugen_red_init(k, r));
        tree_over(k, r, a.pieces, "pc", split_slot(k, p, a.part, i, "pc", a.cols, 1));
    }
}

/* The body of the join: a thread a column combines its pieces' partial results in piece
 * order (in the plan's order: join_ordered), finishes the reductions and computes and stores
 * the per-result values. */
static void join_body(cugen_kernel *k, const rplan *p) {
    cugen_module *m = k->m;
    colctx c = {0};
    split_args a = split_begin(k, &c, 1);
    const char *part = a.part, *np = a.pieces, *cols = a.cols, *len = a.len;
    cugen_line(k,
               "for (long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x; col < %s;",
               cols);
    cugen_line(k, "     col += (long long)gridDim.x * blockDim.x) {");
    k->ind++;
    int32_t mark = cugen_scope_mark(k);
    cugen_line(k, "const bool live = true; /* what per-column loads test */");
    cugen_line(k, "(void)live;");
    column_offsets(k);
    unsigned char *written = ir_arena_calloc(m->a, (size_t)(k->nbufs + 1), 1);
    per_result_stage(k, p, 0, written, NULL, "col");
    if (row_needs_order(k, p))
        join_ordered(k, p, a);
    else
        for (int32_t i = 0; i < p->nreds; i++) {
            ir_ref r = p->reds[i];
            cugen_line(k, "%s a%d = %s;", cugen_ctype(k->f->nodes[r].dtype), (int)r,
                       split_slot(k, p, part, i, "0", cols, 1));
            cugen_line(k, "for (long long pc = 1; pc < %s; pc++)", np);
            cugen_line(
                k, "    a%d = %s;", (int)r,
                cugen_red_combine(k, r, acc_name(k, r), split_slot(k, p, part, i, "pc", cols, 1)));
        }
    acc_values(k, p, 1, len);
    per_result_stage(k, p, 1, written, NULL, "col");
    cugen_scope_pop(k, mark);
    k->ind--;
    cugen_line(k, "}");
    k->ctx = NULL;
}

void cugen_gen_column_split(cugen_kernel *k, cuda_launch *l2) {
    cugen_module *m = k->m;
    cuda_launch *l1 = l2 - 1;
    rplan p;
    plan_build(k, &p, 0);
    if (m->fail.failed) return;
    uint32_t kept = ((1u << k->ngroups) - 1) & ~k->reduced;
    /* launch 1: the pieces, or the column kernel (both bodies first: one signature) */
    pieces_body(k, &p);
    const char *pieces = k->body.data ? k->body.data : "";
    ir_buf_init(&k->body, m->a);
    column_body(k, &p);
    const char *whole = k->body.data ? k->body.data : "";
    ir_buf_init(&k->body, m->a);
    cuda_variant *v = ir_arena_calloc(m->a, 2, sizeof(cuda_variant));
    cuda_cond *split = ir_arena_calloc(m->a, 1, sizeof(cuda_cond));
    split->kind = CUDA_COND_SPLIT;
    v[0].name = cugen_global_name(k, "_pieces");
    v[0].nconds = 1;
    v[0].conds = split;
    v[0].nparts = 1;
    v[0].parts = column_grid(k, CUDA_GRID_PIECES);
    v[1].name = cugen_global_name(k, "");
    v[1].nparts = 1;
    v[1].parts = column_grid(k, CUDA_GRID_TILES);
    v[0].name = cugen_emit_function(k, v[0].name, COL_W * COL_H, pieces, CG_FN_PLAIN);
    v[1].name = cugen_emit_function(k, v[1].name, COL_W * COL_H, whole, CG_FN_PLAIN);
    l1->what = "column-reduction";
    l1->nvariants = 2;
    l1->variants = v;
    l1->max_block = COL_W * COL_H;
    l1->split = l2->split = 1;
    l1->split_len = l2->split_len = cugen_groups_extent(k, k->reduced);
    l1->split_cols = l2->split_cols = cugen_groups_extent(k, kept);
    cugen_launch_args(k, l1);

    /* launch 2: the join of the pieces, or nothing */
    k->nsizes = 0;
    join_body(k, &p);
    cuda_variant *v2 = ir_arena_calloc(m->a, 2, sizeof(cuda_variant));
    cuda_grid *g2 = ir_arena_calloc(m->a, 2, sizeof(cuda_grid));
    g2[0].kind = CUDA_GRID_STRIDE;
    g2[0].work = l1->split_cols;
    g2[0].per_thread = 1;
    g2[0].block = FULL_BLOCK;
    g2[0].blocks_per_sm = 8;
    g2[1].kind = CUDA_GRID_NONE;
    v2[0].name = cugen_global_name(k, "_join");
    v2[0].nconds = 1;
    v2[0].conds = split;
    v2[0].nparts = 1;
    v2[0].parts = &g2[0];
    v2[1] = v2[0];
    v2[1].nconds = 0;
    v2[1].conds = NULL;
    v2[1].parts = &g2[1];
    v2[0].name = cugen_emit_function(k, v2[0].name, FULL_BLOCK, k->body.data ? k->body.data : "",
                                     CG_FN_PLAIN);
    v2[1].name = v2[0].name; /* the skipped launch's: a name that exists */
    ir_buf_init(&k->body, m->a);
    l2->what = "column-reduction join";
    l2->nvariants = 2;
    l2->variants = v2;
    l2->max_block = FULL_BLOCK;
}

/* ---- full reductions
 * ------------------------------------------------------------------------------ */

/* Combines each reduction's accumulator over the block; thread 0 ends with the results. */
static void block_combine(cugen_kernel *k, const rplan *p) {
    warp_combine(k, p, 1, "32");
    for (int32_t i = 0; i < p->nreds; i++)
        cugen_line(k, "if ((threadIdx.x & 31) == 0) red%d[threadIdx.x >> 5] = a%d;",
                   (int)p->reds[i], (int)p->reds[i]);
    cugen_line(k, "__syncthreads();");
}

static void block_combine_thread0(cugen_kernel *k, const rplan *p) {
    for (int32_t i = 0; i < p->nreds; i++) {
        ir_ref r = p->reds[i];
        cugen_line(k, "a%d = red%d[0];", (int)r, (int)r);
        cugen_line(k, "for (int w = 1; w < (int)(blockDim.x >> 5); w++) a%d = %s;", (int)r,
                   cugen_red_combine(k, r, acc_name(k, r), cugen_fmt(k, "red%d[w]", (int)r)));
    }
}

static const char *partials_of(cugen_kernel *k, ir_ref r, int32_t i, const char *base) {
    return cugen_fmt(k, "reinterpret_cast<%s%s *>(%s + %d)", k->cur_const ? "const " : "",
                     cugen_ctype(k->f->nodes[r].dtype), base, (int)(i * CG_MAX_PARTIALS * 8));
}

static const char *final_load(cugen_kernel *k, int b) {
    const cugen_buf *bf = &k->bufs[b];
    if (bf->computed) return index_value(k, b, NULL); /* element 0 */
    const char *v = cugen_fmt(k, "v%d", (int)bf->node);
    cugen_line(k, "const %s %s = %s;", cugen_ctype(bf->dtype), v,
               cugen_from_storage(k, bf->dtype, cugen_fmt(k, "%s[0]", bf->name)));
    return v;
}

/* The body of the partials kernel: a grid-stride flat sweep (cugen_flat_sweep) writes the
 * per-element outputs and accumulates every reduction; the block combines its threads'
 * accumulators and thread 0 writes the block's partials to the scratch (partials_of).
 * Returns the sweep's vector width. */
static int full_partials_body(cugen_kernel *k, const rplan *p) {
    cugen_module *m = k->m;
    int32_t *outs = ir_arena_calloc(m->a, (size_t)(k->nbufs + 1), sizeof(int32_t));
    int32_t nouts = 0;
    for (int32_t b = 0; b < k->nbufs; b++)
        if (k->bufs[b].output && k->in[k->bufs[b].node] && per_element(k, k->bufs[b].node))
            outs[nouts++] = b;
    k->index_template = 1;
    k->cur_const = 0;
    const char *part = cugen_special_arg(k, CUDA_ARG_SCRATCH, k->partials_scratch, "part_",
                                         "unsigned char *__restrict__");
    shared_decls(k, p, "[32]");
    acc_init(k, p, 1);
    cugen_line(k, "{");
    k->ind++;
    int w = cugen_flat_sweep(k, outs, nouts, p->reds, p->nreds, "(I)blockIdx.x", "(I)gridDim.x");
    k->ind--;
    cugen_line(k, "}");
    block_combine(k, p);
    cugen_line(k, "if (threadIdx.x == 0) {");
    k->ind++;
    block_combine_thread0(k, p);
    for (int32_t i = 0; i < p->nreds; i++)
        cugen_line(k, "%s[blockIdx.x] = a%d;", partials_of(k, p->reds[i], i, part),
                   (int)p->reds[i]);
    k->ind--;
    cugen_line(k, "}");
    return w;
}

/* Launch l1 of the partials kernel (emitted here): grid-stride over every element, at most
 * CG_MAX_PARTIALS blocks; a 32-bit variant below 2^31 elements, an _i64 one otherwise. */
static void full_partials_launch(cugen_kernel *k, cuda_launch *l1, int w) {
    cugen_module *m = k->m;
    cuda_grid *g1 = ir_arena_calloc(m->a, 1, sizeof(cuda_grid));
    g1->kind = CUDA_GRID_STRIDE;
    g1->work = cugen_groups_extent(k, (1u << k->ngroups) - 1);
    g1->per_thread = w;
    g1->block = FULL_BLOCK;
    g1->blocks_per_sm = 8;
    g1->max_blocks = CG_MAX_PARTIALS;
    cuda_variant *v1 = ir_arena_calloc(m->a, 2, sizeof(cuda_variant));
    cuda_cond *cond = ir_arena_calloc(m->a, 1, sizeof(cuda_cond));
    cond[0].kind = CUDA_COND_AT_MOST;
    cond[0].size = g1->work;
    cond[0].value = CUDA_INDEX32_LIMIT - 1;
    v1[0].name = cugen_global_name(k, "_partial");
    v1[0].nconds = 1;
    v1[0].conds = cond;
    v1[0].nparts = 1;
    v1[0].parts = g1;
    v1[1] = v1[0];
    v1[1].name = cugen_global_name(k, "_partial_i64");
    v1[1].nconds = 0;
    v1[1].conds = NULL;
    l1->what = "full-reduction partials";
    l1->nvariants = 2;
    l1->variants = v1;
    l1->max_block = FULL_BLOCK;
    v1[0].name = cugen_emit_function(k, v1[0].name, FULL_BLOCK, k->body.data ? k->body.data : "",
                                     CG_FN_TEMPLATE);
    v1[1].name = cugen_fmt(k, "%s_i64", v1[0].name);
    ir_buf_init(&k->body, m->a);
    cugen_launch_args(k, l1);
}

static void full_ordered_combine(cugen_kernel *k, const rplan *p, const char *part, const char *np);

/* The body of the final kernel (one block): its threads combine the partials in a fixed
 * order, the block combines the threads, and thread 0 computes the results from the
 * reductions (the per-result values of both stages, reading inputs at element 0). */
static void full_final_body(cugen_kernel *k, const rplan *p) {
    cugen_module *m = k->m;
    k->nsizes = 0;
    k->index_template = 0;
    k->cur_const = 1;
    const char *part = cugen_special_arg(k, CUDA_ARG_SCRATCH, k->partials_scratch, "part_",
                                         "const unsigned char *__restrict__");
    const char *np = cugen_special_arg(k, CUDA_ARG_GRID_OF, k->launch_index - 1, "nparts_", NULL);
    const char *n = cugen_size_expr(k, cugen_groups_extent(k, (1u << k->ngroups) - 1), "n");
    shared_decls(k, p, "[32]");
    acc_init(k, p, 1);
    int ordered = row_needs_order(k, p);
    if (!ordered) {
        cugen_line(k, "for (long long b = threadIdx.x; b < %s; b += blockDim.x) {", np);
        k->ind++;
        for (int32_t i = 0; i < p->nreds; i++) {
            ir_ref r = p->reds[i];
            cugen_line(k, "a%d = %s;", (int)r,
                       cugen_red_combine(k, r, acc_name(k, r),
                                         cugen_fmt(k, "%s[b]", partials_of(k, r, i, part))));
        }
        k->ind--;
        cugen_line(k, "}");
        block_combine(k, p);
    }
    cugen_line(k, "if (threadIdx.x == 0) {");
    k->ind++;
    if (ordered)
        full_ordered_combine(k, p, part, np);
    else
        block_combine_thread0(k, p);
    k->load = final_load;
    k->ctx = NULL;
    acc_values(k, p, 1, n);
    unsigned char *written = ir_arena_calloc(m->a, (size_t)(k->nbufs + 1), 1);
    per_result_stage(k, p, 0, written, NULL, NULL);
    per_result_stage(k, p, 1, written, NULL, NULL);
    k->ind--;
    cugen_line(k, "}");
}

/* Launch l2 of the final kernel (emitted here): one block. */
static void full_final_launch(cugen_kernel *k, cuda_launch *l2) {
    cugen_module *m = k->m;
    cuda_grid *g2 = ir_arena_calloc(m->a, 1, sizeof(cuda_grid));
    g2->kind = CUDA_GRID_ONE;
    g2->block = FULL_BLOCK;
    cuda_variant *v2 = ir_arena_calloc(m->a, 1, sizeof(cuda_variant));
    v2->name = cugen_global_name(k, "_final");
    v2->nparts = 1;
    v2->parts = g2;
    l2->what = "full-reduction final";
    l2->nvariants = 1;
    l2->variants = v2;
    l2->max_block = FULL_BLOCK;
    v2->name =
        cugen_emit_function(k, v2->name, FULL_BLOCK, k->body.data ? k->body.data : "", CG_FN_PLAIN);
    ir_buf_init(&k->body, m->a);
}

/* ---- full reductions in the plan's order ---------------------------------------------------
 *
 * The partials kernel sweeps the elements as one row (rows in the plan's order, above): CUDA
 * block b takes the Q blocks of 1024 elements from b * Q (Q the power of two that covers the
 * elements with the grid's blocks: an aligned subtree each), its 32 / w groups P of them each;
 * thread 0 writes the block's value, unfinished, to the partials. The final kernel's thread 0
 * combines the partials in the same tree (a binary counter, its pending subtrees folded). */
static void full_ordered_partials_body(cugen_kernel *k, const rplan *p) {
    cugen_module *m = k->m;
    int w = p->vec;
    rowctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.cached = ROW_STREAM;
    c.vecbuf = ir_arena_calloc(m->a, (size_t)(k->nbufs + 1), 1);
    k->ctx = &c;
    k->load = row_load;
    k->index_template = 0;
    k->cur_const = 0;
    const char *part = cugen_special_arg(k, CUDA_ARG_SCRATCH, k->partials_scratch, "part_",
                                         "unsigned char *__restrict__");
    const char *N = cugen_size_expr(k, cugen_groups_extent(k, (1u << k->ngroups) - 1), "n");
    cugen_line(
        k, "/* the elements as one row: this block's Q blocks of 1024 from blockIdx.x * Q, its");
    cugen_line(k, "   groups of G threads (%d lanes each) P blocks each */", w);
    cugen_line(k, "const int T = (int)blockDim.x;");
    cugen_line(k, "const int G = %d;", 32 / w);
    cugen_line(k, "const int lane = (int)threadIdx.x;");
    cugen_line(k, "const long long grp = lane / G;");
    cugen_line(k, "const int gp = lane & (G - 1);");
    cugen_line(k, "const long long N = %s;", N);
    cugen_line(k, "long long Q = 1;");
    cugen_line(k, "while (Q * (long long)gridDim.x * 1024 < N) Q *= 2;");
    cugen_line(k, "long long P = 1;");
    cugen_line(k, "int lp = 0;");
    cugen_line(k, "while (P * (T / G) < Q) P *= 2, lp++;");
    cugen_line(k, "const long long lo = (long long)blockIdx.x * Q * 1024;");
    cugen_line(k, "const long long n = N - lo < Q * 1024 ? N : lo + Q * 1024;");
    cugen_line(k, "const bool live = true; /* what per-row loads test */");
    cugen_line(k, "(void)live;");
    shared_decls(k, p, "[32]");
    cugen_line(k, "const bool vec = %s;", row_vec_cond(k, p, w, "true"));
    row_sweep_ordered(k, p, &c, 1, "lo + ");
    cugen_line(k, "if (threadIdx.x == 0) {");
    for (int32_t i = 0; i < p->nreds; i++)
        cugen_line(k, "    %s[blockIdx.x] = a%d;", partials_of(k, p->reds[i], i, part),
                   (int)p->reds[i]);
    cugen_line(k, "}");
    k->ctx = NULL;
}

static void full_ordered_partials_launch(cugen_kernel *k, cuda_launch *l1, const rplan *p) {
    cugen_module *m = k->m;
    full_ordered_partials_body(k, p);
    cuda_grid *g1 = ir_arena_calloc(m->a, 1, sizeof(cuda_grid));
    g1->kind = CUDA_GRID_STRIDE;
    g1->work = cugen_groups_extent(k, (1u << k->ngroups) - 1);
    g1->per_thread = 32 * p->vec; /* a block of 1024 elements to each group at least */
    g1->block = FULL_ORDERED_BLOCK;
    g1->blocks_per_sm = 8;
    g1->max_blocks = CG_MAX_PARTIALS;
    cuda_variant *v1 = ir_arena_calloc(m->a, 1, sizeof(cuda_variant));
    v1->name = cugen_global_name(k, "_partial");
    v1->nparts = 1;
    v1->parts = g1;
    l1->what = "full-reduction partials";
    l1->nvariants = 1;
    l1->variants = v1;
    l1->max_block = FULL_ORDERED_BLOCK;
    v1->name = cugen_emit_function(k, v1->name, FULL_ORDERED_BLOCK,
                                   k->body.data ? k->body.data : "", CG_FN_PLAIN);
    ir_buf_init(&k->body, m->a);
    cugen_launch_args(k, l1);
}

/* Thread 0 of the final kernel: the partials (np of them) in the order's tree. */
static void full_ordered_combine(cugen_kernel *k, const rplan *p, const char *part,
                                 const char *np) {
    for (int32_t i = 0; i < p->nreds; i++)
        tree_over(k, p->reds[i], np, "b",
                  cugen_fmt(k, "%s[b]", partials_of(k, p->reds[i], i, part)));
}

void cugen_gen_full(cugen_kernel *k, cuda_launch *l2) {
    rplan p;
    plan_build(k, &p, 0);
    if (k->m->fail.failed) return;
    if (row_needs_order(k, &p)) {
        p.vec = full_vec(k);
        full_ordered_partials_launch(k, l2 - 1, &p);
        full_final_body(k, &p);
        full_final_launch(k, l2);
        return;
    }
    /* stage 1: a grid-stride sweep, one partial result per block */
    full_partials_launch(k, l2 - 1, full_partials_body(k, &p));
    /* stage 2: one block combines the partials in order; thread 0 finishes */
    full_final_body(k, &p);
    full_final_launch(k, l2);
}
