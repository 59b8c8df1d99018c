/* codegen/cpu/llvm_outline.c: a bound on how much math is inlined into one kernel function.
 *
 * Why: the math functions (llvm_math.c) are inlined into the kernels' loops so that they
 * vectorize with them, and those loops are interleaved (up to 8 vectors in flight), so every
 * use of a transcendental puts a few hundred instructions, times the interleave, into one
 * basic block. LLVM's code generation (the greedy register allocator above all) takes time
 * superlinear in such a block: sin nested 150 deep with its gradient took 70 s to 300 s to
 * compile (bench/RESULTS.md, "Compile time of deep programs").
 *
 * How: in a kernel function whose calls would inline more than INLINE_BUDGET instructions of
 * math, the calls of the functions with the most weight (size times calls) go, until what
 * stays inline fits, to a noinline copy of the function instead, which carries VFABI variants
 * (as the prefetch hint does, llvm_prefetch.c): noinline vector copies at the target's vector
 * widths, which the loop vectorizer calls in the vectorized loop. Each copy is compiled once a
 * module, so a kernel grows by a call per use. Functions so small that a call costs as much as
 * their body stay inline. Where the out-of-line calls are many, the loops that only store
 * (LG_LOOP_FREE) keep fewer vectors in flight: the register allocator's time grows with the
 * calls times the values live across them, and a loop of calls gains little from more.
 *
 * The results do not change: every math function is branch-free code on one lane, computed by
 * the same instructions whether inlined or called (there are no fast-math flags, so LLVM makes
 * only value-preserving changes to it in either place), and the interleave count is lowered
 * only in loops that accumulate nothing. Kernels within the budget (gelu, softmax, layernorm,
 * every example) get the very object code they got before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cpu/llvm_gen.h"

#define MATH_PREFIX  "llvm_math_"
#define OUTLINE_NAME "fusec_ool_"
/* Instructions of math inlined into one kernel function, at most: about six sin, 23 exp, 10
 * erf. Compile time grows faster than the inlined math (on a 2-core EPYC, AVX2: 4 sin 0.3 s, 10
 * sin 1.2 s, 30 sin 6.3 s), and an out-of-line call costs run time where the function is
 * cheap (a chain of exp runs 2.7 times slower called, of erf 1.1 times, of sin no slower):
 * this keeps a kernel's inlined math under about half a second. */
#define INLINE_BUDGET 600
/* A math function of at most this many instructions always stays inline: minimum, maximum,
 * sign, round, relu, fabs, sqrt (a call costs about what their body does). tanhf, 20 of them, is
 * not small: tanh 150 deep with its gradient took 6 s inlined. */
#define SMALL_MATH  16
#define MAX_CALLEES 128 /* distinct math functions one kernel function calls, at most */
#define MAX_DEPTH   4   /* math functions calling math functions: nesting counted */
#define MAX_ARGS    4   /* arguments of a math function that goes out of line, at most */
/* What a call of the C library (f64 sin, pow, fmod, ...) counts for in a math function's size:
 * the vectorizer repeats it for every lane and every vector in flight (sin 300 deep with its
 * gradient in f64: 5104 calls of sin and cos in one loop, 9 s to compile), so it weighs as
 * much as a transcendental of llvm_math.c. */
#define LIBRARY_CALL 40
/* Out-of-line calls in a loop body times its interleave count, at most, where lowering the
 * count changes no result: sin 500 deep with its gradient (1000 calls) compiled in 4.9 s at 8
 * vectors in flight and 0.9 s at 2, which runs about a fifth slower. */
#define INTERLEAVED_CALLS 2048

static int is_math(LLVMValueRef fn) {
    return fn && !LLVMIsDeclaration(fn) &&
           strncmp(LLVMGetValueName(fn), MATH_PREFIX, strlen(MATH_PREFIX)) == 0;
}

