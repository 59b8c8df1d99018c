/* tests/unit/test_cpu_target.c: the CPUs the CPU backend compiles for (runtime/cpu/cpu_target.c).
 * - The table against clang: for every entry, the features RT_CPU_FEATURES lists that
 *   `clang -march=CPU` (with the entry's feature changes as -m flags) defines macros for are
 *   exactly the entry's needs: fewer would let code run on a host that lacks an instruction
 *   it uses, more would refuse hosts that can run it.
 * - The host's features, read with CPUID, against the flags Linux lists in /proc/cpuinfo.
 * - Names: NULL, "", "native" and "host" mean the host; FUSEC_CPU is read when the option is
 *   not set, and the option wins over it; an unknown name is refused, naming the known ones.
 * - Through the API: gelu built for every entry; where the host has what the entry needs it
 *   runs and matches the reference, elsewhere the launch is refused (FUSEC_ERR_UNSUPPORTED,
 *   results untouched); each CPU its own cache entry; a bad arch refused on every target. */
#include "runtime/cpu/cpu_target.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_util.h"
#include "check.h"
#include "fusec.h"

/* clang's predefined macro for LLVM feature `f`. */
static void macro_of(const char *f, char *buf, size_t len) {
    if (!strcmp(f, "sahf")) {
        snprintf(buf, len, "__LAHF_SAHF__");
    } else if (!strcmp(f, "cx16")) {
        snprintf(buf, len, "__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16");
    } else {
        size_t n = (size_t)snprintf(buf, len, "__");
        for (const char *p = f; *p && n + 3 < len; p++)
            buf[n++] = *p == '.' ? '_' : (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        snprintf(buf + n, len - n, "__");
    }
}

/* Whether `line` defines macro m ("#define M 1"). */
static int defines(const char *text, const char *m) {
    char pat[96];
    snprintf(pat, sizeof pat, "#define %s ", m);
    return strstr(text, pat) != NULL;
}

/* clang's macros for t: -march, and the entry's feature changes as -m / -mno- flags. NULL when
 * clang does not know the CPU (clang 14 has no znver4: then its processor, llvm_cpu). */
static char *clang_macros(const rt_cpu_target *t) {
    char cmd[1024];
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "clang -march=%s", t->llvm_cpu);
    char feats[512];
    snprintf(feats, sizeof feats, "%s", t->llvm_features);
    for (char *tok = strtok(feats, ","); tok; tok = strtok(NULL, ","))
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " -m%s%s", tok[0] == '-' ? "no-" : "",
                              tok + 1);
    snprintf(cmd + n, sizeof cmd - n, " -dM -E -x c /dev/null 2>/dev/null");
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *text = calloc(1, cap);
    while (text && len + 1 < cap) {
        size_t got = fread(text + len, 1, cap - 1 - len, p);
        if (!got) break;
        len += got;
    }
    if (pclose(p) != 0 || !text || !strstr(text, "__x86_64__")) {
        free(text);
        return NULL;
    }
    return text;
}

static void test_table_against_clang(void) {
    int compared = 0;
    for (int i = 0; i < rt_cpu_target_count(); i++) {
        const rt_cpu_target *t = rt_cpu_target_at(i);
        char *text = clang_macros(t);
        if (!text) {
            printf("clang does not know %s: not compared\n", t->name);
            continue;
        }
        for (int f = 0; f < RT_CPU_F_COUNT; f++) {
            char m[64];
            macro_of(rt_cpu_feature_name(f), m, sizeof m);
            int clang_has = defines(text, m), needs = (int)(t->needs >> f & 1);
            CHECK_MSG(clang_has == needs, "%s: clang %s %s, the table %s it", t->name,
                      clang_has ? "defines" : "does not define", m, needs ? "needs" : "omits");
        }
        /* what the code generator is told agrees with the features */
        int vb = t->needs >> RT_CPU_F_AVX512F & 1 ? 64 : t->needs >> RT_CPU_F_AVX & 1 ? 32 : 16;
        CHECK_MSG(t->vector_bytes == vb, "%s: %d-byte vectors", t->name, t->vector_bytes);
        CHECK_MSG(t->f16c == (int)(t->needs >> RT_CPU_F_F16C & 1), "%s: f16c", t->name);
        compared++;
        free(text);
    }
    printf("%d of %d CPUs compared with clang\n", compared, rt_cpu_target_count());
}

