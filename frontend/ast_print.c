/* frontend/ast_print.c: the text form of the AST (`fusec --emit=ast`).
 *
 * One line per function header, let and return; expressions as S-expressions with the
 * operator first, so precedence and associativity are visible:
 *
 *     fn softmax(x: f32[R, C]) -> f32[R, C]
 *       let e = (exp (- x (max x axis=1)))
 *       return (/ e (sum e axis=1))
 *
 * The form is stable: tests compare it as text. Recursion is safe because the parser
 * bounds the height of every tree (PARSE_MAX_DEPTH).
 */
#include "frontend.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *parse_op_token(ir_op op) {
    switch (op) {
    case IR_OP_NEG: return "-";
    case IR_OP_NOT: return "!";
    case IR_OP_ADD: return "+";
    case IR_OP_SUB: return "-";
    case IR_OP_MUL: return "*";
    case IR_OP_DIV: return "/";
    case IR_OP_MOD: return "%";
    case IR_OP_EQ: return "==";
    case IR_OP_NE: return "!=";
    case IR_OP_LT: return "<";
    case IR_OP_LE: return "<=";
    case IR_OP_GT: return ">";
    case IR_OP_GE: return ">=";
    case IR_OP_AND: return "&&";
    case IR_OP_OR: return "||";
    default: return ir_ops[op].name;
    }
}

/* The shortest %g form that reads back as the same double, and always recognisable as a
 * float (1.0, not 1). */
static void print_float(ir_buf *b, double v) {
    if (isnan(v)) {
        ir_buf_puts(b, "nan");
        return;
    }
    if (isinf(v)) {
        ir_buf_puts(b, v < 0 ? "-inf" : "inf");
        return;
    }
    char s[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (strtod(s, NULL) == v) break;
    }
    /* %g goes to an exponent as soon as the digits run out (3.5e+02); like Python's repr,
     * write whole numbers below 1e16 out in full (350.0) */
    const char *e = strchr(s, 'e');
    if (e && atoi(e + 1) >= 0 && atoi(e + 1) < 16) snprintf(s, sizeof s, "%.0f", v);
    ir_buf_puts(b, s);
    if (!strpbrk(s, ".e")) ir_buf_puts(b, ".0");
}

static void print_expr(ir_buf *b, const ast_expr *e);

static void print_arg(ir_buf *b, const ast_arg *a) {
    if (!a->is_axis) {
        print_expr(b, a->expr);
        return;
    }
    ir_buf_puts(b, "axis=");
    if (a->axis_is_tuple) ir_buf_puts(b, "(");
    for (int32_t i = 0; i < a->naxes; i++)
        ir_buf_printf(b, "%s%" PRId64, i ? ", " : "", a->axes[i]);
    if (a->axis_is_tuple) ir_buf_puts(b, ")");
}

static void print_expr(ir_buf *b, const ast_expr *e) {
    switch (e->kind) {
    case AST_INT: ir_buf_printf(b, "%" PRId64, e->u.ilit.value); break;
    case AST_FLOAT: print_float(b, e->u.flit.value); break;
    case AST_BOOL: ir_buf_puts(b, e->u.blit.value ? "true" : "false"); break;
    case AST_NAME: ir_buf_puts(b, e->u.name.name); break;
    case AST_UNARY:
        ir_buf_printf(b, "(%s ", parse_op_token(e->u.unary.op));
        print_expr(b, e->u.unary.x);
        ir_buf_puts(b, ")");
        break;
    case AST_BINARY:
        ir_buf_printf(b, "(%s ", parse_op_token(e->u.binary.op));
        print_expr(b, e->u.binary.l);
        ir_buf_puts(b, " ");
        print_expr(b, e->u.binary.r);
        ir_buf_puts(b, ")");
        break;
    case AST_TERNARY:
        ir_buf_puts(b, "(? ");
        print_expr(b, e->u.ternary.c);
        ir_buf_puts(b, " ");
        print_expr(b, e->u.ternary.a);
        ir_buf_puts(b, " ");
        print_expr(b, e->u.ternary.b);
        ir_buf_puts(b, ")");
        break;
    case AST_CALL:
        ir_buf_printf(b, "(%s", e->u.call.name);
        for (int32_t i = 0; i < e->u.call.nargs; i++) {
            ir_buf_puts(b, " ");
            print_arg(b, &e->u.call.args[i]);
        }
        ir_buf_puts(b, ")");
        break;
    case AST_CAST:
        ir_buf_printf(b, "(cast %s ", ir_dtypes[e->u.cast.to].name);
        print_expr(b, e->u.cast.x);
        ir_buf_puts(b, ")");
        break;
    }
}

static void print_type(ir_buf *b, const ast_type *t) {
    ir_buf_printf(b, "%s[", ir_dtypes[t->dtype].name);
    for (int32_t i = 0; i < t->rank; i++) {
        if (i) ir_buf_puts(b, ", ");
        if (t->dims[i].name)
            ir_buf_puts(b, t->dims[i].name);
        else
            ir_buf_printf(b, "%" PRId64, t->dims[i].size);
    }
    ir_buf_puts(b, "]");
}

static void print_func(ir_buf *b, const ast_func *f) {
    if (f->grad_of) {
        ir_buf_printf(b, "fn %s = grad(%s", f->name, f->grad_of);
        if (f->has_wrt) {
            ir_buf_puts(b, ", wrt=(");
            for (int32_t i = 0; i < f->nwrt; i++)
                ir_buf_printf(b, "%s%s", i ? ", " : "", f->wrt[i]);
            ir_buf_puts(b, ")");
        }
        ir_buf_puts(b, ")\n");
        return;
    }
    ir_buf_printf(b, "fn %s(", f->name);
    for (int32_t i = 0; i < f->nparams; i++) {
        ir_buf_printf(b, "%s%s: ", i ? ", " : "", f->params[i].name);
        print_type(b, &f->params[i].type);
    }
    ir_buf_puts(b, ") -> ");
    if (f->ret_is_tuple) ir_buf_puts(b, "(");
    for (int32_t i = 0; i < f->nrets; i++) {
        if (i) ir_buf_puts(b, ", ");
        print_type(b, &f->rets[i]);
    }
    if (f->ret_is_tuple) ir_buf_puts(b, ")");
    ir_buf_puts(b, "\n");
    for (int32_t i = 0; i < f->nlets; i++) {
        ir_buf_printf(b, "  let %s = ", f->lets[i].name);
        print_expr(b, f->lets[i].value);
        ir_buf_puts(b, "\n");
    }
    if (f->nresults) {
        ir_buf_puts(b, "  return ");
        for (int32_t i = 0; i < f->nresults; i++) {
            if (i) ir_buf_puts(b, ", ");
            print_expr(b, f->results[i]);
        }
        ir_buf_puts(b, "\n");
    }
}

void parse_print_ast(ir_buf *b, const ast_file *f) {
    if (!f) return;
    for (int32_t i = 0; i < f->nfuncs; i++)
        print_func(b, &f->funcs[i]);
}
