/* runtime/dlpack.h: DLPack's DLTensor as the library reads it (fusec_launch_dlpack), and its
 * reading into a fusec_tensor. */
#ifndef FUSEC_RUNTIME_DLPACK_H
#define FUSEC_RUNTIME_DLPACK_H

#include <stddef.h>
#include <stdint.h>

#include "fusec.h"

/* dlpack.h's DLTensor (https://dmlc.github.io/dlpack/latest/c_api.html), field for field.
 * Its layout has not changed since DLPack 0.1 and is frozen by the 1.0 ABI; it is written out
 * here rather than taken from a package because Debian 12's libdlpack-dev (0.6) predates
 * kDLBool, and the library needs this one struct only. */
typedef struct rt_dl_tensor {
    void *data;
    struct {
        int32_t device_type;
        int32_t device_id;
    } device;
    int32_t ndim;
    struct {
        uint8_t code;
        uint8_t bits;
        uint16_t lanes;
    } dtype;
    const int64_t *shape;
    const int64_t *strides; /* NULL: dense row-major */
    uint64_t byte_offset;
} rt_dl_tensor;

/* DLDeviceType and DLDataTypeCode values fusec reads */
enum {
    RT_DL_CPU = 1,
    RT_DL_CUDA = 2,
    RT_DL_CUDA_HOST = 3,
    RT_DL_CUDA_MANAGED = 13,
};
/* the CUDA device ids a DLTensor may name (runtime/cuda/cuda_driver.h's RT_CUDA_MAX_DEVICES) */
#define RT_DL_MAX_DEVICES 64
enum {
    RT_DL_INT = 0,
    RT_DL_UINT = 1,
    RT_DL_FLOAT = 2,
    RT_DL_BFLOAT = 4,
    RT_DL_COMPLEX = 5,
    RT_DL_BOOL = 6,
};

/* Reads dl into *out (strides point into dl's own). on_host: the memory the target reaches
 * is the host's (kDLCPU, kDLCUDAHost), else CUDA device 0's (kDLCUDA, kDLCUDAManaged).
 * FUSEC_OK, or FUSEC_ERR_DTYPE / FUSEC_ERR_INVALID_ARGUMENT with the reason in why. */
fusec_status rt_dlpack_read(const rt_dl_tensor *dl, int on_host, fusec_tensor *out, char *why,
                            size_t whylen);

#endif
