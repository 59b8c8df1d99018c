/* tests/unit/test_grad_reductions.c: the gradients of reductions (SPEC §1, "Gradients"),
 * systematically: sum, mean, max, min, prod and argmax in arithmetic, over every kind of axis
 * choice (first, middle, last, negative, several, in any order, all), each result declared
 * with its reduced axes kept, dropped, or moved to the front (a per-row loss `-> f32[R]` is
 * the common case), in every float dtype, against central finite differences of a float64
 * forward computed here, on every target this machine has (the reference, the CPU, CUDA: a
 * GPU or the emulated one; FUSEC_TEST_TARGET picks one), fused and --no-fuse.
 *
 * The inputs make finite differences exact enough and keep away from every kink: distinct
 * points of the bf16 grid (so the same values in every dtype), of magnitude in [0.8, 1.25)
 * with random signs. No max or min has a tie, no argmax moves under a step of 1e-5, and a
 * product of all 105 elements stays near 1. Each function is linear or quadratic in each
 * element, so the differences are off by rounding alone.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"
#include "ir/ir.h"

/* ---- the cases ------------------------------------------------------------------------- */

#define MAXR    6 /* results of one function */
#define NELEMS  105
#define NMODES  3
#define NDTYPES 4

typedef struct red_case {
    int rank;    /* of x: 3 is [A, R, C] = [3, 5, 7]; 2 is [R, 7] = [5, 7] */
    int naxes;   /* 0: no axis argument (every axis) */
    int axes[3]; /* as written */
} red_case;

