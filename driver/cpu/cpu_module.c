/* driver/cpu/cpu_module.c: finding and opening libfusec_llvm.so, the CPU backend's LLVM half
 * (see driver/cpu/cpu_jit.h), once per process.
 *
 * Places tried, in order (driver/locate.h): $FUSEC_LLVM_MODULE; the directory of the binary
 * that holds this code; for an installed executable, its ../FUSEC_INSTALL_LIBDIR; the build
 * tree's path (FUSEC_LLVM_MODULE_BUILD_PATH) and the install path
 * (FUSEC_LLVM_MODULE_INSTALL_PATH), both compiled in.
 */
#include "driver/cpu/cpu_jit.h"
#include "driver/locate.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUSEC_LLVM_MODULE_BUILD_PATH
#define FUSEC_LLVM_MODULE_BUILD_PATH ""
#endif
#ifndef FUSEC_LLVM_MODULE_INSTALL_PATH
#define FUSEC_LLVM_MODULE_INSTALL_PATH ""
#endif
#ifndef FUSEC_INSTALL_LIBDIR
#define FUSEC_INSTALL_LIBDIR "lib"
#endif

static struct {
    pthread_once_t once;
    const rt_llvm_api *api;
    char err[4096];
} mod = {.once = PTHREAD_ONCE_INIT};

/* mod.api once loaded, readable without the once (rt_llvm_loaded) */
static _Atomic(const rt_llvm_api *) loaded_api;

/* Fills paths[] with the candidate files; returns how many. */
static int candidates(char paths[RT_LOCATE_MAX][4096]) {
    return rt_locate_candidates("FUSEC_LLVM_MODULE", RT_LLVM_MODULE_NAME, FUSEC_INSTALL_LIBDIR,
                                FUSEC_LLVM_MODULE_BUILD_PATH, FUSEC_LLVM_MODULE_INSTALL_PATH,
                                paths);
}

static void open_module(void) {
    char paths[RT_LOCATE_MAX][4096];
    int n = candidates(paths);
    size_t used =
        (size_t)snprintf(mod.err, sizeof mod.err,
                         "the CPU backend's LLVM module (%s) was not found", RT_LLVM_MODULE_NAME);
    for (int i = 0; i < n; i++) {
        if (!rt_locate_exists(paths[i])) continue;
        /* LLVM never unloads cleanly: the handle is kept for the process's lifetime */
        void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *why = dlerror();
            snprintf(mod.err, sizeof mod.err, "cannot load %.2000s: %.1000s", paths[i],
                     why ? why : "?");
            (void)dlerror(); /* frees the message (runtime/cuda/cuda_driver.c) */
            return;
        }
        void *sym = dlsym(h, RT_LLVM_MODULE_ENTRY);
        rt_llvm_entry_fn entry;
        memcpy(&entry, &sym,
               sizeof entry); /* an object pointer to a function pointer, as dlsym's */
        const rt_llvm_api *api = sym ? entry() : NULL;
        if (!api || api->version != RT_LLVM_API_VERSION || api->size != sizeof(rt_llvm_api)) {
            snprintf(mod.err, sizeof mod.err, "%.2000s is not this fusec's LLVM module", paths[i]);
            return;
        }
        mod.api = api;
        atomic_store(&loaded_api, api);
        return;
    }
    for (int i = 0; i < n && used < sizeof mod.err; i++)
        used += (size_t)snprintf(mod.err + used, sizeof mod.err - used, "%s%.500s",
                                 i ? ", " : "; looked at ", paths[i]);
}

const rt_llvm_api *rt_llvm_open(char *err, size_t errlen) {
    pthread_once(&mod.once, open_module);
    if (!mod.api) snprintf(err, errlen, "%s", mod.err);
    return mod.api;
}

/* 1 when the module has been loaded in this process. */
static int rt_llvm_loaded(void) {
    return atomic_load(&loaded_api) != NULL;
}

int rt_llvm_present(void) {
    if (rt_llvm_loaded()) return 1;
    char paths[RT_LOCATE_MAX][4096];
    int n = candidates(paths);
    for (int i = 0; i < n; i++)
        if (rt_locate_exists(paths[i])) return 1;
    return 0;
}

/* Under AddressSanitizer: LeakSanitizer's scan of thread-local storage crashes ("Tracer
 * caught signal 11", a bogus DTLS range) once the LLVM module is loaded: its static LLVM has
 * thread_local variables in a dlopen'ed object (compiler-rt 14 with glibc 2.36). So the scan
 * is off (use_tls=0), and the one kind of block that TLS alone keeps reachable, glibc's
 * second-level pthread key arrays (programs with more than 32 keys, such as the CUDA
 * driver's), is suppressed. LeakSanitizer still finds every other leak. The sanitizer
 * runtime reads these hooks at start-up. */
#if defined(__SANITIZE_ADDRESS__)
#define FUSEC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUSEC_ASAN 1
#endif
#endif
#ifdef FUSEC_ASAN
__attribute__((visibility("default"), used)) const char *__lsan_default_options(void);
__attribute__((visibility("default"), used)) const char *__lsan_default_suppressions(void);
const char *__lsan_default_options(void) {
    return "use_tls=0:print_suppressions=0";
}
const char *__lsan_default_suppressions(void) {
    return "leak:pthread_setspecific\n";
}
#endif
