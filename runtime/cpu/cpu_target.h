/* runtime/cpu/cpu_target.h: the CPUs the CPU backend compiles for. By default the host, which
 * fusec identifies itself with CPUID (no LLVM needed: the identity keys the disk cache); or a
 * CPU or level named by the user (fusec_options.cpu, $FUSEC_CPU, `fusec --cpu=NAME`), from a
 * fixed table: what LLVM is told for it (a processor and feature changes), what the code
 * generator needs to know (vector width, hardware f16 conversion), and the instruction-set
 * features a host must have to run code built for it.
 *
 * Why a table and not any name LLVM knows: code built for a CPU the host is not must never
 * run where it would fault on an unknown instruction, so fusec must know what each name
 * implies, and LLVM-C does not say. The table is checked against clang's own view of each
 * name (tests/unit/test_cpu_target.c).
 */
#ifndef FUSEC_RUNTIME_CPU_TARGET_H
#define FUSEC_RUNTIME_CPU_TARGET_H

#include <stddef.h>
#include <stdint.h>

/* The x86 instruction-set features code may use, as LLVM names them: what a named CPU
 * needs and the host has. Features only intrinsics produce (SGX, AMX, RDRAND, ...) are left
 * out: generated kernels call no intrinsics of theirs.
 * X(id, LLVM name, CPUID word, bit, register state the OS must save: 0, AVX or AVX-512) */
#define RT_CPU_FEATURES(X)                                                                         \
    X(SSE3, "sse3", RT_CPUID_1C, 0, 0)                                                             \
    X(PCLMUL, "pclmul", RT_CPUID_1C, 1, 0)                                                         \
    X(SSSE3, "ssse3", RT_CPUID_1C, 9, 0)                                                           \
    X(FMA, "fma", RT_CPUID_1C, 12, 1)                                                              \
    X(CX16, "cx16", RT_CPUID_1C, 13, 0)                                                            \
    X(SSE41, "sse4.1", RT_CPUID_1C, 19, 0)                                                         \
    X(SSE42, "sse4.2", RT_CPUID_1C, 20, 0)                                                         \
    X(MOVBE, "movbe", RT_CPUID_1C, 22, 0)                                                          \
    X(POPCNT, "popcnt", RT_CPUID_1C, 23, 0)                                                        \
    X(AES, "aes", RT_CPUID_1C, 25, 0)                                                              \
    X(XSAVE, "xsave", RT_CPUID_1C, 26, 0)                                                          \
    X(AVX, "avx", RT_CPUID_1C, 28, 1)                                                              \
    X(F16C, "f16c", RT_CPUID_1C, 29, 1)                                                            \
    X(BMI, "bmi", RT_CPUID_7B, 3, 0)                                                               \
    X(AVX2, "avx2", RT_CPUID_7B, 5, 1)                                                             \
    X(BMI2, "bmi2", RT_CPUID_7B, 8, 0)                                                             \
    X(AVX512F, "avx512f", RT_CPUID_7B, 16, 2)                                                      \
    X(AVX512DQ, "avx512dq", RT_CPUID_7B, 17, 2)                                                    \
    X(ADX, "adx", RT_CPUID_7B, 19, 0)                                                              \
    X(AVX512IFMA, "avx512ifma", RT_CPUID_7B, 21, 2)                                                \
    X(AVX512CD, "avx512cd", RT_CPUID_7B, 28, 2)                                                    \
    X(SHA, "sha", RT_CPUID_7B, 29, 0)                                                              \
    X(AVX512BW, "avx512bw", RT_CPUID_7B, 30, 2)                                                    \
    X(AVX512VL, "avx512vl", RT_CPUID_7B, 31, 2)                                                    \
    X(AVX512VBMI, "avx512vbmi", RT_CPUID_7C, 1, 2)                                                 \
    X(AVX512VBMI2, "avx512vbmi2", RT_CPUID_7C, 6, 2)                                               \
    X(GFNI, "gfni", RT_CPUID_7C, 8, 0)                                                             \
    X(VAES, "vaes", RT_CPUID_7C, 9, 1)                                                             \
    X(VPCLMULQDQ, "vpclmulqdq", RT_CPUID_7C, 10, 1)                                                \
    X(AVX512VNNI, "avx512vnni", RT_CPUID_7C, 11, 2)                                                \
    X(AVX512BITALG, "avx512bitalg", RT_CPUID_7C, 12, 2)                                            \
    X(AVX512VPOPCNTDQ, "avx512vpopcntdq", RT_CPUID_7C, 14, 2)                                      \
    X(AVX512FP16, "avx512fp16", RT_CPUID_7D, 23, 2)                                                \
    X(AVXVNNI, "avxvnni", RT_CPUID_71A, 4, 1)                                                      \
    X(AVX512BF16, "avx512bf16", RT_CPUID_71A, 5, 2)                                                \
    X(SAHF, "sahf", RT_CPUID_E1C, 0, 0)                                                            \
    X(LZCNT, "lzcnt", RT_CPUID_E1C, 5, 0)                                                          \
    X(SSE4A, "sse4a", RT_CPUID_E1C, 6, 0)                                                          \
    X(PRFCHW, "prfchw", RT_CPUID_E1C, 8, 0)

