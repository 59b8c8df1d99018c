/* tests/unit/test_interp.c: the reference interpreter against values computed here
 * independently (closed forms, libm loops), and its errors (shapes at launch, max over an
 * empty axis, output tensors that do not fit). */
#include "ir/ir.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* NaN equals NaN; otherwise |a - b| <= tol * |b| (tol 0: bit-for-bit up to the sign of 0) */
static int close_to(double a, double b, double tol) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (a == b) return 1;
    return fabs(a - b) <= tol * fabs(b);
}

static ir_shape shape(int rank, const ir_dim *dims) {
    ir_shape s = {0};
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    return s;
}

#define SHAPE(...)                                                                                 \
    shape((int)(sizeof((ir_dim[]){__VA_ARGS__}) / sizeof(ir_dim)), (ir_dim[]){__VA_ARGS__})

static ir_tensor tensor(ir_dtype t, void *data, int rank, const int64_t *dims) {
    ir_tensor x = {0};
    x.dtype = t;
    x.rank = rank;
    x.data = data;
    for (int i = 0; i < rank; i++)
        x.dims[i] = dims[i];
    return x;
}

typedef struct ctx {
    ir_arena arena;
    ir_module *m;
    char err[256];
} ctx;

static ir_func *new_func(ctx *c, const char *name) {
    ir_arena_init(&c->arena);
    c->m = ir_module_new(&c->arena);
    c->err[0] = 0;
    return ir_func_new(c->m, name);
}

static int run(ctx *c, ir_func *f, ir_tensor *in, ir_tensor *out) {
    if (ir_verify(f, c->err, sizeof c->err)) {
        fprintf(stderr, "verify: %s\n", c->err);
        return -2;
    }
    int rc = ir_interp_run(f, in, out, c->err, sizeof c->err);
    if (rc) fprintf(stderr, "(expected?) interp: %s\n", c->err);
    return rc;
}

static ir_ref binop(ir_func *f, ir_op op, ir_ref a, ir_ref b) {
    const ir_node *n = f->nodes[a].shape.rank ? &f->nodes[a] : &f->nodes[b];
    ir_shape s = n->shape;
    ir_dtype t = n->dtype;
    if (ir_ops[op].flags & IR_OPF_CMP) t = IR_BOOL;
    return ir_ew(f, op, t, &s, 2, (ir_ref[]){a, b});
}

static ir_ref unop(ir_func *f, ir_op op, ir_ref a) {
    ir_shape s = f->nodes[a].shape;
    ir_dtype t = (ir_ops[op].flags & IR_OPF_PRED) ? IR_BOOL : f->nodes[a].dtype;
    return ir_ew(f, op, t, &s, 1, &a);
}

/* ---- gelu: bit-identical to the same expression evaluated in double here --------------- */

static double gelu_ref(double x) {
    double k = 0.7978845608028654;
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

static void test_gelu(void) {
    ctx c;
    ir_func *f = new_func(&c, "gelu");
    ir_shape n = SHAPE(ir_dim_sym(ir_func_symbol(f, "N")));
    ir_ref x = ir_add_input(f, "x", IR_F32, &n);
    ir_ref half = ir_const_float(f, IR_F32, 0.5);
    ir_ref a = binop(f, IR_OP_MUL, half, x);
    ir_ref k = ir_const_float(f, IR_F32, 0.7978845608028654);
    ir_ref c3 = ir_const_float(f, IR_F32, 0.044715);
    ir_ref t = binop(f, IR_OP_MUL, c3, x);
    t = binop(f, IR_OP_MUL, t, x);
    t = binop(f, IR_OP_MUL, t, x);
    t = binop(f, IR_OP_ADD, x, t);
    t = binop(f, IR_OP_MUL, k, t);
    t = unop(f, IR_OP_TANH, t);
    ir_ref one = ir_const_float(f, IR_F32, 1.0);
    t = binop(f, IR_OP_ADD, one, t);
    ir_ref y = binop(f, IR_OP_MUL, a, t);
    ir_add_output(f, y, IR_F32, &n);

    enum { N = 1003 };
    float *xs = malloc(N * sizeof(float)), *ys = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++)
        xs[i] = (float)(-8.0 + 16.0 * i / (N - 4));
    xs[N - 3] = NAN;
    xs[N - 2] = INFINITY;
    xs[N - 1] = -INFINITY;
    int64_t dims[1] = {N};
    ir_tensor in = tensor(IR_F32, xs, 1, dims), out = tensor(IR_F32, ys, 1, dims);
    CHECK(run(&c, f, &in, &out) == 0);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float want = (float)gelu_ref(xs[i]);
        if (!(isnan(want) ? isnan(ys[i]) : memcmp(&want, &ys[i], sizeof want) == 0)) bad++;
    }
    CHECK(bad == 0);
    free(xs);
    free(ys);
    ir_arena_free(&c.arena);
}

/* ---- softmax over axis 1 of an odd [R, C] ----------------------------------------------- */

