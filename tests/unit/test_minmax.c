/* tests/unit/test_minmax.c: float max and min reductions on the CPU backend, bit for bit, on
 * the inputs where a shortcut would go wrong: rows all negative, zeros of both signs (-0 is
 * below +0), NaNs of either sign and any payload (a NaN anywhere gives NaN), infinities,
 * subnormals. Rows (alone, and sharing a sweep with a sum, which makes the sweep blocked),
 * chunked full reductions and columns, in f32 and f64. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"
#include "fusec.h"

static const char *SRC =
    "fn rows32(x: f32[R, C]) -> (f32[R], f32[R]) { return max(x, axis=1), min(x, axis=1); }\n"
    "fn rows64(x: f64[R, C]) -> (f64[R], f64[R]) { return max(x, axis=1), min(x, axis=1); }\n"
    "fn blocked32(x: f32[R, C]) -> (f32[R], f32[R], f32[R]) {\n"
    "    return sum(x, axis=1), max(x, axis=1), min(x, axis=1);\n"
    "}\n"
    "fn full32(x: f32[N]) -> (f32[], f32[]) { return max(x), min(x); }\n"
    "fn full64(x: f64[N]) -> (f64[], f64[]) { return max(x), min(x); }\n"
    "fn cols32(x: f32[R, C]) -> (f32[C], f32[C]) { return max(x, axis=0), min(x, axis=0); }\n";

#define R    14
#define C    1031   /* more than a block of 1024 */
#define NCH  3      /* chunks of a full reduction */
#define FULL 200003 /* NCH + 1 chunks of 65536 */

static uint32_t rng = 4242;

/* The expected result: NaN if any element is; else the largest (smallest), -0 below +0. */
static int above(double a, double b) { /* a above b in the order */
    if (a != b) return a > b;
    return !signbit(a) && signbit(b);
}

static double expect(const double *v, int64_t n, int max) {
    double r = max ? -INFINITY : INFINITY;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(v[i])) return NAN;
        if (max ? above(v[i], r) : above(r, v[i])) r = v[i];
    }
    return r;
}

static float f32_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Row r of a test matrix: random non-zero values, then the row's own special case. */
static void fill_row(double *row, int64_t n, int r) {
    for (int64_t j = 0; j < n; j++)
        row[j] = api_frand(&rng, 8.0f);
    int64_t at = (int64_t)(rng % (uint32_t)n); /* where the special values go */
    switch (r % 14) {
    case 0: /* all negative */
        for (int64_t j = 0; j < n; j++)
            row[j] = -fabs(row[j]);
        break;
    case 1: /* -0 above every negative */
        for (int64_t j = 0; j < n; j++)
            row[j] = -fabs(row[j]);
        row[at] = -0.0;
        break;
    case 2: /* both zeros, the rest negative */
        for (int64_t j = 0; j < n; j++)
            row[j] = -fabs(row[j]);
        row[at] = -0.0;
        row[n - 1 - at] = 0.0;
        break;
    case 3: /* both zeros, the rest positive */
        for (int64_t j = 0; j < n; j++)
            row[j] = fabs(row[j]);
        row[at] = 0.0;
        row[n - 1 - at] = -0.0;
        break;
    case 4: row[at] = NAN; break;
    case 5: row[at] = (double)f32_bits(0xffc00001u); break; /* a negative NaN */
    case 6:                                                 /* a negative NaN among negatives */
        for (int64_t j = 0; j < n; j++)
            row[j] = -fabs(row[j]);
        row[at] = -(double)NAN;
        break;
    case 7: row[at] = (double)f32_bits(0x7f800001u); break; /* the least positive NaN */
    case 8:
        for (int64_t j = 0; j < n; j++)
            row[j] = -INFINITY;
        break;
    case 9:
        row[at] = INFINITY;
        row[n - 1 - at] = -INFINITY;
        break;
    case 10: /* subnormals only */
        for (int64_t j = 0; j < n; j++)
            row[j] = (double)f32_bits((rng = rng * 1664525u + 1013904223u) & 0x807fffffu);
        break;
    case 11:
        for (int64_t j = 0; j < n; j++)
            row[j] = -0.0;
        break;
    case 12:
        for (int64_t j = 0; j < n; j++)
            row[j] = 0.0;
        break;
    default: break; /* plain random */
    }
}

/* Bits equal, or both NaN. */
static int same(double got, double want) {
    if (isnan(want)) return isnan(got);
    return got == want && signbit(got) == signbit(want);
}

static void run(fusec_module *m, const char *fn, fusec_tensor *in, fusec_tensor *out, int nout) {
    CHECK_MSG(fusec_launch(api_fn(m, fn), in, 1, out, nout, NULL) == FUSEC_OK, "%s: %s", fn,
              fusec_module_message(m));
}

