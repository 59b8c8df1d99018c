/* codegen/cpu/llvm.c: LLVM IR for the kernels of a planned module (codegen/cpu/llvm_plan.c), built
 * with the LLVM-C builder: loops written the way LLVM's loop vectorizer wants them (a
 * counted inner loop along the last, contiguous axis, with every address base + j or
 * loop-invariant), row reductions a row at a time, column reductions a unit of columns at a
 * time, full reductions in fixed chunks plus a finalize.
 *
 * Each task is two functions: the exported one with the C ABI of codegen/cpu/llvm.h, which loads
 * the buffer pointers from the table and calls the second, internal one, whose pointer
 * parameters are noalias (so that loops vectorize without run-time alias checks). The second
 * is never inlined into the first: see fn_declare_body.
 *
 * Values are computed at the "current point": g->base[i] is the element offset of access i
 * at the start of the current run and g->j the index along the last axis, so access i reads
 * base[i] + j where it varies along that axis and base[i] where it does not. Locals live in
 * allocas at the entry (promoted to SSA by the O3 pipeline), as a C front end would emit them.
 *
 * Reductions with a float sum or product accumulate in the order of
 * docs/plan.md ("The order of a reduction"), which depends on the count of reduced elements
 * alone: LG_LANES lanes a block of LG_BLOCK elements, each lane in index order, the lanes
 * combined by halves, the blocks by the aligned binary tree. The lanes are an array that a
 * round's inner loop updates element by element, so the vectorizer widens it without
 * reordering any addition, and every vector width gives the same bits. The error of a sum is
 * about LG_BLOCK / LG_LANES + log2(LG_LANES) + log2(blocks) roundings. Column reductions
 * follow the same order over a column's rows, a lane array of the unit's columns each.
 */
#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include <stdio.h>
#include <string.h>

#include "codegen/cpu/llvm_gen.h"

#define LG_BLOCK 1024 /* elements per block of an accumulation (docs/plan.md's order) */
#define LG_LANES 32   /* accumulator lanes of a block */
/* levels of the tree over blocks: 2^40 blocks are 2^50 elements, more than any memory holds
 * (a column sweep keeps them for each of its columns, on the stack) */
#define LG_LEVELS 40

/* Rows of up to LG_NARROW_MAX elements may run as columns (gen_narrow): a row a column,
 * LG_NARROW_WIDTH rows a unit, so that each vector holds one element of many rows and a row's
 * reduction is vertical operations, instead of a row's handful of elements spread over the
 * lanes of a vector, reduced across them and masked at the end, some 40 cycles a row whatever
 * its length. How long a row may be so is the kernel's (narrow_max). Where vectors have 64
 * bytes, rows of 9-31 are copied 16 at a time through transposes, and every row kernel runs
 * rows of up to 31 elements so (layernorm over rows of 17-31 1.12-1.24x faster than its row
 * kernel once a unit's values stayed in registers). Elsewhere, rows of 9-16 are copied element
 * by element: up to 15 with a transcendental, 12 without (longer ones as columns took up to
 * 1.7x the row kernel's time). bench/RESULTS.md, "Short rows as columns" and "Short rows in
 * registers". The order is the same: a column's rows go to the lanes of docs/plan.md's order
 * exactly as a row's elements do. */
#define LG_NARROW_MAX   31
#define LG_NARROW_SLOW  15  /* without the transpose, with a transcendental */
#define LG_NARROW_CHEAP 12  /* without either */
#define LG_NARROW_WIDTH 128 /* rows a unit (wider units: no faster) */
/* Rows of 9-31 elements, on CPUs with vectors of at least this many bytes, are copied 16 at a
 * time through transposes of 16 vectors (narrow_copy_wide); elsewhere element by element. */
#define LG_NARROW_WIDE_BYTES 64

/* ---- per function state ------------------------------------------------------------------- */

typedef struct lg_fn {
    lg_mod *m;
    const llvm_kplan *p;
    const ir_func *f;
    const ir_kernel *k;
    LLVMValueRef fn;
    LLVMBuilderRef ab; /* positioned among the entry block's allocas */
    LLVMValueRef syms, begin, end, scratch, flags;
    LLVMValueRef stream;     /* i1: flags & LLVM_TASK_STREAM */
    int streams;             /* the function has staged stores (it ends with an sfence) */
    LLVMValueRef *stage_ptr; /* by access: where the current block's stores go, or NULL */
    LLVMValueRef stage_k;    /* the index within the block */
    LLVMValueRef *bufp;      /* by buffer of the function's table (NULL: not a parameter) */
    LLVMValueRef dim[IR_MAX_RANK];
    LLVMValueRef *stride; /* [access * IR_MAX_RANK + axis]; NULL where absent */
    /* the current point */
    LLVMValueRef *base;
    LLVMValueRef j;         /* along the last collapsed axis; NULL: no axis is walked */
    LLVMValueRef flat;      /* position within the row (the row cache's index) */
    LLVMValueRef lane;      /* blocked walks: the accumulator lane of the point (flat % LG_LANES) */
    LLVMValueRef lanes_end; /* blocked walks: the flat end of the walk, where its last block ends */
    LLVMValueRef guard;     /* a partial round read whole: whether the point is in the row */
    LLVMValueRef guard_at;  /* and where its mask is in the table of lane masks (guard_mask) */
    int no_tails;           /* runs of fewer than LG_TAIL_MIN elements: no run_tail */
    int colw;               /* column kernels: the columns of a unit at most */
    int narrow;             /* a row kernel's short rows run as columns (gen_narrow) */
    LLVMValueRef narrow_fn; /* row kernels: the body for short rows (gen_narrow), or NULL */
    LLVMValueRef one_fn;    /* and for rows of one element (gen_narrow_one), or NULL */
    int narrow_len;         /* and the longest rows it runs (narrow_max) */
    /* values */
    LLVMValueRef *val;
    int *lvl;
    int level;
    uint8_t *mark;
    /* row reductions: the cache of per-element values */
    int use_cache;
    int sweep;
    LLVMValueRef *cache_row; /* by slot */
    /* column reductions: per-result values of the unit's columns */
    LLVMValueRef *arr; /* by node: alloca [colw x T] */
    uint8_t *in_arr;   /* by node: its array holds the values */
    /* row reductions: the next row's element offsets, to prefetch it during a sweep of this
     * one (NULL: no prefetching) */
    LLVMValueRef *pf_base;
} lg_fn;

static LLVMValueRef ci64(lg_mod *m, int64_t v) {
    return LLVMConstInt(m->t_i64, (unsigned long long)v, 1);
}

static LLVMValueRef alloca_at_entry(lg_fn *g, LLVMTypeRef t, const char *name) {
    return LLVMBuildAlloca(g->ab, t, name);
}

static LLVMValueRef load(lg_fn *g, LLVMTypeRef t, LLVMValueRef p) {
    return LLVMBuildLoad2(g->m->b, t, p, "");
}

static void store(lg_fn *g, LLVMValueRef v, LLVMValueRef p) {
    LLVMBuildStore(g->m->b, v, p);
}

static LLVMValueRef imin(lg_fn *g, LLVMValueRef a, LLVMValueRef b) {
    LLVMValueRef lt = LLVMBuildICmp(g->m->b, LLVMIntSLT, a, b, "");
    return LLVMBuildSelect(g->m->b, lt, a, b, "");
}

static LLVMBasicBlockRef new_block(lg_fn *g, const char *name) {
    return LLVMAppendBasicBlockInContext(g->m->ctx, g->fn, name);
}

/* ---- loops ---------------------------------------------------------------------------------- */

typedef struct lg_loop {
    LLVMValueRef slot, iv;
    LLVMBasicBlockRef head, exit;
} lg_loop;

/* for (iv = lo; iv < hi; iv += step): returns iv, the builder in the body */
static LLVMValueRef loop_begin(lg_fn *g, lg_loop *L, LLVMValueRef lo, LLVMValueRef hi,
                               const char *name) {
    LLVMBuilderRef b = g->m->b;
    L->slot = alloca_at_entry(g, g->m->t_i64, name);
    store(g, lo, L->slot);
    L->head = new_block(g, name);
    LLVMBasicBlockRef body = new_block(g, "body");
    L->exit = new_block(g, "done");
    LLVMBuildBr(b, L->head);
    LLVMPositionBuilderAtEnd(b, L->head);
    L->iv = load(g, g->m->t_i64, L->slot);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, L->iv, hi, ""), body, L->exit);
    LLVMPositionBuilderAtEnd(b, body);
    return L->iv;
}

LLVMValueRef lg_loop_id(LLVMContextRef ctx, int on, unsigned width, unsigned interleave,
                        LLVMMetadataRef extra) {
    LLVMTypeRef i1 = LLVMInt1TypeInContext(ctx), i32 = LLVMInt32TypeInContext(ctx);
    struct {
        const char *key;
        LLVMValueRef v;
    } kv[3] = {{"llvm.loop.vectorize.enable", LLVMConstInt(i1, on ? 1 : 0, 0)},
               {"llvm.loop.interleave.count", LLVMConstInt(i32, interleave, 0)},
               {"llvm.loop.vectorize.width", LLVMConstInt(i32, width, 0)}};
    int n = !on ? 1 : !interleave ? 1 : !width ? 2 : 3;
    LLVMMetadataRef ops[5];
    ops[0] = LLVMTemporaryMDNode(ctx, NULL, 0);
    for (int i = 0; i < n; i++) {
        LLVMMetadataRef pair[2] = {LLVMMDStringInContext2(ctx, kv[i].key, strlen(kv[i].key)),
                                   LLVMValueAsMetadata(kv[i].v)};
        ops[i + 1] = LLVMMDNodeInContext2(ctx, pair, 2);
    }
    if (extra) ops[++n] = extra;
    LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, (size_t)n + 1);
    /* the ID refers to itself; the temporary is freed */
    LLVMMetadataReplaceAllUsesWith(ops[0], id);
    return LLVMMetadataAsValue(ctx, id);
}

/* Ends a loop; vectorize: 1 asks for vectorization, -1 forbids it, 0 leaves it to LLVM, and
 * LG_INTERLEAVE asks for vectorization with that many vectors in flight. */
#define LG_INTERLEAVE 4
static void loop_end_id(lg_fn *g, lg_loop *L, LLVMValueRef step, LLVMValueRef id) {
    LLVMBuilderRef b = g->m->b;
    store(g, LLVMBuildNSWAdd(b, L->iv, step, ""), L->slot);
    LLVMValueRef br = LLVMBuildBr(b, L->head);
    if (id) LLVMSetMetadata(br, LLVMGetMDKindIDInContext(g->m->ctx, "llvm.loop", 9), id);
    LLVMPositionBuilderAtEnd(b, L->exit);
}

static void loop_end(lg_fn *g, lg_loop *L, LLVMValueRef step, int vectorize) {
    loop_end_id(g, L, step,
                vectorize ? lg_loop_id(g->m->ctx, vectorize > 0, 0,
                                       vectorize > 1 ? (unsigned)vectorize : 0, NULL)
                          : NULL);
}

/* if (cond) { ...: returns the block to continue with after lg_if_end */
static LLVMBasicBlockRef if_begin(lg_fn *g, LLVMValueRef cond) {
    LLVMBasicBlockRef then = new_block(g, "then"), after = new_block(g, "endif");
    LLVMBuildCondBr(g->m->b, cond, then, after);
    LLVMPositionBuilderAtEnd(g->m->b, then);
    return after;
}

static void if_end(lg_fn *g, LLVMBasicBlockRef after) {
    LLVMBuildBr(g->m->b, after);
    LLVMPositionBuilderAtEnd(g->m->b, after);
}

/* ---- values at the current point ------------------------------------------------------------ */

static int in_body(const lg_fn *g, ir_ref q) {
    const ir_node *n = &g->f->nodes[q];
    return n->kernel == g->p->pk->kernel && ir_ops[n->op].cls != IR_CLASS_LEAF &&
           n->op != IR_OP_OUTPUT;
}

static void set_val(lg_fn *g, ir_ref q, LLVMValueRef v) {
    g->val[q] = v;
    g->lvl[q] = g->level;
}

static void scope_enter(lg_fn *g) {
    g->level++;
}

/* Forgets the values of the current scope (and stays in it). */
static void scope_clear(lg_fn *g) {
    for (int32_t r = 0; r < g->f->nnodes; r++)
        if (g->val[r] && g->lvl[r] == g->level) g->val[r] = NULL;
}

static void scope_exit(lg_fn *g) {
    scope_clear(g);
    g->level--;
}

/* The element offset of access i at the current point. */
static int is_zero(LLVMValueRef v) {
    return LLVMIsAConstantInt(v) && LLVMConstIntGetSExtValue(v) == 0;
}

static LLVMValueRef offset(lg_fn *g, int32_t i) {
    const llvm_kplan *p = g->p;
    int last = p->pk->naxes - 1;
    if (!g->j || last < 0 || !((p->pk->acc[i].present >> last) & 1)) return g->base[i];
    /* the last axis is contiguous but in short rows run as columns (gen_narrow) */
    LLVMValueRef st = g->stride[i * IR_MAX_RANK + last], j = g->j;
    if (!LLVMIsAConstantInt(st) || LLVMConstIntGetSExtValue(st) != 1)
        j = LLVMBuildNSWMul(g->m->b, j, st, "");
    return is_zero(g->base[i]) ? j : LLVMBuildNSWAdd(g->m->b, g->base[i], j, "");
}

static LLVMValueRef access_ptr(lg_fn *g, int32_t i) {
    const plan_buf *bf = &g->p->fm->plan->bufs[g->p->pk->acc[i].buf];
    if (g->stage_ptr && g->stage_ptr[i])
        return LLVMBuildInBoundsGEP2(g->m->b, lg_storage_type(g->m, bf->dtype), g->stage_ptr[i],
                                     &g->stage_k, 1, "");
    LLVMValueRef off = offset(g, i);
    /* a partial round read whole reads past the row (within its page): a plain GEP, which may
     * point outside the buffer */
    if (g->guard)
        return LLVMBuildGEP2(g->m->b, lg_storage_type(g->m, bf->dtype),
                             g->bufp[g->p->pk->acc[i].buf], &off, 1, "");
    return LLVMBuildInBoundsGEP2(g->m->b, lg_storage_type(g->m, bf->dtype),
                                 g->bufp[g->p->pk->acc[i].buf], &off, 1, "");
}

static LLVMTypeRef arr_type(lg_fn *g, ir_ref q) {
    return LLVMArrayType(lg_compute_type(g->m, g->f->nodes[q].dtype), g->colw);
}

static LLVMValueRef arr_ptr(lg_fn *g, ir_ref q, LLVMValueRef c) {
    LLVMValueRef idx[2] = {ci64(g->m, 0), c};
    return LLVMBuildInBoundsGEP2(g->m->b, arr_type(g, q), g->arr[q], idx, 2, "");
}

/* Names an instruction after the IR node it computes (constants have no name). */
static void name_value(LLVMValueRef v, char prefix, ir_ref r) {
    if (!LLVMIsAInstruction(v)) return;
    char name[24];
    int n = snprintf(name, sizeof name, "%c%d", prefix, (int)r);
    LLVMSetValueName2(v, name, (size_t)n);
}

static int available(const lg_fn *g, ir_ref q) {
    return g->val[q] || (g->in_arr && g->in_arr[q]);
}

/* A value computed before (in this scope or an enclosing one), a constant, a load, or a
 * column's per-result value. */
static LLVMValueRef value_of(lg_fn *g, ir_ref q) {
    lg_mod *m = g->m;
    if (g->val[q]) return g->val[q];
    const ir_node *n = &g->f->nodes[q];
    LLVMValueRef v;
    if (n->op == IR_OP_CONST) {
        v = lg_const(m, n);
        g->val[q] = v;
        g->lvl[q] = 0; /* constants are valid everywhere */
        return v;
    }
    if (g->p->pk->load_acc[q] >= 0 && g->p->pk->acc[g->p->pk->load_acc[q]].buf == PLAN_NO_BUF) {
        v = offset(g, g->p->pk->load_acc[q]); /* an index: the offset a dense buffer would have */
    } else if (g->p->pk->load_acc[q] >= 0) {
        v = lg_load(m, n->dtype, access_ptr(g, g->p->pk->load_acc[q]));
        name_value(v, 'v', q);
    } else if (g->in_arr && g->in_arr[q] && g->j) {
        v = load(g, lg_compute_type(m, n->dtype), arr_ptr(g, q, g->j));
    } else {
        lg_fail(m, "internal error: %%%d of kernel %d is used before it is computed", (int)q,
                (int)g->p->pk->kernel);
        return LLVMGetUndef(lg_compute_type(m, n->dtype));
    }
    set_val(g, q, v);
    return v;
}

/* Whether node r is a result that sweep s stores at each of its points. */
static int stored_at(const lg_fn *g, ir_ref r, int s) {
    const llvm_kplan *p = g->p;
    return in_body(g, r) && (g->f->nodes[r].flags & IR_NODE_STORED) && !p->pk->per_result[r] &&
           p->pk->stage[r] == s;
}

static int first_sweep(const lg_fn *g, ir_ref r) {
    uint32_t m = g->p->need[r];
    int s = 0;
    while (s < 31 && !((m >> s) & 1))
        s++;
    return s;
}

static int cache_loaded(const lg_fn *g, ir_ref r) {
    return g->use_cache && g->p->cache_slot && g->p->cache_slot[r] >= 0 &&
           g->sweep > first_sweep(g, r);
}

static LLVMValueRef cache_ptr(lg_fn *g, ir_ref r) {
    LLVMTypeRef t = lg_compute_type(g->m, g->f->nodes[r].dtype);
    return LLVMBuildInBoundsGEP2(g->m->b, t, g->cache_row[g->p->cache_slot[r]], &g->flat, 1, "");
}

/* Whether node q's value is an instruction of an enclosing scope (a row's reduction, seen
 * through the broadcasts that spread it over the row): a loop invariant of the current one. */
static int outer_value(const lg_fn *g, ir_ref q) {
    LLVMValueRef v = g->val[q];
    while (g->f->nodes[q].op == IR_OP_BROADCAST && g->val[g->f->nodes[q].args[0]] == v)
        q = g->f->nodes[q].args[0];
    return v && LLVMIsAInstruction(v) && g->lvl[q] < g->level;
}

/* Node r's computed value v as the kernel's later reads of it see it (see round_kept). */
static LLVMValueRef as_kept(lg_fn *g, ir_ref r, LLVMValueRef v) {
    return g->p->pk->round_kept[r] ? lg_round_to(g->m, g->f->nodes[r].dtype, v) : v;
}

/* Computes the body nodes the roots need, in body order, each once per scope. */
static void eval(lg_fn *g, const ir_ref *roots, int32_t nroots) {
    const llvm_kplan *p = g->p;
    const ir_kernel *k = g->k;
    for (int32_t i = p->pk->from; i < p->pk->to; i++)
        g->mark[k->body[i]] = 0;
    for (int32_t i = 0; i < nroots; i++)
        if (in_body(g, roots[i])) g->mark[roots[i]] = 1;
    for (int32_t i = p->pk->to - 1; i >= p->pk->from; i--) {
        ir_ref r = k->body[i];
        if (!g->mark[r] || available(g, r) || cache_loaded(g, r)) continue;
        const ir_node *n = &g->f->nodes[r];
        for (int a = 0; a < ir_ops[n->op].arity; a++) {
            ir_ref q = n->args[a];
            if (in_body(g, q) && !available(g, q)) g->mark[q] = 1;
        }
    }
    for (int32_t i = p->pk->from; i < p->pk->to; i++) {
        ir_ref r = k->body[i];
        if (!g->mark[r] || available(g, r)) continue;
        const ir_node *n = &g->f->nodes[r];
        if (cache_loaded(g, r)) {
            set_val(g, r, load(g, lg_compute_type(g->m, n->dtype), cache_ptr(g, r)));
            continue;
        }
        if (ir_ops[n->op].cls == IR_CLASS_REDUCE) {
            lg_fail(g->m, "internal error: reduction %%%d is needed before its sweep", (int)r);
            set_val(g, r, LLVMGetUndef(lg_compute_type(g->m, n->dtype)));
            continue;
        }
        LLVMValueRef args[3];
        for (int a = 0; a < ir_ops[n->op].arity; a++)
            args[a] = value_of(g, n->args[a]);
        LLVMValueRef v;
        if (g->m->fast_math && n->op == IR_OP_DIV && ir_dtype_is_float(n->dtype) &&
            outer_value(g, n->args[1]))
            v = lg_fdiv_invariant(g->m, args[0], args[1]);
        else
            v = lg_emit_op(g->m, g->f, n, args);
        v = as_kept(g, r, v);
        name_value(v, 'v', r); /* %v13 is IR node %13 */
        set_val(g, r, v);
    }
}

/* Stores node r (computed) to every buffer that holds it, at the current point. */
static void store_node(lg_fn *g, ir_ref r) {
    const llvm_kplan *p = g->p;
    for (int32_t i = 0; i < p->pk->nacc; i++)
        if (p->pk->acc[i].store && p->pk->acc[i].node == r)
            lg_store(g->m, g->f->nodes[r].dtype, value_of(g, r), access_ptr(g, i));
}

/* ---- index arithmetic ----------------------------------------------------------------------- */

/* Adds to base[] the offsets of flat index `x` over the collapsed axes axes[0 .. n) (row-major:
 * the last varies fastest). */
static void add_offsets(lg_fn *g, LLVMValueRef *base, LLVMValueRef x, const int *axes, int n) {
    LLVMBuilderRef b = g->m->b;
    const llvm_kplan *p = g->p;
    for (int i = n - 1; i >= 0; i--) {
        int c = axes[i];
        LLVMValueRef idx = x;
        if (i > 0) {
            LLVMValueRef q = LLVMBuildUDiv(b, x, g->dim[c], "");
            idx = LLVMBuildSub(b, x, LLVMBuildMul(b, q, g->dim[c], ""), "");
            x = q;
        }
        for (int32_t a = 0; a < p->pk->nacc; a++) {
            LLVMValueRef st = g->stride[a * IR_MAX_RANK + c];
            if (!st) continue;
            LLVMValueRef term = LLVMIsAConstantInt(st) && LLVMConstIntGetSExtValue(st) == 1
                                    ? idx
                                    : LLVMBuildNSWMul(b, idx, st, "");
            base[a] = is_zero(base[a]) ? term : LLVMBuildNSWAdd(b, base[a], term, "");
        }
    }
}

/* The collapsed axes that are reduced (red = 1) or kept (red = 0), in order, into axes[]. */
static int axes_of(const llvm_kplan *p, int red, int *axes) {
    int n = 0;
    for (int c = 0; c < p->pk->naxes; c++)
        if ((int)((p->pk->reduced >> c) & 1) == red) axes[n++] = c;
    return n;
}

static LLVMValueRef *new_bases(lg_fn *g, LLVMValueRef *from) {
    LLVMValueRef *b = ir_arena_calloc(g->m->arena, (size_t)(g->p->pk->nacc + 1), sizeof(*b));
    for (int32_t i = 0; i < g->p->pk->nacc; i++)
        b[i] = from ? from[i] : ci64(g->m, 0);
    return b;
}

/* The product of the collapsed dims axes[0 .. n). */
static LLVMValueRef dims_product(lg_fn *g, const int *axes, int n) {
    LLVMValueRef v = ci64(g->m, 1);
    for (int i = 0; i < n; i++)
        v = LLVMBuildNSWMul(g->m->b, v, g->dim[axes[i]], "");
    return v;
}

static int all_axes(const llvm_kplan *p, int *axes) {
    for (int c = 0; c < p->pk->naxes; c++)
        axes[c] = c;
    return p->pk->naxes;
}

/* ---- walking a range of elements ------------------------------------------------------------ */

typedef struct lg_walk lg_walk;
struct lg_walk {
    void (*point)(lg_fn *g, lg_walk *w);       /* at each element */
    void (*block_begin)(lg_fn *g, lg_walk *w); /* blocked walks: before each block */
    void (*block_end)(lg_fn *g, lg_walk *w);   /* after each block */
    int blocked;
    int vectorize;
    void *ctx;
    int staged;           /* the points store per-element results: in blocks, streamed when asked */
    const ir_ref *stores; /* staged walks: the nodes the points store */
    int32_t nstores;
    int one_block; /* blocked walks of one block from flat 0 (a group's rows): walk_lanes_block */
    LLVMValueRef overread; /* one_block walks: when the partial round may be read whole */
};

/* ---- streaming stores ------------------------------------------------------------------------ */

#define LG_STAGE 512 /* elements per block of staged stores */
#define LG_LINE  64  /* bytes in a cache line */

/* Copies n elements of type t from src (a staging block) to dst: non-temporal stores of the
 * target's vector width over the whole cache lines of dst, plain stores for the partial lines
 * at either end. A line must not take both kinds: the non-temporal half would leave the write-
 * combining buffer as a partial line, which memory completes with a read. */
static void stream_copy(lg_fn *g, ir_dtype dt, LLVMValueRef dst, LLVMValueRef src, LLVMValueRef n) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMTypeRef t = lg_storage_type(m, dt);
    int64_t vb = m->vector_bytes > 0 ? m->vector_bytes : 16;
    int64_t es = ir_dtypes[dt].bytes;
    int64_t line = vb > LG_LINE ? vb : LG_LINE;
    LLVMValueRef addr = LLVMBuildPtrToInt(b, dst, m->t_i64, "");
    LLVMValueRef mis = LLVMBuildAnd(b, addr, ci64(m, line - 1), "");
    LLVMValueRef headb =
        LLVMBuildAnd(b, LLVMBuildSub(b, ci64(m, line), mis, ""), ci64(m, line - 1), "");
    LLVMValueRef head = imin(g, LLVMBuildUDiv(b, headb, ci64(m, es), ""), n);
    lg_loop L;
    LLVMValueRef k = loop_begin(g, &L, ci64(m, 0), head, "head");
    store(g, load(g, t, LLVMBuildInBoundsGEP2(b, t, src, &k, 1, "")),
          LLVMBuildInBoundsGEP2(b, t, dst, &k, 1, ""));
    loop_end(g, &L, ci64(m, 1), -1);
    LLVMValueRef per_line = ci64(m, line / es);
    LLVMValueRef nlines = LLVMBuildUDiv(b, LLVMBuildSub(b, n, head, ""), per_line, "");
    LLVMValueRef nvec = LLVMBuildNSWMul(b, nlines, ci64(m, line / vb), "");
    LLVMTypeRef vt = LLVMVectorType(m->t_i64, (unsigned)(vb / 8));
    LLVMTypeRef vpt = LLVMPointerType(vt, 0);
    LLVMValueRef d0 = LLVMBuildBitCast(b, LLVMBuildInBoundsGEP2(b, t, dst, &head, 1, ""), vpt, "");
    LLVMValueRef s0 = LLVMBuildBitCast(b, LLVMBuildInBoundsGEP2(b, t, src, &head, 1, ""), vpt, "");
    LLVMValueRef v = loop_begin(g, &L, ci64(m, 0), nvec, "stream");
    LLVMValueRef x = LLVMBuildLoad2(b, vt, LLVMBuildInBoundsGEP2(b, vt, s0, &v, 1, ""), "");
    LLVMSetAlignment(x, (unsigned)es);
    LLVMValueRef st = LLVMBuildStore(b, x, LLVMBuildInBoundsGEP2(b, vt, d0, &v, 1, ""));
    LLVMSetAlignment(st, (unsigned)vb);
    LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(m->t_i32, 1, 0));
    LLVMSetMetadata(st, LLVMGetMDKindIDInContext(m->ctx, "nontemporal", 11),
                    LLVMMetadataAsValue(m->ctx, LLVMMDNodeInContext2(m->ctx, &one, 1)));
    loop_end(g, &L, ci64(m, 1), -1);
    LLVMValueRef done = LLVMBuildNSWAdd(b, head, LLVMBuildNSWMul(b, nlines, per_line, ""), "");
    k = loop_begin(g, &L, done, n, "tail");
    store(g, load(g, t, LLVMBuildInBoundsGEP2(b, t, src, &k, 1, "")),
          LLVMBuildInBoundsGEP2(b, t, dst, &k, 1, ""));
    loop_end(g, &L, ci64(m, 1), -1);
}

