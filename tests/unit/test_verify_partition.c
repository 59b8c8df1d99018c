/* tests/unit/test_verify_partition.c: ir_verify_partition rejects each kind of broken
 * partition with its own message, exact text: valid partitions of small programs (and a few
 * hand-built ones, for what the passes never make), each corrupted in one way. Every check
 * of ir/verify_partition.c is made to fire at least once, so that a change that moves a
 * check (or drops one) shows here as a changed or missing message. */
#include "frontend/frontend.h"
#include "passes/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fused_util.h"

/* Partitioned (fused) by the pipeline:
 *   two      kernel 0 row-reduction [R, C] reduce=(1): %3 exp, %4 add, %5 sum (stored);
 *            kernel 1 pointwise [R, D], inputs %1 %5: %6 broadcast, %7 mul (stored); %8 output
 *   softmax  kernel 0 row-reduction [R, C] reduce=(1): %1 max, %2 broadcast, ... %7 (stored)
 *   scalars  kernel 0 combined, parts (0, 4): %4 .. %7 over [A, B, C], %8 over []
 *   gelu     kernel 0 pointwise [N]: %5 .. %13 (stored) */
static const char *const PROGRAM =
    "fn two(x: f32[R, C], y: f32[R, D]) -> f32[R, D] {\n"
    "    return y * sum(exp(x) + 1.0, axis=1);\n"
    "}\n"
    "fn softmax(x: f32[R, C]) -> f32[R, C] {\n"
    "    let e = exp(x - max(x, axis=1));\n"
    "    return e / sum(e, axis=1);\n"
    "}\n"
    "fn scalars(x: f32[], y: f32[A, B, C], z: f32[B, 1]) -> (f32[A, B, C], f32[]) {\n"
    "    return y * x + z, x * 2.0;\n"
    "}\n"
    "fn gelu(x: f32[N]) -> f32[N] {\n"
    "    return 0.5 * x * (1.0 + tanh(0.79788 * (x + 0.044715 * x * x * x)));\n"
    "}\n";

static ir_arena arena;
static ir_module *module;

/* A fresh copy of the named function, partitioned by the pipeline; NULL on failure. */
static ir_func *fresh(const char *name) {
    const ir_func *f = module ? ir_module_find(module, name) : NULL;
    CHECK_MSG(f != NULL, "no function %s", name);
    if (!f) return NULL;
    ir_func *g = ir_func_clone(&arena, f);
    char err[512];
    pass_options o = {0};
    int rc = pass_run_pipeline(g, &o, err, sizeof err);
    CHECK_MSG(rc == PASS_OK, "%s: %s", name, err);
    if (rc != PASS_OK) return NULL;
    CHECK_MSG(ir_verify_partition(g, err, sizeof err) == 0, "%s: %s", name, err);
    return g;
}

/* The verifier rejects f with exactly the message want. */
static void expect_at(const ir_func *f, const char *want, int line) {
    if (!f) return;
    char err[256] = "";
    int rc = ir_verify_partition(f, err, sizeof err);
    CHECK_MSG(rc == -1, "line %d: accepted, want \"%s\"", line, want);
    CHECK_MSG(!strcmp(err, want), "line %d: got \"%s\", want \"%s\"", line, err, want);
}
#define EXPECT(f, want) expect_at((f), (want), __LINE__)

/* An arena copy of n refs, to replace a kernel's array. */
static ir_ref *refs_n(int n, const ir_ref *r) {
    ir_ref *p = ir_arena_calloc(&arena, (size_t)n + 1, sizeof(ir_ref));
    if (p) memcpy(p, r, (size_t)n * sizeof(ir_ref));
    return p;
}
#define NREFS(...) ((int)(sizeof((ir_ref[]){__VA_ARGS__}) / sizeof(ir_ref)))
#define REFS(...)  refs_n(NREFS(__VA_ARGS__), (ir_ref[]){__VA_ARGS__})

static ir_kernel *kern(ir_func *f, int k) {
    return &f->partition->kernels[k];
}

static ir_shape shape_of(ir_func *f, int rank, const char *const *dims) {
    ir_shape s = {0};
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i][0] >= '0' && dims[i][0] <= '9' ? ir_dim_lit(atoi(dims[i]))
                                                           : ir_dim_sym(ir_func_symbol(f, dims[i]));
    return s;
}
#define SHAPE(f, ...)                                                                              \
    shape_of((f), (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)),                   \
             (const char *const[]){__VA_ARGS__})

