/* tests/unit/test_ir_read.c: the IR reader (ir/read.h) against the printer. Every function of
 * every .fuse file under examples/, tests/programs/ and bench/programs/, unpartitioned, fused,
 * --no-fuse and as --dump-after prints it after each pass, goes print -> read -> print, which
 * must give the same bytes; where the IR itself is at hand the read function must also equal
 * it field by field (the bits of every constant included: a printer that drops digits prints
 * its own output back unchanged, and only this catches it). Then constants at the edges of
 * each dtype, parameters and outputs numbered out of node order, one message for each kind of
 * bad text (line and column included), and mutated texts: every prefix and random byte
 * changes of printed IR, each refused with a message or read into IR that verifies and
 * round-trips. */
#include "frontend/frontend.h"
#include "ir/read.h"
#include "passes/passes.h"

#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fused_util.h"

static int nround;    /* texts that went print -> read -> print */
static int naccepted; /* mutated texts that were read (the others were refused) */
static int nfuncs;    /* functions of the programs */

/* ---- helpers --------------------------------------------------------------------------- */

static const char *print_func(ir_arena *a, const ir_func *f) {
    ir_buf b;
    ir_buf_init(&b, a);
    ir_print_func(&b, f);
    return b.data;
}

static int dim_same(const ir_func *f, ir_dim a, const ir_func *g, ir_dim b) {
    if ((a.sym < 0) != (b.sym < 0)) return 0;
    if (a.sym < 0) return a.size == b.size;
    return a.sym < f->nsyms && b.sym < g->nsyms && !strcmp(f->syms[a.sym], g->syms[b.sym]);
}

/* Shapes equal, symbols compared by name (the reader numbers them as the text names them). */
static int shape_same(const ir_func *f, const ir_shape *a, const ir_func *g, const ir_shape *b) {
    if (a->rank != b->rank) return 0;
    for (int32_t i = 0; i < a->rank; i++)
        if (!dim_same(f, a->dims[i], g, b->dims[i])) return 0;
    return 1;
}

/* Every field of every node, the constants' bits included. */
static int nodes_same(const ir_func *f, const ir_func *g, char *why, size_t n) {
    if (f->nnodes != g->nnodes) return snprintf(why, n, "%d nodes, read %d", f->nnodes, g->nnodes);
    for (ir_ref r = 0; r < f->nnodes; r++) {
        const ir_node *a = &f->nodes[r], *b = &g->nodes[r];
        int same = a->op == b->op && a->dtype == b->dtype &&
                   shape_same(f, &a->shape, g, &b->shape) && a->axes == b->axes &&
                   a->index == b->index && a->kernel == b->kernel && a->flags == b->flags &&
                   !memcmp(a->args, b->args, sizeof a->args) &&
                   !memcmp(&a->value, &b->value, sizeof a->value);
        if (!same) return snprintf(why, n, "node %%%d differs", (int)r);
    }
    return 0;
}

static int refs_same(const ir_ref *a, int32_t na, const ir_ref *b, int32_t nb) {
    return na == nb && (!na || !memcmp(a, b, (size_t)na * sizeof *a));
}

static int partition_same(const ir_func *f, const ir_func *g, char *why, size_t n) {
    const ir_partition *p = f->partition, *q = g->partition;
    if (!p || !q) return p != q ? snprintf(why, n, "a partition on one side only") : 0;
    if (p->nkernels != q->nkernels) return snprintf(why, n, "kernel counts differ");
    for (int32_t k = 0; k < p->nkernels; k++) {
        const ir_kernel *a = &p->kernels[k], *b = &q->kernels[k];
        if (a->kind != b->kind || a->reduce_axes != b->reduce_axes ||
            !shape_same(f, &a->domain, g, &b->domain) ||
            !refs_same(a->body, a->nbody, b->body, b->nbody) ||
            !refs_same(a->inputs, a->ninputs, b->inputs, b->ninputs) ||
            !refs_same(a->outputs, a->noutputs, b->outputs, b->noutputs) ||
            !refs_same(a->parts, a->nparts, b->parts, b->nparts))
            return snprintf(why, n, "kernel %d differs", (int)k);
    }
    return 0;
}

