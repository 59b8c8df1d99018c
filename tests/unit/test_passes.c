/* tests/unit/test_passes.c: the pass pipeline. Each clean-up pass's effect on hand-built
 * IR; what the split programs of tests/programs/fusion_*.fuse store, and --no-fuse's one
 * kernel an operation; ir_verify on every partition; the verifier rejecting broken
 * partitions; --dump-after and the report; and every program's partitioned result against
 * the unpartitioned function in the reference interpreter, on random inputs at several odd
 * shapes (f32 to a tight tolerance, f16/bf16 allowing the rounding of stored
 * intermediates, integers exactly). The kernel counts and kinds of every program are in
 * its `# expect` lines, checked by tests/cli_py/test_fusion_expect.py. */
#include "frontend/frontend.h"
#include "passes/passes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fused_util.h"

/* ---- helpers --------------------------------------------------------------------------- */

/* A copy of f run through the pipeline; NULL (and a failure) when it fails. */
static ir_func *partition(ir_arena *a, const ir_func *f, int no_fuse) {
    ir_func *g = ir_func_clone(a, f);
    char err[512];
    pass_options o = {0};
    o.no_fuse = no_fuse;
    int rc = pass_run_pipeline(g, &o, err, sizeof err);
    CHECK_MSG(rc == PASS_OK, "%s%s: %s", f->name, no_fuse ? " (--no-fuse)" : "", err);
    if (rc != PASS_OK) return NULL;
    CHECK_MSG(ir_verify(g, err, sizeof err) == 0, "%s: %s", f->name, err);
    return g;
}

