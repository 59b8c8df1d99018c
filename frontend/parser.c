/* frontend/parser.c: the recursive-descent parser, source text -> AST.
 *
 * Each function parses one rule of the SPEC's grammar, written in the comment above it.
 * The token cursor lives in a `parser` passed explicitly. Binary operators are parsed by
 * precedence climbing over a priority table (as Lua's lparser.c does) rather than one
 * function per level.
 *
 * Errors: an expression parser that hits a syntax error reports it and returns NULL; its
 * callers return NULL without reporting anything more, up to the statement, which skips
 * to a point where parsing can resume (see sync_stmt). So one run reports several errors
 * and no error is reported twice. Problems that do not derail parsing (a literal out of
 * range, a negative dim) are reported and parsing carries on with a stand-in value; an
 * integer literal's or axis number's stand-in is flagged in the AST, so that the checker never
 * names it in a message of its own (the user never wrote it).
 *
 * What the checker gets after errors: never a NULL expression. A let whose expression
 * failed is left out (one whose ';' alone is missing is kept); a function whose return
 * statement failed or is missing has nresults == 0; a function whose header failed is
 * left out of the file altogether.
 *
 * Limits: the parser's recursion and the height of every expression tree are bounded by
 * PARSE_MAX_DEPTH, so neither the parser nor a later pass walking the tree recursively
 * can run out of stack, whatever the input.
 */
#include "frontend.h"
#include "lexer.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Every expression node the parser makes is one of these, so the height of a subtree is
 * known when a node is built on top of it. */
typedef struct parse_node {
    ast_expr e; /* first, so an ast_expr * from new_expr is also a parse_node * */
    int32_t height;
} parse_node;

typedef struct parser {
    diag_ctx *d;
    ir_arena *a;
    lex_state lx;
    lex_token tok;  /* the current token */
    lex_token next; /* lookahead: `name (` is a call, `f32 (` a cast */
    int32_t depth;  /* recursion of the expression parser */
} parser;

/* Binary operators, as in Lua: after an operand, an operator whose `left` priority is above
 * the caller's limit takes the operand; its right operand is parsed with limit `right`.
 * left == right makes an operator left-associative. Comparisons do not associate at all:
 * a second one in the same chain is an error (see subexpr).
 * ORDER LEX_TOKEN: indexed by token kind. */
typedef struct parse_binop {
    ir_op op;
    uint8_t left, right;
    uint8_t is_cmp;
} parse_binop;

static const parse_binop parse_binops[LEX_KIND_COUNT] = {
    [LEX_OROR] = {IR_OP_OR, 1, 1, 0},     [LEX_ANDAND] = {IR_OP_AND, 2, 2, 0},
    [LEX_EQEQ] = {IR_OP_EQ, 3, 3, 1},     [LEX_NE] = {IR_OP_NE, 3, 3, 1},
    [LEX_LT] = {IR_OP_LT, 3, 3, 1},       [LEX_LE] = {IR_OP_LE, 3, 3, 1},
    [LEX_GT] = {IR_OP_GT, 3, 3, 1},       [LEX_GE] = {IR_OP_GE, 3, 3, 1},
    [LEX_PLUS] = {IR_OP_ADD, 4, 4, 0},    [LEX_MINUS] = {IR_OP_SUB, 4, 4, 0},
    [LEX_STAR] = {IR_OP_MUL, 5, 5, 0},    [LEX_SLASH] = {IR_OP_DIV, 5, 5, 0},
    [LEX_PERCENT] = {IR_OP_MOD, 5, 5, 0},
};
#define PARSE_UNARY_PRIORITY 6 /* above every binary operator: -x*y is (-x)*y */

/* Tokens longer than this are shortened in messages. */
#define PARSE_MAX_QUOTE 32

static ast_expr *expr(parser *p);

/* ---- tokens and messages ------------------------------------------------------------- */

static void advance(parser *p) {
    p->tok = p->next;
    p->next = lex_next(&p->lx);
}

/* A message in the arena, whatever its length. */
static const char *vformat(parser *p, const char *fmt, va_list ap) {
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0) return fmt;
    char *msg = ir_arena_alloc(p->a, (size_t)n + 1);
    vsnprintf(msg, (size_t)n + 1, fmt, ap);
    return msg;
}

