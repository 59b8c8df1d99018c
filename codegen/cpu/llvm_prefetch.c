/* codegen/cpu/llvm_prefetch.c: software prefetches placed inside vectorized loops, one for each
 * cache line of a loop's elements.
 *
 * Why: a row kernel fetches its next row while it computes this one. Prefetches issued in a
 * burst (a whole block's cache lines before its loop) fill the core's miss buffers, and the
 * loop's own loads wait behind them; one prefetch per vector of elements spreads the same
 * requests over the computation: a softmax prototype ran about a seventh faster so, near a
 * copy, and shorter bursts were no better than long ones (bench/RESULTS.md).
 *
 * How: LLVM 14's loop vectorizer refuses a loop that calls llvm.prefetch. It does vectorize a
 * call to a function with vector variants (the VFABI attribute "vector-function-abi-variant"),
 * so the generator calls a declared function, fusec_prefetch(i8*, i32 element bytes), that
 * names a variant for every vector width; the vectorizer replaces each call with one to the
 * variant of its width, once per vector it interleaves. After the O3 pipeline,
 * llvm_lower_prefetch_hints turns the variants' calls into prefetches of their first lanes'
 * addresses (one per cache line: a vector of 16 bf16 spans half a line), drops the scalar
 * calls that remain (loops left scalar, and vector loops' remainders: a prefetch per element
 * would cost more than it saves), and leaves the declarations to a globaldce pass, so that
 * the object code refers to none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cpu/llvm_gen.h"

#define HINT_NAME "fusec_prefetch"
/* vector widths with a variant: every width the vectorizer may pick for a loop's elements */
static const unsigned hint_widths[] = {2, 4, 8, 16, 32, 64};
#define NWIDTHS   (sizeof(hint_widths) / sizeof(hint_widths[0]))
#define LINE      64 /* bytes a prefetch brings in */
#define MAX_SITES 16 /* hints a block of vectorized code tells apart */

static void variant_name(char *buf, size_t n, unsigned w) {
    snprintf(buf, n, HINT_NAME "_v%u", w);
}

/* The hint's declarations (created on first use), and the attribute its calls carry. The hint
 * takes the address and the size of the elements there (so that a vector narrower than a
 * cache line prefetches only once per line). */
static LLVMValueRef hint_function(lg_mod *m, LLVMAttributeRef *abi, LLVMTypeRef *type) {
    static const char kind[] = "vector-function-abi-variant";
    char list[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < NWIDTHS; i++) {
        char name[64];
        variant_name(name, sizeof name, hint_widths[i]);
        used += (size_t)snprintf(list + used, sizeof list - used, "%s_ZGV_LLVM_N%uvv_%s(%s)",
                                 i ? "," : "", hint_widths[i], HINT_NAME, name);
    }
    *abi = LLVMCreateStringAttribute(m->ctx, kind, (unsigned)strlen(kind), list,
                                     (unsigned)strlen(list));
    LLVMTypeRef params[2] = {m->t_i8p, m->t_i32};
    *type = LLVMFunctionType(m->t_void, params, 2, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(m->mod, HINT_NAME);
    if (fn) return fn;

    /* reads memory no one else sees: no dependence on the loop's loads and stores, and the
     * vectorizer's memory checks accept it through its variants */
    const char *attrs[] = {"nounwind", "willreturn", "inaccessiblememonly"};
    LLVMValueRef fns[NWIDTHS + 1];
    fns[0] = fn = LLVMAddFunction(m->mod, HINT_NAME, *type);
    for (size_t i = 0; i < NWIDTHS; i++) {
        char name[64];
        variant_name(name, sizeof name, hint_widths[i]);
        LLVMTypeRef vp[2] = {LLVMVectorType(m->t_i8p, hint_widths[i]),
                             LLVMVectorType(m->t_i32, hint_widths[i])};
        fns[i + 1] = LLVMAddFunction(m->mod, name, LLVMFunctionType(m->t_void, vp, 2, 0));
    }
    for (size_t i = 0; i <= NWIDTHS; i++)
        for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++) {
            unsigned k = LLVMGetEnumAttributeKindForName(attrs[a], strlen(attrs[a]));
            LLVMAddAttributeAtIndex(fns[i], LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(m->ctx, k, 0));
        }
    /* the variants have no calls until the vectorizer makes them */
    lg_keep_used(m->mod, fns + 1, (int)NWIDTHS);
    return fn;
}