/* ---- hand-built partitions: what the passes never produce ------------------------------ */

/* Gives f a partition of one kernel: the body as given (node.kernel 0), its inputs every
 * INPUT node (the body of each hand-built function reads them all), its outputs (flagged
 * stored) the body nodes an OUTPUT reads; every other node is in no kernel and not stored. */
static void one_kernel(ir_func *f, ir_kernel_kind kind, ir_shape dom, uint32_t axes, int nbody,
                       const ir_ref *body, int nparts, const int32_t *parts) {
    ir_partition *p = ir_arena_calloc(&arena, 1, sizeof(*p));
    ir_kernel *k = ir_arena_calloc(&arena, 1, sizeof(*k));
    ir_ref *in = ir_arena_calloc(&arena, (size_t)f->nnodes, sizeof(ir_ref));
    ir_ref *out = ir_arena_calloc(&arena, (size_t)f->nnodes, sizeof(ir_ref));
    int32_t *pt = ir_arena_calloc(&arena, (size_t)nparts + 1, sizeof(int32_t));
    if (!p || !k || !in || !out || !pt) return;
    for (ir_ref r = 0; r < f->nnodes; r++) {
        f->nodes[r].kernel = -1;
        f->nodes[r].flags &= ~(uint32_t)IR_NODE_STORED;
    }
    for (int i = 0; i < nbody; i++)
        f->nodes[body[i]].kernel = 0;
    for (ir_ref r = 0; r < f->nnodes; r++) {
        const ir_node *nd = &f->nodes[r];
        if (nd->op == IR_OP_OUTPUT) f->nodes[nd->args[0]].flags |= IR_NODE_STORED;
        if (nd->op == IR_OP_INPUT) in[k->ninputs++] = r;
    }
    for (int i = 0; i < nbody; i++)
        if (f->nodes[body[i]].flags & IR_NODE_STORED) out[k->noutputs++] = body[i];
    if (nparts) memcpy(pt, parts, (size_t)nparts * sizeof(int32_t));
    k->kind = kind;
    k->domain = dom;
    k->reduce_axes = axes;
    k->body = refs_n(nbody, body);
    k->nbody = nbody;
    k->inputs = in;
    k->outputs = out;
    k->parts = nparts ? pt : NULL;
    k->nparts = nparts;
    p->kernels = k;
    p->nkernels = p->cap_kernels = 1;
    f->partition = p;
}

static ir_func *new_func(const char *name) {
    return ir_func_new(module, name);
}

/* ---- membership and stores (ir_verify_partition itself) -------------------------------- */

static void test_membership(void) {
    ir_func *f;
    if ((f = fresh("two"))) f->partition->nkernels = -1;
    EXPECT(f, "partition: bad kernel array");
    if ((f = fresh("two"))) kern(f, 0)->nbody = -1;
    EXPECT(f, "kernel 0: bad body array");
    if ((f = fresh("two"))) kern(f, 0)->body[0] = 99;
    EXPECT(f, "kernel 0: body holds %99, no node");
    if ((f = fresh("two"))) kern(f, 0)->body[0] = 0;
    EXPECT(f, "kernel 0: body holds %0, a input");
    if ((f = fresh("two"))) {
        kern(f, 1)->body = REFS(5, 6, 7);
        kern(f, 1)->nbody = 3;
    }
    EXPECT(f, "%5 is in the bodies of kernels 0 and 1");
    if ((f = fresh("two"))) f->nodes[3].kernel = 1;
    EXPECT(f, "%3 is in kernel 0 but node.kernel is 1");
    if ((f = fresh("two"))) f->nodes[2].kernel = 0;
    EXPECT(f, "%2: a const has kernel 0");
    if ((f = fresh("two"))) f->nodes[2].flags |= IR_NODE_STORED;
    EXPECT(f, "%2: a const has kernel -1 and is stored");
    if ((f = fresh("two"))) f->nodes[8].args[0] = 0;
    EXPECT(f, "%8: output of %0, which no kernel computes");
    if ((f = fresh("two"))) kern(f, 1)->nbody = 1;
    EXPECT(f, "%7 (mul) is in no kernel");
    if ((f = fresh("two"))) f->nodes[5].flags &= ~(uint32_t)IR_NODE_STORED;
    EXPECT(f, "%5 is not stored but another kernel or an output reads it");
    if ((f = fresh("two"))) f->nodes[4].flags |= IR_NODE_STORED;
    EXPECT(f, "%4 is stored but no other kernel or output reads it");
}