/* Kernels as `fusec --emit=ir | grep -c '^kernel '` counts them. */
static int printed_kernels(ir_arena *a, const ir_func *f) {
    ir_buf b;
    ir_buf_init(&b, a);
    ir_print_func(&b, f);
    int n = 0;
    for (const char *p = b.data; p && *p;) {
        if (!strncmp(p, "kernel ", 7)) n++;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;

static double rnd(void) { /* in [-2, 2), never 0 */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    double v = (double)(rng >> 11) / 9007199254740992.0 * 4.0 - 2.0;
    return v == 0 ? 0.25 : v;
}

static size_t elems(const ir_tensor *t) {
    size_t n = 1;
    for (int32_t i = 0; i < t->rank; i++)
        n *= (size_t)t->dims[i];
    return n;
}

static void alloc_tensor(ir_tensor *t, ir_dtype dt, const ir_shape *s, const int64_t *syms) {
    t->dtype = dt;
    t->rank = s->rank;
    ir_shape_concrete(s, syms, t->dims);
    t->data = calloc(elems(t) + 1, (size_t)ir_dtypes[dt].bytes);
}

static void fill_random(ir_tensor *t) {
    size_t n = elems(t);
    for (size_t i = 0; i < n; i++) {
        double v = rnd();
        switch (t->dtype) {
        case IR_BOOL: ((uint8_t *)t->data)[i] = v > 0; break;
        case IR_I32: {
            int32_t iv = (int32_t)(v * 20);
            ((int32_t *)t->data)[i] = iv ? iv : 3;
            break;
        }
        case IR_I64: ((int64_t *)t->data)[i] = (int64_t)(v * 20) ? (int64_t)(v * 20) : 3; break;
        case IR_F16: ((uint16_t *)t->data)[i] = ir_f16_from_double(v); break;
        case IR_BF16: ((uint16_t *)t->data)[i] = ir_bf16_from_double(v); break;
        case IR_F32: ((float *)t->data)[i] = (float)v; break;
        case IR_F64: ((double *)t->data)[i] = v; break;
        default: break;
        }
    }
}

static double get(const ir_tensor *t, size_t i) {
    switch (t->dtype) {
    case IR_BOOL: return ((uint8_t *)t->data)[i];
    case IR_I32: return ((int32_t *)t->data)[i];
    case IR_I64: return (double)((int64_t *)t->data)[i];
    case IR_F16: return ir_f16_to_double(((uint16_t *)t->data)[i]);
    case IR_BF16: return ir_bf16_to_double(((uint16_t *)t->data)[i]);
    case IR_F32: return ((float *)t->data)[i];
    case IR_F64: return ((double *)t->data)[i];
    default: return 0;
    }
}

/* got agrees with want: exactly for integers and bool; f32/f64 to 1e-5 relative; f16 and
 * bf16 to a few units in the last place (`ulps` of them), since the intermediates a
 * partition stores are rounded to 16 bits (SPEC §1): under --no-fuse every one is. */
static int agrees(ir_dtype dt, double got, double want, double ulps) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    double tol;
    switch (dt) {
    case IR_F16: tol = ulps * (0x1p-11 * fabs(want) + 0x1p-14); break;
    case IR_BF16: tol = ulps * (0x1p-8 * fabs(want) + 0x1p-10); break;
    case IR_F32: tol = 1e-5 * fabs(want) + 1e-6; break;
    case IR_F64: tol = ulps ? 1e-12 * fabs(want) + 1e-12 : 0; break;
    default: tol = 0; break;
    }
    return fabs(got - want) <= tol;
}

/* Runs ref and part on the same random inputs with the symbols bound to `syms`; checks
 * that every output agrees. */
static void compare_run(const ir_func *ref, const ir_func *part, const int64_t *syms, double ulps,
                        const char *what) {
    ir_tensor in[16], o1[16], o2[16];
    memset(in, 0, sizeof in);
    memset(o1, 0, sizeof o1);
    memset(o2, 0, sizeof o2);
    if (ref->nparams > 16 || ref->noutputs > 16) return;
    for (int32_t p = 0; p < ref->nparams; p++) {
        alloc_tensor(&in[p], ref->params[p].dtype, &ref->params[p].shape, syms);
        fill_random(&in[p]);
    }
    for (int32_t o = 0; o < ref->noutputs; o++) {
        alloc_tensor(&o1[o], ref->outputs[o].dtype, &ref->outputs[o].shape, syms);
        alloc_tensor(&o2[o], ref->outputs[o].dtype, &ref->outputs[o].shape, syms);
    }
    char err[512];
    int r1 = ir_interp_run(ref, in, o1, err, sizeof err);
    CHECK_MSG(r1 == 0, "%s: reference: %s", what, err);
    int r2 = ir_interp_run(part, in, o2, err, sizeof err);
    CHECK_MSG(r2 == 0, "%s: partitioned: %s", what, err);
    for (int32_t o = 0; o < ref->noutputs && !r1 && !r2; o++) {
        size_t n = elems(&o1[o]);
        int bad = 0;
        for (size_t i = 0; i < n && bad < 3; i++) {
            double want = get(&o1[o], i), got = get(&o2[o], i);
            if (!agrees(o1[o].dtype, got, want, ulps)) {
                fprintf(stderr, "%s: output %d element %zu: got %.9g, want %.9g\n", what, (int)o, i,
                        got, want);
                bad++;
            }
        }
        if (bad) failures++;
    }
    for (int i = 0; i < 16; i++) {
        free(in[i].data);
        free(o1[i].data);
        free(o2[i].data);
    }
}

/* Symbol bindings: symbol j of a function takes shapes[i][j]. Covers N = 1, 7, 33, 1000 and
 * rows [3, 5], [1, 1], [7, 129]. */
static const int64_t shapes[][4] = {
    {1, 1, 1, 1}, {7, 5, 3, 2}, {3, 5, 7, 1}, {33, 7, 129, 3}, {7, 129, 33, 5}, {1000, 3, 2, 7},
};

static void compare_all(const ir_func *ref, const ir_func *part, int no_fuse) {
    char what[256];
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        snprintf(what, sizeof what, "%s%s at shape set %zu", ref->name,
                 no_fuse ? " (--no-fuse)" : "", i);
        compare_run(ref, part, shapes[i], no_fuse ? 32 : 4, what);
    }
}

/* ---- agreement of the example programs ------------------------------------------------- */

/* Every function of path, fused and --no-fuse, verified and run against the unpartitioned
 * function. (How many kernels of which kinds: the file's `# expect` lines.) */
static void test_program(const char *path) {
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = checked_file(&a, path);
    for (int32_t i = 0; m && i < m->nfuncs; i++) {
        ir_func *f = m->funcs[i];
        ir_func *fused = partition(&a, f, 0);
        ir_func *unfused = partition(&a, f, 1);
        if (!fused || !unfused) continue;
        int nk = fused->partition->nkernels;
        CHECK_MSG(printed_kernels(&a, fused) == nk, "%s: printed kernel lines", f->name);
        CHECK_MSG(unfused->partition->nkernels >= nk, "%s: --no-fuse has fewer kernels", f->name);
        compare_all(f, fused, 0);
        compare_all(f, unfused, 1);
    }
    ir_arena_free(&a);
}

static void test_programs(void) {
    test_program("tests/programs/fusion_models.fuse");
    test_program("tests/programs/fusion_split.fuse");
    test_program("tests/programs/fusion_misc.fuse");
    test_program("tests/programs/fusion_types.fuse");
    test_program("tests/programs/fusion_edge.fuse");
}