/* Linux's /proc/cpuinfo name of LLVM feature f. */
static const char *cpuinfo_name(const char *f) {
    static const char *const map[][2] = {
        {"sse3", "pni"},
        {"pclmul", "pclmulqdq"},
        {"sse4.1", "sse4_1"},
        {"sse4.2", "sse4_2"},
        {"bmi", "bmi1"},
        {"sha", "sha_ni"},
        {"sahf", "lahf_lm"},
        {"lzcnt", "abm"},
        {"prfchw", "3dnowprefetch"},
        {"avx512vbmi2", "avx512_vbmi2"},
        {"avx512vnni", "avx512_vnni"},
        {"avx512bitalg", "avx512_bitalg"},
        {"avx512vpopcntdq", "avx512_vpopcntdq"},
        {"avx512fp16", "avx512_fp16"},
        {"avx512bf16", "avx512_bf16"},
        {"avxvnni", "avx_vnni"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i][0], f)) return map[i][1];
    return f;
}

static void test_host_against_cpuinfo(void) {
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp) {
        printf("no /proc/cpuinfo: the host's features are not compared\n");
        return;
    }
    static char line[1 << 14];
    char flags[sizeof line + 2] = "";
    while (fgets(line, sizeof line, fp))
        if (!strncmp(line, "flags", 5)) {
            snprintf(flags, sizeof flags, " %s ", strchr(line, ':') + 1);
            break;
        }
    fclose(fp);
    for (char *p = flags; *p; p++)
        if (*p == '\n') *p = ' ';
    rt_cpu_features host = rt_cpu_host_features();
    for (int f = 0; f < RT_CPU_F_COUNT; f++) {
        char pat[64];
        snprintf(pat, sizeof pat, " %s ", cpuinfo_name(rt_cpu_feature_name(f)));
        int linux_has = strstr(flags, pat) != NULL, ours = (int)(host >> f & 1);
        CHECK_MSG(linux_has == ours, "host feature %s: /proc/cpuinfo %s, CPUID %s",
                  rt_cpu_feature_name(f), linux_has ? "has it" : "lacks it",
                  ours ? "has it" : "lacks it");
    }
    printf("host: %s\n", rt_cpu_host_id());
}

static void test_names(void) {
    const rt_cpu_target *t = (void *)1;
    char err[512] = "";
    unsetenv("FUSEC_CPU");
    const char *host_names[] = {NULL, "", "native", "host"};
    for (int i = 0; i < 4; i++)
        CHECK(rt_cpu_target_resolve(host_names[i], &t, err, sizeof err) == 0 && t == NULL);
    CHECK(rt_cpu_target_resolve("x86-64-v3", &t, err, sizeof err) == 0 && t &&
          !strcmp(t->name, "x86-64-v3"));
    CHECK(rt_cpu_target_resolve("skylake", &t, err, sizeof err) == -1 && t == NULL);
    CHECK_MSG(strstr(err, "'skylake' is not a CPU fusec knows") && strstr(err, "x86-64-v2") &&
                  strstr(err, "sapphirerapids"),
              "%s", err);
    setenv("FUSEC_CPU", "znver3", 1);
    CHECK(rt_cpu_target_resolve(NULL, &t, err, sizeof err) == 0 && t && !strcmp(t->name, "znver3"));
    CHECK(rt_cpu_target_resolve("x86-64-v2", &t, err, sizeof err) == 0 && t &&
          !strcmp(t->name, "x86-64-v2"));
    setenv("FUSEC_CPU", "banana", 1);
    CHECK(rt_cpu_target_resolve(NULL, &t, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "FUSEC_CPU 'banana'") != NULL, "%s", err);
    unsetenv("FUSEC_CPU");
}

static const char *GELU =
    "fn gelu(x: f32[N]) -> f32[N] {\n"
    "    return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)));\n"
    "}\n";

static fusec_module *compile_for(const char *cpu, const char *dir, fusec_status *st) {
    fusec_options o;
    fusec_options_init(&o);
    o.target = FUSEC_TARGET_CPU;
    o.cpu = cpu;
    o.cache_dir = dir;
    fusec_module *m = NULL;
    *st = fusec_module_compile_string("gelu.fuse", GELU, strlen(GELU), &o, &m);
    return m;
}