static void test_softmax(void) {
    ctx c;
    ir_func *f = new_func(&c, "softmax");
    ir_shape rc = SHAPE(ir_dim_sym(ir_func_symbol(f, "R")), ir_dim_sym(ir_func_symbol(f, "C")));
    ir_ref x = ir_add_input(f, "x", IR_F64, &rc);
    ir_ref m = ir_broadcast(f, ir_reduce(f, IR_OP_MAX, x, 2, IR_F64), &rc);
    ir_ref e = unop(f, IR_OP_EXP, binop(f, IR_OP_SUB, x, m));
    ir_ref s = ir_broadcast(f, ir_reduce(f, IR_OP_SUM, e, 2, IR_F64), &rc);
    ir_add_output(f, binop(f, IR_OP_DIV, e, s), IR_F64, &rc);

    enum { R = 7, C = 13 };
    double xs[R * C], ys[R * C];
    for (int i = 0; i < R * C; i++)
        xs[i] = sin(i * 1.7) * 30.0;
    int64_t dims[2] = {R, C};
    ir_tensor in = tensor(IR_F64, xs, 2, dims), out = tensor(IR_F64, ys, 2, dims);
    CHECK(run(&c, f, &in, &out) == 0);
    for (int r = 0; r < R; r++) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < C; j++)
            mx = fmax(mx, xs[r * C + j]);
        for (int j = 0; j < C; j++)
            sum += exp(xs[r * C + j] - mx);
        for (int j = 0; j < C; j++)
            CHECK(close_to(ys[r * C + j], exp(xs[r * C + j] - mx) / sum, 1e-14));
    }
    ir_arena_free(&c.arena);
}

/* ---- reductions over the axes of an odd [R, C] ------------------------------------------ */

static void test_reductions(void) {
    enum { R = 5, C = 9 };
    float xs[R * C];
    int32_t is[R * C];
    for (int i = 0; i < R * C; i++) {
        xs[i] = (float)(cos(i * 0.37) * (i + 1));
        is[i] = (i % 2 ? -1 : 1) * (i * 104729 % 2000003) * 1000; /* sums overflow i32 */
    }
    int64_t dims[2] = {R, C};
    static const ir_op ops[] = {IR_OP_SUM, IR_OP_PROD, IR_OP_MEAN, IR_OP_MAX, IR_OP_MIN};
    for (uint32_t axes = 1; axes <= 3; axes++) {
        for (int o = 0; o < 5; o++) {
            ir_op op = ops[o];
            ctx c;
            ir_func *f = new_func(&c, "red");
            ir_shape rc =
                SHAPE(ir_dim_sym(ir_func_symbol(f, "R")), ir_dim_sym(ir_func_symbol(f, "C")));
            ir_ref x = ir_add_input(f, "x", IR_F32, &rc);
            ir_ref xi = ir_add_input(f, "i", IR_I32, &rc);
            ir_ref rf = ir_reduce(f, op, x, axes, IR_F32);
            ir_shape os = f->nodes[rf].shape;
            ir_add_output(f, rf, IR_F32, &os);
            ir_ref xd = ir_cast(f, x, IR_F64);
            ir_add_output(f, ir_reduce(f, op, xd, axes, IR_F64), IR_F64, &os);
            int has_int = op != IR_OP_MEAN;
            ir_dtype it = (op == IR_OP_SUM || op == IR_OP_PROD) ? IR_I64 : IR_I32;
            if (has_int) ir_add_output(f, ir_reduce(f, op, xi, axes, it), it, &os);

            int64_t odims[2] = {axes & 1 ? 1 : R, axes & 2 ? 1 : C};
            float yf[R * C];
            double yd[R * C];
            int64_t yi[R * C];
            int32_t yi32[R * C];
            ir_tensor in[2] = {tensor(IR_F32, xs, 2, dims), tensor(IR_I32, is, 2, dims)};
            ir_tensor out[3] = {tensor(IR_F32, yf, 2, odims), tensor(IR_F64, yd, 2, odims),
                                tensor(it, it == IR_I64 ? (void *)yi : (void *)yi32, 2, odims)};
            CHECK(run(&c, f, in, out) == 0);
            for (int64_t r = 0; r < odims[0]; r++) {
                for (int64_t j = 0; j < odims[1]; j++) {
                    double acc = op == IR_OP_PROD  ? 1
                                 : op == IR_OP_MAX ? -INFINITY
                                 : op == IR_OP_MIN ? INFINITY
                                                   : 0;
                    uint64_t iacc = op == IR_OP_PROD ? 1 : 0;
                    int64_t imax = INT64_MIN, imin = INT64_MAX, n = 0;
                    for (int64_t rr = 0; rr < R; rr++) {
                        for (int64_t jj = 0; jj < C; jj++) {
                            if (!(axes & 1) && rr != r) continue;
                            if (!(axes & 2) && jj != j) continue;
                            double v = xs[rr * C + jj];
                            int64_t iv = is[rr * C + jj];
                            n++;
                            switch (op) {
                            case IR_OP_SUM:
                            case IR_OP_MEAN:
                                acc += v;
                                iacc += (uint64_t)iv;
                                break;
                            case IR_OP_PROD:
                                acc *= v;
                                iacc *= (uint64_t)iv;
                                break;
                            case IR_OP_MAX:
                                acc = fmax(acc, v);
                                imax = iv > imax ? iv : imax;
                                break;
                            default:
                                acc = fmin(acc, v);
                                imin = iv < imin ? iv : imin;
                                break;
                            }
                        }
                    }
                    if (op == IR_OP_MEAN) acc /= (double)n;
                    int64_t k = r * odims[1] + j;
                    CHECK(close_to(yd[k], acc, 1e-13));
                    CHECK(yf[k] == (float)yd[k]);
                    if (op == IR_OP_SUM || op == IR_OP_PROD)
                        CHECK((uint64_t)yi[k] == iacc);
                    else if (op == IR_OP_MAX)
                        CHECK(yi32[k] == imax);
                    else if (op == IR_OP_MIN)
                        CHECK(yi32[k] == imin);
                }
            }
            ir_arena_free(&c.arena);
        }
    }
}

