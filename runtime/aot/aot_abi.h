/* runtime/aot/aot_abi.h: what the entry points of a library built ahead of time (fusec
 * --emit=lib) call in the runtime (runtime/aot/aot_call.c, libfusec_rt): the one contract
 * between the generated wrapper object (driver/aot/aot_wrappers.c writes it) and the runtime it
 * is archived with.
 *
 * The wrapper object defines, for a library NAME, a fusec_rt_lib `NAME_fusec_lib` (the image,
 * its length, a state pointer zero until the first call), and for each function FN
 *
 *     int NAME_FN(T0 *p0, ..., int64_t s0, ..., void *stream)
 *         { void *ptrs[] = {p0, ...}; int64_t syms[] = {s0, ...};
 *           return fusec_rt_call(&NAME_fusec_lib, index of FN, ptrs, syms, stream); }
 *
 * and NAME_last_error() and NAME_target() calling the functions below. The archive holds the
 * runtime it was written with, so the two always agree.
 */
#ifndef FUSEC_RUNTIME_AOT_ABI_H
#define FUSEC_RUNTIME_AOT_ABI_H

#include <stdint.h>

typedef struct fusec_rt_lib {
    const unsigned char *image; /* runtime/aot/aot_image.h's bytes, 16-byte aligned */
    uint64_t len;
    void *state; /* the loaded library; set once, atomically, by the first call */
} fusec_rt_lib;

/* Runs function `func` of the library: ptrs, one per parameter then one per result; syms,
 * one per symbolic dim. 0, or a fusec_status (then fusec_rt_last_error says why). */
int fusec_rt_call(fusec_rt_lib *lib, int32_t func, void *const *ptrs, const int64_t *syms,
                  void *stream);
/* The message of this thread's last failed call ("" when none failed). */
const char *fusec_rt_last_error(void);
/* The CPU whose code the library runs here ("x86-64-v3"), or NULL when it holds none this CPU
 * runs (then every call fails, saying so). Loads the library when no call has. */
const char *fusec_rt_target(fusec_rt_lib *lib);

#endif
