/* runtime/cuda/cuda_driver.c: loading the CUDA driver through dlopen (see cuda_driver.h). The
 * entry points are declared in cuda_api.h, which keeps the toolkit out of the build. State
 * is written once under pthread_once and only read afterwards. */
#include "runtime/cuda/cuda_driver.h"

#include "runtime/clock.h"

#include <dlfcn.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static rt_cuda_device device;
static rt_cu_api api;
static int present;
static char reason[1024];
static rt_cuda_startup startup; /* how long the probe's steps took */

/* dlsym's object pointer into a function pointer, through memcpy (POSIX guarantees it). */
static int sym(void *lib, const char *name, const char *fallback, void *fp, size_t fpsize) {
    void *p = dlsym(lib, name);
    if (!p) {
        if (fallback) p = dlsym(lib, fallback);
        /* read and let go of the failed lookup's message, as probe does: LeakSanitizer
         * reports it else */
        (void)dlerror();
        (void)dlerror();
    }
    if (!p) return 0;
    memcpy(fp, &p, fpsize);
    return 1;
}

/* FUSEC_CUDA_DRIVER names another library with the driver API (the tests' stand-in): only
 * fusec loads it, while NVRTC, which looks for libcuda.so.1 itself, never sees it. */
static const char *driver_path(void) {
    const char *path = getenv("FUSEC_CUDA_DRIVER");
    return path && *path ? path : "libcuda.so.1";
}

/* Describes device dev of `count` into *d through a's entry points (the probe's, device 0;
 * later, under state_mu, any). 0, or -1 with the reason. */
static int describe(const rt_cu_api *a, int dev, int count, int driver_version, rt_cuda_device *d,
                    char *err, size_t errlen) {
    rt_cu_device h = 0;
    memset(d, 0, sizeof *d);
    d->count = count;
    d->ordinal = dev;
    d->driver_version = driver_version;
    if (a->DeviceGet(&h, dev) != RT_CU_SUCCESS ||
        a->DeviceGetAttribute(&d->major, RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, h) !=
            RT_CU_SUCCESS ||
        a->DeviceGetAttribute(&d->minor, RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, h) !=
            RT_CU_SUCCESS ||
        a->DeviceGetAttribute(&d->sm_count, RT_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, h) !=
            RT_CU_SUCCESS ||
        a->DeviceGetAttribute(&d->max_threads, RT_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, h) !=
            RT_CU_SUCCESS ||
        a->DeviceGetName(d->name, (int)sizeof d->name, h) != RT_CU_SUCCESS) {
        snprintf(err, errlen, "the CUDA driver cannot describe device %d", dev);
        return -1;
    }
    d->handle = h;
    return 0;
}

static void probe(void) {
    const char *path = driver_path();
    const char *env = getenv("FUSEC_CUDA_DRIVER");
    int named = env && *env;
    snprintf(startup.library, sizeof startup.library, "%s", path);
    double t0 = rt_now_ms();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    startup.dlopen_ms = rt_now_ms() - t0;
    if (!lib) {
        /* dlerror's text says why (no such file, a missing dependency, a wrong ELF class);
         * the second call frees glibc's message (else it stays until the next dl call, and
         * LeakSanitizer reports it when there is none) */
        const char *e = dlerror();
        if (named)
            /* not "no CUDA driver": a stand-in that fails to load must fail a test, never
             * make it skip as a machine without a GPU does */
            snprintf(reason, sizeof reason,
                     "the CUDA driver named by FUSEC_CUDA_DRIVER (%.300s) could not be loaded: "
                     "%.400s",
                     path, e ? e : "unknown error");
        else
            snprintf(reason, sizeof reason,
                     "no CUDA driver or device was found (libcuda.so.1 could not be loaded: "
                     "%.400s)",
                     e ? e : "unknown error");
        (void)dlerror();
        return;
    }
    rt_cu_api a;
#define RT_CU_LOAD(member, symbol, fallback, params)                                               \
    if (!sym(lib, symbol, fallback, &a.member, sizeof a.member)) {                                 \
        snprintf(reason, sizeof reason,                                                            \
                 "the CUDA driver (%.300s) is too old: it lacks %s (CUDA 12.3 or newer is "        \
                 "needed)",                                                                        \
                 path, symbol);                                                                    \
        return;                                                                                    \
    }
    RT_CU_FUNCTIONS(RT_CU_LOAD)
#undef RT_CU_LOAD
    /* the library stays loaded from here on: unloading a driver buys nothing */
    t0 = rt_now_ms();
    rt_cu_result r = a.Init(0);
    startup.init_ms = rt_now_ms() - t0;
    if (r != RT_CU_SUCCESS) {
        const char *s = NULL;
        a.GetErrorString(r, &s);
        snprintf(reason, sizeof reason, "the CUDA driver failed to initialize: %s (error %d)",
                 s ? s : "unknown error", r);
        return;
    }
    t0 = rt_now_ms();
    int n = 0, version = 0;
    rt_cu_device d0 = 0;
    if (a.DeviceGetCount(&n) != RT_CU_SUCCESS || n < 1 || a.DeviceGet(&d0, 0) != RT_CU_SUCCESS) {
        snprintf(reason, sizeof reason, "the CUDA driver reports no device");
        return;
    }
    if (a.DriverGetVersion(&version) != RT_CU_SUCCESS ||
        describe(&a, 0, n, version, &device, reason, sizeof reason) != 0) {
        snprintf(reason, sizeof reason, "the CUDA driver cannot describe device 0");
        return;
    }
    startup.describe_ms = rt_now_ms() - t0;
    api = a;
    present = 1;
}

