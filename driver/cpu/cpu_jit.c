/* driver/cpu/cpu_jit.c: building planned modules into host object code and loading it with
 * ORC LLJIT, through the LLVM-C API: the table of libfusec_llvm.so (see cpu_jit.h), the only
 * file of runtime/ that the module holds (with the code generator, the IR helpers and LLVM).
 *
 * A build: a fresh context and module; the kernels generated (codegen/cpu/llvm.c); the math
 * bitcode (codegen/cpu/llvm_math.c, compiled by clang when fusec was built and embedded as
 * llvm_math_bitcode) parsed, cut down to the functions the kernels call, linked, and its
 * functions made internal and always-inline, so that they vanish into the kernels' loops (but
 * where a kernel would inline too much of them: codegen/cpu/llvm_outline.c); the O3 pipeline
 * run (LLVMRunPasses "mergefunc,default<O3>": identical kernel bodies, such as the layers of
 * a chain, merged into one first, so that O3 and code generation see each once; 100 softmax
 * layers with their gradient built in 1.1 s instead of 9.8) with a target machine for the host CPU
 * (its name and features) or the CPU the options name; the object file emitted to memory. A
 * module for fusec's own loader is optimized and emitted in parts on several threads, its
 * kernels or one kernel's bodies (below, "a build split across threads"). Loading
 * follows LLVM's OrcV2CBindingsBasicUsage: an LLJIT, a process symbol generator on its main
 * JITDylib (for the few libm calls of f64 math), the object added under a resource tracker, symbols
 * looked up, and everything disposed of in reverse order.
 *
 * Every LLVMErrorRef goes through take_error, which copies the message and disposes of it.
 */
#include "driver/cpu/cpu_jit.h"

#include "codegen/cpu/llvm_module.h"
#include "driver/cpu/cpu_jit_split.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* codegen/cpu/llvm_math.c as bitcode: generated into the build tree by CMake */
extern const unsigned char llvm_math_bitcode[];
extern const size_t llvm_math_bitcode_size;

static struct {
    pthread_once_t once;
    int ok;
    char err[256];
    char *triple, *cpu, *features;
    int f16c, x86, vector_bytes;
} host = {.once = PTHREAD_ONCE_INIT};

/* LLVM's diagnostics of one build. Without a handler LLVM prints remarks and warnings to
 * stderr (a loop fusec asks to vectorize that calls the C library's f64 functions: "loop not
 * vectorized", under `fusec run`), and exits the process on an error. Remarks and warnings are
 * dropped here; the first error's text is kept, and fails the build. */
typedef struct jit_diag {
    char error[256];
} jit_diag;

static void jit_diagnostic(LLVMDiagnosticInfoRef di, void *ctx) {
    jit_diag *d = ctx;
    if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || d->error[0]) return;
    char *text = LLVMGetDiagInfoDescription(di);
    snprintf(d->error, sizeof d->error, "%s", text ? text : "an LLVM error");
    LLVMDisposeMessage(text);
}

/* Copies an error's message into err and disposes of the error. 0 when there was none. */
static int take_error(LLVMErrorRef e, const char *what, char *err, size_t errlen) {
    if (!e) return 0;
    char *msg = LLVMGetErrorMessage(e); /* consumes e */
    snprintf(err, errlen, "%s: %s", what, msg);
    LLVMDisposeErrorMessage(msg);
    return -1;
}

