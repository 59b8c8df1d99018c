/* driver/cuda/nvrtc.c: NVRTC through dlopen: finding the library, compile options, cubin/PTX.
 *
 * The prototypes below are NVRTC's own (nvrtc.h, stable since CUDA 7 and extended in 11.2);
 * declaring them here keeps the toolkit out of the build. All loader state is written once
 * under pthread_once and only read afterwards.
 */
#include "driver/cuda/nvrtc.h"

#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/cuda/cuda_driver.h"

/* ---- NVRTC's ABI ----------------------------------------------------------------------- */

typedef int nvrtcResult; /* an enum in nvrtc.h: 0 is NVRTC_SUCCESS */
typedef struct _nvrtcProgram *nvrtcProgram;
enum {
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_OUT_OF_MEMORY = 1,
    NVRTC_ERROR_INVALID_OPTION = 5,
    NVRTC_ERROR_COMPILATION = 6
};

typedef struct nvrtc_api {
    const char *(*GetErrorString)(nvrtcResult);
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*GetNumSupportedArchs)(int *); /* 11.2+: may be NULL */
    nvrtcResult (*GetSupportedArchs)(int *);    /* 11.2+: may be NULL */
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int,
                                 const char *const *, const char *const *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *); /* 11.1+: may be NULL */
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
} nvrtc_api;

/* ---- finding the library (once) -------------------------------------------------------- */

static const char *const lib_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
                                        "libnvrtc.so"};

static pthread_once_t find_once = PTHREAD_ONCE_INIT;
static char found_path[PATH_MAX]; /* "" when none was found by path */
static char identity[PATH_MAX + 96];
static int found_by_soname; /* only the dynamic loader's search found it */
/* the driver's CUDA major version (0: no driver), and the first library found that is newer:
 * taken only when nothing else is found */
static int driver_major;
static char newer_path[PATH_MAX];
static char newer_identity[PATH_MAX + 96];

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static nvrtc_api api;
static void *lib_handle;
static char load_error[PATH_MAX + 1024];
static int nvrtc_major, nvrtc_minor;
static int num_archs = -1; /* -1: NVRTC cannot list them */
static int archs[128];

/* The CUDA major version of a library file from its real name (libnvrtc.so.12.8.93,
 * libnvrtc.so.13, libnvrtc.so.11.2); 0 when the name does not say. */
static int lib_major(const char *path) {
    const char *base = strrchr(path, '/');
    const char *v = strstr(base ? base + 1 : path, ".so.");
    return v ? atoi(v + 4) : 0;
}

/* Takes dir/name when it is a file whose CUDA major version is not the driver's newer one: the
 * cubins of an NVRTC newer than the driver do not load (a driver runs what its own CUDA version
 * or an older one built), so such a file is only remembered, in case there is no other. */
