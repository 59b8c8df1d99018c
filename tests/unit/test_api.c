/* tests/unit/test_api.c: the public API's contract on every target this machine has (the
 * reference interpreter always, the CPU backend when built, CUDA when a GPU is present):
 * tensor descriptors checked before anything runs (a status and a message naming the
 * parameter, results left untouched), plans (launch, re-bind, refusal of new shapes),
 * target memory, bench results; and without a GPU, every CUDA entry point failing cleanly
 * with FUSEC_ERR_NO_DEVICE. */
#include "fusec.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"
#include "runtime/cuda/cuda_driver.h"

static const char *SRC = "fn axpy(a: f32[], x: f32[N], y: f32[N]) -> f32[N] { return a * x + y; }\n"
                         "fn rows(x: f32[R, C], b: f32[C]) -> (f32[R, C], f32[R]) {\n"
                         "    let z = x + b;\n"
                         "    return z, sum(z, axis=1);\n"
                         "}\n"
                         "fn outer(a: f32[A, 1], b: f32[B]) -> f32[] { return sum(a * b); }\n";

#define N 1001
#define R 37
#define C 101

static fusec_module *compile(fusec_target t, const char *arch) {
    return api_compile(SRC, t, 0, arch, 0);
}

static fusec_function *fn(fusec_module *m, const char *name) {
    return api_fn(m, name);
}

static fusec_tensor tensor(void *data, fusec_dtype t, int rank, int64_t d0, int64_t d1) {
    fusec_tensor x = {data, t, rank, {d0, d1}, NULL};
    return x;
}

static uint32_t rng = 777;
static float frand(void) {
    return api_frand(&rng, 2.0f);
}

/* Host data in the target's memory and back. */
static void *to_target(fusec_module *m, const void *host, size_t bytes) {
    void *p = NULL;
    CHECK_MSG(fusec_memory_alloc(m, bytes, &p) == FUSEC_OK, "%s", fusec_module_message(m));
    CHECK(fusec_memory_upload(m, p, host, bytes) == FUSEC_OK);
    return p;
}

static void from_target(fusec_module *m, void *host, const void *dev, size_t bytes) {
    CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
    CHECK_MSG(fusec_memory_download(m, host, dev, bytes) == FUSEC_OK, "%s",
              fusec_module_message(m));
}

static int all_poison(const float *v, int n) {
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], sizeof u);
        if (u != 0xffffffffu) return 0;
    }
    return 1;
}

