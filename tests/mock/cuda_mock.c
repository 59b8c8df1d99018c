/* tests/mock/cuda_mock.c: a stand-in CUDA driver for testing the launcher's host side on a
 * machine without a GPU (loaded through $FUSEC_CUDA_DRIVER). Device memory is host memory, modules
 * and kernels are names, and a launch runs nothing: it is recorded (kernel, grid, block, argument
 * count), so a test can check what fusec asked the driver for, and that every context push is
 * popped and every allocation freed. Only the entry points runtime/cuda/cuda_api.h lists exist.
 *
 * A module whose image is a host shared object (what the stand-in NVRTC of tests/emu builds
 * from the generated CUDA C++) is run for real: its kernels execute on the CPU
 * (tests/emu/emu_run.c) when launched directly or as graph nodes, synchronously, so that
 * results computed through the whole CUDA path can be checked without a GPU. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cuda/cuda_api.h"
#include "tests/emu/emu_run.h"
#include "tests/mock/cuda_mock.h"

#define MOCK_API __attribute__((visibility("default")))

static mock_stats st;

MOCK_API mock_stats *mock_get_stats(void) {
    return &st;
}

enum { MAX_ARGS = 64 };

typedef struct mock_module {
    void *dl; /* a host kernel object, or NULL: nothing runs */
} mock_module;

typedef struct mock_func {
    char name[128];
    const mock_module *module;
    emu_kernel_fn run; /* NULL: the launch is only recorded */
    int nargs;
} mock_func;

typedef struct mock_graph {
    int nnodes;
    rt_cu_kernel_node_params nodes[4096];
    uint64_t args[4096][MAX_ARGS]; /* the argument values, copied as a driver copies them */
} mock_graph;

static _Thread_local int ctx_depth; /* a driver's context stack is the calling thread's */
static struct rt_cu_ctx_st *const the_ctx = (struct rt_cu_ctx_st *)0x1000;

#define OK return RT_CU_SUCCESS
/* the counters, from any thread (a driver is thread-safe) */
#define COUNT(c, d) __atomic_add_fetch(&(c), (d), __ATOMIC_RELAXED)

/* Streams: slots of a static array, never reused, so that a destroyed one stays marked dead and
 * any later use of its handle (a real driver's undefined behaviour) stops the test here,
 * naming the call; no allocation, so none is left over at exit. */
enum { STREAM_LIVE = 0x5713EA3, STREAM_DEAD = 0xDEAD, MAX_STREAMS = 1 << 16 };
static unsigned stream_slots[MAX_STREAMS];
static unsigned next_stream;

static void stream_check(rt_cu_stream s, const char *call) {
    if (s && *(const unsigned *)(const void *)s != STREAM_LIVE) {
        fprintf(stderr, "cuda_mock: %s on a destroyed stream\n", call);
        abort();
    }
}