static int try_file(const char *dir, size_t dirlen, const char *name) {
    char path[PATH_MAX], real[PATH_MAX];
    struct stat st;
    int n = snprintf(path, sizeof path, "%.*s/%s", (int)dirlen, dir, name);
    if (n < 0 || (size_t)n >= sizeof path) return 0;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    if (!realpath(path, real)) return 0;
    int newer = driver_major && lib_major(real) > driver_major;
    if (newer && newer_path[0]) return 0;
    snprintf(newer ? newer_path : found_path, PATH_MAX, "%s", real);
    snprintf(newer ? newer_identity : identity, sizeof identity, "nvrtc:%s:%lld:%lld.%09ld", real,
             (long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
    return !newer;
}

/* Tries every library name in one directory. */
static int try_dir(const char *dir, size_t dirlen) {
    if (dirlen == 0) return 0;
    for (size_t i = 0; i < sizeof lib_names / sizeof lib_names[0]; i++)
        if (try_file(dir, dirlen, lib_names[i])) return 1;
    return 0;
}

static int try_dir_env(const char *var, const char *sub) {
    const char *v = getenv(var);
    char dir[PATH_MAX];
    if (!v || !*v) return 0;
    int n = snprintf(dir, sizeof dir, "%s%s", v, sub);
    return n > 0 && (size_t)n < sizeof dir && try_dir(dir, (size_t)n);
}

/* The site-packages directories that libraries of this process were loaded from (PyTorch's,
 * fusec's own when pip installed it): NVIDIA's wheels put NVRTC below them, in
 * nvidia/cuda_nvrtc/lib (CUDA 12) or nvidia/cu13/lib (CUDA 13), and a machine with PyTorch
 * and no CUDA toolkit has no other. */
typedef struct site_dirs {
    int n;
    char dir[8][PATH_MAX];
} site_dirs;

static int add_site(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    site_dirs *s = data;
    static const char *const marks[] = {"/site-packages/", "/dist-packages/"};
    for (size_t m = 0; m < 2 && info->dlpi_name; m++) {
        const char *hit = strstr(info->dlpi_name, marks[m]);
        if (!hit) continue;
        int len = (int)(hit - info->dlpi_name + (ptrdiff_t)strlen(marks[m]));
        for (int i = 0; i < s->n; i++)
            if ((int)strlen(s->dir[i]) == len && !strncmp(s->dir[i], info->dlpi_name, (size_t)len))
                return 0;
        if (s->n < 8 && len < PATH_MAX)
            snprintf(s->dir[s->n++], PATH_MAX, "%.*s", len, info->dlpi_name);
        return 0;
    }
    return 0;
}

static int try_wheels(void) {
    static site_dirs sites; /* under find_once */
    dl_iterate_phdr(add_site, &sites);
    for (int i = 0; i < sites.n; i++) {
        char pattern[PATH_MAX + 16];
        glob_t g;
        snprintf(pattern, sizeof pattern, "%snvidia/*/lib", sites.dir[i]);
        if (glob(pattern, GLOB_ONLYDIR, NULL, &g) != 0) continue;
        int found = 0;
        for (size_t k = 0; k < g.gl_pathc && !found; k++)
            found = try_dir(g.gl_pathv[k], strlen(g.gl_pathv[k]));
        globfree(&g);
        if (found) return 1;
    }
    return 0;
}

/* Last: the dynamic loader's own search (ld.so.cache). Identifying the file then needs the
 * library loaded; this is the unusual case. */
static int try_soname(void) {
    for (size_t i = 0; i < sizeof lib_names / sizeof lib_names[0]; i++) {
        void *h = dlopen(lib_names[i], RTLD_LAZY | RTLD_LOCAL);
        struct link_map *lm = NULL;
        if (!h) continue;
        if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0] == '/') {
            size_t n = strlen(lm->l_name);
            const char *slash = strrchr(lm->l_name, '/');
            if (n < sizeof found_path &&
                try_file(lm->l_name, (size_t)(slash - lm->l_name), slash + 1)) {
                found_by_soname = 1;
                lib_handle = h; /* kept: load_library reuses it */
                return 1;
            }
        }
        dlclose(h);
    }
    return 0;
}