static int count_ew(const ir_func *f) {
    int n = 0;
    for (ir_ref r = 0; r < f->nnodes; r++) {
        ir_class k = ir_ops[f->nodes[r].op].cls;
        if (k == IR_CLASS_EW) n++;
    }
    return n;
}

/* --no-fuse gelu: one kernel per element-wise op; the split cases store what they must. */
static void test_nofuse_and_splits(void) {
    char *text = read_text("tests/programs/fusion_models.fuse");
    CHECK(text != NULL);
    if (!text) return;
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = checked_module(&a, "fusion_models.fuse", text);
    free(text);
    ir_func *gelu = m ? ir_module_find(m, "gelu") : NULL;
    CHECK(gelu != NULL);
    if (gelu) {
        ir_func *u = partition(&a, gelu, 1);
        CHECK_MSG(u && u->partition->nkernels == count_ew(gelu),
                  "--no-fuse gelu: %d kernels for %d element-wise ops",
                  u ? (int)u->partition->nkernels : -1, count_ew(gelu));
        CHECK(count_ew(gelu) == 9);
        for (int32_t k = 0; u && k < u->partition->nkernels; k++)
            CHECK(u->partition->kernels[k].nbody == 1);
        ir_func *fz = partition(&a, gelu, 0);
        /* fused: reads x once, writes the result once */
        CHECK(fz && fz->partition->kernels[0].ninputs == 1 &&
              fz->partition->kernels[0].noutputs == 1);
    }
    ir_func *sm = m ? ir_module_find(m, "softmax") : NULL;
    if (sm) {
        ir_func *fz = partition(&a, sm, 0);
        /* one row read, one result written: nothing else stored */
        CHECK(fz && fz->partition->kernels[0].ninputs == 1 &&
              fz->partition->kernels[0].noutputs == 1);
        int stored = 0;
        for (ir_ref r = 0; fz && r < fz->nnodes; r++)
            if (fz->nodes[r].flags & IR_NODE_STORED) stored++;
        CHECK(stored == 1);
    }
    ir_arena_free(&a);

    /* the split cases: what is stored */
    text = read_text("tests/programs/fusion_split.fuse");
    CHECK(text != NULL);
    if (!text) return;
    ir_arena_init(&a);
    m = checked_module(&a, "fusion_split.fuse", text);
    free(text);
    ir_func *two = m ? ir_module_find(m, "two_axes") : NULL;
    if (two) {
        ir_func *fz = partition(&a, two, 0);
        /* exp recomputed in both reductions: each reads x, nothing but the sums stored */
        for (int32_t k = 0; fz && k < fz->partition->nkernels; k++) {
            const ir_kernel *kn = &fz->partition->kernels[k];
            CHECK(kn->ninputs == 1 && fz->nodes[kn->inputs[0]].op == IR_OP_INPUT);
            CHECK(kn->noutputs == 1 && ir_ops[fz->nodes[kn->outputs[0]].op].cls == IR_CLASS_REDUCE);
        }
    }
    ir_func *wide = m ? ir_module_find(m, "wide_two_axes") : NULL;
    if (wide) {
        ir_func *fz = partition(&a, wide, 0);
        /* a + b + c + d is stored by the first reduction (recomputing it would read four
         * inputs instead of one) and read by the second */
        CHECK(fz && fz->partition->nkernels == 2 && fz->partition->kernels[0].noutputs == 2 &&
              fz->partition->kernels[1].ninputs == 1 &&
              fz->nodes[fz->partition->kernels[1].inputs[0]].op == IR_OP_ADD);
    }
    ir_func *rs = m ? ir_module_find(m, "rowsum_scale") : NULL;
    if (rs) {
        ir_func *fz = partition(&a, rs, 0);
        /* the row sum is stored by the reduction and read by the [R, D] kernel */
        CHECK(fz && fz->partition->kernels[0].kind == IR_KERNEL_ROW_REDUCTION &&
              fz->partition->kernels[1].kind == IR_KERNEL_POINTWISE);
        CHECK(fz && fz->partition->kernels[1].ninputs == 2);
    }
    ir_arena_free(&a);
}

/* ---- clean-up passes on hand-built IR -------------------------------------------------- */

static ir_shape shape1(ir_func *f, const char *sym) {
    ir_shape s = {0};
    s.rank = 1;
    s.dims[0] = ir_dim_sym(ir_func_symbol(f, sym));
    return s;
}

static int count_op(const ir_func *f, ir_op op) {
    int n = 0;
    for (ir_ref r = 0; r < f->nnodes; r++)
        if (f->nodes[r].op == op) n++;
    return n;
}