/* The staged results of a walk that have one dtype. Their copy out of the staging blocks is
 * one loop over them, reading each one's staging block and destination from a table, not a
 * copy a result: a kernel with K results would otherwise hold 3K loops, each with K pointers
 * live across it, and LLVM's loop passes and register allocator take time in loops x size
 * (400 f32 results took 25 s to build; 0.8 s so). */
typedef struct lg_stage_set {
    int32_t n;             /* results */
    LLVMValueRef src, dst; /* alloca [n x T*]: their staging blocks; the block's destinations */
} lg_stage_set;

/* Where entry i of a table (src or dst) of a set is, built with b. */
static LLVMValueRef stage_entry(lg_mod *m, LLVMBuilderRef b, LLVMValueRef table, LLVMValueRef i) {
    LLVMValueRef idx[2] = {ci64(m, 0), i};
    return LLVMBuildInBoundsGEP2(b, LLVMGetAllocatedType(table), table, idx, 2, "");
}

/* Allocates the staging block of each result that a walk's points store along the run
 * (tmp[i], by access), sorts them into sets by dtype (set[dtype]), each at its place in its
 * set's tables (slot[i]), and fills the src tables. The staging blocks are separate allocas:
 * alias analysis then tells the selected store pointers apart (two slices of one alloca it
 * does not, and the vectorizer adds run-time checks). */
static void stage_alloc(lg_fn *g, lg_walk *w, LLVMValueRef *tmp, int32_t *slot, lg_stage_set *set) {
    lg_mod *m = g->m;
    const llvm_kplan *p = g->p;
    for (int32_t i = 0; i < p->pk->nacc; i++) {
        /* the stores of this walk's points, along the run */
        int mine = 0;
        for (int32_t k = 0; k < w->nstores; k++)
            mine |= w->stores[k] == p->pk->acc[i].node;
        if (!p->pk->acc[i].store || !mine || !((p->pk->acc[i].present >> (p->pk->naxes - 1)) & 1))
            continue;
        ir_dtype dt = p->fm->plan->bufs[p->pk->acc[i].buf].dtype;
        LLVMTypeRef t = lg_storage_type(m, dt);
        LLVMValueRef arr = alloca_at_entry(g, LLVMArrayType(t, LG_STAGE), "stage");
        LLVMSetAlignment(arr, 64);
        tmp[i] = LLVMBuildBitCast(g->ab, arr, LLVMPointerType(t, 0), "");
        slot[i] = set[dt].n++;
    }
    for (int d = 0; d < IR_DTYPE_COUNT; d++) {
        if (!set[d].n) continue;
        LLVMTypeRef tt =
            LLVMArrayType(LLVMPointerType(lg_storage_type(m, (ir_dtype)d), 0), (unsigned)set[d].n);
        set[d].src = alloca_at_entry(g, tt, "stage_src");
        set[d].dst = alloca_at_entry(g, tt, "stage_dst");
    }
    for (int32_t i = 0; i < p->pk->nacc; i++)
        if (tmp[i]) {
            LLVMValueRef table = set[p->fm->plan->bufs[p->pk->acc[i].buf].dtype].src;
            LLVMBuildStore(g->ab, tmp[i], stage_entry(m, g->ab, table, ci64(m, slot[i])));
        }
}

/* Streams the current block of len elements of every staged result out: a loop a dtype. */
static void stage_flush(lg_fn *g, const lg_stage_set *set, LLVMValueRef len) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    for (int d = 0; d < IR_DTYPE_COUNT; d++) {
        if (!set[d].n) continue;
        LLVMTypeRef pt = LLVMGetElementType(LLVMGetAllocatedType(set[d].src));
        lg_loop L;
        LLVMValueRef r = loop_begin(g, &L, ci64(m, 0), ci64(m, set[d].n), "staged");
        LLVMValueRef src = load(g, pt, stage_entry(m, b, set[d].src, r));
        LLVMValueRef dst = load(g, pt, stage_entry(m, b, set[d].dst, r));
        stream_copy(g, (ir_dtype)d, dst, src, len);
        loop_end(g, &L, ci64(m, 1), 0);
    }
}

/* A loop attribute: vectorized with its last vector masked (predicated), no scalar remainder. */
static LLVMMetadataRef predicate_md(lg_mod *m) {
    LLVMMetadataRef pred[2] = {
        LLVMMDStringInContext2(m->ctx, "llvm.loop.vectorize.predicate.enable", 36),
        LLVMValueAsMetadata(LLVMConstInt(LLVMInt1TypeInContext(m->ctx), 1, 0))};
    return LLVMMDNodeInContext2(m->ctx, pred, 2);
}

/* The lanes a vectorized lane loop takes at once (its vectorize.width): 16 on AVX-512, else 8. */
static unsigned lane_width(const lg_mod *m) {
    return m->vector_bytes >= 64 ? 16 : 8;
}

/* The lines that the masked stores of [j0, j1) (less than a vector along the row, offsets
 * `base`) will write, fetched for writing first: a masked store of a line not in L1 holds up
 * the stores behind it as a masked load does (lane_loop below), while prefetches go ahead
 * out of order, so that a group's rows fetch their lines at once: layernorm over rows of 10
 * from memory took 1.4x as long without (bench/RESULTS.md, "Masked loads and stores"). The
 * lines of the first and the last element. */
static void masked_prefetch(lg_fn *g, LLVMValueRef *base, LLVMValueRef j0, LLVMValueRef j1,
                            int loads) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef at[2] = {j0, LLVMBuildSub(b, j1, ci64(m, 1), "")};
    for (int32_t i = 0; i < p->pk->nacc; i++) {
        const plan_access *a = &p->pk->acc[i];
        if (a->buf == PLAN_NO_BUF || !((a->present >> (p->pk->naxes - 1)) & 1) ||
            (!a->store && !loads))
            continue;
        LLVMTypeRef t = lg_storage_type(m, p->fm->plan->bufs[a->buf].dtype);
        for (int e = 0; e < 2; e++) {
            LLVMValueRef off = LLVMBuildAdd(b, base[i], at[e], "");
            LLVMValueRef ptr = LLVMBuildInBoundsGEP2(b, t, g->bufp[a->buf], &off, 1, "");
            if (a->store)
                lg_prefetch_write(m, ptr);
            else
                lg_prefetch_read(m, ptr);
        }
    }
}

/* ---- the ends of runs ----------------------------------------------------------------------
 * An element-wise kernel's vectorized loop takes several vectors a step; what is left after
 * its last step ran as scalars, an element at a time, which is all of a run shorter than a
 * step: bias + ReLU over rows of 16 floats took 2.6x a copy, over rows of 31 2.2x.
 * So, where runs may be short (more than one axis) and the body is cheap (no transcendental,
 * whose copies would cost compile time), a run is its whole steps (run_steps), then its whole
 * vectors one at a time, unmasked, then the rest masked, its lines fetched first where the run
 * is shorter than a step (masked_prefetch: masked accesses of lines that are not in L1 are
 * slow, lane_loop). Row kernels keep their loops: their tails after whole steps went slower
 * so (layernorm over rows of 120 10-40% from memory), and their short rows have their own
 * walks (group_write). */
#define LG_TAIL_MIN 8 /* shorter runs keep the loop's scalar remainder (gen_pointwise_split) */

/* The transcendentals and other expensive ops a kernel computes per element (not once per
 * result): what decides whether a loop's second copy is worth its compile time. */
static int element_math(const lg_fn *g) {
    const plan_kernel *pk = g->p->pk;
    int n = 0;
    for (int32_t i = pk->from; i < pk->to; i++) {
        ir_ref r = g->k->body[i];
        n += (ir_ops[g->f->nodes[r].op].flags & IR_OPF_EXPENSIVE) && !pk->per_result[r];
    }
    return n;
}

static int run_tails(const lg_fn *g) {
    const llvm_kplan *p = g->p;
    return !g->no_tails && p->loop == LLVM_LOOP_POINTWISE && p->pk->naxes >= 2 &&
           element_math(g) == 0;
}

/* The end of a run's steps from lo to hi: lo plus a multiple of the step of a loop of ic
 * vectors in flight (run_tail takes the rest). The step is guessed as LLVM's vectorizer picks
 * it, vectors of the narrowest element the kernel loads or stores along the run: too short a
 * guess leaves the loop's own scalar remainder some elements, too long one hands the tail
 * whole steps (bias + ReLU over rows of 64 floats took 5% longer with a step of 128, its
 * loop's four vectors then one at a time). */
static LLVMValueRef run_steps(lg_fn *g, LLVMValueRef lo, LLVMValueRef hi, unsigned ic) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    int64_t narrow = 8;
    for (int32_t i = 0; i < p->pk->nacc; i++) {
        const plan_access *a = &p->pk->acc[i];
        if (a->buf == PLAN_NO_BUF || !((a->present >> (p->pk->naxes - 1)) & 1)) continue;
        int64_t e = (int64_t)ir_dtypes[p->fm->plan->bufs[a->buf].dtype].bytes;
        if (e < narrow) narrow = e;
    }
    int64_t step = (int64_t)m->vector_bytes / narrow * (ic > 0 ? ic : 1);
    if (step < 1) step = 1;
    LLVMValueRef n = LLVMBuildAnd(b, LLVMBuildSub(b, hi, lo, ""), ci64(m, -step), "");
    return LLVMBuildNSWAdd(b, lo, n, "");
}

/* Where the index of a run's loop puts the point: j = k, or in a staged walk's block from j0,
 * j = j0 + k, with k the block's staging index too. */
typedef struct lg_run_at {
    LLVMValueRef *base, flat0, j0;
} lg_run_at;

/* A loop over [lo, hi) of a run's points, vectors of `width` lanes one at a time (1: scalars),
 * predicated or not. */
static void run_loop(lg_fn *g, lg_walk *w, const lg_run_at *at, LLVMValueRef lo, LLVMValueRef hi,
                     unsigned width, int predicated) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    lg_loop L;
    LLVMValueRef k = loop_begin(g, &L, lo, hi, "j");
    g->base = at->base;
    g->j = at->j0 ? LLVMBuildNSWAdd(b, at->j0, k, "") : k;
    g->flat = LLVMBuildNSWAdd(b, at->flat0, g->j, "");
    if (at->j0) g->stage_k = k;
    w->point(g, w);
    loop_end_id(g, &L, ci64(m, 1),
                lg_loop_id(m->ctx, width != 1, width, 1, predicated ? predicate_md(m) : NULL));
}

/* The tail of a run, [lo, hi) (less than a step of its loop), which began at `start`: its
 * whole vectors, then the rest masked where the run is shorter than a step (none of its lines
 * in L1 yet), else as scalars: after whole steps, whose lines the rest shares, the masked rest
 * was the slower (layernorm's rows of 120, when row kernels had these tails: 20-40% longer
 * from memory). */
static void run_tail(lg_fn *g, lg_walk *w, const lg_run_at *at, LLVMValueRef start, LLVMValueRef lo,
                     LLVMValueRef hi) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef width = ci64(m, lane_width(m));
    LLVMValueRef mid = LLVMBuildNSWAdd(
        b, lo, LLVMBuildAnd(b, LLVMBuildSub(b, hi, lo, ""), LLVMBuildNeg(b, width, ""), ""), "");
    run_loop(g, w, at, lo, mid, lane_width(m), 0);
    LLVMBasicBlockRef after = if_begin(g, LLVMBuildICmp(b, LLVMIntSLT, mid, hi, ""));
    LLVMBasicBlockRef masked = new_block(g, "masked"), scalar = new_block(g, "scalar"),
                      done = new_block(g, "tailed");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, lo, start, ""), masked, scalar);
    LLVMPositionBuilderAtEnd(b, masked);
    LLVMValueRef j0 = at->j0 ? at->j0 : ci64(m, 0);
    masked_prefetch(g, at->base, LLVMBuildNSWAdd(b, j0, mid, ""), LLVMBuildNSWAdd(b, j0, hi, ""),
                    1);
    run_loop(g, w, at, mid, hi, lane_width(m), 1);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, scalar);
    run_loop(g, w, at, mid, hi, 1, 0);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
    if_end(g, after);
}

/* A run whose points store per-element results, in blocks of LG_STAGE: without streaming the
 * stores go straight to memory; with it, to a staging block in the stack (L1), which is then
 * streamed out. The choice is a select of the block's store pointers, so the computing loop
 * exists once. */
static void walk_staged(lg_fn *g, lg_walk *w, LLVMValueRef *base, LLVMValueRef j0, LLVMValueRef j1,
                        LLVMValueRef flat0) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    const llvm_kplan *p = g->p;
    g->streams = 1;
    LLVMValueRef *tmp = ir_arena_calloc(m->arena, (size_t)p->pk->nacc + 1, sizeof(*tmp));
    LLVMValueRef *sel = ir_arena_calloc(m->arena, (size_t)p->pk->nacc + 1, sizeof(*sel));
    int32_t *slot = ir_arena_calloc(m->arena, (size_t)p->pk->nacc + 1, sizeof(*slot));
    lg_stage_set set[IR_DTYPE_COUNT];
    memset(set, 0, sizeof set);
    stage_alloc(g, w, tmp, slot, set);
    /* the first block ends where the first streamed result's line does, so that later
     * blocks start on a line and only the run's ends have partial lines */
    LLVMValueRef skew = ci64(m, 0);
    for (int32_t i = 0; i < p->pk->nacc; i++) {
        if (!tmp[i]) continue;
        ir_dtype dt = p->fm->plan->bufs[p->pk->acc[i].buf].dtype;
        LLVMValueRef off = LLVMBuildNSWAdd(b, base[i], j0, "");
        LLVMValueRef addr =
            LLVMBuildPtrToInt(b,
                              LLVMBuildInBoundsGEP2(b, lg_storage_type(m, dt),
                                                    g->bufp[p->pk->acc[i].buf], &off, 1, ""),
                              m->t_i64, "");
        skew = LLVMBuildUDiv(b, LLVMBuildAnd(b, addr, ci64(m, LG_LINE - 1), ""),
                             ci64(m, ir_dtypes[dt].bytes), "");
        break;
    }
    lg_loop B, L;
    LLVMValueRef b0 = loop_begin(g, &B, j0, j1, "blk");
    LLVMValueRef cap = LLVMBuildSub(
        b, ci64(m, LG_STAGE),
        LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, b0, j0, ""), skew, ci64(m, 0), ""), "");
    LLVMValueRef len = imin(g, cap, LLVMBuildSub(b, j1, b0, ""));
    for (int32_t i = 0; i < p->pk->nacc; i++) {
        if (!tmp[i]) continue;
        ir_dtype dt = p->fm->plan->bufs[p->pk->acc[i].buf].dtype;
        LLVMValueRef off = LLVMBuildNSWAdd(b, base[i], b0, "");
        LLVMValueRef dst = LLVMBuildInBoundsGEP2(b, lg_storage_type(m, dt),
                                                 g->bufp[p->pk->acc[i].buf], &off, 1, "");
        store(g, dst, stage_entry(m, b, set[dt].dst, ci64(m, slot[i])));
        sel[i] = LLVMBuildSelect(b, g->stream, tmp[i], dst, "");
    }
    int tails = run_tails(g);
    LLVMValueRef steps = tails ? run_steps(g, ci64(m, 0), len, LG_INTERLEAVE) : len;
    LLVMValueRef k = loop_begin(g, &L, ci64(m, 0), steps, "j");
    g->base = base;
    g->j = LLVMBuildNSWAdd(b, b0, k, "");
    g->flat = LLVMBuildNSWAdd(b, flat0, g->j, "");
    g->stage_ptr = sel;
    g->stage_k = k;
    int calls = m->math_calls;
    w->point(g, w);
    /* the block's trip count is small, which makes the vectorizer keep one vector in flight;
     * long bodies (inlined math) need several for their latency, and a body with a
     * transcendental twice as many (faster for a fifth more compile time, which cheap bodies
     * are not charged: bench/RESULTS.md); the loop only stores, so fewer change no result
     * (LG_LOOP_FREE: llvm_outline.c lowers the count for bodies of many math calls). A row's
     * run is the row, often shorter than vectors times the count (a bf16 result's loop is
     * widened to 32 lanes: 128 elements an iteration at 4), and without vectorized epilogues
     * (driver/cpu/cpu_jit.c) what is left runs a scalar element at a time: row kernels keep
     * one vector in flight, two with a transcendental (bf16 layernorm over rows of 64 went
     * from 3.6 to 0.97 ms, rows of 1024 and more the same: bench/RESULTS.md, "Rows shorter
     * than a loop's step") */
    LLVMMetadataRef name = LLVMMDStringInContext2(m->ctx, LG_LOOP_FREE, strlen(LG_LOOP_FREE));
    int math = m->math_calls > calls;
    unsigned ic = g->p->loop == LLVM_LOOP_ROW ? (math ? 2 : 1)
                  : math                      ? 2 * LG_INTERLEAVE
                                              : LG_INTERLEAVE;
    loop_end_id(g, &L, ci64(m, 1),
                lg_loop_id(m->ctx, 1, 0, ic, LLVMMDNodeInContext2(m->ctx, &name, 1)));
    if (tails) {
        lg_run_at at = {base, flat0, b0};
        LLVMBasicBlockRef rest = if_begin(g, LLVMBuildICmp(b, LLVMIntSLT, steps, len, ""));
        run_tail(g, w, &at, ci64(m, 0), steps, len);
        if_end(g, rest);
    }
    g->stage_ptr = NULL;
    LLVMBasicBlockRef after = if_begin(g, g->stream);
    stage_flush(g, set, len);
    if_end(g, after);
    loop_end(g, &B, len, 0);
}

/* Kinds of lane loop: a part of a round (masked), a whole round, a part read whole, a part as
 * its whole vectors and then the rest masked, and a part's whole vectors alone. */
enum { LG_ROUND_PART, LG_ROUND_WHOLE, LG_ROUND_READ, LG_ROUND_SPLIT, LG_ROUND_VECS };

/* A lane loop over lanes [lo, hi) of the round whose lane 0 is at j = jl, of a kind: its
 * points, then its vectorization (width, vectors in flight, predication, unrolling). cnt: the
 * row's lanes in a part read whole. */
static void lane_run(lg_fn *g, lg_walk *w, LLVMValueRef *base, LLVMValueRef jl, LLVMValueRef lo,
                     LLVMValueRef hi, LLVMValueRef cnt, LLVMValueRef flat0, int kind) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    lg_loop L;
    unsigned width = lane_width(m);
    LLVMValueRef l = loop_begin(g, &L, lo, hi, "lane");
    if (kind == LG_ROUND_READ) {
        g->guard = LLVMBuildICmp(b, LLVMIntSLT, l, cnt, "");
        g->guard_at = LLVMBuildNSWAdd(b, l, LLVMBuildSub(b, ci64(m, LG_LANES), cnt, ""), "");
    }
    g->base = base;
    g->j = LLVMBuildNSWAdd(b, jl, l, "");
    g->flat = LLVMBuildNSWAdd(b, flat0, g->j, "");
    g->lane = l;
    int calls = m->math_calls;
    w->point(g, w);
    g->lane = NULL;
    g->guard = g->guard_at = NULL;
    LLVMMetadataRef extra = NULL; /* predication, or the unrolling after vectorizing */
    if (kind == LG_ROUND_PART) {
        extra = predicate_md(m);
    } else if (kind == LG_ROUND_WHOLE && m->math_calls == calls) {
        /* the vectorized loop runs once: unrolled (LLVM unrolls nothing unasked here), the
         * round's lanes are at fixed places, which LICM then keeps in registers. Not with a
         * transcendental: four rows' lanes and their exps in flight outgrow the registers, and
         * softmax took 4-10% longer (bench/RESULTS.md, "Lanes in registers") */
        LLVMMetadataRef full = LLVMMDStringInContext2(m->ctx, "llvm.loop.unroll.full", 21);
        LLVMMetadataRef fu[2] = {
            LLVMMDStringInContext2(m->ctx, "llvm.loop.vectorize.followup_vectorized", 39),
            LLVMMDNodeInContext2(m->ctx, &full, 1)};
        extra = LLVMMDNodeInContext2(m->ctx, fu, 2);
    }
    loop_end_id(g, &L, ci64(m, 1),
                lg_loop_id(m->ctx, 1, width, kind == LG_ROUND_WHOLE ? LG_LANES / width : 1, extra));
}

/* The lane loops of a round: lanes [l0, l0 + cnt) of the round whose lane 0 is at j = jl.
 * Whole (cnt = LG_LANES, l0 = 0): vectors of the target's width, several in flight. A part:
 * one vector at a time, the last masked (predicated). A part read whole (l0 = 0): the round's
 * vectors that hold some of the row, one at a time and unmasked, the points past the row's end
 * read (within its page: walk_lanes_block) and accumulating the identity instead
 * (sweep_point). A part split (a group's last sweep, group_write): its whole vectors one at a
 * time, unmasked, then the lanes after them (fewer than a vector) masked.
 *
 * Short rows avoid masks (read whole, split) because, on Zen 5 at least, a masked load or
 * store of a line that is not in L1 is far slower than a plain one: the hardware's prefetchers
 * seem not to run ahead of them, and such a load waits out the whole miss (a C loop summing
 * rows of 16 floats from L3 took 2.4-4x as long with masked loads, all-ones masks, as with
 * plain ones; layernorm over rows of 16 and 31 spent most of its time on them:
 * bench/RESULTS.md, "Masked loads and stores"). Longer rows keep the masked part, whose lines
 * the whole rounds before it have brought in: split, layernorm over rows of 100 and 120 took
 * 5% longer (the second loop's set-up). */
static void lane_loop(lg_fn *g, lg_walk *w, LLVMValueRef *base, LLVMValueRef jl, LLVMValueRef l0,
                      LLVMValueRef cnt, LLVMValueRef flat0, int kind) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef width = ci64(m, lane_width(m));
    if (kind == LG_ROUND_WHOLE) {
        lane_run(g, w, base, jl, ci64(m, 0), ci64(m, LG_LANES), NULL, flat0, kind);
    } else if (kind == LG_ROUND_READ) {
        /* the vectors that hold some of the row, one at a time (the lanes of the others stay
         * the identity): on AVX2 all four vectors of a round over rows of 10 took 8% longer
         * than the masked round, the row's two 30% less (bench/RESULTS.md, "Partial rounds
         * read whole") */
        LLVMValueRef hi =
            LLVMBuildAnd(b, LLVMBuildNSWAdd(b, cnt, LLVMBuildSub(b, width, ci64(m, 1), ""), ""),
                         LLVMBuildNeg(b, width, ""), "");
        lane_run(g, w, base, jl, ci64(m, 0), hi, cnt, flat0, kind);
    } else if (kind == LG_ROUND_PART) {
        lane_run(g, w, base, jl, l0, LLVMBuildNSWAdd(b, l0, cnt, ""), NULL, flat0, kind);
    } else {
        /* a multiple of the width: LLVM's vectorizer sees it (the trip count's trailing
         * zeros) and builds no remainder for it */
        LLVMValueRef whole = LLVMBuildAnd(b, cnt, LLVMBuildNeg(b, width, ""), "");
        LLVMValueRef mid = LLVMBuildNSWAdd(b, l0, whole, "");
        lane_run(g, w, base, jl, l0, mid, NULL, flat0, LG_ROUND_VECS);
        LLVMValueRef end = LLVMBuildNSWAdd(b, l0, cnt, "");
        LLVMBasicBlockRef after = if_begin(g, LLVMBuildICmp(b, LLVMIntSLT, mid, end, ""));
        masked_prefetch(g, base, LLVMBuildNSWAdd(b, jl, mid, ""), LLVMBuildNSWAdd(b, jl, end, ""),
                        0);
        lane_run(g, w, base, jl, mid, end, NULL, flat0, LG_ROUND_PART);
        if_end(g, after);
    }
}

/* The rounds of a walk of one block from flat 0 over [j0, j1) (a group's row, at most LG_BLOCK
 * elements): the whole rounds in one loop, then the partial one after it, so that the loop of
 * whole rounds touches the lanes at fixed places only and LLVM keeps them in registers across it
 * (each round read them back from memory right after storing them); the block's end is the
 * caller's. `round` emits the lane loops of a round whose lane 0 is at jl, cnt of its lanes in
 * the row, of a kind (LG_ROUND_*). The partial round is read whole where `overread` holds (NULL:
 * never), else masked: a masked round's lanes, stored with masks and read back whole by the
 * lane tree right after, stall the core until the stores reach the cache (layernorm over rows of
 * 31 took 5x the time of rows of 32: bench/RESULTS.md, "Partial rounds read whole"). */
typedef void (*lg_round_fn)(lg_fn *g, void *ctx, LLVMValueRef jl, LLVMValueRef cnt, int kind);
static void block_rounds(lg_fn *g, LLVMValueRef j0, LLVMValueRef j1, LLVMValueRef overread,
                         lg_round_fn round, void *ctx) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    lg_loop R;
    LLVMValueRef n = LLVMBuildSub(b, j1, j0, "");
    LLVMValueRef wend =
        LLVMBuildNSWAdd(b, j0, LLVMBuildAnd(b, n, ci64(m, ~(int64_t)(LG_LANES - 1)), ""), "");
    LLVMValueRef j = loop_begin(g, &R, j0, wend, "round");
    round(g, ctx, j, NULL, LG_ROUND_WHOLE);
    loop_end(g, &R, ci64(m, LG_LANES), 0);
    LLVMBasicBlockRef after = if_begin(g, LLVMBuildICmp(b, LLVMIntSLT, wend, j1, ""));
    LLVMValueRef cnt = LLVMBuildSub(b, j1, wend, "");
    if (!overread) {
        round(g, ctx, wend, cnt, LG_ROUND_PART);
        if_end(g, after);
        return;
    }
    LLVMBasicBlockRef read = new_block(g, "read_whole"), masked = new_block(g, "masked");
    LLVMBuildCondBr(b, overread, read, masked);
    LLVMPositionBuilderAtEnd(b, read);
    round(g, ctx, wend, cnt, LG_ROUND_READ);
    LLVMBuildBr(b, after);
    LLVMPositionBuilderAtEnd(b, masked);
    round(g, ctx, wend, cnt, LG_ROUND_PART);
    if_end(g, after);
}

/* A round of a walk of one block: one lane loop over its points. */
typedef struct lg_walk_round {
    lg_walk *w;
    LLVMValueRef *base, flat0;
} lg_walk_round;

static void walk_round(lg_fn *g, void *ctx, LLVMValueRef jl, LLVMValueRef cnt, int kind) {
    lg_walk_round *r = ctx;
    lane_loop(g, r->w, r->base, jl, ci64(g->m, 0), cnt, r->flat0, kind);
}