int llvm_is_math_fn(LLVMValueRef fn) {
    const char *name = LLVMGetValueName(fn);
    return is_math(fn) || strncmp(name, OUTLINE_NAME, strlen(OUTLINE_NAME)) == 0;
}

/* The function a call instruction calls directly, or NULL. */
static LLVMValueRef callee_of(LLVMValueRef in) {
    if (!LLVMIsACallInst(in)) return NULL;
    LLVMValueRef c = LLVMGetCalledValue(in);
    return LLVMIsAFunction(c) ? c : NULL;
}

/* Whether instruction `in` becomes a call of the C library: a call of a function LLVM does not
 * know (tan, atan2, hypot), of an intrinsic the code generator lowers to one (llvm.sin, cos,
 * pow: f64's), or a float remainder (fmod). */
static int library_call(LLVMValueRef in) {
    static const char *const lowered[] = {"llvm.sin.", "llvm.cos.", "llvm.pow.", "llvm.exp",
                                          "llvm.log"};
    if (LLVMIsAInstruction(in) && LLVMGetInstructionOpcode(in) == LLVMFRem) return 1;
    LLVMValueRef c = callee_of(in);
    if (!c || !LLVMIsDeclaration(c)) return 0;
    if (!LLVMGetIntrinsicID(c)) return 1;
    for (size_t i = 0; i < sizeof lowered / sizeof lowered[0]; i++)
        if (strncmp(LLVMGetValueName(c), lowered[i], strlen(lowered[i])) == 0) return 1;
    return 0;
}

/* Instructions of math function fn, those of the math functions it calls included; a call of
 * the C library counts LIBRARY_CALL. *library (if not NULL) is set where there is one. */
static long math_size(LLVMValueRef fn, int depth, int *library) {
    long n = 0;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
            LLVMValueRef c = callee_of(in);
            int lib = library_call(in);
            if (lib && library) *library = 1;
            n += c && is_math(c) && depth < MAX_DEPTH ? math_size(c, depth + 1, library)
                 : lib                                ? LIBRARY_CALL
                                                      : 1;
        }
    return n;
}

/* ---- keeping declarations alive until the vectorizer has used them ------------------------ */

void lg_keep_used(LLVMModuleRef mod, LLVMValueRef *fns, int n) {
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(ctx), 0);
    LLVMValueRef old = LLVMGetNamedGlobal(mod, "llvm.compiler.used");
    int had = old ? LLVMGetNumOperands(LLVMGetInitializer(old)) : 0;
    LLVMValueRef *all = malloc(sizeof(*all) * (size_t)(had + n));
    if (!all) return; /* only a missed vectorization: the scalar functions are still called */
    for (int i = 0; i < had; i++)
        all[i] = LLVMGetOperand(LLVMGetInitializer(old), (unsigned)i);
    for (int i = 0; i < n; i++)
        all[had + i] = LLVMConstBitCast(fns[i], i8p);
    LLVMValueRef init = LLVMConstArray(i8p, all, (unsigned)(had + n));
    free(all);
    if (old) LLVMDeleteGlobal(old);
    LLVMValueRef g = LLVMAddGlobal(mod, LLVMTypeOf(init), "llvm.compiler.used");
    LLVMSetInitializer(g, init);
    LLVMSetLinkage(g, LLVMAppendingLinkage);
    LLVMSetSection(g, "llvm.metadata");
}

void llvm_release_used(LLVMModuleRef mod) {
    LLVMValueRef used = LLVMGetNamedGlobal(mod, "llvm.compiler.used");
    if (used) LLVMDeleteGlobal(used);
}

/* ---- the out-of-line copies ------------------------------------------------------------------ */

/* widths with a vector copy, by element bytes: the target's widest vector and half of it
 * (LLVM prefers 256-bit vectors on some AVX-512 CPUs) */
static int widths(int vector_bytes, LLVMTypeRef t, unsigned *w) {
    unsigned bytes = LLVMGetTypeKind(t) == LLVMDoubleTypeKind ? 8 : 4;
    unsigned full = (unsigned)vector_bytes / bytes;
    int n = 0;
    if (full >= 4) w[n++] = full / 2;
    if (full >= 2) w[n++] = full;
    return n;
}

