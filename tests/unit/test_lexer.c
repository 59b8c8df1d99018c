/* tests/unit/test_lexer.c: the lexer (frontend/lexer.re): every token kind, positions,
 * literal forms and their overflow flags, bad bytes, a byte-order mark, and the end of input. */
#include "frontend/lexer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char *const kind_enum_names[LEX_KIND_COUNT] = {
#define KIND_NAME(E, S) #E,
    LEX_TOKENS(KIND_NAME)
#undef KIND_NAME
};

/* The kinds of all tokens of src[0..len) up to and including EOF, space-separated. */
static const char *kinds_n(const char *src, size_t len) {
    static char out[4096];
    lex_state s;
    lex_init(&s, src, len);
    out[0] = 0;
    for (int i = 0; i < 200; i++) {
        lex_token t = lex_next(&s);
        if (i) strcat(out, " ");
        strcat(out, kind_enum_names[t.kind]);
        if (t.kind == LEX_EOF) break;
    }
    return out;
}

static const char *kinds(const char *src) {
    return kinds_n(src, strlen(src));
}

/* The first token of src. */
static lex_token first(const char *src) {
    lex_state s;
    lex_init(&s, src, strlen(src));
    return lex_next(&s);
}

static void test_every_kind(void) {
    CHECK_STR(kinds("fn let return true false axis"), "FN LET RETURN TRUE FALSE AXIS EOF");
    CHECK_STR(kinds("+ - * / % == != < <= > >= && || ! ? : = -> , ; ( ) [ ] { }"),
              "PLUS MINUS STAR SLASH PERCENT EQEQ NE LT LE GT GE ANDAND OROR BANG QUESTION "
              "COLON ASSIGN ARROW COMMA SEMI LPAREN RPAREN LBRACKET RBRACKET LBRACE RBRACE EOF");
    /* no spaces: longest match */
    CHECK_STR(kinds("a<=b>=c==d!=e->f"), "IDENT LE IDENT GE IDENT EQEQ IDENT NE IDENT ARROW "
                                         "IDENT EOF");
    CHECK_STR(kinds("x=-1"), "IDENT ASSIGN MINUS INT EOF");
    CHECK_STR(kinds("a--b"), "IDENT MINUS MINUS IDENT EOF");
    CHECK_STR(kinds("!!a"), "BANG BANG IDENT EOF");
    CHECK_STR(kinds("12 1.5 name _x x_1 bool"), "INT FLOAT IDENT IDENT IDENT DTYPE EOF");
    CHECK_STR(kinds("@"), "ERROR EOF");
    CHECK_STR(kinds(""), "EOF");

    /* keywords and dtype names are whole words only */
    CHECK_STR(kinds("fnx lets returns axis_ truex f32x f8 i3 bf"),
              "IDENT IDENT IDENT IDENT IDENT IDENT IDENT IDENT IDENT EOF");
    CHECK_STR(kinds("FN Let"), "IDENT IDENT EOF");

    for (int t = 0; t < IR_DTYPE_COUNT; t++) {
        lex_token tok = first(ir_dtypes[t].name);
        CHECK(tok.kind == LEX_DTYPE);
        CHECK(tok.value.dtype == (ir_dtype)t);
        CHECK(tok.len == (int32_t)strlen(ir_dtypes[t].name));
    }

    CHECK_STR(lex_kind_name(LEX_PLUS), "'+'");
    CHECK_STR(lex_kind_name(LEX_IDENT), "identifier");
    CHECK_STR(lex_kind_name(LEX_EOF), "end of file");
    CHECK_STR(lex_kind_name(LEX_RBRACE), "'}'");
    CHECK(lex_kind_name((lex_kind)LEX_KIND_COUNT) != NULL);
    CHECK(lex_kind_name((lex_kind)-1) != NULL);
    for (int k = 0; k < LEX_KIND_COUNT; k++)
        CHECK(lex_kind_name((lex_kind)k)[0] != 0);
}

