/* tests/unit/test_parser.c: the parser, the AST printer and the diagnostics: precedence
 * and associativity through the printed AST, the exact text and position of every syntax
 * error, recovery, depth limits and inputs too big or too strange to trust. */
#include "frontend/frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Everything one parse produced. All memory is in `arena`, freed by done(). */
typedef struct result {
    ir_arena arena;
    diag_ctx d;
    ast_file *file;
    int nerrors;
    const char *diag; /* the rendered diagnostics */
    const char *ast;  /* parse_print_ast */
} result;

static void parse_n(result *r, const char *src, size_t len) {
    ir_arena_init(&r->arena);
    char *copy = ir_arena_alloc(&r->arena, len + 1);
    memcpy(copy, src, len);
    copy[len] = 0;
    diag_init(&r->d, &r->arena, "t.fuse", copy, len);
    r->nerrors = parse_file(&r->d, &r->file);
    r->diag = r->d.out.data;
    ir_buf b;
    ir_buf_init(&b, &r->arena);
    parse_print_ast(&b, r->file);
    r->ast = b.data;
}

static void parse(result *r, const char *src) {
    parse_n(r, src, strlen(src));
}

static void done(result *r) {
    ir_arena_free(&r->arena);
}

/* ---- precedence, associativity and the printed form -------------------------------- */

/* The printed form of `e` as the expression of a return statement. */
static void check_expr(int line, const char *e, const char *want) {
    char src[1024], expect[1024];
    snprintf(src, sizeof src, "fn f() -> f32[] {\n  return %s;\n}\n", e);
    snprintf(expect, sizeof expect, "fn f() -> f32[]\n  return %s\n", want);
    result r;
    parse(&r, src);
    if (r.nerrors || strcmp(r.ast, expect) != 0) {
        fprintf(stderr, "%s:%d: `%s`\n--- got:\n%s%s--- want:\n%s", __FILE__, line, e, r.diag,
                r.ast, expect);
        failures++;
    }
    done(&r);
}

#define CHECK_EXPR(e, want) check_expr(__LINE__, e, want)

static void test_precedence(void) {
    CHECK_EXPR("a + b * c", "(+ a (* b c))");
    CHECK_EXPR("a * b + c", "(+ (* a b) c)");
    CHECK_EXPR("a - b - c", "(- (- a b) c)");
    CHECK_EXPR("a / b * c", "(* (/ a b) c)");
    CHECK_EXPR("a % b + c", "(+ (% a b) c)");
    CHECK_EXPR("a - (b - c)", "(- a (- b c))");
    CHECK_EXPR("-x * y", "(* (- x) y)");
    CHECK_EXPR("-x + -y", "(+ (- x) (- y))");
    CHECK_EXPR("- -x", "(- (- x))");
    CHECK_EXPR("--x", "(- (- x))");
    CHECK_EXPR("x - -1", "(- x (- 1))");
    CHECK_EXPR("-(x * y)", "(- (* x y))");
    CHECK_EXPR("!a && b || c", "(|| (&& (! a) b) c)");
    CHECK_EXPR("a || b && c", "(|| a (&& b c))");
    CHECK_EXPR("a || b || c", "(|| (|| a b) c)");
    CHECK_EXPR("a && b && c", "(&& (&& a b) c)");
    CHECK_EXPR("!(a < b)", "(! (< a b))");
    CHECK_EXPR("a + b < c * d", "(< (+ a b) (* c d))");
    CHECK_EXPR("a == b && c != d", "(&& (== a b) (!= c d))");
    CHECK_EXPR("a <= b || a >= b", "(|| (<= a b) (>= a b))");
    CHECK_EXPR("(a < b) == (c > d)", "(== (< a b) (> c d))");
    CHECK_EXPR("(a < b) < c", "(< (< a b) c)");
    CHECK_EXPR("a ? b : c", "(? a b c)");
    CHECK_EXPR("a ? b : c ? d : e", "(? a b (? c d e))");
    CHECK_EXPR("a ? b ? c : d : e", "(? a (? b c d) e)");
    CHECK_EXPR("a < b ? x + 1 : -y", "(? (< a b) (+ x 1) (- y))");
    CHECK_EXPR("a || b ? c : d", "(? (|| a b) c d)");
    CHECK_EXPR("(a ? b : c) * 2", "(* (? a b c) 2)");
    CHECK_EXPR("((((x))))", "x");
}

