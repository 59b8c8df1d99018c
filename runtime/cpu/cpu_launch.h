/* runtime/cpu/cpu_launch.h: running CPU kernels that are already loaded, the half of the CPU
 * backend that needs no compiler (part of libfusec_rt): a module's launch description, what
 * the code generator's metadata (codegen/cpu/llvm.h) says a launch needs and nothing more, a
 * program (the description with its kernels' addresses) and launches of its functions on the
 * thread pool.
 *
 * Two producers: the JIT (driver/cpu/cpu_backend.c) describes the module it just planned; a
 * library built ahead of time (fusec --emit=lib) carries the description serialized
 * (runtime/aot/aot_image.c) beside its object code.
 */
#ifndef FUSEC_RUNTIME_CPU_LAUNCH_H
#define FUSEC_RUNTIME_CPU_LAUNCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "codegen/cpu/llvm.h" /* the kernel ABI and llvm_kernel_meta: types only */
#include "fusec.h"

/* A buffer of a function's table (plan_buf's launch-time part). */
typedef struct rt_cpu_buf {
    plan_buf_kind kind;
    int32_t index;      /* PARAM / RESULT: its position; TEMP: among the temps */
    int32_t elem_bytes; /* its elements' storage size */
    ir_shape shape;     /* TEMP: its elements */
} rt_cpu_buf;

/* A reduction that fails over nothing (plan_check): `op` ("max") over an empty `shape`. */
typedef struct rt_cpu_check {
    const char *op;
    ir_shape shape;
} rt_cpu_check;

typedef struct rt_cpu_func {
    const char *name;
    int32_t nparams, noutputs, nsyms;
    int32_t nbufs; /* params, results, temps (plan_func.bufs) */
    rt_cpu_buf *bufs;
    int32_t nchecks;
    rt_cpu_check *checks;
    uint8_t *inplace_hazard; /* noutputs * nparams (plan_func.inplace_hazard) */
    int32_t nkernels;
    llvm_kernel_meta *kernels; /* in partition order */
} rt_cpu_func;

typedef struct rt_cpu_module {
    int32_t nfuncs;
    rt_cpu_func *funcs;
} rt_cpu_module;

typedef struct rt_cpu_program rt_cpu_program;

/* Looks symbol `name` of the loaded code up: its address, or NULL with err. */
typedef void *(*rt_cpu_lookup_fn)(void *code, const char *name, char *err, size_t errlen);

/* A program of mod's functions (mod outlives it), built for vectors of vector_bytes, its
 * kernels looked up in `code` (whose owner frees it after the program); NULL with err.
 * refusal: when not NULL or "", code is NULL, nothing is looked up, and every launch is
 * refused with this message (code built for a CPU the host cannot run). */
rt_cpu_program *rt_cpu_program_new(const rt_cpu_module *mod, int vector_bytes,
                                   rt_cpu_lookup_fn lookup, void *code, const char *refusal,
                                   char *err, size_t errlen);
void rt_cpu_program_free(rt_cpu_program *p); /* NULL is accepted */

/* Runs function `func`: args, one per parameter then one per result, already checked against
 * its signature (dtypes, ranks, dims, buffers); syms, the values of its symbolic dims.
 * Returns when done. */
fusec_status rt_cpu_run(rt_cpu_program *p, int func, const ir_tensor *args, const int64_t *syms,
                        char *err, size_t errlen);

/* The bytes of results from which a launch streams them (runs long enough, as cpu_launch.c
 * says): FUSEC_CPU_STREAM_MIN_BYTES where set, else the larger of LLVM_STREAM_MIN_BYTES and an
 * eighth of the host's L3. */
double rt_cpu_stream_min_bytes(void);

/* The median time of moving `bytes` bytes as a plain copy on every thread (rt_backend's
 * copy_time). */
fusec_status rt_cpu_copy_time(size_t bytes, int reps, double *median_ms, char *err, size_t errlen);

#endif
