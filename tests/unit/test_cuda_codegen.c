/* tests/unit/test_cuda_codegen.c: the CUDA code generator without a compiler or a GPU: the op
 * table covers ops.def; every example and test program generates (fused and --no-fuse), the
 * same IR giving byte-identical source, with launch metadata that holds together; and
 * rt_cuda_resolve's grids, variants, argument values and checks for known shapes. */
#include "codegen/cuda/cuda.h"
#include "codegen/cuda/cuda_internal.h"
#include "runtime/cuda/cuda_resolve.h"
#include "frontend/frontend.h"
#include "passes/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fused_util.h"

static const cuda_module *generate(ir_arena *a, const char *path, int no_fuse) {
    int n = 0;
    ir_func **fs = fused_funcs(a, path, no_fuse, &n);
    if (!fs) return NULL;
    cuda_module *mod = NULL;
    char err[512];
    int rc = cuda_generate(a, fs, n, &mod, err, sizeof err);
    CHECK_MSG(rc == 0, "%s%s: %s", path, no_fuse ? " --no-fuse" : "", err);
    return rc == 0 ? mod : NULL;
}

static const cuda_func *find_func(const cuda_module *m, const char *name) {
    for (int32_t i = 0; m && i < m->nfuncs; i++)
        if (strcmp(m->funcs[i].name, name) == 0) return &m->funcs[i];
    CHECK_MSG(0, "no function %s", name);
    return NULL;
}

/* The metadata refers to what exists: arguments in range, variants ending unconditional. */
static void check_metadata(const char *path, const cuda_module *m) {
    for (int32_t fi = 0; fi < m->nfuncs; fi++) {
        const cuda_func *f = &m->funcs[fi];
        for (int32_t li = 0; li < f->nlaunches; li++) {
            const cuda_launch *l = &f->launches[li];
            CHECK_MSG(l->nvariants >= 1 && l->variants[l->nvariants - 1].nconds == 0,
                      "%s %s launch %d: the last variant must have no conditions", path, f->name,
                      (int)li);
            for (int32_t v = 0; v < l->nvariants; v++) {
                const char *name = l->variants[v].name;
                int known = 0;
                for (int32_t i = 0; i < m->nnames; i++)
                    known |= strcmp(m->names[i], name) == 0;
                CHECK_MSG(known && strstr(m->source, name), "%s: %s is not in the source", path,
                          name);
                CHECK(l->variants[v].nparts >= 1);
            }
            for (int32_t j = 0; j < l->nargs; j++) {
                const cuda_arg *a = &l->args[j];
                switch (a->kind) {
                case CUDA_ARG_PARAM: CHECK(a->index >= 0 && a->index < f->nparams); break;
                case CUDA_ARG_RESULT: CHECK(a->index >= 0 && a->index < f->nresults); break;
                case CUDA_ARG_SCRATCH: CHECK(a->index >= 0 && a->index < f->nscratch); break;
                case CUDA_ARG_GRID_OF: CHECK(a->index >= 0 && a->index < li); break;
                default: break;
                }
                CHECK(a->name && a->name[0]);
            }
        }
    }
}

/* Two generations of every program agree, and their metadata is consistent. */
static void check_program(const char *path, int example, void *ctx) {
    (void)example, (void)ctx;
    for (int no_fuse = 0; no_fuse < 2; no_fuse++) {
        ir_arena a1, a2;
        ir_arena_init(&a1);
        ir_arena_init(&a2);
        const cuda_module *m1 = generate(&a1, path, no_fuse);
        const cuda_module *m2 = generate(&a2, path, no_fuse);
        if (m1 && m2) {
            CHECK_MSG(m1->source_len == m2->source_len &&
                          memcmp(m1->source, m2->source, m1->source_len) == 0,
                      "%s: two generations differ", path);
            CHECK(strlen(m1->source) == m1->source_len);
            check_metadata(path, m1);
        }
        ir_arena_free(&a1);
        ir_arena_free(&a2);
    }
}

static void test_programs(void) {
    CHECK(for_each_program(check_program, NULL) >= 10);
}

/* ---- rt_cuda_resolve on known shapes
 * -------------------------------------------------------------
 */

typedef struct resolved {
    rt_cuda_config c[8];
    int64_t v[128];
    char err[256];
    int rc;
} resolved;