static void test_calls_and_literals(void) {
    CHECK_EXPR("max(x, axis=1)", "(max x axis=1)");
    CHECK_EXPR("sum(x, axis=-1)", "(sum x axis=-1)");
    CHECK_EXPR("sum(x, axis=(0, -1))", "(sum x axis=(0, -1))");
    CHECK_EXPR("sum(x, axis=(2))", "(sum x axis=(2))");
    CHECK_EXPR("f()", "(f)");
    CHECK_EXPR("where(c, a, b)", "(where c a b)");
    CHECK_EXPR("exp(x - max(x, axis=1))", "(exp (- x (max x axis=1)))");
    CHECK_EXPR("f32(x + 1)", "(cast f32 (+ x 1))");
    CHECK_EXPR("bf16(i32(x)) * 2", "(* (cast bf16 (cast i32 x)) 2)");
    CHECK_EXPR("-f(x)", "(- (f x))");
    CHECK_EXPR("1.0", "1.0");
    CHECK_EXPR(".5", "0.5");
    CHECK_EXPR("2.", "2.0");
    CHECK_EXPR("1e-5", "1e-05");
    CHECK_EXPR("3.5E+2", "350.0");
    CHECK_EXPR("0.1", "0.1");
    CHECK_EXPR("1e20", "1e+20");
    CHECK_EXPR("123456789.0", "123456789.0");
    CHECK_EXPR("0.7978845608028654", "0.7978845608028654");
    CHECK_EXPR("0.044715", "0.044715");
    CHECK_EXPR("4e-320", "4e-320");
    CHECK_EXPR("0.30000000000000004", "0.30000000000000004");
    CHECK_EXPR("123", "123");
    CHECK_EXPR("9223372036854775807", "9223372036854775807");
    CHECK_EXPR("-1", "(- 1)");
    CHECK_EXPR("true && !false", "(&& true (! false))");
}

static void test_functions(void) {
    result r;
    parse(&r, "# softmax\n"
              "fn softmax(x: f32[R, C]) -> f32[R, C] {\n"
              "    let e = exp(x - max(x, axis=1));    # max keeps axis 1\n"
              "    return e / sum(e, axis=1);\n"
              "}\n"
              "\n"
              "fn stats(x: f32[N], k: i64[2, N, 1]) -> (f32[], f32[]) {\n"
              "    return sum(x), max(x);\n"
              "}\n"
              "fn s(b: bool[]) -> (bool[]) { return b; }\n"
              "fn none() -> f64[] { return 1.5; }\n");
    CHECK(r.nerrors == 0);
    CHECK_STR(r.diag, "");
    CHECK_STR(r.ast, "fn softmax(x: f32[R, C]) -> f32[R, C]\n"
                     "  let e = (exp (- x (max x axis=1)))\n"
                     "  return (/ e (sum e axis=1))\n"
                     "fn stats(x: f32[N], k: i64[2, N, 1]) -> (f32[], f32[])\n"
                     "  return (sum x), (max x)\n"
                     "fn s(b: bool[]) -> (bool[])\n"
                     "  return b\n"
                     "fn none() -> f64[]\n"
                     "  return 1.5\n");
    CHECK(r.file->nfuncs == 4);
    if (r.file->nfuncs == 4) {
        const ast_func *f = &r.file->funcs[0];
        CHECK(f->loc.line == 2 && f->loc.col == 4);
        CHECK(f->nparams == 1 && f->params[0].loc.line == 2 && f->params[0].loc.col == 12);
        CHECK(f->params[0].type.dtype == IR_F32 && f->params[0].type.rank == 2);
        CHECK(f->params[0].type.loc.col == 15);
        CHECK(strcmp(f->params[0].type.dims[1].name, "C") == 0);
        CHECK(f->params[0].type.dims[1].loc.col == 22);
        CHECK(f->nrets == 1 && !f->ret_is_tuple);
        CHECK(f->nlets == 1 && f->lets[0].loc.line == 3 && f->lets[0].loc.col == 9);
        CHECK(f->return_loc.line == 4 && f->return_loc.col == 5);
        CHECK(f->nresults == 1);

        /* e / sum(e, axis=1): a binary's loc is its left operand, op_loc the operator */
        const ast_expr *div = f->results[0];
        CHECK(div->kind == AST_BINARY && div->u.binary.op == IR_OP_DIV);
        CHECK(div->loc.line == 4 && div->loc.col == 12);
        CHECK(div->u.binary.op_loc.col == 14);
        const ast_expr *sum = div->u.binary.r;
        CHECK(sum->kind == AST_CALL && sum->loc.col == 16 && sum->u.call.nargs == 2);
        const ast_arg *ax = &sum->u.call.args[1];
        CHECK(ax->is_axis && !ax->axis_is_tuple && ax->expr == NULL && ax->naxes == 1);
        CHECK(ax->loc.col == 23 && ax->axes[0] == 1 && ax->axes_locs[0].col == 28);
        CHECK(!sum->u.call.args[0].is_axis && sum->u.call.args[0].loc.col == 20);

        const ast_func *g = &r.file->funcs[1];
        CHECK(g->ret_is_tuple && g->nrets == 2 && g->nresults == 2);
        CHECK(g->params[1].type.rank == 3 && g->params[1].type.dims[0].name == NULL);
        CHECK(g->params[1].type.dims[0].size == 2 && g->params[1].type.dims[2].size == 1);
        CHECK(g->rets[0].rank == 0);
        CHECK(r.file->funcs[2].ret_is_tuple && r.file->funcs[2].nrets == 1);
        CHECK(r.file->funcs[3].nparams == 0);
    }
    done(&r);

    parse(&r, "fn f(x: f32[N]) -> f32[N] {\n  return -x * sum(x, axis=( 0 , -1 ));\n}\n");
    CHECK(r.nerrors == 0 && r.file->nfuncs == 1);
    if (r.file->nfuncs == 1) {
        const ast_expr *mul = r.file->funcs[0].results[0];
        CHECK(mul->kind == AST_BINARY && mul->loc.col == 10 && mul->u.binary.op_loc.col == 13);
        const ast_expr *neg = mul->u.binary.l;
        CHECK(neg->kind == AST_UNARY && neg->u.unary.op == IR_OP_NEG && neg->loc.col == 10);
        const ast_arg *ax = &mul->u.binary.r->u.call.args[1];
        CHECK(ax->is_axis && ax->axis_is_tuple && ax->naxes == 2);
        CHECK(ax->axes[0] == 0 && ax->axes[1] == -1);
        CHECK(ax->axes_locs[0].col == 29 && ax->axes_locs[1].col == 33);
    }
    done(&r);

    parse(&r, "fn f(x: f16[]) -> f32[] { return f32(x) > 1 ? x : 2; }");
    CHECK(r.nerrors == 0 && r.file->nfuncs == 1);
    if (r.file->nfuncs == 1) {
        const ast_expr *t = r.file->funcs[0].results[0];
        CHECK(t->kind == AST_TERNARY && t->loc.col == 34);
        const ast_expr *c = t->u.ternary.c->u.binary.l;
        CHECK(c->kind == AST_CAST && c->u.cast.to == IR_F32 && c->loc.col == 34);
        CHECK(t->u.ternary.b->kind == AST_INT && t->u.ternary.b->u.ilit.value == 2);
    }
    done(&r);

    /* an empty file and a file of comments parse to nothing, without errors */
    parse(&r, "");
    CHECK(r.nerrors == 0 && r.file && r.file->nfuncs == 0);
    CHECK_STR(r.diag, "");
    CHECK_STR(r.ast, "");
    done(&r);
    parse(&r, "# nothing here\n\n   \t\n# at all");
    CHECK(r.nerrors == 0 && r.file && r.file->nfuncs == 0);
    done(&r);
}