/* Copies an LLVM message (if any) into err and disposes of it. Returns -1. */
static int take_message(char *msg, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: %s", what, msg ? msg : "unknown error");
    if (msg) LLVMDisposeMessage(msg);
    return -1;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void host_init(void) {
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
        snprintf(host.err, sizeof host.err, "LLVM has no native target for this machine");
        return;
    }
    /* The module's private copy of LLVM (its symbols are hidden) has its own options: no
     * vectorized epilogue loops. fusec's loops run over blocks whose lengths are multiples of
     * the main vector loop's step, so that third copy of each body would only cost compile
     * time (a third of it for gelu). No non-trivial loop unswitching either: it copies a
     * kernel's block loop for its invariant `stream` flag, whose two values only select
     * where the stores go (more compile time, no faster: bench/RESULTS.md). */
    const char *argv[] = {"fusec", "-enable-epilogue-vectorization=false",
                          "-enable-npm-O3-nontrivial-unswitch=false"};
    LLVMParseCommandLineOptions(3, argv, "fusec");
    host.triple = LLVMGetDefaultTargetTriple();
    host.cpu = LLVMGetHostCPUName();
    host.features = LLVMGetHostCPUFeatures();
    /* LLVM's strings, kept for the process's lifetime */
    int x86 = strncmp(host.triple, "x86_64", 6) == 0 || strncmp(host.triple, "i686", 4) == 0;
    host.f16c = !x86 || strstr(host.features, "+f16c") != NULL;
    host.x86 = x86;
    host.vector_bytes = strstr(host.features, "+avx512f") ? 64
                        : strstr(host.features, "+avx,")  ? 32
                                                          : 16;
    host.ok = 1;
}

static int jit_init(char *err, size_t errlen) {
    pthread_once(&host.once, host_init);
    if (!host.ok) {
        snprintf(err, errlen, "%s", host.err);
        return -1;
    }
    return 0;
}

static const char *jit_cpu_name(void) {
    return host.cpu ? host.cpu : "";
}

static const char *jit_cpu_features(void) {
    return host.features ? host.features : "";
}

static void jit_host_options(llvm_gen_options *o) {
    o->f16c = host.f16c;
    o->x86 = host.x86;
    o->vector_bytes = host.vector_bytes;
    const char *f = strstr(host.features, "+fma");
    o->fma = !host.x86 || (f && (f[4] == ',' || f[4] == 0));
}

/* A target machine for the CPU o names (o->cpu, o->cpu_features), else the host's: O3,
 * position independent, small code model (the JIT keeps code and constants within 2 GiB of
 * each other; the large model would load every constant through a 64-bit address and spill
 * them). A named CPU gets its processor's features, changed by o->cpu_features. */
static LLVMTargetMachineRef target_machine(const llvm_gen_options *o, char *err, size_t errlen) {
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(host.triple, &target, &msg)) {
        take_message(msg, "LLVM target", err, errlen);
        return NULL;
    }
    const char *cpu = o && o->cpu ? o->cpu : host.cpu;
    const char *features = o && o->cpu ? (o->cpu_features ? o->cpu_features : "") : host.features;
    LLVMTargetMachineRef tm =
        LLVMCreateTargetMachine(target, host.triple, cpu, features, LLVMCodeGenLevelAggressive,
                                LLVMRelocPIC, LLVMCodeModelSmall);
    if (!tm) snprintf(err, errlen, "LLVM: cannot create a target machine for %s", cpu);
    return tm;
}

/* What a build generates: a planned module (meta), or a copy function of short rows (copy: its
 * name, llvm_gen_narrow_copy) that modules built with shared_copies call. */
typedef struct gen_job {
    const llvm_module_meta *meta;
    const char *copy;
} gen_job;

/* Generates the job into a new module of ctx, laid out for tm. */
static LLVMModuleRef generate(LLVMContextRef ctx, LLVMTargetMachineRef tm, const gen_job *job,
                              const llvm_gen_options *o, ir_arena *arena, char *err,
                              size_t errlen) {
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("fusec", ctx);
    LLVMSetTarget(mod, host.triple);
    if (tm) {
        LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
        LLVMSetModuleDataLayout(mod, dl);
        LLVMDisposeTargetData(dl);
    }
    if ((job->copy ? llvm_gen_narrow_copy(ctx, mod, o, job->copy, arena, err, errlen)
                   : llvm_gen_module(ctx, mod, job->meta, o, arena, err, errlen)) != 0) {
        LLVMDisposeModule(mod);
        return NULL;
    }
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        take_message(msg, "internal error: the generated LLVM IR does not verify", err, errlen);
        LLVMDisposeModule(mod);
        return NULL;
    }
    LLVMDisposeMessage(msg);
    return mod;
}