/* g, read from f's text, is f: 0, else a description in why. */
static int func_same(const ir_func *f, const ir_func *g, char *why, size_t n) {
    if (strcmp(f->name, g->name)) return snprintf(why, n, "names differ");
    if (nodes_same(f, g, why, n)) return 1;
    if (f->nparams != g->nparams || f->noutputs != g->noutputs)
        return snprintf(why, n, "parameter or output counts differ");
    for (int32_t i = 0; i < f->nparams; i++) {
        const ir_param *a = &f->params[i], *b = &g->params[i];
        if (strcmp(a->name, b->name) || a->dtype != b->dtype || a->node != b->node ||
            !shape_same(f, &a->shape, g, &b->shape))
            return snprintf(why, n, "parameter %d differs", (int)i);
    }
    for (int32_t i = 0; i < f->noutputs; i++) {
        const ir_output *a = &f->outputs[i], *b = &g->outputs[i];
        if (a->dtype != b->dtype || a->node != b->node || !shape_same(f, &a->shape, g, &b->shape))
            return snprintf(why, n, "output %d differs", (int)i);
    }
    return partition_same(f, g, why, n);
}

/* text (as the printer wrote it) read and printed again: the same bytes. Returns what was
 * read (NULL on a failure). */
static ir_func *round_trip_text(ir_arena *a, const char *text, const char *what) {
    ir_module *m = ir_module_new(a);
    ir_func *g = NULL;
    char err[512];
    int rc = ir_read_func(m, text, strlen(text), &g, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s\n%s", what, err, text);
    if (rc) return NULL;
    CHECK_MSG(ir_verify(g, err, sizeof err) == 0, "%s: read IR does not verify: %s", what, err);
    const char *again = print_func(a, g);
    CHECK_MSG(!strcmp(text, again),
              "%s: printed again differently\n--- printed:\n%s--- read "
              "and printed:\n%s",
              what, text, again);
    nround++;
    return g;
}

/* f printed, read, printed: the same bytes, and the same function. */
static void round_trip(ir_arena *a, const ir_func *f, const char *what) {
    ir_func *g = round_trip_text(a, print_func(a, f), what);
    char why[128];
    if (g) CHECK_MSG(func_same(f, g, why, sizeof why) == 0, "%s: %s", what, why);
}

/* ---- every program ---------------------------------------------------------------------- */

/* f through the pipeline (no_fuse or not), with the IR after pass `dump` (NULL: none) in
 * *dump; NULL on a failure. */
static ir_func *pipeline(ir_arena *a, const ir_func *f, int no_fuse, const char *dump,
                         const char **dump_text) {
    ir_func *g = ir_func_clone(a, f);
    ir_buf b;
    ir_buf_init(&b, a);
    pass_options o = {0};
    o.no_fuse = no_fuse;
    o.dump_after = dump;
    o.dump = &b;
    char err[512];
    int rc = pass_run_pipeline(g, &o, err, sizeof err);
    CHECK_MSG(rc == PASS_OK, "%s: %s", f->name, err);
    if (dump_text) *dump_text = b.data;
    return rc == PASS_OK ? g : NULL;
}

/* f's --dump-after text after each pass that runs in the mode, read and printed again. */
static void round_trip_dumps(ir_arena *a, const ir_func *f, int no_fuse, const char *file) {
    char names[256], what[1024];
    snprintf(names, sizeof names, "%s", pass_names());
    for (char *save = NULL, *p = strtok_r(names, ", ", &save); p; p = strtok_r(NULL, ", ", &save)) {
        int fuse_pass = !strncmp(p, "fuse_", 5), nofuse_pass = !strcmp(p, "nofuse");
        if ((no_fuse && fuse_pass) || (!no_fuse && nofuse_pass)) continue;
        const char *text = NULL;
        if (!pipeline(a, f, no_fuse, p, &text) || !text) continue;
        snprintf(what, sizeof what, "%.300s: %.300s%s after %s", file, f->name,
                 no_fuse ? " (--no-fuse)" : "", p);
        round_trip_text(a, text, what);
    }
}

/* A module's text read by ir_read_module and printed again as `want` (ir_print_module's
 * form: the functions apart by a blank line). */
static void round_trip_module(ir_arena *a, const char *text, const char *want, const char *what) {
    ir_module *back = NULL;
    char err[512];
    int rc = ir_read_module(a, text, strlen(text), &back, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", what, err);
    if (rc) return;
    ir_buf again;
    ir_buf_init(&again, a);
    ir_print_module(&again, back);
    CHECK_MSG(!strcmp(want, again.data), "%s: the module printed again differently", what);
    nround++;
}

/* Every function of one file: checked, fused, --no-fuse, each dump; then the whole module as
 * --emit=ir prints it (a blank line between functions) and as --dump-after does (none),
 * fused and --no-fuse, through ir_read_module. */
static void test_file(const char *path) {
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = checked_file(&a, path);
    for (int no_fuse = 0; m && no_fuse < 2; no_fuse++) {
        ir_buf all, bare;
        ir_buf_init(&all, &a);
        ir_buf_init(&bare, &a);
        for (int32_t i = 0; i < m->nfuncs; i++) {
            char what[1024];
            snprintf(what, sizeof what, "%.300s: %.300s", path, m->funcs[i]->name);
            if (!no_fuse) nfuncs++;
            if (!no_fuse) round_trip(&a, m->funcs[i], what);
            ir_func *g = pipeline(&a, m->funcs[i], no_fuse, NULL, NULL);
            snprintf(what, sizeof what, "%.300s: %.300s%s", path, m->funcs[i]->name,
                     no_fuse ? " --no-fuse" : " fused");
            if (g) round_trip(&a, g, what);
            round_trip_dumps(&a, m->funcs[i], no_fuse, path);
            if (i) ir_buf_puts(&all, "\n");
            if (g) ir_print_func(&all, g);
            if (g) ir_print_func(&bare, g);
        }
        round_trip_module(&a, all.data, all.data, path);
        round_trip_module(&a, bare.data, all.data, path);
    }
    ir_arena_free(&a);
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every .fuse file of dir (under $FUSEC_SRC), in name order; the number of files. */
static int test_dir(const char *dir) {
    char full[1024], rel[300], *names[256];
    const char *src = getenv("FUSEC_SRC");
    snprintf(full, sizeof full, "%s/%s", src ? src : ".", dir);
    DIR *d = opendir(full);
    CHECK_MSG(d != NULL, "cannot list %s", full);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 256;) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".fuse")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        snprintf(rel, sizeof rel, "%.40s/%.200s", dir, names[i]);
        test_file(rel);
        free(names[i]);
    }
    return n;
}

