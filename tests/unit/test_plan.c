/* tests/unit/test_plan.c: the kernel plan (plan/plan.h) both backends follow. Facts it must
 * state for small programs the pipeline partitions (layouts, collapsed axes, accesses, levels,
 * rounding, launch checks, buffers), the same for the CPU's and CUDA's options but for the
 * split; plan_split_pieces against its definition; and plan_verify rejecting each kind of
 * corrupted plan with its own message, so that a check that is dropped or moved shows here. */
#include "plan/plan.h"
#include "frontend/frontend.h"
#include "passes/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fused_util.h"

static const char *const PROGRAM = "fn softmax(x: f32[R, C]) -> f32[R, C] {\n"
                                   "    let e = exp(x - max(x, axis=1));\n"
                                   "    return e / sum(e, axis=1);\n"
                                   "}\n"
                                   "fn colsum(x: f32[R, C]) -> f32[1, C] {\n"
                                   "    return sum(x, axis=0);\n"
                                   "}\n"
                                   "fn rowsum1(x: f32[1, N]) -> f32[1, 1] {\n"
                                   "    return sum(x * 2.0, axis=1);\n"
                                   "}\n"
                                   "fn inter(x: f32[A, B, C]) -> f32[1, B, 1] {\n"
                                   "    return sum(x, axis=(0, 2));\n"
                                   "}\n"
                                   "fn bias(x: f32[B, C], b: f32[C]) -> f32[B, C] {\n"
                                   "    return relu(x + b);\n"
                                   "}\n"
                                   "fn halves(x: f16[R, C]) -> (f16[R, C], f32[R, 1]) {\n"
                                   "    let y = x * x;\n"
                                   "    return y, sum(f32(y), axis=1);\n"
                                   "}\n"
                                   "fn twice(x: f32[N]) -> (f32[N], f32[N]) {\n"
                                   "    let y = x + 1.0;\n"
                                   "    return y, y;\n"
                                   "}\n"
                                   "fn early(x: f32[R, C]) -> (f32[R, C], f32[R, C]) {\n"
                                   "    return x * 2.0, x - max(x, axis=1);\n"
                                   "}\n";

static ir_arena arena;
static ir_module *module;