static void add_attrs(LLVMContextRef ctx, LLVMValueRef fn) {
    const char *attrs[] = {"noinline", "nounwind", "willreturn", "readnone"};
    for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++) {
        unsigned k = LLVMGetEnumAttributeKindForName(attrs[a], strlen(attrs[a]));
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, k, 0));
    }
    LLVMSetLinkage(fn, LLVMInternalLinkage);
}

/* The loop ID of a vector copy's loop over its w lanes: vectorized at width w where fn is
 * vectorizable, the vector loop that results (which runs once) then fully unrolled, so that it
 * is no loop at all (in a loop, the code generator would hoist the body's constants out of it,
 * and spill them); where fn calls the C library, not vectorized, only unrolled (a request to
 * vectorize would fail, with a warning). */
static LLVMValueRef lanes_loop_id(LLVMContextRef ctx, unsigned w, int vectorize) {
    static const char followup[] = "llvm.loop.vectorize.followup_vectorized",
                      unroll[] = "llvm.loop.unroll.full";
    LLVMMetadataRef full = LLVMMDStringInContext2(ctx, unroll, strlen(unroll));
    if (!vectorize) return lg_loop_id(ctx, 0, 0, 0, LLVMMDNodeInContext2(ctx, &full, 1));
    LLVMMetadataRef then[2] = {LLVMMDStringInContext2(ctx, followup, strlen(followup)),
                               LLVMMDNodeInContext2(ctx, &full, 1)};
    return lg_loop_id(ctx, 1, w, 1, LLVMMDNodeInContext2(ctx, then, 2));
}

/* The vector copy of math function fn at width w: its arguments and result in memory, and a
 * loop over the lanes calling fn (inlined) that the vectorizer turns into one vector step. */
static void build_lanes(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef vfn, LLVMValueRef fn,
                        LLVMTypeRef fty, unsigned w) {
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx), rt = LLVMGetReturnType(fty);
    unsigned np = LLVMCountParamTypes(fty);
    LLVMTypeRef pt[MAX_ARGS];
    LLVMGetParamTypes(fty, pt);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, vfn, "entry");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(ctx, vfn, "lane");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, vfn, "done");
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef in[MAX_ARGS], out = LLVMBuildAlloca(b, LLVMVectorType(rt, w), "out");
    for (unsigned i = 0; i < np; i++) {
        in[i] = LLVMBuildAlloca(b, LLVMVectorType(pt[i], w), "in");
        LLVMBuildStore(b, LLVMGetParam(vfn, i), in[i]);
    }
    LLVMBuildBr(b, loop);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef lane = LLVMBuildPhi(b, i64, "i"), args[MAX_ARGS];
    for (unsigned i = 0; i < np; i++) {
        LLVMValueRef p = LLVMBuildBitCast(b, in[i], LLVMPointerType(pt[i], 0), "");
        args[i] = LLVMBuildLoad2(b, pt[i], LLVMBuildInBoundsGEP2(b, pt[i], p, &lane, 1, ""), "");
    }
    LLVMValueRef r = LLVMBuildCall2(b, fty, fn, args, np, "");
    LLVMValueRef o = LLVMBuildBitCast(b, out, LLVMPointerType(rt, 0), "");
    LLVMBuildStore(b, r, LLVMBuildInBoundsGEP2(b, rt, o, &lane, 1, ""));
    LLVMValueRef next = LLVMBuildNUWAdd(b, lane, LLVMConstInt(i64, 1, 0), "");
    LLVMValueRef zero = LLVMConstInt(i64, 0, 0);
    LLVMAddIncoming(lane, &zero, &entry, 1);
    LLVMAddIncoming(lane, &next, &loop, 1);
    LLVMValueRef br = LLVMBuildCondBr(
        b, LLVMBuildICmp(b, LLVMIntEQ, next, LLVMConstInt(i64, w, 0), ""), done, loop);
    int library = 0;
    math_size(fn, 0, &library);
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9),
                    lanes_loop_id(ctx, w, !library));
    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRet(b, LLVMBuildLoad2(b, LLVMVectorType(rt, w), out, ""));
}