void lg_prefetch_hint(lg_mod *m, LLVMValueRef ptr, int elem_bytes) {
    LLVMAttributeRef abi;
    LLVMTypeRef type;
    LLVMValueRef fn = hint_function(m, &abi, &type);
    LLVMValueRef args[2] = {LLVMBuildBitCast(m->b, ptr, m->t_i8p, ""),
                            LLVMConstInt(m->t_i32, (unsigned long long)elem_bytes, 0)};
    LLVMValueRef call = LLVMBuildCall2(m->b, type, fn, args, 2, "");
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, abi);
}

/* llvm.prefetch of the i8* p, for writing or reading, with a locality (3: into L1; 2: kept in
 * the caches short of L1, prefetcht1) */
static void build_prefetch(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef p, int write,
                           int locality) {
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
    LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(ctx), 0);
    static const char name[] = "llvm.prefetch";
    LLVMValueRef args[4] = {p, LLVMConstInt(i32, (unsigned)write, 0),
                            LLVMConstInt(i32, (unsigned)locality, 0), LLVMConstInt(i32, 1, 0)};
    lg_intrinsic_in(mod, b, LLVMLookupIntrinsicID(name, strlen(name)), &i8p, 1, args, 4);
}

void lg_prefetch_write(lg_mod *m, LLVMValueRef ptr) {
    build_prefetch(m->mod, m->b, LLVMBuildBitCast(m->b, ptr, m->t_i8p, ""), 1, 3);
}

void lg_prefetch_read(lg_mod *m, LLVMValueRef ptr) {
    build_prefetch(m->mod, m->b, LLVMBuildBitCast(m->b, ptr, m->t_i8p, ""), 0, 3);
}

/* Which hint site a vector call belongs to: the buffer its addresses are in (the vectorizer's
 * bitcast of a GEP from one base pointer), or NULL. */
static LLVMValueRef site_of(LLVMValueRef call) {
    LLVMValueRef v = LLVMGetOperand(call, 0);
    if (LLVMIsABitCastInst(v)) v = LLVMGetOperand(v, 0);
    return LLVMIsAGetElementPtrInst(v) ? LLVMGetOperand(v, 0) : NULL;
}

/* ---- the first lane of a vector value, computed as a scalar ----------------------------------
 * The vectorizer computes a hint's addresses as vectors (the vector induction variable plus
 * offsets, then a vector GEP), of which the prefetch needs lane 0 only; an extractelement of
 * that costs four vector operations per prefetch. So the lane is rebuilt from scalars: adds,
 * shifts, bitcasts, GEPs, splats and the induction variable's phi, each beside the vector
 * instruction it mirrors. */

#define MAX_LANES 64

typedef struct lane_memo {
    LLVMBuilderRef b;
    int n;
    LLVMValueRef vec[MAX_LANES], lane[MAX_LANES]; /* lane NULL: tried, not a scalar */
} lane_memo;

static LLVMValueRef const_lane0(LLVMValueRef c) {
    if (LLVMIsAConstantDataSequential(c)) return LLVMGetElementAsConstant(c, 0);
    if (LLVMIsAConstantVector(c)) return LLVMGetOperand(c, 0);
    if (LLVMIsAConstantAggregateZero(c)) return LLVMConstNull(LLVMGetElementType(LLVMTypeOf(c)));
    return NULL;
}

static LLVMValueRef remember(lane_memo *z, LLVMValueRef vec, LLVMValueRef lane) {
    if (z->n == MAX_LANES) return NULL;
    z->vec[z->n] = vec;
    z->lane[z->n++] = lane;
    return lane;
}

