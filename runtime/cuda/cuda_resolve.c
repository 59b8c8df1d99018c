/* runtime/cuda/cuda_resolve.c: a launch description of the CUDA generator (codegen/cuda/cuda.h)
 * made concrete for a call's symbolic dims and device: which variant, grid and block each
 * launch takes, the values of its int64 arguments, its scratch, and the function's checks
 * (see cuda_resolve.h). Part of libfusec_rt: it reads the description, not the IR. */
#include "runtime/cuda/cuda_resolve.h"

#include <stdio.h>
#include <string.h>

int64_t rt_cuda_size_eval(const cuda_size *s, const int64_t *syms) {
    int64_t v = s->coeff;
    for (int32_t i = 0; i < s->nsyms; i++) {
        int64_t d = syms[s->syms[i]];
        if (d < 0 || __builtin_mul_overflow(v, d, &v)) return -1;
    }
    return v;
}

int64_t rt_cuda_scratch_bytes(const cuda_func *f, int32_t k, const int64_t *syms,
                              const rt_cuda_config *configs) {
    const cuda_scratch *sc = &f->scratch[k];
    int64_t b = rt_cuda_size_eval(&sc->bytes, syms);
    if (sc->split_launch < 0 || b < 0) return b;
    int64_t pieces = configs[sc->split_launch].pieces;
    if (pieces <= 1) return 0;
    return __builtin_mul_overflow(b, pieces, &b) ? -1 : b;
}

int32_t rt_cuda_func_nargs(const cuda_func *f) {
    int32_t n = 0;
    for (int32_t i = 0; i < f->nlaunches; i++)
        n += f->launches[i].nargs;
    return n;
}

static int64_t ceil_div(int64_t a, int64_t b) {
    return a / b + (a % b != 0);
}

/* Blocks of one part, or -1 on overflow; *t: threads per row (ROWS); pieces: the launch's. */
static int64_t part_blocks(const cuda_grid *g, const int64_t *syms, int sm_count, int64_t pieces,
                           int64_t *t, int32_t *block) {
    int64_t work = rt_cuda_size_eval(&g->work, syms);
    int64_t blocks = 0;
    *block = g->block;
    *t = 0;
    if (work < 0 && g->kind != CUDA_GRID_ONE) return -1;
    switch (g->kind) {
    case CUDA_GRID_STRIDE:
        blocks =
            work ? ceil_div(work, (int64_t)g->block * (g->per_thread > 0 ? g->per_thread : 1)) : 0;
        break;
    case CUDA_GRID_ROWS: {
        int64_t len = rt_cuda_size_eval(&g->row_len, syms);
        if (len < 0) return -1;
        int64_t want = ceil_div(len, g->per_thread > 0 ? g->per_thread : 1), tt = 1;
        while ((tt < want || tt < g->row_min_t) && tt < 1024)
            tt *= 2;
        *t = tt;
        if (tt > *block) *block = (int32_t)tt;
        blocks = work ? ceil_div(work, *block / tt) : 0;
        break;
    }
    case CUDA_GRID_TILES: blocks = work ? ceil_div(work, 32) : 0; break;
    case CUDA_GRID_PIECES: blocks = work ? ceil_div(work, 32) * pieces : 0; break;
    case CUDA_GRID_ONE: return 1;
    case CUDA_GRID_NONE: return 0;
    }
    if (g->blocks_per_sm > 0 && sm_count > 0 && blocks > (int64_t)sm_count * g->blocks_per_sm)
        blocks = (int64_t)sm_count * g->blocks_per_sm;
    if (g->max_blocks > 0 && blocks > g->max_blocks) blocks = g->max_blocks;
    if (blocks > INT32_MAX) blocks = INT32_MAX;
    return blocks;
}

/* Whether condition c of a variant of launch l holds (pieces: the launch's split). */
static int cond_holds(const cuda_launch *l, const cuda_cond *c, const int64_t *syms,
                      const uint64_t *params, const uint64_t *results, int64_t pieces) {
    if (c->kind == CUDA_COND_SPLIT) return pieces > 1;
    if (c->kind == CUDA_COND_ALIGNED) {
        if (c->arg < 0 || c->arg >= l->nargs || c->value <= 0) return 0;
        const cuda_arg *a = &l->args[c->arg];
        uint64_t p;
        if (a->kind == CUDA_ARG_SCRATCH) return 1; /* 256-byte aligned by the launcher */
        if (a->kind == CUDA_ARG_PARAM && params)
            p = params[a->index];
        else if (a->kind == CUDA_ARG_RESULT && results)
            p = results[a->index];
        else
            return 0;
        return p % (uint64_t)c->value == 0;
    }
    int64_t x = rt_cuda_size_eval(&c->size, syms);
    if (x < 0) return 0;
    if (c->kind == CUDA_COND_AT_MOST) return x <= c->value;
    if (c->kind == CUDA_COND_AT_LEAST) return x >= c->value;
    return c->value > 0 && x % c->value == 0;
}

