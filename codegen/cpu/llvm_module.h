/* codegen/cpu/llvm_module.h: the CPU code generator's entry points, for their one caller, the JIT
 * (driver/cpu/cpu_jit.c): a planned module (codegen/cpu/llvm.h) generated into an LLVM module,
 * and the generator's passes over it before and after LLVM's O3 pipeline.
 * The generator's own shared state and emitters are codegen/cpu/llvm_gen.h, which no other
 * layer includes. */
#ifndef FUSEC_CODEGEN_LLVM_MODULE_H
#define FUSEC_CODEGEN_LLVM_MODULE_H

#include <llvm-c/Core.h>

#include "codegen/cpu/llvm_internal.h"

/* Generates the functions of a planned module into `mod` (of context `ctx`): the task
 * functions named by the metadata, with external linkage, and declarations of the
 * llvm_math_* functions they call (to be linked from the math bitcode). 0, or -1 with err. */
int llvm_gen_module(LLVMContextRef ctx, LLVMModuleRef mod, const llvm_module_meta *meta,
                    const llvm_gen_options *opt, ir_arena *arena, char *err, size_t errlen);

/* Generates into mod the short rows' copy function `name` (LLVM_NARROW_COPY_PREFIX...), with
 * external linkage, for the target of opt: what modules built with opt->shared_copies call. 0,
 * or -1 with a message in err (a name that is no copy function). */
int llvm_gen_narrow_copy(LLVMContextRef ctx, LLVMModuleRef mod, const llvm_gen_options *opt,
                         const char *name, ir_arena *arena, char *err, size_t errlen);

/* Before the O3 pipeline, with the math bitcode linked: in each kernel function that calls more
 * math than a budget, the calls of the largest math functions go to out-of-line copies, scalar
 * and vector (for vectors of vector_bytes and half that; none under two lanes), instead of
 * being inlined, and its loops marked LG_LOOP_FREE keep fewer vectors in flight where those
 * calls are many (llvm_outline.c). */
void llvm_outline_math(LLVMModuleRef mod, int vector_bytes);

/* Whether fn is a function of the math: linked from the bitcode (llvm_math_...) or an
 * out-of-line copy of one. Any kernel may call it; no kernel owns it (a build split across
 * threads gives each part its own copy, driver/cpu/cpu_jit.c). */
int llvm_is_math_fn(LLVMValueRef fn);

/* After the O3 pipeline: the hints made into prefetches of their vectors' first lanes (in
 * scalar loops, removed). The hint's declarations are left unused; the caller's globaldce pass
 * deletes them. */
void llvm_lower_prefetch_hints(LLVMModuleRef mod);

/* After the O3 pipeline: lets the functions the generator kept (lg_keep_used) go; the
 * caller's globaldce pass deletes those unused. */
void llvm_release_used(LLVMModuleRef mod);

#endif
