/* frontend/frontend.h: the front end's entry points: source text -> AST -> checked IR. */
#ifndef FUSEC_FRONTEND_H
#define FUSEC_FRONTEND_H

#include "ast.h"
#include "diag.h"
#include "../ir/ir.h"

/* Limits that keep absurd input from exhausting the stack or the machine. */
#define PARSE_MAX_DEPTH        200       /* nesting of expressions */
#define CHECK_MAX_INLINE_DEPTH 64        /* nested calls */
#define CHECK_MAX_NODES        (1 << 16) /* IR nodes in one function after inlining */

/* Parses d->src (d->src[d->len] must be NUL) into *out. Syntax errors go to d, with
 * recovery at statement level so one run reports several. Returns the number of errors. */
int parse_file(diag_ctx *d, ast_file **out);

/* How an operator is written in source ("+", "&&"); an op without one gives its name. */
const char *parse_op_token(ir_op op);

/* `fusec --emit=ast`: a stable text form of the tree. */
void parse_print_ast(ir_buf *b, const ast_file *f);

/* Checks names, calls (recursion), arity, dtypes (promotion, weak literals), shapes
 * (symbolic dims, broadcasting), reductions and return types of every function; inlines
 * calls and lowers each function to one IR function of *out. Errors and warnings go to d.
 * Returns the number of errors; *out holds only the functions that checked cleanly. */
int check_file(diag_ctx *d, const ast_file *file, ir_module **out);

#endif