static void test_rows(fusec_module *m, int wide, int blocked) {
    double *v = malloc(sizeof(double) * R * C);
    for (int r = 0; r < R; r++)
        fill_row(v + (int64_t)r * C, C, r);
    size_t es = wide ? 8 : 4;
    char *x = malloc(es * R * C), *res[3];
    for (int64_t i = 0; i < (int64_t)R * C; i++) {
        if (wide)
            ((double *)x)[i] = v[i];
        else
            ((float *)x)[i] = (float)v[i];
    }
    fusec_dtype dt = wide ? FUSEC_F64 : FUSEC_F32;
    fusec_tensor in = {x, dt, 2, {R, C}, NULL}, out[3];
    int nout = blocked ? 3 : 2;
    for (int k = 0; k < nout; k++) {
        res[k] = malloc(es * R);
        memset(res[k], 0x5a, es * R); /* poison */
        fusec_tensor t = {res[k], dt, 1, {R}, NULL};
        out[k] = t;
    }
    const char *name = blocked ? "blocked32" : wide ? "rows64" : "rows32";
    run(m, name, &in, out, nout);
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < 2; k++) {
            char *p = res[k + (blocked ? 1 : 0)];
            double got = wide ? ((double *)p)[r] : ((float *)p)[r];
            double want = expect(v + (int64_t)r * C, C, k == 0);
            CHECK_MSG(same(got, want), "%s row %d %s: got %a, want %a", name, r,
                      k == 0 ? "max" : "min", got, want);
        }
    }
    for (int k = 0; k < nout; k++)
        free(res[k]);
    free(x);
    free(v);
}

static void test_full(fusec_module *m, int wide) {
    /* a few of the rows' cases, each over the whole array, specials in different chunks */
    static const int cases[] = {0, 1, 2, 4, 5, 6, 8, 11, 13};
    double *v = malloc(sizeof(double) * FULL);
    size_t es = wide ? 8 : 4;
    char *x = malloc(es * FULL);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        fill_row(v, FULL, cases[c]);
        for (int64_t i = 0; i < FULL; i++) {
            if (wide)
                ((double *)x)[i] = v[i];
            else
                ((float *)x)[i] = (float)v[i];
        }
        double r[2] = {0, 0};
        float rf[2] = {0, 0};
        fusec_dtype dt = wide ? FUSEC_F64 : FUSEC_F32;
        fusec_tensor in = {x, dt, 1, {FULL}, NULL};
        fusec_tensor out[2] = {{wide ? (void *)&r[0] : (void *)&rf[0], dt, 0, {0}, NULL},
                               {wide ? (void *)&r[1] : (void *)&rf[1], dt, 0, {0}, NULL}};
        run(m, wide ? "full64" : "full32", &in, out, 2);
        for (int k = 0; k < 2; k++) {
            double got = wide ? r[k] : rf[k];
            double want = expect(v, FULL, k == 0);
            CHECK_MSG(same(got, want), "full%s case %d %s: got %a, want %a", wide ? "64" : "32",
                      cases[c], k == 0 ? "max" : "min", got, want);
        }
    }
    free(x);
    free(v);
}

/* Columns keep the single order key; the same cases down the columns. */
static void test_cols(fusec_module *m) {
    double *v = malloc(sizeof(double) * R * C), *col = malloc(sizeof(double) * R);
    for (int r = 0; r < R; r++)
        fill_row(v + (int64_t)r * C, C, r);
    float *x = malloc(4 * R * C), *mx = malloc(4 * C), *mn = malloc(4 * C);
    for (int64_t i = 0; i < (int64_t)R * C; i++)
        x[i] = (float)v[i];
    memset(mx, 0x5a, 4 * C);
    memset(mn, 0x5a, 4 * C);
    fusec_tensor in = {x, FUSEC_F32, 2, {R, C}, NULL};
    fusec_tensor out[2] = {{mx, FUSEC_F32, 1, {C}, NULL}, {mn, FUSEC_F32, 1, {C}, NULL}};
    run(m, "cols32", &in, out, 2);
    for (int j = 0; j < C; j++) {
        for (int r = 0; r < R; r++)
            col[r] = (float)v[(int64_t)r * C + j];
        CHECK_MSG(same(mx[j], expect(col, R, 1)), "cols32 col %d max", j);
        CHECK_MSG(same(mn[j], expect(col, R, 0)), "cols32 col %d min", j);
    }
    free(x);
    free(mx);
    free(mn);
    free(col);
    free(v);
}

int main(void) {
    fusec_options o;
    fusec_options_init(&o);
    o.target = FUSEC_TARGET_CPU;
    fusec_module *m = NULL;
    fusec_status st = fusec_module_compile_string("minmax.fuse", SRC, strlen(SRC), &o, &m);
    if (st == FUSEC_ERR_UNSUPPORTED) {
        printf("no CPU backend in this build\n");
        fusec_module_free(m);
        return 77;
    }
    CHECK_MSG(st == FUSEC_OK, "%s", fusec_module_message(m));
    if (st == FUSEC_OK) {
        test_rows(m, 0, 0);
        test_rows(m, 1, 0);
        test_rows(m, 0, 1);
        test_full(m, 0);
        test_full(m, 1);
        test_cols(m);
    }
    fusec_module_free(m);
    return check_exit("test_minmax");
}
