/* tests/unit/test_ir.c: shapes, the builders, the printer (exact text) and the verifier
 * (well-formed functions pass; hand-corrupted ones fail with a message naming the node). */
#include "ir/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static ir_shape shape(int rank, const ir_dim *dims) {
    ir_shape s = {0};
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    return s;
}

#define SHAPE(...)                                                                                 \
    shape((int)(sizeof((ir_dim[]){__VA_ARGS__}) / sizeof(ir_dim)), (ir_dim[]){__VA_ARGS__})

static void test_shapes(void) {
    ir_dim R = ir_dim_sym(0), C = ir_dim_sym(1), N = ir_dim_sym(2), one = ir_dim_lit(1);
    ir_shape out;
    CHECK(ir_dim_equal(R, R) && !ir_dim_equal(R, C) && !ir_dim_equal(R, ir_dim_lit(0)));
    CHECK(ir_dim_equal(ir_dim_lit(4), ir_dim_lit(4)) && !ir_dim_equal(one, ir_dim_lit(4)));

    ir_shape a = SHAPE(R, one), b = SHAPE(C);
    CHECK(ir_shape_broadcast(&a, &b, &out) == -1);
    ir_shape rc = SHAPE(R, C);
    CHECK(ir_shape_equal(&out, &rc));
    ir_shape bc = SHAPE(N, C);
    CHECK(ir_shape_broadcast(&bc, &b, &out) == -1 && ir_shape_equal(&out, &bc));
    ir_shape n = SHAPE(N);
    CHECK(ir_shape_broadcast(&n, &b, &out) == 0);
    ir_shape abc = SHAPE(ir_dim_lit(2), R, C), dc = SHAPE(N, C);
    CHECK(ir_shape_broadcast(&abc, &dc, &out) == 1);
    ir_shape l2 = SHAPE(ir_dim_lit(2)), l3 = SHAPE(ir_dim_lit(3)), l1 = SHAPE(one);
    CHECK(ir_shape_broadcast(&l2, &l3, &out) == 0);
    CHECK(ir_shape_broadcast(&l1, &l3, &out) == -1 && ir_shape_equal(&out, &l3));
    ir_shape scalar = {0};
    CHECK(ir_shape_broadcast(&scalar, &rc, &out) == -1 && ir_shape_equal(&out, &rc));
    CHECK(ir_shape_broadcast(&scalar, &scalar, &out) == -1 && out.rank == 0);

    ir_shape red = ir_shape_reduce(&rc, 2);
    CHECK(ir_shape_equal(&red, &a));
    red = ir_shape_reduce(&rc, 3);
    ir_shape ones = SHAPE(one, one);
    CHECK(ir_shape_equal(&red, &ones));

    ir_shape r = SHAPE(R), one_n_one = SHAPE(one, N, one);
    CHECK(ir_shape_squeeze_equal(&a, &r));
    CHECK(ir_shape_squeeze_equal(&one_n_one, &n));
    CHECK(!ir_shape_squeeze_equal(&n, &b));
    CHECK(ir_shape_squeeze_equal(&scalar, &ones));
    CHECK(!ir_shape_squeeze_equal(&scalar, &n));
    CHECK(!ir_shape_squeeze_equal(&rc, &r));

    int64_t syms[3] = {5, 7, 9}, dims[IR_MAX_RANK];
    ir_shape mixed = SHAPE(C, ir_dim_lit(3), R);
    ir_shape_concrete(&mixed, syms, dims);
    CHECK(dims[0] == 7 && dims[1] == 3 && dims[2] == 5);
}

/* softmax(x: f32[R, C]) -> f32[R, C], as the front end would lower it */
static ir_func *build_softmax(ir_module *m) {
    ir_func *f = ir_func_new(m, "softmax");
    ir_dim R = ir_dim_sym(ir_func_symbol(f, "R")), C = ir_dim_sym(ir_func_symbol(f, "C"));
    ir_shape rc = SHAPE(R, C);
    ir_ref x = ir_add_input(f, "x", IR_F32, &rc);
    ir_ref mx = ir_reduce(f, IR_OP_MAX, x, 1u << 1, IR_F32);
    ir_ref mb = ir_broadcast(f, mx, &rc);
    ir_ref d = ir_ew(f, IR_OP_SUB, IR_F32, &rc, 2, (ir_ref[]){x, mb});
    ir_ref e = ir_ew(f, IR_OP_EXP, IR_F32, &rc, 1, &d);
    ir_ref s = ir_reduce(f, IR_OP_SUM, e, 1u << 1, IR_F32);
    ir_ref sb = ir_broadcast(f, s, &rc);
    ir_ref y = ir_ew(f, IR_OP_DIV, IR_F32, &rc, 2, (ir_ref[]){e, sb});
    ir_add_output(f, y, IR_F32, &rc);
    return f;
}