int rt_cuda_probe(rt_cuda_device *d, char *why, size_t whylen) {
    pthread_once(&probe_once, probe);
    if (present) {
        if (d) *d = device;
        if (why && whylen) why[0] = 0;
        return 1;
    }
    if (d) memset(d, 0, sizeof *d);
    if (why && whylen) snprintf(why, whylen, "%s", reason);
    return 0;
}

void rt_cuda_startup_times(rt_cuda_startup *t) {
    pthread_once(&probe_once, probe);
    *t = startup;
}

static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static int version_only;

static void read_version(void) {
    void *lib = dlopen(driver_path(), RTLD_NOW | RTLD_LOCAL);
    rt_cu_result (*get)(int *) = NULL;
    if (!lib) {
        (void)dlerror(); /* read and let go of the message, as probe does */
        (void)dlerror();
        return;
    }
    /* the library stays loaded: probe loads the same one */
    if (!sym(lib, "cuDriverGetVersion", NULL, &get, sizeof get) ||
        get(&version_only) != RT_CU_SUCCESS)
        version_only = 0;
}

int rt_cuda_driver_version(void) {
    pthread_once(&version_once, read_version);
    return version_only;
}

const rt_cu_api *rt_cuda_api(void) {
    pthread_once(&probe_once, probe);
    return present ? &api : NULL;
}

const char *rt_cuda_error(rt_cu_result r, const char *call, char *buf, size_t len) {
    const char *name = NULL, *text = NULL;
    if (present) {
        api.GetErrorName(r, &name);
        api.GetErrorString(r, &text);
    }
    snprintf(buf, len, "%s: %s (%s)", call, name ? name : "CUDA error", text ? text : "?");
    return buf;
}

/* ---- each device's primary context, pool and stream: made once, kept for the process ----- */

/* A device's state, made on its first use only: retaining a primary context creates it, which
 * takes memory on that GPU, and a process of `torchrun` must touch no GPU but its own. */
typedef struct dev_state {
    int described; /* 1: desc holds the device's description; -1: it could not be described */
    rt_cuda_device desc;
    rt_cu_context primary;
    rt_cu_mempool pool;
    rt_cu_stream own_stream;
} dev_state;

static pthread_mutex_t state_mu = PTHREAD_MUTEX_INITIALIZER;
static dev_state devs[RT_CUDA_MAX_DEVICES];

/* Whether dev names a device the driver shows (a message in err when not). */
static int dev_valid(int dev, char *err, size_t errlen) {
    if (dev >= 0 && dev < device.count && dev < RT_CUDA_MAX_DEVICES) return 1;
    snprintf(err, errlen, "CUDA device %d does not exist (the driver shows %d)", dev, device.count);
    return 0;
}