/* ---- constants, numbering --------------------------------------------------------------- */

/* Constants at the edges of each dtype, each a result: unpartitioned, and partitioned (each
 * returned constant gets a copy kernel, a cast to its own dtype, which no builder makes). */
static void test_constants(void) {
    static const double floats[] = {0.0,     -0.0,   0.1,  1.0 / 3, 5e-324, 2.2250738585072014e-308,
                                    DBL_MAX, -1e300, 1e22, 65504.0, 3e+01};
    static const int64_t i64s[] = {INT64_MIN, INT64_MAX, 0, -1};
    static const int64_t i32s[] = {INT32_MIN, INT32_MAX};
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = ir_module_new(&a);
    ir_func *f = ir_func_new(m, "edges");
    ir_shape s0 = {0};
    ir_ref c[64];
    int n = 0;
    for (size_t i = 0; i < sizeof floats / sizeof *floats; i++) {
        c[n++] = ir_const_float(f, IR_F64, floats[i]);
        c[n++] = ir_const_float(f, i % 2 ? IR_F16 : IR_BF16, floats[i]); /* not rounded */
    }
    c[n++] = ir_const_float(f, IR_F32, NAN);
    c[n++] = ir_const_float(f, IR_F32, -NAN);
    volatile double zero = 0.0;
    c[n++] = ir_const_float(f, IR_F64, zero / zero); /* x86's default NaN: negative */
    c[n++] = ir_const_float(f, IR_F32, INFINITY);
    c[n++] = ir_const_float(f, IR_F32, -INFINITY);
    for (size_t i = 0; i < 4; i++)
        c[n++] = ir_const_int(f, IR_I64, i64s[i]);
    for (size_t i = 0; i < 2; i++)
        c[n++] = ir_const_int(f, IR_I32, i32s[i]);
    c[n++] = ir_const_int(f, IR_BOOL, 1);
    c[n++] = ir_const_int(f, IR_BOOL, 0);
    for (int i = 0; i < n; i++)
        ir_add_output(f, c[i], f->nodes[c[i]].dtype, &s0);
    round_trip(&a, f, "edge constants");
    CHECK(strstr(print_func(&a, f), "= const -nan : f32[]") != NULL);
    ir_func *g = ir_func_clone(&a, f);
    char err[512];
    pass_options o = {0};
    int rc = pass_run_pipeline(g, &o, err, sizeof err);
    CHECK_MSG(rc == PASS_OK, "%s", err);
    if (rc == PASS_OK) round_trip(&a, g, "edge constants partitioned");
    ir_arena_free(&a);
}