/* A launch of f that must fail with status `want` and a message holding `needle`. */
#define REFUSED(call, want, needle)                                                                \
    do {                                                                                           \
        fusec_status st_ = (call);                                                                 \
        CHECK_MSG(st_ == (want) && strstr(fusec_module_message(m), (needle)) != NULL,              \
                  "%s: status %d, message %s", #call, (int)st_, fusec_module_message(m));          \
    } while (0)

/* Buffers that cannot be run on: no data, sizes past any memory, results overlapping other
 * buffers (SPEC §3: only the very buffer of an input of the same dtype and shape). */
static void test_bad_buffers(fusec_module *m, fusec_function *f, const fusec_tensor *in,
                             fusec_tensor res, void *dx) {
    fusec_tensor bad[3], r = res;
    memcpy(bad, in, sizeof bad);
    bad[1].data = NULL;
    REFUSED(fusec_launch(f, bad, 3, &res, 1, NULL), FUSEC_ERR_INVALID_ARGUMENT,
            "parameter 'x': no data");
    r.data = NULL;
    REFUSED(fusec_launch(f, in, 3, &r, 1, NULL), FUSEC_ERR_INVALID_ARGUMENT, "result 0: no data");
    r.data = (char *)res.data + 2; /* half way into an element */
    REFUSED(fusec_launch(f, in, 3, &r, 1, NULL), FUSEC_ERR_INVALID_ARGUMENT, "result 0: data at");
    /* element counts, or byte sizes, past int64 */
    int64_t huge[] = {INT64_MAX, INT64_C(1) << 62, INT64_C(1) << 60};
    for (int k = 0; k < 3; k++) {
        memcpy(bad, in, sizeof bad);
        bad[1].shape[0] = bad[2].shape[0] = r.shape[0] = huge[k];
        r.data = res.data;
        REFUSED(fusec_launch(f, bad, 3, &r, 1, NULL), FUSEC_ERR_SHAPE, "too large");
    }
    /* a result one element into x, and a result that is x's buffer seen as another dtype */
    r = res;
    r.data = (char *)dx + sizeof(float);
    REFUSED(fusec_launch(f, in, 3, &r, 1, NULL), FUSEC_ERR_INVALID_ARGUMENT,
            "result 0 overlaps parameter 'x'");
    r.data = (char *)dx + sizeof(float) * (N - 1); /* x's last element and past it */
    REFUSED(fusec_launch(f, in, 3, &r, 1, NULL), FUSEC_ERR_INVALID_ARGUMENT,
            "result 0 overlaps parameter 'x'");
    /* in place: x, y and the result one buffer (a copy of x), giving (a + 1) * x */
    float a = 0, xs[N], got[N];
    from_target(m, &a, in[0].data, sizeof a);
    from_target(m, xs, dx, sizeof xs);
    void *t = to_target(m, xs, sizeof xs);
    memcpy(bad, in, sizeof bad);
    bad[1].data = bad[2].data = r.data = t;
    CHECK_MSG(fusec_launch(f, bad, 3, &r, 1, NULL) == FUSEC_OK, "%s", fusec_module_message(m));
    from_target(m, got, t, sizeof got);
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += fabsf(got[i] - (a + 1) * xs[i]) > 1e-6f * (1 + fabsf(got[i]));
    CHECK_MSG(wrong == 0, "in place: %d wrong values", wrong);
    CHECK(fusec_memory_free(m, t) == FUSEC_OK);
}

/* Arguments that memory could hold whose product could not: a * b of [2^30, 1] and [2^30] is
 * 2^60 elements, which no kernel may walk (the sizes of every value, not only the arguments',
 * are checked before anything runs). */
static void test_big_value(fusec_module *m) {
    fusec_function *f = fn(m, "outer");
    static float a[4], b[4], s[1];
    void *da = to_target(m, a, sizeof a), *db = to_target(m, b, sizeof b),
         *ds = to_target(m, s, sizeof s);
    int64_t big = INT64_C(1) << 30;
    fusec_tensor in[2] = {tensor(da, FUSEC_F32, 2, big, 1), tensor(db, FUSEC_F32, 1, big, 0)};
    fusec_tensor out = tensor(ds, FUSEC_F32, 0, 0, 0);
    REFUSED(fusec_launch(f, in, 2, &out, 1, NULL), FUSEC_ERR_SHAPE,
            "would compute a value too large for memory");
    void *ps[] = {da, db, ds};
    for (int i = 0; i < 3; i++)
        CHECK(fusec_memory_free(m, ps[i]) == FUSEC_OK);
}

/* A row reduction at shapes past any memory, and results overlapping each other. */
static void test_bad_rows(fusec_module *m) {
    fusec_function *f = fn(m, "rows");
    static float x[R * C], b[C], z[R * C], s[R];
    void *dx = to_target(m, x, sizeof x), *db = to_target(m, b, sizeof b),
         *dz = to_target(m, z, sizeof z), *ds = to_target(m, s, sizeof s);
    int64_t big = INT64_C(1) << 32;
    fusec_tensor in[2] = {tensor(dx, FUSEC_F32, 2, big, big), tensor(db, FUSEC_F32, 1, big, 0)};
    fusec_tensor out[2] = {tensor(dz, FUSEC_F32, 2, big, big), tensor(ds, FUSEC_F32, 1, big, 0)};
    REFUSED(fusec_launch(f, in, 2, out, 2, NULL), FUSEC_ERR_SHAPE, "too large");
    fusec_plan *p = NULL;
    REFUSED(fusec_plan_create(f, in, 2, out, 2, NULL, &p), FUSEC_ERR_SHAPE, "too large");
    CHECK(p == NULL);
    in[0] = tensor(dx, FUSEC_F32, 2, R, C);
    in[1] = tensor(db, FUSEC_F32, 1, C, 0);
    out[0] = tensor(dz, FUSEC_F32, 2, R, C);
    out[1] = tensor((char *)dz + sizeof(float) * (R * C / 2), FUSEC_F32, 1, R, 0);
    REFUSED(fusec_launch(f, in, 2, out, 2, NULL), FUSEC_ERR_INVALID_ARGUMENT,
            "result 0 overlaps result 1");
    out[1] = tensor(db, FUSEC_F32, 1, R, 0); /* b's buffer, not b's shape (R < C) */
    REFUSED(fusec_launch(f, in, 2, out, 2, NULL), FUSEC_ERR_INVALID_ARGUMENT,
            "result 1 overlaps parameter 'b'");
    void *ptrs[] = {dx, db, dz, ds};
    for (int i = 0; i < 4; i++)
        CHECK(fusec_memory_free(m, ptrs[i]) == FUSEC_OK);
}

/* Every refusal leaves the result as it was: nothing ran. */
static void test_descriptors(fusec_module *m) {
    fusec_function *f = fn(m, "axpy");
    static float a = 1.5f, x[N], y[N], out[N], x2[N + 1];
    for (int i = 0; i < N; i++)
        x[i] = frand(), y[i] = frand();
    memset(out, 0xff, sizeof out);
    void *da = to_target(m, &a, sizeof a), *dx = to_target(m, x, sizeof x),
         *dy = to_target(m, y, sizeof y), *dout = to_target(m, out, sizeof out),
         *dx2 = to_target(m, x2, sizeof x2);
    fusec_tensor in[3] = {tensor(da, FUSEC_F32, 0, 0, 0), tensor(dx, FUSEC_F32, 1, N, 0),
                          tensor(dy, FUSEC_F32, 1, N, 0)};
    fusec_tensor res = tensor(dout, FUSEC_F32, 1, N, 0);

    CHECK(fusec_launch(f, in, 2, &res, 1, NULL) == FUSEC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(fusec_module_message(m), "takes 3 inputs, got 2") != NULL);
    CHECK(fusec_launch(f, in, 3, &res, 0, NULL) == FUSEC_ERR_INVALID_ARGUMENT);

    fusec_tensor bad[3];
    memcpy(bad, in, sizeof bad);
    bad[1].dtype = FUSEC_F64;
    CHECK(fusec_launch(f, bad, 3, &res, 1, NULL) == FUSEC_ERR_DTYPE);
    CHECK_MSG(strstr(fusec_module_message(m), "parameter 'x'") != NULL, "%s",
              fusec_module_message(m));
    memcpy(bad, in, sizeof bad);
    bad[0].rank = 1;
    bad[0].shape[0] = 1;
    CHECK(fusec_launch(f, bad, 3, &res, 1, NULL) == FUSEC_ERR_SHAPE);
    CHECK_MSG(strstr(fusec_module_message(m), "'a'") != NULL, "%s", fusec_module_message(m));
    memcpy(bad, in, sizeof bad);
    bad[2] = tensor(dx2, FUSEC_F32, 1, N + 1, 0); /* N disagrees between x and y */
    CHECK(fusec_launch(f, bad, 3, &res, 1, NULL) == FUSEC_ERR_SHAPE);
    CHECK_MSG(strstr(fusec_module_message(m), "N") != NULL, "%s", fusec_module_message(m));
    memcpy(bad, in, sizeof bad);
    bad[1].rank = 9;
    CHECK(fusec_launch(f, bad, 3, &res, 1, NULL) == FUSEC_ERR_SHAPE);
    fusec_tensor bad_res = tensor(dout, FUSEC_F32, 1, N - 1, 0);
    CHECK(fusec_launch(f, in, 3, &bad_res, 1, NULL) == FUSEC_ERR_SHAPE);
    bad_res = tensor(dout, FUSEC_I32, 1, N, 0);
    CHECK(fusec_launch(f, in, 3, &bad_res, 1, NULL) == FUSEC_ERR_DTYPE);
    test_bad_buffers(m, f, in, res, dx);
    from_target(m, out, dout, sizeof out);
    CHECK_MSG(all_poison(out, N), "a refused launch wrote its result");

    /* and the good call, against the formula */
    CHECK_MSG(fusec_launch(f, in, 3, &res, 1, NULL) == FUSEC_OK, "%s", fusec_module_message(m));
    from_target(m, out, dout, sizeof out);
    int bad_values = 0;
    for (int i = 0; i < N; i++)
        bad_values += fabsf(out[i] - (a * x[i] + y[i])) > 1e-6f * (1 + fabsf(out[i]));
    CHECK_MSG(bad_values == 0, "%d wrong values", bad_values);
    void *ptrs[] = {da, dx, dy, dout, dx2};
    for (int i = 0; i < 5; i++)
        CHECK(fusec_memory_free(m, ptrs[i]) == FUSEC_OK);
    CHECK(fusec_memory_free(m, NULL) == FUSEC_OK);
}

/* A plan gives what a launch gives, follows a re-bind, and refuses new shapes. */
static void test_plans(fusec_module *m) {
    fusec_function *f = fn(m, "rows");
    static float x[R * C], b[C], z1[R * C], s1[R], z2[R * C], s2[R], zp[R * C], sp[R];
    for (int i = 0; i < R * C; i++)
        x[i] = frand();
    for (int i = 0; i < C; i++)
        b[i] = frand();
    void *dx = to_target(m, x, sizeof x), *db = to_target(m, b, sizeof b);
    memset(zp, 0xff, sizeof zp);
    memset(sp, 0xff, sizeof sp);
    void *dz1 = to_target(m, zp, sizeof zp), *ds1 = to_target(m, sp, sizeof sp),
         *dz2 = to_target(m, zp, sizeof zp), *ds2 = to_target(m, sp, sizeof sp),
         *dzp = to_target(m, zp, sizeof zp), *dsp = to_target(m, sp, sizeof sp);
    fusec_tensor in[2] = {tensor(dx, FUSEC_F32, 2, R, C), tensor(db, FUSEC_F32, 1, C, 0)};
    fusec_tensor direct[2] = {tensor(dz1, FUSEC_F32, 2, R, C), tensor(ds1, FUSEC_F32, 1, R, 0)};
    fusec_tensor first[2] = {tensor(dz2, FUSEC_F32, 2, R, C), tensor(ds2, FUSEC_F32, 1, R, 0)};
    fusec_tensor second[2] = {tensor(dzp, FUSEC_F32, 2, R, C), tensor(dsp, FUSEC_F32, 1, R, 0)};

    CHECK(fusec_launch(f, in, 2, direct, 2, NULL) == FUSEC_OK);
    fusec_plan *p = NULL;
    CHECK_MSG(fusec_plan_create(f, in, 2, first, 2, NULL, &p) == FUSEC_OK, "%s",
              fusec_module_message(m));
    from_target(m, zp, dz2, sizeof zp);
    CHECK_MSG(all_poison(zp, R * C), "making a plan ran it");
    CHECK(fusec_plan_launch(p, NULL) == FUSEC_OK);
    CHECK(fusec_plan_launch(p, NULL) == FUSEC_OK); /* a replay */
    from_target(m, z1, dz1, sizeof z1);
    from_target(m, s1, ds1, sizeof s1);
    from_target(m, z2, dz2, sizeof z2);
    from_target(m, s2, ds2, sizeof s2);
    CHECK(memcmp(z1, z2, sizeof z1) == 0 && memcmp(s1, s2, sizeof s1) == 0);

    CHECK_MSG(fusec_plan_rebind(p, in, 2, second, 2) == FUSEC_OK, "%s", fusec_module_message(m));
    from_target(m, zp, dzp, sizeof zp);
    CHECK_MSG(all_poison(zp, R * C), "re-binding a plan ran it");
    CHECK(fusec_plan_launch(p, NULL) == FUSEC_OK);
    from_target(m, zp, dzp, sizeof zp);
    from_target(m, sp, dsp, sizeof sp);
    CHECK(memcmp(z1, zp, sizeof z1) == 0 && memcmp(s1, sp, sizeof s1) == 0);

    fusec_tensor fewer_rows[2] = {tensor(dx, FUSEC_F32, 2, R - 1, C),
                                  tensor(db, FUSEC_F32, 1, C, 0)};
    fusec_tensor fewer_out[2] = {tensor(dzp, FUSEC_F32, 2, R - 1, C),
                                 tensor(dsp, FUSEC_F32, 1, R - 1, 0)};
    CHECK(fusec_plan_rebind(p, fewer_rows, 2, fewer_out, 2) == FUSEC_ERR_SHAPE);
    CHECK(strstr(fusec_module_message(m), "make a new plan") != NULL);
    fusec_tensor wrong_dtype[2] = {tensor(dx, FUSEC_F64, 2, R, C), tensor(db, FUSEC_F32, 1, C, 0)};
    CHECK(fusec_plan_rebind(p, wrong_dtype, 2, second, 2) == FUSEC_ERR_DTYPE);
    fusec_plan *q = (fusec_plan *)1;
    CHECK(fusec_plan_create(f, wrong_dtype, 2, second, 2, NULL, &q) == FUSEC_ERR_DTYPE);
    CHECK(q == NULL);

    fusec_bench_result br;
    CHECK(fusec_bench_run(f, in, 2, second, 2, 3, 1, &br) == FUSEC_OK);
    CHECK(br.median_ms > 0 && br.min_ms > 0 && br.min_ms <= br.median_ms && br.host_us > 0);
    CHECK(fusec_bench_run(f, in, 2, second, 2, 3, 0, &br) == FUSEC_OK);
    CHECK(br.median_ms > 0);
    CHECK(fusec_bench_run(f, in, 2, second, 2, 0, 0, &br) == FUSEC_ERR_INVALID_ARGUMENT);

    fusec_plan_free(p);
    fusec_plan_free(NULL);
    void *ptrs[] = {dx, db, dz1, ds1, dz2, ds2, dzp, dsp};
    for (int i = 0; i < 8; i++)
        fusec_memory_free(m, ptrs[i]);
}

/* Without a GPU every CUDA entry point says so: building for the GPU's own architecture,
 * and with an explicit one (which builds) launching, plans, memory and the roofline. */
static void test_no_device(void) {
    fusec_module *m = compile(FUSEC_TARGET_CUDA, NULL);
    CHECK(fusec_module_build(m) == FUSEC_ERR_NO_DEVICE);
    CHECK_MSG(strstr(fusec_module_message(m), "no CUDA driver or device was found") != NULL, "%s",
              fusec_module_message(m));
    fusec_module_free(m);

    m = compile(FUSEC_TARGET_CUDA, "sm_90");
    CHECK_MSG(fusec_module_build(m) == FUSEC_OK, "%s", fusec_module_message(m));
    void *p = (void *)1;
    CHECK(fusec_memory_alloc(m, 64, &p) == FUSEC_ERR_NO_DEVICE && p == NULL);
    CHECK(strstr(fusec_module_message(m), "no CUDA driver or device was found") != NULL);
    CHECK(fusec_synchronize(m, NULL) == FUSEC_ERR_NO_DEVICE);
    static float x[N], y[N], out[N], a = 2;
    fusec_tensor in[3] = {tensor(&a, FUSEC_F32, 0, 0, 0), tensor(x, FUSEC_F32, 1, N, 0),
                          tensor(y, FUSEC_F32, 1, N, 0)};
    fusec_tensor res = tensor(out, FUSEC_F32, 1, N, 0);
    fusec_function *f = fn(m, "axpy");
    CHECK(fusec_launch(f, in, 3, &res, 1, NULL) == FUSEC_ERR_NO_DEVICE);
    fusec_plan *plan = (fusec_plan *)1;
    CHECK(fusec_plan_create(f, in, 3, &res, 1, NULL, &plan) == FUSEC_ERR_NO_DEVICE);
    CHECK(plan == NULL);
    double ms = 1;
    CHECK(fusec_bench_copy(m, 1 << 20, 3, &ms) == FUSEC_ERR_NO_DEVICE);
    /* descriptors are still checked first */
    in[1].dtype = FUSEC_I32;
    CHECK(fusec_launch(f, in, 3, &res, 1, NULL) == FUSEC_ERR_DTYPE);
    fusec_module_free(m);
}

static void test_memory_args(void) {
    fusec_module *m = compile(FUSEC_TARGET_REF, NULL);
    void *p = NULL;
    CHECK(fusec_memory_alloc(NULL, 8, &p) == FUSEC_ERR_INVALID_ARGUMENT);
    CHECK(fusec_memory_alloc(m, 8, NULL) == FUSEC_ERR_INVALID_ARGUMENT);
    CHECK(fusec_memory_alloc(m, SIZE_MAX, &p) == FUSEC_ERR_OUT_OF_MEMORY && p == NULL);
    CHECK(fusec_memory_alloc(m, 0, &p) == FUSEC_OK && p != NULL);
    CHECK(((uintptr_t)p & 63) == 0);
    CHECK(fusec_memory_upload(m, p, NULL, 8) == FUSEC_ERR_INVALID_ARGUMENT);
    CHECK(fusec_memory_free(m, p) == FUSEC_OK);
    CHECK(fusec_plan_launch(NULL, NULL) == FUSEC_ERR_INVALID_ARGUMENT);
    CHECK(fusec_plan_rebind(NULL, NULL, 0, NULL, 0) == FUSEC_ERR_INVALID_ARGUMENT);
    fusec_module_free(m);
}

/* fusec_options.function: `rows` alone is built (the second function, so its backend number
 * differs from its place in the module) and gives the right values; `axpy` keeps its
 * signature but does not launch; a name the module lacks fails the compilation. */
static void test_one_function(int ti) {
    fusec_options o;
    fusec_options_init(&o);
    o.target = api_targets[ti];
    o.function = "rows";
    fusec_module *m = NULL;
    fusec_status st = fusec_module_compile_string("api.fuse", SRC, strlen(SRC), &o, &m);
    CHECK_MSG(st == FUSEC_OK, "%s: %s", api_target_names[ti], fusec_module_message(m));
    if (st != FUSEC_OK) {
        fusec_module_free(m);
        return;
    }
    static float x[R * C], b[C], z[R * C], s[R];
    for (int i = 0; i < R * C; i++)
        x[i] = frand();
    for (int j = 0; j < C; j++)
        b[j] = frand();
    void *dx = to_target(m, x, sizeof x), *db = to_target(m, b, sizeof b);
    void *dz = to_target(m, z, sizeof z), *ds = to_target(m, s, sizeof s);
    fusec_tensor in[2] = {tensor(dx, FUSEC_F32, 2, R, C), tensor(db, FUSEC_F32, 1, C, 0)};
    fusec_tensor out[2] = {tensor(dz, FUSEC_F32, 2, R, C), tensor(ds, FUSEC_F32, 1, R, 0)};
    st = fusec_launch(fn(m, "rows"), in, 2, out, 2, NULL);
    CHECK_MSG(st == FUSEC_OK, "%s: rows alone: %s", api_target_names[ti], fusec_module_message(m));
    from_target(m, z, dz, sizeof z);
    from_target(m, s, ds, sizeof s);
    for (int r = 0; r < R; r++) {
        double want = 0;
        for (int j = 0; j < C; j++) {
            CHECK(z[r * C + j] == x[r * C + j] + b[j]);
            want += (double)(x[r * C + j] + b[j]);
        }
        CHECK_MSG(fabs(s[r] - want) <= 1e-5 * C * 4, "%s: row %d: %g, want %g",
                  api_target_names[ti], r, s[r], want);
    }
    fusec_function *a = fn(m, "axpy");
    CHECK(a != NULL && fusec_function_num_params(a) == 3);
    float one = 1;
    fusec_tensor ain[3] = {tensor(&one, FUSEC_F32, 0, 0, 0), tensor(dx, FUSEC_F32, 1, N, 0),
                           tensor(dx, FUSEC_F32, 1, N, 0)};
    fusec_tensor aout = tensor(dz, FUSEC_F32, 1, N, 0);
    CHECK(fusec_launch(a, ain, 3, &aout, 1, NULL) == FUSEC_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(fusec_module_message(m), "'axpy' was not built") != NULL, "%s",
              fusec_module_message(m));
    void *ptrs[] = {dx, db, dz, ds};
    for (int i = 0; i < 4; i++)
        CHECK(fusec_memory_free(m, ptrs[i]) == FUSEC_OK);
    fusec_module_free(m);

    o.function = "nosuch";
    m = NULL;
    st = fusec_module_compile_string("api.fuse", SRC, strlen(SRC), &o, &m);
    CHECK(st == FUSEC_ERR_INVALID_ARGUMENT);
    CHECK_MSG(m && strstr(fusec_module_message(m), "no function 'nosuch'") != NULL, "%s",
              m ? fusec_module_message(m) : "");
    CHECK(m && fusec_launch(fn(m, "rows"), in, 2, out, 2, NULL) != FUSEC_OK);
    fusec_module_free(m);
}

int main(void) {
    CHECK(fusec_version_number() == FUSEC_VERSION_NUMBER);
    test_memory_args();
    for (int i = 0; i < API_NTARGETS; i++) {
        if (!api_target_runs(i)) continue;
        fusec_options o;
        fusec_options_init(&o);
        o.target = api_targets[i];
        fusec_module *m = NULL;
        fusec_status st = fusec_module_compile_string("api.fuse", SRC, strlen(SRC), &o, &m);
        CHECK_MSG(st == FUSEC_OK, "%s: %s", api_target_names[i], fusec_module_message(m));
        test_descriptors(m);
        test_bad_rows(m);
        test_big_value(m);
        test_plans(m);
        fusec_module_free(m);
        test_one_function(i);
    }
    if (!rt_cuda_probe(NULL, NULL, 0)) test_no_device();
    return check_exit("test_api");
}
