/* frontend/lexer.re: the .fuse lexer. re2c turns this file into C at build time (see
 * CMakeLists.txt); the generated lexer.c lives in the build tree and is never committed.
 *
 * The lexer never fails: a byte that starts no token becomes a LEX_ERROR token and the
 * parser decides what to say about it. Literals that do not fit are still tokens, with
 * `overflow` set, so the parser can report them and carry on.
 */
/* the generated lexer.c lives in the build tree, so the path is from the repository root */
#include "frontend/lexer.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ORDER LEX_TOKEN: expanded from the list in lexer.h, so it cannot drift. */
static const char *const lex_token_names[LEX_KIND_COUNT] = {
#define LEX_NAME(E, S) S,
    LEX_TOKENS(LEX_NAME)
#undef LEX_NAME
};

const char *lex_kind_name(lex_kind k) {
    if ((unsigned)k >= (unsigned)LEX_KIND_COUNT) return "invalid token";
    return lex_token_names[k];
}

void lex_init(lex_state *s, const char *src, size_t len) {
    size_t bom = src_bom_len(src, len); /* only at the very start; elsewhere a bad token */
    s->src = src;
    s->cur = src + bom;
    s->end = src + len;
    s->line_start = src + bom;
    s->line = 1;
}

/* Decimal digits [p, e) into t->value.i; saturates and flags values past INT64_MAX. */
static void lex_int_value(lex_token *t, const unsigned char *p, const unsigned char *e) {
    int64_t v = 0;
    for (; p < e; p++) {
        int digit = *p - '0';
        if (v > (INT64_MAX - digit) / 10) {
            t->overflow = 1;
            v = INT64_MAX;
            break;
        }
        v = v * 10 + digit;
    }
    t->value.i = v;
}

/* strtod needs a terminated string and the literal sits in the middle of the source. A
 * literal may legally have thousands of digits, so long ones go to the heap rather than
 * the stack. */
static void lex_float_value(lex_token *t, const unsigned char *p, size_t n) {
    char small[128];
    char *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf) {
        t->overflow = 1;
        t->value.f = 0;
        return;
    }
    memcpy(buf, p, n);
    buf[n] = 0;
    int saved_errno = errno; /* strtod sets ERANGE; callers should not see that */
    double v = strtod(buf, NULL);
    errno = saved_errno;
    if (buf != small) free(buf);
    t->value.f = v;
    if (isinf(v)) t->overflow = 1;
}

lex_token lex_next(lex_state *s) {
    const unsigned char *YYCURSOR = (const unsigned char *)s->cur;
    const unsigned char *YYLIMIT = (const unsigned char *)s->end;
    const unsigned char *start;
    lex_token t;
    memset(&t, 0, sizeof t);

    for (;;) {
        start = YYCURSOR;
        t.loc.line = s->line;
        t.loc.col = (int32_t)((const char *)start - s->line_start) + 1;

        /*!re2c
        re2c:yyfill:enable = 0;
        re2c:eof = 0;
        re2c:define:YYCTYPE = "unsigned char";

        dec    = [0-9];
        digits = dec+;
        exp    = [eE] [+-]? digits;
        float  = digits "." digits? exp? | "." digits exp? | digits exp;
        ident  = [a-zA-Z_] [a-zA-Z0-9_]*;
        space  = [ \t\r\v\f];

        // C's preprocessing number: letters, digits and dots glued to a literal belong to
        // it, so `2.f` or `1e+x` is one bad literal rather than a literal and a name.
        ppnum  = "."? dec ([0-9a-zA-Z_.] | [eE] [+-])*;

        // bytes that can start no token: a run of them is one error token
        bad    = [^a-zA-Z0-9_ \t\r\v\f\n#.+\-*/%=!<>&|?:,;()[\]{}];

        $             { t.kind = LEX_EOF; break; }
        *             { t.kind = LEX_ERROR; break; }
        bad+          { t.kind = LEX_ERROR; break; }

        space+        { continue; }
        "\n"          { s->line++; s->line_start = (const char *)YYCURSOR; continue; }
        "#" [^\n]*    { continue; }

        "fn"          { t.kind = LEX_FN; break; }
        "let"         { t.kind = LEX_LET; break; }
        "return"      { t.kind = LEX_RETURN; break; }
        "true"        { t.kind = LEX_TRUE; break; }
        "false"       { t.kind = LEX_FALSE; break; }
        "axis"        { t.kind = LEX_AXIS; break; }
        ident {
            /* dtype names come from dtypes.def, so a new dtype needs no lexer change */
            ir_dtype dt;
            if (ir_dtype_lookup((const char *)start, (size_t)(YYCURSOR - start), &dt)) {
                t.kind = LEX_DTYPE;
                t.value.dtype = dt;
            } else {
                t.kind = LEX_IDENT;
            }
            break;
        }

        digits        { t.kind = LEX_INT; lex_int_value(&t, start, YYCURSOR); break; }
        float {
            t.kind = LEX_FLOAT;
            lex_float_value(&t, start, (size_t)(YYCURSOR - start));
            break;
        }
        ppnum         { t.kind = LEX_ERROR; break; }

        "+"           { t.kind = LEX_PLUS; break; }
        "-"           { t.kind = LEX_MINUS; break; }
        "*"           { t.kind = LEX_STAR; break; }
        "/"           { t.kind = LEX_SLASH; break; }
        "%"           { t.kind = LEX_PERCENT; break; }
        "=="          { t.kind = LEX_EQEQ; break; }
        "!="          { t.kind = LEX_NE; break; }
        "<"           { t.kind = LEX_LT; break; }
        "<="          { t.kind = LEX_LE; break; }
        ">"           { t.kind = LEX_GT; break; }
        ">="          { t.kind = LEX_GE; break; }
        "&&"          { t.kind = LEX_ANDAND; break; }
        "||"          { t.kind = LEX_OROR; break; }
        "!"           { t.kind = LEX_BANG; break; }
        "?"           { t.kind = LEX_QUESTION; break; }
        ":"           { t.kind = LEX_COLON; break; }
        "="           { t.kind = LEX_ASSIGN; break; }
        "->"          { t.kind = LEX_ARROW; break; }
        ","           { t.kind = LEX_COMMA; break; }
        ";"           { t.kind = LEX_SEMI; break; }
        "("           { t.kind = LEX_LPAREN; break; }
        ")"           { t.kind = LEX_RPAREN; break; }
        "["           { t.kind = LEX_LBRACKET; break; }
        "]"           { t.kind = LEX_RBRACKET; break; }
        "{"           { t.kind = LEX_LBRACE; break; }
        "}"           { t.kind = LEX_RBRACE; break; }
        */
    }

    t.start = (const char *)start;
    t.len = (int32_t)(YYCURSOR - start);
    s->cur = (const char *)YYCURSOR;
    return t;
}
