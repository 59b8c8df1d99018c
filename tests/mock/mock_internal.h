/* tests/mock/mock_internal.h: what the two halves of the stand-in driver share: cuda_mock.c
 * (devices, modules, memory, launches, graphs) and mock_streams.c (streams, events, copies from
 * the host, synchronization and stream capture: the order in which work would happen on a real
 * device, which the emulator, running every kernel at once, cannot show by itself). */
#ifndef FUSEC_TESTS_MOCK_INTERNAL_H
#define FUSEC_TESTS_MOCK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/cuda/cuda_api.h"
#include "tests/mock/cuda_mock.h"

#define MOCK_API __attribute__((visibility("default")))
#define OK       return RT_CU_SUCCESS
/* the counters, from any thread (a driver is thread-safe) */
#define COUNT(c, d) __atomic_add_fetch(&(c), (d), __ATOMIC_RELAXED)

/* The driver's error codes the stand-in returns (CUresult). */
enum {
    MOCK_INVALID_VALUE = 1,
    MOCK_OUT_OF_MEMORY = 2,
    MOCK_INVALID_DEVICE = 101,
    MOCK_INVALID_IMAGE = 200,
    MOCK_INVALID_CONTEXT = 201,
    MOCK_NO_BINARY_FOR_GPU = 209,
    MOCK_INVALID_HANDLE = 400,
    MOCK_NOT_FOUND = 500,
    MOCK_ILLEGAL_ADDRESS = 700,
    MOCK_LAUNCH_FAILED = 719,
    MOCK_CAPTURE_UNSUPPORTED = 900,
    MOCK_CAPTURE_INVALIDATED = 901,
    MOCK_CAPTURE_UNMATCHED = 903,
    MOCK_CAPTURE_UNJOINED = 904,
    MOCK_CAPTURE_ISOLATION = 905,
    MOCK_CAPTURE_IMPLICIT = 906,
    MOCK_CAPTURED_EVENT = 907,
    MOCK_CAPTURE_WRONG_THREAD = 908,
};

enum { MOCK_MAX_ARGS = 64, MOCK_MAX_NODES = 4096 };
/* MOCK_MAX_DEVICES: in tests/mock/cuda_mock.h (the stats count launches by device) */

extern mock_stats mock_st;

/* One unit of device work: a kernel (params, and the argument values copied as a driver copies
 * them) or a device-to-device copy (args: destination, source, bytes). */
enum { MOCK_NODE_KERNEL, MOCK_NODE_COPY };
typedef struct mock_node {
    int kind;
    rt_cu_kernel_node_params p;
    uint64_t args[MOCK_MAX_ARGS];
} mock_node;

/* Memory a captured graph allocated (cuMemAllocFromPoolAsync in a capture): it lives as long as
 * the graph and every executable graph made from it. */
typedef struct mock_gmem {
    int refs;
    int n, cap;
    void **ptrs;
} mock_gmem;

typedef struct mock_graph {
    int nnodes;
    mock_gmem *mem; /* NULL: it allocates nothing */
    mock_node nodes[MOCK_MAX_NODES];
} mock_graph;

void mock_gmem_release(mock_gmem *m); /* NULL accepted */

/* The module a function of it belongs to (an opaque key for queued work); the device that
 * module was loaded on (-1: a module that only records, whose functions any module shares);
 * the function's argument count (0 for one that only records). */
const void *mock_function_module(rt_cu_function f);
int mock_function_device(rt_cu_function f);
int mock_function_nargs(rt_cu_function f);

/* ---- devices (mock_devices.c) -------------------------------------------------------------- */

int mock_ndevices(void);
int mock_device_cc(int d);            /* as XY: 90 */
int mock_current_device(void);        /* the device of this thread's current context; -1: none */
int mock_ctx_device(rt_cu_context c); /* -1: no context of the mock's */
rt_cu_context mock_ctx_handle(int d);
/* Device memory, host memory here: each allocation's device, until it is freed. */
void mock_mem_add(const void *p, size_t n, int device);
void mock_mem_remove(const void *p);
int mock_mem_device(uint64_t addr); /* -1: no allocation holds addr */
/* Whether work of node n may run on device `device`: its kernel of a module loaded there, and
 * every argument that points into device memory pointing into that device's; else the error
 * a driver gives (an invalid handle, an illegal address), said on stderr. */
rt_cu_result mock_check_node(const mock_node *n, int device);

/* Runs one node now (a kernel through the emulator, or its copy); the driver's error. */
rt_cu_result mock_run_node(const mock_node *n);

/* ---- streams (mock_streams.c) -------------------------------------------------------------- */

typedef struct mock_stream mock_stream;

/* The device of stream s (the legacy stream: the current context's; -1: none current). */
int mock_stream_device(const mock_stream *s);

/* The stream a handle names (NULL: the legacy stream); stops the test, naming the call, at a
 * destroyed one (a real driver's undefined behaviour). */
mock_stream *mock_stream_of(rt_cu_stream s, const char *call);

/* Work issued on s: on a capturing stream, the nodes are added to its capture's graph
 * (*captured set); else the copies s is ordered after land first and the caller runs the work.
 * The driver's error where s may not take work now (the legacy stream while a blocking stream
 * captures; a capture already invalidated). */
rt_cu_result mock_issue(mock_stream *s, const mock_node *nodes, int n, int *captured);

/* After work of these nodes ran on s (not captured): queued until a host synchronization that
 * covers it. */
void mock_queued(mock_stream *s, const mock_node *nodes, int n);

/* A call a stream capture may not record (cuGraphLaunch): on a capturing stream
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the capture invalidated, as a real driver does;
 * else 0. */
rt_cu_result mock_not_capturable(mock_stream *s);

/* cuMemAllocFromPoolAsync / cuMemFreeAsync on a capturing stream: the graph's memory (*captured
 * set), or the capture's error; on another stream *captured stays 0. */
rt_cu_result mock_capture_alloc(mock_stream *s, size_t n, void **out, int *captured);
rt_cu_result mock_capture_free(mock_stream *s, void *p, int *captured);

/* A potentially unsafe call (cuThreadExchangeStreamCaptureMode): 0 where this thread may make
 * it now, else CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED with the captures that forbid it
 * invalidated. */
rt_cu_result mock_unsafe(const char *call);

/* A module goes: its queued kernels are counted (mock_stats.unloads_queued) and forgotten. */
void mock_module_unloading(const void *module);

#endif
