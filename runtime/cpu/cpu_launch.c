/* runtime/cpu/cpu_launch.c: launches of loaded CPU kernels (runtime/cpu/cpu_launch.h), part of
 * libfusec_rt: the JIT's programs and those of libraries built ahead of time run here alike.
 *
 * A launch runs the function's kernels in partition order, each spread over the pool in
 * contiguous parts of its iteration space, and returns when they are done (there are no
 * streams on the CPU). The intermediates the partition stores live in one block per launch,
 * taken from the program's few kept blocks and given back after it: a block of fresh pages
 * per launch cost more in page faults than the unfused kernels themselves. Results are
 * bit-identical from run to run: every row, column unit and chunk of a reduction is summed
 * by one call in an order fixed by the shape, and a full reduction's chunk partials are
 * combined in index order.
 */
#include "runtime/cpu/cpu_launch.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/clock.h"
#include "runtime/cpu/threadpool.h"

/* Kernels touching fewer elements than this run on the calling thread alone. */
#define CPU_PARALLEL_MIN_ELEMS 32768
#define CPU_ALIGN              64
/* Threads' row caches lie a page apart: a core's hardware prefetchers run ahead of the
 * scratch it sweeps, and lines they fetch from the next thread's scratch, which that thread
 * is writing, go back and forth between the cores. Softmax's row-kernel time fell to a
 * copy's as the gap grew to 4 KB, and no further beyond (bench/RESULTS.md, "The measurements
 * behind the code's constants"). */
#define CPU_SCRATCH_GAP 4096

typedef struct cpu_kernel {
    llvm_task_fn *tasks; /* one per task */
    llvm_task_fn finalize;
    llvm_task_fn split_pieces, split_join; /* a column kernel the plan lets split */
} cpu_kernel;

/* Blocks of intermediates a program keeps for its next launches. */
#define CPU_KEPT_BLOCKS 4

struct rt_cpu_program {
    const rt_cpu_module *mod;
    int vector_bytes; /* the widest vector the kernels were built for */
    /* why launches are refused ("" when they are not): the code is for a CPU whose
     * instructions the host lacks, so it is built (and cached) but never loaded or run; room
     * for the longest list of what it lacks (Zen 3 lacks 15 of sapphirerapids' features) */
    char refusal[512];
    cpu_kernel **kernels; /* [func][kernel] */
    /* blocks for the intermediates of launches, kept between them (concurrent launches
     * take one each) */
    pthread_mutex_t blocks_mu;
    int nblocks;
    void *blocks[CPU_KEPT_BLOCKS];
    size_t block_bytes[CPU_KEPT_BLOCKS];
};

/* Results of at least stream_min bytes are written with streaming stores: through an L1
 * staging block, without the read-for-ownership of each line (a third of the traffic of a
 * kernel that reads and writes the same bytes), at the price of a second pass over each
 * block in L1, and of the results' lines in the last-level cache, which a later read of them
 * finds there. A kernel bound by memory gains; one bound by its arithmetic loses. So
 * reductions stream (a row's epilogue overlaps its writes with the next row's sweeps), and
 * element-wise kernels stream unless they evaluate a transcendental on a target without
 * AVX-512, where the arithmetic is the bound (bench/RESULTS.md, "The measurements behind the
 * code's constants"). stream_min is LLVM_STREAM_MIN_BYTES, or an eighth of the last-level
 * cache where that is more: on a Xeon whose L3 is 300 MB, results of 16 and 32 MB took 3-30%
 * longer streamed than stored plainly (GELU, bias + ReLU, layernorm; softmax, bound by its
 * arithmetic, as long), and from 48 MB most took 5-31% less (bench/RESULTS.md, "Streaming
 * and the size of the L3"); with the 32 MB L3 of a Zen core complex it stays 8 MB.
 * FUSEC_CPU_STREAM_MIN_BYTES sets one threshold for every kernel, runs of any length included
 * (tests set 0 to stream everything). */
static pthread_once_t stream_once = PTHREAD_ONCE_INIT;
static double stream_min_override = -1;
static double stream_min = LLVM_STREAM_MIN_BYTES;

