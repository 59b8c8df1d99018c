/* driver/module.h: what driver/aot/aot_write.c needs of a module's insides (driver/api.c):
 * its backend's library image of its functions, its target, and its message. Not public.
 */
#ifndef FUSEC_RUNTIME_MODULE_H
#define FUSEC_RUNTIME_MODULE_H

#include <stddef.h>

#include "fusec.h"
#include "ir/ir.h"

/* m's functions (as fused: the order of the image's) built by its target's backend for each
 * of `archs` (CPUs or GPU architectures) into a library image (runtime/aot/aot_image.h):
 * *image malloc'd. On failure, m's message says why. */
fusec_status rt_module_library_image(fusec_module *m, const char *const *archs, int narchs,
                                     unsigned char **image, size_t *len, ir_func *const **funcs,
                                     int *nfuncs);
/* The name of m's target's backend: "cpu", "cuda", "ref" ("none" before it has one). */
const char *rt_module_target(const fusec_module *m);

/* Sets m's message (fusec_module_message) and returns st. */
fusec_status rt_module_fail(fusec_module *m, fusec_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The file m was compiled from ("" for a string). */
const char *rt_module_path(const fusec_module *m);

#endif
