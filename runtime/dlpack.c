/* runtime/dlpack.c: reading a DLPack DLTensor into a fusec_tensor: its dtype, device, rank and
 * data checked, its strides taken as they are (DLPack's are fusec's: elements, any sign). */
#include "runtime/dlpack.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>

static_assert(sizeof(rt_dl_tensor) == 48 && offsetof(rt_dl_tensor, ndim) == 16 &&
                  offsetof(rt_dl_tensor, dtype) == 20 && offsetof(rt_dl_tensor, shape) == 24 &&
                  offsetof(rt_dl_tensor, byte_offset) == 40,
              "rt_dl_tensor is laid out as dlpack.h's DLTensor");

/* fusec's dtype of a DLPack one (one lane); -1 for one fusec has no type for. */
static int dtype_of(int code, int bits) {
    switch (code) {
    case RT_DL_BOOL: return bits == 8 ? FUSEC_BOOL : -1;
    case RT_DL_INT: return bits == 32 ? FUSEC_I32 : bits == 64 ? FUSEC_I64 : -1;
    case RT_DL_FLOAT:
        return bits == 16 ? FUSEC_F16 : bits == 32 ? FUSEC_F32 : bits == 64 ? FUSEC_F64 : -1;
    case RT_DL_BFLOAT: return bits == 16 ? FUSEC_BF16 : -1;
    default: return -1;
    }
}

/* "uint8", "complex64", "float32 x4 lanes": a DLPack dtype as a message names it. */
static void dtype_name(const rt_dl_tensor *dl, char *buf, size_t len) {
    static const char *const kinds[] = {"int", "uint", "float", NULL, "bfloat", "complex", "bool"};
    int code = dl->dtype.code;
    const char *kind = code < 7 ? kinds[code] : NULL;
    int n = kind ? snprintf(buf, len, "%s%d", kind, dl->dtype.bits)
                 : snprintf(buf, len, "type code %d, %d bits", code, dl->dtype.bits);
    if (dl->dtype.lanes != 1 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " x%d lanes", dl->dtype.lanes);
}

/* The host targets take host memory; CUDA the memory of any device (the launch runs on the
 * device of its tensors: runtime/cuda/cuda_device.h). */
static int device_ok(int type, int id, int on_host) {
    if (on_host) return type == RT_DL_CPU || type == RT_DL_CUDA_HOST;
    return (type == RT_DL_CUDA || type == RT_DL_CUDA_MANAGED) && id >= 0 && id < RT_DL_MAX_DEVICES;
}

/* out->data: the element (0, ..., 0) at data + byte_offset, added as integers: an offset that
 * wraps around the address space (a byte_offset of 2^64 - 4 is data - 4) would read before
 * the array, and is refused before any pointer is made of it. fusec_launch checks the rest:
 * the element there and aligned, and every other one, through the strides, in memory too. */
static fusec_status element_zero(const rt_dl_tensor *dl, fusec_tensor *out, char *why,
                                 size_t whylen) {
    uintptr_t at = (uintptr_t)dl->data;
    out->data = NULL;
    if (!dl->data) return FUSEC_OK;
    if (dl->byte_offset > UINTPTR_MAX - at) {
        snprintf(why, whylen,
                 "byte_offset %llu from data at %p wraps around the address space (to "
                 "before the array: DLPack's offsets are not negative)",
                 (unsigned long long)dl->byte_offset, dl->data);
        return FUSEC_ERR_INVALID_ARGUMENT;
    }
    out->data = (void *)(at + (uintptr_t)dl->byte_offset);
    return FUSEC_OK;
}

fusec_status rt_dlpack_read(const rt_dl_tensor *dl, int on_host, fusec_tensor *out, char *why,
                            size_t whylen) {
    if (!dl) {
        snprintf(why, whylen, "no DLTensor (NULL)");
        return FUSEC_ERR_INVALID_ARGUMENT;
    }
    int dt = dl->dtype.lanes == 1 ? dtype_of(dl->dtype.code, dl->dtype.bits) : -1;
    if (dt < 0) {
        char name[64];
        dtype_name(dl, name, sizeof name);
        snprintf(why, whylen,
                 "dtype %s is not one fusec takes (bool, int32, int64, float16, "
                 "bfloat16, float32, float64)",
                 name);
        return FUSEC_ERR_DTYPE;
    }
    if (!device_ok(dl->device.device_type, dl->device.device_id, on_host)) {
        char reach[48];
        snprintf(reach, sizeof reach, "CUDA devices 0 to %d", RT_DL_MAX_DEVICES - 1);
        snprintf(why, whylen,
                 "the tensor is on DLPack device type %d, id %d, which the target "
                 "cannot reach: it runs on %s",
                 dl->device.device_type, dl->device.device_id, on_host ? "host memory" : reach);
        return FUSEC_ERR_INVALID_ARGUMENT;
    }
    if (dl->ndim < 0 || dl->ndim > FUSEC_MAX_RANK || (dl->ndim > 0 && !dl->shape)) {
        snprintf(why, whylen, "rank %d %sis not one fusec takes (0 to %d, with a shape)",
                 (int)dl->ndim, dl->ndim > 0 && !dl->shape ? "without a shape " : "",
                 FUSEC_MAX_RANK);
        return FUSEC_ERR_INVALID_ARGUMENT;
    }
    out->dtype = (fusec_dtype)dt;
    out->rank = dl->ndim;
    for (int d = 0; d < dl->ndim; d++)
        out->shape[d] = dl->shape[d];
    out->strides = dl->strides;
    return element_zero(dl, out, why, whylen);
}
