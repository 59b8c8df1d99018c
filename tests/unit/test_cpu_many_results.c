/* tests/unit/test_cpu_many_results.c: a kernel with many results on the CPU backend. Its
 * build time must grow about linearly with the results: the generated code once held three
 * copy-out loops a result, and LLVM's loop passes and register allocator took time in
 * loops x size (200 results 6 s, 400 25 s). Checked, with the cache off:
 *   - the control flow of the generated LLVM IR does not grow with the results: a function
 *     of 120 results has fewer than one basic block more a result than one of 30 (the old
 *     code had nine; deterministic);
 *   - building 120 results takes less than 8 times the CPU time of 30 (time linear in them
 *     gives at most 4, quadratic 16) and less than 40 times that of 1 result (it takes about
 *     10; it took 90, and the first bound alone passed, the 30 results being as slow); CPU
 *     time, the least of three builds, so that other processes do not stretch it;
 *   - every result equals the reference's, for 120 f32 results, 60 of every dtype and 60 of a
 *     row kernel, streamed and not, each in a buffer at its own offset within a cache line,
 *     with nothing written past it; that module builds in under 10 s of CPU time (a generous
 *     ceiling: a row kernel's short-row body with copies of each of its 60 results took over
 *     30 s).
 * Skipped (77) when the build has no CPU backend. */
#include "fusec.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_util.h"
#include "check.h"
#include "driver/backend.h"

#define MAX_RESULTS 120
#define GUARD       64 /* poisoned bytes after a result */
#define POISON      0xa5

static const char *DTYPES[] = {"f32", "f16", "bf16", "f64", "i32", "i64", "bool"};
#define NDTYPES ((int)(sizeof DTYPES / sizeof DTYPES[0]))

/* ---- sources --------------------------------------------------------------------------------- */

/* Appends to buf (of room cap, NUL-terminated) like printf. */
static void append(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t cap, const char *fmt, ...) {
    size_t n = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

/* fn wide(x: f32[N]) -> (k f32 results): x + 1.0, x + 2.0, ... */
static char *wide_source(int k) {
    size_t cap = 64 + (size_t)k * 32;
    char *s = calloc(cap, 1);
    append(s, cap, "fn wide(x: f32[N]) -> (");
    for (int i = 0; i < k; i++)
        append(s, cap, "%sf32[N]", i ? ", " : "");
    append(s, cap, ") {\n    return ");
    for (int i = 0; i < k; i++)
        append(s, cap, "%sx + %d.0", i ? ", " : "", i + 1);
    append(s, cap, ";\n}\n");
    return s;
}

/* fn dtypes: k results cycling through every dtype, each exact in both targets but for the
 * rounding of the 16-bit floats (integers from truncated x, so that no rounding of x + i
 * crosses an integer); fn rows: k per-element results of a row kernel. */
static char *mixed_source(int k) {
    size_t cap = 256 + (size_t)k * 64;
    char *s = calloc(cap, 1);
    append(s, cap, "fn dtypes(x: f32[N]) -> (");
    for (int i = 0; i < k; i++)
        append(s, cap, "%s%s[N]", i ? ", " : "", DTYPES[i % NDTYPES]);
    append(s, cap, ") {\n    return ");
    for (int i = 0; i < k; i++) {
        const char *t = DTYPES[i % NDTYPES];
        if (t[0] == 'i')
            append(s, cap, "%s%s(x) + %d", i ? ", " : "", t, i);
        else
            append(s, cap, "%s%s(x + %d.0)", i ? ", " : "", t, i);
    }
    append(s, cap, ";\n}\nfn rows(x: f32[R, C]) -> (");
    for (int i = 0; i < k; i++)
        append(s, cap, "%sf32[R, C]", i ? ", " : "");
    append(s, cap, ") {\n    let s = sum(x, axis=1);\n    return ");
    for (int i = 0; i < k; i++)
        append(s, cap, "%sx * %d.0 - s", i ? ", " : "", i + 1);
    append(s, cap, ";\n}\n");
    return s;
}

/* ---- building -------------------------------------------------------------------------------- */

/* The process's CPU time, not the wall clock: the build's own work, which other processes on
 * a busy machine do not stretch (in CI's sanitizer pass, 3 tests on 2 cores, a wall-clock
 * build of 120 results once took 1.04 s against 0.43-0.50 s alone, 8.1x the 30 results' time
 * where 2.9-3.2x is usual) */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The module of src for target t, with the cache off. */
static fusec_status compile(const char *src, fusec_target t, fusec_module **m) {
    fusec_options o;
    fusec_options_init(&o);
    o.target = t;
    o.no_cache = 1;
    return fusec_module_compile_string("test.fuse", src, strlen(src), &o, m);
}

/* The module of src for target t, built; *secs (may be NULL): the CPU time the compile and
 * build took. */
static fusec_module *build(const char *src, fusec_target t, double *secs) {
    fusec_module *m = NULL;
    double t0 = now_s();
    fusec_status st = compile(src, t, &m);
    if (st == FUSEC_OK) st = fusec_module_build(m);
    if (secs) *secs = now_s() - t0;
    CHECK_MSG(st == FUSEC_OK, "%s %s", fusec_module_message(m), fusec_module_diagnostics(m));
    return m;
}

/* The least of three builds' times of `wide` with k results (the machine may be busy). */
static double build_time(int k) {
    char *src = wide_source(k);
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t;
        fusec_module_free(build(src, FUSEC_TARGET_CPU, &t));
        if (t < best) best = t;
    }
    free(src);
    return best;
}

