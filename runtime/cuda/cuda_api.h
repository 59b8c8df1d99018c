/* runtime/cuda/cuda_api.h: the part of the CUDA Driver API fusec uses, declared here (types,
 * constants, and every entry point as a function pointer of a table) so that no build needs
 * the toolkit and no binary links libcuda: runtime/cuda/cuda_driver.c fills the table from
 * libcuda.so.1 with dlopen. tests/unit/test_cuda_abi.c checks every type, constant and
 * prototype against the toolkit's cuda.h wherever one is installed (CI has one).
 *
 * Names are the driver's without the `cu` prefix (cu->LaunchKernel). Versioned entry points
 * are loaded under the name cuda.h maps the plain one to (cuMemAlloc is cuMemAlloc_v2). */
#ifndef FUSEC_RUNTIME_CUDA_API_H
#define FUSEC_RUNTIME_CUDA_API_H

#include <stddef.h>

typedef int rt_cu_result; /* CUresult: 0 is CUDA_SUCCESS */
typedef int rt_cu_device;
typedef unsigned long long rt_cu_deviceptr;
typedef struct rt_cu_ctx_st *rt_cu_context;
typedef struct rt_cu_mod_st *rt_cu_module;
typedef struct rt_cu_func_st *rt_cu_function;
typedef struct rt_cu_stream_st *rt_cu_stream;
typedef struct rt_cu_event_st *rt_cu_event;
typedef struct rt_cu_graph_st *rt_cu_graph;
typedef struct rt_cu_graph_exec_st *rt_cu_graph_exec;
typedef struct rt_cu_graph_node_st *rt_cu_graph_node;
typedef struct rt_cu_mempool_st *rt_cu_mempool;
typedef struct rt_cu_kernel_st *rt_cu_kernel;

enum {
    RT_CU_SUCCESS = 0,
    RT_CU_ERROR_NOT_READY = 600,
    RT_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    RT_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    RT_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
    RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    RT_CU_DEFAULT_SHARED_BYTES = 48 * 1024, /* dynamic shared memory a block without opting in */
    RT_CU_STREAM_NON_BLOCKING = 1,
    RT_CU_EVENT_DEFAULT = 0,
    RT_CU_EVENT_DISABLE_TIMING = 2,
    RT_CU_MEM_ALLOCATION_TYPE_PINNED = 1,
    RT_CU_MEM_HANDLE_TYPE_NONE = 0,
    RT_CU_MEM_LOCATION_TYPE_DEVICE = 1,
    RT_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
    RT_CU_STREAM_CAPTURE_STATUS_NONE = 0,
    RT_CU_STREAM_CAPTURE_MODE_RELAXED = 2,
    RT_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
};

/* CUDA_KERNEL_NODE_PARAMS (the _v2 layout, which cuGraphAddKernelNode_v2 takes). */
typedef struct rt_cu_kernel_node_params {
    rt_cu_function func;
    unsigned grid_x, grid_y, grid_z;
    unsigned block_x, block_y, block_z;
    unsigned shared_mem_bytes;
    void **kernel_params;
    void **extra;
    rt_cu_kernel kern; /* NULL: func is used */
    rt_cu_context ctx; /* ignored when func is set */
} rt_cu_kernel_node_params;

/* CUmemLocation and CUmemPoolProps. */
typedef struct rt_cu_mem_location {
    int type;
    int id;
} rt_cu_mem_location;

typedef struct rt_cu_mempool_props {
    int alloc_type;
    int handle_types;
    rt_cu_mem_location location;
    void *win32_security_attributes;
    size_t max_size;
    unsigned short usage;
    unsigned char reserved[54];
} rt_cu_mempool_props;

