/* driver/cpu/cpu_jit_split.c: a module's kernels in parts that share nothing but the math, for
 * a build across threads (driver/cpu/cpu_jit.c), and the blob that holds the parts' objects.
 *
 * A part is a set of kernels with every internal function they call: kernels that reach the
 * same non-math function (a body mergefunc made shared, a kernel's pieces and their join) are
 * one group, found by union-find over the references between defined functions. The math
 * (llvm_is_math_fn) is nobody's: every part keeps its own copy, inlined or out of line, and
 * globaldce drops what a part does not call. Groups go to parts largest first, each to the part
 * with the fewest instructions so far. Everything here runs on the LLVM module before O3
 * (and after mergefunc), in the build's thread, except jit_split_keep, which each part's thread
 * runs on its own copy of the module.
 *
 * A module of one group (a kernel) is split between its bodies (jit_bodies_plan): the entries
 * out of the groups, all in the last part, which calls into the others; the bodies made
 * external and hidden for that (jit_bodies_export), and declared where called from another
 * part (jit_bodies_keep).
 */
#include "driver/cpu/cpu_jit_split.h"

#include "codegen/cpu/llvm_module.h"
#include "driver/cpu/cpu_jit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Instructions a part should have at least: below, the copy of the module and the math that
 * every part optimizes again cost more than the threads save. */
#define PART_MIN_INSTS 1500

static int root_of(int *up, int i) {
    while (up[i] != i)
        i = up[i] = up[up[i]];
    return i;
}

/* The index of the kernel function fn among fns[0 .. n), or -1 (the math, a declaration). */
static int index_of(LLVMValueRef *fns, int n, LLVMValueRef fn) {
    for (int i = 0; i < n; i++)
        if (fns[i] == fn) return i;
    return -1;
}

/* Joins f's group with that of every kernel function its instructions name (called, or used
 * as a value, also inside a constant expression). */
static void join_references(LLVMValueRef *fns, int n, int *up, int f) {
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fns[f]); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
            int nops = LLVMGetNumOperands(in);
            for (int k = 0; k < nops; k++) {
                LLVMValueRef op = LLVMGetOperand(in, (unsigned)k);
                if (op && LLVMIsAConstantExpr(op) && LLVMGetNumOperands(op) > 0)
                    op = LLVMGetOperand(op, 0);
                if (!op || !LLVMIsAFunction(op)) continue;
                int g = index_of(fns, n, op);
                if (g >= 0) up[root_of(up, g)] = root_of(up, f);
            }
        }
}

static int instructions(LLVMValueRef fn) {
    int n = 0;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in))
            n++;
    return n;
}

/* Assigns groups (roots in up, weights in w) to at most max parts, the last of which holds
 * `preload` already: part[i] for function i (left as it is, all 0, when out of memory). */
static void assign(int n, int *up, const int *w, int max, int preload, int *part) {
    int *gw = calloc((size_t)n, sizeof *gw), *gpart = malloc((size_t)n * sizeof *gpart);
    int load[JIT_SPLIT_MAX_PARTS] = {0};
    load[max - 1] = preload;
    if (!gw || !gpart) {
        free(gw), free(gpart);
        return;
    }
    for (int i = 0; i < n; i++)
        gw[root_of(up, i)] += w[i];
    for (int i = 0; i < n; i++)
        gpart[i] = -1;
    for (;;) { /* the heaviest group left, to the lightest part */
        int best = -1;
        for (int i = 0; i < n; i++)
            if (root_of(up, i) == i && gpart[i] < 0 && (best < 0 || gw[i] > gw[best])) best = i;
        if (best < 0) break;
        int p = 0;
        for (int k = 1; k < max; k++)
            if (load[k] < load[p]) p = k;
        gpart[best] = p;
        load[p] += gw[best];
    }
    for (int i = 0; i < n; i++)
        part[i] = gpart[root_of(up, i)];
    free(gw), free(gpart);
}

/* A kernel's entry: the exported function a launch looks up (every other kernel function is
 * internal until jit_bodies_export). */