/* Lane 0 of v (v itself where it is a scalar), or NULL where some step is not one of those. */
static LLVMValueRef lane0(lane_memo *z, LLVMValueRef v) {
    if (LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMVectorTypeKind) return v;
    if (LLVMIsConstant(v)) return const_lane0(v);
    for (int i = 0; i < z->n; i++)
        if (z->vec[i] == v) return z->lane[i];
    if (!LLVMIsAInstruction(v)) return NULL;
    LLVMTypeRef et = LLVMGetElementType(LLVMTypeOf(v));
    LLVMOpcode op = LLVMGetInstructionOpcode(v);
    switch (op) {
    case LLVMPHI: {
        /* made first, and remembered, so that the loop's back edge finds it */
        LLVMPositionBuilderBefore(z->b, v);
        LLVMValueRef phi = LLVMBuildPhi(z->b, et, "");
        if (!remember(z, v, phi)) return NULL;
        int slot = z->n - 1, ok = 1;
        for (unsigned i = 0; i < LLVMCountIncoming(v); i++) {
            LLVMValueRef in = ok ? lane0(z, LLVMGetIncomingValue(v, i)) : NULL;
            ok = in != NULL;
            if (!in) in = LLVMGetUndef(et); /* a phi names every predecessor; this one is dead */
            LLVMBasicBlockRef from = LLVMGetIncomingBlock(v, i);
            LLVMAddIncoming(phi, &in, &from, 1);
        }
        if (!ok) z->lane[slot] = NULL;
        return z->lane[slot];
    }
    case LLVMAdd:
    case LLVMSub:
    case LLVMMul:
    case LLVMShl:
    case LLVMOr:
    case LLVMAnd: {
        LLVMValueRef a = lane0(z, LLVMGetOperand(v, 0)), c = lane0(z, LLVMGetOperand(v, 1));
        if (!a || !c) return remember(z, v, NULL);
        LLVMPositionBuilderBefore(z->b, v);
        return remember(z, v, LLVMBuildBinOp(z->b, op, a, c, ""));
    }
    case LLVMBitCast: {
        LLVMValueRef a = lane0(z, LLVMGetOperand(v, 0));
        if (!a || LLVMGetTypeKind(LLVMTypeOf(a)) == LLVMVectorTypeKind) return remember(z, v, NULL);
        LLVMPositionBuilderBefore(z->b, v);
        return remember(z, v, LLVMBuildBitCast(z->b, a, et, ""));
    }
    case LLVMGetElementPtr: {
        LLVMValueRef idx[8];
        int n = LLVMGetNumOperands(v);
        LLVMValueRef base = n >= 2 && n <= 9 ? lane0(z, LLVMGetOperand(v, 0)) : NULL;
        for (int i = 1; i < n && base; i++)
            if (!(idx[i - 1] = lane0(z, LLVMGetOperand(v, (unsigned)i)))) base = NULL;
        if (!base) return remember(z, v, NULL);
        LLVMPositionBuilderBefore(z->b, v);
        return remember(
            z, v,
            LLVMBuildGEP2(z->b, LLVMGetGEPSourceElementType(v), base, idx, (unsigned)n - 1, ""));
    }
    case LLVMShuffleVector: { /* a splat, or any shuffle whose lane 0 is another's lane 0 */
        int m = LLVMGetMaskValue(v, 0);
        unsigned w = LLVMGetVectorSize(LLVMTypeOf(LLVMGetOperand(v, 0)));
        if (m == LLVMGetUndefMaskElem() || (unsigned)m % w != 0) return remember(z, v, NULL);
        return remember(z, v, lane0(z, LLVMGetOperand(v, (unsigned)m < w ? 0 : 1)));
    }
    case LLVMInsertElement: {
        LLVMValueRef at = LLVMGetOperand(v, 2);
        if (!LLVMIsAConstantInt(at)) return remember(z, v, NULL);
        return remember(z, v,
                        LLVMConstIntGetZExtValue(at) == 0 ? LLVMGetOperand(v, 1)
                                                          : lane0(z, LLVMGetOperand(v, 0)));
    }
    default: return remember(z, v, NULL);
    }
}