static const red_case cases[] = {
    {3, 1, {0}},    {3, 1, {1}},    {3, 1, {2}},        {3, 1, {-1}},   {3, 1, {-2}},
    {3, 1, {-3}},   {3, 2, {0, 1}}, {3, 2, {0, 2}},     {3, 2, {1, 2}}, {3, 2, {0, -1}},
    {3, 2, {2, 0}}, {3, 0, {0}},    {3, 3, {-1, 0, 1}}, {2, 1, {0}},    {2, 1, {-1}},
    {2, 0, {0}},    {2, 2, {1, 0}},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* how a result is declared: its reduced axes kept (f32[A, 1, C]), dropped (f32[A, C]), or
 * dropped and as many axes of one put in front (f32[1, A, C]) */
enum { KEPT, DROPPED, LEADING };
static const char *const mode_names[NMODES] = {"kept", "dropped", "leading"};

static const fusec_dtype dtypes[NDTYPES] = {FUSEC_F32, FUSEC_F64, FUSEC_F16, FUSEC_BF16};
static const char *const dtype_names[NDTYPES] = {"f32", "f64", "f16", "bf16"};
/* what a gradient may be off from the differences, relative to the largest of its elements:
 * f16 and bf16 round the stored forward values (--no-fuse) and the result */
static const double dtype_tol[NDTYPES] = {2e-5, 1e-8, 4e-3, 3e-2};

/* The functions a run checks. The reference, which compiles nothing, checks every case in
 * every mode and dtype. A compiled target (LLVM: about 0.1 s a function fused, 1 s --no-fuse,
 * where every op is a kernel) checks every case in every mode fused, the dtypes in turn, and
 * --no-fuse four: the middle axis dropped, a per-row loss, two axes moved to the front, a
 * full reduction kept, one in each dtype. */
static const int no_fuse_cases[NDTYPES][2] = {
    {1, DROPPED}, {11, KEPT}, {14, DROPPED}, {6, LEADING}};

/* FUSEC_TEST_SHARD=i/n: every n-th (case, mode) pair, on every target (ctest runs the test in
 * parts: LLVM's builds of the kernels are most of its time) */
static int wanted(int compiled, int no_fuse, int dt, int c, int mode) {
    if (!check_in_shard(c * NMODES + mode)) return 0;
    if (!compiled) return 1;
    if (!no_fuse) return dt == (c + mode) % NDTYPES;
    return no_fuse_cases[dt][0] == c && no_fuse_cases[dt][1] == mode;
}

static void x_dims(const red_case *c, int64_t *dims) {
    static const int64_t d3[3] = {3, 5, 7}, d2[2] = {5, 7};
    memcpy(dims, c->rank == 3 ? d3 : d2, sizeof(int64_t) * (size_t)c->rank);
}
static const char *x_dim_name(const red_case *c, int d) {
    static const char *const n3[3] = {"A", "R", "C"}, *const n2[2] = {"R", "7"};
    return c->rank == 3 ? n3[d] : n2[d];
}

static uint32_t reduced_mask(const red_case *c) {
    if (c->naxes == 0) return (1u << c->rank) - 1;
    uint32_t m = 0;
    for (int i = 0; i < c->naxes; i++)
        m |= 1u << (c->axes[i] < 0 ? c->axes[i] + c->rank : c->axes[i]);
    return m;
}

/* argmax in arithmetic: over one axis, or over all (no axis argument) */
static int has_argmax(const red_case *c) {
    return c->naxes <= 1;
}
static int nresults(const red_case *c) {
    return has_argmax(c) ? 6 : 5;
}

/* A result's declared shape: its dims (sizes), and their names into `names` when given. */
static int result_shape(const red_case *c, int mode, int64_t *dims, char *names, size_t cap) {
    int64_t xd[3];
    x_dims(c, xd);
    uint32_t m = reduced_mask(c);
    int rank = 0, lead = 0;
    const char *nm[8];
    for (int d = 0; d < c->rank; d++) {
        if (!((m >> d) & 1)) {
            nm[rank] = x_dim_name(c, d);
            dims[rank++] = xd[d];
        } else if (mode == KEPT) {
            nm[rank] = "1";
            dims[rank++] = 1;
        } else if (mode == LEADING) {
            lead++;
        }
    }
    memmove(dims + lead, dims, sizeof(int64_t) * (size_t)rank);
    memmove(nm + lead, nm, sizeof(char *) * (size_t)rank);
    for (int i = 0; i < lead; i++) {
        dims[i] = 1;
        nm[i] = "1";
    }
    rank += lead;
    if (names) {
        size_t at = 0;
        for (int i = 0; i < rank; i++)
            at += (size_t)snprintf(names + at, cap - at, "%s%s", i ? ", " : "", nm[i]);
        if (!rank) names[0] = 0;
    }
    return rank;
}

/* ---- the source ------------------------------------------------------------------------ */

static void axis_arg(const red_case *c, char *out, size_t cap) {
    if (c->naxes == 0) {
        out[0] = 0;
    } else if (c->naxes == 1) {
        snprintf(out, cap, ", axis=%d", c->axes[0]);
    } else {
        size_t at = (size_t)snprintf(out, cap, ", axis=(");
        for (int i = 0; i < c->naxes; i++)
            at += (size_t)snprintf(out + at, cap - at, "%s%d", i ? ", " : "", c->axes[i]);
        snprintf(out + at, cap - at, ")");
    }
}

/* fn f_D_C_M(x: DT[...]) -> (DT[res] x5 or x6) { return sum(x * x, ax), mean, max, min, prod,
 * max(x, ax) * DT(argmax(x, ax) + 1); }  fn d_D_C_M = grad(f_D_C_M); */
static size_t emit_case(char *out, size_t cap, int dt, int ci, int mode) {
    const red_case *c = &cases[ci];
    const char *t = dtype_names[dt];
    char ax[64], res[64], xs[32] = "";
    int64_t dims[8];
    axis_arg(c, ax, sizeof ax);
    result_shape(c, mode, dims, res, sizeof res);
    for (int d = 0; d < c->rank; d++)
        snprintf(xs + strlen(xs), sizeof xs - strlen(xs), "%s%s", d ? ", " : "", x_dim_name(c, d));
    size_t at = (size_t)snprintf(out, cap, "fn f_%d_%d_%d(x: %s[%s]) -> (", dt, ci, mode, t, xs);
    for (int k = 0; k < nresults(c); k++)
        at += (size_t)snprintf(out + at, cap - at, "%s%s[%s]", k ? ", " : "", t, res);
    at += (size_t)snprintf(out + at, cap - at,
                           ") {\n    return sum(x * x%s), mean(x%s), max(x%s), min(x%s), prod(x%s)",
                           ax, ax, ax, ax, ax);
    if (has_argmax(c))
        at += (size_t)snprintf(out + at, cap - at, ", max(x%s) * %s(argmax(x%s) + 1)", ax, t, ax);
    at += (size_t)snprintf(out + at, cap - at, ";\n}\nfn d_%d_%d_%d = grad(f_%d_%d_%d);\n", dt, ci,
                           mode, dt, ci, mode);
    return at;
}

static char *program(int compiled, int no_fuse) {
    size_t cap = 1 << 20, at = 0;
    char *src = malloc(cap);
    src[0] = 0;
    for (int dt = 0; dt < NDTYPES; dt++)
        for (int ci = 0; ci < NCASES; ci++)
            for (int mode = 0; mode < NMODES; mode++)
                if (wanted(compiled, no_fuse, dt, ci, mode))
                    at += emit_case(src + at, cap - at, dt, ci, mode);
    return src;
}

/* ---- the float64 forward and its differences ------------------------------------------- */

/* L(x) = sum over the results k and their elements j of dy[k][j] * y_k(x)[j] */
static double loss(const red_case *c, const double *x, double dy[MAXR][NELEMS]) {
    int64_t xd[3];
    x_dims(c, xd);
    uint32_t m = reduced_mask(c);
    double s2[NELEMS], s[NELEMS], p[NELEMS], mx[NELEMS], mn[NELEMS];
    int64_t arg[NELEMS], cnt[NELEMS];
    int64_t n = 1, nout = 1;
    for (int d = 0; d < c->rank; d++) {
        n *= xd[d];
        if (!((m >> d) & 1)) nout *= xd[d];
    }
    for (int64_t o = 0; o < nout; o++) {
        s2[o] = s[o] = 0, p[o] = 1, mx[o] = -INFINITY, mn[o] = INFINITY;
        arg[o] = cnt[o] = 0;
    }
    for (int64_t i = 0; i < n; i++) {
        /* the result's element: the kept axes' indexes; the reduced ones' position */
        int64_t rest = i, idx[3], o = 0, r = 0;
        for (int d = c->rank - 1; d >= 0; d--) {
            idx[d] = rest % xd[d];
            rest /= xd[d];
        }
        for (int d = 0; d < c->rank; d++) {
            if ((m >> d) & 1)
                r = r * xd[d] + idx[d];
            else
                o = o * xd[d] + idx[d];
        }
        double v = x[i];
        s2[o] += v * v;
        s[o] += v;
        p[o] *= v;
        if (v > mx[o]) mx[o] = v, arg[o] = r;
        if (v < mn[o]) mn[o] = v;
        cnt[o]++;
    }
    double l = 0;
    for (int64_t o = 0; o < nout; o++) {
        double y[MAXR] = {s2[o], s[o] / (double)cnt[o],       mx[o], mn[o],
                          p[o],  mx[o] * (double)(arg[o] + 1)};
        for (int k = 0; k < nresults(c); k++)
            l += dy[k][o] * y[k];
    }
    return l;
}

static void differences(const red_case *c, const double *x, double dy[MAXR][NELEMS], double *g) {
    double xp[NELEMS], h = 1e-5;
    int64_t xd[3], n = 1;
    x_dims(c, xd);
    for (int d = 0; d < c->rank; d++)
        n *= xd[d];
    memcpy(xp, x, sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        xp[i] = x[i] + h;
        double up = loss(c, xp, dy);
        xp[i] = x[i] - h;
        double down = loss(c, xp, dy);
        xp[i] = x[i];
        g[i] = (up - down) / (2 * h);
    }
}

/* ---- inputs ---------------------------------------------------------------------------- */

static uint32_t rng = 7919;

static uint32_t next(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

/* n distinct points of the bf16 grid of magnitude in [0.8, 1.25), random signs */
static void grid_values(double *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        for (;;) {
            double v = ir_bf16_to_double(ir_bf16_from_double(0.8 + 0.45 * (next() / 16777216.0)));
            if (v >= 1.25) continue;
            if (next() & 1) v = -v;
            int seen = 0;
            for (int64_t j = 0; j < i; j++)
                seen |= x[j] == v;
            if (!seen) {
                x[i] = v;
                break;
            }
        }
    }
}

/* uniform in [-1, 1), never 0, as the dtype holds it */
static double cotangent_value(fusec_dtype t) {
    double v = next() / 8388608.0 - 1.0;
    if (v == 0) v = 0.375;
    double r = v;
    fusec_convert(FUSEC_F64, &v, t, &r, 1);
    if (t != FUSEC_F64) fusec_convert(t, &r, FUSEC_F64, &v, 1);
    return v;
}

/* ---- a run ----------------------------------------------------------------------------- */

static void *device(fusec_module *m, fusec_dtype t, const double *host, int64_t n) {
    size_t es = fusec_dtype_size(t);
    unsigned char buf[NELEMS * 8];
    if (host)
        fusec_convert(FUSEC_F64, host, t, buf, (size_t)n);
    else
        memset(buf, 0xff, (size_t)n * es); /* poison: NaN in every float dtype */
    void *d = NULL;
    CHECK(fusec_memory_alloc(m, (size_t)n * es, &d) == FUSEC_OK);
    CHECK(fusec_memory_upload(m, d, buf, (size_t)n * es) == FUSEC_OK);
    return d;
}

/* Runs d_D_C_M on fresh inputs and compares its gradient with the differences. */
static void check_case(fusec_module *m, const char *tag, int dt, int ci, int mode) {
    const red_case *c = &cases[ci];
    fusec_dtype t = dtypes[dt];
    int64_t xd[3], rd[8], n = 1, nout = 1;
    x_dims(c, xd);
    int rrank = result_shape(c, mode, rd, NULL, 0);
    for (int d = 0; d < c->rank; d++)
        n *= xd[d];
    for (int d = 0; d < rrank; d++)
        nout *= rd[d];
    double x[NELEMS], dy[MAXR][NELEMS], want[NELEMS], got[NELEMS];
    grid_values(x, n);
    int nr = nresults(c);
    for (int k = 0; k < nr; k++)
        for (int64_t o = 0; o < nout; o++)
            dy[k][o] = cotangent_value(t);
    differences(c, x, dy, want);

    char name[32];
    snprintf(name, sizeof name, "d_%d_%d_%d", dt, ci, mode);
    fusec_function *f = api_fn(m, name);
    if (!f) return;
    void *bufs[MAXR + 2];
    fusec_tensor in[MAXR + 1], out;
    bufs[0] = device(m, t, x, n);
    in[0] = api_tensor(bufs[0], t, c->rank, xd, NULL);
    for (int k = 0; k < nr; k++) {
        bufs[k + 1] = device(m, t, dy[k], nout);
        in[k + 1] = api_tensor(bufs[k + 1], t, rrank, rd, NULL);
    }
    bufs[nr + 1] = device(m, t, NULL, n);
    out = api_tensor(bufs[nr + 1], t, c->rank, xd, NULL);
    fusec_status st = fusec_launch(f, in, nr + 1, &out, 1, NULL);
    CHECK_MSG(st == FUSEC_OK, "%s %s: %s", tag, name, fusec_status_string(st));
    unsigned char raw[NELEMS * 8];
    CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
    CHECK(fusec_memory_download(m, raw, bufs[nr + 1], (size_t)n * fusec_dtype_size(t)) == FUSEC_OK);
    fusec_convert(t, raw, FUSEC_F64, got, (size_t)n);
    for (int k = 0; k < nr + 2; k++)
        fusec_memory_free(m, bufs[k]);

    double big = 0;
    for (int64_t i = 0; i < n; i++)
        big = fmax(big, fabs(want[i]));
    for (int64_t i = 0; i < n && st == FUSEC_OK; i++) {
        if (!(fabs(got[i] - want[i]) <= dtype_tol[dt] * big)) {
            char ax[64];
            axis_arg(c, ax, sizeof ax);
            CHECK_MSG(0,
                      "%s %s (%s, rank %d%s, result %s): dx[%lld] is %.9g, differences give %.9g",
                      tag, name, dtype_names[dt], c->rank, ax, mode_names[mode], (long long)i,
                      got[i], want[i]);
            break;
        }
    }
}

static const char *only_target(void) {
    const char *t = getenv("FUSEC_TEST_TARGET");
    return t && *t ? t : NULL;
}

int main(void) {
    const char *only = only_target();
    /* FUSEC_CPU_TEST_FUSED_ONLY=1 (the sanitizers' pass): the compiled targets' fused kernels
     * only; --no-fuse's are built by the same code, and the plain pass runs them */
    const char *fo = getenv("FUSEC_CPU_TEST_FUSED_ONLY");
    int fused_only = fo && strcmp(fo, "1") == 0;
    for (int ti = 0; ti < API_NTARGETS; ti++) {
        if (only && strcmp(only, api_target_names[ti]) != 0) continue;
        if (!api_target_runs(ti)) continue;
        int compiled = api_targets[ti] != FUSEC_TARGET_REF;
        for (int no_fuse = 0; no_fuse < (compiled && fused_only ? 1 : 2); no_fuse++) {
            char *src = program(compiled, no_fuse);
            fusec_module *m = api_compile(src, api_targets[ti], no_fuse, NULL, 1);
            free(src);
            if (!m) continue;
            char tag[32];
            snprintf(tag, sizeof tag, "%s%s", api_target_names[ti], no_fuse ? " --no-fuse" : "");
            int ran = 0;
            for (int dt = 0; dt < NDTYPES; dt++)
                for (int ci = 0; ci < NCASES; ci++)
                    for (int mode = 0; mode < NMODES; mode++)
                        if (wanted(compiled, no_fuse, dt, ci, mode)) {
                            check_case(m, tag, dt, ci, mode);
                            ran++;
                        }
            printf("%s: %d gradients\n", tag, ran);
            fusec_module_free(m);
        }
    }
    return check_exit("test_grad_reductions");
}
