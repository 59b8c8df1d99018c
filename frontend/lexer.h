/* frontend/lexer.h: tokens of the .fuse language and the lexer's interface. The lexer
 * itself is frontend/lexer.re, turned into C by re2c at build time. */
#ifndef FUSEC_FRONTEND_LEXER_H
#define FUSEC_FRONTEND_LEXER_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "../ir/ir.h"

/* ORDER LEX_TOKEN: lex_token_names in lexer.re follows this list. */
#define LEX_TOKENS(X)                                                                              \
    X(EOF, "end of file")                                                                          \
    X(ERROR, "invalid token")                                                                      \
    X(IDENT, "identifier")                                                                         \
    X(INT, "integer literal")                                                                      \
    X(FLOAT, "float literal")                                                                      \
    X(DTYPE, "dtype name")                                                                         \
    X(FN, "'fn'")                                                                                  \
    X(LET, "'let'")                                                                                \
    X(RETURN, "'return'")                                                                          \
    X(TRUE, "'true'")                                                                              \
    X(FALSE, "'false'")                                                                            \
    X(AXIS, "'axis'")                                                                              \
    X(PLUS, "'+'")                                                                                 \
    X(MINUS, "'-'")                                                                                \
    X(STAR, "'*'")                                                                                 \
    X(SLASH, "'/'")                                                                                \
    X(PERCENT, "'%'")                                                                              \
    X(EQEQ, "'=='")                                                                                \
    X(NE, "'!='")                                                                                  \
    X(LT, "'<'")                                                                                   \
    X(LE, "'<='")                                                                                  \
    X(GT, "'>'")                                                                                   \
    X(GE, "'>='")                                                                                  \
    X(ANDAND, "'&&'")                                                                              \
    X(OROR, "'||'")                                                                                \
    X(BANG, "'!'")                                                                                 \
    X(QUESTION, "'?'")                                                                             \
    X(COLON, "':'")                                                                                \
    X(ASSIGN, "'='")                                                                               \
    X(ARROW, "'->'")                                                                               \
    X(COMMA, "','")                                                                                \
    X(SEMI, "';'")                                                                                 \
    X(LPAREN, "'('")                                                                               \
    X(RPAREN, "')'")                                                                               \
    X(LBRACKET, "'['")                                                                             \
    X(RBRACKET, "']'")                                                                             \
    X(LBRACE, "'{'")                                                                               \
    X(RBRACE, "'}'")

typedef enum lex_kind {
#define LEX_ENUM(E, S) LEX_##E,
    LEX_TOKENS(LEX_ENUM)
#undef LEX_ENUM
        LEX_KIND_COUNT
} lex_kind;

typedef struct lex_token {
    lex_kind kind;
    src_loc loc;
    const char *start; /* into the source; not NUL-terminated */
    int32_t len;
    union {
        int64_t i;      /* LEX_INT (valid when the literal fits in int64) */
        double f;       /* LEX_FLOAT */
        ir_dtype dtype; /* LEX_DTYPE */
    } value;
    int overflow; /* LEX_INT/LEX_FLOAT: the literal does not fit (int64, finite double) */
} lex_token;

typedef struct lex_state {
    const char *src, *cur, *end, *line_start;
    int32_t line;
} lex_state;

/* src[len] must be a NUL byte (the sentinel re2c stops at); NULs before it are errors. */
void lex_init(lex_state *s, const char *src, size_t len);
/* The next token. Never fails: a byte that starts no token gives LEX_ERROR (one token per
 * bad byte run), the end gives LEX_EOF forever. Comments and white space are skipped. */
lex_token lex_next(lex_state *s);
/* "identifier", "'+'", ... for messages. */
const char *lex_kind_name(lex_kind k);

#endif