static const char *softmax_text = "func softmax(%0: f32[R, C]) -> f32[R, C]\n"
                                  "  %0 = input 0 \"x\" : f32[R, C]\n"
                                  "  %1 = max %0 axes=(1) : f32[R, 1]\n"
                                  "  %2 = broadcast %1 : f32[R, C]\n"
                                  "  %3 = sub %0, %2 : f32[R, C]\n"
                                  "  %4 = exp %3 : f32[R, C]\n"
                                  "  %5 = sum %4 axes=(1) : f32[R, 1]\n"
                                  "  %6 = broadcast %5 : f32[R, C]\n"
                                  "  %7 = div %4, %6 : f32[R, C]\n"
                                  "  %8 = output 0 %7 : f32[R, C]\n";

/* mixed(x: f16[N], k: i32[]) -> (f32[], i64[4], bool[N]) with constants of every kind */
static ir_func *build_mixed(ir_module *m) {
    ir_func *f = ir_func_new(m, "mixed");
    ir_dim N = ir_dim_sym(ir_func_symbol(f, "N"));
    ir_shape n = SHAPE(N), scalar = {0}, four = SHAPE(ir_dim_lit(4)), one = SHAPE(ir_dim_lit(1));
    ir_ref x = ir_add_input(f, "x", IR_F16, &n);
    ir_ref k = ir_add_input(f, "k", IR_I32, &scalar);
    ir_ref xf = ir_cast(f, x, IR_F32);
    CHECK(ir_cast(f, xf, IR_F32) == xf);
    ir_ref c1 = ir_const_float(f, IR_F32, 0.1);
    ir_ref p = ir_ew(f, IR_OP_MUL, IR_F32, &n, 2, (ir_ref[]){xf, c1});
    ir_ref s = ir_reduce(f, IR_OP_SUM, p, 1, IR_F32);
    CHECK(ir_shape_equal(&f->nodes[s].shape, &one));
    ir_add_output(f, s, IR_F32, &scalar);
    ir_ref kb = ir_broadcast(f, k, &four);
    CHECK(ir_broadcast(f, kb, &four) == kb);
    ir_ref k64 = ir_cast(f, kb, IR_I64);
    ir_ref c2 = ir_const_int(f, IR_I64, -3);
    ir_ref q = ir_ew(f, IR_OP_DIV, IR_I64, &four, 2, (ir_ref[]){k64, c2});
    ir_add_output(f, q, IR_I64, &four);
    ir_ref c3 = ir_const_float(f, IR_F16, 100.0);
    ir_ref c4 = ir_const_float(f, IR_F16, -0.0);
    ir_ref c5 = ir_const_float(f, IR_F16, 1e-5);
    ir_ref lo = ir_ew(f, IR_OP_MAXIMUM, IR_F16, &n, 2, (ir_ref[]){x, c4});
    ir_ref cl = ir_ew(f, IR_OP_CLAMP, IR_F16, &n, 3, (ir_ref[]){lo, c5, c3});
    ir_ref c6 = ir_const_float(f, IR_F16, 0.7978845608028654);
    ir_ref gt = ir_ew(f, IR_OP_GT, IR_BOOL, &n, 2, (ir_ref[]){cl, c6});
    ir_ref t = ir_const_int(f, IR_BOOL, 1);
    ir_ref a = ir_ew(f, IR_OP_AND, IR_BOOL, &n, 2, (ir_ref[]){gt, t});
    ir_add_output(f, a, IR_BOOL, &n);
    return f;
}

