/* codegen/llvm_prefetch.c: software prefetches placed inside vectorized loops, one for each
 * vector of a loop's elements.
 *
 * Why: a row kernel fetches its next row while it computes this one. Prefetches issued in a
 * burst (a whole block's cache lines before its loop) fill the core's miss buffers, and the
 * loop's own loads wait behind them; one prefetch per vector of elements spreads the same
 * requests over the computation. On a Zen 5 core with AVX-512, softmax [16384, 4096] f32
 * took 8.5-9.1 ms with bursts of 64 lines and 7.3-8.1 ms with one line per vector (a C
 * prototype, against a copy of 6.5-7.3 ms); bursts of 8 or 16 lines were no better than 64.
 *
 * How: LLVM 14's loop vectorizer refuses a loop that calls llvm.prefetch. It does vectorize a
 * call to a function with vector variants (the VFABI attribute "vector-function-abi-variant"),
 * so the generator calls a declared function, fusec_prefetch(i8*), that names a variant for
 * every vector width; the vectorizer replaces each call with one to the variant of its width,
 * once per vector it interleaves. After the O3 pipeline, llvm_lower_prefetch_hints turns each
 * variant's call into a prefetch of its first lane's address, drops the scalar calls that
 * remain (loops left scalar, and vector loops' remainders: a prefetch per element would cost
 * more than it saves), and has globaldce delete the declarations, so that the object code
 * refers to none.
 */
#include <stdio.h>
#include <string.h>

#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen/llvm_gen.h"

#define HINT_NAME "fusec_prefetch"
/* vector widths with a variant: every width the vectorizer may pick for a loop's elements */
static const unsigned hint_widths[] = {2, 4, 8, 16, 32, 64};
#define NWIDTHS (sizeof(hint_widths) / sizeof(hint_widths[0]))

static void variant_name(char *buf, size_t n, unsigned w) {
    snprintf(buf, n, HINT_NAME "_v%u", w);
}

/* The hint's declarations (created on first use), and the attribute its calls carry. */
static LLVMValueRef hint_function(lg_mod *m, LLVMAttributeRef *abi) {
    static const char kind[] = "vector-function-abi-variant";
    char list[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < NWIDTHS; i++) {
        char name[64];
        variant_name(name, sizeof name, hint_widths[i]);
        used += (size_t)snprintf(list + used, sizeof list - used, "%s_ZGV_LLVM_N%uv_%s(%s)",
                                 i ? "," : "", hint_widths[i], HINT_NAME, name);
    }
    *abi = LLVMCreateStringAttribute(m->ctx, kind, (unsigned)strlen(kind), list,
                                     (unsigned)strlen(list));
    LLVMValueRef fn = LLVMGetNamedFunction(m->mod, HINT_NAME);
    if (fn) return fn;

    /* reads memory no one else sees: no dependence on the loop's loads and stores, and the
     * vectorizer's memory checks accept it through its variants */
    const char *attrs[] = {"nounwind", "willreturn", "inaccessiblememonly"};
    LLVMValueRef fns[NWIDTHS + 1];
    LLVMTypeRef t = LLVMFunctionType(m->t_void, &m->t_i8p, 1, 0);
    fns[0] = fn = LLVMAddFunction(m->mod, HINT_NAME, t);
    for (size_t i = 0; i < NWIDTHS; i++) {
        char name[64];
        variant_name(name, sizeof name, hint_widths[i]);
        LLVMTypeRef vt = LLVMVectorType(m->t_i8p, hint_widths[i]);
        fns[i + 1] = LLVMAddFunction(m->mod, name, LLVMFunctionType(m->t_void, &vt, 1, 0));
    }
    for (size_t i = 0; i <= NWIDTHS; i++)
        for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++) {
            unsigned k = LLVMGetEnumAttributeKindForName(attrs[a], strlen(attrs[a]));
            LLVMAddAttributeAtIndex(fns[i], LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(m->ctx, k, 0));
        }
    /* the variants have no calls until the vectorizer makes them: llvm.compiler.used keeps
     * their declarations through the passes that drop unused ones */
    LLVMValueRef used_fns[NWIDTHS];
    for (size_t i = 0; i < NWIDTHS; i++)
        used_fns[i] = LLVMConstBitCast(fns[i + 1], m->t_i8p);
    LLVMValueRef init = LLVMConstArray(m->t_i8p, used_fns, NWIDTHS);
    LLVMValueRef g = LLVMAddGlobal(m->mod, LLVMTypeOf(init), "llvm.compiler.used");
    LLVMSetInitializer(g, init);
    LLVMSetLinkage(g, LLVMAppendingLinkage);
    LLVMSetSection(g, "llvm.metadata");
    return fn;
}

