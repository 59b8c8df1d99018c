/* runtime/cuda/cuda_driver.h: the CUDA driver (libcuda.so.1), loaded with dlopen on first use so
 * fusec runs where there is none: whether a device is present, what it is, and the table of
 * driver entry points (runtime/cuda/cuda_api.h) the launcher calls.
 *
 * $FUSEC_CUDA_DRIVER, when set, is the path of the library loaded instead of libcuda.so.1; a
 * failure to load it is an error that names it, never "no CUDA driver" (which tests read as
 * "no GPU here: skip").
 * fusec runs on any device the driver shows (CUDA_VISIBLE_DEVICES chooses which), each in its
 * primary context: the one the CUDA runtime and most libraries share. A device's context,
 * memory pool and stream are made at its first use only (a primary context takes memory on
 * its GPU, and each process of `torchrun` must touch only its own).
 *
 * Thread safety: every function may be called from any thread; probing happens once.
 */
#ifndef FUSEC_RUNTIME_CUDA_DRIVER_H
#define FUSEC_RUNTIME_CUDA_DRIVER_H

#include <stddef.h>

#include "runtime/cuda/cuda_api.h"

/* The most devices fusec runs on in one process (their ordinals from 0). */
#define RT_CUDA_MAX_DEVICES 64

typedef struct rt_cuda_device {
    int count;        /* devices the driver reports */
    int ordinal;      /* which one this is */
    int major, minor; /* its compute capability */
    int sm_count;     /* its multiprocessors */
    int max_threads;  /* per block */
    int driver_version;
    rt_cu_device handle;
    char name[128];
} rt_cuda_device;

/* 1 and *d filled (may be NULL) when libcuda.so.1 loads, initializes and reports at least
 * one device; else 0 with the reason in why (may be NULL): the library tried and dlerror's
 * text when it did not load. */
int rt_cuda_probe(rt_cuda_device *d, char *why, size_t whylen);

/* How long the probe's steps took, in milliseconds (0 for a step it did not reach): loading
 * the library, cuInit, and finding and describing device 0. A process pays them once;
 * fusec -v reports them (the start of a process that runs a cached program). */
typedef struct rt_cuda_startup {
    char library[256]; /* what was loaded: libcuda.so.1 or $FUSEC_CUDA_DRIVER */
    double dlopen_ms, init_ms, describe_ms;
} rt_cuda_startup;
void rt_cuda_startup_times(rt_cuda_startup *t);

/* The CUDA version of the driver fusec loads (cuDriverGetVersion: 12080 for 12.8), without
 * initializing it (no cuInit: cheap where only a compiler is wanted); 0 when there is none. */
int rt_cuda_driver_version(void);

/* The driver's entry points; NULL unless rt_cuda_probe succeeds. */
const rt_cu_api *rt_cuda_api(void);

/* Device dev's description (made once; describing makes no context). 0, or -1 with why (no
 * driver, no such device). */
int rt_cuda_device_info(int dev, rt_cuda_device *d, char *err, size_t errlen);

/* Makes device dev's primary context current on this thread when it is not (retained once
 * for the process, never released: the CUDA runtime's own rule). *pushed says whether
 * rt_cuda_leave must pop it. 0, or -1 with the driver's message in err. */
int rt_cuda_enter(int dev, int *pushed, char *err, size_t errlen);
void rt_cuda_leave(int pushed);

/* The calling thread's current device, as the CUDA runtime's cudaGetDevice gives it: the
 * device of the current context, 0 when none is current (or no driver). */
int rt_cuda_current_device(void);

/* The device a CUstream belongs to (NULL and the legacy and per-thread handles: the current
 * device); -1 with why when its context is no device's primary context, or the driver fails. */
int rt_cuda_stream_device(void *stream, char *err, size_t errlen);

/* The device whose memory ptr points into (cuPointerGetAttribute); -1 when the driver does not
 * know the pointer as device memory (host memory, a foreign allocator's) or fails. */
int rt_cuda_pointer_device(const void *ptr);

/* fusec's stream-ordered memory pool on device dev, made once (between rt_cuda_enter and
 * rt_cuda_leave of that device): scratch memory between kernels comes from it. It keeps what
 * it was given (release threshold: all), so allocations after the first are sub-allocations.
 * NULL with a message when the device has no memory pools. */
rt_cu_mempool rt_cuda_pool(int dev, char *err, size_t errlen);

/* fusec's own stream on device dev (non-blocking), made once (between rt_cuda_enter and
 * rt_cuda_leave of that device; first at a module's load there, outside any capture): for work
 * that must go on no stream of a caller's, which may be capturing or gone: a plan's scratch,
 * taken and given back. NULL with the driver's message when it cannot be made. */
rt_cu_stream rt_cuda_own_stream(int dev, char *err, size_t errlen);

/* Sets the calling thread's stream-capture mode to relaxed and returns the mode it had, for
 * rt_cuda_mode_restore: around calls fusec makes outside any capture on purpose (its own
 * stream, its own graphs) that a capture in global mode would otherwise forbid, as a garbage
 * collector's plan free during torch.cuda.graph makes them. */
int rt_cuda_mode_relaxed(void);
void rt_cuda_mode_restore(int mode);

/* "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (invalid argument)" into buf; returns buf. */
const char *rt_cuda_error(rt_cu_result r, const char *call, char *buf, size_t len);

#endif
