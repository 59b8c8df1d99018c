/* tests/unit/test_inplace.c: results written into their inputs' own buffers (SPEC §3: a result
 * may be the very buffer of a parameter of its dtype and shape, and the call is as if every
 * input were read first), on every target this machine has, fused and --no-fuse, by launch
 * and by plan: each call in place against the same call into fresh buffers, bit for bit.
 * The programs are the ways a result can be written before its parameter's last read: a
 * later kernel reads it (early), a later sweep of the same row kernel (sweeps), another part
 * of the same combined launch (combined), and, where nothing can go wrong, an AdamW step
 * updating its parameters and both moments in place in one kernel, and a row kernel whose final
 * sweep reads the very input it overwrites (norm). The row kernels run on values of a narrow
 * range and on values so spread that their quotients reach the bottom of the float range. */
#include "fusec.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"

static const char *SRC =
    "fn early(x: f32[N]) -> (f32[N], f32[N]) {\n"
    "    return x + 1.0, x * sum(x);\n"
    "}\n"
    "fn sweeps(x: f32[R, C]) -> (f32[R, C], f32[R, C]) {\n"
    "    let e = exp(x - max(x, axis=1));\n"
    "    return x * 2.0, e / sum(e, axis=1);\n"
    "}\n"
    "fn norm(x: f32[R, C]) -> f32[R, C] {\n"
    "    return x / sum(abs(x), axis=1);\n"
    "}\n"
    "fn combined(x: f32[N], y: f32[M]) -> (f32[N], f32[M]) {\n"
    "    return x * 2.0, y + 1.0;\n"
    "}\n"
    "fn adamw(p: f32[N], g: f32[N], m: f32[N], v: f32[N], lr: f32[], t: f32[])\n"
    "        -> (f32[N], f32[N], f32[N]) {\n"
    "    let m2 = 0.9 * m + 0.1 * g;\n"
    "    let v2 = 0.999 * v + 0.001 * g * g;\n"
    "    let u = m2 / (1.0 - pow(0.9, t)) / (sqrt(v2 / (1.0 - pow(0.999, t))) + 1e-8);\n"
    "    return p - lr * (u + 0.01 * p), m2, v2;\n"
    "}\n";

#define N 4099
#define R 37
#define C 1001

static uint32_t rng = 4242;

/* A call: its inputs' host values, which result goes over which input (-1: none). */
typedef struct call {
    const char *fn;
    int nin, nres;
    int64_t in_elems[6], res_elems[3];
    int64_t in_shape[6][2], res_shape[3][2];
    int in_rank[6], res_rank[3];
    int over[3]; /* result i in place over input over[i] */
} call;

static fusec_tensor tensor(void *d, int rank, const int64_t *shape) {
    return api_tensor(d, FUSEC_F32, rank, shape, NULL);
}

static void *upload(fusec_module *m, const float *h, int64_t n) {
    void *d = NULL;
    CHECK(fusec_memory_alloc(m, (size_t)n * 4, &d) == FUSEC_OK);
    CHECK(fusec_memory_upload(m, d, h, (size_t)n * 4) == FUSEC_OK);
    return d;
}

/* Runs c into fresh buffers, then in place: by launch (plan 0), by a plan made in place (1), or
 * by a plan made into fresh buffers and re-bound in place (2); the two bit for bit. */
