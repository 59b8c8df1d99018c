/* tests/emu/nvrtc_emu.c: a stand-in NVRTC (loaded through $FUSEC_NVRTC_PATH) that builds the
 * generated CUDA C++ for the host: the C++ compiler with tests/emu/cuda_emu.h included first,
 * into a shared object whose bytes stand for the cubin. Each kernel K gets the entry points
 * the emulating driver calls (K__emu, K__emu_nargs). The "PTX" is the source itself after a
 * header naming its target (EMU_PTX_MARK, then ".target sm_XY"), which the stand-in driver
 * "JIT-compiles" by building it through this library. The architectures it knows are sm_90,
 * or those $FUSEC_EMU_NVRTC_ARCHS lists ("80,89": a toolkit older than the GPU). The
 * compiler, its flags and the header come from the build (EMU_CXX, EMU_CXXFLAGS, EMU_SHIM):
 * one build of this library has kernels built with AddressSanitizer and some of UBSan, as
 * compute-sanitizer's memcheck would run them, another with ThreadSanitizer (racecheck), and
 * whatever loads such kernels must have that sanitizer's run-time library preloaded
 * (tests/CMakeLists.txt). */
#include <ctype.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

typedef struct emu_prog {
    char *src;
    char *image;
    size_t image_len;
    char *log;
    int arch; /* of --gpu-architecture (compute_XY or sm_XY): XY */
} emu_prog;

/* What the PTX of this stand-in starts with (tests/mock/cuda_mock.c knows it). */
#define EMU_PTX_MARK "// fusec emulated PTX\n"

typedef emu_prog *nvrtcProgram;
typedef int nvrtcResult;

API const char *nvrtcGetErrorString(nvrtcResult r) {
    return r == 0 ? "NVRTC_SUCCESS" : r == 6 ? "NVRTC_ERROR_COMPILATION" : "NVRTC_ERROR (emulated)";
}
API nvrtcResult nvrtcVersion(int *major, int *minor) {
    *major = 13;
    *minor = 0;
    return 0;
}
/* The architectures this NVRTC knows, into a (up to 32): sm_90, or $FUSEC_EMU_NVRTC_ARCHS's. */
static int known_archs(int *a) {
    const char *e = getenv("FUSEC_EMU_NVRTC_ARCHS");
    int n = 0;
    for (const char *p = e && *e ? e : "90"; *p && n < 32; p += strcspn(p, ","), p += *p == ',')
        a[n++] = atoi(p);
    return n;
}
API nvrtcResult nvrtcGetNumSupportedArchs(int *n) {
    int a[32];
    *n = known_archs(a);
    return 0;
}
API nvrtcResult nvrtcGetSupportedArchs(int *a) {
    known_archs(a);
    return 0;
}
API nvrtcResult nvrtcCreateProgram(nvrtcProgram *p, const char *src, const char *name, int nh,
                                   const char *const *h, const char *const *hn) {
    (void)name, (void)nh, (void)h, (void)hn;
    emu_prog *e = calloc(1, sizeof *e);
    if (!e || !(e->src = strdup(src))) {
        free(e);
        return 1;
    }
    *p = e;
    return 0;
}
API nvrtcResult nvrtcDestroyProgram(nvrtcProgram *p) {
    if (*p) {
        free((*p)->src);
        free((*p)->image);
        free((*p)->log);
        free(*p);
    }
    *p = NULL;
    return 0;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = '\0';
        *len = (size_t)n;
    }
    return b;
}

/* The source with, after it, each kernel's entry points: a kernel is `__global__ void`,
 * maybe `__launch_bounds__(...)`, then its name. */
static int write_source(const char *path, const char *src) {
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs(src, f);
    fputs("\n/* the emulating driver's entry points */\n", f);
    for (const char *p = strstr(src, "__global__ void"); p; p = strstr(p + 1, "__global__ void")) {
        const char *q = p + strlen("__global__ void");
        while (isspace((unsigned char)*q))
            q++;
        if (!strncmp(q, "__launch_bounds__", 17)) {
            q = strchr(q, ')');
            if (!q) break;
            q++;
            while (isspace((unsigned char)*q))
                q++;
        }
        int n = 0;
        while (isalnum((unsigned char)q[n]) || q[n] == '_')
            n++;
        fprintf(f,
                "extern \"C\" void %.*s__emu(void **a) { fx_emu_call(%.*s, a); }\n"
                "extern \"C\" const int %.*s__emu_nargs = fx_emu_nargs(%.*s);\n",
                n, q, n, q, n, q, n, q);
    }
    return fclose(f) == 0;
}

/* Runs cmd with /bin/sh, as system() would, but without LD_PRELOAD: the sanitizer run time
 * the tests preload into the process that loads the kernels is not for the compiler (under
 * ThreadSanitizer's, /bin/sh itself crashes). 0 where it exits 0. */
static int run_compiler(const char *cmd) {
    extern char **environ;
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = malloc((n + 1) * sizeof *env);
    if (!env) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) env[k++] = environ[i];
    env[k] = NULL;
    char *argv[] = {"sh", "-c", (char *)cmd, NULL};
    pid_t pid;
    int status = -1, r = posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, env);
    free(env);
    if (r != 0) return -1;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

API nvrtcResult nvrtcCompileProgram(nvrtcProgram p, int nopts, const char *const *opts) {
    for (int i = 0; i < nopts; i++) {
        const char *a = strstr(opts[i], "--gpu-architecture=");
        const char *u = a ? strchr(a, '_') : NULL;
        if (u) p->arch = atoi(u + 1);
    }
    char dir[] = "/tmp/fusec-emu-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char src[64], so[64], log[64], cmd[1024];
    snprintf(src, sizeof src, "%s/k.cu", dir);
    snprintf(so, sizeof so, "%s/k.so", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    nvrtcResult r = 6;
    if (write_source(src, p->src)) {
        snprintf(cmd, sizeof cmd,
                 "'%s' -std=c++17 %s -fPIC -shared -w -include '%s' -x c++ '%s' -o '%s' >'%s' 2>&1",
                 EMU_CXX, EMU_CXXFLAGS, EMU_SHIM, src, so, log);
        if (run_compiler(cmd) == 0) p->image = slurp(so, &p->image_len);
        if (p->image) r = 0;
        size_t n = 0;
        free(p->log);
        p->log = slurp(log, &n);
    }
    unlink(src), unlink(so), unlink(log), rmdir(dir);
    return r;
}
API nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, size_t *n) {
    *n = (p->log ? strlen(p->log) : 0) + 1;
    return 0;
}
API nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char *out) {
    strcpy(out, p->log ? p->log : "");
    return 0;
}
API nvrtcResult nvrtcGetPTXSize(nvrtcProgram p, size_t *n) {
    *n = (size_t)snprintf(NULL, 0, EMU_PTX_MARK ".target sm_%d\n%s", p->arch, p->src) + 1;
    return 0;
}
API nvrtcResult nvrtcGetPTX(nvrtcProgram p, char *out) {
    size_t n;
    nvrtcGetPTXSize(p, &n);
    snprintf(out, n, EMU_PTX_MARK ".target sm_%d\n%s", p->arch, p->src);
    return 0;
}
API nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, size_t *n) {
    *n = p->image_len;
    return p->image ? 0 : 1;
}
API nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char *out) {
    if (!p->image) return 1;
    memcpy(out, p->image, p->image_len);
    return 0;
}