/* The pieces a split launch cuts its reduced elements into (1 for any other launch), from
 * the plan's rule: the same for every device, so results do not depend on the GPU. */
static int64_t launch_pieces(const cuda_launch *l, const int64_t *syms) {
    if (!l->split) return 1;
    int64_t len = rt_cuda_size_eval(&l->split_len, syms),
            cols = rt_cuda_size_eval(&l->split_cols, syms);
    int64_t rows;
    return len < 0 || cols < 0
               ? 1
               : plan_split_pieces(len, (cols + 31) / 32, CUDA_PLAN_WANT_UNITS, &rows);
}

int rt_cuda_resolve(const cuda_func *f, const int64_t *syms, const uint64_t *params,
                    const uint64_t *results, int sm_count, rt_cuda_config *configs, int64_t *values,
                    char *err, size_t errlen) {
    for (int32_t i = 0; i < f->nchecks; i++)
        if (rt_cuda_size_eval(&f->checks[i].extent, syms) == 0) {
            snprintf(err, errlen, "%s", f->checks[i].message);
            return -1;
        }
    int32_t at = 0;
    for (int32_t li = 0; li < f->nlaunches; li++) {
        const cuda_launch *l = &f->launches[li];
        rt_cuda_config *c = &configs[li];
        memset(c, 0, sizeof *c);
        c->pieces = launch_pieces(l, syms);
        int32_t v = 0;
        for (; v < l->nvariants; v++) {
            const cuda_variant *cv = &l->variants[v];
            int ok = 1;
            for (int32_t j = 0; j < cv->nconds && ok; j++)
                ok = cond_holds(l, &cv->conds[j], syms, params, results, c->pieces);
            if (ok) break;
        }
        if (v == l->nvariants) {
            snprintf(err, errlen, "launch %d of '%s': no variant fits these sizes", (int)li,
                     f->name);
            return -1;
        }
        const cuda_variant *cv = &l->variants[v];
        c->variant = v;
        c->name = cv->name;
        int64_t grid = 0, starts[64];
        int32_t block = 0;
        for (int32_t p = 0; p < cv->nparts; p++) {
            int64_t t = 0;
            int32_t b = 0;
            int64_t n = part_blocks(&cv->parts[p], syms, sm_count, c->pieces, &t, &b);
            if (n < 0) {
                snprintf(err, errlen, "launch %d of '%s': a size overflows", (int)li, f->name);
                return -1;
            }
            if (p < 64) starts[p] = grid;
            grid += n;
            block = b;
            if (t) c->row_threads = t;
        }
        if (grid > INT32_MAX) {
            snprintf(err, errlen, "launch %d of '%s': too many blocks", (int)li, f->name);
            return -1;
        }
        c->grid = (uint32_t)grid;
        c->block = (uint32_t)block;
        c->smem_bytes = (uint32_t)cv->smem_bytes;
        c->skip = grid == 0;
        for (int32_t j = 0; j < l->nargs; j++) {
            const cuda_arg *a = &l->args[j];
            int64_t x = 0;
            switch (a->kind) {
            case CUDA_ARG_SIZE:
                x = rt_cuda_size_eval(&a->size, syms);
                if (x < 0) {
                    snprintf(err, errlen, "launch %d of '%s': size %s overflows", (int)li, f->name,
                             a->name);
                    return -1;
                }
                break;
            case CUDA_ARG_ROW_THREADS: x = c->row_threads; break;
            case CUDA_ARG_PART_BLOCK: x = a->index < 64 ? starts[a->index] : 0; break;
            case CUDA_ARG_GRID_OF: x = a->index < li ? configs[a->index].grid : 0; break;
            case CUDA_ARG_PIECES: x = c->pieces; break;
            default: x = 0; break;
            }
            values[at + j] = x;
        }
        at += l->nargs;
    }
    return 0;
}