/* X(member, symbol, fallback symbol or NULL, parameters): every entry point used. */
#define RT_CU_FUNCTIONS(X)                                                                         \
    X(Init, "cuInit", NULL, (unsigned flags))                                                      \
    X(DriverGetVersion, "cuDriverGetVersion", NULL, (int *version))                                \
    X(GetErrorString, "cuGetErrorString", NULL, (rt_cu_result error, const char **str))            \
    X(GetErrorName, "cuGetErrorName", NULL, (rt_cu_result error, const char **str))                \
    X(DeviceGetCount, "cuDeviceGetCount", NULL, (int *count))                                      \
    X(DeviceGet, "cuDeviceGet", NULL, (rt_cu_device * device, int ordinal))                        \
    X(DeviceGetAttribute, "cuDeviceGetAttribute", NULL,                                            \
      (int *value, int attribute, rt_cu_device device))                                            \
    X(DeviceGetName, "cuDeviceGetName", NULL, (char *name, int len, rt_cu_device device))          \
    X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL,                                    \
      (rt_cu_context * ctx, rt_cu_device device))                                                  \
    X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", NULL, (rt_cu_device device))        \
    X(CtxGetCurrent, "cuCtxGetCurrent", NULL, (rt_cu_context * ctx))                               \
    X(CtxPushCurrent, "cuCtxPushCurrent_v2", NULL, (rt_cu_context ctx))                            \
    X(CtxPopCurrent, "cuCtxPopCurrent_v2", NULL, (rt_cu_context * ctx))                            \
    X(CtxSynchronize, "cuCtxSynchronize", NULL, (void))                                            \
    X(CtxGetDevice, "cuCtxGetDevice", NULL, (rt_cu_device * device))                               \
    X(StreamGetCtx, "cuStreamGetCtx", NULL, (rt_cu_stream stream, rt_cu_context * ctx))            \
    X(PointerGetAttribute, "cuPointerGetAttribute", NULL,                                          \
      (void *data, int attribute, rt_cu_deviceptr ptr))                                            \
    X(ModuleLoadData, "cuModuleLoadData", NULL, (rt_cu_module * module, const void *image))        \
    X(ModuleUnload, "cuModuleUnload", NULL, (rt_cu_module module))                                 \
    X(ModuleGetFunction, "cuModuleGetFunction", NULL,                                              \
      (rt_cu_function * func, rt_cu_module module, const char *name))                              \
    X(FuncSetAttribute, "cuFuncSetAttribute", NULL,                                                \
      (rt_cu_function func, int attribute, int value))                                             \
    X(LaunchKernel, "cuLaunchKernel", NULL,                                                        \
      (rt_cu_function f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,      \
       unsigned block_y, unsigned block_z, unsigned shared_mem_bytes, rt_cu_stream stream,         \
       void **kernel_params, void **extra))                                                        \
    X(MemAlloc, "cuMemAlloc_v2", NULL, (rt_cu_deviceptr * ptr, size_t bytes))                      \
    X(MemFree, "cuMemFree_v2", NULL, (rt_cu_deviceptr ptr))                                        \
    X(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL, (rt_cu_deviceptr dst, const void *src, size_t bytes))   \
    X(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL, (void *dst, rt_cu_deviceptr src, size_t bytes))         \
    X(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL,                                               \
      (rt_cu_deviceptr dst, rt_cu_deviceptr src, size_t bytes, rt_cu_stream stream))               \
    X(MemPoolCreate, "cuMemPoolCreate", NULL,                                                      \
      (rt_cu_mempool * pool, const rt_cu_mempool_props *props))                                    \
    X(MemPoolDestroy, "cuMemPoolDestroy", NULL, (rt_cu_mempool pool))                              \
    X(MemPoolSetAttribute, "cuMemPoolSetAttribute", NULL,                                          \
      (rt_cu_mempool pool, int attribute, void *value))                                            \
    X(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", NULL,                                      \
      (rt_cu_deviceptr * ptr, size_t bytes, rt_cu_mempool pool, rt_cu_stream stream))              \
    X(MemFreeAsync, "cuMemFreeAsync", NULL, (rt_cu_deviceptr ptr, rt_cu_stream stream))            \
    X(StreamCreate, "cuStreamCreate", NULL, (rt_cu_stream * stream, unsigned flags))               \
    X(StreamDestroy, "cuStreamDestroy_v2", NULL, (rt_cu_stream stream))                            \
    X(StreamSynchronize, "cuStreamSynchronize", NULL, (rt_cu_stream stream))                       \
    X(StreamIsCapturing, "cuStreamIsCapturing", NULL, (rt_cu_stream stream, int *status))          \
    X(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", NULL, (int *mode))     \
    X(StreamWaitEvent, "cuStreamWaitEvent", NULL,                                                  \
      (rt_cu_stream stream, rt_cu_event event, unsigned flags))                                    \
    X(EventCreate, "cuEventCreate", NULL, (rt_cu_event * event, unsigned flags))                   \
    X(EventDestroy, "cuEventDestroy_v2", NULL, (rt_cu_event event))                                \
    X(EventRecord, "cuEventRecord", NULL, (rt_cu_event event, rt_cu_stream stream))                \
    X(EventSynchronize, "cuEventSynchronize", NULL, (rt_cu_event event))                           \
    X(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime",                             \
      (float *ms, rt_cu_event start, rt_cu_event end))                                             \
    X(GraphCreate, "cuGraphCreate", NULL, (rt_cu_graph * graph, unsigned flags))                   \
    X(GraphDestroy, "cuGraphDestroy", NULL, (rt_cu_graph graph))                                   \
    X(GraphAddKernelNode, "cuGraphAddKernelNode_v2", NULL,                                         \
      (rt_cu_graph_node * node, rt_cu_graph graph, const rt_cu_graph_node *deps, size_t ndeps,     \
       const rt_cu_kernel_node_params *params))                                                    \
    X(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", NULL,                              \
      (rt_cu_graph_exec * exec, rt_cu_graph graph, unsigned long long flags))                      \
    X(GraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2", NULL,                     \
      (rt_cu_graph_exec exec, rt_cu_graph_node node, const rt_cu_kernel_node_params *params))      \
    X(GraphLaunch, "cuGraphLaunch", NULL, (rt_cu_graph_exec exec, rt_cu_stream stream))            \
    X(GraphExecDestroy, "cuGraphExecDestroy", NULL, (rt_cu_graph_exec exec))

#define RT_CU_MEMBER(member, symbol, fallback, params) rt_cu_result(*member) params;
typedef struct rt_cu_api {
    RT_CU_FUNCTIONS(RT_CU_MEMBER)
} rt_cu_api;
#undef RT_CU_MEMBER

#endif