/* On a target without fused multiply-add instructions, the math's explicit fused
 * multiply-adds (llvm.fma, which would become calls of libm's exact fmaf, one element at a
 * time) become llvm.fmuladd: a multiplication and an addition there. The sequence of operations
 * is otherwise the same, so only those roundings differ from an FMA target's. */
static void unfuse_math(LLVMModuleRef mod) {
    static const char *const names[] = {"llvm.fma.f32", "llvm.fma.f64"};
    for (int i = 0; i < 2; i++) {
        LLVMValueRef fma = LLVMGetNamedFunction(mod, names[i]);
        if (!fma) continue;
        LLVMTypeRef t = LLVMTypeOf(LLVMGetParam(fma, 0));
        unsigned id = LLVMLookupIntrinsicID("llvm.fmuladd", 12);
        LLVMReplaceAllUsesWith(fma, LLVMGetIntrinsicDeclaration(mod, id, &t, 1));
        LLVMDeleteFunction(fma);
    }
}

/* Links the math functions `mod` declares from the embedded bitcode, internal and
 * always-inline (see unfuse_math for a target without FMA). */
static int link_math(LLVMContextRef ctx, LLVMModuleRef mod, int fma, char *err, size_t errlen) {
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(
        (const char *)llvm_math_bitcode, llvm_math_bitcode_size, "llvm_math.bc", 0);
    LLVMModuleRef math = NULL;
    LLVMBool bad = LLVMParseBitcodeInContext2(ctx, buf, &math);
    LLVMDisposeMemoryBuffer(buf); /* the module is fully read: it keeps no reference */
    if (bad || !math) {
        snprintf(err, errlen, "internal error: the embedded math bitcode does not parse");
        return -1;
    }
    LLVMSetTarget(math, LLVMGetTarget(mod));
    LLVMSetDataLayout(math, LLVMGetDataLayoutStr(mod));
    /* only what the kernels call stays external; globaldce then drops the rest */
    for (LLVMValueRef fn = LLVMGetFirstFunction(math); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMIsDeclaration(fn)) continue;
        const char *name = LLVMGetValueName(fn);
        if (!LLVMGetNamedFunction(mod, name)) LLVMSetLinkage(fn, LLVMInternalLinkage);
    }
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(math, "globaldce", NULL, po);
    LLVMDisposePassBuilderOptions(po);
    if (take_error(e, "LLVM passes on the math bitcode", err, errlen)) {
        LLVMDisposeModule(math);
        return -1;
    }
    if (LLVMLinkModules2(mod, math)) { /* math is destroyed either way */
        snprintf(err, errlen, "internal error: linking the math bitcode failed");
        return -1;
    }
    if (!fma) unfuse_math(mod);
    unsigned always = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
    unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
    unsigned optnone = LLVMGetEnumAttributeKindForName("optnone", 7);
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMIsDeclaration(fn) || strncmp(LLVMGetValueName(fn), "llvm_math_", 10) != 0) continue;
        LLVMSetLinkage(fn, LLVMInternalLinkage);
        LLVMRemoveEnumAttributeAtIndex(fn, LLVMAttributeFunctionIndex, noinline);
        LLVMRemoveEnumAttributeAtIndex(fn, LLVMAttributeFunctionIndex, optnone);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(ctx, always, 0));
    }
    return 0;
}

/* Asks LLVM to vectorize the loops it vectorizes itself (a row's last sweep, element-wise
 * loops, the max's integer keys) at the target's full width, the width fusec plans with.
 * LLVM's tuning for Intel's AVX-512 CPUs (and x86-64-v4) prefers 256-bit vectors, so those
 * loops ran at half width beside fusec's own 512-bit ones: on a Xeon (model 207) GELU over 2^22
 * and 2^26 floats took 1.3x and 1.15x as long, softmax and layernorm up to 1.08x (both builds
 * in one process: bench/RESULTS.md, "Vectors of the target's width"). The bits do not change:
 * no loop LLVM vectorizes reassociates float arithmetic. Where LLVM's choice is the target's
 * width already (Zen, AVX2, SSE), the objects are byte for byte the same. */
