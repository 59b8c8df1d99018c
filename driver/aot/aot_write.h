/* driver/aot/aot_write.h: writing a library built ahead of time (fusec --emit=lib): its
 * header (driver/aot/aot_header.c), its wrapper object (driver/aot/aot_wrappers.c, in the
 * LLVM module), the archive (driver/aot/aot_archive.c), and the whole (driver/aot/aot_write.c).
 * The compiler's side; what the library runs with is runtime/aot/aot_abi.h's.
 */
#ifndef FUSEC_RUNTIME_AOT_WRITE_H
#define FUSEC_RUNTIME_AOT_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "runtime/aot/aot_image.h"

/* One entry point: int SYMBOL(nptrs pointers, nsyms int64_t, void *stream), which calls
 * function `func` of image `image`. */
typedef struct rt_aot_entry {
    const char *symbol;
    int32_t image, func;
    int32_t nptrs, nsyms;
} rt_aot_entry;

/* What the wrapper object holds: for library NAME, image i's bytes and its fusec_rt_lib
 * NAME_fusec_lib<i>, the entries, NAME_last_error() and NAME_target() (of image 0). */
typedef struct rt_aot_wrappers {
    const char *name;
    int32_t nimages;
    const unsigned char *const *images;
    const size_t *image_lens;
    int32_t nentries;
    const rt_aot_entry *entries;
} rt_aot_wrappers;

/* The wrapper object (x86-64 ELF, position independent, for any x86-64): *obj malloc'd. 0, or
 * -1 with err. In the LLVM module: reached through rt_llvm_api.wrappers. */
int rt_aot_wrappers_object(const rt_aot_wrappers *w, void **obj, size_t *len, char *err,
                           size_t errlen);

/* An archive member. */
typedef struct rt_ar_member {
    const char *name; /* at most 15 characters */
    const unsigned char *data;
    size_t len;
} rt_ar_member;

/* The members of the archive at `data` (a System V / GNU ar file, as CMake's ar writes),
 * their data pointing into it: *members and their names malloc'd (rt_ar_members_free). 0, or
 * -1 with err. */
int rt_ar_read(const unsigned char *data, size_t len, rt_ar_member **members, int *n, char *err,
               size_t errlen);
/* Frees what rt_ar_read allocated (the names and the array). */
void rt_ar_members_free(rt_ar_member *members, int n);
/* An archive of `members` with a symbol index of the global symbols each ELF member defines
 * (the index a linker needs), to `path`. 0, or -1 with err. */
int rt_ar_write(const char *path, const rt_ar_member *members, int n, char *err, size_t errlen);

/* Each function's signature, as the library's entry points take it, in arena a. */
rt_image_sig *rt_aot_signatures(ir_func *const *funcs, int nfuncs, ir_arena *a);

/* The C header of a library NAME: its entries, each function's signature. `funcs` are the
 * images' functions in the order of `entries` (one each). Appended to out. */
void rt_aot_header(ir_buf *out, const char *name, const ir_func *const *funcs,
                   const rt_aot_entry *entries, int n, const char *target);

#endif
