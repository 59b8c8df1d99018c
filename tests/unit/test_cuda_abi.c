/* tests/unit/test_cuda_abi.c: runtime/cuda/cuda_api.h against the toolkit's cuda.h: every
 * struct's layout, every constant, and every entry point's symbol (the name cuda.h maps the
 * plain name to, so a versioned _v2 is never missed). The launcher cannot be run without a
 * GPU; this is what keeps its declarations honest on every machine with the toolkit. */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifndef FUSEC_HAVE_CUDA_H
int main(void) {
    printf("the toolkit's cuda.h was not found: skipping\n");
    return 77;
}
#else
#include <cuda.h>

#include "check.h"
#include "runtime/cuda/cuda_api.h"

#define SAME_LAYOUT(ours, theirs, of, tf)                                                          \
    static_assert(offsetof(ours, of) == offsetof(theirs, tf) &&                                    \
                      sizeof(((ours *)0)->of) == sizeof(((theirs *)0)->tf),                        \
                  #ours "." #of " is not " #theirs "." #tf)

static_assert(sizeof(rt_cu_result) == sizeof(CUresult), "CUresult");
static_assert(sizeof(rt_cu_device) == sizeof(CUdevice), "CUdevice");
static_assert(sizeof(rt_cu_deviceptr) == sizeof(CUdeviceptr), "CUdeviceptr");
static_assert(sizeof(rt_cu_stream) == sizeof(CUstream), "CUstream");

static_assert(sizeof(rt_cu_kernel_node_params) == sizeof(CUDA_KERNEL_NODE_PARAMS_v2),
              "CUDA_KERNEL_NODE_PARAMS_v2");
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, func, func);
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, grid_x, gridDimX);
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, grid_y, gridDimY);
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, grid_z, gridDimZ);
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, block_x, blockDimX);
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, block_y, blockDimY);
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, block_z, blockDimZ);
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, shared_mem_bytes, sharedMemBytes);
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, kernel_params, kernelParams);
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, extra, extra);
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, kern, kern);
SAME_LAYOUT(rt_cu_kernel_node_params, CUDA_KERNEL_NODE_PARAMS_v2, ctx, ctx);
/* the plain name is the _v2 layout, the one cuGraphAddKernelNode_v2 takes */
static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS) == sizeof(CUDA_KERNEL_NODE_PARAMS_v2), "v2");

static_assert(sizeof(rt_cu_mem_location) == sizeof(CUmemLocation), "CUmemLocation");
SAME_LAYOUT(rt_cu_mem_location, CUmemLocation, type, type);
SAME_LAYOUT(rt_cu_mem_location, CUmemLocation, id, id);
static_assert(sizeof(rt_cu_mempool_props) == sizeof(CUmemPoolProps), "CUmemPoolProps");
SAME_LAYOUT(rt_cu_mempool_props, CUmemPoolProps, alloc_type, allocType);
SAME_LAYOUT(rt_cu_mempool_props, CUmemPoolProps, handle_types, handleTypes);
SAME_LAYOUT(rt_cu_mempool_props, CUmemPoolProps, location, location);
SAME_LAYOUT(rt_cu_mempool_props, CUmemPoolProps, win32_security_attributes,
            win32SecurityAttributes);
SAME_LAYOUT(rt_cu_mempool_props, CUmemPoolProps, max_size, maxSize);
SAME_LAYOUT(rt_cu_mempool_props, CUmemPoolProps, usage, usage);
SAME_LAYOUT(rt_cu_mempool_props, CUmemPoolProps, reserved, reserved);

/* the values, as ints: the enums are different types */
#define SAME_VALUE(ours, theirs)                       static_assert((int)(ours) == (int)(theirs), #ours)
SAME_VALUE(RT_CU_SUCCESS, CUDA_SUCCESS);
SAME_VALUE(RT_CU_ERROR_NOT_READY, CUDA_ERROR_NOT_READY);
SAME_VALUE(RT_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
SAME_VALUE(RT_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME_VALUE(RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
           CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME_VALUE(RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
           CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME_VALUE(RT_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
           CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
SAME_VALUE(RT_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
SAME_VALUE(RT_CU_EVENT_DEFAULT, CU_EVENT_DEFAULT);
SAME_VALUE(RT_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING);
SAME_VALUE(RT_CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED);
SAME_VALUE(RT_CU_MEM_HANDLE_TYPE_NONE, CU_MEM_HANDLE_TYPE_NONE);
SAME_VALUE(RT_CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE);
SAME_VALUE(RT_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD);
SAME_VALUE(RT_CU_STREAM_CAPTURE_STATUS_NONE, CU_STREAM_CAPTURE_STATUS_NONE);
SAME_VALUE(RT_CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_RELAXED);
SAME_VALUE(RT_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
static_assert(sizeof(CUpointer_attribute) == sizeof(int), "CUpointer_attribute");
/* the enums the capture calls take through an int pointer are ints */
static_assert(sizeof(CUstreamCaptureStatus) == sizeof(int), "CUstreamCaptureStatus");
static_assert(sizeof(CUstreamCaptureMode) == sizeof(int), "CUstreamCaptureMode");

/* "cuMemAlloc" expands to "cuMemAlloc_v2" through cuda.h's macros */
#define EXPANDED(x)                                    #x
#define SYMBOL_OF(x)                                   EXPANDED(x)

int main(void) {
    /* each entry point: the symbol loaded is the one cuda.h calls by the plain name */
#define CHECK_SYMBOL(member, symbol, fallback, params) CHECK_STR(symbol, SYMBOL_OF(cu##member));
    RT_CU_FUNCTIONS(CHECK_SYMBOL)
#undef CHECK_SYMBOL
    return check_exit("test_cuda_abi");
}
#endif
