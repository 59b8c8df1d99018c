/* driver/backend.h: the interface every execution backend implements (CUDA, CPU, and the
 * reference interpreter), a table of function pointers, so the public API serves every target
 * with the same calls.
 *
 * A backend gets the module's fused functions (each with its ir_partition), generates code
 * for every kernel (codegen/), builds it (NVRTC or the LLVM JIT, through the disk cache),
 * loads it, and launches a function's kernels in partition order, with the intermediates
 * the partition stores in scratch memory it owns.
 */
#ifndef FUSEC_RUNTIME_BACKEND_H
#define FUSEC_RUNTIME_BACKEND_H

#include <stddef.h>

#include "fusec.h"
#include "ir/ir.h"
#include "runtime/host_memory.h"

struct rt_image; /* runtime/aot/aot_image.h */

typedef struct rt_backend_request {
    ir_func *const *funcs; /* the module's fused functions, in source order */
    int nfuncs;
    const fusec_options *opt; /* arch, fast_math, no_cache, cache_dir, verbose */
    ir_arena *arena;          /* the module's arena, for anything that lives as long */
    ir_buf *report;           /* -v lines (cache hit or miss per kernel, timings) */
    /* what this backend's resolve_options made of the options (the CPU backend: the CPU it
     * compiles for, runtime/cpu/cpu_target.h, NULL for the host); NULL without the hook */
    const void *resolved;
} rt_backend_request;

typedef struct rt_backend {
    const char *name; /* "cuda", "cpu", "ref" */
    fusec_target target;
    /* 1 when the backend can run here; else 0 with the reason (no driver, no device). */
    int (*available)(char *why, size_t whylen);
    /* Optional: checks the options that name things of this backend (a CUDA architecture, a
     * CPU), whatever the module's target, so that a misspelling is an error where it is made;
     * *resolved: what its requests then carry (rt_backend_request.resolved). FUSEC_OK, or
     * FUSEC_ERR_INVALID_ARGUMENT with the message. */
    fusec_status (*resolve_options)(const fusec_options *opt, const void **resolved, char *err,
                                    size_t errlen);
    /* Generates the code of the given kind (cuda, ptx, cubin / llvm) for every function
     * into out (text NUL-terminated; cubin binary). Needs no device. */
    fusec_status (*emit)(const rt_backend_request *req, fusec_emit kind, ir_buf *out, char *err,
                         size_t errlen);
    /* Optional: the module's code for a library built ahead of time (fusec --emit=lib): the
     * image's target part and its code (runtime/aot/aot_image.h; its signatures are the
     * caller's) for each of `archs` (CPUs, "x86-64-v3"; GPU architectures, "sm_90"), in that
     * order, built through the cache, everything in the request's arena. */
    fusec_status (*library_image)(const rt_backend_request *req, const char *const *archs,
                                  int narchs, struct rt_image *img, char *err, size_t errlen);
    /* Generates, builds (through the cache) and loads every kernel: *program. */
    fusec_status (*compile)(const rt_backend_request *req, void **program, char *err,
                            size_t errlen);
    /* Runs function `func` of the program. args: one per parameter, then one per result,
     * already checked against the signature (dtypes, ranks, dims); syms: the values of the
     * function's symbolic dims. Asynchronous on `stream` where the backend has streams. */
    fusec_status (*launch)(void *program, int func, const ir_tensor *args, const int64_t *syms,
                           void *stream, char *err, size_t errlen);
    /* Frees the program and everything it loaded. NULL is accepted. */
    void (*destroy)(void *program);
    /* The roofline `fusec bench` compares against: the median time of moving `bytes` bytes
     * as a plain copy (bytes / 2 read from one buffer, written to another) with all of the
     * device's parallelism (every core on the CPU; a device-to-device copy on a GPU), over
     * `reps` runs after a warm-up. device: the module's fusec_options.device (-1: any), which
     * the GPU's measures, the host's ignore. */
    fusec_status (*copy_time)(int device, size_t bytes, int reps, double *median_ms, char *err,
                              size_t errlen);

    /* Tensor memory on the target: device memory on a GPU (of `device`, the module's
     * fusec_options.device, or with -1 the calling thread's current device); on the host
     * targets the rt_host_* functions below. */
    fusec_status (*mem_alloc)(int device, size_t bytes, void **ptr, char *err, size_t errlen);
    fusec_status (*mem_free)(void *ptr, char *err, size_t errlen);
    fusec_status (*mem_copy)(void *dst, const void *src, size_t bytes, int to_device, char *err,
                             size_t errlen);
    fusec_status (*synchronize)(void *stream, char *err, size_t errlen);

    /* Optional (NULL: the API runs a plan as a launch with its arguments bound, and times
     * launches with the wall clock, which is right where a launch returns when done). */
    /* A plan: func's launches for fixed dims and pointers, made once, replayed with one
     * call, re-bound to new pointers for the same dims. */
    fusec_status (*plan_create)(void *program, int func, const ir_tensor *args, const int64_t *syms,
                                void *stream, void **plan, char *err, size_t errlen);
    fusec_status (*plan_launch)(void *plan, void *stream, char *err, size_t errlen);
    fusec_status (*plan_rebind)(void *plan, const ir_tensor *args, char *err, size_t errlen);
    void (*plan_destroy)(void *plan);
    /* Device times of reps launches (of the plan when not NULL), one each, in times_ms. */
    fusec_status (*time_launches)(void *program, void *plan, int func, const ir_tensor *args,
                                  const int64_t *syms, int reps, double *times_ms, char *err,
                                  size_t errlen);
} rt_backend;

/* The backends (driver/cuda/cuda_backend.c, driver/cpu/cpu_backend.c, driver/ref_backend.c:
 * the reference interpreter). */
extern const rt_backend rt_backend_cuda;
extern const rt_backend rt_backend_cpu;
extern const rt_backend rt_backend_ref;

/* The memory fields of the backends that run on the host: runtime/host_memory.h. */

#endif
