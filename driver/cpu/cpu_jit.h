/* driver/cpu/cpu_jit.h: the CPU backend's use of LLVM, behind a table of functions that the
 * module libfusec_llvm.so provides (driver/cpu/cpu_jit.c, with codegen/cpu/llvm*.c and LLVM
 * itself) and libfusec loads on first need (driver/cpu/cpu_module.c): building a planned module
 * into object code for the host CPU (generate, link the math bitcode, O3, emit), printing its IR,
 * and loading object code into an ORC LLJIT.
 *
 * Why a module: LLVM costs a process 10 to 40 ms to load (static initializers and
 * relocations), which a process that finds all its kernels in the disk cache should not pay
 * (it loads them with runtime/cpu/cpu_elf.c). The module is opened once (dlopen, RTLD_LOCAL) and
 * never closed.
 *
 * One LLJIT per loaded program (rt_jit): its own JITDylib and symbol names, so programs never
 * clash, and freeing it frees the code. Contexts and modules are per build, so builds on
 * several threads at once share nothing but LLVM's one-time target initialization.
 */
#ifndef FUSEC_RUNTIME_CPU_JIT_H
#define FUSEC_RUNTIME_CPU_JIT_H

#include <stddef.h>

#include "codegen/cpu/llvm.h"
#include "driver/aot/aot_write.h"

#define RT_LLVM_API_VERSION  5
#define RT_LLVM_MODULE_NAME  "libfusec_llvm.so"
#define RT_LLVM_MODULE_ENTRY "fusec_llvm_module_api"

/* A build split across threads (driver/cpu/cpu_jit_split.c) is several objects in one blob:
 * RT_JIT_OBJS_MAGIC (8 bytes), the number of objects n (a uint64), their n lengths (uint64s),
 * then each object from an offset that is a multiple of 16 (the loader reads an object's
 * headers in place). Anything else is one object. Only modules built for fusec's own loader
 * (llvm_gen_options.shared_copies) are split: LLVM's JIT and libraries built ahead of time
 * take one object. */
#define RT_JIT_OBJS_MAGIC     "FUSECOBJ"
#define RT_JIT_OBJS_MAX       8 /* parts, at most */
#define RT_JIT_OBJS_HEADER(n) (16 + 8 * (size_t)(n))
#define RT_JIT_OBJS_ALIGN(at) (((at) + 15) & ~(size_t)15)

/* Phase timings of one build, in milliseconds (a split build's optimization and code
 * generation: those of its slowest part). */
typedef struct rt_jit_times {
    double gen, link, opt, emit;
} rt_jit_times;

typedef struct rt_jit rt_jit;

typedef struct rt_llvm_api {
    int version; /* RT_LLVM_API_VERSION */
    size_t size; /* sizeof(rt_llvm_api) as the module was built */
    /* Initializes LLVM's native target once. 0, or -1 with err. */
    int (*init)(char *err, size_t errlen);
    /* The host's CPU name and LLVM feature string ("znver3", "+avx2,..."), after init. */
    const char *(*cpu_name)(void);
    const char *(*cpu_features)(void);
    /* What the host's code generator options need (f16c, x86, vector_bytes) merged into o. */
    void (*host_options)(llvm_gen_options *o);
    /* Object code for `meta`: *obj malloc'd (the caller frees it). 0, or -1 with err. */
    int (*build)(const llvm_module_meta *meta, const llvm_gen_options *o, ir_arena *arena,
                 void **obj, size_t *len, rt_jit_times *times, char *err, size_t errlen);
    /* Object code of the copy function of short rows `name` (LLVM_NARROW_COPY_PREFIX...) for
     * the target of o, with external linkage: what a module built with o->shared_copies calls.
     * *obj malloc'd. 0, or -1 with err. */
    int (*build_copy)(const char *name, const llvm_gen_options *o, ir_arena *arena, void **obj,
                      size_t *len, rt_jit_times *times, char *err, size_t errlen);
    /* The module's LLVM IR as text, as generated (before the math is linked and O3). */
    int (*print_ir)(const llvm_module_meta *meta, const llvm_gen_options *o, ir_arena *arena,
                    ir_buf *out, char *err, size_t errlen);
    /* Loads object code (copied) into a new LLJIT; NULL with err on failure. */
    rt_jit *(*load)(const void *obj, size_t len, char *err, size_t errlen);
    /* The address of symbol `name`, or NULL with err. */
    void *(*lookup)(rt_jit *j, const char *name, char *err, size_t errlen);
    /* Frees the code and the LLJIT. NULL is accepted. */
    void (*free)(rt_jit *j);
    /* The wrapper object of a library built ahead of time (driver/aot/aot_wrappers.c). */
    int (*wrappers)(const rt_aot_wrappers *w, void **obj, size_t *len, char *err, size_t errlen);
} rt_llvm_api;

/* The module's one export (driver/cpu/cpu_jit.c). */
typedef const rt_llvm_api *(*rt_llvm_entry_fn)(void);

/* libfusec's side (driver/cpu/cpu_module.c): the module's table, the module opened on the
 * first call (thread-safe); NULL with a message in err when it cannot be found or loaded.
 * Looked for at $FUSEC_LLVM_MODULE, beside the library or executable, in the build tree and
 * in the install directory. */
const rt_llvm_api *rt_llvm_open(char *err, size_t errlen);
/* 1 when a module file is there to be loaded (a stat, no loading). */
int rt_llvm_present(void);

#endif