static void stream_init(void) {
#ifdef _SC_LEVEL3_CACHE_SIZE
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE); /* 0 or -1 where the C library cannot tell */
    if (llc > 0 && (double)llc / 8 > stream_min) stream_min = (double)llc / 8;
#endif
    const char *e = getenv("FUSEC_CPU_STREAM_MIN_BYTES");
    char *end = NULL;
    /* read in the "C" locale, so that 1.5e6 means the same under de_DE */
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t old = c ? uselocale(c) : (locale_t)0;
    double d = e && *e ? strtod(e, &end) : -1;
    if (old) uselocale(old);
    if (c) freelocale(c);
    if (e && *e && end && *end == 0 && d >= 0) stream_min_override = d;
}

/* Runs of results shorter than this are not streamed, whatever the total: each run is staged
 * and copied out on its own, partial lines at both ends, which costs more than the reads for
 * ownership it saves; at 256 bytes (64 f32) the two were even, and longer runs gained
 * (bench/RESULTS.md, "The measurements behind the code's constants"). */
#define CPU_STREAM_MIN_RUN_BYTES 256
/* The same for the rows of a row kernel, whose last sweep comes after the row's reductions: at
 * 256 bytes plain stores ran faster (softmax [65536, 64] f32 2.85 against 3.15 ms and layernorm
 * 2.58 against 2.65 on Zen 3; x * rsqrt(sum(x * x)) 12.3 against 12.9 ms on Zen 5), at 512
 * the two were even, and longer rows gained (softmax [16384, 256] 2.37 against 2.68 ms). */
#define CPU_STREAM_MIN_ROW_BYTES 512
/* Element-wise runs whose length is no multiple of half a cache line start and end inside
 * lines at offsets that streaming stores write badly: bias + ReLU over rows of 100 and 150 f32
 * (400 and 600 bytes) took twice as long streamed (6.3-6.7 against 3.2-3.5 ms from memory, one
 * thread), while rows of 120 and 200 (480 and 800 bytes, halves of lines) took 10-20% less
 * streamed, and rows of 300 to 700 (1200 to 2800 bytes) as long or less (bench/RESULTS.md,
 * "The ends of element-wise runs"). Such runs stream from this length on. */
#define CPU_STREAM_MIN_SPLIT_RUN_BYTES 1024

double rt_cpu_stream_min_bytes(void) {
    pthread_once(&stream_once, stream_init);
    return stream_min_override >= 0 ? stream_min_override : stream_min;
}

/* Whether a launch of km over `elems` elements streams its results. */
static int streams(const llvm_kernel_meta *km, int vector_bytes, int64_t elems,
                   const int64_t *syms) {
    pthread_once(&stream_once, stream_init);
    if (km->elem_out_bytes <= 0) return 0;
    double bytes = (double)elems * km->elem_out_bytes;
    if (stream_min_override >= 0) return bytes >= stream_min_override;
    int elementwise = km->kind == IR_KERNEL_POINTWISE || km->kind == IR_KERNEL_COMBINED;
    if (elementwise && km->expensive && vector_bytes < 64) return 0;
    int64_t run = plan_shape_count(&km->run_shape, syms) * km->elem_out_bytes;
    int64_t min_run =
        km->kind == IR_KERNEL_ROW_REDUCTION ? CPU_STREAM_MIN_ROW_BYTES : CPU_STREAM_MIN_RUN_BYTES;
    if (elementwise && run % 32 != 0 && run < CPU_STREAM_MIN_SPLIT_RUN_BYTES) return 0;
    return bytes >= stream_min && run >= min_run;
}

/* ---- programs ------------------------------------------------------------------------------ */

void rt_cpu_program_free(rt_cpu_program *p) {
    if (!p) return;
    if (p->kernels) {
        for (int f = 0; f < p->mod->nfuncs; f++) {
            if (!p->kernels[f]) continue;
            for (int32_t k = 0; k < p->mod->funcs[f].nkernels; k++)
                free(p->kernels[f][k].tasks);
            free(p->kernels[f]);
        }
        free(p->kernels);
    }
    for (int i = 0; i < p->nblocks; i++)
        free(p->blocks[i]);
    pthread_mutex_destroy(&p->blocks_mu);
    free(p);
}