/* Parameters and outputs numbered out of node order, and a broadcast to its own shape: valid
 * IR the front end never makes, read as written. */
static void test_numbering(void) {
    static const char text[] = "func swap(%1: f32[M], %0: f32[N]) -> (f32[N], f32[M])\n"
                               "  %0 = input 1 \"y\" : f32[N]\n"
                               "  %1 = input 0 \"x\" : f32[M]\n"
                               "  %2 = broadcast %0 : f32[N]\n"
                               "  %3 = output 1 %1 : f32[M]\n"
                               "  %4 = output 0 %2 : f32[N]\n";
    ir_arena a;
    ir_arena_init(&a);
    ir_func *g = round_trip_text(&a, text, "numbering");
    if (g) {
        CHECK(g->nparams == 2 && !strcmp(g->params[0].name, "x") && g->params[0].node == 1);
        CHECK(g->nodes[0].index == 1 && g->nodes[1].index == 0);
        CHECK(g->outputs[0].node == 4 && g->outputs[1].node == 3 && g->nodes[3].index == 1);
        CHECK(g->nodes[2].op == IR_OP_BROADCAST && g->nodes[2].args[0] == 0);
        CHECK(g->nsyms == 2 && !strcmp(g->syms[0], "M")); /* in the order the text names them */
    }
    ir_arena_free(&a);
}

/* ---- bad text ---------------------------------------------------------------------------- */

#define HEAD  "func f(%0: f32[N], %1: f32[N]) -> f32[N]\n"
#define IN2   "  %0 = input 0 \"x\" : f32[N]\n  %1 = input 1 \"y\" : f32[N]\n"
#define OUT3  "  %3 = output 0 %2 : f32[N]\n"
#define GOOD  HEAD IN2 "  %2 = add %0, %1 : f32[N]\n" OUT3
#define SHEAD "func s(%0: f32[R, C]) -> f32[R, 1]\n  %0 = input 0 \"x\" : f32[R, C]\n"