/* ---- check_kernel: the header and the inputs ------------------------------------------ */

static void test_header_and_inputs(void) {
    ir_func *f;
    if ((f = fresh("two"))) kern(f, 0)->kind = (ir_kernel_kind)42;
    EXPECT(f, "kernel 0: bad kind 42");
    if ((f = fresh("two"))) {
        /* a third kernel with no body: every node is still in the first two */
        ir_kernel *ks = ir_arena_calloc(&arena, 3, sizeof(ir_kernel));
        if (ks) {
            memcpy(ks, f->partition->kernels, 2 * sizeof(ir_kernel));
            ks[2].kind = IR_KERNEL_POINTWISE;
            f->partition->kernels = ks;
            f->partition->nkernels = f->partition->cap_kernels = 3;
        }
    }
    EXPECT(f, "kernel 2: empty body");
    if ((f = fresh("two"))) kern(f, 0)->ninputs = -1;
    EXPECT(f, "kernel 0: bad input, output or part arrays");
    if ((f = fresh("two"))) kern(f, 1)->inputs[0] = 99;
    EXPECT(f, "kernel 1: input %99 is no node");
    if ((f = fresh("two"))) {
        kern(f, 1)->inputs = REFS(1, 5, 1);
        kern(f, 1)->ninputs = 3;
    }
    EXPECT(f, "kernel 1: input %1 listed twice");
    if ((f = fresh("two"))) {
        kern(f, 1)->inputs = REFS(1, 5, 2);
        kern(f, 1)->ninputs = 3;
    }
    EXPECT(f, "kernel 1: input %2 is a const (constants are inlined)");
    if ((f = fresh("two"))) {
        kern(f, 1)->inputs = REFS(1, 5, 8);
        kern(f, 1)->ninputs = 3;
    }
    EXPECT(f, "kernel 1: input %8 is a output (constants are inlined)");
    if ((f = fresh("two"))) {
        kern(f, 0)->inputs = REFS(0, 5);
        kern(f, 0)->ninputs = 2;
    }
    EXPECT(f, "kernel 0: input %5 is not stored by an earlier kernel (kernel 0)");
    if ((f = fresh("two"))) {
        kern(f, 1)->inputs = REFS(1, 5, 4);
        kern(f, 1)->ninputs = 3;
    }
    EXPECT(f, "kernel 1: input %4 is not flagged stored");
    if ((f = fresh("two"))) {
        kern(f, 1)->inputs = REFS(1, 5, 0);
        kern(f, 1)->ninputs = 3;
    }
    EXPECT(f, "kernel 1: input %0 is never read");
}

/* ---- check_kernel: the parts, the reads of the body, the outputs ---------------------- */