/* ---- syntax errors: the exact message and position ---------------------------------- */

/* The first line of the diagnostics for src, with the number of errors. */
static void check_error(int line, const char *src, int nerrors, const char *want) {
    result r;
    parse(&r, src);
    const char *nl = strchr(r.diag, '\n');
    size_t n = nl ? (size_t)(nl - r.diag) : strlen(r.diag);
    if (r.nerrors != nerrors || strlen(want) != n || strncmp(r.diag, want, n) != 0) {
        fprintf(stderr, "%s:%d: %d error(s), want %d\n--- got:\n%s--- want first line:\n%s\n",
                __FILE__, line, r.nerrors, nerrors, r.diag, want);
        failures++;
    }
    done(&r);
}

#define CHECK_ERROR(src, n, want) check_error(__LINE__, src, n, want)

static void test_errors(void) {
    /* statements */
    CHECK_ERROR("fn f(x: f32[]) -> f32[] {\n  let a = x\n  return a;\n}\n", 1,
                "t.fuse:3:3: error: expected ';' after let statement, found 'return'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] {\n  return x\n}\n", 1,
                "t.fuse:3:1: error: expected ';' after return statement, found '}'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return f(x)); }", 1,
                "t.fuse:1:38: error: expected ';' after return statement, found ')'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return (x + 1; }", 1,
                "t.fuse:1:40: error: expected ')' to close '(' at line 1, found ';'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] {\n return (x +\n 1\n ; }", 1,
                "t.fuse:4:2: error: expected ')' to close '(' at line 2, found ';'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return ); }", 1,
                "t.fuse:1:34: error: expected expression, found ')'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x +; }", 1,
                "t.fuse:1:37: error: expected expression, found ';'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return; }", 1,
                "t.fuse:1:33: error: expected expression, found ';'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { let = 1; return x; }", 1,
                "t.fuse:1:31: error: expected name after 'let', found '='");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { let f32 = 1; return x; }", 1,
                "t.fuse:1:31: error: expected name after 'let', found 'f32'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { let a 1; return x; }", 1,
                "t.fuse:1:33: error: expected '=' after 'let a', found '1'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { let a == 1; return x; }", 1,
                "t.fuse:1:33: error: expected '=' after 'let a', found '=='");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { x = 1; return x; }", 1,
                "t.fuse:1:27: error: expected 'let' or 'return', found 'x'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { let a = 1; }", 1,
                "t.fuse:1:38: error: expected 'return' statement at the end of function 'f'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { }", 1,
                "t.fuse:1:27: error: expected 'return' statement at the end of function 'f'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x; let a = 1; }", 1,
                "t.fuse:1:37: error: let statement after 'return'; the return statement must "
                "come last");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x; return x; }", 1,
                "t.fuse:1:37: error: more than one return statement in function 'f'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x; x }", 1,
                "t.fuse:1:37: error: expected '}' to close '{' at line 1, found 'x'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] {\n return x;\n", 1,
                "t.fuse:3:1: error: expected '}' to close '{' at line 1, found end of file");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x;\nfn g() -> f32[] { return 1; }", 1,
                "t.fuse:2:1: error: expected '}' to close '{' at line 1, found 'fn'");

    /* expressions */
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x < 1 < 2; }", 1,
                "t.fuse:1:40: error: comparison operators cannot be chained; use parentheses");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x == 1 != 2; }", 1,
                "t.fuse:1:41: error: comparison operators cannot be chained; use parentheses");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return 1 + x >= 2 * x < 3; }", 1,
                "t.fuse:1:49: error: comparison operators cannot be chained; use parentheses");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x ? 1 2; }", 1,
                "t.fuse:1:40: error: expected ':' to match '?' at line 1, found '2'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return f32; }", 1,
                "t.fuse:1:34: error: expected expression, found 'f32' (a cast is written "
                "'f32(x)')");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return f32(x, 1); }", 1,
                "t.fuse:1:39: error: a cast to 'f32' takes exactly one argument");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return f32(); }", 1,
                "t.fuse:1:38: error: expected expression, found ')'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return g(x,); }", 1,
                "t.fuse:1:38: error: expected expression, found ')'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return g(x y); }", 1,
                "t.fuse:1:38: error: expected ')' to close '(' at line 1, found 'y'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return axis; }", 1,
                "t.fuse:1:34: error: expected expression, found 'axis'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return sum(x, axis 1); }", 1,
                "t.fuse:1:46: error: expected '=' after 'axis', found '1'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return sum(x, axis=x); }", 1,
                "t.fuse:1:46: error: expected axis number, found 'x'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return sum(x, axis=()); }", 1,
                "t.fuse:1:47: error: expected axis number, found ')'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return sum(x, axis=(0, 1); }", 1,
                "t.fuse:1:52: error: expected ')' to close '(' at line 1, found ';'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return sum(x, axis=-x); }", 1,
                "t.fuse:1:47: error: expected axis number, found 'x'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return sum(x, axis=99999999999999999999); }", 1,
                "t.fuse:1:46: error: integer literal too large");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x + 99999999999999999999; }", 1,
                "t.fuse:1:38: error: integer literal too large");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x + 9223372036854775808; }", 1,
                "t.fuse:1:38: error: integer literal too large");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x + 1e400; }", 1,
                "t.fuse:1:38: error: float literal out of range");

    /* bad tokens */
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x @ 1; }", 1,
                "t.fuse:1:36: error: invalid character '@'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x & x; }", 1,
                "t.fuse:1:36: error: invalid character '&' (did you mean '&&'?)");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x | x; }", 1,
                "t.fuse:1:36: error: invalid character '|' (did you mean '||'?)");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return 'x'; }", 1,
                "t.fuse:1:34: error: invalid character \"'\"");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return $x; }", 1,
                "t.fuse:1:34: error: invalid character '$'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x \xc3\x97 2; }", 1,
                "t.fuse:1:36: error: invalid character '\xc3\x97' (U+00D7)");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x \xff; }", 1,
                "t.fuse:1:36: error: invalid byte 0xff");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x \x01; }", 1,
                "t.fuse:1:36: error: invalid byte 0x01");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return 2.f; }", 1,
                "t.fuse:1:34: error: invalid number '2.f'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return 1e+x; }", 1,
                "t.fuse:1:34: error: invalid number '1e+x'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x.5; }", 1,
                "t.fuse:1:35: error: expected ';' after return statement, found '.5'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x; } @", 1,
                "t.fuse:1:39: error: invalid character '@'");

    /* headers and types */
    CHECK_ERROR("fn (x: f32[]) -> f32[] { return x; }", 1,
                "t.fuse:1:4: error: expected function name after 'fn', found '('");
    CHECK_ERROR("fn f32(x: f32[]) -> f32[] { return x; }", 1,
                "t.fuse:1:4: error: expected function name after 'fn', found 'f32'");
    CHECK_ERROR("fn f x: f32[]) -> f32[] { return x; }", 1,
                "t.fuse:1:6: error: expected '(' after function name 'f', found 'x'");
    CHECK_ERROR("fn f(1: f32[]) -> f32[] { return x; }", 1,
                "t.fuse:1:6: error: expected parameter name, found '1'");
    CHECK_ERROR("fn f(x: f32[],) -> f32[] { return x; }", 1,
                "t.fuse:1:15: error: expected parameter name, found ')'");
    CHECK_ERROR("fn f(x f32[]) -> f32[] { return x; }", 1,
                "t.fuse:1:8: error: expected ':' after parameter 'x', found 'f32'");
    CHECK_ERROR("fn f(x: float[N]) -> f32[] { return x; }", 1,
                "t.fuse:1:9: error: expected a dtype (bool, i32, i64, f16, bf16, f32, f64), "
                "found 'float'");
    CHECK_ERROR("fn f(x: f32) -> f32[] { return x; }", 1,
                "t.fuse:1:12: error: expected '[' after 'f32' (a scalar is written 'f32[]'), "
                "found ')'");
    CHECK_ERROR("fn f(x: f32[N) -> f32[] { return x; }", 1,
                "t.fuse:1:14: error: expected ']' to close '[' at line 1, found ')'");
    CHECK_ERROR("fn f(x: f32[N M]) -> f32[] { return x; }", 1,
                "t.fuse:1:15: error: expected ']' to close '[' at line 1, found 'M'");
    CHECK_ERROR("fn f(x: f32[N,]) -> f32[] { return x; }", 1,
                "t.fuse:1:15: error: expected dimension (a name or an integer), found ']'");
    CHECK_ERROR("fn f(x: f32[1.5]) -> f32[] { return x; }", 1,
                "t.fuse:1:13: error: expected dimension (a name or an integer), found '1.5'");
    CHECK_ERROR("fn f(x: f32[-1]) -> f32[] { return x; }", 1,
                "t.fuse:1:13: error: dimension cannot be negative");
    CHECK_ERROR("fn f(x: f32[99999999999999999999]) -> f32[] { return x; }", 1,
                "t.fuse:1:13: error: integer literal too large");
    CHECK_ERROR("fn f(x: f32[1, 2, 3, 4, 5, 6, 7, 8, 9]) -> f32[] { return x; }", 1,
                "t.fuse:1:37: error: rank 9 exceeds the maximum of 8");
    CHECK_ERROR("fn f(x: f32[a,b,c,d,e,f,g,h,i,j,k]) -> f32[] { return x; }", 1,
                "t.fuse:1:29: error: rank 11 exceeds the maximum of 8");
    CHECK_ERROR("fn f(x: f32[] -> f32[] { return x; }", 1,
                "t.fuse:1:15: error: expected ')' to close '(' at line 1, found '->'");
    CHECK_ERROR("fn f(x: f32[]) f32[] { return x; }", 1,
                "t.fuse:1:16: error: expected '->' and a return type after the parameters of "
                "'f', found 'f32'");
    CHECK_ERROR("fn f(x: f32[]) -> { return x; }", 1,
                "t.fuse:1:19: error: expected a dtype (bool, i32, i64, f16, bf16, f32, f64), "
                "found '{'");
    CHECK_ERROR("fn f(x: f32[]) -> (f32[], f32[] { return x; }", 1,
                "t.fuse:1:33: error: expected ')' to close '(' at line 1, found '{'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[]\n  return x;\n}", 1,
                "t.fuse:2:3: error: expected '{' to begin the body of 'f', found 'return'");
    CHECK_ERROR("let x = 1;", 1,
                "t.fuse:1:1: error: expected 'fn' to begin a function, found "
                "'let'");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x; } }", 1,
                "t.fuse:1:39: error: expected 'fn' to begin a function, found '}'");
    CHECK_ERROR("fn", 1, "t.fuse:1:3: error: expected function name after 'fn', found end of file");
    CHECK_ERROR("fn f(x: f32[]) -> f32[] { return x; }\nfn \xc3\xa9() -> f32[] {}", 1,
                "t.fuse:2:4: error: invalid character '\xc3\xa9' (U+00E9)");
}