static void test_positions(void) {
    const char *src = "fn f(x: f32[N]) # comment ) ( ]\n"
                      "\n"
                      "  let\ty = 1.5;\r\n"
                      "# a whole line of comment\n"
                      "\treturn y;}";
    struct {
        lex_kind kind;
        int32_t line, col, len;
    } want[] = {
        {LEX_FN, 1, 1, 2},        {LEX_IDENT, 1, 4, 1},  {LEX_LPAREN, 1, 5, 1},
        {LEX_IDENT, 1, 6, 1},     {LEX_COLON, 1, 7, 1},  {LEX_DTYPE, 1, 9, 3},
        {LEX_LBRACKET, 1, 12, 1}, {LEX_IDENT, 1, 13, 1}, {LEX_RBRACKET, 1, 14, 1},
        {LEX_RPAREN, 1, 15, 1},   {LEX_LET, 3, 3, 3},    {LEX_IDENT, 3, 7, 1},
        {LEX_ASSIGN, 3, 9, 1},    {LEX_FLOAT, 3, 11, 3}, {LEX_SEMI, 3, 14, 1},
        {LEX_RETURN, 5, 2, 6},    {LEX_IDENT, 5, 9, 1},  {LEX_SEMI, 5, 10, 1},
        {LEX_RBRACE, 5, 11, 1},   {LEX_EOF, 5, 12, 0},   {LEX_EOF, 5, 12, 0},
    };
    lex_state s;
    lex_init(&s, src, strlen(src));
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        lex_token t = lex_next(&s);
        if (t.kind != want[i].kind || t.loc.line != want[i].line || t.loc.col != want[i].col ||
            t.len != want[i].len) {
            fprintf(stderr, "%s:%d: token %zu: got %s at %d:%d len %d, want %s at %d:%d len %d\n",
                    __FILE__, __LINE__, i, kind_enum_names[t.kind], t.loc.line, t.loc.col, t.len,
                    kind_enum_names[want[i].kind], want[i].line, want[i].col, want[i].len);
            failures++;
        }
    }
    /* start points into the source */
    lex_init(&s, src, strlen(src));
    lex_next(&s);
    lex_token f = lex_next(&s);
    CHECK(f.start == src + 3);

    /* the end after a final newline is at the start of the next line */
    lex_init(&s, "x\n", 2);
    lex_next(&s);
    lex_token e = lex_next(&s);
    CHECK(e.kind == LEX_EOF && e.loc.line == 2 && e.loc.col == 1);

    /* a comment at the very end, with no newline */
    CHECK_STR(kinds("a # the end"), "IDENT EOF");
    CHECK_STR(kinds("#"), "EOF");
    /* vertical tab, form feed and CR are white space */
    CHECK_STR(kinds("a\v\f\rb"), "IDENT IDENT EOF");
}

