/* codegen/cpu/llvm_gen.h: the LLVM-C side the CPU code generator's files share: the module-wide
 * state (types, the builder, options) and the value emitters of codegen/cpu/llvm_ops.c, which
 * codegen/cpu/llvm.c calls from its loops.
 *
 * Values inside a kernel are in their compute type: bool i1, i32, i64, float for f16, bf16
 * and f32, double for f64. Memory holds the storage type: bool i8, f16 and bf16 i16.
 */
#ifndef FUSEC_CODEGEN_LLVM_GEN_H
#define FUSEC_CODEGEN_LLVM_GEN_H

#include <llvm-c/Core.h>

#include "codegen/cpu/llvm_module.h"

typedef struct lg_mod {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_half, t_f32, t_f64, t_i8p, t_i64p;
    int fast_math;
    int f16c; /* the target converts f16 in hardware (x86 F16C, or not x86 at all) */
    int x86;
    int vector_bytes;
    int shared_copies; /* llvm_gen_options.shared_copies */
    ir_arena *arena;
    ir_failure fail; /* generation goes on with placeholder values and fails at the end */
    int math_calls;  /* llvm_math_* calls emitted so far (inlined bodies: a loop's weight) */
    /* the short rows' copy functions (codegen/cpu/llvm.c, narrow_copy_fn), by log2 of their
     * elements' bytes and direction (in, out); NULL until a kernel calls one */
    LLVMValueRef narrow_copies[4][2];
} lg_mod;

#define lg_fail(m, ...) ir_failure_set(&(m)->fail, __VA_ARGS__)

LLVMTypeRef lg_storage_type(lg_mod *m, ir_dtype t);
LLVMTypeRef lg_compute_type(lg_mod *m, ir_dtype t);

/* An element of dtype t at ptr (a pointer to its storage type), in its compute type. */
LLVMValueRef lg_load(lg_mod *m, ir_dtype t, LLVMValueRef ptr);
/* Stores a compute-type value v as dtype t (rounding f16/bf16 to nearest even). */
void lg_store(lg_mod *m, ir_dtype t, LLVMValueRef v, LLVMValueRef ptr);
/* A compute-type value v rounded to dtype t and held in the compute type again (f16 and
 * bf16: rounded to nearest even; other dtypes: v itself). */
LLVMValueRef lg_round_to(lg_mod *m, ir_dtype t, LLVMValueRef v);
/* A CONST node in its compute type (16-bit float constants are not rounded). */
LLVMValueRef lg_const(lg_mod *m, const ir_node *n);
/* An element-wise, cast or broadcast node applied to its operands' values. */
LLVMValueRef lg_emit_op(lg_mod *m, const ir_func *f, const ir_node *n, LLVMValueRef *args);

/* x / r, for a float r computed before the loop that divides by it: a reciprocal after r's
 * definition and two exact-or-once-rounded multiplies per element (see llvm_ops.c). */
LLVMValueRef lg_fdiv_invariant(lg_mod *m, LLVMValueRef x, LLVMValueRef r);

/* Reductions. The accumulator type of reduction node n; its identity; x (an operand value)
 * mapped into accumulator space; two accumulators combined; and the finished value in the
 * node's compute type (count: the number of reduced elements, for mean). sum_like: float
 * sums and products, which are accumulated in blocks for accuracy. */
LLVMTypeRef lg_red_type(lg_mod *m, const ir_func *f, const ir_node *n);
LLVMValueRef lg_red_identity(lg_mod *m, const ir_func *f, const ir_node *n);
LLVMValueRef lg_red_pre(lg_mod *m, const ir_func *f, const ir_node *n, LLVMValueRef x);
LLVMValueRef lg_red_combine(lg_mod *m, const ir_func *f, const ir_node *n, LLVMValueRef acc,
                            LLVMValueRef x);
LLVMValueRef lg_red_post(lg_mod *m, const ir_func *f, const ir_node *n, LLVMValueRef acc,
                         LLVMValueRef count);

/* Float max and min in scalar sweeps accumulate in LG_RED_PARTS parts (see llvm_ops.c):
 * the number of parts of n (1: the accumulator above), each part's identity, x mapped into
 * part space, x combined into part k, and the parts made into the single accumulator's key. */
#define LG_RED_PARTS 3
int lg_red_nparts(lg_mod *m, const ir_func *f, const ir_node *n);
LLVMValueRef lg_red_part_identity(lg_mod *m, const ir_func *f, const ir_node *n, int k);
LLVMValueRef lg_red_part_pre(lg_mod *m, const ir_func *f, const ir_node *n, LLVMValueRef x);
LLVMValueRef lg_red_part_combine(lg_mod *m, const ir_func *f, const ir_node *n, int k,
                                 LLVMValueRef acc, LLVMValueRef x);
LLVMValueRef lg_red_parts_key(lg_mod *m, const ir_func *f, const ir_node *n,
                              const LLVMValueRef *parts);

/* A loop ID (for a loop's back edge, as "llvm.loop" metadata) that asks for vectorization
 * (which also allows the vectorizer to reorder the loop's float reductions) or forbids it (on
 * 0); with interleave > 0, that many vectors in flight (0: LLVM's choice), and with width > 0
 * as well, vectors of that many lanes; extra (or NULL): one more loop attribute. */
LLVMValueRef lg_loop_id(LLVMContextRef ctx, int on, unsigned width, unsigned interleave,
                        LLVMMetadataRef extra);

/* A loop attribute (the extra of lg_loop_id) saying that how many vectors the loop keeps in
 * flight changes none of its results (it accumulates nothing), so llvm_outline.c may lower
 * its interleave count. LLVM ignores it. */
#define LG_LOOP_FREE "fusec.loop.interleave.free"

/* A call of intrinsic `name` overloaded on the types tys[0 .. ntys). */
LLVMValueRef lg_intrinsic(lg_mod *m, const char *name, LLVMTypeRef *tys, int ntys,
                          LLVMValueRef *args, int nargs);
/* The same by intrinsic id, in module mod at builder b's position (outside generation). */
LLVMValueRef lg_intrinsic_in(LLVMModuleRef mod, LLVMBuilderRef b, unsigned id, LLVMTypeRef *tys,
                             int ntys, LLVMValueRef *args, int nargs);

/* A prefetch (for reading, into L2) of the cache line at ptr, whose elements have elem_bytes
 * bytes, in a loop that is to be vectorized: once lowered, one prefetch per cache line of the
 * loop's elements (llvm_prefetch.c). */
void lg_prefetch_hint(lg_mod *m, LLVMValueRef ptr, int elem_bytes);
/* A prefetch for writing, into L1, of the cache line at ptr (a plain prefetch where the CPU
 * has no PREFETCHW), or for reading, where the builder is: for code the vectorizer does not
 * touch. */
void lg_prefetch_write(lg_mod *m, LLVMValueRef ptr);
void lg_prefetch_read(lg_mod *m, LLVMValueRef ptr);

/* Keeps functions fns[0 .. n) of mod through the passes that delete unused ones (as members of
 * llvm.compiler.used): vector variants that only the loop vectorizer will call (until
 * llvm_release_used, codegen/cpu/llvm_module.h). */
void lg_keep_used(LLVMModuleRef mod, LLVMValueRef *fns, int n);

#endif