/* walk_lanes for a walk of one block from flat 0 (a group's row): its rounds (block_rounds). A
 * group prefetches nothing (group_sweep), so neither round does here. */
static void walk_lanes_block(lg_fn *g, lg_walk *w, LLVMValueRef *base, LLVMValueRef j0,
                             LLVMValueRef j1, LLVMValueRef flat0) {
    lg_walk_round r = {w, base, flat0};
    block_rounds(g, j0, j1, w->overread, walk_round, &r);
}

/* A run of a blocked walk in the reductions' order (docs/plan.md, "The order of a
 * reduction"): the element of flat index f accumulates into lane f % LG_LANES of block
 * f / LG_BLOCK, so the run goes a round of lanes at a time, each round an inner loop over its
 * lanes that the vectorizer widens (the lanes are independent: any vector width gives the
 * same bits), and a block ends where the flat index reaches a multiple of LG_BLOCK or the
 * walk's end (g->lanes_end). The walk's flat range starts at a multiple of LG_BLOCK; its first
 * block was begun by the caller (scalar_sweep). */
static void walk_lanes(lg_fn *g, lg_walk *w, LLVMValueRef *base, LLVMValueRef j0, LLVMValueRef j1,
                       LLVMValueRef flat0) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    lg_loop R;
    if (w->one_block) {
        walk_lanes_block(g, w, base, j0, j1, flat0);
        return;
    }
    LLVMValueRef j = loop_begin(g, &R, j0, j1, "round");
    LLVMValueRef f = LLVMBuildNSWAdd(b, flat0, j, "");
    LLVMValueRef l0 = LLVMBuildAnd(b, f, ci64(m, LG_LANES - 1), "");
    LLVMValueRef cnt =
        imin(g, LLVMBuildSub(b, ci64(m, LG_LANES), l0, ""), LLVMBuildSub(b, j1, j, ""));
    LLVMValueRef jl = LLVMBuildSub(b, j, l0, ""); /* j of lane 0 of this round */
    /* a whole round, the usual one: LG_LANES wide on every CPU, in vectors of the target's
     * width (16 lanes on AVX-512, 2 in flight; 8 elsewhere, 4 in flight: with 8 on AVX-512,
     * softmax and layernorm over rows of 64 took 15-25% longer, over rows of 100 and 120
     * layernorm 10% less, whose rows then start off a 64-byte line: bench/RESULTS.md,
     * "Sixteen lanes a vector"); a partial one (a row's last, when its length is no multiple
     * of LG_LANES) in a loop of its own, one vector at a time with the last one masked
     * (predicated), so that its lanes do not run as scalars: softmax over rows of 120 took
     * twice the time of rows of 64, over rows of 10 nine times (bench/RESULTS.md, "Partial
     * rounds of lanes"). Each lane keeps its own accumulator either way: the same bits. */
    LLVMBasicBlockRef whole = new_block(g, "whole"), part = new_block(g, "part"),
                      joined = new_block(g, "joined");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, cnt, ci64(m, LG_LANES), ""), whole, part);
    LLVMValueRef *pf = g->pf_base;
    for (int k = 0; k < 2; k++) {
        LLVMPositionBuilderAtEnd(b, k == 0 ? whole : part);
        /* a partial round prefetches nothing: less than a line of the next row a vector, the
         * row's last few lanes (the whole rounds fetched the rest) */
        g->pf_base = k == 0 ? pf : NULL;
        lane_loop(g, w, base, jl, l0, cnt, flat0, k == 0 ? LG_ROUND_WHOLE : LG_ROUND_PART);
        LLVMBuildBr(b, joined);
    }
    g->pf_base = pf;
    LLVMPositionBuilderAtEnd(b, joined);
    /* a block ends at a multiple of LG_BLOCK, and the walk's last one where the walk ends */
    LLVMValueRef fe = LLVMBuildNSWAdd(b, f, cnt, "");
    LLVMValueRef next = LLVMBuildAnd(b, fe, ci64(m, LG_BLOCK - 1), "");
    LLVMBasicBlockRef after =
        if_begin(g, LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, next, ci64(m, 0), ""),
                                LLVMBuildICmp(b, LLVMIntEQ, fe, g->lanes_end, ""), ""));
    w->block_end(g, w);
    w->block_begin(g, w);
    if_end(g, after);
    loop_end(g, &R, cnt, 0);
}

/* The inner loop over j in [j0, j1) of a run whose element offsets are `base`; flat0 is the
 * flat position of j = 0. */
static void walk_run(lg_fn *g, lg_walk *w, LLVMValueRef *base, LLVMValueRef j0, LLVMValueRef j1,
                     LLVMValueRef flat0) {
    lg_mod *m = g->m;
    lg_loop L;
    if (w->staged && !w->blocked) {
        walk_staged(g, w, base, j0, j1, flat0);
        return;
    }
    if (!w->blocked) {
        int tails = run_tails(g) && w->vectorize > 0;
        LLVMValueRef steps = tails ? run_steps(g, j0, j1, (unsigned)w->vectorize) : j1;
        LLVMValueRef j = loop_begin(g, &L, j0, steps, "j");
        g->base = base;
        g->j = j;
        g->flat = LLVMBuildNSWAdd(m->b, flat0, j, "");
        w->point(g, w);
        loop_end(g, &L, ci64(m, 1), w->vectorize);
        if (tails) {
            lg_run_at at = {base, flat0, NULL};
            LLVMBasicBlockRef rest = if_begin(g, LLVMBuildICmp(m->b, LLVMIntSLT, steps, j1, ""));
            run_tail(g, w, &at, j0, steps, j1);
            if_end(g, rest);
        }
        return;
    }
    walk_lanes(g, w, base, j0, j1, flat0);
}

/* Walks flat indices [lo, hi) over the collapsed axes axes[0 .. n) (row-major; the last of
 * them must be the last collapsed axis), relative to base0. Runs along the last axis are the
 * inner loops; the offsets of the other axes are computed once per run. With no axis, one
 * point (when lo < hi). */
static void walk_runs(lg_fn *g, lg_walk *w, const int *axes, int n, LLVMValueRef *base0,
                      LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef len);
static void walk_range(lg_fn *g, lg_walk *w, const int *axes, int n, LLVMValueRef *base0,
                       LLVMValueRef lo, LLVMValueRef hi) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    if (n == 0) {
        LLVMBasicBlockRef after = if_begin(g, LLVMBuildICmp(b, LLVMIntSLT, lo, hi, ""));
        g->base = base0;
        g->j = NULL;
        g->flat = lo;
        if (w->blocked) g->lane = LLVMBuildAnd(b, lo, ci64(m, LG_LANES - 1), "");
        w->point(g, w);
        g->lane = NULL;
        if (w->blocked) w->block_end(g, w); /* the walk's one element */
        if_end(g, after);
        return;
    }
    if (axes[n - 1] != g->p->pk->naxes - 1) {
        lg_fail(m, "internal error: kernel %d walks a run along a middle axis",
                (int)g->p->pk->kernel);
        return;
    }
    if (n == 1) {
        walk_run(g, w, base0, lo, hi, ci64(m, 0));
        return;
    }
    LLVMValueRef len = g->dim[axes[n - 1]];
    walk_runs(g, w, axes, n, base0, lo, hi, len);
}

/* walk_range's runs of length len along the last of n axes, from flat lo to hi. */
static void walk_runs(lg_fn *g, lg_walk *w, const int *axes, int n, LLVMValueRef *base0,
                      LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef len) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    /* the first run starts at lo's column, every later one at column 0 of the next outer
     * index: divided once, not once a run (short runs paid for a division each) */
    LLVMValueRef outer_at = alloca_at_entry(g, g->m->t_i64, "outer");
    LLVMValueRef col_at = alloca_at_entry(g, g->m->t_i64, "col");
    LLVMValueRef outer0 = LLVMBuildUDiv(b, lo, len, "");
    store(g, outer0, outer_at);
    store(g, LLVMBuildSub(b, lo, LLVMBuildMul(b, outer0, len, ""), ""), col_at);
    lg_loop L;
    LLVMValueRef pos = loop_begin(g, &L, lo, hi, "run");
    LLVMValueRef outer = load(g, g->m->t_i64, outer_at);
    LLVMValueRef col = load(g, g->m->t_i64, col_at);
    LLVMValueRef cnt = imin(g, LLVMBuildSub(b, len, col, ""), LLVMBuildSub(b, hi, pos, ""));
    LLVMValueRef *base = new_bases(g, base0);
    add_offsets(g, base, outer, axes, n - 1);
    walk_run(g, w, base, col, LLVMBuildNSWAdd(b, col, cnt, ""), LLVMBuildSub(b, pos, col, ""));
    store(g, LLVMBuildNSWAdd(b, outer, ci64(g->m, 1), ""), outer_at);
    store(g, ci64(g->m, 0), col_at);
    loop_end(g, &L, cnt, 0);
}

/* ---- reductions in a sweep ------------------------------------------------------------------ */

typedef struct lg_red {
    ir_ref node;
    LLVMTypeRef t;
    int nparts; /* accumulators (lg_red_nparts; 1 in column sweeps) */
    /* a float sum or product of a blocked sweep, which accumulates in the order of
     * docs/plan.md: blk[0] holds the block's LG_LANES lanes and grp[0] the finished subtrees
     * of blocks (LG_LEVELS), scalars or arrays of a unit's columns; any other reduction is
     * exact in any order and accumulates in tot[k] by part (scalars, or column arrays) */
    int laned;
    LLVMValueRef tot[LG_RED_PARTS], grp[LG_RED_PARTS], blk[LG_RED_PARTS];
    LLVMValueRef total; /* a grouped row's finished laned reduction (group_trees), or NULL */
} lg_red;

typedef struct lg_sweep {
    int s;
    int32_t nred;
    lg_red *red;
    LLVMValueRef nblocks; /* blocked sweeps: the blocks done (the tree's binary counter) */
    ir_ref *roots;
    int32_t nroots;
} lg_sweep;

static int sum_like(const lg_fn *g, ir_ref r) {
    const ir_node *n = &g->f->nodes[r];
    return (n->op == IR_OP_SUM || n->op == IR_OP_MEAN || n->op == IR_OP_PROD) &&
           ir_dtype_is_float(g->f->nodes[n->args[0]].dtype);
}

/* The reductions of sweep s and the per-element values it evaluates (roots). */
static void sweep_init(lg_fn *g, lg_sweep *sw, int s) {
    const llvm_kplan *p = g->p;
    ir_arena *a = g->m->arena;
    memset(sw, 0, sizeof(*sw));
    sw->s = s;
    int32_t n = p->pk->to - p->pk->from;
    sw->red = ir_arena_calloc(a, (size_t)n + 1, sizeof(*sw->red));
    sw->roots = ir_arena_calloc(a, (size_t)n * 2 + 1, sizeof(ir_ref));
    for (int32_t i = p->pk->from; i < p->pk->to; i++) {
        ir_ref r = g->k->body[i];
        const ir_node *nd = &g->f->nodes[r];
        if (ir_ops[nd->op].cls == IR_CLASS_REDUCE && p->pk->stage[r] == s + 1) {
            lg_red *rd = &sw->red[sw->nred++];
            rd->node = r;
            rd->t = lg_red_type(g->m, g->f, nd);
            rd->nparts = 1;
            sw->roots[sw->nroots++] = nd->args[0];
        } else if (!p->pk->per_result[r] && (nd->flags & IR_NODE_STORED) && p->pk->stage[r] == s) {
            sw->roots[sw->nroots++] = r;
        }
    }
}

static int sweep_blocked(const lg_fn *g, const lg_sweep *sw) {
    for (int32_t i = 0; i < sw->nred; i++)
        if (sum_like(g, sw->red[i].node)) return 1;
    return 0;
}

/* The table of lane masks a part read whole selects with (guard_mask): 2 * LG_LANES integers of
 * the float's width, all ones in the first half, zero in the second; the mask of lane l of a
 * round with cnt lanes in the row is entry l + LG_LANES - cnt. Made once a module. */
static LLVMValueRef guard_table(lg_fn *g, LLVMTypeRef it) {
    lg_mod *m = g->m;
    const char *name = it == m->t_i64 ? "fusec_lane_masks64" : "fusec_lane_masks32";
    LLVMTypeRef at = LLVMArrayType(it, 2 * LG_LANES);
    LLVMValueRef gv = LLVMGetNamedGlobal(m->mod, name);
    if (gv) return gv;
    LLVMValueRef e[2 * LG_LANES];
    for (int i = 0; i < 2 * LG_LANES; i++)
        e[i] = i < LG_LANES ? LLVMConstAllOnes(it) : LLVMConstNull(it);
    gv = LLVMAddGlobal(m->mod, at, name);
    LLVMSetInitializer(gv, LLVMConstArray(it, e, 2 * LG_LANES));
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetAlignment(gv, 64);
    return gv;
}

/* x where the point is in the row (g->guard), else id: a part read whole's value past the
 * row's end, as bits, x & mask | id & ~mask, the mask loaded from guard_table. Not a select:
 * x86's code generator folds a select of a loaded value and zero into a masked load, which
 * costs what masked loads cost (lane_loop); the table's masks are values it cannot see
 * through. */
static LLVMValueRef guard_mask(lg_fn *g, LLVMValueRef x, LLVMValueRef id) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMTypeRef it = LLVMGetTypeKind(t) == LLVMDoubleTypeKind ? m->t_i64 : m->t_i32;
    if (LLVMGetTypeKind(t) != LLVMDoubleTypeKind && LLVMGetTypeKind(t) != LLVMFloatTypeKind)
        return LLVMBuildSelect(b, g->guard, x, id, ""); /* laned reductions are of floats */
    LLVMValueRef idx[2] = {ci64(m, 0), g->guard_at};
    LLVMValueRef mask = load(
        g, it,
        LLVMBuildInBoundsGEP2(b, LLVMArrayType(it, 2 * LG_LANES), guard_table(g, it), idx, 2, ""));
    LLVMValueRef in = LLVMBuildAnd(b, LLVMBuildBitCast(b, x, it, ""), mask, "");
    LLVMValueRef out =
        LLVMBuildAnd(b, LLVMBuildBitCast(b, id, it, ""), LLVMBuildNot(b, mask, ""), "");
    return LLVMBuildBitCast(b, LLVMBuildOr(b, in, out, ""), t, "");
}

/* The per-element work of a sweep at the current point: evaluate, accumulate into `acc`
 * (the current accumulators, part k of reduction i at i * LG_RED_PARTS + k: scalars, or
 * array elements for columns), store, cache. */
static void sweep_point(lg_fn *g, lg_sweep *sw, LLVMValueRef *acc_ptrs) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    scope_enter(g);
    eval(g, sw->roots, sw->nroots);
    for (int32_t i = 0; i < sw->nred; i++) {
        const lg_red *rd = &sw->red[i];
        const ir_node *n = &g->f->nodes[rd->node];
        LLVMValueRef v = value_of(g, n->args[0]);
        if (rd->nparts == 1) {
            LLVMValueRef acc = load(g, rd->t, acc_ptrs[i * LG_RED_PARTS]);
            LLVMValueRef x = lg_red_pre(m, g->f, n, v);
            /* past the row's end (a partial round read whole) the identity: a lane never
             * holds -0 (it starts at +0, and only -0 + -0 gives -0), so x + 0 and x * 1 are
             * x, bit for bit */
            if (g->guard) x = guard_mask(g, x, lg_red_identity(m, g->f, n));
            store(g, lg_red_combine(m, g->f, n, acc, x), acc_ptrs[i * LG_RED_PARTS]);
            continue;
        }
        LLVMValueRef x = lg_red_part_pre(m, g->f, n, v);
        for (int k = 0; k < rd->nparts; k++) {
            LLVMValueRef acc = load(g, rd->t, acc_ptrs[i * LG_RED_PARTS + k]);
            LLVMValueRef xk = x;
            if (g->guard) xk = guard_mask(g, x, lg_red_part_identity(m, g->f, n, k));
            store(g, lg_red_part_combine(m, g->f, n, k, acc, xk), acc_ptrs[i * LG_RED_PARTS + k]);
        }
    }
    for (int32_t i = 0; i < sw->nroots; i++) {
        if (stored_at(g, sw->roots[i], sw->s)) store_node(g, sw->roots[i]);
    }
    if (g->use_cache)
        for (int32_t c = 0; c < p->ncached; c++) {
            ir_ref r = p->cached[c];
            if (first_sweep(g, r) == sw->s && g->val[r]) store(g, g->val[r], cache_ptr(g, r));
        }
    scope_exit(g);
}

/* ---- scalar accumulators (row and full reductions) --------------------------------------------
 */

/* Lane l of a laned reduction rd of a scalar sweep, and level l of its tree over blocks. */
static LLVMValueRef lane_ptr(lg_fn *g, const lg_red *rd, LLVMValueRef l) {
    LLVMValueRef idx[2] = {ci64(g->m, 0), l};
    return LLVMBuildInBoundsGEP2(g->m->b, LLVMArrayType(rd->t, LG_LANES), rd->blk[0], idx, 2, "");
}

static LLVMValueRef level_ptr(lg_fn *g, const lg_red *rd, LLVMValueRef l) {
    LLVMValueRef idx[2] = {ci64(g->m, 0), l};
    return LLVMBuildInBoundsGEP2(g->m->b, LLVMArrayType(rd->t, LG_LEVELS), rd->grp[0], idx, 2, "");
}

/* Prefetches the element at this point of the row g->pf_base gives, for the loads that run
 * along the row and vary along the axes `along`: row kernels fetch their next row while this
 * one is computed in cache, column kernels rows ahead (rows_ahead). Once vectorized, one
 * prefetch per vector of elements (see llvm_prefetch.c). */
static void prefetch_ahead(lg_fn *g, uint32_t along) {
    lg_mod *m = g->m;
    const llvm_kplan *p = g->p;
    for (int32_t i = 0; i < p->pk->nacc; i++) {
        /* loads along the run, of a buffer whose next row is elsewhere (not a weight that
         * every row reads: layernorm's w and b are in cache already) */
        if (p->pk->acc[i].store || p->pk->acc[i].buf == PLAN_NO_BUF || !g->pf_base[i] ||
            !((p->pk->acc[i].present >> (p->pk->naxes - 1)) & 1) ||
            !(p->pk->acc[i].present & along))
            continue;
        ir_dtype dt = p->fm->plan->bufs[p->pk->acc[i].buf].dtype;
        /* a plain GEP: past the last row the address is outside the buffer, which a prefetch
         * may touch (it never faults) but an inbounds GEP may not name */
        LLVMValueRef off = LLVMBuildAdd(m->b, g->pf_base[i], g->j, "");
        LLVMValueRef ptr =
            LLVMBuildGEP2(m->b, lg_storage_type(m, dt), g->bufp[p->pk->acc[i].buf], &off, 1, "");
        lg_prefetch_hint(m, ptr, (int)ir_dtypes[dt].bytes);
    }
}

static void scalar_point(lg_fn *g, lg_walk *w) {
    lg_sweep *sw = w->ctx;
    if (g->pf_base && g->j) prefetch_ahead(g, ~g->p->pk->reduced & ((1u << g->p->pk->naxes) - 1));
    LLVMValueRef *pp =
        ir_arena_calloc(g->m->arena, (size_t)(sw->nred + 1) * LG_RED_PARTS, sizeof(*pp));
    for (int32_t i = 0; i < sw->nred; i++)
        for (int k = 0; k < sw->red[i].nparts; k++)
            pp[i * LG_RED_PARTS + k] =
                sw->red[i].laned ? lane_ptr(g, &sw->red[i], g->lane) : sw->red[i].tot[k];
    sweep_point(g, sw, pp);
}

/* The identity of part k of reduction rd. */
static LLVMValueRef part_identity(lg_fn *g, const lg_red *rd, int k) {
    const ir_node *n = &g->f->nodes[rd->node];
    return rd->nparts == 1 ? lg_red_identity(g->m, g->f, n)
                           : lg_red_part_identity(g->m, g->f, n, k);
}

/* Part k of accumulators a and b combined. */
static LLVMValueRef part_combine(lg_fn *g, const lg_red *rd, int k, LLVMValueRef a,
                                 LLVMValueRef b) {
    const ir_node *n = &g->f->nodes[rd->node];
    return rd->nparts == 1 ? lg_red_combine(g->m, g->f, n, a, b)
                           : lg_red_part_combine(g->m, g->f, n, k, a, b);
}

/* The lanes at p (an array of LG_LANES of rd's type) as one vector, to load or store whole. */
static LLVMValueRef lanes_vector_ptr(lg_fn *g, const lg_red *rd, LLVMValueRef p) {
    LLVMTypeRef vt = LLVMVectorType(rd->t, LG_LANES);
    return LLVMBuildBitCast(g->m->b, p, LLVMPointerType(vt, 0), "");
}

static unsigned lanes_align(const lg_red *rd) { /* an array's, not a vector's */
    return LLVMGetTypeKind(rd->t) == LLVMDoubleTypeKind ? 8 : 4;
}

/* Every lane of the block: the identity (one vector store). */
static void scalar_block_begin(lg_fn *g, lg_walk *w) {
    lg_sweep *sw = w->ctx;
    for (int32_t i = 0; i < sw->nred; i++) {
        const lg_red *rd = &sw->red[i];
        if (!rd->laned) continue;
        LLVMValueRef ids[LG_LANES];
        for (int l = 0; l < LG_LANES; l++)
            ids[l] = part_identity(g, rd, 0);
        LLVMValueRef st = LLVMBuildStore(g->m->b, LLVMConstVector(ids, LG_LANES),
                                         lanes_vector_ptr(g, rd, rd->blk[0]));
        LLVMSetAlignment(st, lanes_align(rd));
    }
}

/* The lanes at p (an array of LG_LANES of rd's type) combined by halves: lane l with lane
 * l + 16, then + 8, ... + 1 (a warp's shuffle tree), as vector operations. */
static LLVMValueRef lane_tree(lg_fn *g, const lg_red *rd, LLVMValueRef p) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef v = load(g, LLVMVectorType(rd->t, LG_LANES), lanes_vector_ptr(g, rd, p));
    LLVMSetAlignment(v, lanes_align(rd));
    for (unsigned half = LG_LANES / 2; half >= 1; half /= 2) {
        LLVMValueRef lo[LG_LANES / 2], hi[LG_LANES / 2];
        for (unsigned l = 0; l < half; l++) {
            lo[l] = LLVMConstInt(m->t_i32, l, 0);
            hi[l] = LLVMConstInt(m->t_i32, l + half, 0);
        }
        LLVMValueRef u = LLVMGetUndef(LLVMTypeOf(v));
        LLVMValueRef a = LLVMBuildShuffleVector(b, v, u, LLVMConstVector(lo, half), "");
        LLVMValueRef c = LLVMBuildShuffleVector(b, v, u, LLVMConstVector(hi, half), "");
        v = part_combine(g, rd, 0, a, c);
    }
    return LLVMBuildExtractElement(b, v, LLVMConstInt(m->t_i32, 0, 0), "");
}

/* The levels of the tree over blocks that a count of blocks names, from level 0 up, calling
 * merge(g, ctx, lv) at each, which combines the finished subtree at level lv with a newer
 * one. carries: the levels of the count's trailing ones, the merges that adding block `count`
 * makes (a binary counter's carries; returns the level where the new subtree then waits);
 * otherwise: the levels of every one bit, the subtrees a finished count leaves, combined from
 * the last to the first, which completes the tree. */
typedef void (*lg_merge_fn)(lg_fn *g, void *ctx, LLVMValueRef level);
static LLVMValueRef level_walk(lg_fn *g, LLVMValueRef count, int carries, lg_merge_fn merge,
                               void *ctx) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef cslot = alloca_at_entry(g, m->t_i64, "bits");
    LLVMValueRef lslot = alloca_at_entry(g, m->t_i64, "level");
    store(g, count, cslot);
    store(g, ci64(m, 0), lslot);
    LLVMBasicBlockRef head = new_block(g, "levels"), body = new_block(g, "level"),
                      done = new_block(g, "leveled");
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, head);
    LLVMValueRef c = load(g, m->t_i64, cslot);
    LLVMValueRef odd =
        LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, c, ci64(m, 1), ""), ci64(m, 0), "");
    LLVMBuildCondBr(b, carries ? odd : LLVMBuildICmp(b, LLVMIntNE, c, ci64(m, 0), ""), body, done);
    LLVMPositionBuilderAtEnd(b, body);
    LLVMValueRef lv = load(g, m->t_i64, lslot);
    LLVMBasicBlockRef after = carries ? NULL : if_begin(g, odd);
    merge(g, ctx, lv);
    if (after) if_end(g, after);
    store(g, LLVMBuildLShr(b, c, ci64(m, 1), ""), cslot);
    store(g, LLVMBuildNSWAdd(b, lv, ci64(m, 1), ""), lslot);
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, done);
    return load(g, m->t_i64, lslot);
}

typedef struct lg_scalar_merge {
    const lg_red *rd;
    LLVMValueRef vslot; /* the new subtree */
} lg_scalar_merge;

static void scalar_merge(lg_fn *g, void *ctx, LLVMValueRef lv) {
    const lg_scalar_merge *sm = ctx;
    LLVMValueRef left = load(g, sm->rd->t, level_ptr(g, sm->rd, lv));
    store(g, part_combine(g, sm->rd, 0, left, load(g, sm->rd->t, sm->vslot)), sm->vslot);
}

/* The block's lanes combined (lane_tree), and the block's value added to the tree over
 * blocks: block b completes the subtrees of the levels where b has its trailing ones (a
 * binary counter), each the subtree left of it combined with the new one, and the result
 * waits at the next level. */
static void scalar_block_end(lg_fn *g, lg_walk *w) {
    lg_sweep *sw = w->ctx;
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef count = load(g, m->t_i64, sw->nblocks);
    for (int32_t i = 0; i < sw->nred; i++) {
        lg_red *rd = &sw->red[i];
        if (!rd->laned) continue;
        lg_scalar_merge sm = {rd, alloca_at_entry(g, rd->t, "subtree")};
        store(g, lane_tree(g, rd, rd->blk[0]), sm.vslot);
        LLVMValueRef top = level_walk(g, count, 1, scalar_merge, &sm);
        store(g, load(g, rd->t, sm.vslot), level_ptr(g, rd, top));
    }
    store(g, LLVMBuildNSWAdd(b, count, ci64(m, 1), ""), sw->nblocks);
}

/* The scalar accumulators of sweep sw at their identities (a blocked sweep's float sums and
 * products laned, its first block begun); returns whether the sweep is blocked. */
static int sweep_accs(lg_fn *g, lg_sweep *sw) {
    lg_mod *m = g->m;
    int blocked = sweep_blocked(g, sw);
    for (int32_t i = 0; i < sw->nred; i++) {
        lg_red *rd = &sw->red[i];
        rd->nparts = lg_red_nparts(m, g->f, &g->f->nodes[rd->node]);
        rd->laned = blocked && sum_like(g, rd->node);
        if (rd->laned) {
            rd->blk[0] = alloca_at_entry(g, LLVMArrayType(rd->t, LG_LANES), "lanes");
            rd->grp[0] = alloca_at_entry(g, LLVMArrayType(rd->t, LG_LEVELS), "levels");
            continue;
        }
        for (int k = 0; k < rd->nparts; k++) {
            rd->tot[k] = alloca_at_entry(g, rd->t, "tot");
            store(g, part_identity(g, rd, k), rd->tot[k]);
        }
    }
    sw->nblocks = alloca_at_entry(g, m->t_i64, "nblocks");
    store(g, ci64(m, 0), sw->nblocks);
    if (blocked) {
        lg_walk w = {0};
        w.ctx = sw;
        scalar_block_begin(g, &w);
    }
    return blocked;
}