static int is_entry(LLVMValueRef fn) {
    return LLVMGetLinkage(fn) == LLVMExternalLinkage;
}

/* Numbers the parts in use 0, 1, ... in their order (the last, an entries' part, stays last). */
static int compact(int n, int *part, int max) {
    int map[JIT_SPLIT_MAX_PARTS], used[JIT_SPLIT_MAX_PARTS] = {0}, k = 0;
    for (int i = 0; i < n; i++)
        used[part[i]] = 1;
    for (int p = 0; p < max; p++)
        map[p] = used[p] ? k++ : -1;
    for (int i = 0; i < n; i++)
        part[i] = map[part[i]];
    return k;
}

/* Keeps the names of fns and their parts in s. 0, or -1 when out of memory. */
static int keep_names(LLVMValueRef *fns, int n, int *part, int nparts, jit_split *s) {
    char **names = calloc((size_t)n, sizeof *names);
    for (int i = 0; names && i < n; i++) {
        size_t len = 0;
        const char *name = LLVMGetValueName2(fns[i], &len);
        if (!(names[i] = malloc(len + 1))) {
            for (int k = 0; k < i; k++)
                free(names[k]);
            free(names);
            return -1;
        }
        memcpy(names[i], name, len);
        names[i][len] = 0;
    }
    if (!names) return -1;
    s->n = n;
    s->names = names;
    s->part = part;
    s->nparts = nparts;
    return 0;
}

/* The plan of either split: the kernel functions in groups (union-find over their
 * references), the groups in at most max_parts parts; with entries_apart, the entries out of
 * the groups and all in the last part (they call into the other parts; nothing calls them). */
static int plan(LLVMModuleRef mod, int max_parts, int entries_apart, jit_split *s) {
    memset(s, 0, sizeof *s);
    if (max_parts > JIT_SPLIT_MAX_PARTS) max_parts = JIT_SPLIT_MAX_PARTS;
    int n = 0, total = 0, entries = 0;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
        if (!LLVMIsDeclaration(fn) && !llvm_is_math_fn(fn)) n++;
    if (max_parts < 2 || n < 2) return 1;
    LLVMValueRef *fns = calloc((size_t)n, sizeof *fns);
    int *up = calloc((size_t)n, sizeof *up), *w = calloc((size_t)n, sizeof *w);
    int *part = calloc((size_t)n, sizeof *part);
    int nparts = 1, i = 0;
    if (!fns || !up || !w || !part) goto done;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
        if (!LLVMIsDeclaration(fn) && !llvm_is_math_fn(fn)) fns[i++] = fn;
    for (i = 0; i < n; i++) {
        up[i] = i;
        total += w[i] = instructions(fns[i]);
    }
    for (i = 0; i < n; i++)
        if (!entries_apart || !is_entry(fns[i])) join_references(fns, n, up, i);
    if (total / PART_MIN_INSTS < max_parts) max_parts = total / PART_MIN_INSTS;
    if (max_parts < 2) goto done;
    if (entries_apart) /* each entry its own group, weighed into the last part beforehand */
        for (i = 0; i < n; i++)
            if (is_entry(fns[i])) {
                entries += w[i];
                w[i] = 0;
            }
    assign(n, up, w, max_parts, entries, part);
    if (entries_apart)
        for (i = 0; i < n; i++)
            if (is_entry(fns[i])) part[i] = max_parts - 1;
    nparts = compact(n, part, max_parts);
    if (nparts >= 2 && keep_names(fns, n, part, nparts, s) == 0)
        part = NULL;
    else if (nparts >= 2)
        nparts = -1;
done:
    free(part), free(fns), free(up), free(w);
    return nparts < 2 && nparts >= 0 ? 1 : nparts;
}

int jit_split_plan(LLVMModuleRef mod, int max_parts, jit_split *s) {
    return plan(mod, max_parts, 0, s);
}