/* The CPUID words the features are read from: leaf 1 ECX, leaf 7 (subleaf 0) EBX ECX EDX,
 * leaf 7 subleaf 1 EAX, leaf 0x80000001 ECX. */
enum { RT_CPUID_1C, RT_CPUID_7B, RT_CPUID_7C, RT_CPUID_7D, RT_CPUID_71A, RT_CPUID_E1C };

enum {
#define RT_CPU_F_ENUM(id, name, word, bit, state) RT_CPU_F_##id,
    RT_CPU_FEATURES(RT_CPU_F_ENUM)
#undef RT_CPU_F_ENUM
        RT_CPU_F_COUNT
};

/* One bit per feature: 1 << RT_CPU_F_x. */
typedef uint64_t rt_cpu_features;

typedef struct rt_cpu_target {
    const char *name;          /* as users name it: "x86-64-v3", "znver3" */
    const char *llvm_cpu;      /* LLVM 14's processor for it */
    const char *llvm_features; /* changes to the processor's features ("" for none) */
    int vector_bytes;          /* the widest vector its code uses */
    int f16c;                  /* it converts f16 in hardware */
    rt_cpu_features needs;     /* what a host must have to run its code */
} rt_cpu_target;

/* The named CPU, or NULL when fusec does not know the name. "native" and "host" are not in
 * the table: they mean the host (see rt_cpu_target_resolve). */
const rt_cpu_target *rt_cpu_target_find(const char *name);
/* The table, for listing and tests. */
int rt_cpu_target_count(void);
const rt_cpu_target *rt_cpu_target_at(int i);
/* The names fusec knows, for messages: "x86-64, x86-64-v2, ...". */
const char *rt_cpu_target_names(void);
/* The CPU a compilation asks for: `name` (an option; NULL or "" for none), else $FUSEC_CPU,
 * else the host. *out is the table's entry, or NULL for the host. 0, or -1 with a message
 * naming the unknown name and the known ones. */
int rt_cpu_target_resolve(const char *name, const rt_cpu_target **out, char *err, size_t errlen);

/* The host: an identity for cache keys (on x86, the vendor, family, model, stepping and
 * CPUID feature words with the OS's vector state, which is everything LLVM's host CPU name
 * and features are derived from; "" when unknown), its features, and what the code generator
 * needs: F16C, and the widest usable vector in bytes. */
const char *rt_cpu_host_id(void);
rt_cpu_features rt_cpu_host_features(void);
int rt_cpu_host_f16c(void);
int rt_cpu_host_vector_bytes(void);

/* LLVM's name of feature `f` (an RT_CPU_F_x), "?" when out of range. */
const char *rt_cpu_feature_name(int f);
/* The features of t the host lacks, by name and space-separated, in buf; their count (0:
 * the host runs t's code). */
int rt_cpu_target_missing(const rt_cpu_target *t, char *buf, size_t len);

#endif