static void resolve(const cuda_func *f, const int64_t *syms, const uint64_t *params,
                    const uint64_t *results, resolved *r) {
    memset(r, 0, sizeof *r);
    CHECK(f->nlaunches <= 8 && rt_cuda_func_nargs(f) <= 128);
    r->rc = rt_cuda_resolve(f, syms, params, results, 132, r->c, r->v, r->err, sizeof r->err);
}

/* The value of the first argument of launch l named `name`. */
static int64_t arg_value(const cuda_func *f, const resolved *r, int32_t l, const char *name) {
    int32_t at = 0;
    for (int32_t i = 0; i < l; i++)
        at += f->launches[i].nargs;
    for (int32_t j = 0; j < f->launches[l].nargs; j++)
        if (strcmp(f->launches[l].args[j].name, name) == 0) return r->v[at + j];
    CHECK_MSG(0, "%s: no argument %s", f->name, name);
    return -1;
}

static void test_resolve(void) {
    ir_arena a;
    ir_arena_init(&a);
    uint64_t aligned[4] = {0x10000, 0x20000, 0x30000, 0x40000};
    uint64_t odd[4] = {0x10004, 0x20000, 0x30000, 0x40000};
    resolved r;

    /* gelu: one chunked variant, a grid-stride loop over as many blocks as the data needs */
    const cuda_module *m = generate(&a, "examples/gelu.fuse", 0);
    const cuda_func *f = find_func(m, "gelu");
    if (f) {
        CHECK(f->nlaunches == 1 && f->launches[0].nvariants == 1 && f->nscratch == 0);
        int64_t n = (int64_t)1 << 28;
        resolve(f, &n, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[0].block == 256 && r.c[0].grid == (1 << 28) / (256 * 4) &&
              !r.c[0].skip);
        CHECK(arg_value(f, &r, 0, "N_") == n);
        n = 1000; /* ceil(1000 / (256 * 4)) */
        resolve(f, &n, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[0].grid == 1);
        n = 0;
        resolve(f, &n, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[0].skip);
        n = ((int64_t)1 << 33) + 3; /* past 2^31: still one variant, chunked */
        resolve(f, &n, aligned, aligned, &r);
        CHECK(r.rc == 0 && strcmp(r.c[0].name, "fusec_gelu_k0") == 0);
    }

    /* bias_relu: broadcasts tracked, so 32- and 64-bit variants */
    m = generate(&a, "examples/bias_relu.fuse", 0);
    f = find_func(m, "bias_relu");
    if (f) {
        int64_t s[2] = {1 << 16, 1 << 16}; /* B * C = 2^32 */
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && strcmp(r.c[0].name, "fusec_bias_relu_k0_i64") == 0);
        s[0] = 4096;
        s[1] = 4096;
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && strcmp(r.c[0].name, "fusec_bias_relu_k0") == 0);
        CHECK(r.c[0].grid == (1 << 24) / (256 * 8)); /* f16: vectors of 8, one a thread */
    }

    /* softmax sums in the plan's order: one variant, 8 threads (32 / 4 lanes) a block of 1024
     * elements of a row, up to a block of 1024 threads a row */
    m = generate(&a, "examples/softmax.fuse", 0);
    f = find_func(m, "softmax");
    if (f) {
        CHECK(f->nlaunches == 1 && f->launches[0].nvariants == 1);
        int64_t s[2] = {65536, 4096}; /* R, C: 4 blocks a row, 32 threads */
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && strcmp(r.c[0].name, "fusec_softmax_k0") == 0);
        CHECK(r.c[0].row_threads == 32 && r.c[0].block == 256);
        CHECK(arg_value(f, &r, 0, "tpr_") == 32);
        CHECK(r.c[0].grid == 132 * 8);
        resolve(f, s, odd, aligned, &r); /* x not 16-byte aligned: the same kernel */
        CHECK(r.rc == 0 && strcmp(r.c[0].name, "fusec_softmax_k0") == 0);
        s[1] = 16384;
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[0].row_threads == 128 && r.c[0].block == 256 && !r.c[0].smem_bytes);
        s[1] = 100000; /* 98 blocks: a block of 1024 threads */
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[0].row_threads == 1024 && r.c[0].block == 1024);
        s[0] = 10;
        s[1] = 7; /* short rows: one group of 8 threads a row, 32 rows a block */
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[0].row_threads == 8 && r.c[0].block == 256 && r.c[0].grid == 1);
        s[1] = 0; /* max over an empty axis */
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc != 0 && strstr(r.err, "max over an empty axis"));
    }

    /* stats: a full reduction in the plan's order, partials (a block of 1024 elements to each
     * group of 8 threads: 64 blocks of 128 threads for 2^20) then the final combine */
    m = generate(&a, "tests/programs/fusion_models.fuse", 0);
    f = find_func(m, "stats");
    if (f) {
        CHECK(f->nlaunches == 2 && f->nscratch == 1);
        int64_t n = 1 << 20;
        resolve(f, &n, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[0].grid == 64 && r.c[0].block == 128 && r.c[1].grid == 1 &&
              !r.c[1].skip);
        CHECK(arg_value(f, &r, 1, "nparts_") == 64);
        n = (int64_t)1 << 28; /* capped at the partials' room */
        resolve(f, &n, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[0].grid == CG_MAX_PARTIALS);
        n = 0; /* max over an empty axis is an error, as in the reference */
        resolve(f, &n, aligned, aligned, &r);
        CHECK(r.rc != 0 && strstr(r.err, "max over an empty axis"));
    }
    f = find_func(m, "layernorm");
    if (f) {
        int64_t s[2] = {1024, 4096};
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && strcmp(r.c[0].name, "fusec_layernorm_k0") == 0);
    }

    /* a combined launch: the parts' grids add up, each part's first block is an argument */
    m = generate(&a, "tests/programs/fusion_misc.fuse", 0);
    f = find_func(m, "two_domains");
    if (f) {
        int64_t s[2] = {1 << 22, 4096}; /* N, M */
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[0].grid == (1 << 22) / (256 * 4) + 4);
        CHECK(arg_value(f, &r, 0, "part1_") == (1 << 22) / (256 * 4));
    }
    f = find_func(m, "softmax_cols");
    if (f) {
        int64_t s[2] = {1000, 100}; /* R, C: 4 tiles of 32 columns */
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[0].grid == 4 && r.c[0].block == 256);
    }
    ir_arena_free(&a);
}

