/* runtime/cpu/cpu_elf.h: a loader for the CPU backend's cached object code that needs no LLVM:
 * an x86-64 ELF relocatable object (what LLVM emits for the host, PIC, small code model) is
 * laid out in one mapping (code, then read-only data), relocated, protected (code r-x, data
 * r--) and its global functions looked up by name. External symbols (libm's functions for f64
 * math, memcpy; the short rows' copy functions, in objects of their own, through the caller's
 * resolver: rt_elf_load_with) are found with dlsym and reached through stubs and GOT slots
 * placed in the same mapping.
 *
 * Why it exists: a process that finds its kernels in the disk cache should not pay for
 * loading LLVM (tens of milliseconds); ORC LLJIT (driver/cpu/cpu_jit.c) loads what was just
 * compiled, when LLVM is in the process anyway. Only the relocation types LLVM's x86-64 ELF
 * writer produces for such code are handled; anything else is refused with a message, never
 * guessed at.
 */
#ifndef FUSEC_RUNTIME_CPU_ELF_H
#define FUSEC_RUNTIME_CPU_ELF_H

#include <stddef.h>

typedef struct rt_elf rt_elf;

/* 1 when this build can load objects on this machine (x86-64 Linux). */
int rt_elf_supported(void);
/* Loads an object (copied). NULL with a message in err when it is not a relocatable x86-64
 * ELF object, uses an unsupported relocation, or names a symbol the process lacks. */
rt_elf *rt_elf_load(const void *obj, size_t len, char *err, size_t errlen);
/* Finds an external symbol of an object for rt_elf_load_with before the process's (dlsym):
 * its address, or NULL to look in the process; a failure sets *failed, with a message in err. */
typedef void *(*rt_elf_resolver)(void *ctx, const char *name, int *failed, char *err,
                                 size_t errlen);
/* rt_elf_load, its external symbols looked up by resolve (with ctx) first. */
rt_elf *rt_elf_load_with(const void *obj, size_t len, rt_elf_resolver resolve, void *ctx, char *err,
                         size_t errlen);
/* The address of defined global symbol `name`, or NULL. */
void *rt_elf_lookup(const rt_elf *e, const char *name);
void rt_elf_free(rt_elf *e); /* NULL is accepted */

#endif
