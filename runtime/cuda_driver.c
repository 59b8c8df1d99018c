/* runtime/cuda_driver.c: probing the CUDA driver through dlopen (see cuda_driver.h). The few
 * prototypes used are the driver API's own (cuda.h, stable since CUDA 4); declaring them here
 * keeps the toolkit out of the build. State is written once under pthread_once. */
#include "runtime/cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef int CUresult; /* 0 is CUDA_SUCCESS */
typedef int CUdevice;
enum {
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static rt_cuda_device device;
static int present;
static char reason[512];

/* dlsym's object pointer into a function pointer, through memcpy (POSIX guarantees it). */
static int sym(void *lib, const char *name, void *fp, size_t fpsize) {
    void *p = dlsym(lib, name);
    if (!p) return 0;
    memcpy(fp, &p, fpsize);
    return 1;
}

static void probe(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(reason, sizeof reason,
                 "no CUDA driver or device was found (libcuda.so.1 could not be loaded)");
        return;
    }
    CUresult (*init)(unsigned) = NULL;
    CUresult (*get_count)(int *) = NULL;
    CUresult (*get)(CUdevice *, int) = NULL;
    CUresult (*attr)(int *, int, CUdevice) = NULL;
    if (!sym(lib, "cuInit", &init, sizeof init) ||
        !sym(lib, "cuDeviceGetCount", &get_count, sizeof get_count) ||
        !sym(lib, "cuDeviceGet", &get, sizeof get) ||
        !sym(lib, "cuDeviceGetAttribute", &attr, sizeof attr)) {
        snprintf(reason, sizeof reason, "the CUDA driver (libcuda.so.1) lacks the driver API");
        return; /* the library stays loaded: unloading a driver buys nothing */
    }
    CUresult r = init(0);
    if (r != 0) {
        snprintf(reason, sizeof reason, "the CUDA driver failed to initialize (error %d)", r);
        return;
    }
    int n = 0;
    CUdevice d0 = 0;
    if (get_count(&n) != 0 || n < 1 || get(&d0, 0) != 0) {
        snprintf(reason, sizeof reason, "the CUDA driver reports no device");
        return;
    }
    device.count = n;
    if (attr(&device.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d0) != 0 ||
        attr(&device.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d0) != 0 ||
        attr(&device.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d0) != 0) {
        snprintf(reason, sizeof reason, "the CUDA driver cannot describe device 0");
        return;
    }
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
