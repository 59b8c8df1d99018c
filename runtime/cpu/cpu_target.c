/* runtime/cpu/cpu_target.c: the table of CPUs and levels the CPU backend compiles for by name,
 * and the host CPU as CPUID describes it (see cpu_target.h).
 *
 * Each entry's features are those clang 14 defines macros for with -march=NAME, restricted
 * to RT_CPU_FEATURES (tests/unit/test_cpu_target.c compares the two). Two entries differ from
 * LLVM 14's own processors, each said where it is.
 */
#include "runtime/cpu/cpu_target.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(x) ((rt_cpu_features)1 << RT_CPU_F_##x)
/* the x86-64 psABI's levels */
#define LEVEL2 (F(SSE3) | F(SSSE3) | F(SSE41) | F(SSE42) | F(POPCNT) | F(CX16) | F(SAHF))
#define LEVEL3                                                                                     \
    (LEVEL2 | F(AVX) | F(AVX2) | F(BMI) | F(BMI2) | F(F16C) | F(FMA) | F(LZCNT) | F(MOVBE) |       \
     F(XSAVE))
#define LEVEL4 (LEVEL3 | F(AVX512F) | F(AVX512BW) | F(AVX512CD) | F(AVX512DQ) | F(AVX512VL))
/* Intel's server cores */
#define SKX (LEVEL4 | F(ADX) | F(AES) | F(PCLMUL) | F(PRFCHW))
#define ICX                                                                                        \
    (SKX | F(AVX512IFMA) | F(AVX512VBMI) | F(AVX512VBMI2) | F(AVX512VNNI) | F(AVX512BITALG) |      \
     F(AVX512VPOPCNTDQ) | F(GFNI) | F(VAES) | F(VPCLMULQDQ) | F(SHA))
#define SPR (ICX | F(AVX512BF16) | F(AVX512FP16) | F(AVXVNNI))
/* AMD's Zen cores */
#define ZEN3                                                                                       \
    (LEVEL3 | F(ADX) | F(AES) | F(PCLMUL) | F(PRFCHW) | F(SHA) | F(SSE4A) | F(VAES) | F(VPCLMULQDQ))
#define ZEN4                                                                                       \
    (ZEN3 | F(AVX512F) | F(AVX512BW) | F(AVX512CD) | F(AVX512DQ) | F(AVX512VL) | F(AVX512IFMA) |   \
     F(AVX512VBMI) | F(AVX512VBMI2) | F(AVX512VNNI) | F(AVX512BITALG) | F(AVX512VPOPCNTDQ) |       \
     F(AVX512BF16) | F(GFNI))

static const rt_cpu_target targets[] = {
    {"x86-64", "x86-64", "", 16, 0, 0},
    {"x86-64-v2", "x86-64-v2", "", 16, 0, LEVEL2},
    {"x86-64-v3", "x86-64-v3", "", 32, 1, LEVEL3},
    {"x86-64-v4", "x86-64-v4", "", 64, 1, LEVEL4},
    {"skylake-avx512", "skylake-avx512", "", 64, 1, SKX},
    {"icelake-server", "icelake-server", "", 64, 1, ICX},
    /* LLVM 14 gives sapphirerapids AVX512-VP2INTERSECT, which Sapphire Rapids does not have
     * (later LLVMs removed it) */
    {"sapphirerapids", "sapphirerapids", "-avx512vp2intersect", 64, 1, SPR},
    {"znver3", "znver3", "", 32, 1, ZEN3},
    /* LLVM 14 has no znver4 (LLVM 16 added it): Zen 3's processor (its scheduling model
     * and tuning) with Zen 4's AVX-512 */
    {"znver4", "znver3",
     "+avx512f,+avx512bw,+avx512cd,+avx512dq,+avx512vl,+avx512ifma,+avx512vbmi,+avx512vbmi2,"
     "+avx512vnni,+avx512bitalg,+avx512vpopcntdq,+avx512bf16,+gfni",
     64, 1, ZEN4},
};
#define NTARGETS ((int)(sizeof targets / sizeof targets[0]))

static const char *const feature_names[] = {
#define RT_CPU_F_NAME(id, name, word, bit, state) name,
    RT_CPU_FEATURES(RT_CPU_F_NAME)
#undef RT_CPU_F_NAME
};

int rt_cpu_target_count(void) {
    return NTARGETS;
}

const rt_cpu_target *rt_cpu_target_at(int i) {
    return i >= 0 && i < NTARGETS ? &targets[i] : NULL;
}

const rt_cpu_target *rt_cpu_target_find(const char *name) {
    for (int i = 0; name && i < NTARGETS; i++)
        if (!strcmp(targets[i].name, name)) return &targets[i];
    return NULL;
}

static pthread_once_t names_once = PTHREAD_ONCE_INIT;
static char names[512];

static void names_init(void) {
    size_t used = 0;
    for (int i = 0; i < NTARGETS && used < sizeof names; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                                 targets[i].name);
}