/* Sweep s over flat [lo, hi) of axes[0 .. n) from base0, with scalar accumulators. */
static void scalar_sweep(lg_fn *g, lg_sweep *sw, const int *axes, int n, LLVMValueRef *base0,
                         LLVMValueRef lo, LLVMValueRef hi) {
    lg_walk w = {
        scalar_point, scalar_block_begin, scalar_block_end, 0, 0, sw, 0, sw->roots, sw->nroots, 0,
        NULL};
    w.blocked = sweep_accs(g, sw);
    /* several vectors of accumulators in flight: the additions' latency is hidden (blocked
     * sweeps: a round of lanes, walk_lanes) */
    w.vectorize = sw->nred > 0 ? LG_INTERLEAVE : 0;
    w.staged = sw->nred == 0 && sw->nroots > 0; /* a last sweep that only writes */
    g->sweep = sw->s;
    g->lanes_end = hi;
    walk_range(g, &w, axes, n, base0, lo, hi);
    g->lanes_end = NULL;
}

/* The finished accumulator of reduction i of a scalar sweep (its parts made one). Laned:
 * the subtrees the count of blocks left, combined from the last (the lowest level) to the
 * first, which completes the tree over blocks (docs/plan.md); no block: the identity. */
static LLVMValueRef scalar_total(lg_fn *g, lg_sweep *sw, int32_t i) {
    lg_red *rd = &sw->red[i];
    if (rd->total) return rd->total;
    if (!rd->laned) {
        LLVMValueRef t[LG_RED_PARTS];
        for (int k = 0; k < rd->nparts; k++)
            t[k] = load(g, rd->t, rd->tot[k]);
        return rd->nparts == 1 ? t[0] : lg_red_parts_key(g->m, g->f, &g->f->nodes[rd->node], t);
    }
    lg_scalar_merge sm = {rd, alloca_at_entry(g, rd->t, "total")};
    store(g, part_identity(g, rd, 0), sm.vslot);
    level_walk(g, load(g, g->m->t_i64, sw->nblocks), 0, scalar_merge, &sm);
    return load(g, rd->t, sm.vslot);
}

/* ---- function skeletons --------------------------------------------------------------------- */

static LLVMTypeRef task_type(lg_mod *m) {
    LLVMTypeRef ps[6] = {
        LLVMPointerType(m->t_i8p, 0), m->t_i64p, m->t_i64, m->t_i64, m->t_i8p, m->t_i64};
    return LLVMFunctionType(m->t_void, ps, 6, 0);
}

static void add_attr(lg_mod *m, LLVMValueRef fn, unsigned idx, const char *name) {
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(m->ctx, kind, 0));
}

/* Declares the internal body of task `name`: (T0 *noalias, ..., i64 *syms, i64 begin,
 * i64 end, i8 *scratch, i64 flags), one typed pointer per buffer of the kernel's table. Its
 * parameter types go into ps (nbufs + 5 of them), its type into *bty. */
static LLVMValueRef fn_declare_body(lg_fn *g, const char *name, LLVMTypeRef *ps, LLVMTypeRef *bty) {
    lg_mod *m = g->m;
    const llvm_kplan *p = g->p;
    int32_t nb = p->pk->nbufs;
    for (int32_t i = 0; i < nb; i++)
        ps[i] = LLVMPointerType(lg_storage_type(m, p->fm->plan->bufs[p->pk->bufs[i]].dtype), 0);
    ps[nb] = m->t_i64p;
    ps[nb + 1] = m->t_i64;
    ps[nb + 2] = m->t_i64;
    ps[nb + 3] = m->t_i8p;
    ps[nb + 4] = m->t_i64;
    *bty = LLVMFunctionType(m->t_void, ps, (unsigned)nb + 5, 0);
    char *bname = ir_arena_printf(m->arena, "%s.body", name);
    LLVMValueRef body = LLVMAddFunction(m->mod, bname, *bty);
    LLVMSetLinkage(body, LLVMInternalLinkage);
    add_attr(m, body, LLVMAttributeFunctionIndex, "nounwind");
    /* Inlined, its noalias parameters would become alias scopes, but none for a store through
     * the select of a staging block or a parameter (walk_staged): the vectorizer then checked
     * every pair of results at run time (K results: K^2/2 checks a block) and, past about 20
     * results, left the loop scalar. A call a task costs nothing measurable. */
    add_attr(m, body, LLVMAttributeFunctionIndex, "noinline");
    for (int32_t i = 0; i < nb; i++)
        add_attr(m, body, (unsigned)i + 1, "noalias");
    add_attr(m, body, (unsigned)nb + 4, "noalias");
    return body;
}

/* The length of collapsed axis c: the product of its domain dims, each a symbol loaded from
 * syms (an i64 *) or a literal. */
static LLVMValueRef axis_len(lg_fn *g, LLVMValueRef syms, int c) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    const plan_kernel *pk = g->p->pk;
    LLVMValueRef d = NULL;
    for (int32_t a = 0; a < pk->dom.rank; a++) {
        if (!((pk->axis_dims[c] >> a) & 1)) continue;
        ir_dim dm = pk->dom.dims[a];
        LLVMValueRef v;
        if (dm.sym >= 0) {
            LLVMValueRef idx = ci64(m, dm.sym);
            v = load(g, m->t_i64, LLVMBuildInBoundsGEP2(b, m->t_i64, syms, &idx, 1, ""));
            LLVMSetValueName2(v, g->f->syms[dm.sym], strlen(g->f->syms[dm.sym]));
        } else {
            v = ci64(m, dm.size);
        }
        d = d ? LLVMBuildNSWMul(b, d, v, "") : v;
    }
    return d ? d : ci64(m, 1);
}

/* In wrapper w, where `cond` holds, a call of body fn with args and the return; the builder is
 * left where it does not. */
static void call_if(lg_fn *g, LLVMValueRef w, LLVMValueRef cond, LLVMValueRef fn, LLVMTypeRef bty,
                    LLVMValueRef *args, unsigned nargs) {
    LLVMBuilderRef b = g->m->b;
    LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(g->m->ctx, w, "call"),
                      other = LLVMAppendBasicBlockInContext(g->m->ctx, w, "other");
    LLVMBuildCondBr(b, cond, then, other);
    LLVMPositionBuilderAtEnd(b, then);
    LLVMBuildCall2(b, bty, fn, args, nargs, "");
    LLVMBuildRetVoid(b);
    LLVMPositionBuilderAtEnd(b, other);
}

/* The exported wrapper `name` with the C ABI of codegen/cpu/llvm.h: loads each buffer's
 * pointer from the table (argument 0), casts it to the body's type, and calls the body with
 * them and its other arguments unchanged; or g->narrow_fn instead, where there is one, for
 * rows of at most g->narrow_len elements, and g->one_fn for rows of one (the row kernel's body
 * stays as it was). */
static void fn_wrapper(lg_fn *g, const char *name, const LLVMTypeRef *ps, LLVMTypeRef bty,
                       LLVMValueRef body) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    const llvm_kplan *p = g->p;
    int32_t nb = p->pk->nbufs;
    LLVMValueRef w = LLVMAddFunction(m->mod, name, task_type(m));
    add_attr(m, w, LLVMAttributeFunctionIndex, "nounwind");
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(m->ctx, w, "entry"));
    LLVMValueRef *args = ir_arena_calloc(m->arena, (size_t)nb + 5, sizeof(*args));
    LLVMValueRef table = LLVMGetParam(w, 0);
    for (int32_t i = 0; i < nb; i++) {
        LLVMValueRef idx = ci64(m, p->pk->bufs[i]);
        LLVMValueRef slot = LLVMBuildInBoundsGEP2(b, m->t_i8p, table, &idx, 1, "");
        args[i] = LLVMBuildBitCast(b, load(g, m->t_i8p, slot), ps[i], "");
    }
    for (int i = 0; i < 5; i++)
        args[nb + i] = LLVMGetParam(w, (unsigned)i + 1);
    LLVMValueRef len = g->narrow_fn ? axis_len(g, LLVMGetParam(w, 1), 1) : NULL;
    if (g->one_fn)
        call_if(g, w, LLVMBuildICmp(b, LLVMIntEQ, len, ci64(m, 1), ""), g->one_fn, bty, args,
                (unsigned)nb + 5);
    if (g->narrow_fn)
        call_if(g, w, LLVMBuildICmp(b, LLVMIntSLE, len, ci64(m, g->narrow_len), ""), g->narrow_fn,
                bty, args, (unsigned)nb + 5);
    LLVMBuildCall2(b, bty, body, args, (unsigned)nb + 5, "");
    LLVMBuildRetVoid(b);
}

/* Starts function fn's code: an entry block that only holds allocas (g->ab is positioned among
 * them) and branches to "start", where the builder is left. */
static void fn_entry(lg_fn *g, LLVMValueRef fn) {
    lg_mod *m = g->m;
    g->fn = fn;
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(m->ctx, fn, "entry");
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(m->ctx, fn, "start");
    LLVMPositionBuilderAtEnd(m->b, entry);
    LLVMValueRef br = LLVMBuildBr(m->b, start);
    g->ab = LLVMCreateBuilderInContext(m->ctx);
    LLVMPositionBuilderBefore(g->ab, br);
    LLVMPositionBuilderAtEnd(m->b, start);
}

/* Opens the body (fn_entry), the parameters into g. */
static void fn_body_begin(lg_fn *g, LLVMValueRef body) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    const llvm_kplan *p = g->p;
    int32_t nb = p->pk->nbufs;
    fn_entry(g, body);

    g->bufp = ir_arena_calloc(m->arena, (size_t)p->fm->plan->nbufs + 1, sizeof(*g->bufp));
    for (int32_t i = 0; i < nb; i++)
        g->bufp[p->pk->bufs[i]] = LLVMGetParam(body, (unsigned)i);
    g->syms = LLVMGetParam(body, (unsigned)nb);
    g->begin = LLVMGetParam(body, (unsigned)nb + 1);
    g->end = LLVMGetParam(body, (unsigned)nb + 2);
    g->scratch = LLVMGetParam(body, (unsigned)nb + 3);
    g->flags = LLVMGetParam(body, (unsigned)nb + 4);
    g->stream =
        LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, g->flags, ci64(m, LLVM_TASK_STREAM), ""),
                      ci64(m, 0), "stream");
}

/* The collapsed dims (g->dim: each the product of its domain dims, a symbol loaded from syms
 * or a literal), and each access's strides along the axes it varies along (g->stride). */
static void fn_dims(lg_fn *g) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    const llvm_kplan *p = g->p;
    for (int c = 0; c < p->pk->naxes; c++)
        g->dim[c] = axis_len(g, g->syms, c);
    g->stride =
        ir_arena_calloc(m->arena, (size_t)(p->pk->nacc + 1) * IR_MAX_RANK, sizeof(*g->stride));
    for (int32_t i = 0; i < p->pk->nacc; i++) {
        LLVMValueRef s = NULL;
        for (int c = p->pk->naxes - 1; c >= 0; c--) {
            if (!((p->pk->acc[i].present >> c) & 1)) continue;
            g->stride[i * IR_MAX_RANK + c] = s ? s : ci64(m, 1);
            s = s ? LLVMBuildNSWMul(b, s, g->dim[c], "") : g->dim[c];
        }
    }
}

/* Starts task `name`: the exported wrapper, and the internal body it calls, whose entry the
 * builder is left in with dims and strides computed. */
static void fn_begin(lg_fn *g, const char *name, int wrapped) {
    lg_mod *m = g->m;
    LLVMTypeRef *ps = ir_arena_calloc(m->arena, (size_t)g->p->pk->nbufs + 5, sizeof(*ps));
    LLVMTypeRef bty;
    LLVMValueRef body = fn_declare_body(g, name, ps, &bty);
    if (wrapped) fn_wrapper(g, name, ps, bty, body);
    fn_body_begin(g, body);
    fn_dims(g);
    size_t nn = (size_t)g->f->nnodes + 1;
    g->val = ir_arena_calloc(m->arena, nn, sizeof(*g->val));
    g->lvl = ir_arena_calloc(m->arena, nn, sizeof(*g->lvl));
    g->mark = ir_arena_calloc(m->arena, nn, 1);
    g->level = 1;
    g->j = NULL;
    g->base = new_bases(g, NULL);
    g->flat = ci64(m, 0);
}

static void fn_end(lg_fn *g) {
    lg_mod *m = g->m;
    if (g->streams && m->x86) {
        /* streaming stores are weakly ordered: fence them before the pool reports done */
        LLVMBasicBlockRef after = if_begin(g, g->stream);
        LLVMValueRef fn = LLVMGetNamedFunction(m->mod, "llvm.x86.sse.sfence");
        LLVMTypeRef fty = LLVMFunctionType(m->t_void, NULL, 0, 0);
        if (!fn) fn = LLVMAddFunction(m->mod, "llvm.x86.sse.sfence", fty);
        LLVMBuildCall2(m->b, fty, fn, NULL, 0, "");
        if_end(g, after);
    }
    LLVMBuildRetVoid(g->m->b);
    LLVMDisposeBuilder(g->ab);
    g->ab = NULL;
}

/* ---- pointwise --------------------------------------------------------------------------------
 */

static void pointwise_point(lg_fn *g, lg_walk *w) {
    (void)w;
    const llvm_kplan *p = g->p;
    ir_ref *roots = w->ctx;
    int32_t n = 0;
    for (int32_t i = p->pk->from; i < p->pk->to; i++)
        if (g->f->nodes[g->k->body[i]].flags & IR_NODE_STORED) roots[n++] = g->k->body[i];
    scope_enter(g);
    eval(g, roots, n);
    for (int32_t i = 0; i < n; i++)
        store_node(g, roots[i]);
    scope_exit(g);
}

static void gen_pointwise(lg_fn *g) {
    ir_ref *roots =
        ir_arena_calloc(g->m->arena, (size_t)(g->p->pk->to - g->p->pk->from) + 1, sizeof(ir_ref));
    int32_t n = 0;
    for (int32_t i = g->p->pk->from; i < g->p->pk->to; i++)
        if (g->f->nodes[g->k->body[i]].flags & IR_NODE_STORED) roots[n++] = g->k->body[i];
    lg_walk w = {pointwise_point, NULL, NULL, 0, LG_INTERLEAVE, roots, 1, roots, n, 0, NULL};
    int axes[IR_MAX_RANK];
    walk_range(g, &w, axes, all_axes(g->p, axes), g->base, g->begin, g->end);
}

/* ---- row reductions ------------------------------------------------------------------------ */

/* Evaluates and stores the per-result values of stage s at the row's point (j NULL), or at
 * column j of a narrow unit in registers (narrow_regs). */
static void per_result_stage(lg_fn *g, int s, LLVMValueRef *rowbase, LLVMValueRef j) {
    const llvm_kplan *p = g->p;
    ir_ref *roots =
        ir_arena_calloc(g->m->arena, (size_t)(p->pk->to - p->pk->from) + 1, sizeof(ir_ref));
    int32_t n = 0;
    for (int32_t i = p->pk->from; i < p->pk->to; i++) {
        ir_ref r = g->k->body[i];
        if (p->pk->per_result[r] && p->pk->stage[r] == s &&
            ir_ops[g->f->nodes[r].op].cls != IR_CLASS_REDUCE)
            roots[n++] = r;
    }
    g->base = rowbase;
    g->j = j;
    eval(g, roots, n);
    for (int32_t i = p->pk->from; i < p->pk->to; i++) {
        ir_ref r = g->k->body[i];
        if (p->pk->per_result[r] && p->pk->stage[r] == s && (g->f->nodes[r].flags & IR_NODE_STORED))
            store_node(g, r);
    }
}

/* The rows a row kernel walks at once: LLVM_ROW_GROUP rows of at most LLVM_ROW_GROUP_MAX
 * elements, or one. The sweeps that reduce walk the group's rows together, each point
 * evaluating every row, so that one row's horizontal reductions and the chain from its
 * reductions to its next sweep, whose latency a short row cannot hide, overlap another row's
 * work; a sweep that only writes goes row by row. Each row has its own offsets, values
 * (rows_enter swaps them in), cached values and accumulators, and keeps its own order. */
typedef struct lg_rows {
    int n;
    int short_rows; /* rows shorter than two rounds that end in a partial one (short_groups) */
    int prefetch;   /* the current sweep prefetches the rows after the group's */
    LLVMValueRef *base[LLVM_ROW_GROUP], *next[LLVM_ROW_GROUP], *cache[LLVM_ROW_GROUP];
    LLVMValueRef *val[LLVM_ROW_GROUP];
    int *lvl[LLVM_ROW_GROUP];
    lg_sweep sw[LLVM_ROW_GROUP];
} lg_rows;

static void rows_enter(lg_fn *g, const lg_rows *rs, int k) {
    g->val = rs->val[k];
    g->lvl = rs->lvl[k];
    g->cache_row = rs->cache[k];
    g->pf_base = rs->prefetch ? rs->next[k] : NULL;
}

/* A walk's callback for each row of the group in turn, with that row's values, offsets and
 * sweep. */
typedef void (*lg_walk_fn)(lg_fn *g, lg_walk *w);
static void each_row(lg_fn *g, lg_walk *w, lg_walk_fn fn) {
    lg_rows *rs = w->ctx;
    for (int k = 0; k < rs->n; k++) {
        rows_enter(g, rs, k);
        g->base = rs->base[k];
        lg_walk one = *w;
        one.ctx = &rs->sw[k];
        fn(g, &one);
    }
}

static void group_point(lg_fn *g, lg_walk *w) {
    each_row(g, w, scalar_point);
}

_Static_assert(LLVM_ROW_GROUP_MAX <= LG_BLOCK, "a grouped row is one block");
_Static_assert((LLVM_ROW_GROUP & (LLVM_ROW_GROUP - 1)) == 0, "rows pair up in group_tree");

static void group_nothing(lg_fn *g, lg_walk *w) {
    (void)g;
    (void)w;
}

/* The indices of a shuffle that takes, from each of `segs` segments of `w` lanes of a vector
 * whose segments start at `from`, the `h` lanes from offset `at` within the segment: appended
 * at ids[*n]. */
static void tree_ids(lg_mod *m, LLVMValueRef *ids, unsigned *n, unsigned from, unsigned segs,
                     unsigned w, unsigned at, unsigned h) {
    for (unsigned s = 0; s < segs; s++)
        for (unsigned l = 0; l < h; l++)
            ids[(*n)++] = LLVMConstInt(m->t_i32, from + s * w + at + l, 0);
}

/* The lane trees of the n rows of a group (n a power of two), v[k] the LG_LANES lanes of row
 * k, into out[k]: each step combines lane l with lane l + h of every row as lane_tree does,
 * the same additions in the same order, but once a row's lanes fit in half a vector of the
 * target, two vectors' rows share one: [row a's low halves, row b's low halves] with the
 * high halves: on AVX-512 four rows' trees take 9 vector additions where four lane trees
 * took 20, each a step of the rows' critical path (bench/RESULTS.md, "Sixteen lanes a
 * vector"). */
static void group_tree(lg_fn *g, const lg_red *rd, LLVMValueRef *v, int n, LLVMValueRef *out) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    unsigned bytes = LLVMGetTypeKind(rd->t) == LLVMDoubleTypeKind ? 8 : 4;
    unsigned full = (unsigned)m->vector_bytes / bytes; /* lanes a target vector holds */
    unsigned w = LG_LANES, per = 1, nv = (unsigned)n;
    LLVMValueRef ids[2 * LG_LANES * LLVM_ROW_GROUP];
    while (w > 1) {
        unsigned h = w / 2, nlo = 0, nhi = 0;
        if (nv > 1 && w * per <= full) {
            for (unsigned j = 0; j < nv / 2; j++) {
                nlo = nhi = 0;
                tree_ids(m, ids, &nlo, 0, per, w, 0, h);
                tree_ids(m, ids, &nlo, w * per, per, w, 0, h);
                tree_ids(m, ids + nlo, &nhi, 0, per, w, h, h);
                tree_ids(m, ids + nlo, &nhi, w * per, per, w, h, h);
                LLVMValueRef lo = LLVMBuildShuffleVector(b, v[2 * j], v[2 * j + 1],
                                                         LLVMConstVector(ids, nlo), "");
                LLVMValueRef hi = LLVMBuildShuffleVector(b, v[2 * j], v[2 * j + 1],
                                                         LLVMConstVector(ids + nlo, nhi), "");
                v[j] = part_combine(g, rd, 0, lo, hi);
            }
            nv /= 2;
            per *= 2;
        } else {
            tree_ids(m, ids, &nlo, 0, per, w, 0, h);
            tree_ids(m, ids + nlo, &nhi, 0, per, w, h, h);
            for (unsigned j = 0; j < nv; j++) {
                LLVMValueRef u = LLVMGetUndef(LLVMTypeOf(v[j]));
                LLVMValueRef lo = LLVMBuildShuffleVector(b, v[j], u, LLVMConstVector(ids, nlo), "");
                LLVMValueRef hi =
                    LLVMBuildShuffleVector(b, v[j], u, LLVMConstVector(ids + nlo, nhi), "");
                v[j] = part_combine(g, rd, 0, lo, hi);
            }
        }
        w = h;
    }
    for (int k = 0; k < n; k++)
        out[k] = LLVMBuildExtractElement(b, v[(unsigned)k / per],
                                         LLVMConstInt(m->t_i32, (unsigned)k % per, 0), "");
}

/* The laned reductions of a group's sweep finished: a grouped row is one block (its length is
 * at most LLVM_ROW_GROUP_MAX), so its lane tree is its total, with no tree over blocks. */
static void group_trees(lg_fn *g, lg_rows *rs) {
    for (int32_t i = 0; i < rs->sw[0].nred; i++) {
        if (!rs->sw[0].red[i].laned) continue;
        LLVMValueRef v[LLVM_ROW_GROUP], out[LLVM_ROW_GROUP];
        for (int k = 0; k < rs->n; k++) {
            const lg_red *rd = &rs->sw[k].red[i];
            v[k] = load(g, LLVMVectorType(rd->t, LG_LANES), lanes_vector_ptr(g, rd, rd->blk[0]));
            LLVMSetAlignment(v[k], lanes_align(rd));
        }
        group_tree(g, &rs->sw[0].red[i], v, rs->n, out);
        for (int k = 0; k < rs->n; k++)
            rs->sw[k].red[i].total = out[k];
    }
}

/* A group's last sweep, which only writes, over rows of at most GROUP_WRITE_MAX elements whose
 * results do not stream, in a kernel that caches no values of its rows: the rows together a
 * round of lanes at a time, stores straight to memory, in one walk for the group. Each row's
 * own walk (walk_staged: its set-up, a block loop, one vector at a time, the elements after the
 * last whole vector one by one) is more instructions than the rest of such a row's work:
 * layernorm over rows of 32 and 64 took 15-19% less time so (AVX2 6-15%). Longer rows go a row
 * at a time: over rows of 96 and 100 from memory layernorm took 15-30% longer together (in
 * cache, one thread, 12% less: the stores issued faster held up the loads). So do rows whose
 * last sweep reads cached values: softmax (its exp cached) took 2-6% longer together, its last
 * sweep a small part of a row behind the exp's. bench/RESULTS.md, "The last sweep of a group". */
#define GROUP_WRITE_MAX (2 * LG_LANES)
/* A round of a group's last sweep: a lane loop a row (one loop over every row's stores and loads
 * would be vectorized behind run-time checks that the rows of a result do not overlap, and run
 * as scalars when they fail). */
typedef struct lg_rows_round {
    lg_rows *rs;
    lg_walk *w; /* a walk a row */
} lg_rows_round;

static void rows_round(lg_fn *g, void *ctx, LLVMValueRef jl, LLVMValueRef cnt, int kind) {
    lg_rows_round *r = ctx;
    if (kind == LG_ROUND_PART && r->rs->short_rows) kind = LG_ROUND_SPLIT;
    for (int k = 0; k < r->rs->n; k++) {
        rows_enter(g, r->rs, k);
        lane_loop(g, &r->w[k], r->rs->base[k], jl, ci64(g->m, 0), cnt, ci64(g->m, 0), kind);
    }
}

static void group_write(lg_fn *g, lg_rows *rs, int s, LLVMValueRef rowlen) {
    lg_walk w[LLVM_ROW_GROUP];
    for (int k = 0; k < rs->n; k++) {
        rows_enter(g, rs, k);
        sweep_init(g, &rs->sw[k], s);
        w[k] = (lg_walk){
            scalar_point, group_nothing, group_nothing, 1, 0, &rs->sw[k], 0, NULL, 0, 1, NULL};
    }
    g->sweep = s;
    g->lanes_end = rowlen;
    lg_rows_round r = {rs, w};
    block_rounds(g, ci64(g->m, 0), rowlen, NULL, rows_round, &r);
    g->lanes_end = NULL;
}

/* The current sweep a row of the group after the other. */
static void group_apart(lg_fn *g, lg_rows *rs, const int *red, int nr, LLVMValueRef rowlen) {
    for (int k = 0; k < rs->n; k++) {
        rows_enter(g, rs, k);
        scalar_sweep(g, &rs->sw[k], red, nr, rs->base[k], ci64(g->m, 0), rowlen);
    }
}

/* A group's last sweep, which only writes, in a kernel that caches nothing: rows of at most
 * GROUP_WRITE_MAX elements that do not stream together (group_write), others a row at a time
 * (through their staging blocks when they stream). */
static void group_last(lg_fn *g, lg_rows *rs, int s, const int *red, int nr, LLVMValueRef rowlen) {
    LLVMBuilderRef b = g->m->b;
    LLVMBasicBlockRef together = new_block(g, "together"), apart = new_block(g, "apart"),
                      after = new_block(g, "written");
    LLVMValueRef short_row = LLVMBuildICmp(b, LLVMIntSLE, rowlen, ci64(g->m, GROUP_WRITE_MAX), "");
    LLVMBuildCondBr(b, LLVMBuildAnd(b, short_row, LLVMBuildNot(b, g->stream, ""), ""), together,
                    apart);
    LLVMPositionBuilderAtEnd(b, apart);
    group_apart(g, rs, red, nr, rowlen);
    LLVMBuildBr(b, after);
    LLVMPositionBuilderAtEnd(b, together);
    group_write(g, rs, s, rowlen);
    LLVMBuildBr(b, after);
    LLVMPositionBuilderAtEnd(b, after);
}

/* Whether sweep sw only reads and reduces into lanes: it stores no result and caches no value
 * per element, and each of its reductions is laned. Its partial round may then be read whole,
 * past the row's end, the points there adding the identity (sweep_point). */
static int sweep_reads_only(const lg_fn *g, const lg_sweep *sw) {
    const llvm_kplan *p = g->p;
    for (int32_t i = 0; i < sw->nred; i++)
        if (!sw->red[i].laned) return 0;
    for (int32_t i = 0; i < sw->nroots; i++)
        if (stored_at(g, sw->roots[i], sw->s)) return 0;
    if (g->use_cache)
        for (int32_t c = 0; c < p->ncached; c++)
            if (first_sweep(g, p->cached[c]) == sw->s) return 0;
    return 1;
}