MOCK_API rt_cu_result cuInit(unsigned f) {
    (void)f;
    OK;
}
MOCK_API rt_cu_result cuDriverGetVersion(int *v) {
    *v = 13000;
    OK;
}
MOCK_API rt_cu_result cuGetErrorString(rt_cu_result e, const char **s) {
    (void)e;
    *s = "mock error";
    OK;
}
MOCK_API rt_cu_result cuGetErrorName(rt_cu_result e, const char **s) {
    (void)e;
    *s = "CUDA_ERROR_MOCK";
    OK;
}
MOCK_API rt_cu_result cuDeviceGetCount(int *n) {
    *n = 1;
    OK;
}
MOCK_API rt_cu_result cuDeviceGet(rt_cu_device *d, int i) {
    *d = i;
    OK;
}
MOCK_API rt_cu_result cuDeviceGetAttribute(int *v, int attr, rt_cu_device d) {
    (void)d;
    switch (attr) {
    case RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case RT_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: {
        /* an H100's 132, or fewer (FUSEC_MOCK_SMS), so that small grids loop over their work */
        const char *e = getenv("FUSEC_MOCK_SMS");
        *v = e && atoi(e) > 0 ? atoi(e) : 132;
        break;
    }
    case RT_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    default: *v = 1;
    }
    OK;
}
MOCK_API rt_cu_result cuDeviceGetName(char *n, int len, rt_cu_device d) {
    (void)d;
    snprintf(n, (size_t)len, "Mock GPU");
    OK;
}
MOCK_API rt_cu_result cuDevicePrimaryCtxRetain(rt_cu_context *c, rt_cu_device d) {
    (void)d;
    *c = the_ctx;
    OK;
}
MOCK_API rt_cu_result cuDevicePrimaryCtxRelease_v2(rt_cu_device d) {
    (void)d;
    OK;
}
MOCK_API rt_cu_result cuCtxGetCurrent(rt_cu_context *c) {
    *c = ctx_depth ? the_ctx : NULL;
    OK;
}
MOCK_API rt_cu_result cuCtxPushCurrent_v2(rt_cu_context c) {
    (void)c;
    ctx_depth++;
    COUNT(st.pushes, 1);
    OK;
}
MOCK_API rt_cu_result cuCtxPopCurrent_v2(rt_cu_context *c) {
    if (c) *c = the_ctx;
    ctx_depth--;
    COUNT(st.pops, 1);
    OK;
}
/* Whether image is a host shared object (an x86-64 ELF; a cubin's machine is CUDA's). */
static int is_host_object(const unsigned char *e) {
    return e[0] == 0x7f && memcmp(e + 1, "ELF", 3) == 0 && e[18] == 62 && e[19] == 0;
}

/* A host shared object loaded from memory and bound to the emulator; NULL if it cannot be. */
static void *load_host_object(const unsigned char *e) {
    /* dlopen needs a file: the ELF's size is where its section headers end */
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, e + 40, 8);
    memcpy(&shentsize, e + 58, 2);
    memcpy(&shnum, e + 60, 2);
    size_t len = (size_t)shoff + (size_t)shentsize * shnum;
    char path[] = "/tmp/fusec-emu-module-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    int ok = write(fd, e, len) == (ssize_t)len;
    close(fd);
    void *dl = ok ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    unlink(path);
    emu_bind_fn bind = NULL;
    void *sym = dl ? dlsym(dl, "fx_emu_bind") : NULL;
    memcpy(&bind, &sym, sizeof bind);
    if (!bind) return NULL;
    bind(emu_get_api());
    return dl;
}

MOCK_API rt_cu_result cuModuleLoadData(rt_cu_module *m, const void *image) {
    if (!image) return 1;
    mock_module *mm = calloc(1, sizeof *mm);
    if (!mm) return 2;
    /* a host object that does not load fails here, rather than running nothing later */
    if (is_host_object(image) && !(mm->dl = load_host_object(image))) {
        free(mm);
        return 200; /* CUDA_ERROR_INVALID_IMAGE */
    }
    *m = (rt_cu_module)mm;
    OK;
}
MOCK_API rt_cu_result cuModuleUnload(rt_cu_module m) {
    /* the object stays loaded: handles to its functions outlive the module here */
    free(m);
    OK;
}
/* one slot per name and module, kept for the process: handles stay valid as a driver's */
static mock_func funcs[4096];
static int nfuncs;

