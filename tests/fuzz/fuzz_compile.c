/* tests/fuzz/fuzz_compile.c: libFuzzer target for the compiler short of NVRTC and the JIT.
 * Any byte string is lexed, parsed, checked and lowered, and the AST printed; each function
 * the checker accepts then goes through the pass pipeline fused and --no-fuse, CUDA C
 * generation, the CPU backend's planner and the reference interpreter on small shapes.
 * ASan/UBSan and libFuzzer catch crashes, leaks, hangs and memory blow-ups; an internal error
 * in any stage (the checker reporting its own bug, such as a gradient's IR that does not
 * verify; a pass or the verifier failing, a generator refusing what the checker accepted)
 * traps, so that the fuzzer keeps the input. Built by -DFUSEC_FUZZ=ON (clang). */
#include "codegen/cuda/cuda.h"
#include "codegen/cpu/llvm.h"
#include "frontend/frontend.h"
#include "driver/pipeline.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An accepted program that the rest of the compiler cannot take is a bug: stop there. */
static void internal_error(const char *stage, const char *fn, const char *err) {
    fprintf(stderr, "fuzz: %s failed on '%s': %s\n", stage, fn, err);
    __builtin_trap();
}

/* Small random inputs, fixed by the seed: every dtype, zeros included (division by zero,
 * log 0), so that the interpreter meets the edges of each op. */
static uint32_t next(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static void fill(ir_dtype t, void *data, int64_t n, uint32_t *seed) {
    for (int64_t i = 0; i < n; i++) {
        double v = ((double)(next(seed) % 2001) - 1000.0) / 250.0; /* [-4, 4], 0 included */
        switch (t) {
        case IR_BOOL: ((uint8_t *)data)[i] = (uint8_t)(next(seed) & 1); break;
        case IR_I32: ((int32_t *)data)[i] = (int32_t)(next(seed) % 13) - 6; break;
        case IR_I64: ((int64_t *)data)[i] = (int64_t)(next(seed) % 13) - 6; break;
        case IR_F16: ((uint16_t *)data)[i] = (uint16_t)(0x3c00u ^ (next(seed) & 0x83ffu)); break;
        case IR_BF16: ((uint16_t *)data)[i] = (uint16_t)(0x3f80u ^ (next(seed) & 0x807fu)); break;
        case IR_F32: ((float *)data)[i] = (float)v; break;
        case IR_F64: ((double *)data)[i] = v; break;
        default: break;
        }
    }
}

/* Runs f in the interpreter with its symbolic dims bound to small sizes (1 to 4), when the
 * tensors stay small. Its failures are statuses for the user (max over an empty axis), not
 * bugs. */
static void interpret(const ir_func *f, uint32_t seed) {
    enum { MAX_ELEMS = 4096, MAX_TENSORS = 64 };
    if (f->nparams + f->noutputs > MAX_TENSORS) return;
    int64_t syms[64];
    if (f->nsyms > 64) return;
    for (int32_t i = 0; i < f->nsyms; i++)
        syms[i] = 1 + (int64_t)((seed >> (2 * (i % 16))) & 3);
    ir_tensor t[MAX_TENSORS];
    memset(t, 0, sizeof t);
    int ok = 1;
    for (int32_t i = 0; i < f->nparams + f->noutputs; i++) {
        int in = i < f->nparams;
        const ir_shape *sh = in ? &f->params[i].shape : &f->outputs[i - f->nparams].shape;
        t[i].dtype = in ? f->params[i].dtype : f->outputs[i - f->nparams].dtype;
        t[i].rank = sh->rank;
        ir_shape_concrete(sh, syms, t[i].dims);
        int64_t n = 1;
        for (int32_t d = 0; d < sh->rank && ok; d++) {
            if (t[i].dims[d] < 0 || t[i].dims[d] > MAX_ELEMS) ok = 0;
            n *= t[i].dims[d];
            if (n > MAX_ELEMS) ok = 0;
        }
        if (!ok) break;
        t[i].data = calloc((size_t)(n ? n : 1), (size_t)ir_dtypes[t[i].dtype].bytes);
        if (in && t[i].data) fill(t[i].dtype, t[i].data, n, &seed);
        if (!t[i].data) ok = 0;
    }
    char err[512];
    if (ok) (void)ir_interp_run(f, t, t + f->nparams, err, sizeof err);
    for (int32_t i = 0; i < f->nparams + f->noutputs; i++)
        free(t[i].data);
}

/* The rest of the compiler on every function of an accepted module. */
static void compile_module(ir_module *module, ir_arena *arena, uint32_t seed) {
    char err[512];
    if (module->nfuncs == 0) return;
    for (int no_fuse = 0; no_fuse < 2; no_fuse++) {
        ir_func **fused = ir_arena_calloc(arena, (size_t)module->nfuncs, sizeof *fused);
        for (int32_t i = 0; i < module->nfuncs; i++) {
            ir_buf report;
            ir_buf_init(&report, arena);
            rt_pipeline_options po = {.no_fuse = no_fuse, .verbose = 1, .report = &report};
            if (rt_pipeline_run(module->funcs[i], &po, &fused[i], err, sizeof err) != 0)
                internal_error(no_fuse ? "the --no-fuse pipeline" : "the pass pipeline",
                               module->funcs[i]->name, err);
            if (!no_fuse) {
                interpret(module->funcs[i], seed);
                interpret(fused[i], seed);
            }
        }
        cuda_module *cm = NULL;
        if (cuda_generate(arena, fused, module->nfuncs, &cm, err, sizeof err) != 0)
            internal_error("CUDA generation", "the module", err);
        llvm_module_meta *meta = NULL;
        if (llvm_plan_module(fused, module->nfuncs, arena, &meta, err, sizeof err) != 0)
            internal_error("the CPU planner", "the module", err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the source must end in a NUL sentinel; NULs inside it are part of the input */
    char *src = malloc(size + 1);
    if (!src) return 0;
    if (size) memcpy(src, data, size);
    src[size] = 0;

    ir_arena arena;
    ir_arena_init(&arena);
    /* as the compile entry point does: a failed allocation unwinds instead of returning NULL */
    arena.limit = (size_t)1 << 30;
    jmp_buf oom;
    if (setjmp(oom) == 0) {
        arena.oom = &oom;
        diag_ctx d;
        diag_init(&d, &arena, "fuzz.fuse", src, size);
        ast_file *file = NULL;
        parse_file(&d, &file);
        ir_buf ast;
        ir_buf_init(&ast, &arena);
        parse_print_ast(&ast, file);
        ir_module *module = NULL;
        check_file(&d, file, &module);
        if (d.ninternal > 0) internal_error("the checker", "the file", d.out.data);
        if (module) compile_module(module, &arena, (uint32_t)size * 2654435761u);
    }
    ir_arena_free(&arena);
    free(src);
    return 0;
}