/* A column reduction the plan lets split: pieces and their join when the columns are few and
 * long, the plain column kernel and a skipped join otherwise; the partials sized for the
 * pieces the launch has, none when it has none. */
static void test_resolve_split(void) {
    ir_arena a;
    ir_arena_init(&a);
    uint64_t aligned[4] = {0x10000, 0x20000, 0x30000, 0x40000};
    resolved r;
    const cuda_module *m = generate(&a, "tests/programs/cpu_dtypes.fuse", 0);
    const cuda_func *f = find_func(m, "reduce_cols"); /* sum, mean, max, min over axis 0 */
    if (f) {
        CHECK(f->nlaunches == 2 && f->nscratch == 1 && f->scratch[0].split_launch == 0);
        int64_t s[2] = {16384, 32}; /* R, C: one tile, 512 wanted: 64 pieces of 256 rows */
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && strcmp(r.c[0].name, "fusec_reduce_cols_k0_pieces") == 0);
        CHECK(r.c[0].pieces == 64 && r.c[0].grid == 64 && arg_value(f, &r, 0, "pieces_") == 64);
        CHECK(!r.c[1].skip && strcmp(r.c[1].name, "fusec_reduce_cols_k0_join") == 0);
        CHECK(arg_value(f, &r, 1, "pieces_") == 64);
        CHECK(rt_cuda_scratch_bytes(f, 0, s, r.c) == 32 * 4 * 8 * 64);
        s[0] = 1031; /* 4 pieces of 258 rows, the last of 257 */
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[0].pieces == 4 && r.c[0].grid == 4);
        s[0] = 300; /* too few rows for two pieces: the column kernel, no join */
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && strcmp(r.c[0].name, "fusec_reduce_cols_k0") == 0 && r.c[1].skip);
        CHECK(rt_cuda_scratch_bytes(f, 0, s, r.c) == 0);
        s[0] = 2; /* ten million columns: no split, and no partials to allocate */
        s[1] = 10000000;
        resolve(f, s, aligned, aligned, &r);
        CHECK(r.rc == 0 && r.c[1].skip && rt_cuda_scratch_bytes(f, 0, s, r.c) == 0);
    }
    ir_arena_free(&a);
}

int main(void) {
    const char *missing = cugen_op_table_check();
    CHECK_MSG(missing == NULL, "the CUDA op table lacks %s", missing ? missing : "");
    test_programs();
    test_resolve();
    test_resolve_split();
    return check_exit("test_cuda_codegen");
}