/* ---- integer arithmetic: wrap-around, division and remainder edge cases ----------------- */

static void test_int_ops(ir_dtype t) {
    int64_t MIN = t == IR_I32 ? INT32_MIN : INT64_MIN, MAX = t == IR_I32 ? INT32_MAX : INT64_MAX;
    enum { N = 12 };
    int64_t a[N] = {MIN, MIN, 7, 7, -7, -7, 7, MAX, MIN, 0, MAX, -1};
    int64_t b[N] = {-1, 1, 0, 2, 2, -2, -2, 1, MIN, 5, 2, MIN};
    ctx c;
    ir_func *f = new_func(&c, "ints");
    ir_shape n = SHAPE(ir_dim_sym(ir_func_symbol(f, "N")));
    ir_ref x = ir_add_input(f, "a", t, &n), y = ir_add_input(f, "b", t, &n);
    static const ir_op ops[] = {IR_OP_DIV, IR_OP_MOD, IR_OP_ADD,  IR_OP_SUB,     IR_OP_MUL,
                                IR_OP_NEG, IR_OP_ABS, IR_OP_SIGN, IR_OP_MINIMUM, IR_OP_MAXIMUM};
    enum { NOPS = sizeof ops / sizeof ops[0] };
    for (int o = 0; o < NOPS; o++) {
        ir_ref r = ir_ops[ops[o]].arity == 1 ? unop(f, ops[o], x) : binop(f, ops[o], x, y);
        ir_add_output(f, r, t, &n);
    }
    int32_t a32[N], b32[N], o32[NOPS][N];
    int64_t o64[NOPS][N];
    for (int i = 0; i < N; i++) {
        a32[i] = (int32_t)a[i];
        b32[i] = (int32_t)b[i];
    }
    int64_t dims[1] = {N};
    ir_tensor in[2] = {tensor(t, t == IR_I32 ? (void *)a32 : (void *)a, 1, dims),
                       tensor(t, t == IR_I32 ? (void *)b32 : (void *)b, 1, dims)};
    ir_tensor out[NOPS];
    for (int o = 0; o < NOPS; o++)
        out[o] = tensor(t, t == IR_I32 ? (void *)o32[o] : (void *)o64[o], 1, dims);
    CHECK(run(&c, f, in, out) == 0);
#define GOT(o, i) (t == IR_I32 ? (int64_t)o32[o][i] : o64[o][i])
    /* division */
    CHECK(GOT(0, 0) == MIN); /* MIN / -1 wraps */
    CHECK(GOT(0, 1) == MIN);
    CHECK(GOT(0, 2) == 0); /* by zero */
    CHECK(GOT(0, 3) == 3 && GOT(0, 4) == -3 && GOT(0, 5) == 3 && GOT(0, 6) == -3);
    CHECK(GOT(0, 8) == 1 && GOT(0, 9) == 0 && GOT(0, 11) == 0);
    /* remainder: C's, sign of the dividend */
    CHECK(GOT(1, 0) == 0 && GOT(1, 2) == 0);
    CHECK(GOT(1, 3) == 1 && GOT(1, 4) == -1 && GOT(1, 5) == -1 && GOT(1, 6) == 1);
    CHECK(GOT(1, 11) == -1);
    /* wrap-around */
    CHECK(GOT(2, 7) == MIN); /* MAX + 1 */
    CHECK(GOT(2, 8) == 0);   /* MIN + MIN */
    CHECK(GOT(3, 1) == MAX); /* MIN - 1 */
    CHECK(GOT(4, 10) == -2); /* MAX * 2 */
    CHECK(GOT(4, 0) == MIN); /* MIN * -1 */
    CHECK(GOT(5, 0) == MIN); /* -MIN */
    CHECK(GOT(6, 0) == MIN); /* abs(MIN) */
    CHECK(GOT(6, 4) == 7 && GOT(6, 9) == 0);
    CHECK(GOT(7, 0) == -1 && GOT(7, 9) == 0 && GOT(7, 2) == 1);
    CHECK(GOT(8, 8) == MIN && GOT(8, 7) == 1 && GOT(9, 0) == -1 && GOT(9, 10) == MAX);
#undef GOT
    ir_arena_free(&c.arena);
}