typedef struct lookup_ctx {
    rt_cpu_lookup_fn fn;
    void *code;
    char *err;
    size_t errlen;
} lookup_ctx;

static llvm_task_fn lookup(const lookup_ctx *l, const char *name) {
    void *addr = l->fn(l->code, name, l->err, l->errlen);
    llvm_task_fn fn;
    memcpy(&fn, &addr, sizeof fn); /* an object pointer to a function pointer, as dlsym's */
    return fn;
}

/* Every kernel's functions, looked up. 0, or -1 with l's err. */
static int resolve(rt_cpu_program *p, const lookup_ctx *l) {
    const rt_cpu_module *m = p->mod;
    p->kernels = calloc((size_t)(m->nfuncs ? m->nfuncs : 1), sizeof(*p->kernels));
    if (!p->kernels) goto oom;
    for (int f = 0; f < m->nfuncs; f++) {
        const rt_cpu_func *fm = &m->funcs[f];
        p->kernels[f] = calloc((size_t)(fm->nkernels ? fm->nkernels : 1), sizeof(cpu_kernel));
        if (!p->kernels[f]) goto oom;
        for (int32_t k = 0; k < fm->nkernels; k++) {
            const llvm_kernel_meta *km = &fm->kernels[k];
            cpu_kernel *ck = &p->kernels[f][k];
            ck->tasks = calloc((size_t)(km->ntasks ? km->ntasks : 1), sizeof(*ck->tasks));
            if (!ck->tasks) goto oom;
            for (int32_t t = 0; t < km->ntasks; t++)
                if (!(ck->tasks[t] = lookup(l, km->tasks[t].symbol))) return -1;
            if (km->finalize && !(ck->finalize = lookup(l, km->finalize))) return -1;
            if (km->split_pieces && (!(ck->split_pieces = lookup(l, km->split_pieces)) ||
                                     !(ck->split_join = lookup(l, km->split_join))))
                return -1;
        }
    }
    return 0;
oom:
    snprintf(l->err, l->errlen, "out of memory");
    return -1;
}

rt_cpu_program *rt_cpu_program_new(const rt_cpu_module *mod, int vector_bytes,
                                   rt_cpu_lookup_fn lookup_fn, void *code, const char *refusal,
                                   char *err, size_t errlen) {
    rt_cpu_program *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->mod = mod;
    p->vector_bytes = vector_bytes;
    pthread_mutex_init(&p->blocks_mu, NULL);
    if (refusal && *refusal) {
        snprintf(p->refusal, sizeof p->refusal, "%s", refusal);
        return p;
    }
    lookup_ctx l = {lookup_fn, code, err, errlen};
    if (resolve(p, &l)) {
        rt_cpu_program_free(p);
        return NULL;
    }
    return p;
}

/* ---- launching ----------------------------------------------------------------------------- */

typedef struct run_ctx {
    llvm_task_fn *fns;
    int64_t *counts; /* items of each task */
    int ntasks;
    void *const *bufs;
    const int64_t *syms;
    char *scratch;         /* per thread: scratch + worker * scratch_stride; or shared */
    size_t scratch_stride; /* 0: every worker gets `scratch` */
    int64_t flags;         /* LLVM_TASK_* */
} run_ctx;

/* Runs the items [b, e) of the tasks laid end to end. */
static void run_part(void *vctx, int64_t b, int64_t e, int worker) {
    run_ctx *r = vctx;
    void *scratch = r->scratch ? r->scratch + (size_t)worker * r->scratch_stride : NULL;
    int64_t start = 0;
    for (int t = 0; t < r->ntasks && start < e; t++) {
        int64_t lo = b > start ? b - start : 0;
        int64_t hi = e - start < r->counts[t] ? e - start : r->counts[t];
        if (lo < hi) r->fns[t](r->bufs, r->syms, lo, hi, scratch, r->flags);
        start += r->counts[t];
    }
}