/* Each text is refused with a message that holds `want` (its line and column included). */
static const struct {
    const char *what, *text, *want;
} bad[] = {
    {"truncated line", HEAD IN2 "  %2 = add %0, %1\n" OUT3,
     "4:18: expected ':' and the node's type, found end of line"},
    {"truncated type", HEAD IN2 "  %2 = add %0, %1 : f32[N", "4:26: expected ',' or ']'"},
    {"truncated header", "func f(%0: f32[N]", "1:18: expected ',' or ')', found end of line"},
    {"unknown op", HEAD IN2 "  %2 = frobnicate %0, %1 : f32[N]\n" OUT3,
     "4:8: unknown op 'frobnicate'"},
    {"bad dtype", HEAD IN2 "  %2 = add %0, %1 : f33[N]\n" OUT3, "4:21: unknown dtype 'f33'"},
    {"bad dtype in the header", "func f(%0: float[N]) -> f32[N]\n", "1:12: unknown dtype 'float'"},
    {"undefined ref", HEAD IN2 "  %2 = add %0, %7 : f32[N]\n" OUT3, "4:16: undefined %7"},
    {"shape mismatch",
     "func f(%0: f32[N], %1: f32[M]) -> f32[N]\n  %0 = input 0 \"x\" : f32[N]\n"
     "  %1 = input 1 \"y\" : f32[M]\n  %2 = add %0, %1 : f32[N]\n" OUT3,
     "4:3: %2: add operand 2 has shape [M] but node has [N]"},
    {"reduction shape",
     SHEAD "  %1 = sum %0 axes=(1) : f32[R, C]\n  %2 = output 0 %1 : f32[R, 1]\n",
     "3:3: %1: sum of shape [R, C] gives [R, 1] but node has [R, C]"},
    {"dtype mismatch", HEAD IN2 "  %2 = add %0, %1 : f64[N]\n" OUT3,
     "4:3: %2: add operand 1 has dtype f32 but node has f64"},
    {"wrong arity", HEAD IN2 "  %2 = add %0 : f32[N]\n" OUT3, "4:8: add takes 2 operands, not 1"},
    {"wrong arity of a unary op", HEAD IN2 "  %2 = exp %0, %1 : f32[N]\n" OUT3,
     "4:8: exp takes 1 operand, not 2"},
    {"too many operands", HEAD IN2 "  %2 = where %0, %1, %1, %1 : f32[N]\n" OUT3,
     "4:26: more than 3 operands"},
    {"operand after the node", HEAD IN2 "  %2 = add %0, %3 : f32[N]\n" OUT3,
     "4:3: %2: add operand 2 is %3, not an earlier node"},
    {"an output as an operand", HEAD IN2 "  %2 = output 0 %0 : f32[N]\n  %3 = neg %2 : f32[N]\n",
     "5:3: %3: neg operand 1 is %2, an output"},
    {"defined twice", HEAD IN2 "  %1 = add %0, %0 : f32[N]\n" OUT3,
     "4:3: %1 is defined twice (first at line 3)"},
    {"a gap in the numbers", HEAD IN2 "  %2 = add %0, %1 : f32[N]\n  %4 = output 0 %2 : f32[N]\n",
     "5:3: %4 in a function of 4 nodes: they are numbered from %0 without a gap"},
    {"bad float", HEAD IN2 "  %2 = const 1.2.3 : f32[]\n" OUT3, "4:14: bad float constant '1.2.3'"},
    {"float out of range", HEAD IN2 "  %2 = const 1e999 : f64[]\n" OUT3,
     "4:14: float constant '1e999' out of range"},
    {"missing constant", HEAD IN2 "  %2 = const : f32[]\n" OUT3,
     "4:14: expected the constant's value, found ':'"},
    {"i32 out of range", HEAD IN2 "  %2 = const 3000000000 : i32[]\n" OUT3,
     "4:3: %2: i32 const has value 3000000000"},
    {"i64 out of range", HEAD IN2 "  %2 = const 9223372036854775808 : i64[]\n" OUT3,
     "4:14: number out of range (64 bits)"},
    {"bad bool", HEAD IN2 "  %2 = const 1 : bool[]\n" OUT3, "4:14: bad bool constant"},
    {"const of rank 1", HEAD IN2 "  %2 = const 1.0 : f32[N]\n" OUT3,
     "4:3: %2: const has rank 1 (must be 0)"},
    {"axes on an element-wise op", HEAD IN2 "  %2 = add %0, %1 axes=(0) : f32[N]\n" OUT3,
     "4:19: expected ':' and the node's type, found 'axes'"},
    {"reduction without axes", SHEAD "  %1 = sum %0 : f32[R, 1]\n",
     "3:15: expected 'axes=(..)', found ':'"},
    {"axes not going up", SHEAD "  %1 = sum %0 axes=(1, 0) : f32[1, 1]\n",
     "3:24: axis 0 after axis 1 (axes go up)"},
    {"axis out of range", SHEAD "  %1 = sum %0 axes=(32) : f32[1, 1]\n",
     "3:21: axis 32 out of range (0 to 31)"},
    {"rank over 8", "func f(%0: f32[1, 2, 3, 4, 5, 6, 7, 8, 9]) -> f32[]\n",
     "1:40: more than 8 dims"},
    {"negative dim", "func f(%0: f32[-4]) -> f32[]\n", "1:18: negative dim -4"},
    {"bad dim", "func f(%0: f32[?sym0]) -> f32[]\n",
     "1:16: expected a dim (a size or a name), found '?'"},
    {"huge node number", HEAD "  %99999999999 = input 0 \"x\" : f32[N]\n",
     "2:4: node number 99999999999 out of range"},
    {"junk after the type", HEAD IN2 "  %2 = add %0, %1 : f32[N] stored!\n" OUT3,
     "4:34: expected the end of the line, found '!'"},
    {"unterminated name", HEAD "  %0 = input 0 \"x : f32[N]\n",
     "2:27: the name has no closing '\"'"},
    {"header against a parameter",
     "func f(%0: f32[M]) -> f32[N]\n  %0 = input 0 \"x\" : f32[N]\n"
     "  %1 = output 0 %0 : f32[N]\n",
     "1:8: parameter 0 is f32[M] in the header but %0 is f32[N]"},
    {"header against a result",
     "func f(%0: f32[N]) -> f64[N]\n  %0 = input 0 \"x\" : f32[N]\n"
     "  %1 = output 0 %0 : f32[N]\n",
     "1:1: result 0 is f64[N] in the header but output 0 (%1) is f32[N]"},
    {"too few header parameters", "func f() -> f32[N]\n  %0 = input 0 \"x\" : f32[N]\n",
     "1:1: the header has 0 parameters but the function 1 input lines"},
    {"input numbered twice", HEAD "  %0 = input 0 \"x\" : f32[N]\n  %1 = input 0 \"y\" : f32[N]\n",
     "3:3: input 0 twice (also %0)"},
    {"output past the count", HEAD IN2 "  %2 = output 1 %0 : f32[N]\n",
     "4:3: output 1 of 1 outputs"},
    {"garbage", "hello world\n", "1:1: expected 'func', found 'hello'"},
    {"garbage in a body", HEAD "  hello\n",
     "2:3: expected a node line '%N = ...', 'kernel' or 'func'"},
    {"nothing", "# only a comment\n\n", "1:1: no function in the text"},
    {"a second function", GOOD "func g() -> ()\n", "6:1: a second function"},
    {"a body line without a kernel", HEAD "    %0 = input 0 \"x\" : f32[N]\n",
     "2:5: a node line indented as a kernel's body, with no kernel line above"},
    {"kernel out of order", "func f() -> ()\nkernel 1 pointwise domain=[] in=() out=()\n",
     "2:8: kernel 1 where kernel 0 comes next"},
    {"unknown kernel kind", "func f() -> ()\nkernel 0 sideways domain=[] in=() out=()\n",
     "2:10: unknown kernel kind 'sideways'"},
    {"kernel without in=", "func f() -> ()\nkernel 0 pointwise domain=[N] out=()\n",
     "2:31: expected 'in=(..)', found 'out'"},
    {"partition: a value not stored",
     "func f(%0: f32[N]) -> f32[N]\n  %0 = input 0 \"x\" : f32[N]\n"
     "kernel 0 pointwise domain=[N] in=(%0) out=(%1)\n    %1 = exp %0 : f32[N]\n"
     "  %2 = output 0 %1 : f32[N]\n",
     "4:5: %1 is not stored but another kernel or an output reads it"},
    {"partition: a kernel input of no node",
     "func f(%0: f32[N]) -> f32[N]\n  %0 = input 0 \"x\" : f32[N]\n"
     "kernel 0 pointwise domain=[N] in=(%9) out=(%1)\n    %1 = exp %0 : f32[N] stored\n"
     "  %2 = output 0 %1 : f32[N]\n",
     "3:1: kernel 0: input %9 is no node"},
    {"partition: a node in no kernel",
     "func f(%0: f32[N]) -> f32[N]\n  %0 = input 0 \"x\" : f32[N]\n"
     "kernel 0 pointwise domain=[N] in=(%0) out=(%2)\n    %2 = exp %1 : f32[N] stored\n"
     "  %1 = exp %0 : f32[N]\n  %3 = output 0 %2 : f32[N]\n",
     "5:3: %1 (exp) is in no kernel"},
};