/* ---- f16: intermediates stay unrounded; CAST, STORED and OUTPUT round ------------------- */

static void test_f16_rounding(void) {
    /* y = x * 3 + 0.1 in f16: f16(x*3 + 0.1), not f16(f16(x*3) + 0.1) */
    for (int stored = 0; stored < 2; stored++) {
        ctx c;
        ir_func *f = new_func(&c, "f16");
        ir_shape n = SHAPE(ir_dim_sym(ir_func_symbol(f, "N")));
        ir_ref x = ir_add_input(f, "x", IR_F16, &n);
        ir_ref p = binop(f, IR_OP_MUL, x, ir_const_float(f, IR_F16, 3.0));
        ir_ref y = binop(f, IR_OP_ADD, p, ir_const_float(f, IR_F16, 0.1));
        ir_add_output(f, y, IR_F16, &n);
        ir_add_output(f, ir_cast(f, y, IR_F32), IR_F32, &n);
        if (stored) f->nodes[p].flags |= IR_NODE_STORED;
        enum { N = 4096 };
        uint16_t xs[N], ys[N];
        float y32[N];
        for (int i = 0; i < N; i++)
            xs[i] = (uint16_t)(0x3000 + i); /* 0.125 upwards, every pattern */
        int64_t dims[1] = {N};
        ir_tensor in = tensor(IR_F16, xs, 1, dims);
        ir_tensor out[2] = {tensor(IR_F16, ys, 1, dims), tensor(IR_F32, y32, 1, dims)};
        CHECK(run(&c, f, &in, out) == 0);
        int bad = 0, differs = 0;
        for (int i = 0; i < N; i++) {
            double xv = ir_f16_to_double(xs[i]);
            double once = xv * 3 + 0.1;
            double twice = ir_f16_to_double(ir_f16_from_double(xv * 3)) + 0.1;
            double want = stored ? twice : once;
            if (ys[i] != ir_f16_from_double(want)) bad++;
            if (y32[i] != (float)want) bad++; /* the cast to f32 is of the unrounded value */
            differs += ir_f16_from_double(once) != ir_f16_from_double(twice);
        }
        CHECK(bad == 0);
        CHECK(differs > 0); /* the test tells the two apart */
        ir_arena_free(&c.arena);
    }
}

/* ---- casts ------------------------------------------------------------------------------ */

static void test_casts(void) {
    ctx c;
    ir_func *f = new_func(&c, "casts");
    ir_shape n = SHAPE(ir_dim_sym(ir_func_symbol(f, "N")));
    ir_ref x = ir_add_input(f, "x", IR_F64, &n);
    ir_ref i = ir_add_input(f, "i", IR_I64, &n);
    ir_ref b = ir_add_input(f, "b", IR_BOOL, &n);
    ir_add_output(f, ir_cast(f, x, IR_I32), IR_I32, &n);
    ir_add_output(f, ir_cast(f, x, IR_BOOL), IR_BOOL, &n);
    ir_add_output(f, ir_cast(f, i, IR_BF16), IR_BF16, &n);
    ir_add_output(f, ir_cast(f, i, IR_I32), IR_I32, &n);
    ir_add_output(f, ir_cast(f, b, IR_F32), IR_F32, &n);
    ir_add_output(f, ir_cast(f, ir_cast(f, x, IR_F16), IR_F64), IR_F64, &n);
    ir_add_output(f, ir_cast(f, i, IR_F32), IR_F32, &n);
    enum { N = 6 };
    double xs[N] = {3.7, -3.7, NAN, 3e9, -0.0, 65520.0};
    int64_t is[N] = {(INT64_C(1) << 60) + (INT64_C(1) << 52) + 1,
                     (INT64_C(1) << 60) + (INT64_C(1) << 52),
                     -((INT64_C(1) << 60) + (INT64_C(1) << 52) + 1),
                     INT64_MIN,
                     (INT64_C(1) << 32) + 5,
                     (INT64_C(1) << 40) + (INT64_C(1) << 16) + 1};
    uint8_t bs[N] = {0, 1, 2, 0, 255, 1};
    int32_t o0[N], o3[N];
    uint8_t o1[N];
    uint16_t o2[N];
    float o4[N], o6[N];
    double o5[N];
    int64_t dims[1] = {N};
    ir_tensor in[3] = {tensor(IR_F64, xs, 1, dims), tensor(IR_I64, is, 1, dims),
                       tensor(IR_BOOL, bs, 1, dims)};
    ir_tensor out[7] = {tensor(IR_I32, o0, 1, dims),  tensor(IR_BOOL, o1, 1, dims),
                        tensor(IR_BF16, o2, 1, dims), tensor(IR_I32, o3, 1, dims),
                        tensor(IR_F32, o4, 1, dims),  tensor(IR_F64, o5, 1, dims),
                        tensor(IR_F32, o6, 1, dims)};
    CHECK(run(&c, f, in, out) == 0);
    /* float -> int: truncate, NaN -> 0, out of range saturates */
    CHECK(o0[0] == 3 && o0[1] == -3 && o0[2] == 0 && o0[3] == INT32_MAX);
    CHECK(o0[4] == 0 && o0[5] == 65520);
    CHECK(o1[0] == 1 && o1[1] == 1 && o1[2] == 1 && o1[4] == 0);
    /* i64 -> bf16 rounds once: 2^60 + 2^52 + 1 is past the halfway point 2^60 + 2^52 */
    CHECK(ir_bf16_to_double(o2[0]) == 0x1p60 + 0x1p53);
    CHECK(ir_bf16_to_double(o2[1]) == 0x1p60); /* the tie itself goes to even */
    CHECK(ir_bf16_to_double(o2[2]) == -(0x1p60 + 0x1p53));
    CHECK(ir_bf16_to_double(o2[3]) == -0x1p63);
    CHECK(o3[3] == 0 && o3[4] == 5);
    CHECK(o4[0] == 0.0f && o4[1] == 1.0f && o4[2] == 1.0f && o4[4] == 1.0f);
    CHECK(o5[0] == ir_f16_to_double(ir_f16_from_double(3.7)) && isinf(o5[5]));
    CHECK(signbit(o5[4]) && o5[4] == 0);
    CHECK(o6[5] == (float)is[5] && o6[0] == (float)is[0]);
    ir_arena_free(&c.arena);
}