static rt_cu_result find_function(rt_cu_function *f, const mock_module *mm, const char *name) {
    for (int i = 0; i < nfuncs; i++)
        if (!strcmp(funcs[i].name, name) && (!mm->dl || funcs[i].module == mm)) {
            *f = (rt_cu_function)&funcs[i];
            OK;
        }
    if (nfuncs == 4096) return 2;
    mock_func *mf = &funcs[nfuncs];
    snprintf(mf->name, sizeof mf->name, "%s", name);
    mf->module = mm;
    if (mm->dl) {
        char sym[160];
        snprintf(sym, sizeof sym, "%s__emu", name);
        void *run = dlsym(mm->dl, sym);
        snprintf(sym, sizeof sym, "%s__emu_nargs", name);
        const int *nargs = dlsym(mm->dl, sym);
        if (!run || !nargs || *nargs > MAX_ARGS) return 500; /* CUDA_ERROR_NOT_FOUND */
        memcpy(&mf->run, &run, sizeof run);
        mf->nargs = *nargs;
    }
    nfuncs++;
    *f = (rt_cu_function)mf;
    OK;
}
MOCK_API rt_cu_result cuModuleGetFunction(rt_cu_function *f, rt_cu_module m, const char *name) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    rt_cu_result r = find_function(f, (const mock_module *)m, name);
    pthread_mutex_unlock(&lock);
    return r;
}

/* Runs a launch of a host kernel; the driver's error for a kernel that failed. Launches from
 * several threads (streams) take turns: the emulator runs one at a time. */
static rt_cu_result emulate(rt_cu_function f, unsigned grid, unsigned block, void **params) {
    static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;
    const mock_func *mf = (const mock_func *)f;
    char err[512];
    if (!mf->run) return RT_CU_SUCCESS;
    pthread_mutex_lock(&one_at_a_time);
    int failed = emu_launch(mf->name, mf->run, grid, block, params, err, sizeof err) != 0;
    pthread_mutex_unlock(&one_at_a_time);
    if (failed) {
        fprintf(stderr, "emulated kernel %s: %s\n", mf->name, err);
        return 719; /* CUDA_ERROR_LAUNCH_FAILED */
    }
    return RT_CU_SUCCESS;
}

/* A graph node's arguments, copied from the caller's array into the node's own. */
static void copy_args(mock_graph *mg, int i, rt_cu_function f, void **params) {
    const mock_func *mf = (const mock_func *)f;
    for (int a = 0; a < mf->nargs; a++)
        memcpy(&mg->args[i][a], params[a], 8);
}

static void record(rt_cu_function f, unsigned grid, unsigned block, void **params) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    const mock_func *mf = (const mock_func *)f;
    pthread_mutex_lock(&lock);
    snprintf(st.last_kernel, sizeof st.last_kernel, "%s", mf->name);
    st.last_grid = grid;
    st.last_block = block;
    pthread_mutex_unlock(&lock);
    if (!params || grid == 0 || block == 0 || block > 1024) abort(); /* fusec must never */
}

MOCK_API rt_cu_result cuLaunchKernel(rt_cu_function f, unsigned gx, unsigned gy, unsigned gz,
                                     unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                     rt_cu_stream s, void **params, void **extra) {
    (void)smem, (void)extra;
    stream_check(s, "cuLaunchKernel");
    if (ctx_depth == 0) return 201;                        /* CUDA_ERROR_INVALID_CONTEXT */
    if (gy != 1 || gz != 1 || by != 1 || bz != 1) abort(); /* fusec's grids are 1-D */
    record(f, gx, bx, params);
    COUNT(st.launches, 1);
    return emulate(f, gx, bx, params);
}
/* Device memory: 256-byte aligned as a driver's, and exactly n bytes long, not rounded up, so
 * that AddressSanitizer (in emulated kernels built with it) sees any access past the end. */
static void *device_alloc(size_t n) {
    void *m = NULL;
    return posix_memalign(&m, 256, n ? n : 1) == 0 ? m : NULL;
}