/* Whether the group's partial round is read whole (short rows, short_groups): for every row
 * and every buffer read along the row, the last lane read (the last of the row's
 * vectors: rowlen rounded up to lane_width) lies in the page of the row's last element, so that
 * the reads past the row fault nowhere (pages are 4 KB at least). Checked up to the round's
 * end instead, layernorm over rows of 16 failed it at every row when a page ended 64 to 128
 * bytes past the start of its weights (a row of 16 floats), and every row ran masked. */
#define LG_PAGE_SHIFT 12 /* 4 KB pages, the least x86-64 has */
static LLVMValueRef rows_overread(lg_fn *g, const lg_rows *rs, LLVMValueRef rowlen) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef last = LLVMBuildSub(b, rowlen, ci64(m, 1), "");
    LLVMValueRef end = LLVMBuildOr(b, last, ci64(m, lane_width(m) - 1), ""); /* last read */
    LLVMValueRef ok = LLVMConstInt(m->t_i1, 1, 0);
    for (int k = 0; k < rs->n; k++)
        for (int32_t i = 0; i < p->pk->nacc; i++) {
            const plan_access *a = &p->pk->acc[i];
            if (a->store || a->buf == PLAN_NO_BUF || !((a->present >> (p->pk->naxes - 1)) & 1))
                continue;
            LLVMTypeRef t = lg_storage_type(m, p->fm->plan->bufs[a->buf].dtype);
            LLVMValueRef at[2];
            LLVMValueRef js[2] = {last, end};
            for (int e = 0; e < 2; e++) {
                LLVMValueRef off = LLVMBuildAdd(b, rs->base[k][i], js[e], "");
                at[e] = LLVMBuildLShr(
                    b,
                    LLVMBuildPtrToInt(b, LLVMBuildGEP2(b, t, g->bufp[a->buf], &off, 1, ""),
                                      m->t_i64, ""),
                    ci64(m, LG_PAGE_SHIFT), "");
            }
            ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntEQ, at[0], at[1], ""), "");
        }
    return ok;
}

/* Sweep s of every row of the group over [0, rowlen) of its one reduced axis: a reducing
 * sweep together, the last (group_last) together or row by row. */
static void group_sweep(lg_fn *g, lg_rows *rs, int s, const int *red, int nr, LLVMValueRef rowlen) {
    for (int k = 0; k < rs->n; k++) {
        rows_enter(g, rs, k);
        sweep_init(g, &rs->sw[k], s);
    }
    /* the second sweep (the first computes in cache what the one before brought in)
     * prefetches the next row, when the row is one run; not a group's: rows in groups are
     * short and read in order, which the hardware's prefetchers follow, and the group's
     * prefetches cost more than they bring (four rows' next-row addresses, which LLVM packs
     * into vectors and moves out one by one: without them softmax over rows of 64 took 14%
     * less time and layernorm 35% less, bench/RESULTS.md, "Rows in groups of four") */
    rs->prefetch = s == 1 && nr == 1 && rs->n == 1 && sweep_blocked(g, &rs->sw[0]);
    if (rs->n > 1 && rs->sw[0].nred == 0 && !g->use_cache) {
        group_last(g, rs, s, red, nr, rowlen);
        return;
    }
    if (rs->n == 1 || rs->sw[0].nred == 0) {
        group_apart(g, rs, red, nr, rowlen);
        rs->prefetch = 0;
        return;
    }
    /* a grouped row is one block (one_block: walk_lanes_block): its lanes are begun by
     * sweep_accs and finished together after the walk (group_trees) */
    lg_walk w = {group_point, group_nothing, group_nothing, 0, 0, rs, 0, NULL, 0, 1, NULL};
    for (int k = 0; k < rs->n; k++) {
        rows_enter(g, rs, k);
        w.blocked = sweep_accs(g, &rs->sw[k]);
    }
    /* as many vectors of accumulators in flight as one row's sweep has */
    w.vectorize = LG_INTERLEAVE / rs->n > 1 ? LG_INTERLEAVE / rs->n : 1;
    if (rs->short_rows && w.blocked && sweep_reads_only(g, &rs->sw[0]))
        w.overread = rows_overread(g, rs, rowlen);
    g->sweep = s;
    g->lanes_end = rowlen;
    walk_range(g, &w, red, nr, rs->base[0], ci64(g->m, 0), rowlen);
    g->lanes_end = NULL;
    rs->prefetch = 0;
    if (w.blocked) group_trees(g, rs);
}

/* The group's values of stage s, computed once a row (the reductions' results and what
 * follows from them: a mean's division, layernorm's rsqrt, softmax's maximum made a float),
 * gathered into one vector a value, frozen, and read back from it: the vector is where LLVM's
 * SLP vectorizer starts from, and it then computes the rows' chains of scalar operations
 * (divisions and square roots of 10-20 cycles each) as one chain of vector operations, the
 * same IEEE operations on each row's values. (Without the freeze InstCombine reads each
 * value straight from its row's chain again, before the SLP vectorizer runs.) */
static void group_gather(lg_fn *g, lg_rows *rs, int s) {
    const llvm_kplan *p = g->p;
    LLVMBuilderRef b = g->m->b;
    for (int32_t i = p->pk->from; i < p->pk->to; i++) {
        ir_ref r = g->k->body[i];
        if (!p->pk->per_result[r] || p->pk->stage[r] != s) continue;
        LLVMValueRef v0 = rs->val[0][r];
        if (!v0 || !LLVMIsAInstruction(v0) || LLVMGetTypeKind(LLVMTypeOf(v0)) == LLVMVectorTypeKind)
            continue;
        LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(LLVMTypeOf(v0), (unsigned)rs->n));
        for (int k = 0; k < rs->n; k++)
            vec =
                LLVMBuildInsertElement(b, vec, rs->val[k][r], LLVMConstInt(g->m->t_i32, k, 0), "");
        vec = LLVMBuildFreeze(b, vec, "");
        for (int k = 0; k < rs->n; k++)
            rs->val[k][r] = LLVMBuildExtractElement(b, vec, LLVMConstInt(g->m->t_i32, k, 0), "");
    }
}

/* Prefetches bytes [from, to) of `base` (an i8*) a cache line at a time, for writing or for
 * reading: a loop of its own, one prefetch an iteration (group_prefetch, narrow_prefetch). */
static void prefetch_lines(lg_fn *g, LLVMValueRef base, LLVMValueRef from, LLVMValueRef to,
                           int write) {
    lg_loop L;
    LLVMValueRef at = loop_begin(g, &L, from, to, "line");
    LLVMValueRef p = LLVMBuildInBoundsGEP2(g->m->b, g->m->t_i8, base, &at, 1, "");
    if (write)
        lg_prefetch_write(g->m, p);
    else
        lg_prefetch_read(g->m, p);
    loop_end(g, &L, ci64(g->m, LG_LINE), -1);
}

/* Whether group_prefetch fetches access i's lines for writing (store 1) or reading (0): the
 * first access of its buffer of that kind that runs along the rows and varies from row to
 * row, along a kept axis (`kept`, their bits; a weight every row reads is in cache already). */
static int group_prefetched(const lg_fn *g, int32_t i, int store, uint32_t kept) {
    const plan_kernel *pk = g->p->pk;
    const plan_access *a = &pk->acc[i];
    if (a->buf == PLAN_NO_BUF || a->store != store || !(a->present & kept) ||
        !((a->present >> (pk->naxes - 1)) & 1))
        return 0;
    for (int32_t j = 0; j < i; j++)
        if (pk->acc[j].buf == a->buf && pk->acc[j].store == store) return 0;
    return 1;
}

/* The next group's rows, fetched while this one computes, where rows have at most
 * LG_GROUP_PREFETCH_BYTES: each line of every buffer the group reads along its rows, and of
 * every buffer it writes so where its stores are plain (a line a streaming store writes whole
 * need not be read), so that the reads for ownership come early too. Once the rows are not
 * in the L3 (too large for it, or other work has left it), the hardware's prefetchers do not
 * keep up with short rows read four side by side: softmax and layernorm over rows of 64 and
 * 128 took 1.16-1.44x as long without these from memory, and up to 1.33x from an L3 that other
 * work shares. Over rows of 256 they gained a tenth from memory but cost 7% from the L3 (a
 * group's 128 prefetches at once), and do not run there (bench/RESULTS.md, "A group's next
 * rows"). Past the task's last rows there is nothing to fetch. */
#define LG_GROUP_PREFETCH_BYTES 512
static void group_prefetch(lg_fn *g, const lg_rows *rs, LLVMValueRef row, const int *kept, int nk,
                           LLVMValueRef rowlen) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    const llvm_kplan *p = g->p;
    LLVMValueRef next = LLVMBuildNSWAdd(b, row, ci64(m, rs->n), "");
    uint32_t km = 0;
    for (int i = 0; i < nk; i++)
        km |= 1u << kept[i];
    int es = 0; /* the widest element among the buffers fetched */
    for (int32_t i = 0; i < p->pk->nacc; i++)
        if (group_prefetched(g, i, p->pk->acc[i].store, km)) {
            int e = (int)ir_dtypes[p->fm->plan->bufs[p->pk->acc[i].buf].dtype].bytes;
            es = e > es ? e : es;
        }
    if (!es) return;
    LLVMValueRef in_task =
        LLVMBuildICmp(b, LLVMIntSLE, LLVMBuildNSWAdd(b, next, ci64(m, rs->n), ""), g->end, "");
    LLVMValueRef short_rows =
        LLVMBuildICmp(b, LLVMIntSLE, rowlen, ci64(m, LG_GROUP_PREFETCH_BYTES / es), "");
    LLVMBasicBlockRef after = if_begin(g, LLVMBuildAnd(b, in_task, short_rows, ""));
    /* the group's rows lie one after another in each buffer (its offsets grow by a row or not
     * at all from one row to the next): the lines from its first row's start to its last
     * row's end, or none where they wrap (a buffer that varies along an inner kept axis only) */
    LLVMValueRef *first = rs->next[0], *last = rs->next[rs->n - 1];
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0 the reads, pass 1 the writes, which streaming kernels skip */
        LLVMBasicBlockRef plain = pass ? if_begin(g, LLVMBuildNot(b, g->stream, "")) : NULL;
        for (int32_t i = 0; i < p->pk->nacc; i++) {
            const plan_access *a = &p->pk->acc[i];
            if (!group_prefetched(g, i, pass, km)) continue;
            ir_dtype dt = p->fm->plan->bufs[a->buf].dtype;
            LLVMValueRef eb = ci64(m, (int64_t)ir_dtypes[dt].bytes);
            LLVMValueRef base = LLVMBuildBitCast(
                b,
                LLVMBuildInBoundsGEP2(b, lg_storage_type(m, dt), g->bufp[a->buf], &first[i], 1, ""),
                m->t_i8p, "");
            LLVMValueRef span =
                LLVMBuildNSWAdd(b, LLVMBuildNSWSub(b, last[i], first[i], ""), rowlen, "");
            prefetch_lines(g, base, ci64(m, 0), LLVMBuildNSWMul(b, span, eb, ""), pass);
        }
        if (plain) if_end(g, plain);
    }
    if_end(g, after);
}

/* The group of rows from `row`: every sweep, the reductions' results and the per-result
 * values after them. */
static void row_group(lg_fn *g, lg_rows *rs, LLVMValueRef row, const int *kept, int nk,
                      const int *red, int nr, LLVMValueRef rowlen) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    for (int k = 0; k < rs->n; k++) {
        rs->base[k] = new_bases(g, NULL);
        add_offsets(g, rs->base[k], LLVMBuildNSWAdd(m->b, row, ci64(m, k), ""), kept, nk);
        rs->next[k] = NULL;
        /* the next rows' offsets: a lone row's second sweep prefetches its next row, a group
         * the next group's (group_prefetch) */
        if (nr == 1 && (p->pk->nsweeps >= 2 || rs->n > 1)) {
            rs->next[k] = new_bases(g, NULL);
            add_offsets(g, rs->next[k], LLVMBuildNSWAdd(m->b, row, ci64(m, rs->n + k), ""), kept,
                        nk);
        }
    }
    if (rs->n > 1) group_prefetch(g, rs, row, kept, nk, rowlen);
    scope_enter(g);
    for (int k = 0; k < rs->n; k++) {
        rows_enter(g, rs, k);
        per_result_stage(g, 0, rs->base[k], NULL);
    }
    for (int s = 0; s <= p->pk->nsweeps; s++) {
        if (s == p->pk->nsweeps && !p->pk->final_sweep) break;
        group_sweep(g, rs, s, red, nr, rowlen);
        if (s == p->pk->nsweeps) break;
        for (int k = 0; k < rs->n; k++) {
            rows_enter(g, rs, k);
            lg_sweep *sw = &rs->sw[k];
            for (int32_t i = 0; i < sw->nred; i++) {
                const ir_node *n = &g->f->nodes[sw->red[i].node];
                set_val(g, sw->red[i].node,
                        as_kept(g, sw->red[i].node,
                                lg_red_post(m, g->f, n, scalar_total(g, sw, i), rowlen)));
            }
            per_result_stage(g, s + 1, rs->base[k], NULL);
        }
        if (rs->n > 1) group_gather(g, rs, s + 1);
    }
    for (int k = 0; k < rs->n; k++) {
        rows_enter(g, rs, k);
        scope_clear(g);
    }
    g->level--;
    rows_enter(g, rs, 0);
    g->base = rs->base[0];
}

/* The row's cached values for row k of a group: slot c at scratch + rowlen * (k * the bytes of
 * every slot + the bytes of the slots before c). */
static LLVMValueRef *row_cache(lg_fn *g, LLVMValueRef rowlen, int k) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    if (!g->use_cache) return NULL;
    LLVMValueRef *cache = ir_arena_calloc(m->arena, (size_t)p->ncached + 1, sizeof(LLVMValueRef));
    /* cache_bytes: every slot's bytes an element (llvm_plan.c, as the runtime sizes scratch) */
    int64_t before = (int64_t)k * p->cache_bytes;
    for (int32_t c = 0; c < p->ncached; c++) {
        const ir_node *n = &g->f->nodes[p->cached[c]];
        LLVMValueRef off = LLVMBuildNSWMul(m->b, rowlen, ci64(m, before), "");
        LLVMValueRef byte = LLVMBuildInBoundsGEP2(m->b, m->t_i8, g->scratch, &off, 1, "");
        LLVMTypeRef t = lg_compute_type(m, n->dtype);
        cache[c] = LLVMBuildBitCast(m->b, byte, LLVMPointerType(t, 0), "");
        before += n->dtype == IR_F64 ? 8 : 4;
    }
    return cache;
}

/* Rows walked in groups: one reduced axis (a row is one run) and a small body. The grouped
 * rows are a second loop beside the one for long rows and the rows left over, whose sweeps
 * hold each row's body again: a row kernel's code and compile time grow 2-2.5x (softmax 110
 * -> 275 ms, bench/RESULTS.md), which bodies of many nodes or transcendentals an element
 * would pay in seconds: the normalizations of a few ops (softmax is 9 nodes, layernorm in
 * bf16 18) are grouped, larger bodies not (at 32, the test suite's compiles took 15% longer). */
#define LG_GROUP_NODES 20
#define LG_GROUP_MATH  2
static int row_groups(const lg_fn *g, int nr) {
    const llvm_kplan *p = g->p;
    if (LLVM_ROW_GROUP < 2 || nr != 1 || p->pk->to - p->pk->from > LG_GROUP_NODES) return 0;
    return element_math(g) <= LG_GROUP_MATH;
}

/* Rows [begin, end), one group after another. */
static void row_loop(lg_fn *g, int n, int short_rows, LLVMValueRef begin, LLVMValueRef end,
                     const int *kept, int nk, const int *red, int nr, LLVMValueRef rowlen) {
    lg_mod *m = g->m;
    lg_rows rs;
    memset(&rs, 0, sizeof rs);
    rs.n = n;
    rs.short_rows = short_rows;
    for (int k = 0; k < n; k++) {
        rs.val[k] = g->val;
        rs.lvl[k] = g->lvl;
        if (k > 0) {
            size_t nn = (size_t)g->f->nnodes + 1;
            rs.val[k] = ir_arena_calloc(m->arena, nn, sizeof(*g->val));
            rs.lvl[k] = ir_arena_calloc(m->arena, nn, sizeof(*g->lvl));
            memcpy(rs.val[k], g->val, (size_t)g->f->nnodes * sizeof(*g->val));
            memcpy(rs.lvl[k], g->lvl, (size_t)g->f->nnodes * sizeof(*g->lvl));
        }
        rs.cache[k] = row_cache(g, rowlen, k);
    }
    lg_loop L;
    LLVMValueRef row = loop_begin(g, &L, begin, end, n > 1 ? "rows" : "row");
    row_group(g, &rs, row, kept, nk, red, nr, rowlen);
    loop_end(g, &L, ci64(m, n), 0);
}

/* Whether short rows (shorter than two rounds, ending in a partial round) get a group loop of
 * their own: where a sweep only reads and reduces into lanes (its partial round read whole,
 * rows_overread) or the last sweep writes the rows together (group_write, its partial round
 * split); the other group loop has neither. Each part of it costs the rows that do not use it:
 * in one loop, the read-whole round, the split and its prefetches made layernorm over rows of
 * 32 and 64 2-7% slower, none of it run there (the registers' allocation around it); in a
 * loop of their own, 2-3% faster than before any of it. The price is compile time, the group's
 * code twice: examples/layernorm.fuse (bf16) 0.15 -> 0.25 s, bench/programs/rows.fuse 0.28 ->
 * 0.33 s (bench/RESULTS.md, "Masked loads and stores"). Kernels of neither kind (softmax: it
 * caches its exp) have one loop. */
static int short_groups(lg_fn *g) {
    const llvm_kplan *p = g->p;
    if (p->pk->final_sweep && !g->use_cache) return 1;
    for (int s = 0; s < p->pk->nsweeps; s++) {
        lg_sweep sw;
        sweep_init(g, &sw, s);
        for (int32_t i = 0; i < sw.nred; i++)
            sw.red[i].laned = sum_like(g, sw.red[i].node);
        if (sw.nred > 0 && sweep_reads_only(g, &sw)) return 1;
    }
    return 0;
}

static void gen_row(lg_fn *g) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    /* a unit is one point of the kept axes (wherever they are); the row, the reduced axes */
    int kept[IR_MAX_RANK] = {0}, red[IR_MAX_RANK] = {0};
    int nk = axes_of(p, 0, kept), nr = axes_of(p, 1, red);
    LLVMValueRef rowlen = dims_product(g, red, nr);
    LLVMValueRef begin = g->begin;
    if (row_groups(g, nr)) {
        /* short rows: whole groups first, the rows left over one at a time */
        LLVMBuilderRef b = m->b;
        LLVMValueRef whole = LLVMBuildMul(
            b, LLVMBuildSDiv(b, LLVMBuildSub(b, g->end, g->begin, ""), ci64(m, LLVM_ROW_GROUP), ""),
            ci64(m, LLVM_ROW_GROUP), "");
        LLVMValueRef grouped = LLVMBuildSelect(
            b, LLVMBuildICmp(b, LLVMIntSLE, rowlen, ci64(m, LLVM_ROW_GROUP_MAX), ""),
            LLVMBuildNSWAdd(b, g->begin, whole, ""), g->begin, "");
        if (short_groups(g)) {
            /* rows of at most one whole round and a part (a partial round read whole: over rows
             * of 100 and 200 it took 2-5% longer than masking it in cache, 9-19% from memory;
             * over rows of 10 to 48 15-55% less time), in their loop, the others in theirs */
            LLVMValueRef is_short = LLVMBuildAnd(
                b, LLVMBuildICmp(b, LLVMIntSLT, rowlen, ci64(m, 2 * LG_LANES), ""),
                LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, rowlen, ci64(m, LG_LANES - 1), ""),
                              ci64(m, 0), ""),
                "");
            row_loop(g, LLVM_ROW_GROUP, 1, g->begin,
                     LLVMBuildSelect(b, is_short, grouped, g->begin, ""), kept, nk, red, nr,
                     rowlen);
            row_loop(g, LLVM_ROW_GROUP, 0, g->begin,
                     LLVMBuildSelect(b, is_short, g->begin, grouped, ""), kept, nk, red, nr,
                     rowlen);
        } else {
            row_loop(g, LLVM_ROW_GROUP, 0, g->begin, grouped, kept, nk, red, nr, rowlen);
        }
        begin = grouped;
    }
    row_loop(g, 1, 0, begin, g->end, kept, nk, red, nr, rowlen);
}

/* ---- full reductions --------------------------------------------------------------------------
 */

static LLVMValueRef partial_ptr(lg_fn *g, LLVMTypeRef t, LLVMValueRef partials, LLVMValueRef chunk,
                                int32_t i) {
    lg_mod *m = g->m;
    LLVMValueRef idx = LLVMBuildNSWAdd(
        m->b,
        LLVMBuildNSWMul(m->b, chunk, ci64(m, g->p->fm->kernels[g->p->pk->kernel].npartials), ""),
        ci64(m, i), "");
    LLVMValueRef base = LLVMBuildBitCast(m->b, partials, LLVMPointerType(m->t_i64, 0), "");
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(m->b, m->t_i64, base, &idx, 1, "");
    return LLVMBuildBitCast(m->b, slot, LLVMPointerType(t, 0), "");
}

static void gen_full(lg_fn *g) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    int axes[IR_MAX_RANK];
    int n = all_axes(p, axes);
    LLVMValueRef total = dims_product(g, axes, n);
    lg_loop L;
    LLVMValueRef ch = loop_begin(g, &L, g->begin, g->end, "chunk");
    LLVMValueRef lo = LLVMBuildNSWMul(m->b, ch, ci64(m, LLVM_FULL_CHUNK), "");
    LLVMValueRef hi = imin(g, LLVMBuildNSWAdd(m->b, lo, ci64(m, LLVM_FULL_CHUNK), ""), total);
    lg_sweep sw;
    sweep_init(g, &sw, 0);
    scalar_sweep(g, &sw, axes, n, new_bases(g, NULL), lo, hi);
    for (int32_t i = 0; i < sw.nred; i++)
        store(g, scalar_total(g, &sw, i), partial_ptr(g, sw.red[i].t, g->scratch, ch, i));
    loop_end(g, &L, ci64(m, 1), 0);
}

/* The finalize of a full reduction: begin = the number of chunks, scratch = the partials. */
static void gen_full_finalize(lg_fn *g) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef n = g->begin;
    int axes[IR_MAX_RANK];
    LLVMValueRef total = dims_product(g, axes, all_axes(p, axes));
    lg_sweep sw;
    sweep_init(g, &sw, 0);
    for (int32_t i = 0; i < sw.nred; i++) {
        lg_red *rd = &sw.red[i];
        const ir_node *nd = &g->f->nodes[rd->node];
        /* pairwise, in index order: for (w = 1; w < n; w *= 2) p[c] op= p[c + w] */
        lg_loop C;
        LLVMValueRef wslot = alloca_at_entry(g, m->t_i64, "width");
        store(g, ci64(m, 1), wslot);
        LLVMBasicBlockRef head = new_block(g, "pair"), body = new_block(g, "pairs"),
                          done = new_block(g, "paired");
        LLVMBuildBr(b, head);
        LLVMPositionBuilderAtEnd(b, head);
        LLVMValueRef w = load(g, m->t_i64, wslot);
        LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, w, n, ""), body, done);
        LLVMPositionBuilderAtEnd(b, body);
        LLVMValueRef lim = LLVMBuildSub(b, n, w, "");
        LLVMValueRef c = loop_begin(g, &C, ci64(m, 0), lim, "c");
        LLVMValueRef pa = partial_ptr(g, rd->t, g->scratch, c, i);
        LLVMValueRef pb = partial_ptr(g, rd->t, g->scratch, LLVMBuildNSWAdd(b, c, w, ""), i);
        store(g, lg_red_combine(m, g->f, nd, load(g, rd->t, pa), load(g, rd->t, pb)), pa);
        loop_end(g, &C, LLVMBuildNSWMul(b, w, ci64(m, 2), ""), 0);
        store(g, LLVMBuildNSWMul(b, w, ci64(m, 2), ""), wslot);
        LLVMBuildBr(b, head);
        LLVMPositionBuilderAtEnd(b, done);
        /* no chunk at all (an empty domain): the identity */
        LLVMValueRef tslot = alloca_at_entry(g, rd->t, "total");
        store(g, lg_red_identity(m, g->f, nd), tslot);
        LLVMBasicBlockRef after = if_begin(g, LLVMBuildICmp(b, LLVMIntSGT, n, ci64(m, 0), ""));
        store(g, load(g, rd->t, partial_ptr(g, rd->t, g->scratch, ci64(m, 0), i)), tslot);
        if_end(g, after);
        set_val(g, rd->node,
                as_kept(g, rd->node, lg_red_post(m, g->f, nd, load(g, rd->t, tslot), total)));
    }
    LLVMValueRef *base = new_bases(g, NULL);
    for (int s = 0; s <= p->pk->nsweeps; s++)
        per_result_stage(g, s, base, NULL);
}

/* ---- column reductions ------------------------------------------------------------------------
 */

/* A unit of a column kernel: up to LLVM_COLUMN_WIDTH adjacent columns (along the last
 * collapsed axis) at one point of the kept axes before it, and the rows it reduces. */
typedef struct lg_colunit {
    int red_axes[IR_MAX_RANK], nr;  /* the reduced axes */
    int kept_axes[IR_MAX_RANK], nk; /* the kept axes before the last */
    LLVMValueRef nblk;              /* units along the last axis */
    LLVMValueRef nred;              /* rows: the product of the reduced dims */
    LLVMValueRef ncols;             /* columns: the product of the kept dims */
    LLVMValueRef r0, r1;            /* the rows the unit reduces: all, or a piece's */
    LLVMValueRef cw;                /* columns in this unit */
    LLVMValueRef col0;              /* the kept index (row-major) of its first column */
    LLVMValueRef *kbase;            /* the offsets of the unit's first column in row 0 */
} lg_colunit;

static LLVMValueRef col_acc(lg_fn *g, LLVMValueRef arr, LLVMTypeRef t, LLVMValueRef c) {
    LLVMValueRef idx[2] = {ci64(g->m, 0), c};
    return LLVMBuildInBoundsGEP2(g->m->b, LLVMArrayType(t, g->colw), arr, idx, 2, "");
}

/* Column reductions walk their rows a unit of columns (at most LLVM_COLUMN_WIDTH) at a time:
 * a few lines per row, a row's length apart, which the hardware prefetchers do not follow
 * across pages. So the unit prefetches its columns of the row this many bytes ahead (at least
 * 4 rows; the last row past the end). Column sums and softmaxes over an axis 0 ran up to twice
 * as fast with it, distances of 4 to 32 KB alike, and kernels in L2 within about 10% either
 * way (bench/RESULTS.md, "The measurements behind the code's constants"). */
#define LG_COLUMN_AHEAD_BYTES 16384

/* The offsets of the row LG_COLUMN_AHEAD_BYTES past row rr (of nred) for a unit of cw columns,
 * or NULL when no load runs along the reduced axes. A piece of a split unit fetches past its
 * end into the next piece's rows, which the same thread takes next; clamped at the piece's
 * end instead, long columns ran at half the speed (bench/RESULTS.md, "Column sums split into
 * pieces"). */