static void test_literals(void) {
    lex_token t;
    t = first("0");
    CHECK(t.kind == LEX_INT && t.value.i == 0 && !t.overflow);
    t = first("123");
    CHECK(t.kind == LEX_INT && t.value.i == 123 && t.len == 3);
    t = first("007");
    CHECK(t.kind == LEX_INT && t.value.i == 7);

    struct {
        const char *src;
        double value;
    } floats[] = {
        {"1.0", 1.0},
        {".5", 0.5},
        {"2.", 2.0},
        {"1e-5", 1e-5},
        {"3.5E+2", 350.0},
        {"1.e5", 1e5},
        {"1e5", 1e5},
        {"0.25e1", 2.5},
        {"12.5e-1", 1.25},
        {".5e2", 50.0},
        {"0.0", 0.0},
        {"1E3", 1000.0},
        {"0.7978845608028654", 0.7978845608028654},
    };
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        t = first(floats[i].src);
        CHECK(t.kind == LEX_FLOAT);
        CHECK(t.value.f == floats[i].value);
        CHECK(!t.overflow);
        CHECK(t.len == (int32_t)strlen(floats[i].src));
    }

    /* things that look like numbers but are not one literal */
    CHECK_STR(kinds("x.5"), "IDENT FLOAT EOF");
    CHECK_STR(kinds("1..2"), "ERROR EOF");
    CHECK_STR(kinds("2.f"), "ERROR EOF");
    CHECK_STR(kinds("1e"), "ERROR EOF");
    CHECK_STR(kinds("1e+"), "ERROR EOF");
    CHECK_STR(kinds("1e+x"), "ERROR EOF");
    CHECK_STR(kinds("123abc"), "ERROR EOF");
    CHECK_STR(kinds("0x1f"), "ERROR EOF");
    CHECK_STR(kinds("1.5.2"), "ERROR EOF");
    CHECK_STR(kinds("1 .5 ."), "INT FLOAT ERROR EOF");
    CHECK_STR(kinds("1-2"), "INT MINUS INT EOF");
    CHECK_STR(kinds("1e-5-2"), "FLOAT MINUS INT EOF");
    CHECK_STR(kinds("2.*3"), "FLOAT STAR INT EOF");
    CHECK_STR(kinds("f(1,2)"), "IDENT LPAREN INT COMMA INT RPAREN EOF");
    t = first("1.5x+1");
    CHECK(t.kind == LEX_ERROR && t.len == 4);
}

static void test_overflow(void) {
    lex_token t;
    t = first("9223372036854775807");
    CHECK(t.kind == LEX_INT && t.value.i == INT64_MAX && !t.overflow);
    t = first("9223372036854775808");
    CHECK(t.kind == LEX_INT && t.overflow);
    t = first("99999999999999999999999999");
    CHECK(t.kind == LEX_INT && t.overflow && t.len == 26);

    t = first("1e308");
    CHECK(t.kind == LEX_FLOAT && !t.overflow && t.value.f == 1e308);
    t = first("1e309");
    CHECK(t.kind == LEX_FLOAT && t.overflow);
    t = first("1.8e308");
    CHECK(t.kind == LEX_FLOAT && t.overflow);
    /* underflow to zero or a subnormal is not an overflow */
    t = first("1e-400");
    CHECK(t.kind == LEX_FLOAT && !t.overflow && t.value.f == 0.0);
    t = first("4e-320");
    CHECK(t.kind == LEX_FLOAT && !t.overflow && t.value.f > 0.0);

    /* literals with thousands of digits: no stack buffer may overflow */
    size_t n = 100000;
    char *big = malloc(n + 8);
    memset(big, '9', n);
    big[n] = 0;
    t = first(big);
    CHECK(t.kind == LEX_INT && t.overflow && t.len == (int32_t)n);
    big[n] = '.';
    big[n + 1] = '5';
    big[n + 2] = 0;
    t = first(big);
    CHECK(t.kind == LEX_FLOAT && t.overflow && isinf(t.value.f));
    /* 0.000...0001 with 100000 zeros: tiny, not an overflow */
    big[0] = '0';
    big[1] = '.';
    memset(big + 2, '0', n);
    big[n + 2] = '1';
    big[n + 3] = 0;
    t = first(big);
    CHECK(t.kind == LEX_FLOAT && !t.overflow && t.value.f == 0.0 && t.len == (int32_t)n + 3);
    /* 1.000...0001 with many digits: exactly 1 after rounding */
    big[0] = '1';
    t = first(big);
    CHECK(t.kind == LEX_FLOAT && !t.overflow && t.value.f == 1.0);
    free(big);
}

