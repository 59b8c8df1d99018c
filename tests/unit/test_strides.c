/* tests/unit/test_strides.c: inputs with strides (SPEC §3: any strides, in elements, any sign;
 * results dense), on every target this machine has, fused and --no-fuse, by launch and by
 * plan: each call on a strided view against the same call on a dense copy of that view made
 * here, on the same target. The views are those numpy and PyTorch hand over: transposed,
 * sliced with steps, reversed, every other element of an interleaved array, broadcast (stride
 * 0) along one axis or all, and dense strides given explicitly; the functions read them in
 * each kernel kind (pointwise, row and column reductions) and in each element size (bool,
 * f16, f32, i64, f64). Then what a careless caller gets: strided results, strides that
 * reach past any memory, a result over a strided input's span, a plan re-bound to other
 * strides. */
#include "fusec.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"

static const char *SRC =
    "fn pw(x: f32[R, C], y: f32[R, C]) -> f32[R, C] {\n"
    "    return x * 2.0 + y;\n"
    "}\n"
    "fn rows(x: f32[R, C]) -> f32[R] {\n"
    "    return sum(exp(x), axis=1);\n"
    "}\n"
    "fn cols(x: f32[R, C], y: f32[R, C]) -> f32[C] {\n"
    "    return max(x - y, axis=0);\n"
    "}\n"
    "fn mixed(a: i64[R, C], b: f16[R, C], c: bool[R, C], d: f64[R, C]) -> f64[R, C] {\n"
    "    return where(c, f64(a), d) + f64(b);\n"
    "}\n";

#define R 37
#define C 53

/* A view of shape [R, C]: element (i, j) at base[off + i * s0 + j * s1], base `elems` long. */
typedef struct layout {
    const char *name;
    int64_t elems, off, s[2];
} layout;

static const layout LAYOUTS[] = {
    {"dense strides given", R *C, 0, {C, 1}},
    {"transposed", C *R, 0, {1, R}},
    {"sliced [::2, 1::3]", 2 * R * 3 * C, 1, {6 * C, 3}},
    {"reversed [::-1, ::-1]", R *C, R *C - 1, {-C, -1}},
    {"every other (interleaved)", R *C * 2, 1, {2 * C, 2}},
    {"broadcast rows (stride 0)", C, 0, {0, 1}},
    {"broadcast reversed column", R, R - 1, {-1, 0}},
    {"broadcast one element", 1, 0, {0, 0}},
};
#define NLAYOUTS (int)(sizeof LAYOUTS / sizeof LAYOUTS[0])

static uint32_t rng = 777;

/* A random value of each dtype that is never NaN, never 0 where that matters (bool: 0/1). */
static void random_elem(fusec_dtype dt, void *p) {
    float f = api_frand(&rng, 2);
    switch (dt) {
    case FUSEC_BOOL: *(uint8_t *)p = f > 0; break;
    case FUSEC_F16: { /* a normal half: exponent 12..18, any mantissa and sign */
        rng = rng * 1664525u + 1013904223u;
        uint16_t h =
            (uint16_t)(((rng >> 31) << 15) | ((12 + (rng >> 8) % 7) << 10) | ((rng >> 12) & 0x3ff));
        memcpy(p, &h, 2);
        break;
    }
    case FUSEC_F32: memcpy(p, &f, 4); break;
    case FUSEC_I64: {
        int64_t v = (int64_t)(f * 1000);
        memcpy(p, &v, 8);
        break;
    }
    case FUSEC_F64: {
        double d = f;
        memcpy(p, &d, 8);
        break;
    }
    default: CHECK(0);
    }
}

static size_t esize(fusec_dtype dt) {
    return dt == FUSEC_BOOL ? 1 : dt == FUSEC_F16 ? 2 : dt == FUSEC_F32 ? 4 : 8;
}

/* One argument on the target: its base buffer (the strided view's) and a dense copy of the
 * view, both from the same random base. */
typedef struct arg {
    fusec_dtype dt;
    const layout *l;
    void *base, *dense; /* on the target */
    fusec_tensor view, copy;
} arg;

static fusec_tensor tensor(void *d, fusec_dtype dt, const int64_t *strides) {
    static const int64_t shape[2] = {R, C};
    return api_tensor(d, dt, 2, shape, strides);
}

static void arg_make(fusec_module *m, arg *a, fusec_dtype dt, const layout *l) {
    size_t es = esize(dt);
    unsigned char *base = malloc((size_t)l->elems * es), *dense = malloc((size_t)R * C * es);
    for (int64_t i = 0; i < l->elems; i++)
        random_elem(dt, base + i * (int64_t)es);
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++)
            memcpy(dense + (i * C + j) * (int64_t)es,
                   base + (l->off + i * l->s[0] + j * l->s[1]) * (int64_t)es, es);
    a->dt = dt;
    a->l = l;
    CHECK(fusec_memory_alloc(m, (size_t)l->elems * es, &a->base) == FUSEC_OK);
    CHECK(fusec_memory_upload(m, a->base, base, (size_t)l->elems * es) == FUSEC_OK);
    CHECK(fusec_memory_alloc(m, (size_t)R * C * es, &a->dense) == FUSEC_OK);
    CHECK(fusec_memory_upload(m, a->dense, dense, (size_t)R * C * es) == FUSEC_OK);
    a->view = tensor((char *)a->base + l->off * (int64_t)es, dt, l->s);
    a->copy = tensor(a->dense, dt, NULL);
    free(base);
    free(dense);
}

