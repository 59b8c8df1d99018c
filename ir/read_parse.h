/* ir/read_parse.h: what the IR reader's two halves share (internal to ir/read*.c): the
 * function as its lines state it, which ir/read_parse.c fills from the text and ir/read.c
 * turns into an ir_func. Every item keeps where it was written, for messages. */
#ifndef FUSEC_IR_READ_PARSE_H
#define FUSEC_IR_READ_PARSE_H

#include "ir.h"

/* A place in the text, both from 1. */
typedef struct ir_rd_pos {
    int32_t line, col;
} ir_rd_pos;

/* One node line: the node it states (op, dtype, shape, operands, axes, the index of an
 * INPUT or OUTPUT, a constant's value, the stored flag; kernel -1), its number, the
 * parameter name of an INPUT, and the kernel whose body holds the line (-1: none). */
typedef struct ir_rd_node {
    ir_node node;
    ir_ref ref;
    const char *name;
    int32_t kernel;
    ir_rd_pos pos;        /* of its "%N" */
    ir_rd_pos arg_pos[3]; /* of each operand */
} ir_rd_node;

/* One kernel header: the kernel as written (kind, domain, reduce axes, parts, inputs,
 * outputs; the body is the node lines below it, which ir/read.c collects). */
typedef struct ir_rd_kernel {
    ir_kernel kernel;
    ir_rd_pos pos;
} ir_rd_kernel;

/* One parameter of the `func` header: its node, dtype and shape (the name is on the INPUT
 * line). */
typedef struct ir_rd_param {
    ir_param param;
    ir_rd_pos pos;
} ir_rd_param;

/* A function as its lines state it. `f` is the new function, so far with its name and the
 * symbols the text names (in the order it names them); everything else is in the tables. */
typedef struct ir_rd_func {
    ir_func *f;
    ir_rd_pos pos; /* of the `func` line */
    ir_rd_param *params;
    int32_t nparams, cap_params;
    ir_output *outputs; /* the header's result types (node unset) */
    int32_t noutputs, cap_outputs;
    ir_rd_node *nodes; /* in the order of the text */
    int32_t nnodes, cap_nodes;
    ir_rd_kernel *kernels;
    int32_t nkernels, cap_kernels;
} ir_rd_func;

/* The text still to read, a line at a time. */
typedef struct ir_rd_text {
    const char *p, *end;
    int32_t line; /* the number of the line at p */
} ir_rd_text;

/* Parses the next function of t: blank and comment lines are skipped up to its `func` line,
 * and it runs to the next `func` line (where t is left) or the end. Its ir_func is a new
 * function of m. 0; 1 when only blank and comment lines were left; -1 with "LINE:COL:
 * message" in err. */
int ir_rd_parse_func(ir_rd_text *t, ir_module *m, ir_rd_func *out, char *err, size_t errlen);

/* Formats "LINE:COL: message" into err; returns -1. */
int ir_rd_fail(char *err, size_t errlen, ir_rd_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