static const char *mixed_text = "func mixed(%0: f16[N], %1: i32[]) -> (f32[], i64[4], bool[N])\n"
                                "  %0 = input 0 \"x\" : f16[N]\n"
                                "  %1 = input 1 \"k\" : i32[]\n"
                                "  %2 = cast %0 : f32[N]\n"
                                "  %3 = const 0.1 : f32[]\n"
                                "  %4 = mul %2, %3 : f32[N]\n"
                                "  %5 = sum %4 axes=(0) : f32[1]\n"
                                "  %6 = output 0 %5 : f32[]\n"
                                "  %7 = broadcast %1 : i32[4]\n"
                                "  %8 = cast %7 : i64[4]\n"
                                "  %9 = const -3 : i64[]\n"
                                "  %10 = div %8, %9 : i64[4]\n"
                                "  %11 = output 1 %10 : i64[4]\n"
                                "  %12 = const 1e+02 : f16[]\n"
                                "  %13 = const -0.0 : f16[]\n"
                                "  %14 = const 1e-05 : f16[]\n"
                                "  %15 = maximum %0, %13 : f16[N]\n"
                                "  %16 = clamp %15, %14, %12 : f16[N]\n"
                                "  %17 = const 0.7978845608028654 : f16[]\n"
                                "  %18 = gt %16, %17 : bool[N]\n"
                                "  %19 = const true : bool[]\n"
                                "  %20 = and %18, %19 : bool[N]\n"
                                "  %21 = output 2 %20 : bool[N]\n";

static const char *print_func(ir_arena *a, const ir_func *f) {
    ir_buf b;
    ir_buf_init(&b, a);
    ir_print_func(&b, f);
    return b.data;
}

static void test_build_and_print(void) {
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = ir_module_new(&a);
    ir_func *sm = build_softmax(m);
    ir_func *mx = build_mixed(m);
    char err[256];
    CHECK(ir_verify(sm, err, sizeof err) == 0);
    CHECK(ir_verify(mx, err, sizeof err) == 0);
    CHECK(ir_module_find(m, "softmax") == sm);
    CHECK(ir_module_find(m, "mixed") == mx);
    CHECK(ir_module_find(m, "nope") == NULL);
    CHECK(ir_func_symbol(sm, "C") == 1 && ir_func_symbol(sm, "R") == 0 && sm->nsyms == 2);

    /* node defaults */
    for (int32_t r = 0; r < sm->nnodes; r++) {
        CHECK(sm->nodes[r].kernel == -1 && sm->nodes[r].flags == 0);
        for (int i = ir_ops[sm->nodes[r].op].arity; i < 3; i++)
            CHECK(sm->nodes[r].args[i] == IR_NONE);
    }
    CHECK(sm->nparams == 1 && sm->params[0].node == 0 && sm->noutputs == 1);
    CHECK(sm->outputs[0].node == 8 && sm->nodes[8].index == 0);
    CHECK(mx->nodes[1].index == 1 && mx->nodes[21].index == 2);

    CHECK_STR(print_func(&a, sm), softmax_text);
    CHECK_STR(print_func(&a, mx), mixed_text);

    ir_buf b;
    ir_buf_init(&b, &a);
    ir_print_module(&b, m);
    size_t n1 = strlen(softmax_text);
    CHECK(strncmp(b.data, softmax_text, n1) == 0 && b.data[n1] == '\n' &&
          strcmp(b.data + n1 + 1, mixed_text) == 0);

    ir_buf_init(&b, &a);
    ir_shape s = mx->nodes[5].shape;
    ir_print_shape(&b, mx, &s);
    CHECK_STR(b.data, "[1]");

    /* with a partition: leaves first, kernels with their bodies, then the outputs */
    ir_partition *p = ir_arena_alloc(&a, sizeof(*p));
    ir_kernel k = {0};
    k.kind = IR_KERNEL_ROW_REDUCTION;
    k.domain = sm->nodes[0].shape;
    k.reduce_axes = 2;
    for (ir_ref r = 1; r <= 7; r++) {
        IR_VEC_PUSH(&a, k.body, k.nbody, k.cap_body, r);
        sm->nodes[r].kernel = 0;
    }
    IR_VEC_PUSH(&a, k.inputs, k.ninputs, k.cap_inputs, 0);
    IR_VEC_PUSH(&a, k.outputs, k.noutputs, k.cap_outputs, 7);
    IR_VEC_PUSH(&a, p->kernels, p->nkernels, p->cap_kernels, k);
    sm->nodes[7].flags |= IR_NODE_STORED;
    sm->partition = p;
    CHECK(ir_verify(sm, err, sizeof err) == 0);
    if (err[0]) fprintf(stderr, "%s\n", err);
    CHECK_STR(print_func(&a, sm), "func softmax(%0: f32[R, C]) -> f32[R, C]\n"
                                  "  %0 = input 0 \"x\" : f32[R, C]\n"
                                  "kernel 0 row-reduction domain=[R, C] reduce=(1) in=(%0) "
                                  "out=(%7)\n"
                                  "    %1 = max %0 axes=(1) : f32[R, 1]\n"
                                  "    %2 = broadcast %1 : f32[R, C]\n"
                                  "    %3 = sub %0, %2 : f32[R, C]\n"
                                  "    %4 = exp %3 : f32[R, C]\n"
                                  "    %5 = sum %4 axes=(1) : f32[R, 1]\n"
                                  "    %6 = broadcast %5 : f32[R, C]\n"
                                  "    %7 = div %4, %6 : f32[R, C] stored\n"
                                  "  %8 = output 0 %7 : f32[R, C]\n");
    ir_arena_free(&a);
}