static void test_parts_reads_outputs(void) {
    ir_func *f;
    if ((f = fresh("scalars"))) kern(f, 0)->kind = IR_KERNEL_POINTWISE;
    EXPECT(f, "kernel 0: a non-combined kernel with 2 parts");
    if ((f = fresh("gelu"))) kern(f, 0)->kind = IR_KERNEL_COMBINED;
    EXPECT(f, "kernel 0: a combined kernel with 0 parts");
    if ((f = fresh("scalars"))) kern(f, 0)->nparts = 1;
    EXPECT(f, "kernel 0: combined with 1 parts, first at 0");
    if ((f = fresh("scalars"))) kern(f, 0)->parts[0] = 1;
    EXPECT(f, "kernel 0: combined with 2 parts, first at 1");
    if ((f = fresh("scalars"))) kern(f, 0)->parts[1] = 5;
    EXPECT(f, "kernel 0: part 1 starts at 5");

    if ((f = fresh("softmax"))) {
        kern(f, 0)->body[0] = 2;
        kern(f, 0)->body[1] = 1;
    }
    EXPECT(f, "kernel 0: %2 reads %1, later in the body");
    if ((f = fresh("scalars"))) kern(f, 0)->parts[1] = 2;
    EXPECT(f, "kernel 0: %7 in part 1 reads %5 of part 0 (parts must be independent)");
    if ((f = fresh("two"))) kern(f, 1)->ninputs = 1;
    EXPECT(f, "kernel 1: %6 reads %5, neither in its body nor its inputs");

    if ((f = fresh("two"))) kern(f, 0)->outputs[0] = 0;
    EXPECT(f, "kernel 0: output %0 is not in its body");
    if ((f = fresh("two"))) kern(f, 0)->outputs[0] = 4;
    EXPECT(f, "kernel 0: output %4 is not flagged stored");
    if ((f = fresh("two"))) {
        kern(f, 0)->outputs = REFS(5, 5);
        kern(f, 0)->noutputs = 2;
    }
    EXPECT(f, "kernel 0: output %5 listed twice");
    if ((f = fresh("two"))) kern(f, 0)->noutputs = 0;
    EXPECT(f, "kernel 0: 1 stored body nodes but 0 outputs");
}

/* ---- check_kernel: pointwise and combined domains -------------------------------------- */

static void test_pointwise_domains(void) {
    ir_func *f;
    if ((f = fresh("gelu"))) kern(f, 0)->reduce_axes = 1;
    EXPECT(f, "kernel 0: pointwise with reduce axes 0x1");
    if ((f = fresh("scalars"))) kern(f, 0)->reduce_axes = 1;
    EXPECT(f, "kernel 0: combined with reduce axes 0x1");
    if ((f = fresh("softmax"))) {
        kern(f, 0)->kind = IR_KERNEL_POINTWISE;
        kern(f, 0)->reduce_axes = 0;
    }
    EXPECT(f, "kernel 0: max %1 in a pointwise domain");
    if ((f = fresh("gelu"))) kern(f, 0)->domain = (ir_shape){.rank = 0};
    EXPECT(f, "kernel 0: %5 does not fit the domain");
    if ((f = fresh("gelu"))) kern(f, 0)->domain = SHAPE(f, "2", "N");
    EXPECT(f, "kernel 0: output %13 has not the shape of the domain");

    /* hand-built combined kernels over [N] and [M] */
    ir_func *g = new_func("part_sum");
    ir_shape n = SHAPE(g, "N"), m = SHAPE(g, "M"), sc = {.rank = 0};
    ir_ref x = ir_add_input(g, "x", IR_F32, &n), y = ir_add_input(g, "y", IR_F32, &m);
    ir_ref a = ir_reduce(g, IR_OP_SUM, x, 1, IR_F32), c = ir_ew(g, IR_OP_EXP, IR_F32, &m, 1, &y);
    ir_add_output(g, a, IR_F32, &g->nodes[a].shape);
    ir_add_output(g, c, IR_F32, &m);
    one_kernel(g, IR_KERNEL_COMBINED, n, 0, 2, REFS(a, c), 2, (int32_t[]){0, 1});
    EXPECT(g, "kernel 0: sum %2 in a pointwise part 0");

    /* part 1 holds a dead log over [N] and stores over [M] */
    g = new_func("part_fit");
    n = SHAPE(g, "N"); /* a function's shapes name its own symbols */
    m = SHAPE(g, "M");
    x = ir_add_input(g, "x", IR_F32, &n);
    y = ir_add_input(g, "y", IR_F32, &m);
    a = ir_ew(g, IR_OP_EXP, IR_F32, &n, 1, &x);
    ir_ref b = ir_ew(g, IR_OP_LOG, IR_F32, &n, 1, &x);
    c = ir_ew(g, IR_OP_EXP, IR_F32, &m, 1, &y);
    ir_add_output(g, a, IR_F32, &n);
    ir_add_output(g, c, IR_F32, &m);
    one_kernel(g, IR_KERNEL_COMBINED, n, 0, 3, REFS(a, b, c), 2, (int32_t[]){0, 1});
    EXPECT(g, "kernel 0: %3 does not fit the part 1");
    /* part 0 is only that dead log: it stores nothing */
    one_kernel(g, IR_KERNEL_COMBINED, n, 0, 3, REFS(b, a, c), 2, (int32_t[]){0, 1});
    EXPECT(g, "kernel 0: part 0 stores nothing");

    /* part 1 stores over [M] and over [] */
    g = new_func("part_shape");
    n = SHAPE(g, "N");
    m = SHAPE(g, "M");
    x = ir_add_input(g, "x", IR_F32, &n);
    y = ir_add_input(g, "y", IR_F32, &m);
    ir_ref z = ir_add_input(g, "z", IR_F32, &sc);
    a = ir_ew(g, IR_OP_EXP, IR_F32, &n, 1, &x);
    c = ir_ew(g, IR_OP_EXP, IR_F32, &m, 1, &y);
    b = ir_ew(g, IR_OP_EXP, IR_F32, &sc, 1, &z);
    ir_add_output(g, a, IR_F32, &n);
    ir_add_output(g, c, IR_F32, &m);
    ir_add_output(g, b, IR_F32, &sc);
    one_kernel(g, IR_KERNEL_COMBINED, n, 0, 3, REFS(a, c, b), 2, (int32_t[]){0, 1});
    EXPECT(g, "kernel 0: output %5 has not the shape of the part 1");
}