static void test_bad_text(void) {
    ir_arena a;
    ir_arena_init(&a);
    ir_module *m = ir_module_new(&a);
    ir_func *g = NULL;
    char err[512];
    CHECK_MSG(ir_read_func(m, GOOD, strlen(GOOD), &g, err, sizeof err) == 0, "good: %s", err);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int32_t before = m->nfuncs;
        g = (ir_func *)1;
        strcpy(err, "(none)");
        int rc = ir_read_func(m, bad[i].text, strlen(bad[i].text), &g, err, sizeof err);
        CHECK_MSG(rc == -1 && !g && m->nfuncs == before, "%s: accepted", bad[i].what);
        CHECK_MSG(strstr(err, bad[i].want) != NULL, "%s: message\n  got:  %s\n  want: %s",
                  bad[i].what, err, bad[i].want);
    }
    /* a NUL byte inside the text is a character like any other */
    static const char nul[] = "func f() -> ()\n\0\n";
    CHECK(ir_read_func(m, nul, sizeof nul - 1, &g, err, sizeof err) == -1 && strstr(err, "2:1:"));
    /* a module stops at its first bad function */
    ir_module *mm = (ir_module *)1;
    const char *two = GOOD "\nfunc g(%0: f32[N]) -> f32[N]\n  %0 = nonsense\n";
    CHECK(ir_read_module(&a, two, strlen(two), &mm, err, sizeof err) == -1 && !mm);
    CHECK_MSG(strstr(err, "8:8: unknown op 'nonsense'") != NULL, "%s", err);
    ir_arena_free(&a);
}