static int try_system(void) {
    static const char *const dirs[] = {
        "/usr/local/cuda/lib64",      "/usr/local/cuda/lib", "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu", "/usr/lib64",          "/usr/lib"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (try_dir(dirs[i], strlen(dirs[i]))) return 1;
    return 0;
}

static void find_library(void) {
    const char *forced = getenv("FUSEC_NVRTC_PATH");
    if (forced && *forced) {
        struct stat st;
        if (stat(forced, &st) == 0 && S_ISREG(st.st_mode) && realpath(forced, found_path))
            snprintf(identity, sizeof identity, "nvrtc:%s:%lld:%lld.%09ld", found_path,
                     (long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
        return; /* only that file: a missing one means "no NVRTC" */
    }
    driver_major = rt_cuda_driver_version() / 1000;
    const char *ld = getenv("LD_LIBRARY_PATH");
    for (const char *p = ld ? ld : ""; *p;) {
        size_t n = strcspn(p, ":");
        if (try_dir(p, n)) return;
        p += n;
        if (*p == ':') p++;
    }
    if (try_dir_env("CUDA_HOME", "/lib64") || try_dir_env("CUDA_HOME", "/lib") ||
        try_dir_env("CUDA_PATH", "/lib64") || try_dir_env("CUDA_PATH", "/lib") || try_wheels() ||
        try_system() || try_soname())
        return;
    if (newer_path[0]) { /* newer than the driver, but all there is: its load fails later */
        snprintf(found_path, sizeof found_path, "%s", newer_path);
        snprintf(identity, sizeof identity, "%s", newer_identity);
    }
}

/* Resolves one symbol; a function pointer is copied out of the object pointer dlsym returns
 * with memcpy, the conversion ISO C leaves undefined but POSIX guarantees. */
static int sym(void *fp, size_t fpsize, const char *name, int required) {
    void *p = dlsym(lib_handle, name);
    if (!p) {
        if (required)
            snprintf(load_error, sizeof load_error, "NVRTC (%s) lacks %s", found_path, name);
        return !required;
    }
    memcpy(fp, &p, fpsize);
    return 1;
}
#define SYM(field, name, req) sym(&api.field, sizeof api.field, name, req)

static void load_library(void) {
    pthread_once(&find_once, find_library);
    if (!found_path[0]) {
        snprintf(load_error, sizeof load_error,
                 "NVRTC (libnvrtc.so) was not found: install the CUDA toolkit, or set "
                 "CUDA_HOME or FUSEC_NVRTC_PATH");
        return;
    }
    if (!lib_handle) lib_handle = dlopen(found_path, RTLD_NOW | RTLD_LOCAL);
    if (!lib_handle) {
        const char *e = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load NVRTC (%s): %s", found_path,
                 e ? e : "unknown error");
        (void)dlerror(); /* frees the message (cuda_driver.c) */
        return;
    }
    (void)found_by_soname;
    if (!SYM(GetErrorString, "nvrtcGetErrorString", 1) || !SYM(Version, "nvrtcVersion", 1) ||
        !SYM(CreateProgram, "nvrtcCreateProgram", 1) ||
        !SYM(DestroyProgram, "nvrtcDestroyProgram", 1) ||
        !SYM(CompileProgram, "nvrtcCompileProgram", 1) ||
        !SYM(GetProgramLogSize, "nvrtcGetProgramLogSize", 1) ||
        !SYM(GetProgramLog, "nvrtcGetProgramLog", 1) || !SYM(GetPTXSize, "nvrtcGetPTXSize", 1) ||
        !SYM(GetPTX, "nvrtcGetPTX", 1) || !SYM(GetCUBINSize, "nvrtcGetCUBINSize", 0) ||
        !SYM(GetCUBIN, "nvrtcGetCUBIN", 0) ||
        !SYM(GetNumSupportedArchs, "nvrtcGetNumSupportedArchs", 0) ||
        !SYM(GetSupportedArchs, "nvrtcGetSupportedArchs", 0))
        goto fail;
    if (api.Version(&nvrtc_major, &nvrtc_minor) != NVRTC_SUCCESS) {
        snprintf(load_error, sizeof load_error, "NVRTC (%s): nvrtcVersion failed", found_path);
        goto fail;
    }
    int n = 0;
    if (api.GetNumSupportedArchs && api.GetSupportedArchs &&
        api.GetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0 &&
        (size_t)n <= sizeof archs / sizeof archs[0] &&
        api.GetSupportedArchs(archs) == NVRTC_SUCCESS)
        num_archs = n;
    return;
fail:
    /* The handle stays open: unloading a half-initialized C++ library buys nothing. */
    memset(&api, 0, sizeof api);
}

static int loaded(void) {
    pthread_once(&load_once, load_library);
    return api.CompileProgram != NULL;
}

rt_nvrtc_status rt_nvrtc_load(char *err, size_t errlen) {
    if (loaded()) {
        if (err && errlen) err[0] = '\0';
        return RT_NVRTC_OK;
    }
    if (err && errlen) snprintf(err, errlen, "%s", load_error);
    return RT_NVRTC_ERR_LOAD;
}

rt_nvrtc_status rt_nvrtc_version(int *major, int *minor) {
    if (!loaded()) return RT_NVRTC_ERR_LOAD;
    if (major) *major = nvrtc_major;
    if (minor) *minor = nvrtc_minor;
    return RT_NVRTC_OK;
}

rt_nvrtc_status rt_nvrtc_identity(char *buf, size_t len) {
    pthread_once(&find_once, find_library);
    if (buf && len) snprintf(buf, len, "%s", identity);
    return identity[0] ? RT_NVRTC_OK : RT_NVRTC_ERR_LOAD;
}

/* ---- architectures and options -------------------------------------------------------- */

/* Parses "sm_XY", "compute_XY" with an optional suffix letter ("sm_90a", "sm_100f") into the
 * number and the suffix; 0 when malformed. Only these shapes reach NVRTC's command line. */
static int parse_arch(const char *arch, int *num, char *suffix, int *is_virtual) {
    const char *p;
    if (!arch) return 0;
    if (strncmp(arch, "sm_", 3) == 0) {
        p = arch + 3;
        *is_virtual = 0;
    } else if (strncmp(arch, "compute_", 8) == 0) {
        p = arch + 8;
        *is_virtual = 1;
    } else {
        return 0;
    }
    int n = 0, digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 4) {
        n = n * 10 + (*p - '0');
        p++;
        digits++;
    }
    if (digits < 2 || n < 10) return 0;
    *suffix = 0;
    if (*p == 'a' || *p == 'f') *suffix = *p++;
    if (*p) return 0;
    *num = n;
    return 1;
}

int rt_nvrtc_arch_valid(const char *arch) {
    int num, virt;
    char suffix;
    return parse_arch(arch, &num, &suffix, &virt);
}

int rt_nvrtc_arch_supported(const char *arch) {
    int num, virt;
    char suffix;
    if (!parse_arch(arch, &num, &suffix, &virt)) return 0;
    if (!loaded()) return -1;
    if (num_archs < 0) return 1;
    for (int i = 0; i < num_archs; i++)
        if (archs[i] == num) return 1;
    return 0;
}

rt_nvrtc_status rt_nvrtc_pick_arch(int major, int minor, char *arch, size_t len, int *use_ptx) {
    int want = major * 10 + minor, best = -1;
    if (!loaded()) return RT_NVRTC_ERR_LOAD;
    if (num_archs < 0) {
        snprintf(arch, len, "sm_%d", want);
        *use_ptx = 0;
        return RT_NVRTC_OK;
    }
    for (int i = 0; i < num_archs; i++) {
        if (archs[i] == want) {
            snprintf(arch, len, "sm_%d", want);
            *use_ptx = 0;
            return RT_NVRTC_OK;
        }
        if (archs[i] < want && archs[i] > best) best = archs[i];
    }
    if (best < 0) return RT_NVRTC_ERR_ARCH;
    /* PTX for an older virtual architecture is JIT-compiled by the driver for the device. */
    snprintf(arch, len, "compute_%d", best);
    *use_ptx = 1;
    return RT_NVRTC_OK;
}

/* The option list. Chosen for compile speed (measured in tests/unit/test_nvrtc.c):
 * --minimal leaves out the CUDA runtime's device-side declarations that generated kernels
 * never use, and parsing them is a large share of a small kernel's compile time; the other
 * defaults (C++17, -O3 in ptxas, -dopt on) are NVRTC's own. */
static int build_options(const char *arch, int fast_math, int want_ptx, const char **opts,
                         char *archopt, size_t archlen) {
    int num, virt, n = 0;
    char suffix;
    if (!parse_arch(arch, &num, &suffix, &virt)) return -1;
    if (virt && !want_ptx) return -1; /* a cubin needs a real architecture */
    if (suffix)
        snprintf(archopt, archlen, "--gpu-architecture=%s_%d%c", want_ptx ? "compute" : "sm", num,
                 suffix);
    else
        snprintf(archopt, archlen, "--gpu-architecture=%s_%d", want_ptx ? "compute" : "sm", num);
    opts[n++] = archopt;
    opts[n++] = "--minimal";
    /* the math library (codegen/cpu/llvm_math.c, the CPU's) is plain C: its functions are
     * device functions */
    opts[n++] = "-default-device";
    /* no multiply-add contracted but those written as fma: the CPU's sequence of IEEE
     * operations, so its bits (SPEC §5); --use_fast_math contracts again */
    opts[n++] = fast_math ? "--use_fast_math" : "--fmad=false";
    return n;
}

rt_nvrtc_status rt_nvrtc_options_string(const char *arch, int fast_math, int want_ptx, char *buf,
                                        size_t len) {
    const char *opts[8];
    char archopt[64];
    int n = build_options(arch, fast_math, want_ptx, opts, archopt, sizeof archopt);
    if (n < 0) return RT_NVRTC_ERR_ARCH;
    size_t used = 0;
    if (len) buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? " " : "", opts[i]);
        if (w < 0 || (size_t)w >= len - used) return RT_NVRTC_ERR_NOMEM;
        used += (size_t)w;
    }
    return RT_NVRTC_OK;
}

