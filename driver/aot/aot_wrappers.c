/* driver/aot/aot_wrappers.c: the wrapper object of a library built ahead of time
 * (driver/aot/aot_write.h), generated with LLVM-C: the images as constant data, a
 * fusec_rt_lib for each (runtime/aot/aot_abi.h), and the typed entry points, each storing its
 * pointers and dims in two arrays on its stack and calling fusec_rt_call. Part of the LLVM
 * module (libfusec_llvm.so), built for generic x86-64 so that the entry points run on any
 * CPU the library is linked for (the kernels' choice of CPU is made at run time).
 */
#include "driver/aot/aot_write.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct wctx {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef i8p, i32, i64, lib_t, call_t;
    LLVMValueRef call;
} wctx;

/* int NAME_FN(p..., s..., stream) { ptrs[] = {p...}; syms[] = {s...}; return call(...); } */
static void entry(wctx *w, const rt_aot_entry *e, LLVMValueRef lib) {
    int n = e->nptrs + e->nsyms + 1;
    LLVMTypeRef *params = calloc((size_t)n, sizeof(LLVMTypeRef));
    for (int i = 0; i < n; i++)
        params[i] = i >= e->nptrs && i < n - 1 ? w->i64 : w->i8p;
    LLVMTypeRef ft = LLVMFunctionType(w->i32, params, (unsigned)n, 0);
    free(params);
    LLVMValueRef fn = LLVMAddFunction(w->mod, e->symbol, ft);
    LLVMPositionBuilderAtEnd(w->b, LLVMAppendBasicBlockInContext(w->ctx, fn, "entry"));
    LLVMTypeRef pa = LLVMArrayType(w->i8p, (unsigned)(e->nptrs ? e->nptrs : 1));
    LLVMTypeRef sa = LLVMArrayType(w->i64, (unsigned)(e->nsyms ? e->nsyms : 1));
    LLVMValueRef ptrs = LLVMBuildAlloca(w->b, pa, "ptrs");
    LLVMValueRef syms = LLVMBuildAlloca(w->b, sa, "syms");
    for (int i = 0; i < e->nptrs + e->nsyms; i++) {
        int is_ptr = i < e->nptrs;
        LLVMValueRef idx[2] = {
            LLVMConstInt(w->i32, 0, 0),
            LLVMConstInt(w->i32, (unsigned long long)(is_ptr ? i : i - e->nptrs), 0)};
        LLVMValueRef at =
            LLVMBuildInBoundsGEP2(w->b, is_ptr ? pa : sa, is_ptr ? ptrs : syms, idx, 2, "");
        LLVMBuildStore(w->b, LLVMGetParam(fn, (unsigned)i), at);
    }
    LLVMValueRef args[5] = {lib, LLVMConstInt(w->i32, (unsigned long long)e->func, 0),
                            LLVMBuildBitCast(w->b, ptrs, w->i8p, ""),
                            LLVMBuildBitCast(w->b, syms, LLVMPointerType(w->i64, 0), ""),
                            LLVMGetParam(fn, (unsigned)(n - 1))};
    LLVMBuildRet(w->b, LLVMBuildCall2(w->b, w->call_t, w->call, args, 5, ""));
}

/* const char *SYMBOL(void) { return TARGET(arg); } (no argument when arg is NULL):
 * NAME_last_error, NAME_target. */
static void forwarder(wctx *w, const char *symbol, const char *target, LLVMTypeRef argt,
                      LLVMValueRef arg) {
    LLVMTypeRef ft = LLVMFunctionType(w->i8p, NULL, 0, 0);
    LLVMTypeRef tt = LLVMFunctionType(w->i8p, &argt, arg ? 1 : 0, 0);
    LLVMValueRef t = LLVMAddFunction(w->mod, target, tt);
    LLVMValueRef fn = LLVMAddFunction(w->mod, symbol, ft);
    LLVMPositionBuilderAtEnd(w->b, LLVMAppendBasicBlockInContext(w->ctx, fn, "entry"));
    LLVMBuildRet(w->b, LLVMBuildCall2(w->b, tt, t, &arg, arg ? 1 : 0, ""));
}