/* The width of the vector variant fn, or 0 (the scalar hint, or another function). */
static unsigned variant_width(LLVMValueRef fn) {
    size_t n = 0;
    const char *name = fn ? LLVMGetValueName2(fn, &n) : "";
    if (n <= sizeof HINT_NAME || strncmp(name, HINT_NAME "_v", sizeof HINT_NAME + 1) != 0) return 0;
    return (unsigned)strtoul(name + sizeof HINT_NAME + 1, NULL, 10);
}

/* Lowers the hints of one block. The vectorizer widens a hint once per vector it interleaves,
 * in order, each vector `lanes * bytes` past the one before; where that is less than a line,
 * only every (LINE / (lanes * bytes))th call of a site prefetches, which still touches every
 * line the vectors span, once. */
static void lower_block(LLVMModuleRef mod, lane_memo *z, LLVMBasicBlockRef bb,
                        LLVMValueRef scalar) {
    LLVMBuilderRef b = z->b;
    LLVMValueRef site[MAX_SITES];
    unsigned count[MAX_SITES], nsites = 0;
    LLVMValueRef next;
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = next) {
        next = LLVMGetNextInstruction(in);
        if (!LLVMIsACallInst(in)) continue;
        LLVMValueRef callee = LLVMGetCalledValue(in);
        unsigned lanes = variant_width(callee);
        if ((!scalar || callee != scalar) && !lanes) continue;
        if (lanes) {
            LLVMValueRef bytes_v = LLVMGetOperand(in, 1);
            LLVMValueRef bytes_c = LLVMIsAConstant(bytes_v) ? const_lane0(bytes_v) : NULL;
            unsigned long long bytes =
                bytes_c && LLVMIsAConstantInt(bytes_c) ? LLVMConstIntGetZExtValue(bytes_c) : LINE;
            unsigned span = lanes * (unsigned)(bytes ? bytes : 1);
            unsigned every = span >= LINE ? 1 : LINE / span;
            LLVMValueRef s = site_of(in);
            unsigned k = 0;
            while (k < nsites && site[k] != s)
                k++;
            if (k == nsites && nsites < MAX_SITES) {
                site[nsites] = s;
                count[nsites++] = 0;
            }
            int keep = k == MAX_SITES || count[k]++ % every == 0;
            if (keep) {
                LLVMValueRef p = lane0(z, LLVMGetOperand(in, 0));
                LLVMPositionBuilderBefore(b, in);
                if (!p) {
                    LLVMContextRef ctx = LLVMGetModuleContext(mod);
                    p = LLVMBuildExtractElement(b, LLVMGetOperand(in, 0),
                                                LLVMConstInt(LLVMInt32TypeInContext(ctx), 0, 0),
                                                "");
                }
                build_prefetch(mod, b, p, 0, 2);
            }
        }
        LLVMInstructionEraseFromParent(in);
    }
}

void llvm_lower_prefetch_hints(LLVMModuleRef mod) {
    /* the scalar hint may be gone while its variants are called: O3 deletes its declaration
     * once the vectorizer has replaced every call of it (a loop whose every trip count it
     * knows, as a whole round of lanes) */
    LLVMValueRef scalar = LLVMGetNamedFunction(mod, HINT_NAME);
    int any = scalar != NULL;
    for (size_t i = 0; i < NWIDTHS && !any; i++) {
        char name[64];
        variant_name(name, sizeof name, hint_widths[i]);
        any = LLVMGetNamedFunction(mod, name) != NULL;
    }
    if (!any) return;
    lane_memo z;
    z.b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        z.n = 0;
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
            lower_block(mod, &z, bb, scalar);
    }
    LLVMDisposeBuilder(z.b);
    /* the declarations are unused now but for llvm.compiler.used's constant bitcasts: once the
     * caller has let that go (llvm_release_used), its globaldce deletes them together with those
     * constants (deleting a function here would leave the constants pointing at freed memory) */
}