/* The noinline scalar copy of math function fn, with its vector copies, made on first use;
 * *abi: the attribute its calls carry to name the vector copies. */
static LLVMValueRef outlined(LLVMModuleRef mod, LLVMValueRef fn, int vector_bytes,
                             LLVMAttributeRef *abi) {
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    char name[256], list[1024] = "";
    snprintf(name, sizeof name, OUTLINE_NAME "%s", LLVMGetValueName(fn) + strlen(MATH_PREFIX));
    LLVMTypeRef fty = LLVMGlobalGetValueType(fn), rt = LLVMGetReturnType(fty);
    unsigned np = LLVMCountParamTypes(fty), w[2];
    if (np > MAX_ARGS) return NULL;
    int nw = widths(vector_bytes, rt, w);
    /* one "v" an argument (MAX_ARGS of them at most): each a vector, as the vectorizer passes
     * them */
    size_t used = 0;
    for (int i = 0; i < nw; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s_ZGV_LLVM_N%u%.*s_%s(%s_v%u)",
                                 i ? "," : "", w[i], (int)np, "vvvv", name, name, w[i]);
    static const char kind[] = "vector-function-abi-variant";
    *abi = LLVMCreateStringAttribute(ctx, kind, (unsigned)strlen(kind), list, (unsigned)used);
    LLVMValueRef ool = LLVMGetNamedFunction(mod, name);
    if (ool) return ool;

    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    ool = LLVMAddFunction(mod, name, fty);
    add_attrs(ctx, ool);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, ool, "entry"));
    LLVMValueRef args[MAX_ARGS];
    for (unsigned i = 0; i < np; i++)
        args[i] = LLVMGetParam(ool, i);
    LLVMBuildRet(b, LLVMBuildCall2(b, fty, fn, args, np, ""));

    LLVMValueRef vfns[2];
    for (int i = 0; i < nw; i++) {
        LLVMTypeRef pt[MAX_ARGS], vpt[MAX_ARGS];
        LLVMGetParamTypes(fty, pt);
        for (unsigned p = 0; p < np; p++)
            vpt[p] = LLVMVectorType(pt[p], w[i]);
        char vname[300];
        snprintf(vname, sizeof vname, "%s_v%u", name, w[i]);
        vfns[i] =
            LLVMAddFunction(mod, vname, LLVMFunctionType(LLVMVectorType(rt, w[i]), vpt, np, 0));
        add_attrs(ctx, vfns[i]);
        build_lanes(mod, b, vfns[i], fn, fty, w[i]);
    }
    LLVMDisposeBuilder(b);
    /* the vector copies have no calls until the vectorizer makes them */
    if (nw) lg_keep_used(mod, vfns, nw);
    return ool;
}

/* ---- the budget ------------------------------------------------------------------------------ */

typedef struct callee {
    LLVMValueRef fn;
    long weight; /* its size times its calls */
    long calls;
} callee;

/* The math functions kernel function fn calls, with their weights; their number. */
static int math_callees(LLVMValueRef fn, callee *c, long *total) {
    int n = 0;
    *total = 0;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
            LLVMValueRef f = callee_of(in);
            if (!is_math(f)) continue;
            int i = 0;
            while (i < n && c[i].fn != f)
                i++;
            if (i == n) {
                if (n == MAX_CALLEES) continue;
                c[n++] = (callee){f, 0, 0};
            }
            long size = math_size(f, 0, NULL);
            c[i].weight += size;
            c[i].calls++;
            *total += size;
        }
    return n;
}