/* The number of items of an extent under syms: |outer| * ceil(|inner| / block). */
static int64_t extent_count(const llvm_extent *e, const int64_t *syms) {
    int64_t o = plan_shape_count(&e->outer, syms);
    int64_t i = plan_shape_count(&e->inner, syms);
    int64_t b = e->block > 0 ? e->block : 1;
    return o * ((i + b - 1) / b);
}

static void *aligned(size_t n) {
    size_t sz = (n + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    return aligned_alloc(CPU_ALIGN, sz ? sz : CPU_ALIGN);
}

/* A column kernel the plan lets split: when the shape asks for pieces (plan_split_pieces),
 * the pieces task over units times pieces, then the join over units, the partials in a
 * scratch of their own; else the kernel's own task. r: the task's run, over `units`. */
static fusec_status run_split(const llvm_kernel_meta *km, const cpu_kernel *ck, run_ctx *r,
                              int64_t units, int max_parts) {
    int64_t len = plan_shape_count(&km->split_len, r->syms);
    int64_t cols = plan_shape_count(&km->split_cols, r->syms), rows;
    int64_t pieces = plan_split_pieces(len, units, LLVM_WANT_UNITS, &rows);
    if (pieces <= 1) {
        rt_pool_run(units, max_parts, run_part, r);
        return FUSEC_OK;
    }
    /* pieces * nreds slots of 8 bytes a column: far inside size_t (the launch checks bound
     * every tensor; pieces <= PLAN_SPLIT_MAX) */
    char *partials = aligned((size_t)cols * (size_t)pieces * (size_t)km->split_nreds * 8);
    if (!partials) return FUSEC_ERR_OUT_OF_MEMORY;
    llvm_task_fn fn = ck->split_pieces;
    int64_t items = units * pieces;
    run_ctx s = {&fn,     &items,   1, r->bufs,
                 r->syms, partials, 0, r->flags | (pieces << LLVM_TASK_PIECES_SHIFT)};
    rt_pool_run(items, max_parts, run_part, &s);
    fn = ck->split_join;
    s.counts = &units;
    rt_pool_run(units, max_parts, run_part, &s);
    free(partials);
    return FUSEC_OK;
}

static fusec_status run_kernel(const llvm_kernel_meta *km, const cpu_kernel *ck, int vector_bytes,
                               int may_stream, void *const *bufs, const int64_t *syms, char *err,
                               size_t errlen) {
    int64_t counts[64];
    llvm_task_fn fns[64];
    int n = km->ntasks;
    if (n > 64) {
        snprintf(err, errlen, "internal error: a kernel of %d parts", n);
        return FUSEC_ERR_INTERNAL;
    }
    int64_t total = 0, elems = plan_shape_count(&km->domain, syms);
    for (int t = 0; t < n; t++) {
        counts[t] = extent_count(&km->tasks[t].extent, syms);
        fns[t] = ck->tasks[t];
        total += counts[t];
        if (t > 0) elems += plan_shape_count(&km->tasks[t].extent.outer, syms);
    }
    run_ctx r = {fns, counts, n, bufs, syms, NULL, 0, 0};
    /* results far larger than the caches are streamed to memory */
    if (may_stream && streams(km, vector_bytes, elems, syms)) r.flags |= LLVM_TASK_STREAM;
    int max_parts = elems < CPU_PARALLEL_MIN_ELEMS ? 1 : 0;
    int threads = max_parts == 1 ? 1 : rt_pool_size();
    void *scratch = NULL;
    if (km->scratch_bytes > 0) {
        /* a row's cached values for each part: workers' indexes are below the parts' count,
         * which is at most the rows', so rows far longer than the caches, which are few, take
         * scratch for few threads (the whole is at most the input's size or twice it) */
        size_t slots = (size_t)(total < threads ? total : threads);
        int64_t row = plan_shape_count(&km->scratch_shape, syms);
        size_t per = (size_t)row * (size_t)km->scratch_bytes *
                     (row <= LLVM_ROW_GROUP_MAX ? LLVM_ROW_GROUP : 1);
        r.scratch_stride =
            (per + CPU_SCRATCH_GAP - 1) / CPU_SCRATCH_GAP * CPU_SCRATCH_GAP + CPU_SCRATCH_GAP;
        if (slots > 0 && r.scratch_stride > SIZE_MAX / slots) goto oom;
        scratch = aligned(r.scratch_stride * slots);
        if (!scratch) goto oom;
        r.scratch = scratch;
    }
    if (ck->finalize) {
        size_t bytes = (size_t)total * (size_t)km->npartials * 8;
        scratch = aligned(bytes);
        if (!scratch) goto oom;
        r.scratch = scratch;
        r.scratch_stride = 0;
    }
    if (ck->split_pieces) {
        fusec_status st = run_split(km, ck, &r, total, max_parts);
        if (st != FUSEC_OK) goto oom;
    } else {
        rt_pool_run(total, max_parts, run_part, &r);
    }
    if (ck->finalize) ck->finalize(bufs, syms, total, 0, scratch, 0);
    free(scratch);
    return FUSEC_OK;
oom:
    snprintf(err, errlen, "out of memory");
    return FUSEC_ERR_OUT_OF_MEMORY;
}

/* A block of at least `bytes` for a launch's intermediates: a kept one when one is large
 * enough (the smallest such), else a new one; *got is its size. */
static char *block_take(rt_cpu_program *p, size_t bytes, size_t *got) {
    pthread_mutex_lock(&p->blocks_mu);
    int best = -1;
    for (int i = 0; i < p->nblocks; i++)
        if (p->block_bytes[i] >= bytes && (best < 0 || p->block_bytes[i] < p->block_bytes[best]))
            best = i;
    char *b = NULL;
    if (best >= 0) {
        b = p->blocks[best];
        *got = p->block_bytes[best];
        p->nblocks--;
        p->blocks[best] = p->blocks[p->nblocks];
        p->block_bytes[best] = p->block_bytes[p->nblocks];
    }
    pthread_mutex_unlock(&p->blocks_mu);
    if (!b) {
        b = aligned(bytes);
        *got = bytes;
    }
    return b;
}

/* Keeps a block for later launches; when all places are taken, the smallest kept block (or
 * this one) is freed. */
static void block_give(rt_cpu_program *p, char *b, size_t bytes) {
    pthread_mutex_lock(&p->blocks_mu);
    if (p->nblocks == CPU_KEPT_BLOCKS) {
        int small = 0;
        for (int i = 1; i < p->nblocks; i++)
            if (p->block_bytes[i] < p->block_bytes[small]) small = i;
        if (p->block_bytes[small] < bytes) {
            char *old = p->blocks[small];
            p->blocks[small] = b;
            p->block_bytes[small] = bytes;
            b = old;
        }
    } else {
        p->blocks[p->nblocks] = b;
        p->block_bytes[p->nblocks++] = bytes;
        b = NULL;
    }
    pthread_mutex_unlock(&p->blocks_mu);
    free(b);
}

/* ---- strided inputs, read into dense temporaries ----------------------------------------- */

typedef struct gather_ctx {
    const ir_tensor *t;
    char *dst;
    int64_t row; /* elements a row (the last dim) */
    size_t es;   /* bytes an element */
} gather_ctx;

/* Rows [b, e) of t (every dim but the last, row-major) into their dense places. */
static void gather_rows(void *vctx, int64_t b, int64_t e, int worker) {
    (void)worker;
    const gather_ctx *g = vctx;
    const ir_tensor *t = g->t;
    int r = t->rank;
    size_t es = g->es;
    int64_t last = r ? t->strides[r - 1] : 0;
    for (int64_t row = b; row < e; row++) {
        int64_t off = 0, k = row;
        for (int d = r - 2; d >= 0; d--) {
            off += (k % t->dims[d]) * t->strides[d];
            k /= t->dims[d];
        }
        const char *src = (const char *)t->data + off * (int64_t)es;
        char *dst = g->dst + row * g->row * (int64_t)es;
        if (last == 1) {
            memcpy(dst, src, (size_t)g->row * es);
            continue;
        }
        for (int64_t j = 0; j < g->row; j++)
            memcpy(dst + j * (int64_t)es, src + j * last * (int64_t)es, es);
    }
}

/* t's elements, dense and row-major, into dst (its element count times its size). */
static void gather(const ir_tensor *t, int32_t elem_bytes, void *dst) {
    int64_t n = 1; /* the launch checked the count */
    for (int32_t d = 0; d < t->rank; d++)
        n *= t->dims[d];
    if (n <= 0) return;
    gather_ctx g = {t, dst, t->rank ? t->dims[t->rank - 1] : 1, (size_t)elem_bytes};
    int64_t rows = n / g.row;
    rt_pool_run(rows, n < CPU_PARALLEL_MIN_ELEMS ? 1 : 0, gather_rows, &g);
}

/* Whether some result is in place over a parameter. Then no kernel streams its results:
 * the lines a result is written to were just read, so there is no read for ownership to
 * save, and a streaming store would evict them (an AdamW step in place at 2^24 elements took
 * 15-20% longer streamed: bench/RESULTS.md, "AdamW step"). */
static int in_place(const rt_cpu_func *f, const ir_tensor *args) {
    for (int32_t o = 0; o < f->noutputs; o++)
        for (int32_t p = 0; p < f->nparams; p++)
            if (args[f->nparams + o].data && args[f->nparams + o].data == args[p].data) return 1;
    return 0;
}

/* Whether result o goes to a temporary: its buffer is a parameter's that the plan reads after
 * writing the result there (plan_func.inplace_hazard). */
static int inplace_temp(const rt_cpu_func *f, const ir_tensor *args, int32_t o) {
    const void *data = args[f->nparams + o].data;
    for (int32_t p = 0; p < f->nparams; p++)
        if (data && args[p].data == data && f->inplace_hazard[o * f->nparams + p]) return 1;
    return 0;
}

/* max and min over an empty axis are errors (as the reference has them), found before
 * anything runs. 0, or -1 with the message. */
static int checks_hold(const rt_cpu_func *f, const int64_t *syms, char *err, size_t errlen) {
    for (int32_t i = 0; i < f->nchecks; i++)
        if (plan_shape_count(&f->checks[i].shape, syms) == 0) {
            snprintf(err, errlen, "%s over an empty axis", f->checks[i].op);
            return -1;
        }
    return 0;
}

fusec_status rt_cpu_run(rt_cpu_program *p, int func, const ir_tensor *args, const int64_t *syms,
                        char *err, size_t errlen) {
    if (p && p->refusal[0]) {
        snprintf(err, errlen, "%s", p->refusal);
        return FUSEC_ERR_UNSUPPORTED;
    }
    if (!p || func < 0 || func >= p->mod->nfuncs) {
        snprintf(err, errlen, "internal error: no function %d", func);
        return FUSEC_ERR_INTERNAL;
    }
    const rt_cpu_func *f = &p->mod->funcs[func];
    if (checks_hold(f, syms, err, errlen)) return FUSEC_ERR_RUNTIME;
    void **bufs = calloc((size_t)f->nbufs + 1, sizeof(void *));
    size_t *offsets = calloc((size_t)f->nbufs + 1, sizeof(size_t));
    if (!bufs || !offsets) {
        free(bufs);
        free(offsets);
        goto oom;
    }
    size_t temp_bytes = 0;
    for (int32_t i = 0; i < f->nbufs; i++) {
        const rt_cpu_buf *b = &f->bufs[i];
        int strided = b->kind == PLAN_BUF_PARAM && args[b->index].strides;
        if (b->kind != PLAN_BUF_TEMP && !strided &&
            !(b->kind == PLAN_BUF_RESULT && inplace_temp(f, args, b->index)))
            continue;
        size_t n = (size_t)plan_shape_count(&b->shape, syms) * (size_t)b->elem_bytes;
        offsets[i] = temp_bytes;
        temp_bytes += (n + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    }
    fusec_status st = FUSEC_OK;
    size_t block_bytes = 0;
    char *block = temp_bytes ? block_take(p, temp_bytes, &block_bytes) : NULL;
    if (temp_bytes && !block) {
        snprintf(err, errlen, "out of memory for %zu bytes of intermediates", temp_bytes);
        st = FUSEC_ERR_OUT_OF_MEMORY;
    }
    for (int32_t i = 0; i < f->nbufs && st == FUSEC_OK; i++) {
        const rt_cpu_buf *b = &f->bufs[i];
        switch (b->kind) {
        case PLAN_BUF_PARAM:
            /* a strided input: read into its dense temporary first */
            bufs[i] = args[b->index].strides ? block + offsets[i] : args[b->index].data;
            if (args[b->index].strides) gather(&args[b->index], b->elem_bytes, bufs[i]);
            break;
        case PLAN_BUF_RESULT:
            bufs[i] = inplace_temp(f, args, b->index) ? block + offsets[i]
                                                      : args[f->nparams + b->index].data;
            break;
        case PLAN_BUF_TEMP: bufs[i] = block + offsets[i]; break;
        }
    }
    int may_stream = !in_place(f, args);
    for (int32_t k = 0; k < f->nkernels && st == FUSEC_OK; k++)
        st = run_kernel(&f->kernels[k], &p->kernels[func][k], p->vector_bytes, may_stream, bufs,
                        syms, err, errlen);
    /* results written to a temporary (in place over a parameter read after they are
     * written), into place now that every read is done */
    for (int32_t i = 0; i < f->nbufs && st == FUSEC_OK; i++) {
        const rt_cpu_buf *b = &f->bufs[i];
        if (b->kind == PLAN_BUF_RESULT && inplace_temp(f, args, b->index))
            memcpy(args[f->nparams + b->index].data, bufs[i],
                   (size_t)plan_shape_count(&b->shape, syms) * (size_t)b->elem_bytes);
    }
    if (block) block_give(p, block, block_bytes);
    free(offsets);
    free(bufs);
    return st;
oom:
    snprintf(err, errlen, "out of memory");
    return FUSEC_ERR_OUT_OF_MEMORY;
}

/* ---- the copy roofline ---------------------------------------------------------------------- */

typedef struct copy_ctx {
    char *dst;
    const char *src;
    size_t bytes;
    int parts;
    int fill;
} copy_ctx;

static void copy_part(void *vctx, int64_t b, int64_t e, int worker) {
    (void)worker;
    copy_ctx *c = vctx;
    /* part i of `parts`: the same bytes every time, so each thread touches its own pages */
    for (int64_t i = b; i < e; i++) {
        int64_t lo, hi;
        rt_pool_part((int64_t)c->bytes, c->parts, (int)i, &lo, &hi);
        if (c->fill)
            memset(c->dst + lo, (int)(i & 0x7f) + 1, (size_t)(hi - lo));
        else
            memcpy(c->dst + lo, c->src + lo, (size_t)(hi - lo));
    }
}

/* `bytes` moved, as fusec bench counts them (driver/api.c does the same for the reference
 * target): bytes / 2 read and bytes / 2 written, by memcpy on every thread of the pool. */
fusec_status rt_cpu_copy_time(size_t moved, int reps, double *median_ms, char *err, size_t errlen) {
    *median_ms = 0;
    if (reps < 1) reps = 1;
    size_t bytes = moved / 2 ? moved / 2 : 1;
    char *src = aligned(bytes), *dst = aligned(bytes);
    double *t = calloc((size_t)reps, sizeof(double));
    if (!src || !dst || !t) {
        free(src);
        free(dst);
        free(t);
        snprintf(err, errlen, "out of memory for a copy of %zu bytes", bytes);
        return FUSEC_ERR_OUT_OF_MEMORY;
    }
    int parts = rt_pool_size();
    copy_ctx fill_src = {src, NULL, bytes, parts, 1}, fill_dst = {dst, NULL, bytes, parts, 1};
    rt_pool_run(parts, 0, copy_part, &fill_src); /* first touch on the thread that copies */
    rt_pool_run(parts, 0, copy_part, &fill_dst);
    copy_ctx c = {dst, src, bytes, parts, 0};
    rt_pool_run(parts, 0, copy_part, &c); /* warm-up */
    for (int i = 0; i < reps; i++) {
        double t0 = rt_now_ms();
        rt_pool_run(parts, 0, copy_part, &c);
        t[i] = rt_now_ms() - t0;
    }
    *median_ms = rt_median(t, reps);
    free(src);
    free(dst);
    free(t);
    return FUSEC_OK;
}
