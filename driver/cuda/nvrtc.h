/* driver/cuda/nvrtc.h: the NVRTC driver: CUDA C source to cubin or PTX at run time.
 *
 * NVRTC is loaded with dlopen on first use, so libfusec and fusec link and run on machines
 * without the CUDA toolkit (CPU only); no NVRTC header is needed to build. The library is
 * looked for in this order, and the first file found is the one loaded and the one whose
 * identity (rt_nvrtc_identity) goes into cache keys:
 *   $FUSEC_NVRTC_PATH (only that file: set it to a missing path to act as if absent),
 *   each directory of $LD_LIBRARY_PATH, $CUDA_HOME/lib64, $CUDA_PATH/lib64,
 *   NVIDIA's wheels (nvidia/<package>/lib: cuda_nvrtc for CUDA 12, cu13 for 13) below each
 *   site-packages or dist-packages directory that a library of this process was loaded from
 *   (PyTorch's: all the NVRTC a machine with PyTorch and no toolkit has; fusec's own),
 *   /usr/local/cuda/lib64, /usr/local/cuda/lib, the system library directories,
 *   then the bare sonames through the dynamic loader's own search.
 * with the names libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so.11.2, libnvrtc.so in each.
 * A file whose CUDA major version (from its real name) is newer than the driver's
 * (rt_cuda_driver_version) is passed over, as its cubins would not load there, unless no
 * other is found.
 *
 * Thread safety: every function may be called from any thread; loading happens once.
 * Nothing here exits or prints.
 */
#ifndef FUSEC_RUNTIME_NVRTC_H
#define FUSEC_RUNTIME_NVRTC_H

#include <stddef.h>

typedef enum rt_nvrtc_status {
    RT_NVRTC_OK = 0,
    RT_NVRTC_ERR_LOAD = 1,    /* NVRTC is not installed or lacks a needed function */
    RT_NVRTC_ERR_ARCH = 2,    /* the architecture is malformed or not supported by NVRTC */
    RT_NVRTC_ERR_COMPILE = 3, /* the source did not compile: *log holds NVRTC's log */
    RT_NVRTC_ERR_NOMEM = 4,
    RT_NVRTC_ERR_INTERNAL = 5, /* NVRTC failed otherwise; *log says how */
} rt_nvrtc_status;

/* Loads NVRTC (once; later calls return the first result). On failure writes why into
 * err (when non-NULL) and returns RT_NVRTC_ERR_LOAD. */
rt_nvrtc_status rt_nvrtc_load(char *err, size_t errlen);

/* NVRTC's version (nvrtcVersion), loading it if needed. */
rt_nvrtc_status rt_nvrtc_version(int *major, int *minor);

/* A string that names the NVRTC build that rt_nvrtc_load loads (or has loaded): the file's
 * real path, size and modification time. It does not load the library, so a process that
 * only hits the cache never pays for dlopen (about 7 ms). Returns RT_NVRTC_ERR_LOAD with
 * buf "" when no library is found. Use it as the "compiler" part of a cache key. */
rt_nvrtc_status rt_nvrtc_identity(char *buf, size_t len);

/* The options rt_nvrtc_compile passes, joined by spaces, for the cache key's "options"
 * part. The same arguments give the same string. Returns RT_NVRTC_ERR_ARCH for a malformed
 * arch, RT_NVRTC_ERR_NOMEM when buf is too small (size 256 is always enough). */
rt_nvrtc_status rt_nvrtc_options_string(const char *arch, int fast_math, int want_ptx, char *buf,
                                        size_t len);

/* 1 if `arch` is written as an architecture ("sm_90", "sm_90a", "sm_100f", "compute_90"),
 * whether or not NVRTC has it; 0 if malformed. Needs no NVRTC. */
int rt_nvrtc_arch_valid(const char *arch);
/* 1 if NVRTC can compile for `arch` ("sm_90", "sm_90a", "compute_90"), 0 if not or if the
 * string is malformed, -1 if NVRTC cannot be loaded. An NVRTC too old to list its
 * architectures (before 11.2) answers 1 for any well-formed arch. */
int rt_nvrtc_arch_supported(const char *arch);

/* The architecture to build for a device of compute capability major.minor: the device's own
 * when NVRTC supports it (*use_ptx = 0, arch "sm_XY"), else the newest virtual architecture
 * NVRTC has that the device can JIT (*use_ptx = 1, arch "compute_XY"). RT_NVRTC_ERR_ARCH if
 * NVRTC supports nothing older than the device. */
rt_nvrtc_status rt_nvrtc_pick_arch(int major, int minor, char *arch, size_t len, int *use_ptx);

/* Compiles CUDA C `src` (named `name` in messages; NULL: "fusec.cu") for `arch`, written
 * "sm_XY" (a suffix letter allowed): a cubin for that real architecture, or with want_ptx
 * PTX for the matching virtual one (compute_XY). fast_math adds --use_fast_math.
 * On RT_NVRTC_OK *out is the image (malloc'd, caller frees) of *outlen bytes; PTX is also
 * NUL-terminated, the NUL not counted. *log, when log is non-NULL, is set to NULL or to a
 * malloc'd NUL-terminated text: NVRTC's log on failure (the compiler's messages), its
 * warnings (if any) on success, or what went wrong for the other statuses. */
rt_nvrtc_status rt_nvrtc_compile(const char *src, const char *name, const char *arch, int fast_math,
                                 int want_ptx, void **out, size_t *outlen, char **log);

/* A constant description of a status; never NULL. */
const char *rt_nvrtc_status_string(rt_nvrtc_status s);

#endif
