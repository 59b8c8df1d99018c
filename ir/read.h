/* ir/read.h: the IR reader, the inverse of the printer (ir/print.c): text as `fusec
 * --emit=ir` prints it (with or without --no-fuse), or as --dump-after prints it before the
 * partitioning passes (no kernel lines), back into ir_funcs. Pass tests are then IR text in
 * and IR text out (tests/ir/, docs/fusion.md "Pass tests").
 *
 * What it reads is what the printer writes, a line at a time: `func` headers, node lines
 * `%N = OP ... : DTYPE[DIMS] [stored]`, and `kernel` headers whose body is the node lines
 * indented by four or more below them. Blank lines and lines that start with '#' are
 * skipped. Node lines may come in any order (a partition prints leaves, then the kernels,
 * then the outputs): node %N becomes node N, so the numbers must run from %0 without a gap.
 *
 * The text is user input: a bad one is never an assert. It gets -1 and one message, "LINE:COL:
 * what is wrong", in err, and whatever is read passes ir_verify (the partition's checks
 * included) or is refused with the verifier's message at the line it names. Numbers are read
 * in the "C" locale, as the printer writes them.
 */
#ifndef FUSEC_IR_READ_H
#define FUSEC_IR_READ_H

#include <stddef.h>

#include "ir.h"

/* Reads the one function of `text` (len bytes, no NUL needed) into a new function of m,
 * allocated from m's arena. 0 and *out set; else -1, *out NULL, the message in err, and m as
 * it was (the arena keeps what was allocated). */
int ir_read_func(ir_module *m, const char *text, size_t len, ir_func **out, char *err,
                 size_t errlen);

/* Reads every function of `text` (as ir_print_module or --emit=ir prints a module: each
 * starts at its `func` line) into a new module in arena a. 0 and *out set; else -1, *out NULL
 * and the message of the first error in err. */
int ir_read_module(ir_arena *a, const char *text, size_t len, ir_module **out, char *err,
                   size_t errlen);

#endif