static int run_one(ir_func *f, int (*pass)(ir_func *, pass_ctx *)) {
    char err[256] = "";
    pass_options o = {0};
    pass_ctx c = {&o, err, sizeof err, NULL};
    int rc = pass(f, &c);
    CHECK_MSG(rc == 0, "%s", err);
    CHECK_MSG(ir_verify(f, err, sizeof err) == 0, "%s", err);
    return rc;
}

static void test_fold(void) {
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = ir_module_new(&a);
    ir_func *f = ir_func_new(m, "fold");
    ir_shape s0 = {0};
    ir_ref c1 = ir_const_float(f, IR_F32, 1.5), c2 = ir_const_float(f, IR_F32, 2.25);
    ir_ref args[3] = {c1, c2, 0};
    ir_ref add = ir_ew(f, IR_OP_ADD, IR_F32, &s0, 2, args);
    /* f16 arithmetic stays unrounded; a cast to f16 rounds */
    ir_ref h1 = ir_const_float(f, IR_F16, 0.1), h2 = ir_const_float(f, IR_F16, 0.2);
    ir_ref hargs[2] = {h1, h2};
    ir_ref hadd = ir_ew(f, IR_OP_ADD, IR_F16, &s0, 2, hargs);
    ir_ref hcast = ir_cast(f, ir_cast(f, hadd, IR_F32), IR_F16);
    /* integers: division by zero gives 0, INT_MIN / -1 wraps, % -1 is 0 */
    ir_ref i1 = ir_const_int(f, IR_I32, 7), i0 = ir_const_int(f, IR_I32, 0);
    ir_ref imin = ir_const_int(f, IR_I32, INT32_MIN), im1 = ir_const_int(f, IR_I32, -1);
    ir_ref d0[2] = {i1, i0}, dm[2] = {imin, im1};
    ir_ref div0 = ir_ew(f, IR_OP_DIV, IR_I32, &s0, 2, d0);
    ir_ref divm = ir_ew(f, IR_OP_DIV, IR_I32, &s0, 2, dm);
    ir_ref modm = ir_ew(f, IR_OP_MOD, IR_I32, &s0, 2, dm);
    ir_ref mul[2] = {imin, imin};
    ir_ref wrap = ir_ew(f, IR_OP_MUL, IR_I32, &s0, 2, mul);
    ir_ref cmp[2] = {c1, c2};
    ir_ref lt = ir_ew(f, IR_OP_LT, IR_BOOL, &s0, 2, cmp);
    ir_ref outs[] = {add, hadd, hcast, div0, divm, modm, wrap, lt};
    for (int i = 0; i < 8; i++)
        ir_add_output(f, outs[i], f->nodes[outs[i]].dtype, &s0);
    run_one(f, pass_fold);
    run_one(f, pass_dce);
    CHECK(count_op(f, IR_OP_ADD) == 0 && count_op(f, IR_OP_DIV) == 0 &&
          count_op(f, IR_OP_CAST) == 0);
    const ir_node *v[8];
    for (int i = 0; i < 8; i++)
        v[i] = &f->nodes[f->nodes[f->outputs[i].node].args[0]];
    CHECK(v[0]->op == IR_OP_CONST && v[0]->value.f == 3.75);
    CHECK(v[1]->op == IR_OP_CONST && v[1]->value.f == 0.1 + 0.2);
    CHECK(v[2]->op == IR_OP_CONST && v[2]->value.f == ir_round_to_dtype(0.1 + 0.2, IR_F16));
    CHECK(v[3]->value.i == 0);
    CHECK(v[4]->value.i == INT32_MIN);
    CHECK(v[5]->value.i == 0);
    CHECK(v[6]->value.i == 0); /* INT_MIN * INT_MIN wraps to 0 in 32 bits */
    CHECK(v[7]->dtype == IR_BOOL && v[7]->value.i == 1);
    ir_arena_free(&a);
}