static void run_call(fusec_module *m, const call *c, float **host_in, int plan, const char *tag) {
    fusec_function *f = api_fn(m, c->fn);
    void *din[6], *dres[3], *dinp[6], *dresp[3];
    fusec_tensor tin[6], tres[3], pin[6], pres[3];
    for (int i = 0; i < c->nin; i++) {
        din[i] = upload(m, host_in[i], c->in_elems[i]);
        dinp[i] = upload(m, host_in[i], c->in_elems[i]);
        tin[i] = tensor(din[i], c->in_rank[i], c->in_shape[i]);
        pin[i] = tensor(dinp[i], c->in_rank[i], c->in_shape[i]);
    }
    for (int i = 0; i < c->nres; i++) {
        CHECK(fusec_memory_alloc(m, (size_t)c->res_elems[i] * 4, &dres[i]) == FUSEC_OK);
        CHECK(fusec_memory_alloc(m, (size_t)c->res_elems[i] * 4, &dresp[i]) == FUSEC_OK);
        tres[i] = tensor(dres[i], c->res_rank[i], c->res_shape[i]);
        /* in place: the result is its input's own buffer; the others buffers of their own */
        pres[i] = c->over[i] >= 0 ? tensor(dinp[c->over[i]], c->res_rank[i], c->res_shape[i])
                                  : tensor(dresp[i], c->res_rank[i], c->res_shape[i]);
    }
    fusec_status st = fusec_launch(f, tin, c->nin, tres, c->nres, NULL);
    CHECK_MSG(st == FUSEC_OK, "%s %s: %s", tag, c->fn, fusec_module_message(m));
    if (plan) {
        /* plan 1: made in place; plan 2: made into fresh buffers, re-bound in place */
        fusec_plan *p = NULL;
        if (plan == 1)
            st = fusec_plan_create(f, pin, c->nin, pres, c->nres, NULL, &p);
        else
            st = fusec_plan_create(f, tin, c->nin, tres, c->nres, NULL, &p);
        CHECK_MSG(st == FUSEC_OK, "%s %s plan: %s", tag, c->fn, fusec_module_message(m));
        if (p && plan == 2)
            CHECK_MSG(fusec_plan_rebind(p, pin, c->nin, pres, c->nres) == FUSEC_OK, "%s",
                      fusec_module_message(m));
        if (p) CHECK(fusec_plan_launch(p, NULL) == FUSEC_OK);
        CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
        fusec_plan_free(p);
    } else {
        st = fusec_launch(f, pin, c->nin, pres, c->nres, NULL);
        CHECK_MSG(st == FUSEC_OK, "%s %s in place: %s", tag, c->fn, fusec_module_message(m));
    }
    CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
    for (int i = 0; i < c->nres; i++) {
        size_t bytes = (size_t)c->res_elems[i] * 4;
        float *want = malloc(bytes), *got = malloc(bytes);
        CHECK(fusec_memory_download(m, want, dres[i], bytes) == FUSEC_OK);
        CHECK(fusec_memory_download(m, got, pres[i].data, bytes) == FUSEC_OK);
        CHECK_MSG(!memcmp(want, got, bytes), "%s %s%s: result %d in place differs", tag, c->fn,
                  plan == 2 ? " (plan re-bound)"
                  : plan    ? " (plan)"
                            : "",
                  i);
        free(want);
        free(got);
        fusec_memory_free(m, dres[i]);
        fusec_memory_free(m, dresp[i]);
    }
    for (int i = 0; i < c->nin; i++) {
        fusec_memory_free(m, din[i]);
        fusec_memory_free(m, dinp[i]);
    }
}

static float *values(int64_t n, float half) {
    float *v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        v[i] = api_frand(&rng, half);
    return v;
}

static void test_target(fusec_target t, const char *name, int no_fuse) {
    fusec_module *m = api_compile(SRC, t, no_fuse, NULL, 1);
    if (!m) return;
    char tag[64];
    snprintf(tag, sizeof tag, "%s%s", name, no_fuse ? " --no-fuse" : "");
    float *x = values(N, 2), *xr = values(R * C, 4), *y = values(N, 2);
    float *xw = values(R * C, 60); /* softmax: e^(x - max) down to 0 */
    float *xt = values(R * C, 4);
    for (int64_t i = 0; i < R * C; i += 3)
        xt[i] *= 1e-25f; /* norm: quotients down to 1e-28 */
    float *p = values(N, 1), *g = values(N, 1), *mo = values(N, 0.1f), *v = values(N, 0.1f);
    for (int64_t i = 0; i < N; i++)
        v[i] = fabsf(v[i]);
    float lr = 0.001f, step = 7;
    call early = {"early", 1, 2, {N}, {N, N}, {{N}}, {{N}, {N}}, {1}, {1, 1}, {0, -1, -1}};
    call sweeps = {"sweeps",         1,   2,      {R * C},    {R * C, R * C}, {{R, C}},
                   {{R, C}, {R, C}}, {2}, {2, 2}, {0, -1, -1}};
    call norm = {"norm", 1, 1, {R * C}, {R * C}, {{R, C}}, {{R, C}}, {2}, {2}, {0, -1, -1}};
    call comb = {"combined", 2,          2,      {N, N}, {N, N},
                 {{N}, {N}}, {{N}, {N}}, {1, 1}, {1, 1}, {1, 0, -1}};
    call adam = {"adamw",
                 6,
                 3,
                 {N, N, N, N, 1, 1},
                 {N, N, N},
                 {{N}, {N}, {N}, {N}, {0}, {0}},
                 {{N}, {N}, {N}},
                 {1, 1, 1, 1, 0, 0},
                 {1, 1, 1},
                 {0, 2, 3}};
    float *in_early[] = {x}, *in_sweeps[] = {xr}, *in_wide[] = {xw}, *in_tiny[] = {xt},
          *in_norm[] = {xr}, *in_comb[] = {x, y}, *in_adam[] = {p, g, mo, v, &lr, &step};
    for (int plan = 0; plan < 3; plan++) {
        run_call(m, &early, in_early, plan, tag);
        run_call(m, &sweeps, in_sweeps, plan, tag);
        run_call(m, &sweeps, in_wide, plan, tag);
        run_call(m, &norm, in_norm, plan, tag);
        run_call(m, &norm, in_tiny, plan, tag);
        run_call(m, &comb, in_comb, plan, tag);
        run_call(m, &adam, in_adam, plan, tag);
    }
    free(x), free(xr), free(xw), free(xt), free(y), free(p), free(g), free(mo), free(v);
    fusec_module_free(m);
}

int main(void) {
    api_each_target(test_target);
    return check_exit("test_inplace");
}