static void prefer_width(LLVMContextRef ctx, LLVMModuleRef mod, const llvm_gen_options *o) {
    if (!o || o->vector_bytes <= 0) return;
    char bits[16];
    int n = snprintf(bits, sizeof bits, "%d", o->vector_bytes * 8);
    LLVMAttributeRef a =
        LLVMCreateStringAttribute(ctx, "prefer-vector-width", 19, bits, (unsigned)n);
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
        if (!LLVMIsDeclaration(f)) LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, a);
}

/* O3 (after `first`, a pass list or ""), then the generator's passes after it. 0, or -1 with
 * err. */
static int optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *first,
                    rt_jit_times *tm_, char *err, size_t errlen) {
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
    LLVMPassBuilderOptionsSetLoopInterleaving(po, 1);
    /* no unrolling beyond the vectorizer's interleaving: the bodies are long (inlined math),
     * unrolling them gains nothing measurable and doubles the compile time */
    LLVMPassBuilderOptionsSetLoopUnrolling(po, 0);
    char pipeline[64];
    snprintf(pipeline, sizeof pipeline, "%s%sdefault<O3>", first, *first ? "," : "");
    double t0 = now_ms();
    int rc = take_error(LLVMRunPasses(mod, pipeline, tm, po), "LLVM O3 pipeline", err, errlen);
    if (!rc) {
        llvm_lower_prefetch_hints(mod);
        llvm_release_used(mod);
        rc = take_error(LLVMRunPasses(mod, "globaldce", tm, po), "LLVM globaldce", err, errlen);
    }
    LLVMDisposePassBuilderOptions(po);
    tm_->opt = now_ms() - t0;
    return rc;
}

/* Code generation: the object into *obj (malloc'd) and *len. 0, or -1 with err. */
static int emit(LLVMModuleRef mod, LLVMTargetMachineRef tm, const jit_diag *diag, void **obj,
                size_t *len, rt_jit_times *tm_, char *err, size_t errlen) {
    LLVMMemoryBufferRef out = NULL;
    char *msg = NULL;
    double t0 = now_ms();
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &out))
        return take_message(msg, "LLVM code generation", err, errlen);
    tm_->emit = now_ms() - t0;
    int rc = -1;
    size_t n = LLVMGetBufferSize(out);
    if (diag->error[0]) {
        snprintf(err, errlen, "LLVM: %s", diag->error);
    } else if (!(*obj = malloc(n ? n : 1))) {
        snprintf(err, errlen, "out of memory");
    } else {
        memcpy(*obj, LLVMGetBufferStart(out), n);
        *len = n;
        rc = 0;
    }
    LLVMDisposeMemoryBuffer(out);
    return rc;
}

static int optimize_emit(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *first,
                         const jit_diag *diag, void **obj, size_t *len, rt_jit_times *tm_,
                         char *err, size_t errlen) {
    if (optimize(mod, tm, first, tm_, err, errlen)) return -1;
    return emit(mod, tm, diag, obj, len, tm_, err, errlen);
}

/* ---- a build split across threads ---------------------------------------------------------
 * A module with several kernels that share nothing but the math (a file's functions, a
 * gradient and its forward, kernels split into pieces) is built in parts, one a thread
 * (cpu_jit_split.c): each part's thread parses the module's bitcode (after mergefunc, so
 * identical kernels stay one) into a context of its own, deletes the other parts' kernels,
 * and optimizes and emits what is left; the objects go into one blob (cpu_jit.h) that fusec's
 * loader loads together. The code of each kernel is what a whole build makes of it. A module of
 * one group (one kernel, usually) is split the same way between its bodies (jit_bodies_plan: the
 * row body, the short-row body and the one-element body apart, the entry in the last part,
 * whose object the loader loads last, resolving its calls to the others): external bodies are
 * optimized without O3's work across their calls, so their code differs a little from a whole
 * build's (softmax's row body 2338 instructions against 2361), the same IEEE operations (the
 * same bits), and they ran as fast (bench/RESULTS.md). Threads: FUSEC_CPU_BUILD_THREADS, else
 * the CPUs online, at most JIT_SPLIT_MAX_PARTS. */