static void test_simplify(void) {
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = ir_module_new(&a);
    ir_func *f = ir_func_new(m, "simp");
    ir_shape s = shape1(f, "N");
    ir_ref x = ir_add_input(f, "x", IR_F32, &s);
    ir_ref one = ir_const_float(f, IR_F32, 1.0), pz = ir_const_float(f, IR_F32, 0.0);
    ir_ref nz = ir_const_float(f, IR_F32, -0.0);
    ir_ref t1[2] = {x, one}, t2[2] = {x, nz}, t3[2] = {x, pz}, t4[2] = {pz, x}, t5[2] = {nz, x};
    ir_ref mul1 = ir_ew(f, IR_OP_MUL, IR_F32, &s, 2, t1); /* -> x */
    ir_ref addn = ir_ew(f, IR_OP_ADD, IR_F32, &s, 2, t2); /* -> x */
    ir_ref addp = ir_ew(f, IR_OP_ADD, IR_F32, &s, 2, t3); /* stays: -0 + +0 = +0 */
    ir_ref subp = ir_ew(f, IR_OP_SUB, IR_F32, &s, 2, t3); /* -> x */
    ir_ref rsub = ir_ew(f, IR_OP_SUB, IR_F32, &s, 2, t4); /* stays: 0 - 0 = +0, -0 = -0 */
    ir_ref nsub = ir_ew(f, IR_OP_SUB, IR_F32, &s, 2, t5); /* -> neg x */
    ir_ref neg = ir_ew(f, IR_OP_NEG, IR_F32, &s, 1, &x);
    ir_ref negneg = ir_ew(f, IR_OP_NEG, IR_F32, &s, 1, &neg); /* -> x */
    ir_ref outs[] = {mul1, addn, addp, subp, rsub, nsub, negneg};
    for (int i = 0; i < 7; i++)
        ir_add_output(f, outs[i], IR_F32, &s);
    run_one(f, pass_simplify);
    run_one(f, pass_dce);
    ir_ref xin = f->params[0].node;
    ir_ref got[7];
    for (int i = 0; i < 7; i++)
        got[i] = f->nodes[f->outputs[i].node].args[0];
    CHECK(got[0] == xin);
    CHECK(got[1] == xin);
    CHECK(got[2] != xin && f->nodes[got[2]].op == IR_OP_ADD);
    CHECK(got[3] == xin);
    CHECK(got[4] != xin && f->nodes[got[4]].op == IR_OP_SUB);
    CHECK(f->nodes[got[5]].op == IR_OP_NEG && f->nodes[got[5]].args[0] == xin);
    CHECK(got[6] == xin);

    /* cast chains: i32 -> f64 -> f32 becomes i32 -> f32; f32 -> f16 -> f32 stays */
    ir_func *g = ir_func_new(m, "casts");
    ir_shape sg = shape1(g, "N");
    ir_ref xi = ir_add_input(g, "i", IR_I32, &sg);
    ir_ref xf = ir_add_input(g, "x", IR_F32, &sg);
    ir_ref c1 = ir_cast(g, ir_cast(g, xi, IR_F64), IR_F32);
    ir_ref c2 = ir_cast(g, ir_cast(g, xf, IR_F16), IR_F32);
    ir_add_output(g, c1, IR_F32, &sg);
    ir_add_output(g, c2, IR_F32, &sg);
    run_one(g, pass_simplify);
    run_one(g, pass_dce);
    ir_ref o1 = g->nodes[g->outputs[0].node].args[0];
    ir_ref o2 = g->nodes[g->outputs[1].node].args[0];
    CHECK(g->nodes[o1].op == IR_OP_CAST && g->nodes[o1].args[0] == g->params[0].node);
    CHECK(g->nodes[o2].op == IR_OP_CAST && g->nodes[g->nodes[o2].args[0]].op == IR_OP_CAST);
    ir_arena_free(&a);
}

static void test_cse_dce(void) {
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = ir_module_new(&a);
    ir_func *f = ir_func_new(m, "cse");
    ir_shape s = shape1(f, "N");
    ir_ref x = ir_add_input(f, "x", IR_F32, &s);
    ir_add_input(f, "unused", IR_F32, &s);
    ir_ref e1 = ir_ew(f, IR_OP_EXP, IR_F32, &s, 1, &x);
    ir_ref e2 = ir_ew(f, IR_OP_EXP, IR_F32, &s, 1, &x);
    ir_ref pz = ir_const_float(f, IR_F32, 0.0), nz = ir_const_float(f, IR_F32, -0.0);
    ir_ref a1[2] = {e1, pz}, a2[2] = {e2, nz};
    ir_ref s1 = ir_ew(f, IR_OP_ADD, IR_F32, &s, 2, a1);
    ir_ref s2 = ir_ew(f, IR_OP_ADD, IR_F32, &s, 2, a2); /* -0.0 is another constant */
    ir_ref dead = ir_ew(f, IR_OP_LOG, IR_F32, &s, 1, &x);
    (void)dead;
    ir_ref mm[2] = {s1, s2};
    ir_ref out = ir_ew(f, IR_OP_MUL, IR_F32, &s, 2, mm);
    ir_add_output(f, out, IR_F32, &s);
    run_one(f, pass_cse);
    CHECK(count_op(f, IR_OP_EXP) == 1);
    CHECK(count_op(f, IR_OP_ADD) == 2);
    CHECK(count_op(f, IR_OP_LOG) == 1);
    run_one(f, pass_dce);
    CHECK(count_op(f, IR_OP_LOG) == 0);
    CHECK(count_op(f, IR_OP_INPUT) == 2 && f->nparams == 2);
    ir_arena_free(&a);
}