/* Image i's bytes and its fusec_rt_lib, NAME_fusec_lib<i>: a pointer to it. */
static LLVMValueRef image(wctx *w, const rt_aot_wrappers *wr, int i) {
    char name[512];
    LLVMTypeRef at = LLVMArrayType(LLVMInt8TypeInContext(w->ctx), (unsigned)wr->image_lens[i]);
    snprintf(name, sizeof name, "%s_fusec_image%d", wr->name, i);
    LLVMValueRef data = LLVMAddGlobal(w->mod, at, name);
    LLVMSetInitializer(data, LLVMConstStringInContext(w->ctx, (const char *)wr->images[i],
                                                      (unsigned)wr->image_lens[i], 1));
    LLVMSetGlobalConstant(data, 1);
    LLVMSetLinkage(data, LLVMPrivateLinkage);
    LLVMSetAlignment(data, 16);
    snprintf(name, sizeof name, "%s_fusec_lib%d", wr->name, i);
    LLVMValueRef lib = LLVMAddGlobal(w->mod, w->lib_t, name);
    LLVMValueRef f[3] = {LLVMConstBitCast(data, w->i8p),
                         LLVMConstInt(w->i64, (unsigned long long)wr->image_lens[i], 0),
                         LLVMConstNull(w->i8p)};
    LLVMSetInitializer(lib, LLVMConstNamedStruct(w->lib_t, f, 3));
    LLVMSetAlignment(lib, 8);
    return lib;
}

static int emit(LLVMModuleRef mod, void **obj, size_t *len, char *err, size_t errlen) {
    char *triple = LLVMGetDefaultTargetTriple(), *msg = NULL;
    LLVMTargetRef target;
    int rc = -1;
    LLVMMemoryBufferRef out = NULL;
    LLVMTargetMachineRef tm = NULL;
    LLVMSetTarget(mod, triple);
    if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
        snprintf(err, errlen, "LLVM target: %s", msg ? msg : "?");
        goto done;
    }
    tm = LLVMCreateTargetMachine(target, triple, "x86-64", "", LLVMCodeGenLevelDefault,
                                 LLVMRelocPIC, LLVMCodeModelSmall);
    LLVMTargetDataRef td = tm ? LLVMCreateTargetDataLayout(tm) : NULL;
    if (td) {
        LLVMSetModuleDataLayout(mod, td);
        LLVMDisposeTargetData(td);
    }
    if (!tm || LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg) ||
        LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &out)) {
        snprintf(err, errlen, "LLVM: the library's entry points: %s", msg ? msg : "no target");
        out = NULL;
        goto done;
    }
    size_t n = LLVMGetBufferSize(out);
    if (!(*obj = malloc(n ? n : 1))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    memcpy(*obj, LLVMGetBufferStart(out), n);
    *len = n;
    rc = 0;
done:
    if (msg) LLVMDisposeMessage(msg);
    if (out) LLVMDisposeMemoryBuffer(out);
    if (tm) LLVMDisposeTargetMachine(tm);
    LLVMDisposeMessage(triple);
    return rc;
}

int rt_aot_wrappers_object(const rt_aot_wrappers *wr, void **obj, size_t *len, char *err,
                           size_t errlen) {
    *obj = NULL;
    *len = 0;
    wctx w;
    w.ctx = LLVMContextCreate();
    w.mod = LLVMModuleCreateWithNameInContext(wr->name, w.ctx);
    w.b = LLVMCreateBuilderInContext(w.ctx);
    w.i8p = LLVMPointerType(LLVMInt8TypeInContext(w.ctx), 0);
    w.i32 = LLVMInt32TypeInContext(w.ctx);
    w.i64 = LLVMInt64TypeInContext(w.ctx);
    w.lib_t = LLVMStructCreateNamed(w.ctx, "fusec_rt_lib");
    LLVMTypeRef fields[3] = {w.i8p, w.i64, w.i8p};
    LLVMStructSetBody(w.lib_t, fields, 3, 0);
    LLVMTypeRef libp = LLVMPointerType(w.lib_t, 0);
    LLVMTypeRef cp[5] = {libp, w.i32, w.i8p, LLVMPointerType(w.i64, 0), w.i8p};
    w.call_t = LLVMFunctionType(w.i32, cp, 5, 0);
    w.call = LLVMAddFunction(w.mod, "fusec_rt_call", w.call_t);
    LLVMValueRef *libs = calloc((size_t)(wr->nimages ? wr->nimages : 1), sizeof(LLVMValueRef));
    int rc = -1;
    if (libs) {
        for (int i = 0; i < wr->nimages; i++)
            libs[i] = image(&w, wr, i);
        for (int i = 0; i < wr->nentries; i++)
            entry(&w, &wr->entries[i], libs[wr->entries[i].image]);
        char name[512];
        snprintf(name, sizeof name, "%s_last_error", wr->name);
        forwarder(&w, name, "fusec_rt_last_error", libp, NULL);
        snprintf(name, sizeof name, "%s_target", wr->name);
        forwarder(&w, name, "fusec_rt_target", libp, wr->nimages ? libs[0] : LLVMConstNull(libp));
        rc = emit(w.mod, obj, len, err, errlen);
    } else {
        snprintf(err, errlen, "out of memory");
    }
    free(libs);
    LLVMDisposeBuilder(w.b);
    LLVMDisposeModule(w.mod);
    LLVMContextDispose(w.ctx);
    return rc;
}