static LLVMValueRef *rows_ahead(lg_fn *g, LLVMValueRef *kbase, LLVMValueRef rr, LLVMValueRef nred,
                                LLVMValueRef cw, const int *red_axes, int nr) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    int64_t es = 0; /* the widest element among those loads */
    for (int32_t i = 0; i < p->pk->nacc; i++) {
        if (p->pk->acc[i].buf == PLAN_NO_BUF) continue;
        int64_t e = (int64_t)ir_dtypes[p->fm->plan->bufs[p->pk->acc[i].buf].dtype].bytes;
        if (!p->pk->acc[i].store && (p->pk->acc[i].present & p->pk->reduced) && e > es) es = e;
    }
    if (es == 0 || nr == 0) return NULL;
    LLVMValueRef d = LLVMBuildUDiv(b, ci64(m, LG_COLUMN_AHEAD_BYTES),
                                   LLVMBuildNSWMul(b, cw, ci64(m, es), ""), "");
    d = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, d, ci64(m, 4), ""), ci64(m, 4), d, "");
    LLVMValueRef ahead = LLVMBuildNSWAdd(b, rr, d, "");
    /* past the end a prefetch may walk the page tables of memory that is not there */
    LLVMValueRef last = LLVMBuildNSWSub(b, nred, ci64(m, 1), "");
    ahead = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, ahead, last, ""), last, ahead, "");
    LLVMValueRef *base = new_bases(g, kbase);
    add_offsets(g, base, ahead, red_axes, nr);
    return base;
}

/* The unit's axes (reduced ones, kept ones before the last), the number of units along the
 * last axis and the number of rows each reduces. */
static void column_axes(lg_fn *g, lg_colunit *cu) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    int last = p->pk->naxes - 1;
    LLVMValueRef inner = g->dim[last];
    LLVMValueRef CW = ci64(m, g->colw);
    cu->nblk = LLVMBuildUDiv(b, LLVMBuildNSWAdd(b, inner, ci64(m, g->colw - 1), ""), CW, "");
    cu->nr = cu->nk = 0;
    for (int c = 0; c < last; c++) {
        if ((p->pk->reduced >> c) & 1)
            cu->red_axes[cu->nr++] = c;
        else
            cu->kept_axes[cu->nk++] = c;
    }
    cu->nred = ci64(m, 1);
    for (int i = 0; i < cu->nr; i++)
        cu->nred = LLVMBuildNSWMul(b, cu->nred, g->dim[cu->red_axes[i]], "");
    cu->ncols = inner;
    for (int i = 0; i < cu->nk; i++)
        cu->ncols = LLVMBuildNSWMul(b, cu->ncols, g->dim[cu->kept_axes[i]], "");
    cu->r0 = ci64(m, 0);
    cu->r1 = cu->nred;
}

/* An array of LLVM_COLUMN_WIDTH values for each per-result value a later stage computes
 * (after a sweep): the values of a unit's columns, kept for the stages and sweeps after. */
static void column_arrays(lg_fn *g) {
    const llvm_kplan *p = g->p;
    size_t nn = (size_t)g->f->nnodes + 1;
    g->arr = ir_arena_calloc(g->m->arena, nn, sizeof(*g->arr));
    g->in_arr = ir_arena_calloc(g->m->arena, nn, 1);
    for (int32_t i = p->pk->from; i < p->pk->to; i++) {
        ir_ref r = g->k->body[i];
        if (p->pk->per_result[r] && p->pk->stage[r] >= 1)
            g->arr[r] = alloca_at_entry(g, arr_type(g, r), "col");
    }
}

/* Places unit u: its point of the kept axes (ko, row-major over them), its first column c0
 * and its width cw (the last unit may be narrower); no column array holds values yet. */
static void column_unit_place(lg_fn *g, lg_colunit *cu, LLVMValueRef u) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    int last = p->pk->naxes - 1;
    LLVMValueRef CW = ci64(m, g->colw);
    LLVMValueRef ko = LLVMBuildUDiv(b, u, cu->nblk, "");
    LLVMValueRef c0 =
        LLVMBuildNSWMul(b, LLVMBuildSub(b, u, LLVMBuildMul(b, ko, cu->nblk, ""), ""), CW, "");
    cu->cw = imin(g, CW, LLVMBuildSub(b, g->dim[last], c0, ""));
    cu->col0 = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, ko, g->dim[last], ""), c0, "");
    cu->kbase = new_bases(g, NULL);
    add_offsets(g, cu->kbase, ko, cu->kept_axes, cu->nk);
    for (int32_t a = 0; a < p->pk->nacc; a++)
        if ((p->pk->acc[a].present >> last) & 1)
            cu->kbase[a] = LLVMBuildNSWAdd(b, cu->kbase[a], c0, "");
    for (int32_t r = 0; r < g->f->nnodes; r++)
        g->in_arr[r] = 0;
}

/* Opens the loop over the task's units and places each. */
static void column_unit_begin(lg_fn *g, lg_colunit *cu, lg_loop *U) {
    column_unit_place(g, cu, loop_begin(g, U, g->begin, g->end, "unit"));
}

/* The per-result values of stage s (stage 0: only stores) for each column of the unit: into
 * their column arrays where later stages or sweeps read them, and stored where they are
 * stored. No loop when the stage has nothing to do. */
static void column_stage(lg_fn *g, const lg_colunit *cu, int s) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    const ir_kernel *k = g->k;
    ir_ref *roots =
        ir_arena_calloc(m->arena, (size_t)(p->pk->to - p->pk->from) + 1, sizeof(ir_ref));
    int32_t n = 0;
    for (int32_t i = p->pk->from; i < p->pk->to; i++) {
        ir_ref r = k->body[i];
        if (p->pk->per_result[r] && p->pk->stage[r] == s &&
            ir_ops[g->f->nodes[r].op].cls != IR_CLASS_REDUCE)
            roots[n++] = r;
    }
    int any_store = 0;
    for (int32_t i = p->pk->from; i < p->pk->to; i++) {
        ir_ref r = k->body[i];
        if (p->pk->per_result[r] && p->pk->stage[r] == s && (g->f->nodes[r].flags & IR_NODE_STORED))
            any_store = 1;
    }
    if (n == 0 && !any_store) return;
    lg_loop C;
    LLVMValueRef c = loop_begin(g, &C, ci64(m, 0), cu->cw, "c");
    scope_enter(g);
    g->base = cu->kbase;
    g->j = c;
    eval(g, roots, n);
    for (int32_t i = 0; i < n; i++)
        if (g->arr[roots[i]]) store(g, value_of(g, roots[i]), arr_ptr(g, roots[i], c));
    for (int32_t i = p->pk->from; i < p->pk->to; i++) {
        ir_ref r = k->body[i];
        if (p->pk->per_result[r] && p->pk->stage[r] == s && (g->f->nodes[r].flags & IR_NODE_STORED))
            store_node(g, r);
    }
    scope_exit(g);
    loop_end(g, &C, ci64(m, 1), 0);
    for (int32_t i = 0; i < n; i++)
        if (g->arr[roots[i]]) g->in_arr[roots[i]] = 1;
}

/* Lane l of a column sweep's reduction rd for column c, and level l of its tree over blocks
 * (blocked sweeps: arrays of LG_LANES and LG_LEVELS rows of the unit's columns). */
static LLVMValueRef col_lane(lg_fn *g, const lg_red *rd, LLVMValueRef l, LLVMValueRef c) {
    LLVMValueRef idx[3] = {ci64(g->m, 0), l, c};
    LLVMTypeRef row = LLVMArrayType(rd->t, g->colw);
    return LLVMBuildInBoundsGEP2(g->m->b, LLVMArrayType(row, LG_LANES), rd->blk[0], idx, 3, "");
}

static LLVMValueRef col_level(lg_fn *g, const lg_red *rd, LLVMValueRef l, LLVMValueRef c) {
    LLVMValueRef idx[3] = {ci64(g->m, 0), l, c};
    LLVMTypeRef row = LLVMArrayType(rd->t, g->colw);
    return LLVMBuildInBoundsGEP2(g->m->b, LLVMArrayType(row, LG_LEVELS), rd->grp[0], idx, 3, "");
}

/* Lanes [0, nlanes) of every column of the unit: the identity. A block uses only as many
 * lanes as it has rows (a column of 4 rows, 4 of 32), and the lanes it leaves alone keep the
 * identity from before or are never read (column_block_end's halves stop at the used lanes). */
static void column_lanes_reset(lg_fn *g, lg_sweep *sw, LLVMValueRef nlanes) {
    lg_mod *m = g->m;
    lg_loop C;
    LLVMValueRef n = LLVMBuildNSWMul(m->b, nlanes, ci64(m, g->colw), "");
    LLVMValueRef e = loop_begin(g, &C, ci64(m, 0), n, "e");
    for (int32_t i = 0; i < sw->nred; i++) {
        const lg_red *rd = &sw->red[i];
        if (!rd->laned) continue;
        LLVMValueRef flat = LLVMBuildBitCast(m->b, rd->blk[0], LLVMPointerType(rd->t, 0), "");
        store(g, lg_red_identity(m, g->f, &g->f->nodes[rd->node]),
              LLVMBuildInBoundsGEP2(m->b, rd->t, flat, &e, 1, ""));
    }
    loop_end(g, &C, ci64(m, 1), 1);
}

/* The lanes a block of rows [from, to) uses: min(LG_LANES, to - from), at least 0. */
static LLVMValueRef lanes_used(lg_fn *g, LLVMValueRef from, LLVMValueRef to) {
    lg_mod *m = g->m;
    LLVMValueRef n = imin(g, LLVMBuildNSWSub(m->b, to, from, ""), ci64(m, LG_LANES));
    return LLVMBuildSelect(m->b, LLVMBuildICmp(m->b, LLVMIntSLT, n, ci64(m, 0), ""), ci64(m, 0), n,
                           "");
}

/* Sweep s's accumulators: an array of the unit's columns (tot[0]) set to the identity; a
 * float sum or product of a blocked sweep accumulates in lanes instead (docs/plan.md's
 * order, over the rows) and its blocks in levels, which column_fold makes its totals. */
static void column_acc_init(lg_fn *g, const lg_colunit *cu, lg_sweep *sw, int blocked) {
    lg_mod *m = g->m;
    for (int32_t i = 0; i < sw->nred; i++) {
        lg_red *rd = &sw->red[i];
        LLVMTypeRef row = LLVMArrayType(rd->t, g->colw);
        rd->tot[0] = alloca_at_entry(g, row, "ctot");
        rd->laned = blocked && sum_like(g, rd->node);
        if (rd->laned) {
            rd->blk[0] = alloca_at_entry(g, LLVMArrayType(row, LG_LANES), "clanes");
            rd->grp[0] = alloca_at_entry(g, LLVMArrayType(row, LG_LEVELS), "clevels");
        }
    }
    if (sw->nred == 0) return;
    sw->nblocks = alloca_at_entry(g, m->t_i64, "nblocks");
    store(g, ci64(m, 0), sw->nblocks);
    if (blocked) column_lanes_reset(g, sw, lanes_used(g, cu->r0, cu->r1));
    lg_loop C;
    LLVMValueRef c = loop_begin(g, &C, ci64(m, 0), cu->cw, "c");
    for (int32_t i = 0; i < sw->nred; i++) {
        LLVMValueRef id = lg_red_identity(m, g->f, &g->f->nodes[sw->red[i].node]);
        store(g, id, col_acc(g, sw->red[i].tot[0], sw->red[i].t, c));
    }
    loop_end(g, &C, ci64(m, 1), 0);
}

typedef struct lg_column_merge {
    const lg_colunit *cu;
    lg_sweep *sw;
    int into_tot; /* the newer subtree: the totals (tot[0]), or else lane 0 */
} lg_column_merge;

/* level_walk's merge for columns: each column's newer subtree combined with the subtree at
 * level lv. */
static void column_merge(lg_fn *g, void *ctx, LLVMValueRef lv) {
    const lg_column_merge *cm = ctx;
    lg_mod *m = g->m;
    lg_loop C;
    LLVMValueRef c = loop_begin(g, &C, ci64(m, 0), cm->cu->cw, "c");
    for (int32_t i = 0; i < cm->sw->nred; i++) {
        const lg_red *rd = &cm->sw->red[i];
        if (!rd->laned) continue;
        LLVMValueRef p0 =
            cm->into_tot ? col_acc(g, rd->tot[0], rd->t, c) : col_lane(g, rd, ci64(m, 0), c);
        LLVMValueRef left = load(g, rd->t, col_level(g, rd, lv, c));
        store(g, lg_red_combine(m, g->f, &g->f->nodes[rd->node], left, load(g, rd->t, p0)), p0);
    }
    loop_end(g, &C, ci64(m, 1), 0);
}

/* A block of rows ends at row rr: each column's lanes combined by halves into lane 0, which
 * then joins the tree over blocks as in scalar_block_end (the carries are the same for every
 * column); the next block's lanes start again. Only the lanes the block used are combined: a
 * lane it did not use holds the identity, and x + 0 and x * 1 are x bit for bit (a sum's lane
 * is never -0), so leaving lane l alone where lane l + half is unused gives the full tree's
 * bits; a column of 4 rows combines 3 pairs of lanes, not 31. */
static void column_block_end(lg_fn *g, const lg_colunit *cu, lg_sweep *sw, LLVMValueRef rr) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef count = load(g, m->t_i64, sw->nblocks);
    lg_loop C, L;
    /* used = the block's lanes (it starts at a multiple of LG_BLOCK); for (half = 16; half >= 1;
     * half /= 2) { lane l of each column with lane l + half for l < used - half; used =
     * min(used, half) } */
    LLVMValueRef r1 = LLVMBuildNSWAdd(b, rr, ci64(m, 1), "");
    LLVMValueRef hslot = alloca_at_entry(g, m->t_i64, "half");
    LLVMValueRef uslot = alloca_at_entry(g, m->t_i64, "used");
    store(g, ci64(m, LG_LANES / 2), hslot);
    store(g, lanes_used(g, LLVMBuildAnd(b, rr, ci64(m, -LG_BLOCK), ""), r1), uslot);
    LLVMBasicBlockRef hhead = new_block(g, "halves"), hbody = new_block(g, "halve"),
                      hdone = new_block(g, "halved");
    LLVMBuildBr(b, hhead);
    LLVMPositionBuilderAtEnd(b, hhead);
    LLVMValueRef half = load(g, m->t_i64, hslot);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGE, half, ci64(m, 1), ""), hbody, hdone);
    LLVMPositionBuilderAtEnd(b, hbody);
    LLVMValueRef used = load(g, m->t_i64, uslot);
    LLVMValueRef l = loop_begin(g, &L, ci64(m, 0), LLVMBuildNSWSub(b, used, half, ""), "l");
    LLVMValueRef lh = LLVMBuildNSWAdd(b, l, half, "");
    LLVMValueRef c = loop_begin(g, &C, ci64(m, 0), cu->cw, "c");
    for (int32_t i = 0; i < sw->nred; i++) {
        const lg_red *rd = &sw->red[i];
        const ir_node *n = &g->f->nodes[rd->node];
        if (!rd->laned) continue;
        LLVMValueRef pa = col_lane(g, rd, l, c), pb = col_lane(g, rd, lh, c);
        store(g, lg_red_combine(m, g->f, n, load(g, rd->t, pa), load(g, rd->t, pb)), pa);
    }
    loop_end(g, &C, ci64(m, 1), 0);
    loop_end(g, &L, ci64(m, 1), -1);
    store(g, imin(g, used, half), uslot);
    store(g, LLVMBuildAShr(b, half, ci64(m, 1), ""), hslot);
    LLVMBuildBr(b, hhead);
    LLVMPositionBuilderAtEnd(b, hdone);
    lg_column_merge cm = {cu, sw, 0};
    LLVMValueRef top = level_walk(g, count, 1, column_merge, &cm);
    c = loop_begin(g, &C, ci64(m, 0), cu->cw, "c");
    for (int32_t i = 0; i < sw->nred; i++) {
        const lg_red *rd = &sw->red[i];
        if (rd->laned)
            store(g, load(g, rd->t, col_lane(g, rd, ci64(m, 0), c)), col_level(g, rd, top, c));
    }
    loop_end(g, &C, ci64(m, 1), 0);
    store(g, LLVMBuildNSWAdd(b, count, ci64(m, 1), ""), sw->nblocks);
    column_lanes_reset(g, sw, lanes_used(g, r1, cu->r1));
}

/* A blocked sweep's totals (tot[0]): each column's subtrees of blocks combined from the
 * lowest level up, as scalar_total does. */
static void column_fold(lg_fn *g, const lg_colunit *cu, lg_sweep *sw) {
    /* (tot[0] of a laned reduction still holds the identity) */
    lg_column_merge cm = {cu, sw, 1};
    level_walk(g, load(g, g->m->t_i64, sw->nblocks), 0, column_merge, &cm);
}

/* The rows of sweep s, in order: at each row a vectorized loop over the unit's columns does
 * the sweep's per-element work (sweep_point) into the column accumulators, and fetches the
 * columns of a row ahead (rows_ahead). */
static void column_rows(lg_fn *g, const lg_colunit *cu, lg_sweep *sw, int blocked) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    lg_loop R, C;
    LLVMValueRef rr = loop_begin(g, &R, cu->r0, cu->r1, "r");
    LLVMValueRef *base = new_bases(g, cu->kbase);
    add_offsets(g, base, rr, cu->red_axes, cu->nr); /* the reduced axes' offsets, from rr */
    LLVMValueRef *ahead =
        g->narrow ? NULL : rows_ahead(g, cu->kbase, rr, cu->nred, cu->cw, cu->red_axes, cu->nr);
    LLVMValueRef c = loop_begin(g, &C, ci64(m, 0), cu->cw, "c");
    g->base = base;
    g->j = c;
    g->flat = c;
    if (ahead) {
        g->pf_base = ahead;
        prefetch_ahead(g, p->pk->reduced);
        g->pf_base = NULL;
    }
    LLVMValueRef *ptrs =
        ir_arena_calloc(m->arena, (size_t)(sw->nred + 1) * LG_RED_PARTS, sizeof(*ptrs));
    /* blocked: row rr goes to lane rr % LG_LANES of block rr / LG_BLOCK (the rows of a piece
     * start at a multiple of LG_BLOCK) */
    LLVMValueRef lane = LLVMBuildAnd(b, rr, ci64(m, LG_LANES - 1), "");
    for (int32_t i = 0; i < sw->nred; i++)
        ptrs[i * LG_RED_PARTS] = sw->red[i].laned ? col_lane(g, &sw->red[i], lane, c)
                                                  : col_acc(g, sw->red[i].tot[0], sw->red[i].t, c);
    sweep_point(g, sw, ptrs);
    loop_end(g, &C, ci64(m, 1), sw->nred > 0 ? LG_INTERLEAVE : 0);
    if (blocked) {
        /* a block ends at a multiple of LG_BLOCK rows, and the last one with the rows */
        LLVMValueRef r1 = LLVMBuildNSWAdd(b, rr, ci64(m, 1), "");
        LLVMValueRef next = LLVMBuildAnd(b, r1, ci64(m, LG_BLOCK - 1), "");
        LLVMBasicBlockRef after =
            if_begin(g, LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, next, ci64(m, 0), ""),
                                    LLVMBuildICmp(b, LLVMIntEQ, r1, cu->r1, ""), ""));
        column_block_end(g, cu, sw, rr);
        if_end(g, after);
    }
    loop_end(g, &R, ci64(m, 1), 0);
    if (blocked) column_fold(g, cu, sw);
}

/* Sweep s over the unit's rows (sw: its reductions), which leaves their totals in tot[0]. */
static void column_sweep(lg_fn *g, const lg_colunit *cu, lg_sweep *sw, int s) {
    sweep_init(g, sw, s);
    g->sweep = s;
    int blocked = sweep_blocked(g, sw);
    column_acc_init(g, cu, sw, blocked);
    column_rows(g, cu, sw, blocked);
}

/* The sweep's reductions, finished in their column arrays: stored for the columns where
 * they are stored. */
static void column_store_results(lg_fn *g, const lg_colunit *cu, lg_sweep *sw) {
    lg_mod *m = g->m;
    for (int32_t i = 0; i < sw->nred; i++)
        g->in_arr[sw->red[i].node] = 1;
    int any = 0;
    for (int32_t i = 0; i < sw->nred; i++)
        any |= (g->f->nodes[sw->red[i].node].flags & IR_NODE_STORED) != 0;
    if (!any) return;
    lg_loop C;
    LLVMValueRef c = loop_begin(g, &C, ci64(m, 0), cu->cw, "c");
    scope_enter(g);
    g->base = cu->kbase;
    g->j = c;
    for (int32_t i = 0; i < sw->nred; i++)
        if (g->f->nodes[sw->red[i].node].flags & IR_NODE_STORED) store_node(g, sw->red[i].node);
    scope_exit(g);
    loop_end(g, &C, ci64(m, 1), 0);
}

/* The sweep's finished reductions, per column into their column arrays (for the stages and
 * sweeps after), then stored for the columns where they are stored. */
static void column_results(lg_fn *g, const lg_colunit *cu, lg_sweep *sw) {
    lg_mod *m = g->m;
    lg_loop C;
    LLVMValueRef c = loop_begin(g, &C, ci64(m, 0), cu->cw, "c");
    for (int32_t i = 0; i < sw->nred; i++) {
        const ir_node *n = &g->f->nodes[sw->red[i].node];
        LLVMValueRef t = load(g, sw->red[i].t, col_acc(g, sw->red[i].tot[0], sw->red[i].t, c));
        store(g, as_kept(g, sw->red[i].node, lg_red_post(m, g->f, n, t, cu->nred)),
              arr_ptr(g, sw->red[i].node, c));
    }
    loop_end(g, &C, ci64(m, 1), 0);
    column_store_results(g, cu, sw);
}

/* A column kernel's work on the unit cu places: the per-result values of stage 0, then each
 * sweep over the unit's rows followed by its results and the next stage's values; a final
 * sweep writes per-element values and reduces nothing further. */
static void column_unit(lg_fn *g, lg_colunit *cu) {
    const llvm_kplan *p = g->p;
    scope_enter(g);
    for (int s = 0; s <= p->pk->nsweeps; s++) {
        column_stage(g, cu, s);
        if (s == p->pk->nsweeps && !p->pk->final_sweep) break;
        lg_sweep sw;
        column_sweep(g, cu, &sw, s);
        if (s == p->pk->nsweeps) break;
        column_results(g, cu, &sw);
    }
    scope_exit(g);
}

/* A column kernel: column_unit for each unit of columns of the task. */
static void gen_column(lg_fn *g) {
    lg_colunit cu;
    column_axes(g, &cu);
    column_arrays(g);
    lg_loop U;
    column_unit_begin(g, &cu, &U);
    column_unit(g, &cu);
    loop_end(g, &U, ci64(g->m, 1), 0);
}

/* ---- column reductions cut into pieces (the plan's split) -------------------------------------
 */

/* The least power of two of blocks (LG_BLOCK rows each) that holds `want` rows. */
static LLVMValueRef pow2_blocks(lg_fn *g, LLVMValueRef want) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef slot = alloca_at_entry(g, m->t_i64, "piece_rows");
    store(g, ci64(m, LG_BLOCK), slot);
    LLVMBasicBlockRef head = new_block(g, "grow"), body = new_block(g, "double"),
                      done = new_block(g, "grown");
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, head);
    LLVMValueRef r = load(g, m->t_i64, slot);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, r, want, ""), body, done);
    LLVMPositionBuilderAtEnd(b, body);
    store(g, LLVMBuildNSWMul(b, r, ci64(m, 2), ""), slot);
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, done);
    return load(g, m->t_i64, slot);
}

/* The pieces of this launch (flags >> LLVM_TASK_PIECES_SHIFT), and the rows of each. */
static LLVMValueRef split_pieces(lg_fn *g) {
    return LLVMBuildAShr(g->m->b, g->flags, ci64(g->m, LLVM_TASK_PIECES_SHIFT), "pieces");
}

/* Reduction i's partial result of piece pc for the unit's column c, in the plan's layout:
 * slot ((pc * nreds + i) * columns + column) of 8 bytes. */
static LLVMValueRef split_slot(lg_fn *g, const lg_colunit *cu, LLVMTypeRef t, LLVMValueRef pc,
                               int32_t i, LLVMValueRef c) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef row =
        LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, pc, ci64(m, g->p->pk->nreds), ""), ci64(m, i), "");
    LLVMValueRef idx = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, row, cu->ncols, ""),
                                       LLVMBuildNSWAdd(b, cu->col0, c, ""), "");
    LLVMValueRef base = LLVMBuildBitCast(b, g->scratch, LLVMPointerType(m->t_i64, 0), "");
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(b, m->t_i64, base, &idx, 1, "");
    return LLVMBuildBitCast(b, slot, LLVMPointerType(t, 0), "");
}

/* The pieces of a split column kernel: item u * pieces + pc reduces the rows of piece pc
 * for unit u, writes the per-element values of those rows, and leaves its accumulators,
 * unfinished, in its partial slots. A piece is a power of two of blocks of rows, at least
 * ceil(rows / pieces) rows (the last shorter, those past the end empty), so that each is a
 * subtree of the tree over blocks (docs/plan.md) and the join finishes the tree. */
static void gen_column_pieces(lg_fn *g) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    lg_colunit cu;
    column_axes(g, &cu);
    column_arrays(g);
    LLVMValueRef np = split_pieces(g);
    LLVMValueRef want = LLVMBuildSDiv(
        b, LLVMBuildNSWAdd(b, cu.nred, LLVMBuildNSWSub(b, np, ci64(m, 1), ""), ""), np, "");
    LLVMValueRef rows = pow2_blocks(g, want);
    lg_loop U;
    LLVMValueRef it = loop_begin(g, &U, g->begin, g->end, "item");
    LLVMValueRef u = LLVMBuildSDiv(b, it, np, "");
    LLVMValueRef pc = LLVMBuildNSWSub(b, it, LLVMBuildNSWMul(b, u, np, ""), "");
    column_unit_place(g, &cu, u);
    cu.r0 = LLVMBuildNSWMul(b, pc, rows, "");
    cu.r1 = imin(g, LLVMBuildNSWAdd(b, cu.r0, rows, ""), cu.nred);
    scope_enter(g);
    lg_sweep sw;
    column_sweep(g, &cu, &sw, 0);
    lg_loop C;
    LLVMValueRef c = loop_begin(g, &C, ci64(m, 0), cu.cw, "c");
    for (int32_t i = 0; i < sw.nred; i++) {
        lg_red *rd = &sw.red[i];
        store(g, load(g, rd->t, col_acc(g, rd->tot[0], rd->t, c)),
              split_slot(g, &cu, rd->t, pc, i, c));
    }
    loop_end(g, &C, ci64(m, 1), 0);
    scope_exit(g);
    loop_end(g, &U, ci64(m, 1), 0);
}

/* The join of a split column kernel, over units: each column's partial results combined
 * pairwise in index order (piece c with c + 1, then c with c + 2, ...: the top of the tree
 * over blocks) and finished, then the per-result values and stores of both stages. */