/* ---- the verifier rejects broken partitions -------------------------------------------- */

static void test_verify_partition(void) {
    char *text = read_text("tests/programs/fusion_models.fuse");
    if (!text) return;
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = checked_module(&a, "fusion_models.fuse", text);
    free(text);
    ir_func *sm = m ? ir_module_find(m, "softmax") : NULL;
    char err[256];
    if (sm) {
        ir_func *u = partition(&a, sm, 1);
        ir_func *bad;
        ir_ref r;
        if (u) {
            /* a stored value not flagged */
            bad = ir_func_clone(&a, u);
            r = bad->partition->kernels[0].outputs[0];
            bad->nodes[r].flags &= ~(uint32_t)IR_NODE_STORED;
            CHECK(ir_verify(bad, err, sizeof err) != 0);
            /* kernels out of dependency order */
            bad = ir_func_clone(&a, u);
            ir_kernel t = bad->partition->kernels[0];
            bad->partition->kernels[0] = bad->partition->kernels[1];
            bad->partition->kernels[1] = t;
            CHECK(ir_verify(bad, err, sizeof err) != 0);
            /* a node in no kernel */
            bad = ir_func_clone(&a, u);
            bad->partition->kernels[0].nbody = 0;
            CHECK(ir_verify(bad, err, sizeof err) != 0);
        }
        ir_func *fz = partition(&a, sm, 0);
        if (fz) {
            /* a reduction kernel called pointwise */
            bad = ir_func_clone(&a, fz);
            bad->partition->kernels[0].kind = IR_KERNEL_POINTWISE;
            CHECK(ir_verify(bad, err, sizeof err) != 0);
            /* other reduce axes */
            bad = ir_func_clone(&a, fz);
            bad->partition->kernels[0].reduce_axes = 1;
            CHECK(ir_verify(bad, err, sizeof err) != 0);
            /* the clone itself is fine; an input listed twice is not */
            bad = ir_func_clone(&a, fz);
            CHECK(ir_verify(bad, err, sizeof err) == 0);
            ir_kernel *k0 = &bad->partition->kernels[0];
            ir_ref *two = ir_arena_calloc(&a, 2, sizeof(ir_ref));
            two[0] = two[1] = k0->inputs[0];
            k0->inputs = two;
            k0->ninputs = 2;
            CHECK(ir_verify(bad, err, sizeof err) != 0);
            /* a body node that reads a value of another kernel it does not list */
            ir_func *u2 = partition(&a, sm, 1);
            if (u2) {
                bad = ir_func_clone(&a, u2);
                bad->partition->kernels[1].ninputs = 0;
                CHECK(ir_verify(bad, err, sizeof err) != 0);
            }
        }
    }
    ir_arena_free(&a);
}

/* ---- --dump-after, unknown names, the report ------------------------------------------- */

static void test_pipeline_options(void) {
    char *text = read_text("tests/programs/fusion_models.fuse");
    if (!text) return;
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = checked_module(&a, "fusion_models.fuse", text);
    free(text);
    ir_func *gelu = m ? ir_module_find(m, "gelu") : NULL;
    if (!gelu) {
        ir_arena_free(&a);
        return;
    }
    char err[512];
    ir_buf dump, report;
    ir_buf_init(&dump, &a);
    ir_buf_init(&report, &a);
    pass_options o = {0};
    o.dump_after = "fuse_pointwise";
    o.dump = &dump;
    o.report = &report;
    o.verbose = 1;
    ir_func *g = ir_func_clone(&a, gelu);
    CHECK(pass_run_pipeline(g, &o, err, sizeof err) == PASS_OK);
    CHECK(strstr(dump.data, "kernel 0 pointwise") != NULL);
    CHECK_MSG(strstr(report.data, "fusion gelu: kernel 0 pointwise domain=[N]: 1 input, 1 output, "
                                  "8*N bytes\n") != NULL,
              "%s", report.data);
    CHECK_MSG(strstr(report.data, "fusion gelu: 1 kernel moves 8*N bytes; unfused 9 kernels "
                                  "move 88*N bytes (11.00x)\n") != NULL,
              "%s", report.data);
    CHECK(pass_partition_bytes(g, NULL) == 8);

    o.dump_after = "no_such_pass";
    g = ir_func_clone(&a, gelu);
    CHECK(pass_run_pipeline(g, &o, err, sizeof err) == PASS_ERR_USAGE);
    CHECK(strstr(err, "no_such_pass") && strstr(err, "fuse_reduction"));
    o.dump_after = "nofuse";
    g = ir_func_clone(&a, gelu);
    CHECK(pass_run_pipeline(g, &o, err, sizeof err) == PASS_ERR_USAGE);

    /* concrete sizes */
    int64_t n = 1000;
    o.dump_after = NULL;
    o.sym_values = &n;
    report.len = 0;
    report.data[0] = 0;
    g = ir_func_clone(&a, gelu);
    CHECK(pass_run_pipeline(g, &o, err, sizeof err) == PASS_OK);
    CHECK_MSG(strstr(report.data, "1 kernel moves 8000 bytes") != NULL, "%s", report.data);
    ir_arena_free(&a);
}