int jit_bodies_plan(LLVMModuleRef mod, int max_parts, jit_split *s) {
    return plan(mod, max_parts, 1, s);
}

void jit_bodies_export(LLVMModuleRef mod, const jit_split *s) {
    for (int i = 0; i < s->n; i++) {
        LLVMValueRef fn = LLVMGetNamedFunction(mod, s->names[i]);
        if (!fn || is_entry(fn)) continue;
        LLVMSetLinkage(fn, LLVMExternalLinkage);
        LLVMSetVisibility(fn, LLVMHiddenVisibility);
    }
}

/* The part this plan gives the function named `name`, or -1 (not a kernel function). */
static int part_of(const jit_split *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name)) return s->part[i];
    return -1;
}

/* fn made a declaration of the same name, type and calling convention (LLVM-C has no call to
 * drop a body): a new function takes its uses and, once fn is deleted, its name. */
static void to_declaration(LLVMModuleRef mod, LLVMValueRef fn) {
    size_t len = 0;
    const char *name = LLVMGetValueName2(fn, &len);
    char *copy = malloc(len + 1); /* fn's name goes with it */
    if (!copy) return;            /* fn stays defined: this part calls its own copy */
    memcpy(copy, name, len);
    LLVMValueRef decl = LLVMAddFunction(mod, "", LLVMGlobalGetValueType(fn));
    LLVMSetFunctionCallConv(decl, LLVMGetFunctionCallConv(fn));
    LLVMReplaceAllUsesWith(fn, decl);
    LLVMDeleteFunction(fn);
    LLVMSetValueName2(decl, copy, len);
    LLVMSetVisibility(decl, LLVMHiddenVisibility);
    free(copy);
}

/* Deletes the other parts' kernel functions from mod; with `declare`, those that this part's
 * functions call become declarations instead (a split of bodies: an entry calls its bodies in
 * the parts before). Without it, the other parts' functions are named only by one
 * another (jit_split_plan): the uses left are in functions that go too. */
static void keep_part(LLVMModuleRef mod, const jit_split *s, int part, int declare) {
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod), next; fn; fn = next) {
        next = LLVMGetNextFunction(fn);
        if (LLVMIsDeclaration(fn) || llvm_is_math_fn(fn)) continue;
        int p = part_of(s, LLVMGetValueName(fn));
        if (p < 0 || p == part) continue;
        if (declare && LLVMGetFirstUse(fn)) {
            to_declaration(mod, fn);
        } else {
            LLVMReplaceAllUsesWith(fn, LLVMGetUndef(LLVMTypeOf(fn)));
            LLVMDeleteFunction(fn);
        }
    }
}

void jit_bodies_keep(LLVMModuleRef mod, const jit_split *s, int part) {
    keep_part(mod, s, part, 1);
}

void jit_split_keep(LLVMModuleRef mod, const jit_split *s, int part) {
    keep_part(mod, s, part, 0);
}

void jit_split_free(jit_split *s) {
    for (int i = 0; s->names && i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    free(s->part);
    memset(s, 0, sizeof *s);
}

int jit_objs_pack(void *const *objs, const size_t *lens, int n, void **out, size_t *outlen) {
    size_t at = RT_JIT_OBJS_HEADER(n);
    for (int i = 0; i < n; i++)
        at = RT_JIT_OBJS_ALIGN(at) + lens[i];
    unsigned char *p = malloc(at);
    if (!p) return -1;
    memset(p, 0, at);
    memcpy(p, RT_JIT_OBJS_MAGIC, 8);
    uint64_t count = (uint64_t)n;
    memcpy(p + 8, &count, 8);
    at = RT_JIT_OBJS_HEADER(n);
    for (int i = 0; i < n; i++) {
        uint64_t len = lens[i];
        memcpy(p + 16 + 8 * (size_t)i, &len, 8);
        at = RT_JIT_OBJS_ALIGN(at);
        memcpy(p + at, objs[i], lens[i]);
        at += lens[i];
    }
    *out = p;
    *outlen = at;
    return 0;
}