/* ---- float functions: NaN, signed zeros, rounding, stable sigmoid ----------------------- */

static void test_float_fns(void) {
    ctx c;
    ir_func *f = new_func(&c, "fns");
    ir_shape n = SHAPE(ir_dim_sym(ir_func_symbol(f, "N")));
    ir_ref x = ir_add_input(f, "x", IR_F64, &n);
    ir_ref y = ir_add_input(f, "y", IR_F64, &n);
    ir_ref zero = ir_const_float(f, IR_F64, 0.0), one = ir_const_float(f, IR_F64, 1.0);
    ir_ref outs[] = {
        binop(f, IR_OP_MAXIMUM, x, y),
        binop(f, IR_OP_MINIMUM, x, y),
        ir_ew(f, IR_OP_CLAMP, IR_F64, &n, 3, (ir_ref[]){x, zero, one}),
        unop(f, IR_OP_RELU, x),
        unop(f, IR_OP_SIGN, x),
        unop(f, IR_OP_ROUND, x),
        unop(f, IR_OP_SIGMOID, x),
        binop(f, IR_OP_MOD, x, y),
        unop(f, IR_OP_RSQRT, x),
        binop(f, IR_OP_DIV, x, y),
    };
    enum { NOUT = sizeof outs / sizeof outs[0] };
    for (int i = 0; i < NOUT; i++)
        ir_add_output(f, outs[i], IR_F64, &n);
    ir_ref isn = unop(f, IR_OP_ISNAN, x), isi = unop(f, IR_OP_ISINF, x);
    ir_ref w =
        ir_ew(f, IR_OP_WHERE, IR_F64, &n, 3, (ir_ref[]){binop(f, IR_OP_OR, isn, isi), one, zero});
    ir_add_output(f, w, IR_F64, &n);
    enum { N = 12 };
    double xs[N] = {NAN, 1.0, -0.0, -3.0, 0.5, 1.5, 2.5, -0.5, -2.5, -800.0, 800.0, INFINITY};
    double ys[N] = {1.0, NAN, 0.0, 2.0, 0.0, 1.0, -1.0, 0.25, 0.0, 3.0, -7.0, 2.0};
    double o[NOUT + 1][N];
    int64_t dims[1] = {N};
    ir_tensor in[2] = {tensor(IR_F64, xs, 1, dims), tensor(IR_F64, ys, 1, dims)};
    ir_tensor out[NOUT + 1];
    for (int i = 0; i <= NOUT; i++)
        out[i] = tensor(IR_F64, o[i], 1, dims);
    CHECK(run(&c, f, in, out) == 0);
    CHECK(isnan(o[0][0]) && isnan(o[0][1]) && isnan(o[1][0]) && isnan(o[1][1]));
    CHECK(o[0][3] == 2.0 && o[1][3] == -3.0);
    CHECK(isnan(o[2][0]) && o[2][3] == 0.0 && o[2][1] == 1.0 && o[2][4] == 0.5 && o[2][11] == 1.0);
    CHECK(isnan(o[3][0]) && o[3][3] == 0.0 && !signbit(o[3][2]) && o[3][2] == 0.0);
    CHECK(o[3][1] == 1.0 && o[3][11] == INFINITY);
    CHECK(isnan(o[4][0]) && o[4][2] == 0.0 && o[4][3] == -1.0 && o[4][1] == 1.0);
    /* half to even */
    CHECK(o[5][4] == 0.0 && o[5][5] == 2.0 && o[5][6] == 2.0 && o[5][7] == 0.0 &&
          signbit(o[5][7]) && o[5][8] == -2.0 && o[5][1] == 1.0);
    /* sigmoid: no inf/inf at either end */
    CHECK(o[6][9] >= 0.0 && o[6][9] < 1e-300 && o[6][10] == 1.0);
    CHECK(close_to(o[6][3], 1.0 / (1.0 + exp(3.0)), 1e-15));
    CHECK(isnan(o[6][0]));
    CHECK(o[7][3] == fmod(-3.0, 2.0) && isnan(o[7][4]) && o[7][7] == 0.0);
    CHECK(o[8][4] == 1.0 / sqrt(0.5) && isnan(o[8][3]) && o[8][2] == -INFINITY);
    CHECK(o[9][4] == INFINITY && isnan(o[9][2]));
    CHECK(o[NOUT][0] == 1.0 && o[NOUT][11] == 1.0 && o[NOUT][1] == 0.0);
    ir_arena_free(&c.arena);
}