MOCK_API rt_cu_result cuMemAlloc_v2(rt_cu_deviceptr *p, size_t n) {
    void *m = device_alloc(n);
    if (!m) return 2;
    *p = (rt_cu_deviceptr)(uintptr_t)m;
    COUNT(st.allocs, 1);
    OK;
}
MOCK_API rt_cu_result cuMemFree_v2(rt_cu_deviceptr p) {
    free((void *)(uintptr_t)p);
    COUNT(st.frees, 1);
    OK;
}
MOCK_API rt_cu_result cuMemcpyHtoD_v2(rt_cu_deviceptr d, const void *s, size_t n) {
    memcpy((void *)(uintptr_t)d, s, n);
    OK;
}
MOCK_API rt_cu_result cuMemcpyDtoH_v2(void *d, rt_cu_deviceptr s, size_t n) {
    memcpy(d, (void *)(uintptr_t)s, n);
    OK;
}
MOCK_API rt_cu_result cuMemcpyDtoDAsync_v2(rt_cu_deviceptr d, rt_cu_deviceptr s, size_t n,
                                           rt_cu_stream x) {
    stream_check(x, "cuMemcpyDtoDAsync");
    memcpy((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
    OK;
}
MOCK_API rt_cu_result cuMemPoolCreate(rt_cu_mempool *p, const rt_cu_mempool_props *props) {
    if (props->alloc_type != RT_CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != RT_CU_MEM_LOCATION_TYPE_DEVICE)
        return 1;
    *p = (rt_cu_mempool)malloc(16);
    OK;
}
MOCK_API rt_cu_result cuMemPoolDestroy(rt_cu_mempool p) {
    free(p);
    OK;
}
MOCK_API rt_cu_result cuMemPoolSetAttribute(rt_cu_mempool p, int a, void *v) {
    (void)p, (void)a, (void)v;
    OK;
}
MOCK_API rt_cu_result cuMemAllocFromPoolAsync(rt_cu_deviceptr *p, size_t n, rt_cu_mempool pool,
                                              rt_cu_stream s) {
    (void)pool;
    stream_check(s, "cuMemAllocFromPoolAsync");
    void *m = device_alloc(n);
    if (!m) return 2;
    *p = (rt_cu_deviceptr)(uintptr_t)m;
    COUNT(st.pool_allocs, 1);
    OK;
}
MOCK_API rt_cu_result cuMemFreeAsync(rt_cu_deviceptr p, rt_cu_stream s) {
    stream_check(s, "cuMemFreeAsync");
    free((void *)(uintptr_t)p);
    COUNT(st.pool_frees, 1);
    OK;
}
MOCK_API rt_cu_result cuStreamCreate(rt_cu_stream *s, unsigned f) {
    (void)f;
    unsigned i = __atomic_fetch_add(&next_stream, 1, __ATOMIC_RELAXED);
    if (i >= MAX_STREAMS) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    unsigned *mark = &stream_slots[i];
    *mark = STREAM_LIVE;
    *s = (rt_cu_stream)(void *)mark;
    COUNT(st.streams, 1);
    OK;
}
MOCK_API rt_cu_result cuStreamDestroy_v2(rt_cu_stream s) {
    stream_check(s, "cuStreamDestroy");
    *(unsigned *)(void *)s = STREAM_DEAD; /* its slot is never reused: a later use is caught */
    COUNT(st.streams, -1);
    OK;
}
MOCK_API rt_cu_result cuStreamSynchronize(rt_cu_stream s) {
    stream_check(s, "cuStreamSynchronize");
    OK;
}
MOCK_API rt_cu_result cuStreamWaitEvent(rt_cu_stream s, rt_cu_event e, unsigned f) {
    (void)e;
    stream_check(s, "cuStreamWaitEvent");
    if (f != 0) return 1; /* CUDA_ERROR_INVALID_VALUE: fusec passes no flags */
    OK;
}
MOCK_API rt_cu_result cuEventCreate(rt_cu_event *e, unsigned f) {
    (void)f;
    *e = (rt_cu_event)malloc(16);
    COUNT(st.events, 1);
    OK;
}
MOCK_API rt_cu_result cuEventDestroy_v2(rt_cu_event e) {
    free(e);
    COUNT(st.events, -1);
    OK;
}
MOCK_API rt_cu_result cuEventRecord(rt_cu_event e, rt_cu_stream s) {
    (void)e;
    stream_check(s, "cuEventRecord");
    OK;
}
MOCK_API rt_cu_result cuEventSynchronize(rt_cu_event e) {
    (void)e;
    OK;
}
MOCK_API rt_cu_result cuEventElapsedTime_v2(float *ms, rt_cu_event a, rt_cu_event b) {
    (void)a, (void)b;
    *ms = 0.5f;
    OK;
}
MOCK_API rt_cu_result cuGraphCreate(rt_cu_graph *g, unsigned f) {
    (void)f;
    mock_graph *mg = calloc(1, sizeof *mg);
    if (!mg) return 2;
    *g = (rt_cu_graph)mg;
    COUNT(st.graphs, 1);
    OK;
}
MOCK_API rt_cu_result cuGraphDestroy(rt_cu_graph g) {
    free(g);
    COUNT(st.graphs, -1);
    OK;
}
MOCK_API rt_cu_result cuGraphAddKernelNode_v2(rt_cu_graph_node *node, rt_cu_graph g,
                                              const rt_cu_graph_node *deps, size_t ndeps,
                                              const rt_cu_kernel_node_params *p) {
    mock_graph *mg = (mock_graph *)g;
    if (mg->nnodes == 4096 || (ndeps && !deps) || ndeps > 1) return 1;
    if (ndeps && (uintptr_t)deps[0] > (uintptr_t)mg->nnodes) return 1; /* an unknown node */
    record(p->func, p->grid_x, p->block_x, p->kernel_params);
    mg->nodes[mg->nnodes] = *p;
    copy_args(mg, mg->nnodes, p->func, p->kernel_params);
    *node = (rt_cu_graph_node)(uintptr_t)(++mg->nnodes); /* 1-based: never NULL */
    COUNT(st.graph_nodes, 1);
    OK;
}
MOCK_API rt_cu_result cuGraphInstantiateWithFlags(rt_cu_graph_exec *e, rt_cu_graph g,
                                                  unsigned long long f) {
    (void)f;
    mock_graph *copy = malloc(sizeof *copy);
    if (!copy) return 2;
    *copy = *(mock_graph *)g;
    *e = (rt_cu_graph_exec)copy;
    COUNT(st.instantiations, 1);
    OK;
}
MOCK_API rt_cu_result cuGraphExecKernelNodeSetParams_v2(rt_cu_graph_exec e, rt_cu_graph_node n,
                                                        const rt_cu_kernel_node_params *p) {
    mock_graph *mg = (mock_graph *)e;
    uintptr_t i = (uintptr_t)n;
    if (i < 1 || i > (uintptr_t)mg->nnodes) return 1;
    record(p->func, p->grid_x, p->block_x, p->kernel_params);
    mg->nodes[i - 1] = *p;
    copy_args(mg, (int)i - 1, p->func, p->kernel_params);
    COUNT(st.node_updates, 1);
    OK;
}
MOCK_API rt_cu_result cuGraphLaunch(rt_cu_graph_exec e, rt_cu_stream s) {
    stream_check(s, "cuGraphLaunch");
    mock_graph *mg = (mock_graph *)e;
    COUNT(st.graph_launches, 1);
    for (int i = 0; i < mg->nnodes; i++) {
        COUNT(st.launches, 1);
        void *args[MAX_ARGS];
        for (int a = 0; a < MAX_ARGS; a++)
            args[a] = &mg->args[i][a];
        rt_cu_result r =
            emulate(mg->nodes[i].func, mg->nodes[i].grid_x, mg->nodes[i].block_x, args);
        if (r != RT_CU_SUCCESS) return r;
    }
    OK;
}
MOCK_API rt_cu_result cuGraphExecDestroy(rt_cu_graph_exec e) {
    free(e);
    OK;
}
