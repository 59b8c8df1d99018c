/* runtime/cuda_driver.h: the CUDA driver (libcuda.so.1), loaded with dlopen on first use so
 * fusec runs where there is none: whether a device is present, and what it is. Loading
 * modules and launching kernels join this file with the launcher.
 *
 * Thread safety: every function may be called from any thread; probing happens once.
 */
#ifndef FUSEC_RUNTIME_CUDA_DRIVER_H
#define FUSEC_RUNTIME_CUDA_DRIVER_H

#include <stddef.h>

typedef struct rt_cuda_device {
    int count;        /* devices the driver reports */
    int major, minor; /* compute capability of device 0 */
    int sm_count;     /* its multiprocessors */
} rt_cuda_device;

/* 1 and *d filled (may be NULL) when libcuda.so.1 loads, initializes and reports at least
 * one device; else 0 with the reason in why (may be NULL). */
int rt_cuda_probe(rt_cuda_device *d, char *why, size_t whylen);

#endif