int rt_cuda_device_info(int dev, rt_cuda_device *d, char *err, size_t errlen) {
    if (!rt_cuda_api()) {
        rt_cuda_probe(NULL, err, errlen);
        return -1;
    }
    if (!dev_valid(dev, err, errlen)) return -1;
    pthread_mutex_lock(&state_mu);
    dev_state *ds = &devs[dev];
    if (!ds->described)
        ds->described =
            describe(&api, dev, device.count, device.driver_version, &ds->desc, err, errlen) == 0
                ? 1
                : -1;
    else if (ds->described < 0)
        snprintf(err, errlen, "the CUDA driver cannot describe device %d", dev);
    int ok = ds->described > 0;
    if (ok && d) *d = ds->desc;
    pthread_mutex_unlock(&state_mu);
    return ok ? 0 : -1;
}

int rt_cuda_enter(int dev, int *pushed, char *err, size_t errlen) {
    *pushed = 0;
    const rt_cu_api *cu = rt_cuda_api();
    if (!cu) {
        rt_cuda_probe(NULL, err, errlen);
        return -1;
    }
    if (!dev_valid(dev, err, errlen)) return -1;
    pthread_mutex_lock(&state_mu);
    rt_cu_result r = RT_CU_SUCCESS;
    dev_state *ds = &devs[dev];
    rt_cu_device h = 0;
    if (!ds->primary) r = cu->DeviceGet(&h, dev);
    if (!ds->primary && r == RT_CU_SUCCESS) r = cu->DevicePrimaryCtxRetain(&ds->primary, h);
    rt_cu_context ctx = ds->primary;
    pthread_mutex_unlock(&state_mu);
    if (r != RT_CU_SUCCESS) {
        rt_cuda_error(r, "cuDevicePrimaryCtxRetain", err, errlen);
        return -1;
    }
    rt_cu_context cur = NULL;
    r = cu->CtxGetCurrent(&cur);
    if (r == RT_CU_SUCCESS && cur == ctx) return 0;
    if (r == RT_CU_SUCCESS) r = cu->CtxPushCurrent(ctx);
    if (r != RT_CU_SUCCESS) {
        rt_cuda_error(r, "cuCtxPushCurrent", err, errlen);
        return -1;
    }
    *pushed = 1;
    return 0;
}

void rt_cuda_leave(int pushed) {
    if (!pushed) return;
    rt_cu_context popped = NULL;
    api.CtxPopCurrent(&popped);
}

/* The device whose primary context ctx is, among those retained; -1 when none is. */
static int primary_of(rt_cu_context ctx) {
    int found = -1;
    pthread_mutex_lock(&state_mu);
    for (int d = 0; d < device.count && d < RT_CUDA_MAX_DEVICES && found < 0; d++)
        if (devs[d].primary && devs[d].primary == ctx) found = d;
    pthread_mutex_unlock(&state_mu);
    return found;
}

int rt_cuda_current_device(void) {
    const rt_cu_api *cu = rt_cuda_api();
    rt_cu_context cur = NULL;
    if (!cu || cu->CtxGetCurrent(&cur) != RT_CU_SUCCESS || !cur) return 0;
    int d = primary_of(cur);
    if (d >= 0) return d;
    rt_cu_device h = 0;
    return cu->CtxGetDevice(&h) == RT_CU_SUCCESS && h >= 0 && h < device.count ? (int)h : 0;
}

int rt_cuda_stream_device(void *stream, char *err, size_t errlen) {
    const rt_cu_api *cu = rt_cuda_api();
    if (!cu) {
        rt_cuda_probe(NULL, err, errlen);
        return -1;
    }
    /* NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: the current context's */
    if ((uintptr_t)stream <= 2) return rt_cuda_current_device();
    rt_cu_context ctx = NULL;
    rt_cu_result r = cu->StreamGetCtx((rt_cu_stream)stream, &ctx);
    if (r != RT_CU_SUCCESS) {
        rt_cuda_error(r, "cuStreamGetCtx", err, errlen);
        return -1;
    }
    int d = primary_of(ctx);
    if (d >= 0) return d;
    /* a context not retained yet: its device, then whether it is that device's primary */
    rt_cu_device h = -1;
    rt_cu_context popped = NULL;
    r = cu->CtxPushCurrent(ctx);
    if (r == RT_CU_SUCCESS) {
        r = cu->CtxGetDevice(&h);
        cu->CtxPopCurrent(&popped);
    }
    if (r != RT_CU_SUCCESS || h < 0 || h >= device.count) {
        rt_cuda_error(r, "cuCtxGetDevice", err, errlen);
        return -1;
    }
    int pushed = 0;
    if (rt_cuda_enter((int)h, &pushed, err, errlen) != 0) return -1;
    rt_cuda_leave(pushed);
    if (primary_of(ctx) != (int)h) {
        snprintf(err, errlen,
                 "the stream belongs to a context of device %d that is not its primary context "
                 "(fusec runs in the primary context, the CUDA runtime's and PyTorch's)",
                 (int)h);
        return -1;
    }
    return (int)h;
}