/* ---- broadcasting, rank-0 operands, scalar reductions ----------------------------------- */

static void test_broadcast(void) {
    ctx c;
    ir_func *f = new_func(&c, "bc");
    ir_dim R = ir_dim_sym(ir_func_symbol(f, "R")), C = ir_dim_sym(ir_func_symbol(f, "C"));
    ir_shape r1 = SHAPE(R, ir_dim_lit(1)), cs = SHAPE(C), rc = SHAPE(R, C), sc = {0};
    ir_shape brc = SHAPE(ir_dim_lit(2), R, C);
    ir_ref a = ir_add_input(f, "a", IR_I32, &r1);
    ir_ref b = ir_add_input(f, "b", IR_I32, &cs);
    ir_ref s = ir_add_input(f, "s", IR_I32, &sc);
    ir_ref sum = binop(f, IR_OP_ADD, ir_broadcast(f, a, &rc), ir_broadcast(f, b, &rc));
    ir_ref big = binop(f, IR_OP_MUL, ir_broadcast(f, sum, &brc),
                       ir_broadcast(f, ir_reduce(f, IR_OP_SUM, s, 0, IR_I32), &brc));
    ir_add_output(f, big, IR_I32, &brc);
    enum { NR = 3, NC = 4 };
    int32_t as[NR] = {100, 200, 300}, bs[NC] = {1, 2, 3, 4}, ss = -2, o[2 * NR * NC];
    int64_t da[2] = {NR, 1}, db[1] = {NC}, dout[3] = {2, NR, NC};
    ir_tensor in[3] = {tensor(IR_I32, as, 2, da), tensor(IR_I32, bs, 1, db),
                       tensor(IR_I32, &ss, 0, NULL)};
    ir_tensor out = tensor(IR_I32, o, 3, dout);
    CHECK(run(&c, f, in, &out) == 0);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < NR; i++)
            for (int j = 0; j < NC; j++)
                CHECK(o[(k * NR + i) * NC + j] == (as[i] + bs[j]) * -2);
    ir_arena_free(&c.arena);
}

/* ---- empty axes, and errors at launch --------------------------------------------------- */