static void arg_free(fusec_module *m, arg *a) {
    fusec_memory_free(m, a->base);
    fusec_memory_free(m, a->dense);
}

/* The result of f (one, of `n` elements of dtype rdt, rank and shape as given). */
typedef struct result {
    fusec_dtype dt;
    int rank;
    int64_t shape[2], n;
} result;

static fusec_tensor result_tensor(void *d, const result *r) {
    return api_tensor(d, r->dt, r->rank, r->shape, NULL);
}

/* Both downloaded results agree: to a few ulps (a strided input's temporary may be aligned
 * otherwise than the dense copy, and a reduction's order follow). */
static void compare(fusec_module *m, const result *r, void *want_d, void *got_d, const char *what) {
    size_t bytes = (size_t)r->n * esize(r->dt);
    unsigned char *want = malloc(bytes), *got = malloc(bytes);
    CHECK(fusec_memory_download(m, want, want_d, bytes) == FUSEC_OK);
    CHECK(fusec_memory_download(m, got, got_d, bytes) == FUSEC_OK);
    int bad = 0;
    for (int64_t i = 0; i < r->n && !bad; i++) {
        double w = r->dt == FUSEC_F32 ? ((float *)want)[i] : ((double *)want)[i];
        double g = r->dt == FUSEC_F32 ? ((float *)got)[i] : ((double *)got)[i];
        if (!(fabs(w - g) <= 1e-5 * (fabs(w) + 1))) {
            CHECK_MSG(0, "%s: element %lld is %g, the dense copy gives %g", what, (long long)i, g,
                      w);
            bad = 1;
        }
    }
    free(want);
    free(got);
}

/* NaN bytes over a result, so an unwritten element shows */
static void poison(fusec_module *m, void *d, size_t bytes) {
    void *h = malloc(bytes);
    memset(h, 0xff, bytes);
    CHECK(fusec_memory_upload(m, d, h, bytes) == FUSEC_OK);
    free(h);
}

/* f on the views of args against f on their dense copies: by launch, by a plan, and by the
 * plan re-bound to a second set of views with the same strides. */
static void run_case(fusec_module *m, const char *fn, arg *args, int nargs, const result *r,
                     const char *tag) {
    fusec_function *f = api_fn(m, fn);
    fusec_tensor views[4], copies[4];
    for (int i = 0; i < nargs; i++) {
        views[i] = args[i].view;
        copies[i] = args[i].copy;
    }
    size_t bytes = (size_t)r->n * esize(r->dt);
    void *want_d = NULL, *got_d = NULL;
    CHECK(fusec_memory_alloc(m, bytes, &want_d) == FUSEC_OK);
    CHECK(fusec_memory_alloc(m, bytes, &got_d) == FUSEC_OK);
    poison(m, got_d, bytes);
    fusec_tensor want = result_tensor(want_d, r), got = result_tensor(got_d, r);
    char what[256];
    snprintf(what, sizeof what, "%s %s (%s)", tag, fn, args[0].l->name);
    CHECK_MSG(fusec_launch(f, copies, nargs, &want, 1, NULL) == FUSEC_OK, "%s: %s", what,
              fusec_module_message(m));
    CHECK_MSG(fusec_launch(f, views, nargs, &got, 1, NULL) == FUSEC_OK, "%s: %s", what,
              fusec_module_message(m));
    CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
    compare(m, r, want_d, got_d, what);

    /* a plan of the views, then re-bound to other views of the same strides */
    poison(m, got_d, bytes);
    fusec_plan *p = NULL;
    CHECK_MSG(fusec_plan_create(f, views, nargs, &got, 1, NULL, &p) == FUSEC_OK, "%s plan: %s",
              what, fusec_module_message(m));
    if (p) {
        CHECK(fusec_plan_launch(p, NULL) == FUSEC_OK);
        CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
        snprintf(what, sizeof what, "%s %s (%s, plan)", tag, fn, args[0].l->name);
        compare(m, r, want_d, got_d, what);
        arg other[4];
        fusec_tensor oviews[4], ocopies[4];
        for (int i = 0; i < nargs; i++) {
            arg_make(m, &other[i], args[i].dt, args[i].l);
            oviews[i] = other[i].view;
            ocopies[i] = other[i].copy;
        }
        CHECK(fusec_launch(f, ocopies, nargs, &want, 1, NULL) == FUSEC_OK);
        CHECK_MSG(fusec_plan_rebind(p, oviews, nargs, &got, 1) == FUSEC_OK, "%s rebind: %s", what,
                  fusec_module_message(m));
        CHECK(fusec_plan_launch(p, NULL) == FUSEC_OK);
        CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
        snprintf(what, sizeof what, "%s %s (%s, plan re-bound)", tag, fn, args[0].l->name);
        compare(m, r, want_d, got_d, what);
        /* other strides: a new plan, not a re-bound one */
        if (args[0].l->s[1] != 1 || args[0].l->s[0] != C) {
            fusec_status st = fusec_plan_rebind(p, ocopies, nargs, &got, 1);
            CHECK_MSG(st == FUSEC_ERR_SHAPE && strstr(fusec_module_message(m), "strides"),
                      "%s: re-bound to dense inputs: %s", what, fusec_module_message(m));
        }
        for (int i = 0; i < nargs; i++)
            arg_free(m, &other[i]);
        fusec_plan_free(p);
    }
    fusec_memory_free(m, want_d);
    fusec_memory_free(m, got_d);
}