/* Redirects fn's calls of math function f to its out-of-line copy; 0 where it has none. */
static int redirect(LLVMModuleRef mod, LLVMValueRef fn, LLVMValueRef f, int vector_bytes) {
    LLVMAttributeRef abi;
    LLVMValueRef ool = outlined(mod, f, vector_bytes, &abi);
    if (!ool) return 0;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
            if (callee_of(in) != f) continue;
            LLVMSetOperand(in, (unsigned)LLVMGetNumOperands(in) - 1, ool);
            LLVMAddCallSiteAttribute(in, LLVMAttributeFunctionIndex, abi);
        }
    return 1;
}

/* Whether loop ID id (a metadata value) carries attribute `name`; its interleave count, if
 * any, in *ic. */
static int loop_attr(LLVMValueRef id, const char *name, unsigned *ic) {
    unsigned n = LLVMGetMDNodeNumOperands(id);
    LLVMValueRef ops[16];
    if (n > 16) return 0;
    LLVMGetMDNodeOperands(id, ops);
    int found = 0;
    for (unsigned i = 1; i < n; i++) {
        if (!ops[i] || !LLVMIsAMDNode(ops[i]) || LLVMGetMDNodeNumOperands(ops[i]) == 0) continue;
        LLVMValueRef kv[2];
        unsigned nkv = LLVMGetMDNodeNumOperands(ops[i]);
        if (nkv > 2) continue;
        LLVMGetMDNodeOperands(ops[i], kv);
        unsigned len;
        const char *key = LLVMGetMDString(kv[0], &len);
        if (!key) continue;
        if (len == strlen(name) && memcmp(key, name, len) == 0) found = 1;
        static const char count[] = "llvm.loop.interleave.count";
        if (nkv == 2 && len == strlen(count) && memcmp(key, count, len) == 0 &&
            LLVMIsAConstantInt(kv[1]))
            *ic = (unsigned)LLVMConstIntGetZExtValue(kv[1]);
    }
    return found;
}

/* Lowers the interleave count of fn's loops marked LG_LOOP_FREE so that they hold at most
 * INTERLEAVED_CALLS calls of out-of-line math once interleaved, where fn has `calls` of them
 * (the code generator's time grows with the calls times the values live across them). */
static void fewer_in_flight(LLVMValueRef fn, long calls) {
    unsigned kind =
        LLVMGetMDKindIDInContext(LLVMGetModuleContext(LLVMGetGlobalParent(fn)), "llvm.loop", 9);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
        LLVMValueRef br = LLVMGetBasicBlockTerminator(bb), id;
        unsigned ic = 0;
        if (!br || !(id = LLVMGetMetadata(br, kind)) || !loop_attr(id, LG_LOOP_FREE, &ic)) continue;
        unsigned want = ic ? ic : 1;
        while (want > 1 && (long)want * calls > INTERLEAVED_CALLS)
            want /= 2;
        if (want != ic)
            LLVMSetMetadata(
                br, kind,
                lg_loop_id(LLVMGetModuleContext(LLVMGetGlobalParent(fn)), 1, 0, want, NULL));
    }
}

void llvm_outline_math(LLVMModuleRef mod, int vector_bytes) {
    callee c[MAX_CALLEES];
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMIsDeclaration(fn) || llvm_is_math_fn(fn)) continue;
        long total, outlined_calls = 0;
        int n = math_callees(fn, c, &total);
        while (total > INLINE_BUDGET) {
            int best = -1;
            for (int i = 0; i < n; i++)
                if (c[i].weight > 0 && math_size(c[i].fn, 0, NULL) > SMALL_MATH &&
                    (best < 0 || c[i].weight > c[best].weight))
                    best = i;
            if (best < 0) break;
            total -= c[best].weight;
            if (redirect(mod, fn, c[best].fn, vector_bytes)) outlined_calls += c[best].calls;
            c[best].weight = 0;
        }
        if (outlined_calls) fewer_in_flight(fn, outlined_calls);
    }
}