static void test_empty_and_errors(void) {
    ctx c;
    ir_func *f = new_func(&c, "empty");
    ir_dim R = ir_dim_sym(ir_func_symbol(f, "R")), N = ir_dim_sym(ir_func_symbol(f, "N"));
    ir_shape rn = SHAPE(R, N), r1 = SHAPE(R, ir_dim_lit(1)), r = SHAPE(R);
    ir_ref x = ir_add_input(f, "x", IR_F32, &rn);
    ir_ref bb = ir_add_input(f, "b", IR_F32, &r);
    ir_add_output(f, ir_reduce(f, IR_OP_SUM, x, 2, IR_F32), IR_F32, &r1);
    ir_add_output(f, ir_reduce(f, IR_OP_PROD, x, 2, IR_F32), IR_F32, &r);
    ir_add_output(f, ir_reduce(f, IR_OP_MEAN, x, 2, IR_F32), IR_F32, &r1);
    ir_add_output(f, bb, IR_F32, &r);
    float o[3][2], ob[2], dummy = 0;
    int64_t dx[2] = {2, 0}, dr1[2] = {2, 1}, dr[1] = {2};
    ir_tensor in[2] = {tensor(IR_F32, &dummy, 2, dx), tensor(IR_F32, ob, 1, dr)};
    ob[0] = 1;
    ob[1] = 2;
    ir_tensor out[4] = {tensor(IR_F32, o[0], 2, dr1), tensor(IR_F32, o[1], 1, dr),
                        tensor(IR_F32, o[2], 2, dr1), tensor(IR_F32, ob, 1, dr)};
    CHECK(run(&c, f, in, out) == 0);
    CHECK(o[0][0] == 0 && o[0][1] == 0 && o[1][0] == 1 && o[1][1] == 1);
    CHECK(isnan(o[2][0]) && isnan(o[2][1]));

    /* shapes at launch */
    int64_t bad1[1] = {2};
    in[0] = tensor(IR_F32, &dummy, 1, bad1);
    CHECK(ir_interp_run(f, in, out, c.err, sizeof c.err) == -1);
    CHECK_STR(c.err, "parameter 'x': expected rank 2, got rank 1");
    int64_t d3[1] = {3};
    in[0] = tensor(IR_F32, &dummy, 2, dx);
    in[1] = tensor(IR_F32, ob, 1, d3);
    CHECK(ir_interp_run(f, in, out, c.err, sizeof c.err) == -1);
    CHECK_STR(c.err, "parameter 'b': dim 0 is 3 but R is already 2 (from parameter 'x')");
    int64_t dneg[2] = {-1, 0};
    in[0] = tensor(IR_F32, &dummy, 2, dneg);
    CHECK(ir_interp_run(f, in, out, c.err, sizeof c.err) == -1);
    CHECK_STR(c.err, "parameter 'x': dim 0 is negative (-1)");
    in[0] = tensor(IR_F32, &dummy, 2, dx);
    in[1] = tensor(IR_F32, ob, 1, dr);
    int64_t wrong[1] = {3};
    out[1] = tensor(IR_F32, o[1], 1, wrong);
    CHECK(ir_interp_run(f, in, out, c.err, sizeof c.err) == -1);
    CHECK_STR(c.err, "output 1: expected shape [2], got [3]");
    out[1] = tensor(IR_F64, o[1], 1, dr);
    CHECK(ir_interp_run(f, in, out, c.err, sizeof c.err) == -1);
    CHECK_STR(c.err, "output 1: expected f32, got f64");
    out[1] = tensor(IR_F32, o[1], 1, dr);
    in[1].dtype = IR_F16;
    CHECK(ir_interp_run(f, in, out, c.err, sizeof c.err) == -1);
    CHECK_STR(c.err, "parameter 'b': expected f32, got f16");
    in[1].dtype = IR_F32;
    CHECK(ir_interp_run(f, in, out, c.err, sizeof c.err) == 0);
    /* a malformed function is refused, not run */
    f->nodes[2].axes = 0;
    CHECK(ir_interp_run(f, in, out, c.err, sizeof c.err) == -1);
    CHECK_STR(c.err, "%2: sum reduces no axis");
    ir_arena_free(&c.arena);

    /* literal dims must match; max over an empty axis is an error */
    f = new_func(&c, "mx");
    ir_shape l4 = SHAPE(ir_dim_lit(4), ir_dim_sym(ir_func_symbol(f, "N")));
    ir_shape l41 = SHAPE(ir_dim_lit(4), ir_dim_lit(1));
    x = ir_add_input(f, "x", IR_F32, &l4);
    ir_add_output(f, ir_reduce(f, IR_OP_MAX, x, 2, IR_F32), IR_F32, &l41);
    int64_t d43[2] = {4, 3}, d40[2] = {4, 0}, d41[2] = {4, 1};
    float xs[12] = {1, 2, 3, 4, NAN, 5, 6, 7, 8, -1, -2, -3}, mo[4];
    in[0] = tensor(IR_F32, xs, 2, d43);
    out[0] = tensor(IR_F32, mo, 2, d41);
    CHECK(run(&c, f, in, out) == 0);
    CHECK(mo[0] == 3 && isnan(mo[1]) && mo[2] == 8 && mo[3] == -1);
    int64_t d33[2] = {3, 3};
    in[0] = tensor(IR_F32, xs, 2, d33);
    CHECK(ir_interp_run(f, in, out, c.err, sizeof c.err) == -1);
    CHECK_STR(c.err, "parameter 'x': dim 0 must be 4, got 3");
    in[0] = tensor(IR_F32, xs, 2, d40);
    CHECK(ir_interp_run(f, in, out, c.err, sizeof c.err) == -1);
    CHECK_STR(c.err, "max over an empty axis");
    ir_arena_free(&c.arena);
}

/* ---- storage dtypes of inputs: bf16 bits, bool bytes, sums of bool ---------------------- */