/* The basic blocks of the LLVM IR generated for `wide` with k results: the lines that are a
 * label ("name:" at the start of a line). */
static int llvm_blocks(int k) {
    char *src = wide_source(k);
    fusec_module *m = NULL;
    char *ir = NULL;
    size_t len = 0;
    fusec_status st = compile(src, FUSEC_TARGET_CPU, &m);
    if (st == FUSEC_OK) st = fusec_module_emit(m, FUSEC_EMIT_LLVM, &ir, &len);
    CHECK_MSG(st == FUSEC_OK, "%s", fusec_module_message(m));
    int blocks = 0;
    for (const char *line = ir; line && *line;) {
        size_t n = strcspn(line, "\n");
        size_t word = strcspn(line, " \t\n");
        if (n && line[0] != ';' && line[0] != ' ' && word > 1 && line[word - 1] == ':') blocks++;
        line += n + (line[n] == '\n');
    }
    fusec_free(ir);
    fusec_module_free(m);
    free(src);
    return blocks;
}

static void test_build_grows_linearly(void) {
    fusec_module_free(build("fn one(x: f32[N]) -> f32[N] { return x + 1.0; }", FUSEC_TARGET_CPU,
                            NULL)); /* LLVM loaded and set up: not charged to the first case */
    int b30 = llvm_blocks(30), b120 = llvm_blocks(MAX_RESULTS);
    CHECK_MSG(b30 > 0 && b120 - b30 < MAX_RESULTS - 30,
              "the LLVM IR has %d basic blocks for 30 results, %d for %d: control flow a result",
              b30, b120, MAX_RESULTS);
    double t1 = build_time(1), t30 = build_time(30), t120 = build_time(MAX_RESULTS);
    printf("build: 1 result %.3f s, 30 %.3f s, %d %.3f s (%.1fx, %.1fx); LLVM IR blocks %d, %d\n",
           t1, t30, MAX_RESULTS, t120, t120 / t30, t120 / t1, b30, b120);
    CHECK_MSG(t120 < 8 * t30, "building %d results took %.3f s, 30 %.3f s: %.1f times", MAX_RESULTS,
              t120, t30, t120 / t30);
    CHECK_MSG(t120 < 40 * t1, "building %d results took %.3f s, 1 %.3f s: %.1f times", MAX_RESULTS,
              t120, t1, t120 / t1);
}

/* ---- results against the reference ----------------------------------------------------------- */

static uint32_t rng = 4242;

/* How far result element of dtype t may be from the reference's: the 16-bit floats are
 * rounded from f32 on the CPU and from double in the reference (one unit in the last place
 * apart at most), f64(x + i) adds in f32 on the CPU; the rest is exact. */
static double tolerance(fusec_dtype t) {
    switch (t) {
    case FUSEC_F16: return 1.0 / 1024;
    case FUSEC_BF16: return 1.0 / 128;
    case FUSEC_F32:
    case FUSEC_F64: return 1e-6;
    default: return 0;
    }
}

/* Checks result i of `name` (n elements, cpu's against ref's): its values, and that nothing
 * past it was written. */
static void check_result(const char *name, int i, const fusec_tensor *cpu, const fusec_tensor *ref,
                         size_t n, double abs_) {
    double *g = malloc(n * sizeof *g + 1), *w = malloc(n * sizeof *w + 1);
    CHECK(fusec_convert(cpu->dtype, cpu->data, FUSEC_F64, g, n) == FUSEC_OK);
    CHECK(fusec_convert(ref->dtype, ref->data, FUSEC_F64, w, n) == FUSEC_OK);
    double rel = tolerance(cpu->dtype);
    int bad = 0;
    for (size_t k = 0; k < n && bad < 3; k++)
        if (!(fabs(g[k] - w[k]) <= rel * fabs(w[k]) + abs_)) {
            bad++;
            CHECK_MSG(0, "%s result %d [%zu] of %zu: cpu %.9g, ref %.9g", name, i, k, n, g[k],
                      w[k]);
        }
    const unsigned char *end = (const unsigned char *)cpu->data + n * fusec_dtype_size(cpu->dtype);
    for (int k = 0; k < GUARD && bad < 3; k++)
        if (end[k] != POISON) {
            bad++;
            CHECK_MSG(0, "%s result %d: byte %d past its end written", name, i, k);
        }
    free(g);
    free(w);
}