/* Builds softmax afresh, lets `corrupt` damage it, and checks ir_verify's message. */
#define CHECK_REJECTS(stmt, want)                                                                  \
    do {                                                                                           \
        ir_arena a_;                                                                               \
        ir_arena_init(&a_);                                                                        \
        ir_func *f = build_softmax(ir_module_new(&a_));                                            \
        char err_[256] = "";                                                                       \
        stmt;                                                                                      \
        if (ir_verify(f, err_, sizeof err_) == 0) {                                                \
            fprintf(stderr, "%s:%d: verifier accepted: %s\n", __FILE__, __LINE__, #stmt);          \
            failures++;                                                                            \
        } else if (strcmp(err_, (want)) != 0) {                                                    \
            fprintf(stderr, "%s:%d: message\n  %s\nwant\n  %s\n", __FILE__, __LINE__, err_,        \
                    (want));                                                                       \
            failures++;                                                                            \
        }                                                                                          \
        ir_arena_free(&a_);                                                                        \
    } while (0)

static void test_verify_rejects(void) {
    CHECK_REJECTS(f->nodes[3].args[1] = 1,
                  "%3: sub operand 2 has shape [R, 1] but node has [R, C]");
    CHECK_REJECTS(f->nodes[3].args[0] = 5, "%3: sub operand 1 is %5, not an earlier node");
    CHECK_REJECTS(f->nodes[3].args[0] = 3, "%3: sub operand 1 is %3, not an earlier node");
    CHECK_REJECTS(f->nodes[3].args[0] = IR_NONE, "%3: sub operand 1 is %-1, not an earlier node");
    CHECK_REJECTS(f->nodes[4].args[1] = 2, "%4: exp takes 1 operands but has operand 2 = %2");
    CHECK_REJECTS(f->nodes[4].dtype = IR_I32, "%4: exp gives a float but node has i32");
    CHECK_REJECTS(f->nodes[4].dtype = IR_F16, "%4: exp operand 1 has dtype f32 but node has f16");
    CHECK_REJECTS(f->nodes[1].axes = 0, "%1: max reduces no axis");
    CHECK_REJECTS(f->nodes[1].axes = 4, "%1: max reduces axes 0x4 of a rank-2 operand");
    CHECK_REJECTS(f->nodes[1].axes = 1, "%1: max of shape [R, C] gives [1, C] but node has [R, 1]");
    CHECK_REJECTS(f->nodes[5].dtype = IR_I64, "%5: sum of f32 cannot give i64");
    CHECK_REJECTS(f->nodes[2].shape.dims[1] = ir_dim_lit(3),
                  "%3: sub operand 2 has shape [R, 3] but node has [R, C]");
    CHECK_REJECTS((f->nodes[2].shape.dims[0] = ir_dim_lit(2),
                   f->nodes[2].shape.dims[1] = f->nodes[2].shape.dims[0]),
                  "%2: broadcast operand 1 has shape [R, 1], which does not broadcast to [2, 2]");
    CHECK_REJECTS(f->nodes[2].dtype = IR_F64,
                  "%2: broadcast operand 1 has dtype f32 but node has f64");
    CHECK_REJECTS(f->nodes[8].dtype = IR_F64,
                  "%8: output operand 1 has dtype f32 but node has f64");
    CHECK_REJECTS(f->outputs[0].shape.rank = 1,
                  "%8: output node is f32[R, C] but output 0 is declared f32[R]");
    CHECK_REJECTS(f->nodes[8].shape.dims[0] = ir_dim_lit(1),
                  "%8: output operand 1 has shape [R, C] but node has [1, C]");
    CHECK_REJECTS(f->nodes[8].index = 1, "%8: output 1 of 1 outputs");
    CHECK_REJECTS(f->outputs[0].node = 7, "%8: output 0 but that output is node %7");
    CHECK_REJECTS(f->params[0].node = 1, "%0: input 0 but parameter 0 is node %1");
    CHECK_REJECTS(f->params[0].dtype = IR_F16,
                  "%0: input is f32[R, C] but parameter 'x' is f16[R, C]");
    CHECK_REJECTS(f->nodes[4].op = (ir_op)1000, "%4: bad op 1000");
    CHECK_REJECTS(f->nodes[4].dtype = IR_DTYPE_COUNT, "%4: exp has bad dtype 7");
    CHECK_REJECTS(f->nodes[4].shape.rank = 9, "%4: exp has rank 9 (0 to 8 allowed)");
    CHECK_REJECTS(f->nodes[4].shape.dims[0] = ir_dim_sym(2), "%4: exp dim 0 names symbol 2 of 2");
    CHECK_REJECTS(f->nodes[4].shape.dims[0] = ir_dim_lit(-1), "%4: exp dim 0 has negative size -1");
    CHECK_REJECTS(f->nodes[4].op = IR_OP_ISNAN, "%4: isnan gives bool but node has f32");
    CHECK_REJECTS((f->nodes[4].op = IR_OP_NOT, f->nodes[4].dtype = IR_BOOL),
                  "%4: not operand 1 has dtype f32 but must be bool");
    CHECK_REJECTS((f->nodes[3].op = IR_OP_LT, f->nodes[3].dtype = IR_BOOL),
                  "%4: exp operand 1 has dtype bool but node has f32");
    CHECK_REJECTS(f->nodes[2].op = IR_OP_CAST,
                  "%2: cast operand 1 has shape [R, 1] but node has [R, C]");
}

/* The accepting side of the rules the rejection tests do not reach. */
static void test_verify_accepts(void) {
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = ir_module_new(&a);
    ir_func *f = ir_func_new(m, "ok");
    ir_dim N = ir_dim_sym(ir_func_symbol(f, "N"));
    ir_shape n = SHAPE(N), scalar = {0};
    ir_ref x = ir_add_input(f, "x", IR_F32, &n);
    ir_ref s = ir_add_input(f, "s", IR_F32, &scalar);
    ir_ref i = ir_add_input(f, "i", IR_I32, &n);
    /* a scalar reduced over no axis is the identity */
    ir_ref ss = ir_reduce(f, IR_OP_SUM, s, 0, IR_F32);
    ir_ref sb = ir_broadcast(f, ss, &n);
    ir_ref c = ir_ew(f, IR_OP_LT, IR_BOOL, &n, 2, (ir_ref[]){x, sb});
    ir_ref w = ir_ew(f, IR_OP_WHERE, IR_F32, &n, 3, (ir_ref[]){c, x, sb});
    ir_ref nan = ir_ew(f, IR_OP_ISNAN, IR_BOOL, &n, 1, &w);
    ir_ref isum = ir_reduce(f, IR_OP_SUM, i, 1, IR_I64);
    ir_ref bsum = ir_reduce(f, IR_OP_PROD, nan, 1, IR_I64);
    ir_add_output(f, w, IR_F32, &n);
    ir_add_output(f, isum, IR_I64, &scalar);
    ir_add_output(f, bsum, IR_I64, &scalar);
    char err[256] = "";
    CHECK(ir_verify(f, err, sizeof err) == 0);
    if (err[0]) fprintf(stderr, "%s\n", err);

    /* a rank-0 operand that is not a CONST must be broadcast first */
    f->nodes[c].args[1] = ss;
    CHECK(ir_verify(f, err, sizeof err) == -1);
    CHECK_STR(err, "%5: lt operand 2 has shape [] but node has [N]");
    f->nodes[c].args[1] = sb;
    /* where's condition must be bool */
    f->nodes[w].args[0] = x;
    CHECK(ir_verify(f, err, sizeof err) == -1);
    CHECK_STR(err, "%6: where operand 1 has dtype f32 but must be bool");
    f->nodes[w].args[0] = c;
    /* comparisons compare one dtype */
    f->nodes[c].args[1] = i;
    CHECK(ir_verify(f, err, sizeof err) == -1);
    CHECK_STR(err, "%5: lt compares f32 with i32");
    f->nodes[c].args[1] = sb;
    CHECK(ir_verify(f, err, sizeof err) == 0);
    ir_arena_free(&a);
}

int main(void) {
    test_shapes();
    test_build_and_print();
    test_verify_rejects();
    test_verify_accepts();
    return check_exit("test_ir");
}