static void gen_column_join(lg_fn *g) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    lg_colunit cu;
    column_axes(g, &cu);
    column_arrays(g);
    LLVMValueRef np = split_pieces(g);
    lg_loop U;
    column_unit_begin(g, &cu, &U);
    scope_enter(g);
    column_stage(g, &cu, 0);
    lg_sweep sw;
    sweep_init(g, &sw, 0);
    lg_loop C, P;
    LLVMValueRef c = loop_begin(g, &C, ci64(m, 0), cu.cw, "c");
    for (int32_t i = 0; i < sw.nred; i++) {
        lg_red *rd = &sw.red[i];
        const ir_node *n = &g->f->nodes[rd->node];
        lg_loop W;
        LLVMValueRef w = loop_begin(g, &W, ci64(m, 1), np, "width");
        LLVMValueRef pc = loop_begin(g, &P, ci64(m, 0), LLVMBuildNSWSub(b, np, w, ""), "piece");
        LLVMValueRef pa = split_slot(g, &cu, rd->t, pc, i, c);
        LLVMValueRef pb = split_slot(g, &cu, rd->t, LLVMBuildNSWAdd(b, pc, w, ""), i, c);
        store(g, lg_red_combine(m, g->f, n, load(g, rd->t, pa), load(g, rd->t, pb)), pa);
        loop_end(g, &P, LLVMBuildNSWMul(b, w, ci64(m, 2), ""), -1);
        loop_end(g, &W, w, 0); /* w doubles */
        LLVMValueRef t = load(g, rd->t, split_slot(g, &cu, rd->t, ci64(m, 0), i, c));
        store(g, as_kept(g, rd->node, lg_red_post(m, g->f, n, t, cu.nred)),
              arr_ptr(g, rd->node, c));
    }
    loop_end(g, &C, ci64(m, 1), 0);
    column_store_results(g, &cu, &sw);
    column_stage(g, &cu, 1);
    scope_exit(g);
    loop_end(g, &U, ci64(m, 1), 0);
}

/* ---- the module -------------------------------------------------------------------------------
 */

/* Task `name` of plan p: the kernel's task (LG_TASK), a full reduction's finalize, or a split
 * column kernel's pieces or join. */
enum { LG_TASK, LG_FINALIZE, LG_PIECES, LG_JOIN };

/* ---- short rows as columns ------------------------------------------------------------------
 */

/* A row kernel that loads or stores more than this many buffers that vary from row to row runs
 * no narrow body: each is copied through the stack (narrow_copy), and when the copies were loops
 * of each kernel's own for each short length, a row kernel with 30 such results took 7.8 s to
 * compile cold, with 120 139 s (without a narrow body 0.1 s); with 8 1.7 s, with 2 0.64 s. A
 * copy is a call of a shared function now (narrow_copy_fn), but each buffer still costs its
 * unit's stack and a value per slot. */
#define LG_NARROW_BUFFERS 8

/* The buffers row kernel g->p loads or stores that vary along its kept axis (axis 0): those
 * its narrow body copies (narrow_staged, in the transpose). */
static int narrow_buffers(const lg_fn *g) {
    const plan_kernel *pk = g->p->pk;
    int n = 0;
    for (int32_t i = 0; i < pk->nacc; i++) {
        if (pk->acc[i].buf == PLAN_NO_BUF || !(pk->acc[i].present & 1u)) continue;
        int seen = 0;
        for (int32_t j = 0; j < i && !seen; j++)
            seen = pk->acc[j].buf == pk->acc[i].buf && (pk->acc[j].present & 1u);
        n += !seen;
    }
    return n;
}

/* The longest rows row kernel g->p runs as columns: 0 where it cannot (it must have two
 * collapsed axes, the kept one then the row: softmax, layernorm and the like over the last
 * axis); LG_NARROW_MAX with vectors of LG_NARROW_WIDE_BYTES, else LG_NARROW_SLOW where its
 * elements cost a transcendental and LG_NARROW_CHEAP where not; 0 too where the row's dims are
 * literals that make it longer or it has more than LG_NARROW_BUFFERS buffers to copy (no
 * narrow body then). */
static int narrow_max(const lg_fn *g) {
    const llvm_kplan *p = g->p;
    const plan_kernel *pk = p->pk;
    if (p->loop != LLVM_LOOP_ROW || pk->naxes != 2 || pk->reduced != 2u) return 0;
    if (narrow_buffers(g) > LG_NARROW_BUFFERS) return 0;
    int math = element_math(g) > 0, wide = g->m->vector_bytes >= LG_NARROW_WIDE_BYTES;
    int max = wide ? LG_NARROW_MAX : math ? LG_NARROW_SLOW : LG_NARROW_CHEAP;
    int64_t len = 1;
    for (int32_t a = 0; a < pk->dom.rank; a++) {
        if (!((pk->axis_dims[1] >> a) & 1) || pk->dom.dims[a].sym >= 0) continue;
        len *= pk->dom.dims[a].size;
        if (len > max) return 0;
    }
    return max;
}

/* The units of narrow_regs a narrow kernel has, by their slots (0 ends a list): a row of K
 * elements runs in the least that holds it, each a unit of its own in the code. The finest
 * list costs an element past the row's end a fraction of one in it (softmax over rows of 3, 12
 * and 17 ran 1.2x, 1.1x and 1.16x faster than in powers of two); each unit is the kernel's
 * per-element code that many times over, so a kernel takes the finest list whose code stays
 * within LG_NARROW_BUDGET (narrow_units), else the one unit of the finest list that holds its
 * rows, and one too large for even that unit keeps its sweeps in loops (column_unit). Every
 * list holds the powers of two, so no unit is longer than the copies' rows (narrow_slots).
 * bench/RESULTS.md, "Short rows in registers". */
static const int lg_narrow_lists[2][11] = {{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 0},
                                           {1, 2, 4, 8, 16, 24, 32, 0}};
/* The budget, in slots times per-element nodes (a transcendental LG_NARROW_MATH nodes): layernorm
 * (9 nodes) takes the finest list, softmax (5 nodes, one exp) the second, the larger of
 * tests/programs/grad.fuse's gradients one unit. Cold compiles (no cache, this host, against
 * column loops): examples/softmax.fuse 0.33 -> 0.47 s, examples/layernorm.fuse 0.40 -> 0.74 s
 * (its rows of 17-31 now narrow too), grad.fuse 5.4 -> 7.5 s (with 2400 and powers of two for
 * the second list: 0.48, 0.70, 8.9 s; with 1400: 0.40, 0.72, 6.9 s, softmax over rows of 17
 * then 0.87x the column loops' speed). */
#define LG_NARROW_BUDGET 1900
#define LG_NARROW_MATH   16
/* A module's narrow bodies, in all (narrow_choose): each costs a second or more to compile on
 * a slow host (layernorm's 0.6-1.1 s on a 2.1 GHz Xeon, 3-4x its row kernel's), and
 * tests/programs/grad.fuse, 13 of them, took 14-18 s there (3.1-3.5 s without). The cheapest
 * get one while the total stays within this budget (softmax and layernorm together, or two or
 * three of grad.fuse's); the others run their short rows in their row kernels, with the same
 * bits. A buffer's copies cost like LG_NARROW_COPY_COST slot-nodes: what the loops of
 * narrow_copy took when each kernel held its own (a fifth of grad.fuse's narrow bodies' time).
 * They are shared functions now (narrow_copy_fn), compiled once a module or once a target; the
 * charge is kept, so that a module's narrow kernels are the ones they were and only its compile
 * time fell. */
#define LG_NARROW_MODULE_BUDGET 4500
#define LG_NARROW_COPY_COST     400
_Static_assert(LG_NARROW_MAX <= 32 && LG_LANES == 32, "a narrow row is one block of lanes");

/* The elements a narrow kernel's rows hold at most, rounded up to a power of two: the rows of
 * its copies in the stack, which every list's last unit fits. */
static int narrow_slots(int len) {
    int n = 1;
    while (n < len)
        n *= 2;
    return n;
}

/* An access of a narrow kernel (tp: narrow_plan's transpose) that reads or writes memory along
 * the rows' axis (axis 1 there): it goes through the unit's copy in the stack, transposed
 * where it varies along a row (axis 0) too. */
static int narrow_staged(const llvm_kplan *tp, int32_t i) {
    return tp->pk->acc[i].buf != PLAN_NO_BUF && (tp->pk->acc[i].present & 2u);
}

/* Row kernel p seen as a column kernel over its transpose (*tp, whose kernel plan is *tpk):
 * the two axes swapped, the row (axis 0 now) reduced, the rows side by side along axis 1. */
static void narrow_plan(const llvm_kplan *p, ir_arena *a, llvm_kplan *tp, plan_kernel *tpk) {
    *tp = *p;
    *tpk = *p->pk;
    tp->pk = tpk;
    tp->loop = LLVM_LOOP_COLUMN;
    tpk->layout = PLAN_COLUMN;
    tpk->axis_dims[0] = p->pk->axis_dims[1];
    tpk->axis_dims[1] = p->pk->axis_dims[0];
    tpk->reduced = 1u;
    tpk->split.splittable = 0;
    tpk->acc = ir_arena_calloc(a, (size_t)p->pk->nacc + 1, sizeof(*tpk->acc));
    for (int32_t i = 0; i < p->pk->nacc; i++) {
        tpk->acc[i] = p->pk->acc[i];
        uint32_t pr = p->pk->acc[i].present;
        tpk->acc[i].present = ((pr & 1u) << 1) | ((pr >> 1) & 1u);
    }
}

/* A unit's rows of 2 to this many elements are copied by a loop of their own length, the row's
 * elements written out one after another, which LLVM vectorizes as an interleaved group of
 * loads or stores (wide loads or stores and shuffles): 1.5-2x faster than unvectorized, which
 * is 1.2-1.5x faster than a loop over the row's length. LLVM 14 turns longer groups into
 * gathers and scatters, several times slower still: longer rows go through narrow_copy_wide
 * or, without 64-byte vectors, loops of their own length unvectorized. Rows of one are one
 * run, which LLVM copies as such (bench/RESULTS.md, "Short rows as columns"). */
#define LG_NARROW_UNROLL 8

/* One element of the unit's copy: row c's element e, between `mem` (rows r0 ... of C
 * elements) and `tmp` (element e of row c at e * g->colw + c). */
static void narrow_copy_one(lg_fn *g, LLVMTypeRef t, LLVMValueRef tmp, LLVMValueRef mem,
                            LLVMValueRef r0, LLVMValueRef C, LLVMValueRef c, LLVMValueRef e,
                            int out) {
    LLVMBuilderRef b = g->m->b;
    LLVMValueRef mi =
        LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, LLVMBuildNSWAdd(b, r0, c, ""), C, ""), e, "");
    LLVMValueRef ti = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, e, ci64(g->m, g->colw), ""), c, "");
    LLVMValueRef pm = LLVMBuildInBoundsGEP2(b, t, mem, &mi, 1, "");
    LLVMValueRef pt = LLVMBuildInBoundsGEP2(b, t, tmp, &ti, 1, "");
    if (out)
        store(g, load(g, t, pt), pm);
    else
        store(g, load(g, t, pm), pt);
}

/* v[0 .. 16) transposed in place: element j of v[i] moves to element i of v[j]. Four rounds
 * of shuffles, each exchanging one bit of the vector's index with one of the element's. */
static void transpose16(lg_mod *m, LLVMValueRef *v) {
    for (int bit = 8; bit >= 1; bit /= 2) {
        LLVMValueRef lo[16], hi[16];
        for (int j = 0; j < 16; j++) {
            lo[j] = LLVMConstInt(m->t_i32, (unsigned)((j & bit) ? 16 + j - bit : j), 0);
            hi[j] = LLVMConstInt(m->t_i32, (unsigned)((j & bit) ? 16 + j : j + bit), 0);
        }
        for (int i = 0; i < 16; i++) {
            if (i & bit) continue;
            LLVMValueRef x = v[i], y = v[i + bit];
            v[i] = LLVMBuildShuffleVector(m->b, x, y, LLVMConstVector(lo, 16), "");
            v[i + bit] = LLVMBuildShuffleVector(m->b, x, y, LLVMConstVector(hi, 16), "");
        }
    }
}

/* Prefetches the cache lines of rows [r0, r0 + n) of a staged buffer at `mem` (of C elements
 * a row with along, else of one), for reading or writing: the next unit's, fetched while this
 * one computes. Only the copy into the stack reads memory, and without it that copy waited on
 * every line (bench/RESULTS.md, "Short rows as columns"). Each line: at 128 bytes apart
 * layernorm over rows of 2-31 took 1.4-1.6x as long. */
static void narrow_prefetch(lg_fn *g, ir_dtype dt, LLVMValueRef mem, LLVMValueRef r0,
                            LLVMValueRef n, int along, int write) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMValueRef es = ci64(m, (int64_t)ir_dtypes[dt].bytes);
    LLVMValueRef row = along ? LLVMBuildNSWMul(b, g->dim[0], es, "") : es;
    LLVMValueRef from = LLVMBuildNSWMul(b, r0, row, "");
    LLVMValueRef to = LLVMBuildNSWAdd(b, from, LLVMBuildNSWMul(b, n, row, ""), "");
    prefetch_lines(g, LLVMBuildBitCast(b, mem, m->t_i8p, ""), from, to, write);
}

/* Rows of 9 to 16 elements (halves = 1) or 17 to 32 (halves = 2) of the unit's copy, 16 rows
 * at a time, for whole groups of 16 among the cw rows (returns where the rest begins): each
 * row `halves` vectors of 16 elements from its start, each set transposed among the 16 rows
 * (transpose16) into the copy's rows. A row's last vector reaches into the next row, which the
 * group holds, but the group's last row's, which is masked to the row's end. Back into memory,
 * row after row, each row's last vector writes the start of the next row too, which the next
 * then overwrites; the last row's is masked again, so nothing outside the group's rows is
 * touched. Each group first prefetches the same rows of the next unit: spread over the copy so,
 * the prefetches of a unit no longer stall in one loop (a prefetch waits for a free miss
 * buffer) while nothing else runs: layernorm over rows of 9-24 1.2-1.27x faster, softmax over
 * rows of 12-17 1.1-1.15x, rows of 31 even (bench/RESULTS.md, "Short rows in registers"). */
static LLVMValueRef narrow_copy_wide(lg_fn *g, ir_dtype dt, LLVMValueRef tmp, LLVMValueRef mem,
                                     LLVMValueRef r0, LLVMValueRef cw, LLVMValueRef C, int halves,
                                     int out) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMTypeRef t = lg_storage_type(m, dt);
    LLVMTypeRef vt = LLVMVectorType(t, 16), pt = LLVMPointerType(vt, 0);
    LLVMTypeRef tys[2] = {vt, pt};
    unsigned es = (unsigned)ir_dtypes[dt].bytes;
    LLVMValueRef lanes[16];
    for (int j = 0; j < 16; j++)
        lanes[j] = LLVMConstInt(m->t_i32, (unsigned)j, 0);
    /* the last vector's lanes within the row: lane < C - 16 * (halves - 1) */
    LLVMTypeRef v32 = LLVMVectorType(m->t_i32, 16);
    LLVMValueRef left =
        LLVMBuildTrunc(b, LLVMBuildNSWSub(b, C, ci64(m, 16 * (halves - 1)), ""), m->t_i32, "");
    LLVMValueRef k = LLVMBuildInsertElement(b, LLVMGetUndef(v32), left, lanes[0], "");
    LLVMValueRef ks = LLVMBuildShuffleVector(b, k, LLVMGetUndef(v32), LLVMConstNull(v32), "");
    LLVMValueRef mask = LLVMBuildICmp(b, LLVMIntULT, LLVMConstVector(lanes, 16), ks, "");
    LLVMValueRef align = LLVMConstInt(m->t_i32, es, 0);
    LLVMValueRef whole = LLVMBuildAnd(b, cw, ci64(m, -16), "");
    lg_loop G;
    LLVMValueRef c = loop_begin(g, &G, ci64(m, 0), whole, "group");
    LLVMValueRef ahead = LLVMBuildNSWAdd(b, LLVMBuildNSWAdd(b, r0, ci64(m, g->colw), ""), c, "");
    narrow_prefetch(g, dt, mem, ahead, imin(g, ci64(m, 16), LLVMBuildNSWSub(b, g->end, ahead, "")),
                    1, out);
    LLVMValueRef v[2][16], row[2][16], col[2][16];
    for (int h = 0; h < halves; h++)
        for (int i = 0; i < 16; i++) {
            LLVMValueRef mi = LLVMBuildNSWAdd(
                b,
                LLVMBuildNSWMul(
                    b, LLVMBuildNSWAdd(b, r0, LLVMBuildNSWAdd(b, c, ci64(m, i), ""), ""), C, ""),
                ci64(m, 16 * h), "");
            row[h][i] = LLVMBuildBitCast(b, LLVMBuildInBoundsGEP2(b, t, mem, &mi, 1, ""), pt, "");
            LLVMValueRef ti = LLVMBuildNSWAdd(b, ci64(m, (int64_t)(16 * h + i) * g->colw), c, "");
            col[h][i] = LLVMBuildBitCast(b, LLVMBuildInBoundsGEP2(b, t, tmp, &ti, 1, ""), pt, "");
        }
    for (int h = 0; h < halves; h++) {
        int last = h == halves - 1;
        if (!out) {
            for (int i = 0; i < 16; i++) {
                if (i < 15 || !last) {
                    v[h][i] = LLVMBuildLoad2(b, vt, row[h][i], "");
                    LLVMSetAlignment(v[h][i], es);
                } else {
                    LLVMValueRef args[4] = {row[h][i], align, mask, LLVMConstNull(vt)};
                    v[h][i] = lg_intrinsic(m, "llvm.masked.load", tys, 2, args, 4);
                }
            }
            transpose16(m, v[h]);
            for (int e = 0; e < 16 && 16 * h + e < g->narrow_len; e++) /* past C: never read */
                LLVMSetAlignment(LLVMBuildStore(b, v[h][e], col[h][e]), es);
        } else {
            for (int e = 0; e < 16; e++) {
                int in = 16 * h + e < g->narrow_len;
                v[h][e] = in ? LLVMBuildLoad2(b, vt, col[h][e], "") : LLVMConstNull(vt);
                if (in) LLVMSetAlignment(v[h][e], es);
            }
            transpose16(m, v[h]);
        }
    }
    for (int i = 0; out && i < 16; i++) /* a row's vectors in order, then the next row's */
        for (int h = 0; h < halves; h++) {
            if (i < 15 || h < halves - 1) {
                LLVMSetAlignment(LLVMBuildStore(b, v[h][i], row[h][i]), es);
            } else {
                LLVMValueRef args[4] = {v[h][i], row[h][i], align, mask};
                lg_intrinsic(m, "llvm.masked.store", tys, 2, args, 4);
            }
        }
    loop_end(g, &G, ci64(m, 16), -1);
    return whole;
}

/* Copies the unit's cw rows of C = g->dim[0] elements between buffer memory `mem` (rows r0 ...,
 * row-major) and the unit's copy `tmp` (element e of row c at e * g->colw + c): into tmp, or
 * back to memory with `out`. The body of a copy function (narrow_copy_fn). */
static void narrow_copy_rows(lg_fn *g, ir_dtype dt, LLVMValueRef tmp, LLVMValueRef mem,
                             LLVMValueRef r0, LLVMValueRef cw, int out) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    LLVMTypeRef t = lg_storage_type(m, dt);
    lg_loop E, R;
    LLVMValueRef C = g->dim[0];
    LLVMValueRef from = alloca_at_entry(g, m->t_i64, "rest");
    store(g, ci64(m, 0), from);
    LLVMBasicBlockRef other = new_block(g, "rows_any"), done = new_block(g, "rows_copied");
    LLVMValueRef sw = LLVMBuildSwitch(b, C, other, (unsigned)g->narrow_len - 1);
    int wide = m->vector_bytes >= LG_NARROW_WIDE_BYTES;
    LLVMBasicBlockRef bw[2] = {NULL, NULL};
    for (int k = 2; k <= g->narrow_len; k++) {
        if (wide && k > LG_NARROW_UNROLL) {
            int h = k > 16;
            if (!bw[h]) bw[h] = new_block(g, "rows_wide");
            LLVMAddCase(sw, ci64(m, k), bw[h]);
            continue;
        }
        LLVMBasicBlockRef bk = new_block(g, "rows_k");
        LLVMAddCase(sw, ci64(m, k), bk);
        LLVMPositionBuilderAtEnd(b, bk);
        LLVMValueRef c = loop_begin(g, &R, ci64(m, 0), cw, "c");
        for (int e = 0; e < k; e++)
            narrow_copy_one(g, t, tmp, mem, r0, ci64(m, k), c, ci64(m, e), out);
        loop_end(g, &R, ci64(m, 1), k <= LG_NARROW_UNROLL ? 1 : -1);
        LLVMBuildBr(b, done);
    }
    for (int h = 0; h < 2; h++) {
        if (!bw[h]) continue;
        LLVMPositionBuilderAtEnd(b, bw[h]);
        store(g, narrow_copy_wide(g, dt, tmp, mem, r0, cw, C, h + 1, out), from);
        LLVMBuildBr(b, other);
    }
    LLVMPositionBuilderAtEnd(b, other);
    LLVMValueRef c0 = load(g, m->t_i64, from);
    LLVMValueRef e = loop_begin(g, &E, ci64(m, 0), C, "e");
    LLVMValueRef c = loop_begin(g, &R, c0, cw, "c");
    narrow_copy_one(g, t, tmp, mem, r0, C, c, e, out);
    loop_end(g, &R, ci64(m, 1), 1);
    loop_end(g, &E, ci64(m, 1), -1);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
}

/* The rows a copy function handles: every narrow kernel's of the module's target (narrow_max),
 * those of the longest. */
static int narrow_copy_len(const lg_mod *m) {
    if (m->vector_bytes >= LG_NARROW_WIDE_BYTES) return LG_NARROW_MAX;
    return LG_NARROW_SLOW > LG_NARROW_CHEAP ? LG_NARROW_SLOW : LG_NARROW_CHEAP;
}

/* The dtype whose storage a copy function of elements of `bytes` moves: data is only moved, so
 * every dtype of that size shares it. */
static ir_dtype narrow_copy_dtype(int bytes) {
    return bytes == 1 ? IR_BOOL : bytes == 2 ? IR_F16 : bytes == 4 ? IR_I32 : IR_I64;
}

static int narrow_copy_slot(int bytes) {
    return bytes == 1 ? 0 : bytes == 2 ? 1 : bytes == 4 ? 2 : 3;
}

/* The name of the copy function of elements of `bytes`, in or out (LLVM_NARROW_COPY_PREFIX). */
static const char *narrow_copy_name(lg_mod *m, int bytes, int out) {
    return ir_arena_printf(m->arena, "%s%s%d", LLVM_NARROW_COPY_PREFIX, out ? "out" : "in",
                           8 * bytes);
}

/* The function that copies a narrow unit's rows of elements of `bytes` into its copy in the
 * stack, or back with `out` (narrow_copy_rows):
 *     void fusec_ncopy_{in,out}<bits>(iN *tmp, iN *mem, i64 r0, i64 cw, i64 C, i64 end)
 * Each is a few thousand instructions of vectorized loops and transposes, the same in every
 * kernel, and most of a narrow body's compile time (softmax 1.2 s in all on a 2.1 GHz Xeon, 0.5
 * s with its copies compiled elsewhere). So a module has one of each for all its narrow
 * kernels, declared on first use and defined at the end (narrow_copy_define), or, with
 * m->shared_copies, none: the process has them from objects of their own
 * (llvm_gen_narrow_copy), which it builds once for the target and caches. A call a unit costs
 * nothing measurable. */
static LLVMValueRef narrow_copy_fn(lg_mod *m, int bytes, int out) {
    LLVMValueRef *fn = &m->narrow_copies[narrow_copy_slot(bytes)][out];
    if (*fn) return *fn;
    LLVMTypeRef t = lg_storage_type(m, narrow_copy_dtype(bytes)), pt = LLVMPointerType(t, 0);
    LLVMTypeRef ps[6] = {pt, pt, m->t_i64, m->t_i64, m->t_i64, m->t_i64};
    *fn = LLVMAddFunction(m->mod, narrow_copy_name(m, bytes, out),
                          LLVMFunctionType(m->t_void, ps, 6, 0));
    if (!m->shared_copies) LLVMSetLinkage(*fn, LLVMInternalLinkage);
    add_attr(m, *fn, LLVMAttributeFunctionIndex, "nounwind");
    add_attr(m, *fn, LLVMAttributeFunctionIndex, "noinline");
    add_attr(m, *fn, 1, "noalias");
    add_attr(m, *fn, 2, "noalias");
    return *fn;
}

/* The body of copy function fn (narrow_copy_fn's), for elements of `bytes`. */
static void narrow_copy_define(lg_mod *m, LLVMValueRef fn, int bytes, int out) {
    lg_fn h;
    memset(&h, 0, sizeof h);
    h.m = m;
    h.colw = LG_NARROW_WIDTH;
    h.narrow_len = narrow_copy_len(m);
    fn_entry(&h, fn);
    h.dim[0] = LLVMGetParam(fn, 4);
    h.end = LLVMGetParam(fn, 5);
    narrow_copy_rows(&h, narrow_copy_dtype(bytes), LLVMGetParam(fn, 0), LLVMGetParam(fn, 1),
                     LLVMGetParam(fn, 2), LLVMGetParam(fn, 3), out);
    fn_end(&h);
}

/* Copies the unit's cw rows between buffer memory `mem` (rows r0 ... of C elements, row-major;
 * or of one element with !along) and the unit's copy `tmp` (element e of row c at e *
 * g->colw + c): into tmp, or back to memory with `out`. */
static void narrow_copy(lg_fn *g, ir_dtype dt, LLVMValueRef tmp, LLVMValueRef mem, LLVMValueRef r0,
                        LLVMValueRef cw, int along, int out) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    if (!along) {
        lg_loop R;
        LLVMValueRef c = loop_begin(g, &R, ci64(m, 0), cw, "c");
        narrow_copy_one(g, lg_storage_type(m, dt), tmp, mem, r0, ci64(m, 1), c, ci64(m, 0), out);
        loop_end(g, &R, ci64(m, 1), 1);
        return;
    }
    int bytes = (int)ir_dtypes[dt].bytes;
    LLVMValueRef fn = narrow_copy_fn(m, bytes, out);
    LLVMTypeRef pt = LLVMPointerType(lg_storage_type(m, narrow_copy_dtype(bytes)), 0);
    LLVMValueRef args[6] = {LLVMBuildBitCast(b, tmp, pt, ""),
                            LLVMBuildBitCast(b, mem, pt, ""),
                            r0,
                            cw,
                            g->dim[0],
                            g->end};
    LLVMBuildCall2(b, LLVMGetElementType(LLVMTypeOf(fn)), fn, args, 6, "");
}

/* Access i of a narrow kernel read or written in memory (an index: where it would be): a row
 * of dim[0] elements along axis 0, the rows one after another along axis 1. */
static void narrow_in_memory(lg_fn *g, int32_t i) {
    uint32_t pr = g->p->pk->acc[i].present;
    if (pr & 1u) g->stride[i * IR_MAX_RANK + 0] = ci64(g->m, 1);
    if (pr & 2u) g->stride[i * IR_MAX_RANK + 1] = (pr & 1u) ? g->dim[0] : ci64(g->m, 1);
}