/* Launches `name` (nout results) on both targets with input x. The CPU's result i lies i
 * elements past a cache line (modulo its 64 bytes), so that the results' lines start at
 * different elements; it is poisoned first, as are GUARD bytes after it. abs_: the results'
 * absolute allowance (a row sum's). */
static void compare(fusec_module *mc, fusec_module *mr, const char *name, const fusec_tensor *x,
                    int nout, double abs_) {
    fusec_function *fc = api_fn(mc, name), *fr = api_fn(mr, name);
    fusec_tensor oc[MAX_RESULTS], orf[MAX_RESULTS];
    void *blocks[MAX_RESULTS];
    CHECK(fusec_function_result_shapes(fc, x, 1, oc, nout) == FUSEC_OK);
    size_t n = 1;
    for (int d = 0; d < oc[0].rank; d++)
        n *= (size_t)oc[0].shape[d];
    for (int i = 0; i < nout; i++) {
        size_t es = fusec_dtype_size(oc[i].dtype), bytes = n * es;
        unsigned char *b = malloc(bytes + 128 + GUARD);
        memset(b, POISON, bytes + 128 + GUARD);
        blocks[i] = b;
        oc[i].data = b + (64 - (uintptr_t)b % 64) % 64 + (size_t)i * es % 64;
        orf[i] = oc[i];
        orf[i].data = malloc(bytes + 1);
    }
    fusec_status s1 = fusec_launch(fc, x, 1, oc, nout, NULL);
    fusec_status s2 = fusec_launch(fr, x, 1, orf, nout, NULL);
    CHECK_MSG(s1 == FUSEC_OK && s2 == FUSEC_OK, "%s: %s", name, fusec_module_message(mc));
    for (int i = 0; i < nout && s1 == FUSEC_OK && s2 == FUSEC_OK; i++)
        check_result(name, i, &oc[i], &orf[i], n, abs_);
    for (int i = 0; i < nout; i++) {
        free(blocks[i]);
        free(orf[i].data);
    }
}

/* An input of the given shape (r == 0: [c]), uniform in [-4, 4) without zeros. */
static fusec_tensor input(int64_t r, int64_t c) {
    size_t n = (size_t)((r ? r : 1) * c);
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = api_frand(&rng, 4.0f);
    fusec_tensor t = {x, FUSEC_F32, r ? 2 : 1, {r ? r : c, r ? c : 0}, NULL};
    return t;
}

/* Each case at a size whose results are stored directly and one whose results are streamed:
 * FUSEC_CPU_STREAM_MIN_BYTES is 64 KiB (set in main), which a launch's results together
 * reach from 137 elements of `wide` (480 bytes an element), 273 of `rows` (240). */
static void test_results(void) {
    char *wide = wide_source(MAX_RESULTS), *mixed = mixed_source(60);
    fusec_module *wc = build(wide, FUSEC_TARGET_CPU, NULL),
                 *wr = build(wide, FUSEC_TARGET_REF, NULL);
    double tm;
    fusec_module *mc = build(mixed, FUSEC_TARGET_CPU, &tm);
    /* a row kernel that copies more buffers than LG_NARROW_BUFFERS has no narrow body
     * (codegen/cpu/llvm.c): with one, this module took over 30 s, with 120 results 139 s */
    CHECK_MSG(tm < 10.0, "building 60 results of every dtype and 60 of a row kernel took %.1f s",
              tm);
    fusec_module *mr = build(mixed, FUSEC_TARGET_REF, NULL);
    const int64_t sizes[] = {100, 100003};
    for (int s = 0; s < 2; s++) {
        fusec_tensor x = input(0, sizes[s]);
        compare(wc, wr, "wide", &x, MAX_RESULTS, 0);
        compare(mc, mr, "dtypes", &x, 60, 0);
        free(x.data);
    }
    const int64_t shapes[][2] = {{3, 77}, {5, 30011}};
    for (int s = 0; s < 2; s++) {
        fusec_tensor x = input(shapes[s][0], shapes[s][1]);
        /* a row sum's allowance: 1e-5 * sum(|x|) <= 4e-5 * C */
        compare(mc, mr, "rows", &x, 60, 4e-5 * (double)shapes[s][1]);
        free(x.data);
    }
    fusec_module_free(wc);
    fusec_module_free(wr);
    fusec_module_free(mc);
    fusec_module_free(mr);
    free(wide);
    free(mixed);
}

int main(void) {
    char why[512];
    if (!rt_backend_cpu.available(why, sizeof why)) {
        printf("the cpu backend is not available: %s; skipping\n", why);
        return 77;
    }
    /* read at the first launch: results of 64 KiB and more are streamed */
    setenv("FUSEC_CPU_STREAM_MIN_BYTES", "65536", 1);
    test_build_grows_linearly();
    test_results();
    return check_exit("test_cpu_many_results");
}
