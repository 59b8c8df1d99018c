/* runtime/args.h: the checks every launch makes of its buffers, whoever calls (fusec_launch,
 * and the entry points of a library built ahead of time): part of libfusec_rt.
 */
#ifndef FUSEC_RUNTIME_ARGS_H
#define FUSEC_RUNTIME_ARGS_H

#include <stddef.h>

#include "fusec.h"
#include "ir/ir.h"

/* Most parameters and results, and symbolic dims, a launch takes. */
#define RT_MAX_ARGS IR_MAX_ARGS
#define RT_MAX_SYMS (IR_MAX_RANK * 64 + 1)

/* The name of argument i in messages: "parameter 'x'" (i < nparams, its name `param`) or
 * "result 0" (i - nparams). */
const char *rt_arg_name(const char *param, int nparams, int i, char *buf, size_t len);

/* Whether strides s lay dims out dense and row-major (an axis of one element takes any, and a
 * tensor of no element any at all). */
int rt_dense_strides(const int64_t *s, int rank, const int64_t *dims);

/* Every tensor of args[0 .. nargs) (nparams parameters, then results) has an element count
 * memory could hold (ir_dims_count >= 0): FUSEC_OK, or FUSEC_ERR_SHAPE with the message
 * naming the first that has not. */
fusec_status rt_check_counts(const ir_tensor *args, int nparams, int nargs,
                             const char *const *param_names, char *err, size_t errlen);

/* args[0 .. nargs): nparams parameters, then results, with dims whose counts are checked
 * (rt_check_counts). Every non-empty tensor has data, aligned to its element size, with
 * every element inside the address space, and no result overlaps another buffer, except
 * that a result may be the very buffer of an input of its dtype and shape (in place, SPEC
 * §3). FUSEC_OK, or FUSEC_ERR_INVALID_ARGUMENT with the message in err. */
fusec_status rt_check_buffers(const ir_tensor *args, int nparams, int nargs,
                              const char *const *param_names, char *err, size_t errlen);

#endif
