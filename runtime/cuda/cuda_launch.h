/* runtime/cuda/cuda_launch.h: running a module's kernels on the GPU through the Driver API: the
 * cubin loaded once, every kernel looked up once, launches on the caller's stream with
 * scratch memory from the stream-ordered pool, plans (CUDA graphs) that are instantiated once
 * and re-bound to new pointers in place, timing by CUDA events, and device memory.
 *
 * Thread safety: a loaded program and its plans may be used from several threads at once,
 * except that a plan must not be re-bound or freed while another thread uses it.
 */
#ifndef FUSEC_RUNTIME_CUDA_LAUNCH_H
#define FUSEC_RUNTIME_CUDA_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/cuda/cuda.h"
#include "fusec.h"
#include "runtime/cuda/cuda_driver.h"
#include "ir/ir.h"

typedef struct rt_cuda_gpu rt_cuda_gpu;
typedef struct rt_cuda_plan rt_cuda_plan;

/* Where a load's time went, in milliseconds: making the primary context current (retaining
 * it, the first time in a process), the memory pool (made the first time), cuModuleLoadData,
 * and looking up the functions. */
typedef struct rt_cuda_load_times {
    double context_ms, pool_ms, module_ms, functions_ms;
} rt_cuda_load_times;

/* The image (a cubin, or NUL-terminated PTX) of a module for device d, which must stay valid
 * until the module is freed; NULL with len 0: a module without kernels. FUSEC_OK, or a status
 * and why (the architecture cannot be built, or the library holds no code the device runs). */
typedef fusec_status (*rt_cuda_image_fn)(void *ctx, const rt_cuda_device *d, const void **image,
                                         size_t *len, char *err, size_t errlen);

/* A module of `mod`'s kernels for every device of the machine, loaded on none yet: each
 * device loads it at its first use there (rt_cuda_gpu_load), with the image `image` gives for
 * that device. mod must outlive it. */
fusec_status rt_cuda_gpu_new(const cuda_module *mod, rt_cuda_image_fn image, void *image_ctx,
                             rt_cuda_gpu **out, char *err, size_t errlen);
/* Loads the module into device dev's primary context (once: later calls return the first
 * one's status) and looks up every function of every variant of every launch; *times (may
 * be NULL) says how long each took, when this call loaded it. */
fusec_status rt_cuda_gpu_load(rt_cuda_gpu *g, int dev, rt_cuda_load_times *times, char *err,
                              size_t errlen);
/* NULL accepted. On each device where kernels of g were launched, the context's work is
 * waited for first (cuCtxSynchronize, which a stream capture in progress forbids). */
void rt_cuda_gpu_free(rt_cuda_gpu *g);

/* Runs function `func` on device dev (loading the module there the first time): args are
 * its parameters then its results (device pointers of dev), syms the values of its symbolic
 * dims. Asynchronous on `stream` (a CUstream of dev; NULL: the legacy default stream). */
fusec_status rt_cuda_gpu_launch(rt_cuda_gpu *g, int dev, int func, const ir_tensor *args,
                                const int64_t *syms, void *stream, char *err, size_t errlen);

/* A graph of function `func`'s kernels for these dims and pointers; its scratch memory is
 * taken from the pool on fusec's own stream and ready when this returns (never on `stream`,
 * which may be capturing: nothing here is recorded by a capture or forbidden in one). */
fusec_status rt_cuda_plan_create(rt_cuda_gpu *g, int dev, int func, const ir_tensor *args,
                                 const int64_t *syms, void *stream, rt_cuda_plan **out, char *err,
                                 size_t errlen);
/* One replay on `stream`. On a capturing stream the replay is recorded by the capture (the
 * plan's graph as a child graph), unordered against the plan's launches outside it. */
fusec_status rt_cuda_plan_launch(rt_cuda_plan *p, void *stream, char *err, size_t errlen);
/* New pointers for the same dims: the instantiated graph's kernel nodes are updated. */
fusec_status rt_cuda_plan_rebind(rt_cuda_plan *p, const ir_tensor *args, char *err, size_t errlen);
/* Frees the plan; its scratch returns to the pool on fusec's own stream, after its last launch
 * outside a capture. Nothing is waited for and the legacy stream is not used, so a stream
 * capture may be in progress. NULL accepted. */
void rt_cuda_plan_free(rt_cuda_plan *p);
/* The device a plan was made for, whose streams alone may run it. */
int rt_cuda_plan_device(const rt_cuda_plan *p);

/* Device time of `reps` launches of func (plan: replays of it; else stream launches), each
 * timed by a pair of events on a stream of fusec's own, after one warm-up: times[reps]. */
fusec_status rt_cuda_time_launches(rt_cuda_gpu *g, int dev, rt_cuda_plan *plan, int func,
                                   const ir_tensor *args, const int64_t *syms, int reps,
                                   double *times_ms, char *err, size_t errlen);

/* The median device time of copying bytes / 2 bytes device to device (cuMemcpyDtoDAsync). */
fusec_status rt_cuda_copy_time(int dev, size_t bytes, int reps, double *median_ms, char *err,
                               size_t errlen);

/* Device memory with cuMemAlloc (not managed) on device dev, and synchronous copies (on the
 * device of the device pointer): an upload has landed when it returns, whatever stream reads
 * it next. */
fusec_status rt_cuda_mem_alloc(int dev, size_t bytes, void **ptr, char *err, size_t errlen);
fusec_status rt_cuda_mem_free(void *ptr, char *err, size_t errlen);
fusec_status rt_cuda_mem_copy(void *dst, const void *src, size_t bytes, int to_device, char *err,
                              size_t errlen);
fusec_status rt_cuda_synchronize(void *stream, char *err, size_t errlen);

#endif