typedef struct split_part {
    const void *bc;
    size_t bclen;
    const jit_split *plan;
    int part;
    int bodies; /* a split of one kernel's bodies (jit_bodies_plan), else of kernels */
    const llvm_gen_options *o;
    void *obj;
    size_t len;
    rt_jit_times times;
    char err[512];
    int rc;
} split_part;

static void *part_build(void *arg) {
    split_part *s = arg;
    s->rc = -1;
    LLVMContextRef ctx = LLVMContextCreate();
    jit_diag diag = {{0}};
    LLVMContextSetDiagnosticHandler(ctx, jit_diagnostic, &diag);
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(s->bc, s->bclen, "fusec.bc", 0);
    LLVMModuleRef mod = NULL;
    LLVMTargetMachineRef tm = NULL;
    if (LLVMParseBitcodeInContext2(ctx, buf, &mod) || !mod) {
        snprintf(s->err, sizeof s->err, "internal error: a part's bitcode does not parse");
        mod = NULL;
    } else if ((tm = target_machine(s->o, s->err, sizeof s->err))) {
        if (s->bodies)
            jit_bodies_keep(mod, s->plan, s->part);
        else
            jit_split_keep(mod, s->plan, s->part);
        s->rc =
            optimize_emit(mod, tm, "", &diag, &s->obj, &s->len, &s->times, s->err, sizeof s->err);
    }
    LLVMDisposeMemoryBuffer(buf);
    if (mod) LLVMDisposeModule(mod);
    if (tm) LLVMDisposeTargetMachine(tm);
    LLVMContextDispose(ctx);
    return NULL;
}

/* FUSEC_CPU_BUILD_THREADS when it is 1 to 256 in decimal digits (as FUSEC_NUM_THREADS), else
 * the CPUs online; at most JIT_SPLIT_MAX_PARTS. */
static int build_threads(void) {
    const char *env = getenv("FUSEC_CPU_BUILD_THREADS");
    long n = 0;
    if (env && *env && strlen(env) <= 3 && strspn(env, "0123456789") == strlen(env))
        n = strtol(env, NULL, 10);
    if (n < 1 || n > 256) n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return n > JIT_SPLIT_MAX_PARTS ? JIT_SPLIT_MAX_PARTS : (int)n;
}

/* Builds mod (mergefunc run) in the parts of plan, on threads (the last part on this one); with
 * bodies, plan is jit_bodies_plan's (and mod exports the bodies). */
static int build_split(LLVMModuleRef mod, const jit_split *plan, int bodies,
                       const llvm_gen_options *o, void **obj, size_t *len, rt_jit_times *tm_,
                       char *err, size_t errlen) {
    LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(mod);
    if (!bc) {
        snprintf(err, errlen, "internal error: the module's bitcode could not be written");
        return -1;
    }
    split_part parts[JIT_SPLIT_MAX_PARTS];
    pthread_t th[JIT_SPLIT_MAX_PARTS];
    int started[JIT_SPLIT_MAX_PARTS] = {0};
    for (int i = 0; i < plan->nparts; i++) {
        split_part p = {.bc = LLVMGetBufferStart(bc),
                        .bclen = LLVMGetBufferSize(bc),
                        .plan = plan,
                        .part = i,
                        .bodies = bodies,
                        .o = o,
                        .rc = -1};
        parts[i] = p;
    }
    for (int i = 0; i + 1 < plan->nparts; i++)
        started[i] = pthread_create(&th[i], NULL, part_build, &parts[i]) == 0;
    for (int i = 0; i < plan->nparts; i++) /* this thread: the last, and any not started */
        if (i + 1 == plan->nparts || !started[i]) part_build(&parts[i]);
    int rc = 0;
    void *objs[JIT_SPLIT_MAX_PARTS];
    size_t lens[JIT_SPLIT_MAX_PARTS];
    for (int i = 0; i < plan->nparts; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        if (parts[i].rc && !rc) {
            snprintf(err, errlen, "%s", parts[i].err);
            rc = -1;
        }
        objs[i] = parts[i].obj;
        lens[i] = parts[i].len;
        if (parts[i].times.opt > tm_->opt) tm_->opt = parts[i].times.opt;
        if (parts[i].times.emit > tm_->emit) tm_->emit = parts[i].times.emit;
    }
    LLVMDisposeMemoryBuffer(bc);
    if (!rc && jit_objs_pack(objs, lens, plan->nparts, obj, len)) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    for (int i = 0; i < plan->nparts; i++)
        free(objs[i]);
    return rc;
}