static void test_layouts(fusec_module *m, const char *tag) {
    result full = {FUSEC_F32, 2, {R, C}, R * C}, per_row = {FUSEC_F32, 1, {R, 0}, R},
           per_col = {FUSEC_F32, 1, {C, 0}, C}, mixed = {FUSEC_F64, 2, {R, C}, R * C};
    for (int l = 0; l < NLAYOUTS; l++) {
        const layout *a = &LAYOUTS[l], *b = &LAYOUTS[(l + 3) % NLAYOUTS];
        arg two[2], four[4];
        arg_make(m, &two[0], FUSEC_F32, a);
        arg_make(m, &two[1], FUSEC_F32, b);
        run_case(m, "pw", two, 2, &full, tag);
        run_case(m, "rows", two, 1, &per_row, tag);
        run_case(m, "cols", two, 2, &per_col, tag);
        arg_free(m, &two[0]);
        arg_free(m, &two[1]);
        fusec_dtype dts[4] = {FUSEC_I64, FUSEC_F16, FUSEC_BOOL, FUSEC_F64};
        for (int i = 0; i < 4; i++)
            arg_make(m, &four[i], dts[i], i == 3 ? b : a);
        run_case(m, "mixed", four, 4, &mixed, tag);
        for (int i = 0; i < 4; i++)
            arg_free(m, &four[i]);
    }
}

/* Strided results, strides past any memory, a result over a strided input's span. */
static void test_refusals(fusec_module *m, const char *tag) {
    fusec_function *f = api_fn(m, "pw");
    arg x, y;
    arg_make(m, &x, FUSEC_F32, &LAYOUTS[2]); /* sliced: its span has gaps */
    arg_make(m, &y, FUSEC_F32, &LAYOUTS[0]);
    void *out_d = NULL;
    CHECK(fusec_memory_alloc(m, (size_t)R * C * 4, &out_d) == FUSEC_OK);
    fusec_tensor in[2] = {x.view, y.copy};
    int64_t trans[2] = {1, R};
    fusec_tensor out = tensor(out_d, FUSEC_F32, trans);
    fusec_status st = fusec_launch(f, in, 2, &out, 1, NULL);
    CHECK_MSG(st == FUSEC_ERR_INVALID_ARGUMENT && strstr(fusec_module_message(m), "dense"),
              "%s: a transposed result: %d %s", tag, st, fusec_module_message(m));
    int64_t dense[2] = {C, 1}; /* dense strides given for a result: fine */
    out.strides = dense;
    CHECK_MSG(fusec_launch(f, in, 2, &out, 1, NULL) == FUSEC_OK, "%s: %s", tag,
              fusec_module_message(m));
    out.strides = NULL;
    int64_t huge[2] = {INT64_MAX / 4, 1};
    in[0].strides = huge;
    st = fusec_launch(f, in, 2, &out, 1, NULL);
    CHECK_MSG(st == FUSEC_ERR_INVALID_ARGUMENT && strstr(fusec_module_message(m), "strides"),
              "%s: strides past any memory: %d %s", tag, st, fusec_module_message(m));
    /* the result inside the sliced input's span, in one of its gaps */
    in[0] = x.view;
    out.data = (char *)x.base + 4 * 3 * C;
    st = fusec_launch(f, in, 2, &out, 1, NULL);
    CHECK_MSG(st == FUSEC_ERR_INVALID_ARGUMENT, "%s: a result over a strided input: %d %s", tag, st,
              fusec_module_message(m));
    CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
    fusec_memory_free(m, out_d);
    arg_free(m, &x);
    arg_free(m, &y);
}

static void test_target(fusec_target t, const char *name, int no_fuse) {
    fusec_module *m = api_compile(SRC, t, no_fuse, NULL, 1);
    if (!m) return;
    char tag[64];
    snprintf(tag, sizeof tag, "%s%s", name, no_fuse ? " --no-fuse" : "");
    test_layouts(m, tag);
    test_refusals(m, tag);
    fusec_module_free(m);
}

int main(void) {
    api_each_target(test_target);
    return check_exit("test_strides");
}