static void test_bad_bytes(void) {
    /* embedded NUL before the end is an error, not the end */
    const char nul[] = "a\0b";
    CHECK_STR(kinds_n(nul, 3), "IDENT ERROR IDENT EOF");
    const char nul2[] = "\0\0x";
    CHECK_STR(kinds_n(nul2, 3), "ERROR IDENT EOF");
    lex_state s;
    lex_init(&s, nul2, 3);
    lex_token t = lex_next(&s);
    CHECK(t.kind == LEX_ERROR && t.len == 2 && t.loc.col == 1);
    t = lex_next(&s);
    CHECK(t.kind == LEX_IDENT && t.loc.col == 3);
    /* a NUL inside a comment is part of the comment */
    const char nul3[] = "# x\0y\nz";
    CHECK_STR(kinds_n(nul3, 7), "IDENT EOF");
    /* only NULs */
    const char nul4[] = "\0";
    CHECK_STR(kinds_n(nul4, 1), "ERROR EOF");

    /* a run of bytes that start no token is one error token */
    lex_init(&s, "@@$ `x", 6);
    t = lex_next(&s);
    CHECK(t.kind == LEX_ERROR && t.len == 3 && t.loc.col == 1);
    t = lex_next(&s);
    CHECK(t.kind == LEX_ERROR && t.len == 1 && t.loc.col == 5);
    CHECK(lex_next(&s).kind == LEX_IDENT);

    CHECK_STR(kinds("\xc3\xa9"), "ERROR EOF"); /* é */
    CHECK_STR(kinds("a\xff\xfe"), "IDENT ERROR EOF");
    CHECK_STR(kinds("& | ."), "ERROR ERROR ERROR EOF");
    CHECK_STR(kinds("&&&"), "ANDAND ERROR EOF");
    CHECK_STR(kinds("'\"\\~^"), "ERROR EOF");
    CHECK_STR(kinds("\x01\x02\x7f"), "ERROR EOF");
    /* a newline is not swallowed by an error run: lines stay right */
    lex_init(&s, "@\n@", 3);
    lex_next(&s);
    t = lex_next(&s);
    CHECK(t.kind == LEX_ERROR && t.loc.line == 2 && t.loc.col == 1);

    /* every byte value alone: no crash, one token, then the end */
    for (int c = 0; c < 256; c++) {
        char one[2] = {(char)c, 0};
        lex_init(&s, one, 1);
        lex_next(&s);
        t = lex_next(&s);
        CHECK(t.kind == LEX_EOF);
    }
}

static void test_eof_repeats(void) {
    lex_state s;
    lex_init(&s, "x", 1);
    CHECK(lex_next(&s).kind == LEX_IDENT);
    for (int i = 0; i < 5; i++) {
        lex_token t = lex_next(&s);
        CHECK(t.kind == LEX_EOF);
        CHECK(t.loc.line == 1 && t.loc.col == 2);
    }
}

/* A UTF-8 byte-order mark is skipped at the very start only, where line 1's columns count
 * from after it; anywhere else it is one bad token (the parser says what it is). */
#define BOM "\xEF\xBB\xBF" /* its own literal: a hex escape would swallow a following 'f' */

static void test_byte_order_mark(void) {
    CHECK_STR(kinds(BOM "fn x"), "FN IDENT EOF");
    CHECK_STR(kinds(BOM), "EOF");
    CHECK_STR(kinds(BOM BOM "fn"), "ERROR FN EOF");
    CHECK_STR(kinds("fn " BOM "x"), "FN ERROR IDENT EOF");
    CHECK_STR(kinds("\n" BOM "fn"), "ERROR FN EOF");
    CHECK_STR(kinds("\xEF\xBB;"), "ERROR SEMI EOF"); /* not a whole mark */
    lex_token t = first(BOM "fn");
    CHECK(t.loc.line == 1 && t.loc.col == 1 && t.len == 2);
    lex_state s;
    lex_init(&s, "fn " BOM, 6);
    lex_next(&s);
    t = lex_next(&s);
    CHECK(t.kind == LEX_ERROR && t.loc.col == 4 && t.len == 3);
}

int main(void) {
    test_every_kind();
    test_positions();
    test_literals();
    test_overflow();
    test_bad_bytes();
    test_eof_repeats();
    test_byte_order_mark();
    return check_exit("test_lexer");
}