/* ---- recovery ------------------------------------------------------------------------ */

static void test_recovery(void) {
    result r;
    parse(&r, "fn f(x: f32[N]) -> f32[N] {\n"
              "    let a = x +;\n"
              "    let b = (x * 2;\n"
              "    let c = x @ 1;\n"
              "    return a;\n"
              "}\n");
    CHECK(r.nerrors == 3);
    CHECK_STR(r.diag, "t.fuse:2:16: error: expected expression, found ';'\n"
                      "    let a = x +;\n"
                      "               ^\n"
                      "t.fuse:3:19: error: expected ')' to close '(' at line 3, found ';'\n"
                      "    let b = (x * 2;\n"
                      "                  ^\n"
                      "t.fuse:4:15: error: invalid character '@'\n"
                      "    let c = x @ 1;\n"
                      "              ^\n");
    /* the function survives, with the statements that parsed */
    CHECK(r.file->nfuncs == 1);
    done(&r);

    /* errors in three functions, one of them in a header */
    parse(&r, "fn f(x: f32[N]) -> f32[N] { return x +* 2; }\n"
              "fn g(x: f32[N] -> f32[N] { return x; }\n"
              "fn h(x: f32[N]) -> f32[N] { let y = 1 return y; }\n"
              "fn ok(x: f32[N]) -> f32[N] { return x; }\n");
    CHECK(r.nerrors == 3);
    CHECK(strstr(r.diag, "t.fuse:1:39: error: expected expression, found '*'\n") != NULL);
    CHECK(strstr(r.diag, "t.fuse:2:16: error: expected ')' to close '(' at line 2, found '->'\n") !=
          NULL);
    CHECK(strstr(r.diag,
                 "t.fuse:3:39: error: expected ';' after let statement, found 'return'\n") != NULL);
    /* g's header broke, so g is left out; the others are kept */
    CHECK_STR(r.ast, "fn f(x: f32[N]) -> f32[N]\n"
                     "fn h(x: f32[N]) -> f32[N]\n"
                     "  let y = 1\n"
                     "  return y\n"
                     "fn ok(x: f32[N]) -> f32[N]\n"
                     "  return x\n");
    done(&r);

    /* the body of a function whose header broke is still checked for errors */
    parse(&r, "fn g(x: f32) -> f32[] {\n  let a = ;\n  return a;\n}\n");
    CHECK(r.nerrors == 2);
    CHECK(strstr(r.diag, "t.fuse:2:11: error: expected expression, found ';'") != NULL);
    CHECK(r.file->nfuncs == 0);
    done(&r);

    /* garbage between functions is reported once */
    parse(&r, "fn f() -> f32[] { return 1; }\n} } ) let x = 1;\nfn g() -> f32[] { return 2; }");
    CHECK(r.nerrors == 1 && r.file->nfuncs == 2);
    done(&r);

    /* many errors: each statement reports its own */
    parse(&r, "fn f() -> f32[] {\n let a = );\n let b = );\n let c = );\n let d = );\n"
              " return 1;\n}\n");
    CHECK(r.nerrors == 4);
    done(&r);
}