void lg_prefetch_hint(lg_mod *m, LLVMValueRef ptr) {
    LLVMAttributeRef abi;
    LLVMValueRef fn = hint_function(m, &abi);
    LLVMValueRef p = LLVMBuildBitCast(m->b, ptr, m->t_i8p, "");
    LLVMValueRef call =
        LLVMBuildCall2(m->b, LLVMFunctionType(m->t_void, &m->t_i8p, 1, 0), fn, &p, 1, "");
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, abi);
}

/* prefetch for reading, kept in the caches short of L1 (locality 2: prefetcht1) */
static void build_prefetch(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef p) {
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
    LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(ctx), 0);
    static const char name[] = "llvm.prefetch";
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, id, &i8p, 1);
    LLVMValueRef args[4] = {p, LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, 2, 0),
                            LLVMConstInt(i32, 1, 0)};
    LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, &i8p, 1), fn, args, 4, "");
}

/* Replaces (lane 0 of vector variants) or deletes (the scalar hint) every call of fn. Its
 * other users are llvm.compiler.used's constants. */
static void lower_calls(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef fn, int vector) {
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    for (int more = fn != NULL; more;) {
        more = 0;
        for (LLVMUseRef u = LLVMGetFirstUse(fn); u; u = LLVMGetNextUse(u)) {
            LLVMValueRef call = LLVMGetUser(u);
            if (!LLVMIsACallInst(call)) continue;
            if (vector) {
                LLVMPositionBuilderBefore(b, call);
                LLVMValueRef lane0 =
                    LLVMBuildExtractElement(b, LLVMGetOperand(call, 0),
                                            LLVMConstInt(LLVMInt32TypeInContext(ctx), 0, 0), "");
                build_prefetch(mod, b, lane0);
            }
            LLVMInstructionEraseFromParent(call); /* the use list changed: walk it again */
            more = 1;
            break;
        }
    }
}

int llvm_lower_prefetch_hints(LLVMModuleRef mod, char *err, size_t errlen) {
    LLVMValueRef scalar = LLVMGetNamedFunction(mod, HINT_NAME);
    if (!scalar) return 0;
    LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
    lower_calls(mod, b, scalar, 0);
    for (size_t i = 0; i < NWIDTHS; i++) {
        char name[64];
        variant_name(name, sizeof name, hint_widths[i]);
        lower_calls(mod, b, LLVMGetNamedFunction(mod, name), 1);
    }
    LLVMDisposeBuilder(b);
    /* the declarations are unused now but for llvm.compiler.used's constant bitcasts: with
     * the global gone, globaldce deletes them together with those constants (deleting a
     * function here would leave the constants pointing at freed memory) */
    LLVMValueRef used = LLVMGetNamedGlobal(mod, "llvm.compiler.used");
    if (used) LLVMDeleteGlobal(used);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(mod, "globaldce", NULL, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
        char *msg = LLVMGetErrorMessage(e);
        snprintf(err, errlen, "LLVM globaldce after lowering prefetches: %s", msg);
        LLVMDisposeErrorMessage(msg);
        return -1;
    }
    return 0;
}
