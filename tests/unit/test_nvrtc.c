/* tests/unit/test_nvrtc.c: the NVRTC driver (driver/cuda/nvrtc.c).
 *
 * First, in a child process, NVRTC made unfindable (FUSEC_NVRTC_PATH naming a missing file)
 * must fail cleanly with a message: fusec has to run where the toolkit is absent. In other
 * children, where it is looked for: an NVRTC newer than the driver passed over, NVIDIA's
 * wheels in the site-packages of a loaded library found. Then, if
 * NVRTC is installed here (no GPU needed): cubins for sm_80 and sm_90 (ELF), PTX (.entry),
 * fast math, a syntax error returning NVRTC's log, malformed and unsupported
 * architectures, concurrent compiles from several threads, and the cold compile time of a
 * small element-wise kernel. Exits 77 (skipped) when NVRTC is not installed.
 */
#include "driver/cuda/nvrtc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* What fusec's code generator emits for gelu: element-wise, grid-stride, no headers. */
static const char *GELU =
    "extern \"C\" __global__ void gelu_k0(const float *__restrict__ x, float *__restrict__ y,\n"
    "                                     long long n) {\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x) {\n"
    "        float v = x[i];\n"
    "        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));\n"
    "    }\n"
    "}\n";

static const char *BROKEN = "extern \"C\" __global__ void k(float *y) {\n"
                            "    y[0] = undefined_name + 1.0f\n"
                            "}\n";

static int is_elf(const void *p, size_t n) {
    return n > 4 && memcmp(p, "\177ELF", 4) == 0;
}

/* In a child: NVRTC absent means clean failures, never a crash. */
static int absent_child(void) {
    char err[512];
    setenv("FUSEC_NVRTC_PATH", "/nonexistent/libnvrtc.so", 1);
    if (rt_nvrtc_load(err, sizeof err) != RT_NVRTC_ERR_LOAD) return 1;
    if (!strstr(err, "not found")) return 2;
    char id[64];
    if (rt_nvrtc_identity(id, sizeof id) != RT_NVRTC_ERR_LOAD || id[0]) return 3;
    void *out = (void *)1;
    size_t len = 1;
    char *log = NULL;
    if (rt_nvrtc_compile(GELU, "g.cu", "sm_90", 0, 0, &out, &len, &log) != RT_NVRTC_ERR_LOAD)
        return 4;
    if (out || len || !log || !strstr(log, "not found")) return 5;
    free(log);
    if (rt_nvrtc_arch_supported("sm_90") != -1) return 6;
    int maj = 0, min = 0;
    if (rt_nvrtc_version(&maj, &min) != RT_NVRTC_ERR_LOAD) return 7;
    return 0;
}

static void test_absent(void) {
    pid_t pid = fork();
    if (pid == 0) _exit(absent_child());
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "absent-NVRTC child: status %d\n", status);
}

/* ---- where NVRTC is looked for: each case in a child, as the search runs once a process ---- */

/* dir/rel made, with its directories, as an empty file (the search only looks at files). */
static int touch(const char *dir, const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    return f && fclose(f) == 0;
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[65536];
    size_t n;
    int ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
        ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok;
}

/* In a child with this driver (a path; NULL: none) of this CUDA version and LD_LIBRARY_PATH:
 * whether the NVRTC found is dir/want. */