/* The whole module in parts when it has kernels enough (and is for fusec's loader), else as
 * one: the object (or the blob of the parts' objects) into *obj. */
static int optimize_module(LLVMModuleRef mod, LLVMTargetMachineRef tm, const gen_job *job,
                           const llvm_gen_options *o, const jit_diag *diag, void **obj, size_t *len,
                           rt_jit_times *tm_, char *err, size_t errlen) {
    int threads = job->meta && o && o->shared_copies ? build_threads() : 1;
    if (threads < 2) return optimize_emit(mod, tm, "mergefunc", diag, obj, len, tm_, err, errlen);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    int bad = take_error(LLVMRunPasses(mod, "mergefunc", tm, po), "LLVM mergefunc", err, errlen);
    LLVMDisposePassBuilderOptions(po);
    if (bad) return -1;
    jit_split plan;
    int nparts = jit_split_plan(mod, threads, &plan), bodies = nparts == 1;
    /* one group: its bodies in parts, where they are large enough */
    if (bodies && (nparts = jit_bodies_plan(mod, threads, &plan)) >= 2)
        jit_bodies_export(mod, &plan);
    if (nparts < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (nparts < 2) return optimize_emit(mod, tm, "", diag, obj, len, tm_, err, errlen);
    int rc = build_split(mod, &plan, bodies, o, obj, len, tm_, err, errlen);
    jit_split_free(&plan);
    return rc;
}

static int build_job(const gen_job *job, const llvm_gen_options *o, ir_arena *arena, void **obj,
                     size_t *len, rt_jit_times *times, char *err, size_t errlen) {
    *obj = NULL;
    *len = 0;
    rt_jit_times tm_ = {0, 0, 0, 0};
    if (jit_init(err, errlen)) return -1;
    int rc = -1;
    LLVMContextRef ctx = LLVMContextCreate();
    jit_diag diag = {{0}};
    LLVMContextSetDiagnosticHandler(ctx, jit_diagnostic, &diag);
    LLVMModuleRef mod = NULL;
    LLVMTargetMachineRef tm = target_machine(o, err, errlen);
    if (!tm) goto done;

    double t0 = now_ms();
    mod = generate(ctx, tm, job, o, arena, err, errlen);
    if (!mod) goto done;
    double t1 = now_ms();
    if (!job->copy) {
        if (link_math(ctx, mod, o->fma, err, errlen)) goto done;
        llvm_outline_math(mod, o ? o->vector_bytes : 0);
    }
    prefer_width(ctx, mod, o);
    double t2 = now_ms();
    if (optimize_module(mod, tm, job, o, &diag, obj, len, &tm_, err, errlen)) goto done;
    tm_.gen = t1 - t0;
    tm_.link = t2 - t1;
    rc = 0;
done:
    if (times) *times = tm_;
    if (mod) LLVMDisposeModule(mod);
    if (tm) LLVMDisposeTargetMachine(tm);
    LLVMContextDispose(ctx);
    return rc;
}

static int jit_build(const llvm_module_meta *meta, const llvm_gen_options *o, ir_arena *arena,
                     void **obj, size_t *len, rt_jit_times *times, char *err, size_t errlen) {
    gen_job job = {meta, NULL};
    return build_job(&job, o, arena, obj, len, times, err, errlen);
}

static int jit_build_copy(const char *name, const llvm_gen_options *o, ir_arena *arena, void **obj,
                          size_t *len, rt_jit_times *times, char *err, size_t errlen) {
    gen_job job = {NULL, name};
    return build_job(&job, o, arena, obj, len, times, err, errlen);
}

static int jit_print_ir(const llvm_module_meta *meta, const llvm_gen_options *o, ir_arena *arena,
                        ir_buf *buf, char *err, size_t errlen) {
    if (jit_init(err, errlen)) return -1;
    LLVMContextRef ctx = LLVMContextCreate();
    jit_diag diag = {{0}};
    LLVMContextSetDiagnosticHandler(ctx, jit_diagnostic, &diag);
    LLVMTargetMachineRef tm = target_machine(o, err, errlen);
    int rc = -1;
    if (tm) {
        gen_job job = {meta, NULL};
        LLVMModuleRef mod = generate(ctx, tm, &job, o, arena, err, errlen);
        if (mod && diag.error[0]) { /* as a build reports it (take_error's kin) */
            snprintf(err, errlen, "LLVM: %s", diag.error);
        } else if (mod) {
            char *text = LLVMPrintModuleToString(mod);
            ir_buf_puts(buf, text);
            LLVMDisposeMessage(text);
            rc = 0;
        }
        if (mod) LLVMDisposeModule(mod);
        LLVMDisposeTargetMachine(tm);
    }
    LLVMContextDispose(ctx);
    return rc;
}

struct rt_jit {
    LLVMOrcLLJITRef jit;
    LLVMOrcResourceTrackerRef rt;
};

static void jit_free(rt_jit *j);

static rt_jit *jit_load(const void *obj, size_t len, char *err, size_t errlen) {
    if (jit_init(err, errlen)) return NULL;
    rt_jit *j = calloc(1, sizeof(*j));
    if (!j) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (take_error(LLVMOrcCreateLLJIT(&j->jit, NULL), "LLVM LLJIT", err, errlen)) goto fail;
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
    LLVMOrcDefinitionGeneratorRef gen = NULL;
    if (take_error(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
                       &gen, LLVMOrcLLJITGetGlobalPrefix(j->jit), NULL, NULL),
                   "LLVM process symbols", err, errlen))
        goto fail;
    LLVMOrcJITDylibAddGenerator(jd, gen); /* gen is owned by the JITDylib now */
    j->rt = LLVMOrcJITDylibCreateResourceTracker(jd);
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len, "fusec.o");
    /* buf is owned by the JIT from here on, whether adding succeeds or not */
    if (take_error(LLVMOrcLLJITAddObjectFileWithRT(j->jit, j->rt, buf), "LLVM adding object code",
                   err, errlen))
        goto fail;
    return j;