static void error_at(parser *p, src_loc at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void error_at(parser *p, src_loc at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *msg = vformat(p, fmt, ap);
    va_end(ap);
    diag_error(p->d, at, "%s", msg);
}

/* A user's name as messages show it: shortened when absurdly long. */
static const char *shown(parser *p, const char *name) {
    if (strlen(name) <= PARSE_MAX_QUOTE) return name;
    return ir_arena_printf(p->a, "%.*s...", PARSE_MAX_QUOTE - 3, name);
}

/* The token as a message quotes it: 'text' (shortened when long), or "end of file". */
static const char *quote(parser *p, const lex_token *t) {
    if (t->kind == LEX_EOF) return "end of file";
    if (t->len > PARSE_MAX_QUOTE)
        return ir_arena_printf(p->a, "'%.*s...'", PARSE_MAX_QUOTE - 3, t->start);
    return ir_arena_printf(p->a, "'%.*s'", (int)t->len, t->start);
}

/* The code point of the well-formed UTF-8 character of n bytes at s, or -1. */
static int32_t utf8_char(const unsigned char *s, int32_t n) {
    int32_t len, cp;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        len = 2;
        cp = s[0] & 0x1f;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        len = 3;
        cp = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        len = 4;
        cp = s[0] & 0x07;
    } else {
        return -1;
    }
    if (len > n) return -1;
    for (int32_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return -1;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    return cp;
}

/* What to say about a LEX_ERROR token: bytes that start no token, or a malformed number. */
static void report_bad_token(parser *p, const lex_token *t) {
    const unsigned char *s = (const unsigned char *)t->start;
    unsigned char c = s[0];
    if ((c >= '0' && c <= '9') || (c == '.' && t->len > 1)) {
        error_at(p, t->loc, "invalid number %s", quote(p, t));
    } else if (c == '&' || c == '|') {
        error_at(p, t->loc, "invalid character '%c' (did you mean '%c%c'?)", c, c, c);
    } else if (c == '\'') {
        error_at(p, t->loc, "invalid character \"'\"");
    } else if (c > 0x20 && c < 0x7f) {
        error_at(p, t->loc, "invalid character '%c'", c);
    } else if (utf8_char(s, t->len) == 0xFEFF) {
        error_at(p, t->loc,
                 "invalid character: a byte-order mark (U+FEFF), allowed only at the "
                 "start of the file");
    } else if (c >= 0x80 && utf8_char(s, t->len) >= 0) {
        int32_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
        error_at(p, t->loc, "invalid character '%.*s' (U+%04" PRIX32 ")", (int)len, t->start,
                 (uint32_t)utf8_char(s, t->len));
    } else {
        error_at(p, t->loc, "invalid byte 0x%02x", c);
    }
}

/* "expected WHAT, found TOKEN" at the current token; a bad token speaks for itself. */
static void expected(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void expected(parser *p, const char *fmt, ...) {
    if (p->tok.kind == LEX_ERROR) {
        report_bad_token(p, &p->tok);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    const char *what = vformat(p, fmt, ap);
    va_end(ap);
    error_at(p, p->tok.loc, "expected %s, found %s", what, quote(p, &p->tok));
}

/* Consumes `close`, or reports it missing, naming the line of its opener. */
static int expect_closer(parser *p, lex_kind close, const lex_token *open) {
    if (p->tok.kind == close) {
        advance(p);
        return 1;
    }
    expected(p, "%s to close %s at line %" PRId32, lex_kind_name(close), lex_kind_name(open->kind),
             open->loc.line);
    return 0;
}

static const char *ident_text(parser *p, const lex_token *t) {
    return ir_arena_strndup(p->a, t->start, (size_t)t->len);
}

/* ---- expressions --------------------------------------------------------------------- */

static int enter(parser *p) {
    if (p->depth >= PARSE_MAX_DEPTH) {
        error_at(p, p->tok.loc, "expression nested too deeply");
        return 0;
    }
    p->depth++;
    return 1;
}

static void leave(parser *p) {
    p->depth--;
}

static int32_t height_of(const ast_expr *e) {
    return ((const parse_node *)e)->height;
}

/* A new node of the given height; NULL (reported at `at`) when the tree would be too tall. */
static ast_expr *new_expr(parser *p, ast_kind kind, src_loc loc, int32_t height, src_loc at) {
    if (height > PARSE_MAX_DEPTH) {
        error_at(p, at, "expression nested too deeply");
        return NULL;
    }
    parse_node *n = ir_arena_alloc(p->a, sizeof *n);
    n->e.kind = kind;
    n->e.loc = loc;
    n->height = height;
    return &n->e;
}

static ast_expr *new_leaf(parser *p, ast_kind kind, const lex_token *t) {
    return new_expr(p, kind, t->loc, 1, t->loc);
}

static int32_t max_i32(int32_t a, int32_t b) {
    return a > b ? a : b;
}

/* axisnum = [ "-" ] int
 * A number too large is reported, and out flagged so that its stand-in is never shown. */
static int axis_number(parser *p, ast_arg *out, int64_t *value, src_loc *loc) {
    int negative = 0;
    *loc = p->tok.loc;
    if (p->tok.kind == LEX_MINUS) {
        negative = 1;
        advance(p);
    }
    if (p->tok.kind != LEX_INT) {
        expected(p, "axis number");
        return 0;
    }
    if (p->tok.overflow) {
        error_at(p, p->tok.loc, "integer literal too large");
        out->axis_too_large = 1;
    }
    *value = negative ? -p->tok.value.i : p->tok.value.i;
    advance(p);
    return 1;
}

/* arg = expr | "axis" "=" ( axisnum | "(" axisnum { "," axisnum } ")" ) */
static int arg(parser *p, ast_arg *out) {
    memset(out, 0, sizeof *out);
    out->loc = p->tok.loc;
    if (p->tok.kind != LEX_AXIS) {
        out->expr = expr(p);
        return out->expr != NULL;
    }
    out->is_axis = 1;
    advance(p);
    if (p->tok.kind != LEX_ASSIGN) {
        expected(p, "'=' after 'axis'");
        return 0;
    }
    advance(p);
    int32_t cap = 0, cap_locs = 0, nlocs = 0;
    int64_t value;
    src_loc loc;
    if (p->tok.kind != LEX_LPAREN) {
        if (!axis_number(p, out, &value, &loc)) return 0;
        IR_VEC_PUSH(p->a, out->axes, out->naxes, cap, value);
        IR_VEC_PUSH(p->a, out->axes_locs, nlocs, cap_locs, loc);
        return 1;
    }
    lex_token open = p->tok;
    out->axis_is_tuple = 1;
    advance(p);
    for (;;) {
        if (!axis_number(p, out, &value, &loc)) return 0;
        IR_VEC_PUSH(p->a, out->axes, out->naxes, cap, value);
        IR_VEC_PUSH(p->a, out->axes_locs, nlocs, cap_locs, loc);
        if (p->tok.kind != LEX_COMMA) break;
        advance(p);
    }
    return expect_closer(p, LEX_RPAREN, &open);
}

/* call = ident "(" [ arg { "," arg } ] ")" */
static ast_expr *call(parser *p) {
    lex_token name = p->tok;
    advance(p);
    lex_token open = p->tok;
    advance(p);
    ast_arg *args = NULL;
    int32_t nargs = 0, cap = 0, height = 0;
    if (p->tok.kind != LEX_RPAREN) {
        for (;;) {
            ast_arg a;
            if (!arg(p, &a)) return NULL;
            if (a.expr) height = max_i32(height, height_of(a.expr));
            IR_VEC_PUSH(p->a, args, nargs, cap, a);
            if (p->tok.kind != LEX_COMMA) break;
            advance(p);
        }
    }
    if (!expect_closer(p, LEX_RPAREN, &open)) return NULL;
    ast_expr *e = new_expr(p, AST_CALL, name.loc, height + 1, name.loc);
    if (!e) return NULL;
    e->u.call.name = ident_text(p, &name);
    e->u.call.args = args;
    e->u.call.nargs = nargs;
    return e;
}

/* cast = dtype "(" expr ")" */
static ast_expr *cast(parser *p) {
    lex_token dtype = p->tok;
    advance(p);
    lex_token open = p->tok;
    advance(p);
    ast_expr *x = expr(p);
    if (!x) return NULL;
    if (p->tok.kind == LEX_COMMA) {
        error_at(p, p->tok.loc, "a cast to '%s' takes exactly one argument",
                 ir_dtypes[dtype.value.dtype].name);
        return NULL;
    }
    if (!expect_closer(p, LEX_RPAREN, &open)) return NULL;
    ast_expr *e = new_expr(p, AST_CAST, dtype.loc, height_of(x) + 1, dtype.loc);
    if (!e) return NULL;
    e->u.cast.to = dtype.value.dtype;
    e->u.cast.x = x;
    return e;
}

/* primary = number | "true" | "false" | ident | call | cast | "(" expr ")" */
static ast_expr *primary(parser *p) {
    lex_token t = p->tok;
    ast_expr *e;
    switch (t.kind) {
    case LEX_INT:
        if (t.overflow) error_at(p, t.loc, "integer literal too large");
        advance(p);
        if (!(e = new_leaf(p, AST_INT, &t))) return NULL;
        e->u.ilit.value = t.value.i;
        e->u.ilit.too_large = t.overflow;
        return e;
    case LEX_FLOAT:
        if (t.overflow) error_at(p, t.loc, "float literal out of range");
        advance(p);
        if (!(e = new_leaf(p, AST_FLOAT, &t))) return NULL;
        e->u.flit.value = t.value.f;
        return e;
    case LEX_TRUE:
    case LEX_FALSE:
        advance(p);
        if (!(e = new_leaf(p, AST_BOOL, &t))) return NULL;
        e->u.blit.value = t.kind == LEX_TRUE;
        return e;
    case LEX_IDENT:
        if (p->next.kind == LEX_LPAREN) return call(p);
        advance(p);
        if (!(e = new_leaf(p, AST_NAME, &t))) return NULL;
        e->u.name.name = ident_text(p, &t);
        return e;
    case LEX_DTYPE:
        if (p->next.kind == LEX_LPAREN) return cast(p);
        error_at(p, t.loc, "expected expression, found %s (a cast is written '%s(x)')",
                 quote(p, &t), ir_dtypes[t.value.dtype].name);
        return NULL;
    case LEX_LPAREN: {
        advance(p);
        ast_expr *x = expr(p);
        if (!x || !expect_closer(p, LEX_RPAREN, &t)) return NULL;
        return x;
    }
    default: expected(p, "expression"); return NULL;
    }
}

static ast_expr *binary_node(parser *p, const parse_binop *b, src_loc op_loc, ast_expr *l,
                             ast_expr *r) {
    int32_t height = max_i32(height_of(l), height_of(r)) + 1;
    ast_expr *e = new_expr(p, AST_BINARY, l->loc, height, op_loc);
    if (!e) return NULL;
    e->u.binary.op = b->op;
    e->u.binary.op_loc = op_loc;
    e->u.binary.l = l;
    e->u.binary.r = r;
    return e;
}

/* or    = and { "||" and }
 * and   = cmp { "&&" cmp }
 * cmp   = add [ cmpop add ]
 * add   = mul { ( "+" | "-" ) mul }
 * mul   = unary { ( "*" | "/" | "%" ) unary }
 * unary = ( "-" | "!" ) unary | primary
 * All of these at once: operators whose left priority exceeds `limit` are taken. */
static ast_expr *subexpr(parser *p, int limit) {
    if (!enter(p)) return NULL;
    ast_expr *x;
    if (p->tok.kind == LEX_MINUS || p->tok.kind == LEX_BANG) {
        lex_token op = p->tok;
        advance(p);
        ast_expr *operand = subexpr(p, PARSE_UNARY_PRIORITY);
        x = operand ? new_expr(p, AST_UNARY, op.loc, height_of(operand) + 1, op.loc) : NULL;
        if (x) {
            x->u.unary.op = op.kind == LEX_MINUS ? IR_OP_NEG : IR_OP_NOT;
            x->u.unary.x = operand;
        }
    } else {
        x = primary(p);
    }
    int prev_cmp = 0; /* the operand so far is an unparenthesized comparison */
    while (x && parse_binops[p->tok.kind].left > limit) {
        const parse_binop *b = &parse_binops[p->tok.kind];
        lex_token op = p->tok;
        if (b->is_cmp && prev_cmp) {
            error_at(p, op.loc, "comparison operators cannot be chained; use parentheses");
            x = NULL;
            break;
        }
        advance(p);
        ast_expr *r = subexpr(p, b->right);
        x = r ? binary_node(p, b, op.loc, x, r) : NULL;
        prev_cmp = b->is_cmp;
    }
    leave(p);
    return x;
}

/* expr = or [ "?" expr ":" expr ] */
static ast_expr *expr(parser *p) {
    ast_expr *c = subexpr(p, 0);
    if (!c || p->tok.kind != LEX_QUESTION) return c;
    lex_token question = p->tok;
    /* `a ? b : c ? d : ...` recurses here, not in subexpr, so count it too */
    if (!enter(p)) return NULL;
    advance(p);
    ast_expr *a = expr(p), *b = NULL;
    if (a) {
        if (p->tok.kind == LEX_COLON) {
            advance(p);
            b = expr(p);
        } else {
            expected(p, "':' to match '?' at line %" PRId32, question.loc.line);
        }
    }
    leave(p);
    if (!b) return NULL;
    int32_t height = max_i32(height_of(c), max_i32(height_of(a), height_of(b))) + 1;
    ast_expr *e = new_expr(p, AST_TERNARY, c->loc, height, question.loc);
    if (!e) return NULL;
    e->u.ternary.c = c;
    e->u.ternary.a = a;
    e->u.ternary.b = b;
    return e;
}

/* ---- types and declarations ---------------------------------------------------------- */

static void expected_dtype(parser *p) {
    ir_buf names;
    ir_buf_init(&names, p->a);
    for (int t = 0; t < IR_DTYPE_COUNT; t++)
        ir_buf_printf(&names, "%s%s", t ? ", " : "", ir_dtypes[t].name);
    expected(p, "a dtype (%s)", names.data);
}

/* dim = ident | int
 * Returns 0 when parsing cannot go on; a bad size is reported and replaced by 1. */
static int dim(parser *p, ast_dim *out) {
    memset(out, 0, sizeof *out);
    out->loc = p->tok.loc;
    out->size = 1;
    switch (p->tok.kind) {
    case LEX_IDENT:
        out->name = ident_text(p, &p->tok);
        advance(p);
        return 1;
    case LEX_INT:
        if (p->tok.overflow)
            error_at(p, p->tok.loc, "integer literal too large");
        else
            out->size = p->tok.value.i;
        advance(p);
        return 1;
    case LEX_MINUS:
        if (p->next.kind == LEX_INT) {
            error_at(p, p->tok.loc, "dimension cannot be negative");
            advance(p);
            advance(p);
            return 1;
        }
        break;
    default: break;
    }
    expected(p, "dimension (a name or an integer)");
    return 0;
}

/* type = dtype "[" [ dim { "," dim } ] "]" */
static int type(parser *p, ast_type *out) {
    memset(out, 0, sizeof *out);
    out->loc = p->tok.loc;
    if (p->tok.kind != LEX_DTYPE) {
        expected_dtype(p);
        return 0;
    }
    out->dtype = p->tok.value.dtype;
    advance(p);
    if (p->tok.kind != LEX_LBRACKET) {
        const char *name = ir_dtypes[out->dtype].name;
        expected(p, "'[' after '%s' (a scalar is written '%s[]')", name, name);
        return 0;
    }
    lex_token open = p->tok;
    advance(p);
    int32_t rank = 0;
    src_loc too_many = {0, 0}; /* where the first dim past the maximum rank is */
    if (p->tok.kind != LEX_RBRACKET) {
        for (;;) {
            ast_dim d;
            if (!dim(p, &d)) return 0;
            if (rank < IR_MAX_RANK)
                out->dims[rank] = d;
            else if (rank == IR_MAX_RANK)
                too_many = d.loc;
            if (rank < INT32_MAX) rank++;
            if (p->tok.kind != LEX_COMMA) break;
            advance(p);
        }
    }
    if (!expect_closer(p, LEX_RBRACKET, &open)) return 0;
    if (rank > IR_MAX_RANK)
        error_at(p, too_many, "rank %" PRId32 " exceeds the maximum of %d", rank, IR_MAX_RANK);
    out->rank = rank < IR_MAX_RANK ? rank : IR_MAX_RANK;
    return 1;
}

/* param = ident ":" type */
static int param(parser *p, ast_param *out) {
    memset(out, 0, sizeof *out);
    if (p->tok.kind != LEX_IDENT) {
        expected(p, "parameter name");
        return 0;
    }
    out->loc = p->tok.loc;
    out->name = ident_text(p, &p->tok);
    advance(p);
    if (p->tok.kind != LEX_COLON) {
        expected(p, "':' after parameter '%s'", shown(p, out->name));
        return 0;
    }
    advance(p);
    return type(p, &out->type);
}

/* The part of `function` before the block:
 * ident "(" [ param { "," param } ] ")" "->" rettype
 * rettype = type | "(" type { "," type } ")" */
static int header(parser *p, ast_func *f) {
    if (p->tok.kind != LEX_IDENT) {
        expected(p, "function name after 'fn'");
        return 0;
    }
    f->loc = p->tok.loc;
    f->name = ident_text(p, &p->tok);
    advance(p);
    if (p->tok.kind != LEX_LPAREN) {
        expected(p, "'(' after function name '%s'", shown(p, f->name));
        return 0;
    }
    lex_token open = p->tok;
    advance(p);
    int32_t cap = 0;
    if (p->tok.kind != LEX_RPAREN) {
        for (;;) {
            ast_param prm;
            if (!param(p, &prm)) return 0;
            IR_VEC_PUSH(p->a, f->params, f->nparams, cap, prm);
            if (p->tok.kind != LEX_COMMA) break;
            advance(p);
        }
    }
    if (!expect_closer(p, LEX_RPAREN, &open)) return 0;
    if (p->tok.kind != LEX_ARROW) {
        expected(p, "'->' and a return type after the parameters of '%s'", shown(p, f->name));
        return 0;
    }
    advance(p);
    ast_type t;
    cap = 0;
    if (p->tok.kind == LEX_LPAREN) {
        open = p->tok;
        f->ret_is_tuple = 1;
        advance(p);
        for (;;) {
            if (!type(p, &t)) return 0;
            IR_VEC_PUSH(p->a, f->rets, f->nrets, cap, t);
            if (p->tok.kind != LEX_COMMA) break;
            advance(p);
        }
        if (!expect_closer(p, LEX_RPAREN, &open)) return 0;
    } else {
        if (!type(p, &t)) return 0;
        IR_VEC_PUSH(p->a, f->rets, f->nrets, cap, t);
    }
    if (p->tok.kind != LEX_LBRACE) {
        expected(p, "'{' to begin the body of '%s'", shown(p, f->name));
        return 0;
    }
    return 1;
}

/* ---- statements and functions -------------------------------------------------------- */

/* After an error in a statement: skips past the next ';', or to a '}', 'let', 'return' or
 * 'fn', whichever comes first; a statement can start there. Always consumes a token
 * unless it stands at one of those. */
static void sync_stmt(parser *p) {
    for (;;) {
        switch (p->tok.kind) {
        case LEX_SEMI: advance(p); return;
        case LEX_RBRACE:
        case LEX_LET:
        case LEX_RETURN:
        case LEX_FN:
        case LEX_EOF: return;
        default: advance(p); break;
        }
    }
}

/* "let" ident "=" expr ";"
 * Returns 1 when the statement ended cleanly. out->value is set when the expression
 * parsed, even if the ';' is missing: keeping the let then avoids errors about its name. */
static int let_stmt(parser *p, ast_let *out) {
    memset(out, 0, sizeof *out);
    advance(p);
    if (p->tok.kind != LEX_IDENT) {
        expected(p, "name after 'let'");
        return 0;
    }
    out->loc = p->tok.loc;
    out->name = ident_text(p, &p->tok);
    advance(p);
    if (p->tok.kind != LEX_ASSIGN) {
        expected(p, "'=' after 'let %s'", shown(p, out->name));
        return 0;
    }
    advance(p);
    out->value = expr(p);
    if (!out->value) return 0;
    if (p->tok.kind != LEX_SEMI) {
        expected(p, "';' after let statement");
        return 0;
    }
    advance(p);
    return 1;
}

/* "return" expr { "," expr } ";"
 * Returns 1 when the statement ended cleanly; f's results are set when every expression
 * parsed. */
static int return_stmt(parser *p, ast_func *f, int keep) {
    advance(p);
    ast_expr **results = NULL;
    int32_t n = 0, cap = 0;
    for (;;) {
        ast_expr *e = expr(p);
        if (!e) return 0;
        IR_VEC_PUSH(p->a, results, n, cap, e);
        if (p->tok.kind != LEX_COMMA) break;
        advance(p);
    }
    if (keep) {
        f->results = results;
        f->nresults = n;
    }
    if (p->tok.kind != LEX_SEMI) {
        expected(p, "';' after return statement");
        return 0;
    }
    advance(p);
    return 1;
}

/* block = "{" { "let" ident "=" expr ";" } "return" expr { "," expr } ";" "}"
 * Statements out of that order are reported and skipped, and parsing goes on. */
static void block(parser *p, ast_func *f) {
    lex_token open = p->tok;
    advance(p);
    int32_t cap = 0;
    int seen_return = 0;
    for (;;) {
        switch (p->tok.kind) {
        case LEX_LET: {
            if (seen_return)
                error_at(p, p->tok.loc,
                         "let statement after 'return'; the return statement must come last");
            ast_let let;
            int clean = let_stmt(p, &let);
            if (let.value && !seen_return) IR_VEC_PUSH(p->a, f->lets, f->nlets, cap, let);
            if (!clean) sync_stmt(p);
            break;
        }
        case LEX_RETURN:
            if (seen_return && f->name)
                error_at(p, p->tok.loc, "more than one return statement in function '%s'",
                         shown(p, f->name));
            else if (seen_return)
                error_at(p, p->tok.loc, "more than one return statement in a function");
            else
                f->return_loc = p->tok.loc;
            if (!return_stmt(p, f, !seen_return)) sync_stmt(p);
            seen_return = 1;
            break;
        case LEX_RBRACE:
            /* (without a name the header broke, and that error says enough) */
            if (!seen_return && f->name)
                error_at(p, p->tok.loc, "expected 'return' statement at the end of function '%s'",
                         shown(p, f->name));
            advance(p);
            return;
        case LEX_FN:
        case LEX_EOF: expect_closer(p, LEX_RBRACE, &open); return;
        default:
            if (seen_return)
                expect_closer(p, LEX_RBRACE, &open);
            else
                expected(p, "'let' or 'return'");
            sync_stmt(p);
            break;
        }
    }
}

/* After an error in a grad declaration: on to the next 'fn' (or past the ';' that ends it). */
static void sync_decl(parser *p) {
    while (p->tok.kind != LEX_FN && p->tok.kind != LEX_EOF && p->tok.kind != LEX_SEMI)
        advance(p);
    if (p->tok.kind == LEX_SEMI) advance(p);
}

/* "wrt" "=" "(" ident { "," ident } ")", after the ',' */
static int wrt_list(parser *p, ast_func *f) {
    if (p->tok.kind != LEX_IDENT || strcmp(ident_text(p, &p->tok), "wrt") != 0) {
        expected(p, "'wrt=(...)' after ',' in grad(...)");
        return 0;
    }
    advance(p);
    if (p->tok.kind != LEX_ASSIGN) {
        expected(p, "'=' after 'wrt'");
        return 0;
    }
    advance(p);
    if (p->tok.kind != LEX_LPAREN) {
        expected(p, "'(' and the parameter names after 'wrt='");
        return 0;
    }
    lex_token open = p->tok;
    advance(p);
    int32_t cap = 0, lcap = 0;
    f->has_wrt = 1;
    for (;;) {
        if (p->tok.kind != LEX_IDENT) {
            expected(p, "a parameter name in wrt=(...)");
            return 0;
        }
        const char *name = ident_text(p, &p->tok);
        int32_t n = f->nwrt, nl = f->nwrt;
        IR_VEC_PUSH(p->a, f->wrt, n, cap, name);
        IR_VEC_PUSH(p->a, f->wrt_locs, nl, lcap, p->tok.loc);
        f->nwrt = n;
        advance(p);
        if (p->tok.kind != LEX_COMMA) break;
        advance(p);
    }
    return expect_closer(p, LEX_RPAREN, &open);
}

/* grad = ident "=" "grad" "(" ident [ "," "wrt" "=" "(" ident { "," ident } ")" ] ")" ";"
 * (after "fn" ident, at the '='). */
static int grad_decl(parser *p, ast_func *f) {
    advance(p);
    if (p->tok.kind != LEX_IDENT || strcmp(ident_text(p, &p->tok), "grad") != 0) {
        expected(p, "'grad(...)' after 'fn %s ='", shown(p, f->name));
        return 0;
    }
    advance(p);
    if (p->tok.kind != LEX_LPAREN) {
        expected(p, "'(' after 'grad'");
        return 0;
    }
    lex_token open = p->tok;
    advance(p);
    if (p->tok.kind != LEX_IDENT) {
        expected(p, "the name of a function in grad(...)");
        return 0;
    }
    f->grad_of = ident_text(p, &p->tok);
    f->grad_loc = p->tok.loc;
    advance(p);
    if (p->tok.kind == LEX_COMMA) {
        advance(p);
        if (!wrt_list(p, f)) return 0;
    }
    if (!expect_closer(p, LEX_RPAREN, &open)) return 0;
    if (p->tok.kind != LEX_SEMI) {
        expected(p, "';' after grad(...)");
        return 0;
    }
    advance(p);
    return 1;
}

/* function = "fn" ident "(" [ param { "," param } ] ")" "->" rettype block
 *          | "fn" ident "=" "grad" "(" ... ")" ";" */
static void function(parser *p, ast_file *file, int32_t *cap) {
    ast_func f;
    memset(&f, 0, sizeof f);
    advance(p);
    if (p->tok.kind == LEX_IDENT && p->next.kind == LEX_ASSIGN) {
        f.loc = p->tok.loc;
        f.name = ident_text(p, &p->tok);
        advance(p);
        if (grad_decl(p, &f))
            IR_VEC_PUSH(p->a, file->funcs, file->nfuncs, *cap, f);
        else
            sync_decl(p);
        return;
    }
    if (!header(p, &f)) {
        /* a body found before the next function is still parsed, for its own errors */
        while (p->tok.kind != LEX_LBRACE && p->tok.kind != LEX_FN && p->tok.kind != LEX_EOF)
            advance(p);
        if (p->tok.kind == LEX_LBRACE) block(p, &f);
        return;
    }
    block(p, &f);
    IR_VEC_PUSH(p->a, file->funcs, file->nfuncs, *cap, f);
}

/* file = { function } */
static void parse_functions(parser *p, ast_file *file) {
    int32_t cap = 0;
    while (p->tok.kind != LEX_EOF) {
        if (p->tok.kind == LEX_FN) {
            function(p, file, &cap);
            continue;
        }
        expected(p, "'fn' to begin a function");
        while (p->tok.kind != LEX_FN && p->tok.kind != LEX_EOF)
            advance(p);
    }
}

int parse_file(diag_ctx *d, ast_file **out) {
    int32_t before = d->nerrors;
    ast_file *file = ir_arena_alloc(d->arena, sizeof *file);
    *out = file;
    if (!file) {
        diag_file_error(d, "out of memory");
        return d->nerrors - before;
    }
    /* Without an out-of-memory handler the arena returns NULL, which the parser is not
     * written to check at every step: catch the failure here instead. */
    jmp_buf oom;
    jmp_buf *saved = d->arena->oom;
    if (!saved) {
        if (setjmp(oom)) {
            d->arena->oom = NULL;
            diag_file_error(d, "out of memory");
            return d->nerrors - before;
        }
        d->arena->oom = &oom;
    }
    parser p;
    memset(&p, 0, sizeof p);
    p.d = d;
    p.a = d->arena;
    lex_init(&p.lx, d->src, d->len);
    p.next = lex_next(&p.lx);
    advance(&p);
    parse_functions(&p, file);
    d->arena->oom = saved;
    return d->nerrors - before;
}