const char *rt_cpu_target_names(void) {
    pthread_once(&names_once, names_init);
    return names;
}

int rt_cpu_target_resolve(const char *name, const rt_cpu_target **out, char *err, size_t errlen) {
    *out = NULL;
    const char *from = "CPU";
    if (!name || !*name) {
        name = getenv("FUSEC_CPU");
        from = "FUSEC_CPU";
    }
    if (!name || !*name || !strcmp(name, "native") || !strcmp(name, "host")) return 0;
#if !defined(__x86_64__)
    snprintf(err, errlen, "%s '%s': compiling for a named CPU needs an x86-64 host", from, name);
    return -1;
#else
    *out = rt_cpu_target_find(name);
    if (*out) return 0;
    snprintf(err, errlen, "%s '%s' is not a CPU fusec knows (native, %s)", from, name,
             rt_cpu_target_names());
    return -1;
#endif
}

const char *rt_cpu_feature_name(int f) {
    return f >= 0 && f < RT_CPU_F_COUNT ? feature_names[f] : "?";
}

int rt_cpu_target_missing(const rt_cpu_target *t, char *buf, size_t len) {
    rt_cpu_features lack = t->needs & ~rt_cpu_host_features();
    int n = 0;
    size_t used = 0;
    if (len) buf[0] = 0;
    for (int f = 0; f < RT_CPU_F_COUNT; f++) {
        if (!(lack >> f & 1)) continue;
        if (used < len)
            used +=
                (size_t)snprintf(buf + used, len - used, "%s%s", n ? " " : "", feature_names[f]);
        n++;
    }
    return n;
}

/* ---- the host ------------------------------------------------------------------------ */

static struct {
    pthread_once_t once;
    char id[256];
    rt_cpu_features features;
    int f16c, vector_bytes;
} host = {.once = PTHREAD_ONCE_INIT, .f16c = 1, .vector_bytes = 16};

#if defined(__x86_64__)
#include <cpuid.h>

/* Bit `bit` of CPUID word `word`, usable when the OS saves the register state it needs. */
static int has(const unsigned *words, int word, int bit, int state, int avx, int avx512) {
    if (state == 1 && !avx) return 0;
    if (state == 2 && !avx512) return 0;
    return (int)(words[word] >> bit & 1);
}

static void host_init(void) {
    unsigned a, b, c, d, max, ext = 0;
    char vendor[13] = "";
    if (!__get_cpuid(0, &max, &b, &c, &d)) return;
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    unsigned l1a = 0, l1d = 0, e1d = 0, w[6] = {0};
    __get_cpuid(1, &l1a, &b, &w[RT_CPUID_1C], &l1d);
    if (max >= 7) {
        __cpuid_count(7, 0, a, w[RT_CPUID_7B], w[RT_CPUID_7C], w[RT_CPUID_7D]);
        if (a >= 1) __cpuid_count(7, 1, w[RT_CPUID_71A], b, c, d);
    }
    __get_cpuid(0x80000000, &ext, &b, &c, &d);
    if (ext >= 0x80000001) __get_cpuid(0x80000001, &a, &b, &w[RT_CPUID_E1C], &e1d);
    /* the OS's saved vector state (XCR0): whether AVX / AVX-512 registers are usable */
    unsigned long long xcr0 = 0;
    if (w[RT_CPUID_1C] & (1u << 27)) { /* OSXSAVE */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = ((unsigned long long)hi << 32) | lo;
    }
    int avx = (w[RT_CPUID_1C] & (1u << 28)) && (xcr0 & 6) == 6;
    int avx512 = avx && (w[RT_CPUID_7B] & (1u << 16)) && (xcr0 & 0xe0) == 0xe0;
#define RT_CPU_F_HOST(id, name, word, bit, state)                                                  \
    if (has(w, word, bit, state, avx, avx512)) host.features |= F(id);
    RT_CPU_FEATURES(RT_CPU_F_HOST)
#undef RT_CPU_F_HOST
    host.f16c = (host.features & F(F16C)) != 0;
    host.vector_bytes = avx512 ? 64 : avx ? 32 : 16;
    snprintf(host.id, sizeof host.id,
             "x86_64 %s %08x %08x:%08x %08x:%08x:%08x:%08x %08x:%08x xcr0=%llx", vendor, l1a,
             w[RT_CPUID_1C], l1d, w[RT_CPUID_7B], w[RT_CPUID_7C], w[RT_CPUID_7D], w[RT_CPUID_71A],
             w[RT_CPUID_E1C], e1d, xcr0);
}
#else
static void host_init(void) {}
#endif

const char *rt_cpu_host_id(void) {
    pthread_once(&host.once, host_init);
    return host.id;
}

rt_cpu_features rt_cpu_host_features(void) {
    pthread_once(&host.once, host_init);
    return host.features;
}

int rt_cpu_host_f16c(void) {
    pthread_once(&host.once, host_init);
    return host.f16c;
}

int rt_cpu_host_vector_bytes(void) {
    pthread_once(&host.once, host_init);
    return host.vector_bytes;
}