/* ---- diagnostics --------------------------------------------------------------------- */

static void test_diag(void) {
    ir_arena a;
    ir_arena_init(&a);
    const char *src = "fn f() {\n\tlet\tx = @;\n}\n";
    diag_ctx d;
    diag_init(&d, &a, "dir/x.fuse", src, strlen(src));
    src_loc at = {2, 10};
    diag_error(&d, at, "bad %s %d", "thing", 42);
    diag_error(&d, at, "bad %s %d", "thing", 42);   /* the same again: dropped */
    diag_warning(&d, at, "bad %s %d", "thing", 42); /* a warning is not the error */
    src_loc at2 = {1, 1};
    diag_warning(&d, at2, "unused");
    diag_file_error(&d, "no functions");
    diag_file_error(&d, "no functions");
    diag_file_warning(&d, "file is empty");
    CHECK(d.nerrors == 2 && d.nwarnings == 3);
    /* tabs stay tabs in the caret line so the caret lines up */
    CHECK_STR(d.out.data, "dir/x.fuse:2:10: error: bad thing 42\n"
                          "\tlet\tx = @;\n"
                          "\t   \t    ^\n"
                          "dir/x.fuse:2:10: warning: bad thing 42\n"
                          "\tlet\tx = @;\n"
                          "\t   \t    ^\n"
                          "dir/x.fuse:1:1: warning: unused\n"
                          "fn f() {\n"
                          "^\n"
                          "dir/x.fuse: error: no functions\n"
                          "dir/x.fuse: warning: file is empty\n");
    ir_arena_free(&a);

    /* the cap on errors, with one line saying so */
    ir_arena_init(&a);
    diag_init(&d, &a, "x.fuse", "a\nb\nc\n", 6);
    d.max_errors = 2;
    for (int i = 1; i <= 3; i++) {
        src_loc l = {i, 1};
        diag_error(&d, l, "e%d", i);
    }
    diag_error(&d, at2, "more");
    CHECK(d.nerrors == 2);
    CHECK_STR(d.out.data, "x.fuse:1:1: error: e1\na\n^\n"
                          "x.fuse:2:1: error: e2\nb\n^\n"
                          "x.fuse: error: too many errors, stopping\n");
    ir_arena_free(&a);

    /* positions at the end: past the last line, past the end of a line, CRLF, odd bytes */
    ir_arena_init(&a);
    const char odd[] = "x\x01y\0z \xc3\xa9 w\r\nlast";
    size_t n = sizeof odd - 1;
    diag_init(&d, &a, "o.fuse", odd, n);
    src_loc p1 = {1, 10}, p2 = {2, 5}, p3 = {3, 1}, p4 = {1, 99};
    diag_error(&d, p1, "w");
    diag_error(&d, p2, "end of last line");
    diag_error(&d, p3, "past the end");
    diag_error(&d, p4, "far right");
    CHECK_STR(d.out.data, "o.fuse:1:10: error: w\n"
                          "x?y?z \xc3\xa9 w\n"
                          "        ^\n"
                          "o.fuse:2:5: error: end of last line\n"
                          "last\n"
                          "    ^\n"
                          "o.fuse:3:1: error: past the end\n"
                          "\n"
                          "^\n"
                          "o.fuse:1:99: error: far right\n"
                          "x?y?z \xc3\xa9 w\n"
                          "         ^\n");
    ir_arena_free(&a);

    /* a very long line is shown as a window around the caret */
    ir_arena_init(&a);
    size_t len = 100000;
    char *lng = malloc(len + 1);
    memset(lng, 'a', len);
    lng[len] = 0;
    lng[50000] = '@';
    diag_init(&d, &a, "l.fuse", lng, len);
    src_loc pl = {1, 50001};
    diag_error(&d, pl, "here");
    CHECK(d.out.len < 1000);
    const char *caret_line = strrchr(d.out.data, '\n');
    /* the '@' sits right above the caret */
    const char *lines = strchr(d.out.data, '\n') + 1;
    const char *l2 = strchr(lines, '\n') + 1;
    const char *caret = strchr(l2, '^');
    CHECK(caret && lines[caret - l2] == '@');
    CHECK(caret_line && strncmp(lines, "...", 3) == 0);
    free(lng);
    ir_arena_free(&a);

    /* a message longer than any fixed buffer */
    ir_arena_init(&a);
    diag_init(&d, &a, "m.fuse", "", 0);
    char *msg = malloc(5001);
    memset(msg, 'm', 5000);
    msg[5000] = 0;
    diag_file_error(&d, "%s", msg);
    CHECK(d.out.len == (int32_t)strlen("m.fuse: error: \n") + 5000);
    free(msg);
    ir_arena_free(&a);
}