/* ---- random programs --------------------------------------------------------------------- */

static uint32_t pick(uint32_t n) {
    rnd();
    return (uint32_t)(rng >> 33) % n;
}

/* A random f64 function over R and C: element-wise ops (with broadcasting between [R, C],
 * [C], [R, 1], [1, C] and scalars), reductions over axis 0, axis 1 or both, and one to three
 * results. The fusion passes must partition it validly and compute the same: in f64 a
 * stored value is not rounded, so the partitioned program gives the very same numbers, and
 * any difference is a wrong partition, not rounding. */
static ir_func *random_func(ir_module *m, int id) {
    char name[32];
    snprintf(name, sizeof name, "rand%d", id);
    ir_func *f = ir_func_new(m, name);
    int32_t R = ir_func_symbol(f, "R"), C = ir_func_symbol(f, "C"), B = ir_func_symbol(f, "B");
    ir_shape big = {2, {ir_dim_sym(R), ir_dim_sym(C)}};
    ir_shape c1 = {1, {ir_dim_sym(C)}};
    ir_shape r1 = {2, {ir_dim_sym(R), ir_dim_lit(1)}};
    if (pick(3) == 0) { /* rank 3: [B, R, C] with [R, C], [C] and [B, 1, C] beside it */
        big = (ir_shape){3, {ir_dim_sym(B), ir_dim_sym(R), ir_dim_sym(C)}};
        r1 = (ir_shape){3, {ir_dim_sym(B), ir_dim_lit(1), ir_dim_sym(C)}};
    }
    ir_ref pool[64];
    int np = 0;
    pool[np++] = ir_add_input(f, "x", IR_F64, &big);
    if (pick(2)) pool[np++] = ir_add_input(f, "y", IR_F64, &big);
    pool[np++] = ir_add_input(f, "b", IR_F64, &c1);
    if (pick(2)) pool[np++] = ir_add_input(f, "z", IR_F64, &r1);
    static const ir_op un[] = {IR_OP_EXP,     IR_OP_TANH, IR_OP_NEG, IR_OP_ABS,
                               IR_OP_SIGMOID, IR_OP_RELU, IR_OP_SIN};
    static const ir_op bin[] = {IR_OP_ADD, IR_OP_MUL, IR_OP_SUB, IR_OP_MAXIMUM, IR_OP_MINIMUM};
    static const ir_op red[] = {IR_OP_SUM, IR_OP_MAX, IR_OP_MEAN, IR_OP_MIN};
    int steps = 4 + (int)pick(14);
    for (int i = 0; i < steps && np < 60; i++) {
        /* later values more often, so chains form */
        ir_ref a = pool[np - 1 - (int)pick((uint32_t)(np < 4 ? np : 4))];
        if (pick(3) == 0) a = pool[pick((uint32_t)np)];
        ir_shape as = f->nodes[a].shape;
        uint32_t what = pick(12);
        ir_ref v;
        if (what < 3) {
            ir_op op = un[pick(sizeof un / sizeof *un)];
            v = ir_ew(f, op, IR_F64, &as, 1, &a);
            if (op == IR_OP_EXP) { /* keep values bounded: tanh(exp(.)) */
                ir_ref t = v;
                v = ir_ew(f, IR_OP_TANH, IR_F64, &as, 1, &t);
            }
        } else if (what < 7) {
            ir_ref b = pool[pick((uint32_t)np)];
            ir_shape out;
            if (ir_shape_broadcast(&as, &f->nodes[b].shape, &out) >= 0) continue;
            ir_ref args[2] = {ir_broadcast(f, a, &out), ir_broadcast(f, b, &out)};
            if (pick(4) == 0) args[1] = ir_const_float(f, IR_F64, 0.5 + pick(3));
            v = ir_ew(f, bin[pick(sizeof bin / sizeof *bin)], IR_F64, &out, 2, args);
        } else if (what < 9) {
            if (as.rank == 0) continue;
            uint32_t all = (1u << as.rank) - 1;
            uint32_t axes = 1u + pick(all);
            v = ir_reduce(f, red[pick(sizeof red / sizeof *red)], a, axes, IR_F64);
        } else if (what < 10) {
            /* a comparison and a select */
            ir_ref b = pool[pick((uint32_t)np)];
            ir_shape out;
            if (ir_shape_broadcast(&as, &f->nodes[b].shape, &out) >= 0) continue;
            ir_ref args[2] = {ir_broadcast(f, a, &out), ir_broadcast(f, b, &out)};
            ir_ref cmp = ir_ew(f, IR_OP_LT, IR_BOOL, &out, 2, args);
            ir_ref sel[3] = {cmp, args[1], args[0]};
            v = ir_ew(f, IR_OP_WHERE, IR_F64, &out, 3, sel);
        } else if (what < 11) {
            /* through f32 (rounds) or i32 (truncates) and back */
            ir_dtype mid = pick(2) ? IR_F32 : IR_I32;
            ir_ref t = ir_cast(f, a, mid);
            if (mid == IR_I32) {
                ir_ref k = ir_const_int(f, IR_I32, 3);
                ir_ref args[2] = {t, k};
                t = ir_ew(f, IR_OP_MOD, IR_I32, &as, 2, args);
            }
            v = ir_cast(f, t, IR_F64);
        } else {
            ir_ref k = ir_const_float(f, IR_F64, 0.25 * (1 + pick(5)));
            ir_ref args[2] = {a, k};
            v = ir_ew(f, IR_OP_MUL, IR_F64, &as, 2, args);
        }
        pool[np++] = v;
    }
    int nout = 1 + (int)pick(3);
    for (int i = 0; i < nout; i++) {
        ir_ref v = pool[np - 1 - (int)pick((uint32_t)(np < 5 ? np : 5))];
        if (i == 0) v = pool[np - 1];
        ir_shape s = f->nodes[v].shape;
        ir_add_output(f, v, IR_F64, &s);
    }
    return f;
}