int rt_cuda_pointer_device(const void *ptr) {
    const rt_cu_api *cu = rt_cuda_api();
    int ordinal = -1;
    if (!cu || !ptr ||
        cu->PointerGetAttribute(&ordinal, RT_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                (rt_cu_deviceptr)(uintptr_t)ptr) != RT_CU_SUCCESS)
        return -1;
    return ordinal >= 0 && ordinal < device.count ? ordinal : -1;
}

rt_cu_mempool rt_cuda_pool(int dev, char *err, size_t errlen) {
    const rt_cu_api *cu = &api;
    rt_cuda_device d;
    if (rt_cuda_device_info(dev, &d, err, errlen) != 0) return NULL;
    pthread_mutex_lock(&state_mu);
    dev_state *ds = &devs[dev];
    if (!ds->pool) {
        int supported = 0;
        rt_cu_result r = cu->DeviceGetAttribute(
            &supported, RT_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d.handle);
        if (r != RT_CU_SUCCESS || !supported) {
            snprintf(err, errlen, "device %d (%s) has no stream-ordered memory pools", dev, d.name);
        } else {
            rt_cu_mempool_props props;
            memset(&props, 0, sizeof props);
            props.alloc_type = RT_CU_MEM_ALLOCATION_TYPE_PINNED;
            props.handle_types = RT_CU_MEM_HANDLE_TYPE_NONE;
            props.location.type = RT_CU_MEM_LOCATION_TYPE_DEVICE;
            props.location.id = d.handle;
            rt_cu_mempool p = NULL;
            r = cu->MemPoolCreate(&p, &props);
            if (r == RT_CU_SUCCESS) {
                unsigned long long keep_all = ~0ull;
                r = cu->MemPoolSetAttribute(p, RT_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
                if (r != RT_CU_SUCCESS) {
                    cu->MemPoolDestroy(p);
                    rt_cuda_error(r, "cuMemPoolSetAttribute", err, errlen);
                } else {
                    ds->pool = p;
                }
            } else {
                rt_cuda_error(r, "cuMemPoolCreate", err, errlen);
            }
        }
    }
    rt_cu_mempool p = ds->pool;
    pthread_mutex_unlock(&state_mu);
    return p;
}

rt_cu_stream rt_cuda_own_stream(int dev, char *err, size_t errlen) {
    if (!dev_valid(dev, err, errlen)) return NULL;
    pthread_mutex_lock(&state_mu);
    rt_cu_result r = RT_CU_SUCCESS;
    dev_state *ds = &devs[dev];
    if (!ds->own_stream) r = api.StreamCreate(&ds->own_stream, RT_CU_STREAM_NON_BLOCKING);
    rt_cu_stream s = ds->own_stream;
    pthread_mutex_unlock(&state_mu);
    if (r != RT_CU_SUCCESS) rt_cuda_error(r, "cuStreamCreate", err, errlen);
    return s;
}
int rt_cuda_mode_relaxed(void) {
    int mode = RT_CU_STREAM_CAPTURE_MODE_RELAXED;
    if (api.ThreadExchangeStreamCaptureMode(&mode) != RT_CU_SUCCESS)
        mode = RT_CU_STREAM_CAPTURE_MODE_RELAXED; /* nothing changed: nothing to restore */
    return mode;
}

void rt_cuda_mode_restore(int mode) {
    if (mode != RT_CU_STREAM_CAPTURE_MODE_RELAXED) api.ThreadExchangeStreamCaptureMode(&mode);
}