/* ---- compiling ------------------------------------------------------------------------ */

static char *dup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dup_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    return s;
}

/* The program's log as a malloc'd string; NULL when empty or unavailable. */
static char *program_log(nvrtcProgram prog) {
    size_t n = 0;
    if (api.GetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1) return NULL;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    if (api.GetProgramLog(prog, s) != NVRTC_SUCCESS) {
        free(s);
        return NULL;
    }
    s[n] = '\0';
    return s;
}

static int is_blank(const char *s) {
    for (; s && *s; s++)
        if (*s != ' ' && *s != '\n' && *s != '\r' && *s != '\t') return 0;
    return 1;
}

rt_nvrtc_status rt_nvrtc_compile(const char *src, const char *name, const char *arch, int fast_math,
                                 int want_ptx, void **out, size_t *outlen, char **log) {
    const char *opts[8];
    char archopt[64];
    nvrtcProgram prog = NULL;
    rt_nvrtc_status st = RT_NVRTC_ERR_INTERNAL;
    char *text = NULL;
    nvrtcResult r;

    if (log) *log = NULL;
    if (out) *out = NULL;
    if (outlen) *outlen = 0;
    if (!src || !out || !outlen) return RT_NVRTC_ERR_INTERNAL;
    int nopts = build_options(arch, fast_math, want_ptx, opts, archopt, sizeof archopt);
    if (nopts < 0) {
        if (log)
            *log = dup_printf("invalid CUDA architecture '%s' for %s (expected sm_XY%s)",
                              arch ? arch : "(null)", want_ptx ? "PTX" : "a cubin",
                              want_ptx ? " or compute_XY" : "");
        return RT_NVRTC_ERR_ARCH;
    }
    if (!loaded()) {
        if (log) *log = dup_printf("%s", load_error);
        return RT_NVRTC_ERR_LOAD;
    }
    if (!want_ptx && (!api.GetCUBINSize || !api.GetCUBIN)) {
        if (log) *log = dup_printf("NVRTC %d.%d cannot emit cubins", nvrtc_major, nvrtc_minor);
        return RT_NVRTC_ERR_LOAD;
    }
    if (rt_nvrtc_arch_supported(arch) == 0) {
        if (log)
            *log = dup_printf("NVRTC %d.%d does not support %s", nvrtc_major, nvrtc_minor, arch);
        return RT_NVRTC_ERR_ARCH;
    }

    r = api.CreateProgram(&prog, src, name ? name : "fusec.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        if (log) *log = dup_printf("nvrtcCreateProgram: %s", api.GetErrorString(r));
        return r == NVRTC_ERROR_OUT_OF_MEMORY ? RT_NVRTC_ERR_NOMEM : RT_NVRTC_ERR_INTERNAL;
    }
    r = api.CompileProgram(prog, nopts, opts);
    if (r == NVRTC_ERROR_INVALID_OPTION) {
        /* An NVRTC older than 12.4 lacks --minimal; the cache key holds NVRTC's identity, so
         * one library always takes the same path here. */
        const char *fewer[8];
        int m = 0;
        for (int i = 0; i < nopts; i++)
            if (strcmp(opts[i], "--minimal") != 0) fewer[m++] = opts[i];
        api.DestroyProgram(&prog);
        r = api.CreateProgram(&prog, src, name ? name : "fusec.cu", 0, NULL, NULL);
        if (r == NVRTC_SUCCESS) r = api.CompileProgram(prog, m, fewer);
    }
    if (r != NVRTC_SUCCESS) {
        char *plog = prog ? program_log(prog) : NULL;
        if (r == NVRTC_ERROR_COMPILATION) {
            st = RT_NVRTC_ERR_COMPILE;
            text = plog ? plog : dup_printf("%s", api.GetErrorString(r));
        } else {
            st = r == NVRTC_ERROR_OUT_OF_MEMORY ? RT_NVRTC_ERR_NOMEM : RT_NVRTC_ERR_INTERNAL;
            text = dup_printf("nvrtcCompileProgram: %s%s%s", api.GetErrorString(r),
                              plog ? "\n" : "", plog ? plog : "");
            free(plog);
        }
        goto done;
    }

    size_t size = 0;
    r = want_ptx ? api.GetPTXSize(prog, &size) : api.GetCUBINSize(prog, &size);
    if (r != NVRTC_SUCCESS || size == 0) {
        st = RT_NVRTC_ERR_INTERNAL;
        text = dup_printf("NVRTC returned no %s: %s", want_ptx ? "PTX" : "cubin",
                          r != NVRTC_SUCCESS ? api.GetErrorString(r) : "empty image");
        goto done;
    }
    char *img = malloc(size + 1);
    if (!img) {
        st = RT_NVRTC_ERR_NOMEM;
        goto done;
    }
    r = want_ptx ? api.GetPTX(prog, img) : api.GetCUBIN(prog, img);
    if (r != NVRTC_SUCCESS) {
        free(img);
        st = RT_NVRTC_ERR_INTERNAL;
        text = dup_printf("nvrtcGet%s: %s", want_ptx ? "PTX" : "CUBIN", api.GetErrorString(r));
        goto done;
    }
    img[size] = '\0';
    if (want_ptx) size = strlen(img); /* NVRTC counts the terminating NUL */
    *out = img;
    *outlen = size;
    st = RT_NVRTC_OK;
    text = program_log(prog); /* warnings */
    if (text && is_blank(text)) {
        free(text);
        text = NULL;
    }
done:
    if (prog) api.DestroyProgram(&prog);
    if (log)
        *log = text;
    else
        free(text);
    return st;
}

const char *rt_nvrtc_status_string(rt_nvrtc_status s) {
    switch (s) {
    case RT_NVRTC_OK: return "ok";
    case RT_NVRTC_ERR_LOAD: return "NVRTC not available";
    case RT_NVRTC_ERR_ARCH: return "unsupported CUDA architecture";
    case RT_NVRTC_ERR_COMPILE: return "CUDA compilation failed";
    case RT_NVRTC_ERR_NOMEM: return "out of memory";
    case RT_NVRTC_ERR_INTERNAL: return "NVRTC internal error";
    }
    return "unknown NVRTC status";
}