static void test_random_programs(int n) {
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = ir_module_new(&a);
    int fused_total = 0, unfused_total = 0;
    for (int i = 0; i < n; i++) {
        ir_func *f = random_func(m, i);
        char err[512];
        CHECK_MSG(ir_verify(f, err, sizeof err) == 0, "generator: %s", err);
        ir_func *fz = partition(&a, f, 0);
        ir_func *uf = partition(&a, f, 1);
        if (!fz || !uf) {
            ir_buf b;
            ir_buf_init(&b, &a);
            ir_print_func(&b, f);
            fprintf(stderr, "%s\n", b.data);
            continue;
        }
        fused_total += fz->partition->nkernels;
        unfused_total += uf->partition->nkernels;
        CHECK(fz->partition->nkernels <= uf->partition->nkernels);
        int before = failures;
        for (size_t s = 0; s < 3; s++) {
            char what[64];
            snprintf(what, sizeof what, "%s at shape set %zu", f->name, s + 1);
            compare_run(f, fz, shapes[s + 1], 0, what);
            compare_run(f, uf, shapes[s + 1], 0, what);
        }
        if (failures != before) {
            ir_buf b;
            ir_buf_init(&b, &a);
            ir_print_func(&b, f);
            ir_print_func(&b, fz);
            fprintf(stderr, "%s\n", b.data);
        }
        if ((i & 31) == 31) { /* keep the arena small */
            ir_arena_free(&a);
            ir_arena_init(&a);
            m = ir_module_new(&a);
        }
    }
    if (getenv("FUSEC_TEST_VERBOSE"))
        printf("random programs: %d kernels fused, %d unfused\n", fused_total, unfused_total);
    ir_arena_free(&a);
}

int main(void) {
    test_fold();
    test_simplify();
    test_cse_dce();
    test_programs();
    test_nofuse_and_splits();
    test_verify_partition();
    test_pipeline_options();
    test_random_programs(getenv("FUSEC_TEST_RANDOM") ? atoi(getenv("FUSEC_TEST_RANDOM")) : 300);
    return check_exit("test_passes");
}
