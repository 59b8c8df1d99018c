/* tests/mock/cuda_mock.c: a stand-in CUDA driver for testing the launcher's host side on a
 * machine without a GPU (loaded through $FUSEC_CUDA_DRIVER). Device memory is host memory, modules
 * and kernels are names, and a launch runs nothing: it is recorded (kernel, grid, block, argument
 * count), so a test can check what fusec asked the driver for, and that every context push is
 * popped and every allocation freed. The entry points runtime/cuda/cuda_api.h lists exist, and
 * those a test drives a capture with (cuStreamBeginCapture_v2, cuStreamEndCapture). Streams,
 * events, copies from the host and stream capture, and the rules a real driver holds fusec to
 * there, are mock_streams.c's.
 *
 * A module whose image is a host shared object (what the stand-in NVRTC of tests/emu builds
 * from the generated CUDA C++) is run for real: its kernels execute on the CPU
 * (tests/emu/emu_run.c) when launched directly or as graph nodes, synchronously, so that
 * results computed through the whole CUDA path can be checked without a GPU. PTX is
 * "JIT-compiled" (the stand-in NVRTC's, through that NVRTC; NVRTC's own is only named), and
 * refused when its target is newer than the device (FUSEC_MOCK_CC: the compute capability). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/emu/emu_run.h"
#include "tests/mock/mock_internal.h"

mock_stats mock_st;

MOCK_API mock_stats *mock_get_stats(void) {
    return &mock_st;
}

typedef struct mock_module {
    void *dl;   /* a host kernel object, or NULL: nothing runs */
    int device; /* loaded on */
} mock_module;

typedef struct mock_func {
    char name[128];
    const mock_module *module;
    emu_kernel_fn run; /* NULL: the launch is only recorded */
    int nargs;
    int max_smem; /* cuFuncSetAttribute's dynamic shared memory a block; 0: the default */
    int device;   /* its module's (-1: a module that only records; any shares the function) */
} mock_func;

