/* driver/cpu/cpu_jit_split.h: a module's kernels in parts for a build across threads, and the
 * blob of several objects it yields (driver/cpu/cpu_jit_split.c; the blob's layout is
 * cpu_jit.h's, which the loader reads). Internal to libfusec_llvm.so. */
#ifndef FUSEC_DRIVER_CPU_JIT_SPLIT_H
#define FUSEC_DRIVER_CPU_JIT_SPLIT_H

#include <llvm-c/Core.h>
#include <stddef.h>

#include "driver/cpu/cpu_jit.h"

#define JIT_SPLIT_MAX_PARTS RT_JIT_OBJS_MAX

/* The module's kernel functions (every defined function but the math's), by name, and the part
 * each goes to. */
typedef struct jit_split {
    int n, nparts;
    char **names;
    int *part;
} jit_split;

/* Plans parts of `mod` for at most max_parts threads: the number of parts (1: build it whole,
 * and *s is empty), or -1 when out of memory. */
int jit_split_plan(LLVMModuleRef mod, int max_parts, jit_split *s);
/* Deletes from mod (a copy of the planned module) the kernel functions of the other parts. */
void jit_split_keep(LLVMModuleRef mod, const jit_split *s, int part);
void jit_split_free(jit_split *s);

/* One group's bodies in parts: the kernels' internal functions (their bodies) in groups as
 * above, every entry in the last part, which calls into the others (its object is loaded last,
 * so that the loader finds what it calls). The number of parts, 1, or -1. */
int jit_bodies_plan(LLVMModuleRef mod, int max_parts, jit_split *s);
/* Makes the planned internal functions of mod external and hidden, as a call from another
 * part's object needs them, before its bitcode goes to the parts. */
void jit_bodies_export(LLVMModuleRef mod, const jit_split *s);
/* In a part's copy: the other parts' functions that this part calls become declarations, the
 * rest are deleted. */
void jit_bodies_keep(LLVMModuleRef mod, const jit_split *s, int part);

/* The n objects in one blob (RT_JIT_OBJS_MAGIC, cpu_jit.h): *out malloc'd. 0, or -1 when out of
 * memory. */
int jit_objs_pack(void *const *objs, const size_t *lens, int n, void **out, size_t *outlen);

#endif