/* ---- mutated texts ----------------------------------------------------------------------- */

static uint64_t rng = 0x2545f4914f6cdd1du;

static uint32_t pick(uint32_t n) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 33) % n;
}

/* text (len bytes, not NUL-terminated) read: refused with "L:C: ...", or read into IR that
 * verifies and, printed, reads back to the same text. */
static void read_mutant(ir_arena *a, const char *text, size_t len, const char *what) {
    ir_module *m = ir_module_new(a);
    ir_func *g = NULL;
    char err[512] = "";
    if (ir_read_func(m, text, len, &g, err, sizeof err)) {
        int line = 0, col = 0;
        CHECK_MSG(sscanf(err, "%d:%d: ", &line, &col) == 2 && line > 0 && col > 0,
                  "%s: message without a place: %s", what, err);
        return;
    }
    CHECK_MSG(ir_verify(g, err, sizeof err) == 0, "%s: accepted IR that does not verify: %s", what,
              err);
    naccepted++;
    round_trip_text(a, print_func(a, g), what);
}

/* text with line `from` put in place of line `to` (op 0), the two swapped (op 1), or line
 * `from` dropped (op 2): nodes then come twice, out of order or not at all. Into buf (room
 * for twice the text); its length. */
static size_t line_mutant(const char *text, char *buf, int op, int from, int to) {
    const char *at[4096];
    size_t len[4096];
    int n = 0;
    for (const char *p = text; *p && n < 4096; n++) {
        at[n] = p;
        len[n] = strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n');
        p += len[n];
    }
    from %= n;
    to %= n;
    size_t out = 0;
    for (int i = 0; i < n; i++) {
        int src = i;
        if (op == 0 && i == to) src = from;
        if (op == 1 && (i == to || i == from)) src = i == to ? from : to;
        if (op == 2 && i == from) continue;
        memcpy(buf + out, at[src], len[src]);
        out += len[src];
    }
    return out;
}

