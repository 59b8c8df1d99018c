/* frontend/ast.h: the syntax tree the parser builds, before names, types and shapes are
 * checked. Nodes live in the compilation's arena. */
#ifndef FUSEC_FRONTEND_AST_H
#define FUSEC_FRONTEND_AST_H

#include <stdint.h>

#include "diag.h"
#include "../ir/ir.h"

typedef enum ast_kind {
    AST_INT,     /* integer literal: u.ilit */
    AST_FLOAT,   /* float literal: u.flit */
    AST_BOOL,    /* true / false: u.blit */
    AST_NAME,    /* a let or a parameter: u.name */
    AST_UNARY,   /* - !: u.unary, op is IR_OP_NEG or IR_OP_NOT */
    AST_BINARY,  /* + - * / % == != < <= > >= && ||: u.binary, op is the IR op */
    AST_TERNARY, /* c ? a : b: u.ternary */
    AST_CALL,    /* f(args): u.call (a built-in or a function of the file) */
    AST_CAST,    /* f16(x): u.cast */
} ast_kind;

typedef struct ast_expr ast_expr;

/* One call argument: an expression, or `axis=...` (then expr is NULL). */
typedef struct ast_arg {
    src_loc loc;
    ast_expr *expr;
    int is_axis;
    int axis_is_tuple;  /* axis=(...) rather than axis=N */
    int axis_too_large; /* a number of it did not fit (reported by the parser): the axes
                           hold a stand-in, which the checker must not speak of */
    int32_t naxes;
    int64_t *axes;      /* as written, negative allowed */
    src_loc *axes_locs; /* where each axis number starts (its '-' if negative) */
} ast_arg;

struct ast_expr {
    ast_kind kind;
    src_loc loc; /* start of the expression (for a binary: its left operand's start) */
    union {
        struct {
            int64_t value;
            int too_large; /* did not fit (reported by the parser): value is a stand-in */
        } ilit;
        struct {
            double value;
        } flit;
        struct {
            int value;
        } blit;
        struct {
            const char *name;
        } name;
        struct {
            ir_op op;
            ast_expr *x;
        } unary;
        struct {
            ir_op op;
            src_loc op_loc; /* where the operator token is */
            ast_expr *l, *r;
        } binary;
        struct {
            ast_expr *c, *a, *b;
        } ternary;
        struct {
            const char *name;
            ast_arg *args;
            int32_t nargs;
        } call;
        struct {
            ir_dtype to;
            ast_expr *x;
        } cast;
    } u;
};

/* A dim in a declared type: a name (symbolic) or a literal size. */
typedef struct ast_dim {
    src_loc loc;
    const char *name; /* NULL for a literal */
    int64_t size;
} ast_dim;

typedef struct ast_type {
    src_loc loc;
    ir_dtype dtype;
    int32_t rank; /* at most IR_MAX_RANK; the parser reports more */
    ast_dim dims[IR_MAX_RANK];
} ast_type;

typedef struct ast_param {
    src_loc loc;
    const char *name;
    ast_type type;
} ast_param;

typedef struct ast_let {
    src_loc loc; /* of the name */
    const char *name;
    ast_expr *value;
} ast_let;

typedef struct ast_func {
    src_loc loc; /* of the name */
    const char *name;
    ast_param *params;
    int32_t nparams;
    ast_type *rets;
    int32_t nrets;
    int ret_is_tuple; /* -> (T, ...) */
    ast_let *lets;
    int32_t nlets;
    src_loc return_loc; /* of the 'return' keyword */
    ast_expr **results;
    int32_t nresults;
    /* `fn NAME = grad(FN, wrt=(a, b));` (SPEC §1): no parameters, results or body */
    const char *grad_of; /* FN; NULL for a function with a body */
    src_loc grad_loc;    /* of FN's name */
    int has_wrt;         /* wrt= given */
    const char **wrt;
    src_loc *wrt_locs;
    int32_t nwrt;
} ast_func;

typedef struct ast_file {
    ast_func *funcs; /* functions that parsed (possibly with recovered errors inside) */
    int32_t nfuncs;
} ast_file;

#endif