/* The plan of the named function, partitioned by the pipeline (fused unless nofuse). */
static plan_func *plan_of(const char *name, int nofuse, const plan_options *opt) {
    const ir_func *f = module ? ir_module_find(module, name) : NULL;
    CHECK_MSG(f != NULL, "no function %s", name);
    if (!f) return NULL;
    ir_func *g = ir_func_clone(&arena, f);
    char err[512];
    pass_options o = {0};
    o.no_fuse = nofuse;
    if (pass_run_pipeline(g, &o, err, sizeof err) != PASS_OK) {
        CHECK_MSG(0, "%s: %s", name, err);
        return NULL;
    }
    plan_module *pm = NULL;
    int rc = plan_module_build(&g, 1, opt, &arena, &pm, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", name, err);
    return rc ? NULL : &pm->funcs[0];
}

static const plan_options cpu = {1, 64}, cuda = {1, 2048}, none = {0, 2048};

static void test_layouts(void) {
    const plan_options *opts[] = {&cpu, &cuda, &none};
    for (int i = 0; i < 3; i++) {
        plan_func *p = plan_of("softmax", 0, opts[i]);
        if (!p) continue;
        CHECK(p->nkernels == 1 && p->kernels[0].nparts == 1);
        const plan_kernel *k = &p->kernels[0].parts[0];
        CHECK(k->layout == PLAN_ROW && k->naxes == 2 && k->reduced == 2);
        CHECK(k->nsweeps == 2 && k->final_sweep && k->nreds == 2);
        CHECK(!k->split.splittable);
        CHECK(p->nchecks == 1 && p->checks[0].op == IR_OP_MAX);

        p = plan_of("colsum", 0, opts[i]);
        if (!p) continue;
        k = &p->kernels[0].parts[0];
        CHECK(k->layout == PLAN_COLUMN && k->reduced == 1 && k->nsweeps == 1);
        /* the split is the backend's to ask for, and then only for one level */
        CHECK(k->split.splittable == (opts[i] != &none));
        CHECK(p->nscratch == (opts[i] != &none));
        if (p->nscratch) CHECK(p->scratch[0].count == PLAN_SPLIT_MAX);

        p = plan_of("rowsum1", 0, opts[i]);
        if (!p) continue;
        k = &p->kernels[0].parts[0];
        CHECK(k->layout == PLAN_FULL && k->naxes == 1 && k->reduced == 1);

        /* reduced, kept, reduced: a row (the last axis is reduced), three axes */
        p = plan_of("inter", 0, opts[i]);
        if (!p) continue;
        k = &p->kernels[0].parts[0];
        CHECK(k->layout == PLAN_ROW && k->naxes == 3 && k->reduced == 5);
        CHECK(k->nacc == 2 && k->acc[1].store && k->acc[1].present == 2);
    }
}

static void test_accesses(void) {
    plan_func *p = plan_of("bias", 0, &cpu);
    if (!p) return;
    const plan_kernel *k = &p->kernels[0].parts[0];
    CHECK(k->layout == PLAN_ELEMENTWISE && k->naxes == 2 && k->nreds == 0);
    CHECK(k->nacc == 3);
    /* loads in the order the body first reads them: the bias (its broadcast comes first) */
    CHECK(k->acc[0].kind == PLAN_BROADCAST && k->acc[0].present == 2 && k->acc[0].buf == 1);
    CHECK(k->acc[1].kind == PLAN_DENSE && k->acc[1].present == 3 && !k->acc[1].store);
    CHECK(k->acc[2].store && k->acc[2].buf == 2 && p->bufs[2].kind == PLAN_BUF_RESULT);

    /* a stored f16 value read again by the kernel is read rounded */
    p = plan_of("halves", 0, &cpu);
    if (!p) return;
    k = &p->kernels[0].parts[0];
    int rounded = 0;
    for (int32_t i = 0; i < k->nacc; i++)
        if (k->acc[i].store && p->func->nodes[k->acc[i].node].dtype == IR_F16)
            rounded = k->round_kept[k->acc[i].node];
    CHECK(rounded);

    /* one value returned twice: two result buffers, both stored, the first its home */
    p = plan_of("twice", 0, &cpu);
    if (!p) return;
    CHECK(p->nbufs == 3 && p->bufs[1].node == p->bufs[2].node);
    CHECK(plan_home_buf(p, p->bufs[1].node) == 1);
    k = &p->kernels[0].parts[0];
    CHECK(k->nacc == 3 && k->acc[1].store && k->acc[2].store);

    /* unfused: the temporaries are buffers, in node order */
    p = plan_of("softmax", 1, &cpu);
    if (!p) return;
    CHECK(p->ntemps > 0 && p->nbufs == 2 + p->ntemps);
    for (int32_t i = 2; i < p->nbufs; i++)
        CHECK(p->bufs[i].kind == PLAN_BUF_TEMP && p->bufs[i].index == i - 2);
}

/* plan_split_pieces against its definition, over many sizes. */
static void test_split_pieces(void) {
    int64_t rows;
    CHECK(plan_split_pieces(16384, 1024, 512, &rows) == 1 && rows == 16384); /* units enough */
    CHECK(plan_split_pieces(16384, 128, 512, &rows) == 4 && rows == 4096);
    CHECK(plan_split_pieces(100, 1, 512, &rows) == 1 && rows == 100); /* rows too few */
    CHECK(plan_split_pieces(1031, 1, 64, &rows) == 4 && rows == 258); /* the last: 257 */
    for (int64_t len = 1; len < 70000; len = len * 3 + 1)
        for (int64_t units = 1; units < 2000; units = units * 5 + 2) {
            int64_t n = plan_split_pieces(len, units, 512, &rows);
            CHECK_MSG(n >= 1 && n <= PLAN_SPLIT_MAX, "len %lld units %lld: %lld pieces",
                      (long long)len, (long long)units, (long long)n);
            /* the pieces cover the rows exactly, the last one not empty */
            CHECK_MSG(rows >= 1 && (n - 1) * rows < len && n * rows >= len,
                      "len %lld units %lld: %lld of %lld", (long long)len, (long long)units,
                      (long long)n, (long long)rows);
            if (n > 1) CHECK(rows >= PLAN_SPLIT_MIN_ROWS / 2 && units < 512);
            if (n > 1) CHECK(rows == (len + n - 1) / n); /* the rows the kernels derive */
        }
}

/* The verifier rejects p with exactly the message want, then p is rebuilt by the caller. */
static void expect_at(const plan_func *pf, const char *want, int line) {
    plan_module m = {1, (plan_func *)pf};
    char err[512] = "";
    int rc = plan_verify(&m, err, sizeof err);
    CHECK_MSG(rc == -1, "line %d: accepted, want \"%s\"", line, want);
    CHECK_MSG(!strcmp(err, want), "line %d: got \"%s\", want \"%s\"", line, err, want);
}
#define EXPECT(p, want) expect_at((p), (want), __LINE__)

/* The checks that no launch reads memory it writes (CUDA's loads are non-coherent): a kernel
 * made to store a buffer it loads, and early's result x * 2, after which x is read again (in a
 * later sweep of the same kernel, or by a later kernel --no-fuse), left without its
 * temporary. */
static void test_verifier_memory(void) {
    plan_func *p = plan_of("softmax", 1, &cpu);
    if (!p) return;
    int32_t k = -1, buf = -1;
    for (int32_t ki = 0; ki < p->nkernels && k < 0; ki++) {
        plan_kernel *q = &p->kernels[ki].parts[0];
        plan_access *load = NULL, *store = NULL;
        for (int32_t i = 0; i < q->nacc; i++) {
            plan_access *x = &q->acc[i];
            if (!x->store && x->kind == PLAN_DENSE && p->bufs[x->buf].kind == PLAN_BUF_TEMP)
                load = x;
            if (x->store && x->kind == PLAN_DENSE) store = x;
        }
        if (!load || !store) continue;
        store->node = load->node; /* the store now writes the loaded value's buffer */
        store->buf = buf = load->buf;
        k = ki;
    }
    CHECK_MSG(k >= 0, "softmax --no-fuse: no kernel loads a dense temporary and stores");
    char want[256];
    snprintf(want, sizeof want,
             "plan of 'softmax': kernel %d loads and stores buffer %d, which its loads "
             "(non-coherent, unordered with its stores) do not allow",
             (int)k, (int)buf);
    if (k >= 0) EXPECT(p, want);

    for (int nofuse = 0; nofuse < 2; nofuse++) {
        p = plan_of("early", nofuse, &cpu);
        if (!p) return;
        CHECK_MSG(p->inplace_hazard[0], "early%s: x * 2 over x needs a temporary",
                  nofuse ? " --no-fuse" : "");
        p->inplace_hazard[0] = 0;
        /* fused: x * 2's own kernel, whose next sweep reads x; --no-fuse: the first kernel
         * after x * 2's that loads x (buffer 0) */
        int32_t reader = p->func->nodes[p->func->nodes[p->func->outputs[0].node].args[0]].kernel;
        for (reader += nofuse; nofuse && reader < p->nkernels; reader++) {
            const plan_kernel *q = &p->kernels[reader].parts[0];
            int loads = 0;
            for (int32_t i = 0; i < q->nacc; i++)
                loads |= !q->acc[i].store && q->acc[i].buf == 0;
            if (loads) break;
        }
        snprintf(want, sizeof want,
                 "plan of 'early': result 0 may be written over parameter 0 before its last "
                 "read (kernel %d), without a temporary",
                 (int)reader);
        EXPECT(p, want);
    }
}

static void test_verifier(void) {
    plan_func *p = plan_of("softmax", 0, &cpu);
    if (!p) return;
    plan_kernel *k = &p->kernels[0].parts[0];
    k->stage[k->reds[1]] = 1;
    EXPECT(p, "plan of 'softmax', kernel 0: %5 at stage 1, not 2");

    p = plan_of("softmax", 0, &cpu);
    k = &p->kernels[0].parts[0];
    k->layout = PLAN_COLUMN;
    EXPECT(p, "plan of 'softmax', kernel 0: a column layout whose last axis is reduced");

    p = plan_of("softmax", 0, &cpu);
    k = &p->kernels[0].parts[0];
    k->layout = PLAN_FULL;
    EXPECT(p, "plan of 'softmax', kernel 0: full, but not one level reducing every axis");

    p = plan_of("softmax", 0, &cpu);
    p->nchecks = 0;
    EXPECT(p, "plan of 'softmax': max %1 has no launch check");

    p = plan_of("bias", 0, &cpu);
    k = &p->kernels[0].parts[0];
    k->acc[0].present = 3;
    EXPECT(p, "plan of 'bias', kernel 0: access 0's presence along axis 0 is not its shape's");

    p = plan_of("bias", 0, &cpu);
    k = &p->kernels[0].parts[0];
    k->acc[0].kind = PLAN_DENSE;
    EXPECT(p, "plan of 'bias', kernel 0: access 0: dense or broadcast mislabelled");

    /* merged axes the bias varies along only in part */
    p = plan_of("bias", 0, &cpu);
    k = &p->kernels[0].parts[0];
    k->naxes = 1;
    k->axis_dims[0] = 3;
    k->acc[0].present = k->acc[1].present = k->acc[2].present = 1;
    EXPECT(p, "plan of 'bias', kernel 0: access 0 varies along part of collapsed axis 0");

    p = plan_of("bias", 0, &cpu);
    k = &p->kernels[0].parts[0];
    k->acc[1].buf = 2;
    EXPECT(p, "plan of 'bias', kernel 0: access 1: buffer 2 does not hold %0");

    p = plan_of("bias", 0, &cpu);
    k = &p->kernels[0].parts[0];
    k->load_acc[k->acc[0].node] = -1;
    EXPECT(p, "plan of 'bias', kernel 0: %2 reads %1, which is not loaded");

    p = plan_of("inter", 0, &cpu);
    k = &p->kernels[0].parts[0];
    k->axis_dims[0] = 3; /* reduced and kept merged */
    k->axis_dims[1] = 0;
    EXPECT(p, "plan of 'inter', kernel 0: collapsed axis 0 mixes reduced and kept axes");

    p = plan_of("inter", 0, &cpu);
    k = &p->kernels[0].parts[0];
    k->axis_dims[2] = 1;
    k->axis_dims[0] = 4;
    EXPECT(p, "plan of 'inter', kernel 0: collapsed axes out of order at 1");

    p = plan_of("colsum", 0, &cpu);
    k = &p->kernels[0].parts[0];
    p->scratch[0].count = 1;
    EXPECT(p, "plan of 'colsum', kernel 0: a split it cannot make");

    p = plan_of("twice", 0, &cpu);
    p->bufs[2].index = 5;
    EXPECT(p, "plan of 'twice': buffer 2 does not hold what its kind says");

    test_verifier_memory();
}

int main(void) {
    ir_arena_init(&arena);
    module = checked_module(&arena, "test_plan", PROGRAM);
    if (!module) return check_exit("test_plan");
    test_layouts();
    test_accesses();
    test_split_pieces();
    test_verifier();
    ir_arena_free(&arena);
    return check_exit("test_plan");
}
