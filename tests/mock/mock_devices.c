/* tests/mock/mock_devices.c: the stand-in driver's devices (FUSEC_MOCK_DEVICES of them, 1 by
 * default): each with its primary context, its compute capability (FUSEC_MOCK_CC: "90", or one
 * a device, "90,80"), and its memory, so that tests without a GPU see fusec run on the device it
 * should: a kernel launched in one device's context with memory of another, on a stream or with
 * a function of another, fails as a real driver fails it (an illegal address, an invalid
 * handle), and cuPointerGetAttribute names the device of any allocation. Memory is host memory
 * here, so only this bookkeeping keeps the devices apart. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mock/mock_internal.h"

/* a thread's stack of current contexts (a driver's is the thread's): device ordinals */
static _Thread_local int ctx_stack[32];
static _Thread_local int ctx_depth;

/* the contexts' handles: never dereferenced */
static struct rt_cu_ctx_st *ctx_handle(int d) {
    return (struct rt_cu_ctx_st *)(uintptr_t)(0x1000 + 0x100 * d);
}

rt_cu_context mock_ctx_handle(int d) {
    return ctx_handle(d);
}

int mock_ndevices(void) {
    const char *e = getenv("FUSEC_MOCK_DEVICES");
    int n = e && atoi(e) > 0 ? atoi(e) : 1;
    return n < MOCK_MAX_DEVICES ? n : MOCK_MAX_DEVICES;
}

int mock_device_cc(int d) {
    const char *e = getenv("FUSEC_MOCK_CC");
    int cc = 90;
    for (int i = 0; e && *e && i <= d; i++) {
        if (atoi(e) >= 10) cc = atoi(e);
        const char *comma = strchr(e, ',');
        e = comma ? comma + 1 : NULL;
    }
    return cc;
}

int mock_current_device(void) {
    return ctx_depth ? ctx_stack[ctx_depth - 1] : -1;
}

int mock_ctx_device(rt_cu_context c) {
    for (int d = 0; d < mock_ndevices(); d++)
        if (c == ctx_handle(d)) return d;
    return -1;
}

MOCK_API rt_cu_result cuDevicePrimaryCtxRetain(rt_cu_context *c, rt_cu_device d) {
    if (d < 0 || d >= mock_ndevices()) return MOCK_INVALID_DEVICE;
    *c = ctx_handle(d);
    OK;
}
MOCK_API rt_cu_result cuDevicePrimaryCtxRelease_v2(rt_cu_device d) {
    (void)d;
    OK;
}
MOCK_API rt_cu_result cuCtxGetCurrent(rt_cu_context *c) {
    *c = ctx_depth ? ctx_handle(ctx_stack[ctx_depth - 1]) : NULL;
    OK;
}
MOCK_API rt_cu_result cuCtxPushCurrent_v2(rt_cu_context c) {
    int d = mock_ctx_device(c);
    if (d < 0 || ctx_depth == 32) return MOCK_INVALID_CONTEXT;
    ctx_stack[ctx_depth++] = d;
    COUNT(mock_st.pushes, 1);
    OK;
}
MOCK_API rt_cu_result cuCtxPopCurrent_v2(rt_cu_context *c) {
    if (!ctx_depth) return MOCK_INVALID_CONTEXT;
    if (c) *c = ctx_handle(ctx_stack[ctx_depth - 1]);
    ctx_depth--;
    COUNT(mock_st.pops, 1);
    OK;
}
MOCK_API rt_cu_result cuCtxGetDevice(rt_cu_device *d) {
    if (!ctx_depth) return MOCK_INVALID_CONTEXT;
    *d = ctx_stack[ctx_depth - 1];
    OK;
}

/* ---- memory ----------------------------------------------------------------------------- */

typedef struct allocation {
    uintptr_t at;
    size_t n;
    int device;
} allocation;

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static allocation *allocs;
static int nallocs, cap_allocs;

void mock_mem_add(const void *p, size_t n, int device) {
    pthread_mutex_lock(&mem_mu);
    if (nallocs == cap_allocs) {
        int cap = cap_allocs ? 2 * cap_allocs : 256;
        allocation *a = realloc(allocs, sizeof *a * (size_t)cap);
        if (!a) abort(); /* a test's bookkeeping: no way on without it */
        allocs = a;
        cap_allocs = cap;
    }
    allocs[nallocs++] = (allocation){(uintptr_t)p, n ? n : 1, device};
    pthread_mutex_unlock(&mem_mu);
}

void mock_mem_remove(const void *p) {
    pthread_mutex_lock(&mem_mu);
    for (int i = nallocs - 1; i >= 0; i--)
        if (allocs[i].at == (uintptr_t)p) {
            allocs[i] = allocs[--nallocs];
            break;
        }
    pthread_mutex_unlock(&mem_mu);
}

int mock_mem_device(uint64_t addr) {
    int d = -1;
    pthread_mutex_lock(&mem_mu);
    for (int i = 0; i < nallocs && d < 0; i++)
        if (addr >= allocs[i].at && addr - allocs[i].at < allocs[i].n) d = allocs[i].device;
    pthread_mutex_unlock(&mem_mu);
    return d;
}

MOCK_API rt_cu_result cuPointerGetAttribute(void *data, int attribute, rt_cu_deviceptr ptr) {
    if (attribute != RT_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return MOCK_INVALID_VALUE;
    int d = mock_mem_device(ptr);
    if (d < 0) return MOCK_INVALID_VALUE; /* not device memory: the driver's answer */
    *(int *)data = d;
    OK;
}

rt_cu_result mock_check_node(const mock_node *n, int device) {
    int nargs = n->kind == MOCK_NODE_COPY ? 2 : mock_function_nargs(n->p.func);
    int fd = n->kind == MOCK_NODE_KERNEL ? mock_function_device(n->p.func) : -1;
    if (fd >= 0 && fd != device) {
        fprintf(stderr, "cuda_mock: a kernel of device %d's module launched on device %d\n", fd,
                device);
        return MOCK_INVALID_HANDLE;
    }
    for (int a = 0; a < nargs; a++) {
        int d = mock_mem_device(n->args[a]);
        if (d >= 0 && d != device) {
            fprintf(stderr,
                    "cuda_mock: work on device %d reads or writes memory of device %d "
                    "(argument %d)\n",
                    device, d, a);
            return MOCK_ILLEGAL_ADDRESS;
        }
    }
    OK;
}