/* gelu for every CPU: run where the host can, refused elsewhere. */
static void test_every_cpu(const char *dir) {
    enum { N = 1037 };
    static float x[N], y[N], want[N];
    uint32_t s = 99;
    for (int i = 0; i < N; i++) {
        x[i] = api_frand(&s, 4.0f);
        double v = x[i];
        want[i] = (float)(0.5 * v * (1.0 + tanh(0.7978845608 * (v + 0.044715 * v * v * v))));
    }
    int ran = 0, refused = 0;
    for (int i = 0; i < rt_cpu_target_count(); i++) {
        const rt_cpu_target *t = rt_cpu_target_at(i);
        fusec_status st;
        fusec_module *m = compile_for(t->name, dir, &st);
        CHECK_MSG(st == FUSEC_OK, "%s: %s", t->name, fusec_module_message(m));
        CHECK_MSG(fusec_module_build(m) == FUSEC_OK, "%s: %s", t->name, fusec_module_message(m));
        fusec_function *f = api_fn(m, "gelu");
        memset(y, 0xff, sizeof y);
        fusec_tensor in = {x, FUSEC_F32, 1, {N}, NULL}, out = {y, FUSEC_F32, 1, {N}, NULL};
        st = fusec_launch(f, &in, 1, &out, 1, NULL);
        char lack[256];
        if (rt_cpu_target_missing(t, lack, sizeof lack) == 0) {
            CHECK_MSG(st == FUSEC_OK, "%s: %s", t->name, fusec_module_message(m));
            int wrong = 0;
            for (int k = 0; k < N; k++)
                wrong += !(fabsf(y[k] - want[k]) <= 1e-5f * (1 + fabsf(want[k])));
            CHECK_MSG(wrong == 0, "%s: %d wrong values", t->name, wrong);
            ran++;
        } else {
            CHECK_MSG(st == FUSEC_ERR_UNSUPPORTED && strstr(fusec_module_message(m), lack) &&
                          strstr(fusec_module_message(m), "never run here"),
                      "%s: status %d, %s", t->name, (int)st, fusec_module_message(m));
            uint32_t u;
            memcpy(&u, &y[N / 2], sizeof u);
            CHECK_MSG(u == 0xffffffffu, "%s: a refused launch wrote its result", t->name);
            refused++;
        }
        fusec_module_free(m);
    }
    printf("gelu: ran for %d CPUs, refused for %d\n", ran, refused);
    fusec_cache_info info;
    CHECK(fusec_cache_stats(dir, &info) == FUSEC_OK);
    CHECK_MSG(info.entries == (uint64_t)rt_cpu_target_count(), "%llu cache entries for %d CPUs",
              (unsigned long long)info.entries, rt_cpu_target_count());
}

static void test_bad_options(const char *dir) {
    fusec_status st;
    fusec_module *m = compile_for("pentium4-banana", dir, &st);
    CHECK_MSG(st == FUSEC_ERR_INVALID_ARGUMENT &&
                  strstr(fusec_module_message(m), "'pentium4-banana' is not a CPU fusec knows"),
              "%d %s", (int)st, fusec_module_message(m));
    /* a careless caller goes on: a status, not a crash */
    fusec_function *f = NULL;
    if (fusec_module_function(m, "gelu", &f) == FUSEC_OK) {
        float x[3] = {1, 2, 3}, y[3];
        fusec_tensor in = {x, FUSEC_F32, 1, {3}, NULL}, out = {y, FUSEC_F32, 1, {3}, NULL};
        st = fusec_launch(f, &in, 1, &out, 1, NULL);
        CHECK_MSG(st == FUSEC_ERR_SOURCE, "a launch after a failed compile: %d %s", (int)st,
                  fusec_module_message(m));
    }
    fusec_module_free(m);
    fusec_target targets[] = {FUSEC_TARGET_CPU, FUSEC_TARGET_REF, FUSEC_TARGET_AUTO};
    for (int i = 0; i < 3; i++) {
        fusec_options o;
        fusec_options_init(&o);
        o.target = targets[i];
        o.arch = "sm_banana";
        m = NULL;
        st = fusec_module_compile_string("gelu.fuse", GELU, strlen(GELU), &o, &m);
        CHECK_MSG(st == FUSEC_ERR_INVALID_ARGUMENT &&
                      strstr(fusec_module_message(m), "'sm_banana' is not a CUDA architecture"),
                  "target %d: %d %s", (int)targets[i], (int)st, fusec_module_message(m));
        fusec_module_free(m);
    }
}

int main(void) {
    test_names();
#if defined(__x86_64__)
    test_table_against_clang();
    test_host_against_cpuinfo();
#endif
    char dir[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fusec-cpu-target-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_bad_options(dir);
    fusec_status st;
    fusec_module *probe = compile_for(NULL, dir, &st);
    fusec_module_free(probe);
    if (st == FUSEC_ERR_UNSUPPORTED)
        printf("no CPU backend in this build: gelu is not built for every CPU\n");
    else
        test_every_cpu(dir);
    fusec_cache_clear(dir, NULL);
    rmdir(dir);
    return check_exit("test_cpu_target");
}