/* ---- limits and big inputs ----------------------------------------------------------- */

static char *repeat(const char *prefix, const char *unit, size_t times, const char *suffix) {
    size_t pl = strlen(prefix), ul = strlen(unit), sl = strlen(suffix);
    char *s = malloc(pl + ul * times + sl + 1);
    char *q = s;
    memcpy(q, prefix, pl);
    q += pl;
    for (size_t i = 0; i < times; i++, q += ul)
        memcpy(q, unit, ul);
    memcpy(q, suffix, sl + 1);
    return s;
}

static void check_too_deep(int line, char *src, int col) {
    result r;
    parse(&r, src);
    char want[128];
    snprintf(want, sizeof want, "t.fuse:1:%d: error: expression nested too deeply\n", col);
    if (r.nerrors != 1 || strncmp(r.diag, want, strlen(want)) != 0) {
        fprintf(stderr, "%s:%d: %d errors, want 1:\n%.300s\n", __FILE__, line, r.nerrors, r.diag);
        failures++;
    }
    done(&r);
    free(src);
}

static void test_limits(void) {
    const char *head = "fn f(x: f32[]) -> f32[] { return "; /* 33 bytes */
    char *deep_paren = malloc(300000);
    snprintf(deep_paren, 300000, "%s", head);
    size_t n = strlen(deep_paren);
    memset(deep_paren + n, '(', 100000);
    deep_paren[n + 100000] = 'x';
    memset(deep_paren + n + 100001, ')', 100000);
    strcpy(deep_paren + n + 200001, "; }");
    check_too_deep(__LINE__, deep_paren, 34 + PARSE_MAX_DEPTH);
    check_too_deep(__LINE__, repeat(head, "-", 100000, "x; }"), 34 + PARSE_MAX_DEPTH);
    check_too_deep(__LINE__, repeat(head, "!", 100000, "x; }"), 34 + PARSE_MAX_DEPTH);
    check_too_deep(__LINE__, repeat(head, "f(", 100000, "x; }"), 34 + 2 * PARSE_MAX_DEPTH);
    check_too_deep(__LINE__, repeat(head, "f32(", 100000, "x; }"), 34 + 4 * PARSE_MAX_DEPTH);
    /* a long chain is a tall tree: later passes recurse over it, so it is limited too */
    check_too_deep(__LINE__, repeat("fn f(x: f32[]) -> f32[] { return x", "+x", 100000, "; }"),
                   33 + 2 * PARSE_MAX_DEPTH);
    check_too_deep(__LINE__, repeat("fn f(x: f32[]) -> f32[] { return x", "?x:x", 100000, "; }"),
                   32 + 4 * PARSE_MAX_DEPTH);

    /* just inside the limits */
    result r;
    char *ok = repeat("fn f(x: f32[]) -> f32[] { return x", "+x", PARSE_MAX_DEPTH - 1, "; }");
    parse(&r, ok);
    CHECK(r.nerrors == 0);
    done(&r);
    free(ok);
    ok = repeat(head, "-", PARSE_MAX_DEPTH - 1, "x; }");
    parse(&r, ok);
    CHECK(r.nerrors == 0);
    done(&r);
    free(ok);

    /* wide is fine: 100000 arguments, 100000 lets, 10000 functions */
    char *wide = repeat("fn f(x: f32[]) -> f32[] { return g(x", ", x", 100000, "); }");
    parse(&r, wide);
    CHECK(r.nerrors == 0 && r.file->nfuncs == 1 &&
          r.file->funcs[0].results[0]->u.call.nargs == 100001);
    done(&r);
    free(wide);
    wide = repeat("fn f(x: f32[]) -> f32[] {", " let a = x;", 100000, " return x; }");
    parse(&r, wide);
    CHECK(r.nerrors == 0 && r.file->nfuncs == 1 && r.file->funcs[0].nlets == 100000);
    done(&r);
    free(wide);
    wide = repeat("", "fn f(x: f32[]) -> f32[] { return x; }\n", 10000, "");
    parse(&r, wide);
    CHECK(r.nerrors == 0 && r.file->nfuncs == 10000);
    done(&r);
    free(wide);

    /* a one-megabyte identifier */
    char *name = repeat("fn f(x: f32[]) -> f32[] { return ", "y", 1000000, " x; }");
    parse(&r, name);
    CHECK(r.nerrors == 1);
    CHECK(strstr(r.diag, "found 'x'") != NULL);
    done(&r);
    free(name);
    name = repeat("fn f(x: f32[]) -> f32[] { return x ", "y", 1000000, "; }");
    parse(&r, name);
    CHECK(r.nerrors == 1);
    CHECK(strstr(r.diag, "found 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyy...'") != NULL);
    CHECK(r.d.out.len < 2000);
    done(&r);
    free(name);

    name = repeat("fn f(x: f32[]) -> f32[] { let ", "z", 1000000, " 1; return x; }");
    parse(&r, name);
    CHECK(r.nerrors == 1);
    CHECK(strstr(r.diag, "expected '=' after 'let zzzzzzzzzzzzzzzzzzzzzzzzzzzzz...', found '1'") !=
          NULL);
    CHECK(r.d.out.len < 2000);
    done(&r);
    free(name);

    /* thousands of errors: capped at 100, then one line saying so */
    char *many = repeat("fn f() -> f32[] {\n", " let a = );\n", 5000, " return 1;\n}\n");
    parse(&r, many);
    CHECK(r.nerrors == 100);
    CHECK(strstr(r.diag, "t.fuse: error: too many errors, stopping\n") != NULL);
    done(&r);
    free(many);

    /* pseudo-random bytes and pseudo-random tokens: no crash, no hang */
    static const char *const pieces[] = {
        "fn ", "f", "(",    ")",  "x",   ": ",      "f32", "[",    "]", "N",  ",",    "->",
        "{",   "}", "let ", "= ", ";",   "return ", "1",   "2.5",  "+", "-",  "*",    "<",
        "?",   ":", "axis", "=",  "sum", "\n",      "@",   "#c\n", "!", "&&", "i32(", "\0",
    };
    uint64_t seed = 88172645463325252u;
    for (int round = 0; round < 200; round++) {
        size_t len = 0, cap = 4096;
        char *buf = malloc(cap + 1);
        while (len + 16 < cap) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            if (round % 2) {
                buf[len++] = (char)(seed & 0xff);
            } else {
                const char *piece = pieces[seed % (sizeof pieces / sizeof pieces[0])];
                size_t pl = piece[0] ? strlen(piece) : 1;
                memcpy(buf + len, piece, pl);
                len += pl;
            }
        }
        buf[len] = 0;
        parse_n(&r, buf, len);
        CHECK(r.file != NULL);
        done(&r);
        free(buf);
    }
}

int main(void) {
    test_precedence();
    test_calls_and_literals();
    test_functions();
    test_errors();
    test_recovery();
    test_diag();
    test_limits();
    return check_exit("test_parser");
}