/* What a narrow kernel's (g: narrow_plan's transpose) accesses read and write: the buffers it
 * loads or stores along the rows (by buffer: loaded, stored; along: along a row too), each
 * given a copy in the stack that g->bufp now points to (their memory in mem), and every
 * access's strides: the copy's for those, the row kernel's in memory for the others. */
static void narrow_stage(lg_fn *g, LLVMValueRef *mem, uint8_t *loaded, uint8_t *stored,
                         uint8_t *along) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    for (int32_t i = 0; i < p->pk->nacc; i++) {
        uint32_t pr = p->pk->acc[i].present;
        if (!narrow_staged(p, i)) {
            narrow_in_memory(g, i);
            continue;
        }
        int32_t bf = p->pk->acc[i].buf;
        (p->pk->acc[i].store ? stored : loaded)[bf] = 1;
        along[bf] = (pr & 1u) != 0;
        g->stride[i * IR_MAX_RANK + 0] = along[bf] ? ci64(m, g->colw) : NULL;
        g->stride[i * IR_MAX_RANK + 1] = ci64(m, 1);
        if (mem[bf]) continue;
        mem[bf] = g->bufp[bf];
        LLVMTypeRef t = lg_storage_type(m, p->fm->plan->bufs[bf].dtype);
        int n = (along[bf] ? narrow_slots(g->narrow_len) : 1) * g->colw;
        LLVMValueRef a = alloca_at_entry(g, LLVMArrayType(t, (unsigned)n), "rows");
        LLVMSetAlignment(a, 64);
        g->bufp[bf] = LLVMBuildBitCast(m->b, a, LLVMPointerType(t, 0), "");
    }
}

/* ---- a narrow unit in registers --------------------------------------------------------------
 */

/* The slots of a narrow unit in registers: each element k's values, the offsets it loads at
 * (the row's last element past its end) and stores at, and whether it is in the row. */
typedef struct lg_regs {
    int slots;
    LLVMValueRef **val, **ld, **st, *in;
    int **lvl;
} lg_regs;

static void regs_init(lg_fn *g, const lg_colunit *cu, lg_regs *rg, int slots) {
    lg_mod *m = g->m;
    ir_arena *a = m->arena;
    size_t nn = (size_t)g->f->nnodes + 1;
    /* the row's last element, or its first where the row is empty (reads that nothing uses,
     * within the copies and the weights, never before them) */
    LLVMValueRef last = LLVMBuildNSWSub(m->b, cu->nred, ci64(m, 1), "");
    last = LLVMBuildSelect(m->b, LLVMBuildICmp(m->b, LLVMIntSLT, last, ci64(m, 0), ""), ci64(m, 0),
                           last, "");
    rg->slots = slots;
    rg->val = ir_arena_calloc(a, (size_t)slots, sizeof(*rg->val));
    rg->lvl = ir_arena_calloc(a, (size_t)slots, sizeof(*rg->lvl));
    rg->ld = ir_arena_calloc(a, (size_t)slots, sizeof(*rg->ld));
    rg->st = ir_arena_calloc(a, (size_t)slots, sizeof(*rg->st));
    rg->in = ir_arena_calloc(a, (size_t)slots, sizeof(*rg->in));
    for (int k = 0; k < slots; k++) {
        rg->val[k] = ir_arena_calloc(a, nn, sizeof(**rg->val));
        rg->lvl[k] = ir_arena_calloc(a, nn, sizeof(**rg->lvl));
        rg->in[k] = LLVMBuildICmp(m->b, LLVMIntSLT, ci64(m, k), cu->nred, "");
        rg->ld[k] = new_bases(g, cu->kbase);
        add_offsets(g, rg->ld[k], imin(g, ci64(m, k), last), cu->red_axes, cu->nr);
        rg->st[k] = new_bases(g, cu->kbase);
        add_offsets(g, rg->st[k], ci64(m, k), cu->red_axes, cu->nr);
    }
}

/* Sweep s of a narrow unit in registers at every slot: evaluated, stored, and each
 * reduction's lane k (into lanes[i * slots + k]). */
static void regs_sweep(lg_fn *g, lg_regs *rg, const lg_sweep *sw, LLVMValueRef *lanes) {
    lg_mod *m = g->m;
    for (int k = 0; k < rg->slots; k++) {
        g->val = rg->val[k];
        g->lvl = rg->lvl[k];
        g->base = rg->ld[k];
        eval(g, sw->roots, sw->nroots);
        for (int32_t i = 0; i < sw->nred; i++) {
            const ir_node *n = &g->f->nodes[sw->red[i].node];
            LLVMValueRef id = lg_red_identity(m, g->f, n);
            LLVMValueRef x = lg_red_pre(m, g->f, n, value_of(g, n->args[0]));
            x = lg_red_combine(m, g->f, n, id, x); /* a lane takes its element */
            lanes[i * rg->slots + k] = LLVMBuildSelect(m->b, rg->in[k], x, id, "");
        }
        g->base = rg->st[k];
        for (int32_t i = 0; i < sw->nroots; i++)
            if (stored_at(g, sw->roots[i], sw->s)) store_node(g, sw->roots[i]);
    }
}

/* Reduction rd's lanes combined by halves (column_block_end's tree: a lane past the used ones
 * holds the identity and is left alone), finished, and its value set (the next stage stores
 * it where it is stored). */
static void regs_total(lg_fn *g, const lg_colunit *cu, const lg_red *rd, LLVMValueRef *lane,
                       int slots) {
    lg_mod *m = g->m;
    const ir_node *n = &g->f->nodes[rd->node];
    int used = slots;
    for (int half = LG_LANES / 2; half >= 1; half /= 2) {
        for (int l = 0; l + half < used; l++)
            lane[l] = lg_red_combine(m, g->f, n, lane[l], lane[l + half]);
        if (used > half) used = half;
    }
    set_val(g, rd->node, as_kept(g, rd->node, lg_red_post(m, g->f, n, lane[0], cu->nred)));
}

/* One unit's sweeps (its columns [lo, hi)) over rows of at most `slots` elements (cu->nred, the
 * row's length, at most slots; slots at most LG_LANES), written out element by element instead of
 * column_unit's loops over the rows: a loop over the unit's columns (vectorized: a vector
 * holds one element of as many rows) whose body computes every element k < slots of its row,
 * each reduction's lanes (element k in lane k, as docs/plan.md orders a block; a lane past the
 * row's end the identity) combined by halves, and everything after. Values stay in registers
 * from one sweep to the next (softmax's exp once), where column_unit kept its lanes and
 * per-column values in arrays on the stack, loaded and stored a row at a time. An element past
 * the row's end reads the row's last one (nothing past the copies, or past a weight along the
 * row) and writes its copy's row there, which is never copied back. */
static void narrow_regs(lg_fn *g, const lg_colunit *cu, int slots, LLVMValueRef lo,
                        LLVMValueRef hi) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    LLVMValueRef *col_val = g->val;
    int *col_lvl = g->lvl;
    lg_loop C;
    LLVMValueRef c = loop_begin(g, &C, lo, hi, "c");
    scope_enter(g);
    g->j = c;
    g->flat = c;
    lg_regs rg;
    regs_init(g, cu, &rg, slots);
    for (int s = 0; s <= p->pk->nsweeps; s++) {
        g->val = col_val;
        g->lvl = col_lvl;
        per_result_stage(g, s, cu->kbase, c);
        if (s == p->pk->nsweeps && !p->pk->final_sweep) break;
        for (int32_t i = p->pk->from; i < p->pk->to; i++) { /* every slot sees them */
            ir_ref r = g->k->body[i];
            if (!p->pk->per_result[r] || !col_val[r]) continue;
            for (int k = 0; k < slots; k++) {
                rg.val[k][r] = col_val[r];
                rg.lvl[k][r] = col_lvl[r];
            }
        }
        lg_sweep sw;
        sweep_init(g, &sw, s);
        g->sweep = s;
        LLVMValueRef *lanes =
            ir_arena_calloc(m->arena, (size_t)(sw.nred * slots) + 1, sizeof(*lanes));
        regs_sweep(g, &rg, &sw, lanes);
        if (s == p->pk->nsweeps) break;
        g->val = col_val;
        g->lvl = col_lvl;
        g->base = cu->kbase;
        for (int32_t i = 0; i < sw.nred; i++)
            regs_total(g, cu, &sw.red[i], lanes + i * slots, slots);
    }
    g->val = col_val;
    g->lvl = col_lvl;
    scope_exit(g);
    loop_end(g, &C, ci64(m, 1), 1);
}

/* Kernel g's per-element nodes as LG_NARROW_BUDGET counts them (a transcendental
 * LG_NARROW_MATH), per-result ones (computed once a row) aside. */
static int narrow_nodes(const lg_fn *g) {
    const plan_kernel *pk = g->p->pk;
    int nodes = 0;
    for (int32_t i = pk->from; i < pk->to; i++) {
        ir_ref r = g->k->body[i];
        if (pk->per_result[r]) continue;
        nodes += ir_ops[g->f->nodes[r].op].flags & IR_OPF_EXPENSIVE ? LG_NARROW_MATH : 1;
    }
    return nodes;
}

/* The units narrow kernel g has (a list of lg_narrow_lists cut after the first unit that holds
 * g->narrow_len, or that unit of the finest list alone), and how many, into *n; NULL when not
 * even one unit is within the budget. */
static const int *narrow_units(const lg_fn *g, int *n) {
    int nodes = narrow_nodes(g);
    int top = 0; /* the finest list's unit that holds the rows */
    for (int l = 0; l < 2; l++) {
        const int *list = lg_narrow_lists[l];
        int k = 0, slots = 0;
        while (k == 0 || list[k - 1] < g->narrow_len)
            slots += list[k++];
        if (l == 0) top = k - 1;
        if ((int64_t)slots * nodes <= LG_NARROW_BUDGET) {
            *n = k;
            return list;
        }
    }
    /* charged as a full block of lanes, whatever its length: on AVX2 a kernel of 85 nodes
     * (five transcendentals) in one unit of 16 ran rows of 6 at 0.61x, rows of 13 at 1.3x
     * its column loops' speed */
    *n = 1;
    return (int64_t)LG_LANES * nodes <= LG_NARROW_BUDGET ? &lg_narrow_lists[0][top] : NULL;
}

/* A narrow unit's sweeps: narrow_regs in the least of narrow_units's units that holds its rows,
 * or column_unit's loops over them where no unit is within the budget. */
static void narrow_compute(lg_fn *g, lg_colunit *cu) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    int nb;
    const int *units = narrow_units(g, &nb);
    if (!units) {
        for (int32_t r = 0; r < g->f->nnodes; r++)
            g->in_arr[r] = 0;
        column_unit(g, cu);
        return;
    }
    LLVMBasicBlockRef done = new_block(g, "unit_done"), bucket[11] = {NULL};
    for (int i = 0; i < nb; i++)
        bucket[i] = new_block(g, "slots");
    /* rows longer than narrow_len never come here: the last unit is the default */
    LLVMValueRef sw = LLVMBuildSwitch(b, cu->nred, bucket[nb - 1], (unsigned)g->narrow_len);
    for (int k = 0, i = 0; k < g->narrow_len; k++) {
        while (units[i] < k)
            i++;
        LLVMAddCase(sw, ci64(m, k), bucket[i]);
    }
    for (int i = 0; i < nb; i++) {
        LLVMPositionBuilderAtEnd(b, bucket[i]);
        narrow_regs(g, cu, units[i], ci64(m, 0), ci64(m, g->colw));
        LLVMBuildBr(b, done);
    }
    LLVMPositionBuilderAtEnd(b, done);
}

/* The body of a narrow kernel (a column kernel of narrow_plan's transpose): the task's rows
 * [begin, end) a unit of g->colw (LG_NARROW_WIDTH) at a time. What a unit reads and writes
 * along the rows' axis goes through copies in the stack (narrow_stage; transposed where it
 * varies along a row too), so the unit's sweeps (narrow_compute) always run over g->colw
 * columns, a constant: its loop over columns becomes straight vector code. The next unit's
 * lines are fetched first. The last unit's columns past the task's rows compute on whatever
 * the copies hold there (integer division is guarded; nothing traps) and are never written
 * back. */
static void gen_narrow(lg_fn *g) {
    const llvm_kplan *p = g->p;
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    int32_t nb = p->fm->plan->nbufs;
    LLVMValueRef *mem = ir_arena_calloc(m->arena, (size_t)nb + 1, sizeof(*mem));
    uint8_t *loaded = ir_arena_calloc(m->arena, (size_t)nb + 1, 1);
    uint8_t *stored = ir_arena_calloc(m->arena, (size_t)nb + 1, 1);
    uint8_t *along = ir_arena_calloc(m->arena, (size_t)nb + 1, 1);
    narrow_stage(g, mem, loaded, stored, along);
    lg_colunit cu;
    column_axes(g, &cu);
    column_arrays(g); /* (column_unit's, where narrow_compute falls back on it) */
    g->narrow = 1;
    lg_loop U;
    LLVMValueRef r0 = loop_begin(g, &U, g->begin, g->end, "unit");
    LLVMValueRef cw = imin(g, ci64(m, g->colw), LLVMBuildNSWSub(b, g->end, r0, ""));
    cu.cw = ci64(m, g->colw);
    cu.col0 = r0;
    cu.kbase = new_bases(g, NULL);
    for (int32_t i = 0; i < p->pk->nacc; i++) /* an index along the rows */
        if (!narrow_staged(p, i) && ((p->pk->acc[i].present >> 1) & 1))
            cu.kbase[i] = LLVMBuildNSWMul(b, r0, g->stride[i * IR_MAX_RANK + 1], "");
    LLVMValueRef next = LLVMBuildNSWAdd(b, r0, ci64(m, g->colw), "");
    LLVMValueRef nextw = imin(g, ci64(m, g->colw), LLVMBuildNSWSub(b, g->end, next, ""));
    /* rows copied through transposes prefetch a group at a time (narrow_copy_wide) */
    LLVMValueRef unwide =
        m->vector_bytes >= LG_NARROW_WIDE_BYTES
            ? LLVMBuildICmp(b, LLVMIntSLE, g->dim[0], ci64(m, LG_NARROW_UNROLL), "")
            : NULL;
    for (int32_t bf = 0; bf < nb; bf++) {
        if (!loaded[bf] && !stored[bf]) continue;
        LLVMBasicBlockRef after = along[bf] && unwide ? if_begin(g, unwide) : NULL;
        narrow_prefetch(g, p->fm->plan->bufs[bf].dtype, mem[bf], next, nextw, along[bf],
                        !loaded[bf]);
        if (after) if_end(g, after);
    }
    for (int32_t bf = 0; bf < nb; bf++)
        if (loaded[bf])
            narrow_copy(g, p->fm->plan->bufs[bf].dtype, g->bufp[bf], mem[bf], r0, cw, along[bf], 0);
    narrow_compute(g, &cu);
    for (int32_t bf = 0; bf < nb; bf++)
        if (stored[bf])
            narrow_copy(g, p->fm->plan->bufs[bf].dtype, g->bufp[bf], mem[bf], r0, cw, along[bf], 1);
    loop_end(g, &U, ci64(m, g->colw), 0);
}

/* The body for rows of one element of a narrow kernel with units in registers (g: narrow_plan's
 * transpose): narrow_regs of one slot over the task's rows [begin, end) in memory, an
 * element-wise loop, without units or copies. Through units of 128 rows softmax over rows of
 * one took 1.8x, layernorm 1.9x the time. A function of its own: as a loop of the narrow body,
 * layernorm over rows of 2 took 1.3x as long (bench/RESULTS.md, "Short rows in registers"). */
static void gen_narrow_one(lg_fn *g) {
    g->dim[0] = ci64(g->m, 1); /* a constant: the loads and stores are contiguous vectors */
    for (int32_t i = 0; i < g->p->pk->nacc; i++)
        narrow_in_memory(g, i);
    lg_colunit cu;
    column_axes(g, &cu);
    cu.kbase = new_bases(g, NULL); /* a row's index is its column's */
    narrow_regs(g, &cu, 1, g->begin, g->end);
}

/* What row kernel g's narrow body costs to compile, in LG_NARROW_BUDGET's units (slots times
 * per-element nodes) plus LG_NARROW_COPY_COST for each buffer it copies; 0 when it has none. */
static int64_t narrow_cost(const lg_fn *g) {
    lg_fn t = *g;
    if ((t.narrow_len = narrow_max(g)) <= 0) return 0;
    int n, slots = 0;
    const int *units = narrow_units(&t, &n);
    for (int i = 0; units && i < n; i++)
        slots += units[i];
    return (int64_t)(units ? slots : LG_LANES) * narrow_nodes(&t) +
           (int64_t)LG_NARROW_COPY_COST * narrow_buffers(g);
}

/* Kernel task p's state before generation (gen_task's, and narrow_choose's for its costs). */
static void fn_init(lg_fn *g, lg_mod *m, const llvm_kplan *p) {
    memset(g, 0, sizeof *g);
    g->m = m;
    g->p = p;
    g->f = p->pk->f;
    g->k = &p->pk->f->partition->kernels[p->pk->kernel];
}

/* Which of the module's ntasks tasks (their plans) get a narrow body (ok[task]): the cheapest
 * first (narrow_cost; in the module's order among equals) while the module's total stays within
 * LG_NARROW_MODULE_BUDGET. */
static void narrow_choose(lg_mod *m, const llvm_kplan *plans, int32_t ntasks, uint8_t *ok) {
    int64_t *cost = ir_arena_calloc(m->arena, (size_t)ntasks + 1, sizeof(*cost));
    for (int32_t t = 0; t < ntasks; t++) {
        lg_fn g;
        fn_init(&g, m, &plans[t]);
        cost[t] = narrow_cost(&g);
    }
    int64_t total = 0;
    for (;;) { /* the cheapest task not yet taken, while it fits */
        int32_t best = -1;
        for (int32_t i = 0; i < ntasks; i++)
            if (cost[i] > 0 && !ok[i] && (best < 0 || cost[i] < cost[best])) best = i;
        if (best < 0 || total + cost[best] > LG_NARROW_MODULE_BUDGET) return;
        total += cost[best];
        ok[best] = 1;
    }
}

/* Row task `name` with its short rows as columns: the narrow body (gen_narrow over the
 * transposed plan), which the task's wrapper calls for rows of at most narrow_max elements,
 * and the row kernel's body for the others. */
static void gen_row_split(lg_fn *g, const char *name) {
    lg_mod *m = g->m;
    llvm_kplan tp;
    plan_kernel tpk;
    narrow_plan(g->p, m->arena, &tp, &tpk);
    lg_fn t = *g;
    t.p = &tp;
    t.use_cache = 0;
    t.colw = LG_NARROW_WIDTH;
    t.narrow_len = g->narrow_len = narrow_max(g);
    fn_begin(&t, ir_arena_printf(m->arena, "%s.narrow", name), 0);
    gen_narrow(&t);
    fn_end(&t);
    g->narrow_fn = t.fn;
    int n;
    if (narrow_units(&t, &n)) {
        lg_fn o = t;
        fn_begin(&o, ir_arena_printf(m->arena, "%s.one", name), 0);
        gen_narrow_one(&o);
        fn_end(&o);
        g->one_fn = o.fn;
    }
    fn_begin(g, name, 1);
    gen_row(g);
    fn_end(g);
}

/* An element-wise kernel whose runs may be short (run_tails): one body function for runs of
 * at least LG_TAIL_MIN elements, their tails vectorized, called by the task's body for such
 * runs; the task's body keeps the loop's scalar remainder for shorter ones, which a masked
 * vector's set-up would cost more than it saves (bias + ReLU over rows of 2 to 7 took 1.1-1.8x
 * as long so). Two functions, not two loops of one: in one, the registers' allocation around
 * the other loop made bias + ReLU over rows of 5 take 1.3x as long. */
static void gen_pointwise_split(lg_fn *g, const char *name) {
    lg_mod *m = g->m;
    LLVMBuilderRef b = m->b;
    lg_fn t = *g;
    fn_begin(&t, ir_arena_printf(m->arena, "%s.tails", name), 0);
    gen_pointwise(&t);
    fn_end(&t);
    g->no_tails = 1;
    fn_begin(g, name, 1);
    int axes[IR_MAX_RANK];
    int n = all_axes(g->p, axes);
    LLVMBasicBlockRef tails = new_block(g, "tails"), few = new_block(g, "few");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGE, g->dim[axes[n - 1]], ci64(m, LG_TAIL_MIN), ""),
                    tails, few);
    LLVMPositionBuilderAtEnd(b, tails);
    unsigned np = LLVMCountParams(t.fn);
    LLVMValueRef *args = ir_arena_calloc(m->arena, np + 1, sizeof(*args));
    for (unsigned i = 0; i < np; i++)
        args[i] = LLVMGetParam(g->fn, i);
    LLVMBuildCall2(b, LLVMGetElementType(LLVMTypeOf(t.fn)), t.fn, args, np, "");
    LLVMBuildRetVoid(b);
    LLVMPositionBuilderAtEnd(b, few);
    gen_pointwise(g);
    fn_end(g);
}

static int gen_task(lg_mod *m, const llvm_kplan *p, const char *name, int which, int narrow) {
    lg_fn g;
    fn_init(&g, m, p);
    g.use_cache = which == LG_TASK && p->ncached > 0;
    g.colw = LLVM_COLUMN_WIDTH;
    if (p->loop == LLVM_LOOP_POINTWISE && run_tails(&g)) {
        gen_pointwise_split(&g, name);
        return m->fail.failed ? -1 : 0;
    }
    if (which == LG_TASK && narrow && narrow_max(&g) > 0) {
        gen_row_split(&g, name);
        return m->fail.failed ? -1 : 0;
    }
    fn_begin(&g, name, 1);
    switch (p->loop) {
    case LLVM_LOOP_POINTWISE: gen_pointwise(&g); break;
    case LLVM_LOOP_ROW: gen_row(&g); break;
    case LLVM_LOOP_COLUMN:
        if (which == LG_PIECES)
            gen_column_pieces(&g);
        else if (which == LG_JOIN)
            gen_column_join(&g);
        else
            gen_column(&g);
        break;
    case LLVM_LOOP_FULL:
        if (which == LG_FINALIZE)
            gen_full_finalize(&g);
        else
            gen_full(&g);
        break;
    }
    fn_end(&g);
    return m->fail.failed ? -1 : 0;
}

/* The module-wide state of a generation into mod for the target of opt. */
static void mod_init(lg_mod *m, LLVMContextRef ctx, LLVMModuleRef mod, const llvm_gen_options *opt,
                     ir_arena *arena, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    m->ctx = ctx;
    m->mod = mod;
    m->b = LLVMCreateBuilderInContext(ctx);
    m->t_void = LLVMVoidTypeInContext(ctx);
    m->t_i1 = LLVMInt1TypeInContext(ctx);
    m->t_i8 = LLVMInt8TypeInContext(ctx);
    m->t_i16 = LLVMInt16TypeInContext(ctx);
    m->t_i32 = LLVMInt32TypeInContext(ctx);
    m->t_i64 = LLVMInt64TypeInContext(ctx);
    m->t_half = LLVMHalfTypeInContext(ctx);
    m->t_f32 = LLVMFloatTypeInContext(ctx);
    m->t_f64 = LLVMDoubleTypeInContext(ctx);
    m->t_i8p = LLVMPointerType(m->t_i8, 0);
    m->t_i64p = LLVMPointerType(m->t_i64, 0);
    m->fast_math = opt ? opt->fast_math : 0;
    m->f16c = opt ? opt->f16c : 1;
    m->x86 = opt ? opt->x86 : 0;
    m->vector_bytes = opt && opt->vector_bytes > 0 ? opt->vector_bytes : 16;
    m->shared_copies = opt ? opt->shared_copies : 0;
    m->arena = arena;
    m->fail.err = err;
    m->fail.errlen = errlen;
}

int llvm_gen_narrow_copy(LLVMContextRef ctx, LLVMModuleRef mod, const llvm_gen_options *opt,
                         const char *name, ir_arena *arena, char *err, size_t errlen) {
    lg_mod m;
    mod_init(&m, ctx, mod, opt, arena, err, errlen);
    for (int bytes = 1; bytes <= 8; bytes *= 2)
        for (int out = 0; out < 2; out++) {
            if (strcmp(name, narrow_copy_name(&m, bytes, out)) != 0) continue;
            LLVMValueRef fn = narrow_copy_fn(&m, bytes, out);
            LLVMSetLinkage(fn, LLVMExternalLinkage);
            narrow_copy_define(&m, fn, bytes, out);
            LLVMDisposeBuilder(m.b);
            return m.fail.failed ? -1 : 0;
        }
    LLVMDisposeBuilder(m.b);
    snprintf(err, errlen, "internal error: '%s' is no copy function", name);
    return -1;
}

int llvm_gen_module(LLVMContextRef ctx, LLVMModuleRef mod, const llvm_module_meta *meta,
                    const llvm_gen_options *opt, ir_arena *arena, char *err, size_t errlen) {
    lg_mod m;
    mod_init(&m, ctx, mod, opt, arena, err, errlen);
    /* every task planned first: which get narrow bodies depends on all of them */
    int32_t ntasks = 0, task = 0;
    for (int32_t fi = 0; fi < meta->nfuncs; fi++)
        for (int32_t k = 0; k < meta->funcs[fi].nkernels; k++)
            ntasks += meta->funcs[fi].kernels[k].ntasks;
    llvm_kplan *plans = ir_arena_calloc(arena, (size_t)ntasks + 1, sizeof(*plans));
    uint8_t *narrow = ir_arena_calloc(arena, (size_t)ntasks + 1, 1);
    for (int32_t fi = 0; fi < meta->nfuncs; fi++) {
        const llvm_func_meta *fm = &meta->funcs[fi];
        for (int32_t k = 0; k < fm->nkernels; k++)
            for (int32_t t = 0; t < fm->kernels[k].ntasks; t++, task++) {
                int32_t part = fm->kernels[k].kind == IR_KERNEL_COMBINED ? t : -1;
                if (llvm_plan_kernel(fm, k, part, arena, &plans[task], err, errlen)) {
                    LLVMDisposeBuilder(m.b);
                    return -1;
                }
            }
    }
    narrow_choose(&m, plans, ntasks, narrow);
    int rc = 0;
    task = 0;
    for (int32_t fi = 0; fi < meta->nfuncs && !rc; fi++) {
        const llvm_func_meta *fm = &meta->funcs[fi];
        for (int32_t k = 0; k < fm->nkernels && !rc; k++) {
            const llvm_kernel_meta *km = &fm->kernels[k];
            for (int32_t t = 0; t < km->ntasks && !rc; t++, task++) {
                const llvm_kplan *p = &plans[task];
                rc = gen_task(&m, p, km->tasks[t].symbol, LG_TASK, narrow[task]);
                if (!rc && km->finalize) rc = gen_task(&m, p, km->finalize, LG_FINALIZE, 0);
                if (!rc && km->split_pieces) rc = gen_task(&m, p, km->split_pieces, LG_PIECES, 0);
                if (!rc && km->split_join) rc = gen_task(&m, p, km->split_join, LG_JOIN, 0);
            }
        }
    }
    for (int i = 0; i < 4 && !rc && !m.shared_copies; i++)
        for (int out = 0; out < 2; out++)
            if (m.narrow_copies[i][out])
                narrow_copy_define(&m, m.narrow_copies[i][out], 1 << i, out);
    LLVMDisposeBuilder(m.b);
    return rc;
}