static void expect_found(const char *what, const char *driver, const char *version,
                         const char *ld_path, const char *dir, const char *want) {
    pid_t pid = fork();
    if (pid == 0) {
        unsetenv("FUSEC_NVRTC_PATH");
        unsetenv("CUDA_HOME");
        unsetenv("CUDA_PATH");
        setenv("FUSEC_CUDA_DRIVER", driver ? driver : "/nonexistent/libcuda.so.1", 1);
        setenv("FUSEC_MOCK_DRIVER_VERSION", version, 1);
        setenv("LD_LIBRARY_PATH", ld_path, 1);
        char id[4200], full[4200];
        rt_nvrtc_identity(id, sizeof id);
        snprintf(full, sizeof full, "nvrtc:%s/%s:", dir, want);
        if (strncmp(id, full, strlen(full)) == 0) _exit(0);
        fprintf(stderr, "%s: found \"%s\", not %s/%s\n", what, id, dir, want);
        _exit(1);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", what);
}

/* An NVRTC newer than the driver is passed over for an older one (its cubins would not load);
 * taken when it is the only one; NVIDIA's wheels in the site-packages of a loaded library (a
 * copy of the stand-in driver, as PyTorch's libraries would be) are found. */
static void test_search(void) {
    const char *build = getenv("FUSEC_BUILD");
    char mock[4096], tmpl[] = "/tmp/fusec-nvrtc-search-XXXXXX", dir[4096], ld[4200];
    snprintf(mock, sizeof mock, "%s/tests/libcuda_mock.so", build ? build : ".");
    if (access(mock, R_OK) != 0 || !mkdtemp(tmpl) || !realpath(tmpl, dir)) {
        printf("test_nvrtc: no stand-in driver (%s): the search order is not checked\n", mock);
        return;
    }
    CHECK(touch(dir, "a/libnvrtc.so.13") && touch(dir, "a/libnvrtc.so.12"));
    CHECK(touch(dir, "c/libnvrtc.so.13"));
    const char *site = "lib/python3.12/site-packages";
    char wheel[4096], probe[4200];
    snprintf(wheel, sizeof wheel, "%s/nvidia/cuda_nvrtc/lib/libnvrtc.so.12", site);
    snprintf(probe, sizeof probe, "%s/%s/probe/libcuda_mock.so", dir, site);
    CHECK(touch(dir, wheel) && touch(dir, probe + strlen(dir) + 1) && copy_file(mock, probe));
    snprintf(ld, sizeof ld, "%s/a", dir);
    expect_found("a CUDA 12.8 driver", mock, "12080", ld, dir, "a/libnvrtc.so.12");
    expect_found("a CUDA 13.0 driver", mock, "13000", ld, dir, "a/libnvrtc.so.13");
    expect_found("no driver", NULL, "13000", ld, dir, "a/libnvrtc.so.13");
    snprintf(ld, sizeof ld, "%s/c", dir);
    expect_found("only a newer NVRTC", mock, "12080", ld, dir, "c/libnvrtc.so.13");
    expect_found("a wheel's NVRTC", probe, "12080", "", dir, wheel);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

static void test_compile(void) {
    void *out;
    size_t len;
    char *log;
    static const char *archs[] = {"sm_80", "sm_90"};
    for (int i = 0; i < 2; i++) {
        CHECK(rt_nvrtc_compile(GELU, "gelu.cu", archs[i], 0, 0, &out, &len, &log) == RT_NVRTC_OK);
        CHECK(is_elf(out, len));
        free(out);
        free(log);
    }
    /* PTX: text, for the virtual architecture, NUL-terminated, NUL not counted */
    CHECK(rt_nvrtc_compile(GELU, "gelu.cu", "sm_90", 0, 1, &out, &len, &log) == RT_NVRTC_OK);
    CHECK(out && strstr(out, ".entry gelu_k0") && strstr(out, ".target sm_90"));
    CHECK(out && strlen(out) == len);
    free(out);
    free(log);
    CHECK(rt_nvrtc_compile(GELU, NULL, "compute_80", 0, 1, &out, &len, &log) == RT_NVRTC_OK);
    CHECK(out && strstr(out, ".target sm_80"));
    free(out);
    free(log);
    /* fast math: tanhf becomes the hardware approximation */
    CHECK(rt_nvrtc_compile(GELU, "gelu.cu", "sm_90", 1, 1, &out, &len, &log) == RT_NVRTC_OK);
    CHECK(out && strstr(out, "tanh.approx.f32"));
    free(out);
    free(log);

    /* a compile error returns the log, with the program's name and line */
    CHECK(rt_nvrtc_compile(BROKEN, "broken.cu", "sm_90", 0, 0, &out, &len, &log) ==
          RT_NVRTC_ERR_COMPILE);
    CHECK(out == NULL && len == 0);
    CHECK(log && strstr(log, "broken.cu(2)") && strstr(log, "undefined_name"));
    free(log);

    /* architectures: malformed strings never reach NVRTC's command line */
    static const char *bad[] = {"sm_9",   "sm90",       "sm_90 --x", "sm_",     "",
                                "sm_90b", "sm_1000000", "gfx90a",    "compute_"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(rt_nvrtc_compile(GELU, "g.cu", bad[i], 0, 0, &out, &len, &log) == RT_NVRTC_ERR_ARCH);
        CHECK(log && strstr(log, "invalid CUDA architecture"));
        free(log);
        CHECK(rt_nvrtc_arch_supported(bad[i]) == 0);
    }
    CHECK(rt_nvrtc_compile(GELU, "g.cu", NULL, 0, 0, &out, &len, &log) == RT_NVRTC_ERR_ARCH);
    free(log);
    /* a cubin needs a real architecture */
    CHECK(rt_nvrtc_compile(GELU, "g.cu", "compute_90", 0, 0, &out, &len, &log) ==
          RT_NVRTC_ERR_ARCH);
    free(log);
    /* well-formed but unsupported (NVRTC 12+ dropped Kepler) */
    CHECK(rt_nvrtc_arch_supported("sm_30") == 0);
    CHECK(rt_nvrtc_compile(GELU, "g.cu", "sm_30", 0, 0, &out, &len, &log) == RT_NVRTC_ERR_ARCH);
    CHECK(log && strstr(log, "does not support sm_30"));
    free(log);
    CHECK(rt_nvrtc_arch_supported("sm_90") == 1);
    CHECK(rt_nvrtc_arch_supported("sm_80") == 1);

    /* picking for a device */
    char arch[32];
    int ptx = -1;
    CHECK(rt_nvrtc_pick_arch(9, 0, arch, sizeof arch, &ptx) == RT_NVRTC_OK);
    CHECK(strcmp(arch, "sm_90") == 0 && ptx == 0);
    CHECK(rt_nvrtc_pick_arch(99, 9, arch, sizeof arch, &ptx) == RT_NVRTC_OK);
    CHECK(strncmp(arch, "compute_", 8) == 0 && ptx == 1);
    CHECK(rt_nvrtc_pick_arch(1, 0, arch, sizeof arch, &ptx) == RT_NVRTC_ERR_ARCH);

    /* the options string is the cache key's: stable and complete */
    char a[256], b[256];
    CHECK(rt_nvrtc_options_string("sm_90", 1, 0, a, sizeof a) == RT_NVRTC_OK);
    CHECK(rt_nvrtc_options_string("sm_90", 1, 0, b, sizeof b) == RT_NVRTC_OK);
    CHECK(strcmp(a, b) == 0 && strstr(a, "--gpu-architecture=sm_90") && strstr(a, "fast_math"));
    CHECK(rt_nvrtc_options_string("sm_90", 0, 1, b, sizeof b) == RT_NVRTC_OK);
    CHECK(strstr(b, "compute_90") && !strstr(b, "fast_math"));
    CHECK(rt_nvrtc_options_string("sm_90", 0, 0, b, 8) == RT_NVRTC_ERR_NOMEM);
    CHECK(rt_nvrtc_options_string("bogus", 0, 0, b, sizeof b) == RT_NVRTC_ERR_ARCH);

    char id[4200];
    CHECK(rt_nvrtc_identity(id, sizeof id) == RT_NVRTC_OK);
    CHECK(strncmp(id, "nvrtc:/", 7) == 0);
    CHECK(strcmp(rt_nvrtc_status_string(RT_NVRTC_ERR_COMPILE), "CUDA compilation failed") == 0);
}

typedef struct job {
    int index, ok;
} job;

static void *compile_thread(void *varg) {
    job *j = varg;
    char src[1024];
    /* distinct sources: nothing is shared but NVRTC itself */
    snprintf(src, sizeof src,
             "extern \"C\" __global__ void k%d(float *y, const float *x, long long n) {\n"
             "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
             "    if (i < n) y[i] = x[i] * %d.0f + expf(x[i]);\n}\n",
             j->index, j->index + 1);
    void *out = NULL;
    size_t len = 0;
    char *log = NULL;
    j->ok = rt_nvrtc_compile(src, "t.cu", "sm_90", 0, 0, &out, &len, &log) == RT_NVRTC_OK &&
            is_elf(out, len);
    free(out);
    free(log);
    return NULL;
}

static void test_threads(void) {
    pthread_t th[4];
    job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (job){i, 0};
        CHECK(pthread_create(&th[i], NULL, compile_thread, &jobs[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].ok);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void test_timing(void) {
    double t[7];
    for (int i = 0; i < 7; i++) {
        void *out;
        size_t len;
        char *log;
        double t0 = now_ms();
        CHECK(rt_nvrtc_compile(GELU, "gelu.cu", "sm_90", 0, 0, &out, &len, &log) == RT_NVRTC_OK);
        t[i] = now_ms() - t0;
        free(out);
        free(log);
    }
    double first = t[0]; /* the process's first compile: NVRTC's own start-up included */
    qsort(t + 1, 6, sizeof t[0], cmp_double);
    char opts[256];
    rt_nvrtc_options_string("sm_90", 0, 0, opts, sizeof opts);
    printf("test_nvrtc: gelu element-wise kernel to an sm_90 cubin (%s): first in the "
           "process %.1f ms, then median %.1f ms, min %.1f ms\n",
           opts, first, (t[3] + t[4]) / 2, t[1]);
}

int main(void) {
    test_absent();
    test_search();
    char err[512];
    double t0 = now_ms();
    if (rt_nvrtc_load(err, sizeof err) != RT_NVRTC_OK) {
        printf("test_nvrtc: skipped: %s\n", err);
        return failures ? 1 : 77;
    }
    double load_ms = now_ms() - t0;
    int maj = 0, min = 0;
    CHECK(rt_nvrtc_version(&maj, &min) == RT_NVRTC_OK && maj >= 11);
    char id[4200];
    rt_nvrtc_identity(id, sizeof id);
    printf("test_nvrtc: NVRTC %d.%d loaded in %.1f ms (%s)\n", maj, min, load_ms, id);
    test_timing();
    test_compile();
    test_threads();
    return check_exit("test_nvrtc");
}