/* FUSEC_TEST_QUICK=1 (the sanitizers' pass, where the mutants took 19 of 23 s): a quarter of
 * the mutated texts, each prefix length and mutation still drawn the same way */
static int quick;

/* Every prefix of text, 400 texts with one to three bytes changed and 100 with a line moved,
 * copied or dropped (quick: every 4th prefix, 100 and 25); the number of texts read. */
static int mutate(ir_arena *a, const char *text) {
    static const char alphabet[] = "%0123456789=:,()[]\" \nabcdefkNRC-.xyz#";
    size_t len = strlen(text);
    char *buf = malloc(2 * len + 2);
    int n = 0, every = quick ? 4 : 1;
    for (size_t cut = 0; buf && cut < len; cut += (size_t)every, n++)
        read_mutant(a, text, cut, "a prefix");
    for (int k = 0; buf && k < 400 / every; k++, n++) {
        memcpy(buf, text, len);
        for (int j = 0, changes = 1 + (int)pick(3); j < changes; j++)
            buf[pick((uint32_t)len)] = alphabet[pick(sizeof alphabet - 1)];
        read_mutant(a, buf, len, "a mutant");
    }
    for (int k = 0; buf && k < 100 / every; k++, n++) {
        size_t n2 = line_mutant(text, buf, (int)pick(3), (int)pick(1000), (int)pick(1000));
        read_mutant(a, buf, n2, "a line mutant");
    }
    free(buf);
    return n;
}

/* The functions of two programs, unpartitioned, fused and --no-fuse, mutated. */
static void test_mutants(void) {
    static const char *const files[] = {"tests/programs/fusion_models.fuse",
                                        "tests/programs/cpu_dtypes.fuse"};
    int mutants = 0;
    for (size_t fi = 0; fi < sizeof files / sizeof *files; fi++) {
        char *src = read_text(files[fi]);
        CHECK(src != NULL);
        if (!src) continue;
        ir_arena a;
        ir_arena_init(&a);
        ir_module *m = checked_module(&a, files[fi], src);
        free(src);
        for (int32_t i = 0; m && i < m->nfuncs; i++) {
            mutants += mutate(&a, print_func(&a, m->funcs[i]));
            for (int no_fuse = 0; no_fuse < 2; no_fuse++) {
                ir_func *g = pipeline(&a, m->funcs[i], no_fuse, NULL, NULL);
                if (g) mutants += mutate(&a, print_func(&a, g));
            }
        }
        ir_arena_free(&a);
    }
    CHECK(mutants > (quick ? 2500 : 10000));
    if (getenv("FUSEC_TEST_VERBOSE"))
        printf("mutated texts: %d, %d of them read as valid IR\n", mutants, naccepted);
}

int main(void) {
    quick = getenv("FUSEC_TEST_QUICK") != NULL;
    int files = test_dir("examples") + test_dir("tests/programs") + test_dir("bench/programs");
    CHECK(files >= 10);
    printf("test_ir_read: %d files, %d functions, %d texts round-tripped\n", files, nfuncs, nround);
    test_constants();
    test_numbering();
    test_bad_text();
    test_mutants();
    return check_exit("test_ir_read");
}