static void test_storage_inputs(void) {
    ctx c;
    ir_func *f = new_func(&c, "store");
    ir_shape n = SHAPE(ir_dim_sym(ir_func_symbol(f, "N"))), sc = {0};
    ir_ref x = ir_add_input(f, "x", IR_BF16, &n);
    ir_ref b = ir_add_input(f, "b", IR_BOOL, &n);
    ir_ref s = ir_reduce(f, IR_OP_SUM, b, 1, IR_I64);
    ir_add_output(f, s, IR_I64, &sc);
    ir_ref xs = ir_reduce(f, IR_OP_SUM, x, 1, IR_BF16);
    ir_add_output(f, xs, IR_BF16, &sc);
    ir_ref nb = unop(f, IR_OP_NOT, b);
    ir_add_output(f, nb, IR_BOOL, &n);
    enum { N = 5 };
    uint16_t xv[N] = {0x3f80, 0x3f81, 0x3f81, 0x3f81, 0x3f81}; /* 1 and 4 x (1 + 2^-7) */
    uint8_t bv[N] = {1, 0, 7, 255, 1}, nbv[N];
    int64_t cnt;
    uint16_t xsum;
    int64_t dims[1] = {N};
    ir_tensor in[2] = {tensor(IR_BF16, xv, 1, dims), tensor(IR_BOOL, bv, 1, dims)};
    ir_tensor out[3] = {tensor(IR_I64, &cnt, 0, NULL), tensor(IR_BF16, &xsum, 0, NULL),
                        tensor(IR_BOOL, nbv, 1, dims)};
    CHECK(run(&c, f, in, out) == 0);
    CHECK(cnt == 4);
    CHECK(xsum == ir_bf16_from_double(5 + 4 * 0x1p-7)); /* one rounding of the exact sum */
    CHECK(nbv[0] == 0 && nbv[1] == 1 && nbv[2] == 0 && nbv[3] == 0);
    ir_arena_free(&c.arena);
}

/* ---- the reference sum is compensated: accurate whatever the order and the length ------- */

static void test_sum_accuracy(void) {
    ctx c;
    ir_func *f = new_func(&c, "acc");
    ir_shape n = SHAPE(ir_dim_sym(ir_func_symbol(f, "N"))), sc = {0};
    ir_ref x = ir_add_input(f, "x", IR_F64, &n);
    ir_add_output(f, ir_reduce(f, IR_OP_SUM, x, 1, IR_F64), IR_F64, &sc);
    ir_add_output(f, ir_reduce(f, IR_OP_MEAN, x, 1, IR_F64), IR_F64, &sc);
    double xs[5] = {1e16, 1.0, -1e16, 1.0, 1.0}, sum = 0, mean = 0;
    int64_t dims[1] = {5};
    ir_tensor in = tensor(IR_F64, xs, 1, dims);
    ir_tensor out[2] = {tensor(IR_F64, &sum, 0, NULL), tensor(IR_F64, &mean, 0, NULL)};
    CHECK(run(&c, f, &in, out) == 0);
    CHECK(sum == 3.0 && mean == 0.6); /* one running total gives 2 */
    xs[1] = INFINITY;
    CHECK(run(&c, f, &in, out) == 0);
    CHECK(sum == INFINITY);
    xs[3] = -INFINITY;
    CHECK(run(&c, f, &in, out) == 0);
    CHECK(isnan(sum));
    ir_arena_free(&c.arena);
}

/* ---- a long chain over a large tensor: values are freed as they die --------------------- */

static void test_large(void) {
    ctx c;
    ir_func *f = new_func(&c, "chain");
    ir_shape n = SHAPE(ir_dim_sym(ir_func_symbol(f, "N"))), sc = {0};
    ir_ref x = ir_add_input(f, "x", IR_F32, &n);
    ir_ref v = x;
    ir_ref one = ir_const_float(f, IR_F32, 1.0);
    for (int i = 0; i < 200; i++)
        v = binop(f, IR_OP_ADD, v, one);
    ir_add_output(f, ir_reduce(f, IR_OP_SUM, v, 1, IR_F32), IR_F32, &sc);
    enum { N = 1 << 18 }; /* 1 MB a value: 200 MB if values died late */
    float *xs = calloc(N, sizeof(float)), sum = 0;
    int64_t dims[1] = {N};
    ir_tensor in = tensor(IR_F32, xs, 1, dims), out = tensor(IR_F32, &sum, 0, NULL);
    CHECK(run(&c, f, &in, &out) == 0);
    CHECK(sum == 200.0f * N);
    /* element counts that overflow are refused, not allocated */
    int64_t huge[1] = {INT64_C(1) << 62};
    in = tensor(IR_F32, xs, 1, huge);
    CHECK(ir_interp_run(f, &in, &out, c.err, sizeof c.err) == -1);
    CHECK(strstr(c.err, "too large") != NULL);
    free(xs);
    ir_arena_free(&c.arena);
}

int main(void) {
    test_gelu();
    test_softmax();
    test_reductions();
    test_int_ops(IR_I32);
    test_int_ops(IR_I64);
    test_f16_rounding();
    test_casts();
    test_float_fns();
    test_broadcast();
    test_empty_and_errors();
    test_storage_inputs();
    test_sum_accuracy();
    test_large();
    return check_exit("test_interp");
}