MOCK_API rt_cu_result cuInit(unsigned f) {
    (void)f;
    OK;
}
MOCK_API rt_cu_result cuDriverGetVersion(int *v) {
    /* CUDA 13.0, or the version FUSEC_MOCK_DRIVER_VERSION gives (12080: an older driver) */
    const char *e = getenv("FUSEC_MOCK_DRIVER_VERSION");
    *v = e && atoi(e) > 0 ? atoi(e) : 13000;
    OK;
}
MOCK_API rt_cu_result cuGetErrorString(rt_cu_result e, const char **s) {
    (void)e;
    *s = "mock error";
    OK;
}
MOCK_API rt_cu_result cuGetErrorName(rt_cu_result e, const char **s) {
    static const struct {
        int code;
        const char *name;
    } names[] = {
        {MOCK_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
        {MOCK_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
        {MOCK_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
        {MOCK_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
        {MOCK_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
        {MOCK_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
        {MOCK_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
        {MOCK_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
        {MOCK_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
        {MOCK_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
        {MOCK_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
        {MOCK_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
        {MOCK_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"},
        {MOCK_CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"},
        {MOCK_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"},
        {MOCK_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
        {MOCK_CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT"},
        {MOCK_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"},
    };
    *s = "CUDA_ERROR_MOCK";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].code == e) *s = names[i].name;
    OK;
}
MOCK_API rt_cu_result cuDeviceGetCount(int *n) {
    *n = mock_ndevices();
    OK;
}
MOCK_API rt_cu_result cuDeviceGet(rt_cu_device *d, int i) {
    if (i < 0 || i >= mock_ndevices()) return MOCK_INVALID_DEVICE;
    *d = i;
    OK;
}
/* A device's compute capability (mock_device_cc): an H100's 9.0, or FUSEC_MOCK_CC's ("100": a
 * GPU newer than the toolkit, which NVRTC does not know; "90,80": one a device). */
MOCK_API rt_cu_result cuDeviceGetAttribute(int *v, int attr, rt_cu_device d) {
    if (d < 0 || d >= mock_ndevices()) return MOCK_INVALID_DEVICE;
    switch (attr) {
    case RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = mock_device_cc(d) / 10; break;
    case RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = mock_device_cc(d) % 10; break;
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
    if (mock_ndevices() == 1)
        snprintf(n, (size_t)len, "Mock GPU");
    else
        snprintf(n, (size_t)len, "Mock GPU %d", d);
    OK;
}
/* contexts: mock_devices.c */
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

/* The stand-in NVRTC's PTX (tests/emu/nvrtc_emu.c): this line, ".target sm_XY", the source. */
#define EMU_PTX_MARK "// fusec emulated PTX\n"

/* The stand-in NVRTC's library, for its compiler ("JIT-compiling" its PTX); NULL without one. */
static void *emu_nvrtc(void) {
    static void *lib;
    const char *path = getenv("FUSEC_NVRTC_PATH");
    if (!lib && path && *path) lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    return lib;
}

/* The host object the stand-in NVRTC builds from src (malloc'd); NULL when it cannot. */
static void *emu_build(const char *src) {
    typedef int (*create_fn)(void **, const char *, const char *, int, const char *const *,
                             const char *const *);
    typedef int (*compile_fn)(void *, int, const char *const *);
    typedef int (*size_fn)(void *, size_t *);
    typedef int (*get_fn)(void *, char *);
    typedef int (*destroy_fn)(void **);
    void *lib = emu_nvrtc(), *syms[5] = {NULL};
    static const char *const names[5] = {"nvrtcCreateProgram", "nvrtcCompileProgram",
                                         "nvrtcGetCUBINSize", "nvrtcGetCUBIN",
                                         "nvrtcDestroyProgram"};
    for (int i = 0; i < 5; i++)
        if (!lib || !(syms[i] = dlsym(lib, names[i]))) return NULL;
    create_fn create;
    compile_fn compile;
    size_fn size;
    get_fn get;
    destroy_fn destroy;
    memcpy(&create, &syms[0], sizeof create);
    memcpy(&compile, &syms[1], sizeof compile);
    memcpy(&size, &syms[2], sizeof size);
    memcpy(&get, &syms[3], sizeof get);
    memcpy(&destroy, &syms[4], sizeof destroy);
    void *prog = NULL;
    char *image = NULL;
    size_t n = 0;
    if (create(&prog, src, "jit.cu", 0, NULL, NULL) == 0 && compile(prog, 0, NULL) == 0 &&
        size(prog, &n) == 0 && (image = malloc(n)) && get(prog, image) != 0) {
        free(image);
        image = NULL;
    }
    if (prog) destroy(&prog);
    return image;
}

/* The driver's JIT of a PTX text: its target must be one the device runs (not newer); the
 * stand-in NVRTC's is built for the host and loaded, NVRTC's own only named (nothing runs). */
static rt_cu_result load_ptx(mock_module *mm, const char *ptx) {
    const char *t = strstr(ptx, ".target sm_");
    if (!t || atoi(t + strlen(".target sm_")) > mock_device_cc(mm->device))
        return MOCK_NO_BINARY_FOR_GPU;
    COUNT(mock_st.jit_loads, 1);
    if (strncmp(ptx, EMU_PTX_MARK, strlen(EMU_PTX_MARK)) != 0) OK;
    const char *src = strchr(t, '\n');
    void *image = src ? emu_build(src + 1) : NULL;
    mm->dl = image ? load_host_object(image) : NULL;
    free(image);
    return mm->dl ? RT_CU_SUCCESS : MOCK_INVALID_IMAGE;
}

MOCK_API rt_cu_result cuModuleLoadData(rt_cu_module *m, const void *image) {
    if (!image) return MOCK_INVALID_VALUE;
    rt_cu_result r = mock_unsafe("cuModuleLoadData");
    if (r != RT_CU_SUCCESS) return r;
    if (mock_current_device() < 0) return MOCK_INVALID_CONTEXT;
    mock_module *mm = calloc(1, sizeof *mm);
    if (!mm) return MOCK_OUT_OF_MEMORY;
    mm->device = mock_current_device();
    /* PTX is NUL-terminated text, which a cubin's ELF header never starts like */
    const char *text = image;
    if (!strncmp(text, "//", 2) || !strncmp(text, ".version", 8)) r = load_ptx(mm, text);
    /* a host object that does not load fails here, rather than running nothing later */
    else if (is_host_object(image) && !(mm->dl = load_host_object(image)))
        r = MOCK_INVALID_IMAGE;
    if (r != RT_CU_SUCCESS) {
        free(mm);
        return r;
    }
    *m = (rt_cu_module)mm;
    OK;
}
MOCK_API rt_cu_result cuModuleUnload(rt_cu_module m) {
    rt_cu_result r = mock_unsafe("cuModuleUnload");
    if (r != RT_CU_SUCCESS) return r;
    mock_module_unloading(m);
    /* the object stays loaded: handles to its functions outlive the module here */
    free(m);
    OK;
}
/* one slot per name and module, kept for the process: handles stay valid as a driver's */
static mock_func funcs[4096];
static int nfuncs;

static rt_cu_result find_function(rt_cu_function *f, const mock_module *mm, const char *name) {
    for (int i = 0; i < nfuncs; i++)
        if (!strcmp(funcs[i].name, name) &&
            (!mm->dl || (funcs[i].module == mm && funcs[i].device == mm->device))) {
            *f = (rt_cu_function)&funcs[i];
            OK;
        }
    if (nfuncs == 4096) return MOCK_OUT_OF_MEMORY;
    mock_func *mf = &funcs[nfuncs];
    snprintf(mf->name, sizeof mf->name, "%s", name);
    mf->module = mm;
    mf->device = mm->dl ? mm->device : -1;
    if (mm->dl) {
        char sym[160];
        snprintf(sym, sizeof sym, "%s__emu", name);
        void *run = dlsym(mm->dl, sym);
        snprintf(sym, sizeof sym, "%s__emu_nargs", name);
        const int *nargs = dlsym(mm->dl, sym);
        if (!run || !nargs || *nargs > MOCK_MAX_ARGS) return MOCK_NOT_FOUND;
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

const void *mock_function_module(rt_cu_function f) {
    /* a module whose kernels only record (no host object) shares its functions by name: the
     * module that looked the function up first stands for them all */
    return ((const mock_func *)f)->module;
}

int mock_function_device(rt_cu_function f) {
    return ((const mock_func *)f)->device;
}

int mock_function_nargs(rt_cu_function f) {
    return ((const mock_func *)f)->nargs;
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
        return MOCK_LAUNCH_FAILED;
    }
    return RT_CU_SUCCESS;
}

rt_cu_result mock_run_node(const mock_node *n) {
    if (n->kind == MOCK_NODE_COPY) {
        memcpy((void *)(uintptr_t)n->args[0], (const void *)(uintptr_t)n->args[1],
               (size_t)n->args[2]);
        OK;
    }
    void *args[MOCK_MAX_ARGS];
    for (int a = 0; a < MOCK_MAX_ARGS; a++)
        args[a] = (void *)&n->args[a];
    return emulate(n->p.func, n->p.grid_x, n->p.block_x, args);
}

/* A kernel node: its parameters, and its argument values copied from the caller's array. */
static void kernel_node(mock_node *n, const rt_cu_kernel_node_params *p) {
    const mock_func *mf = (const mock_func *)p->func;
    n->kind = MOCK_NODE_KERNEL;
    n->p = *p;
    for (int a = 0; a < mf->nargs; a++)
        memcpy(&n->args[a], p->kernel_params[a], 8);
}

static void record(rt_cu_function f, unsigned grid, unsigned block, void **params) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    const mock_func *mf = (const mock_func *)f;
    pthread_mutex_lock(&lock);
    snprintf(mock_st.last_kernel, sizeof mock_st.last_kernel, "%s", mf->name);
    mock_st.last_grid = grid;
    mock_st.last_block = block;
    pthread_mutex_unlock(&lock);
    if (!params || grid == 0 || block == 0 || block > 1024) abort(); /* fusec must never */
}

/* Work on s: recorded by its capture, or run now and queued until a synchronization. */
static rt_cu_result run_on(mock_stream *s, const mock_node *nodes, int n) {
    int captured = 0;
    rt_cu_result r = mock_issue(s, nodes, n, &captured);
    if (r != RT_CU_SUCCESS || captured) return r;
    for (int i = 0; i < n && r == RT_CU_SUCCESS; i++) {
        if (nodes[i].kind == MOCK_NODE_KERNEL) COUNT(mock_st.launches, 1);
        r = mock_run_node(&nodes[i]);
    }
    mock_queued(s, nodes, n);
    return r;
}

/* A driver refuses more dynamic shared memory than 48 KiB, unless the function opted in
 * (cuFuncSetAttribute), and more than the device has a block (an H100's 227 KiB here). */
enum { MOCK_SMEM_DEFAULT = 48 * 1024, MOCK_SMEM_OPTIN = 227 * 1024 };
MOCK_API rt_cu_result cuFuncSetAttribute(rt_cu_function f, int attribute, int value) {
    if (!f || attribute != RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || value < 0 ||
        value > MOCK_SMEM_OPTIN)
        return MOCK_INVALID_VALUE; /* (the only attribute fusec sets) */
    ((mock_func *)f)->max_smem = value;
    OK;
}
static int smem_ok(rt_cu_function f, unsigned smem) {
    const mock_func *mf = (const mock_func *)f;
    return smem <= MOCK_SMEM_DEFAULT || (int64_t)smem <= mf->max_smem;
}

MOCK_API rt_cu_result cuLaunchKernel(rt_cu_function f, unsigned gx, unsigned gy, unsigned gz,
                                     unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                     rt_cu_stream s, void **params, void **extra) {
    (void)extra;
    mock_stream *ms = mock_stream_of(s, "cuLaunchKernel");
    int dev = mock_current_device();
    if (dev < 0) return MOCK_INVALID_CONTEXT;
    if (mock_stream_device(ms) != dev) return MOCK_INVALID_HANDLE; /* another context's stream */
    if (gy != 1 || gz != 1 || by != 1 || bz != 1) abort();         /* fusec's grids are 1-D */
    if (!smem_ok(f, smem)) return MOCK_INVALID_VALUE;
    record(f, gx, bx, params);
    mock_node n;
    rt_cu_kernel_node_params p = {f, gx, 1, 1, bx, 1, 1, smem, params, NULL, NULL, NULL};
    kernel_node(&n, &p);
    rt_cu_result r = mock_check_node(&n, dev);
    if (r != RT_CU_SUCCESS) return r;
    COUNT(mock_st.launches_on[dev], 1);
    return run_on(ms, &n, 1);
}
/* Device memory: 256-byte aligned as a driver's, and exactly n bytes long, not rounded up, so
 * that AddressSanitizer (in emulated kernels built with it) sees any access past the end. */
static void *device_alloc(size_t n) {
    void *m = NULL;
    return posix_memalign(&m, 256, n ? n : 1) == 0 ? m : NULL;
}

MOCK_API rt_cu_result cuMemAlloc_v2(rt_cu_deviceptr *p, size_t n) {
    rt_cu_result r = mock_unsafe("cuMemAlloc");
    if (r != RT_CU_SUCCESS) return r;
    if (mock_current_device() < 0) return MOCK_INVALID_CONTEXT;
    void *m = device_alloc(n);
    if (!m) return MOCK_OUT_OF_MEMORY;
    mock_mem_add(m, n, mock_current_device());
    *p = (rt_cu_deviceptr)(uintptr_t)m;
    COUNT(mock_st.allocs, 1);
    OK;
}
MOCK_API rt_cu_result cuMemFree_v2(rt_cu_deviceptr p) {
    rt_cu_result r = mock_unsafe("cuMemFree");
    if (r != RT_CU_SUCCESS) return r;
    mock_mem_remove((void *)(uintptr_t)p);
    free((void *)(uintptr_t)p);
    COUNT(mock_st.frees, 1);
    OK;
}
MOCK_API rt_cu_result cuMemcpyDtoDAsync_v2(rt_cu_deviceptr d, rt_cu_deviceptr s, size_t n,
                                           rt_cu_stream x) {
    mock_node node;
    memset(&node, 0, sizeof node);
    node.kind = MOCK_NODE_COPY;
    node.args[0] = d;
    node.args[1] = s;
    node.args[2] = n;
    mock_stream *ms = mock_stream_of(x, "cuMemcpyDtoDAsync");
    int dev = mock_current_device();
    if (dev < 0) return MOCK_INVALID_CONTEXT;
    if (mock_stream_device(ms) != dev) return MOCK_INVALID_HANDLE;
    rt_cu_result r = mock_check_node(&node, dev);
    return r != RT_CU_SUCCESS ? r : run_on(ms, &node, 1);
}
MOCK_API rt_cu_result cuMemPoolCreate(rt_cu_mempool *p, const rt_cu_mempool_props *props) {
    if (props->alloc_type != RT_CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != RT_CU_MEM_LOCATION_TYPE_DEVICE || props->location.id < 0 ||
        props->location.id >= mock_ndevices())
        return MOCK_INVALID_VALUE;
    int *pool = malloc(16);
    if (!pool) return MOCK_OUT_OF_MEMORY;
    *pool = props->location.id; /* the pool's device */
    *p = (rt_cu_mempool)(void *)pool;
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
    void *m = NULL;
    int captured = 0;
    mock_stream *ms = mock_stream_of(s, "cuMemAllocFromPoolAsync");
    int dev = *(const int *)(const void *)pool;
    if (mock_stream_device(ms) != dev) return MOCK_INVALID_VALUE; /* a pool of another device */
    rt_cu_result r = mock_capture_alloc(ms, n, &m, &captured);
    if (r == RT_CU_SUCCESS && !captured && !(m = device_alloc(n))) r = MOCK_OUT_OF_MEMORY;
    if (r != RT_CU_SUCCESS) return r;
    mock_mem_add(m, n, dev);
    *p = (rt_cu_deviceptr)(uintptr_t)m;
    if (!captured) COUNT(mock_st.pool_allocs, 1);
    OK;
}
MOCK_API rt_cu_result cuMemFreeAsync(rt_cu_deviceptr p, rt_cu_stream s) {
    int captured = 0;
    rt_cu_result r =
        mock_capture_free(mock_stream_of(s, "cuMemFreeAsync"), (void *)(uintptr_t)p, &captured);
    if (r != RT_CU_SUCCESS || captured) return r;
    mock_mem_remove((void *)(uintptr_t)p);
    free((void *)(uintptr_t)p);
    COUNT(mock_st.pool_frees, 1);
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
    if (!mg) return MOCK_OUT_OF_MEMORY;
    *g = (rt_cu_graph)mg;
    COUNT(mock_st.graphs, 1);
    OK;
}
MOCK_API rt_cu_result cuGraphDestroy(rt_cu_graph g) {
    mock_gmem_release(((mock_graph *)g)->mem);
    free(g);
    COUNT(mock_st.graphs, -1);
    OK;
}
MOCK_API rt_cu_result cuGraphAddKernelNode_v2(rt_cu_graph_node *node, rt_cu_graph g,
                                              const rt_cu_graph_node *deps, size_t ndeps,
                                              const rt_cu_kernel_node_params *p) {
    mock_graph *mg = (mock_graph *)g;
    if (mg->nnodes == MOCK_MAX_NODES || (ndeps && !deps) || ndeps > 1) return MOCK_INVALID_VALUE;
    if (ndeps && (uintptr_t)deps[0] > (uintptr_t)mg->nnodes) return 1; /* an unknown node */
    if (!smem_ok(p->func, p->shared_mem_bytes)) return MOCK_INVALID_VALUE;
    record(p->func, p->grid_x, p->block_x, p->kernel_params);
    kernel_node(&mg->nodes[mg->nnodes], p);
    *node = (rt_cu_graph_node)(uintptr_t)(++mg->nnodes); /* 1-based: never NULL */
    COUNT(mock_st.graph_nodes, 1);
    OK;
}
MOCK_API rt_cu_result cuGraphInstantiateWithFlags(rt_cu_graph_exec *e, rt_cu_graph g,
                                                  unsigned long long f) {
    (void)f;
    mock_graph *copy = malloc(sizeof *copy);
    if (!copy) return MOCK_OUT_OF_MEMORY;
    *copy = *(mock_graph *)g;
    if (copy->mem) __atomic_add_fetch(&copy->mem->refs, 1, __ATOMIC_RELAXED);
    *e = (rt_cu_graph_exec)copy;
    COUNT(mock_st.instantiations, 1);
    OK;
}
MOCK_API rt_cu_result cuGraphExecKernelNodeSetParams_v2(rt_cu_graph_exec e, rt_cu_graph_node n,
                                                        const rt_cu_kernel_node_params *p) {
    mock_graph *mg = (mock_graph *)e;
    uintptr_t i = (uintptr_t)n;
    if (i < 1 || i > (uintptr_t)mg->nnodes || !smem_ok(p->func, p->shared_mem_bytes))
        return MOCK_INVALID_VALUE;
    record(p->func, p->grid_x, p->block_x, p->kernel_params);
    kernel_node(&mg->nodes[i - 1], p);
    COUNT(mock_st.node_updates, 1);
    OK;
}
MOCK_API rt_cu_result cuGraphLaunch(rt_cu_graph_exec e, rt_cu_stream s) {
    mock_stream *ms = mock_stream_of(s, "cuGraphLaunch");
    mock_graph *mg = (mock_graph *)e;
    rt_cu_result r = mock_not_capturable(ms);
    if (r != RT_CU_SUCCESS) return r;
    int dev = mock_current_device();
    if (dev < 0) return MOCK_INVALID_CONTEXT;
    if (mock_stream_device(ms) != dev) return MOCK_INVALID_HANDLE;
    for (int i = 0; i < mg->nnodes && r == RT_CU_SUCCESS; i++)
        r = mock_check_node(&mg->nodes[i], dev);
    if (r != RT_CU_SUCCESS) return r;
    COUNT(mock_st.graph_launches, 1);
    COUNT(mock_st.launches_on[dev], 1);
    return run_on(ms, mg->nodes, mg->nnodes);
}
MOCK_API rt_cu_result cuGraphExecDestroy(rt_cu_graph_exec e) {
    mock_gmem_release(((mock_graph *)e)->mem);
    free(e);
    OK;
}