fail:
    jit_free(j);
    return NULL;
}

static void *jit_lookup(rt_jit *j, const char *name, char *err, size_t errlen) {
    LLVMOrcExecutorAddress addr = 0;
    if (take_error(LLVMOrcLLJITLookup(j->jit, &addr, name), "LLVM symbol lookup", err, errlen))
        return NULL;
    return (void *)(uintptr_t)addr;
}

static void jit_free(rt_jit *j) {
    if (!j) return;
    if (j->rt) {
        char err[256];
        /* the code goes with its tracker; a failure here leaves nothing to act on */
        take_error(LLVMOrcResourceTrackerRemove(j->rt), "LLVM", err, sizeof err);
        LLVMOrcReleaseResourceTracker(j->rt);
    }
    if (j->jit) {
        char err[256];
        take_error(LLVMOrcDisposeLLJIT(j->jit), "LLVM", err, sizeof err);
    }
    free(j);
}

static const rt_llvm_api api = {
    .version = RT_LLVM_API_VERSION,
    .size = sizeof(rt_llvm_api),
    .init = jit_init,
    .cpu_name = jit_cpu_name,
    .cpu_features = jit_cpu_features,
    .host_options = jit_host_options,
    .build = jit_build,
    .build_copy = jit_build_copy,
    .print_ir = jit_print_ir,
    .load = jit_load,
    .lookup = jit_lookup,
    .free = jit_free,
    .wrappers = rt_aot_wrappers_object,
};

/* The module's one exported symbol (RT_LLVM_MODULE_ENTRY). */
__attribute__((visibility("default"))) const rt_llvm_api *fusec_llvm_module_api(void);

const rt_llvm_api *fusec_llvm_module_api(void) {
    return &api;
}