/* ---- check_kernel: reduction domains --------------------------------------------------- */

static void test_reduction_domains(void) {
    ir_func *f;
    if ((f = fresh("softmax"))) kern(f, 0)->reduce_axes = 1;
    EXPECT(f, "kernel 0: the kind does not match reduce axes 0x1");
    if ((f = fresh("softmax"))) {
        kern(f, 0)->kind = IR_KERNEL_COLUMN_REDUCTION;
        kern(f, 0)->reduce_axes = 1;
    }
    EXPECT(f, "kernel 0: %1 reduces another shape or other axes than the kernel");
    if ((f = fresh("two"))) kern(f, 0)->domain = SHAPE(f, "R", "1");
    EXPECT(f, "kernel 0: %3 does not fit the domain");
    if ((f = fresh("two"))) {
        kern(f, 1)->kind = IR_KERNEL_ROW_REDUCTION;
        kern(f, 1)->reduce_axes = 2;
    }
    EXPECT(f, "kernel 1: a reduction kernel without a reduction");

    /* a row reduction that also stores a [C] value: neither per element nor per row */
    ir_func *g = new_func("row_other");
    ir_shape rc = SHAPE(g, "R", "C"), cs = SHAPE(g, "C");
    ir_ref x = ir_add_input(g, "x", IR_F32, &rc), z = ir_add_input(g, "z", IR_F32, &cs);
    ir_ref s = ir_reduce(g, IR_OP_SUM, x, 2, IR_F32), e = ir_ew(g, IR_OP_EXP, IR_F32, &cs, 1, &z);
    ir_add_output(g, s, IR_F32, &g->nodes[s].shape);
    ir_add_output(g, e, IR_F32, &cs);
    one_kernel(g, IR_KERNEL_ROW_REDUCTION, rc, 2, 2, REFS(s, e), 0, NULL);
    EXPECT(g, "kernel 0: output %3 is neither per element nor per result");

    /* x - sum(x) in one full reduction */
    g = new_func("full_center");
    ir_shape n = SHAPE(g, "N");
    x = ir_add_input(g, "x", IR_F32, &n);
    s = ir_reduce(g, IR_OP_SUM, x, 1, IR_F32);
    ir_ref b = ir_broadcast(g, s, &n);
    ir_ref d = ir_ew(g, IR_OP_SUB, IR_F32, &n, 2, (ir_ref[]){x, b});
    ir_add_output(g, d, IR_F32, &n);
    one_kernel(g, IR_KERNEL_FULL_REDUCTION, n, 1, 3, REFS(s, b, d), 0, NULL);
    EXPECT(g, "kernel 0: %2 depends on the full reduction's result but is per element");
}

int main(void) {
    ir_arena_init(&arena);
    module = checked_module(&arena, "test_verify_partition", PROGRAM);
    if (!module) return check_exit("test_verify_partition");
    test_membership();
    test_header_and_inputs();
    test_parts_reads_outputs();
    test_pointwise_domains();
    test_reduction_domains();
    ir_arena_free(&arena);
    return check_exit("test_verify_partition");
}
