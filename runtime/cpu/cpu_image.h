/* runtime/cpu/cpu_image.h: a CPU module as bytes, what a library built ahead of time (fusec
 * --emit=lib) carries: each function's signature (for the typed entry points' checks) and
 * launch description (runtime/cpu/cpu_launch.h), then the module's object code for each CPU
 * it was built for (x86-64 ELF relocatable objects, loaded by runtime/cpu/cpu_elf.c).
 *
 * The writer and the reader are both here, so that the format is stated once. Integers are
 * little-endian; strings NUL-terminated, so that the reader points into the bytes; objects
 * start at multiples of 16 bytes from the image's start (the image is 16-byte aligned in the
 * library), so that the loader reads their headers in place. The reader checks every count and
 * offset against the image's length: a truncated or foreign image is refused, never read past.
 */
#ifndef FUSEC_RUNTIME_CPU_IMAGE_H
#define FUSEC_RUNTIME_CPU_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/cpu/cpu_launch.h"

#define RT_CPU_IMAGE_MAGIC   "FUSECIMG"
#define RT_CPU_IMAGE_VERSION 1

/* A parameter or result as the entry points take it: a dense tensor of this dtype and shape. */
typedef struct rt_image_arg {
    const char *name; /* a parameter's; "" for a result */
    int32_t dtype;    /* ir_dtype */
    ir_shape shape;   /* in the function's symbolic dims */
} rt_image_arg;

typedef struct rt_image_sig {
    int32_t nargs; /* parameters, then results (rt_cpu_func's nparams + noutputs) */
    rt_image_arg *args;
    const char **sym_names; /* rt_cpu_func.nsyms, in order of first appearance */
    /* every value's shape, deduplicated: a launch checks each fits in memory */
    int32_t nshapes;
    ir_shape *shapes;
} rt_image_sig;

typedef struct rt_image_object {
    const char *cpu; /* the CPU it was built for, as rt_cpu_target_find names it */
    const void *data;
    uint64_t len;
} rt_image_object;

typedef struct rt_cpu_image {
    rt_cpu_module mod;
    rt_image_sig *sigs; /* one per function */
    int32_t nobjects;
    rt_image_object *objects;
} rt_cpu_image;

/* The image's bytes, malloc'd into *out (the caller frees them). 0, or -1 when out of memory. */
int rt_cpu_image_write(const rt_cpu_image *img, unsigned char **out, size_t *len);

/* The image in `data` (which must outlive it: strings and objects point into it), or NULL with
 * a message in err. */
rt_cpu_image *rt_cpu_image_read(const void *data, size_t len, char *err, size_t errlen);
void rt_cpu_image_free(rt_cpu_image *img); /* NULL is accepted */

#endif
