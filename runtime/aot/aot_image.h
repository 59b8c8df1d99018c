/* runtime/aot/aot_image.h: a compiled module as bytes, what a library built ahead of time
 * (fusec --emit=lib) carries for each .fuse file: each function's signature (for the typed
 * entry points' checks), the target's launch description (the CPU's, runtime/cpu/cpu_launch.h;
 * CUDA's, codegen/cuda/cuda.h's cuda_module without its source), then the code for each CPU or
 * GPU architecture it was built for: x86-64 ELF relocatable objects (loaded by
 * runtime/cpu/cpu_elf.c), cubins and PTX (loaded by the CUDA driver).
 *
 * The writer and the reader are both here, so that the format is stated once. Integers are
 * little-endian; strings NUL-terminated, so that the reader points into the bytes; code starts
 * at multiples of 16 bytes from the image's start (the image is 16-byte aligned in the
 * library), so that loaders read its headers in place. The reader checks every count, index
 * and offset against the image: a truncated or foreign image is refused, never read past.
 */
#ifndef FUSEC_RUNTIME_AOT_IMAGE_H
#define FUSEC_RUNTIME_AOT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/cuda/cuda.h" /* cuda_module: types only */
#include "runtime/cpu/cpu_launch.h"

#define RT_IMAGE_MAGIC   "FUSECIMG"
#define RT_IMAGE_VERSION 2

typedef enum rt_image_target {
    RT_IMAGE_CPU = 1,
    RT_IMAGE_CUDA = 2,
} rt_image_target;

/* A parameter or result as the entry points take it: a dense tensor of this dtype and shape. */
typedef struct rt_image_arg {
    const char *name; /* a parameter's; "" for a result */
    int32_t dtype;    /* ir_dtype */
    ir_shape shape;   /* in the function's symbolic dims */
} rt_image_arg;

typedef struct rt_image_sig {
    const char *name;
    int32_t nparams, noutputs, nsyms;
    rt_image_arg *args;     /* parameters, then results */
    const char **sym_names; /* in order of first appearance */
    /* every value's shape, deduplicated: a launch checks each fits in memory */
    int32_t nshapes;
    ir_shape *shapes;
} rt_image_sig;

/* Code for one CPU ("x86-64-v3", as rt_cpu_target_find names it) or GPU architecture
 * ("sm_90": a cubin; "compute_90": PTX, NUL-terminated, the NUL counted in len). */
typedef struct rt_image_code {
    const char *arch;
    const void *data;
    uint64_t len;
} rt_image_code;

typedef struct rt_image {
    rt_image_target target;
    int32_t nfuncs;
    rt_image_sig *sigs;
    rt_cpu_module cpu; /* RT_IMAGE_CPU */
    cuda_module cuda;  /* RT_IMAGE_CUDA (source NULL) */
    int32_t ncode;
    rt_image_code *code;
} rt_image;

/* The image's bytes, malloc'd into *out (the caller frees them). 0, or -1 when out of memory. */
int rt_image_write(const rt_image *img, unsigned char **out, size_t *len);

/* The image in `data` (which must outlive it: strings and code point into it), or NULL with a
 * message in err. */
rt_image *rt_image_read(const void *data, size_t len, char *err, size_t errlen);
void rt_image_free(rt_image *img); /* NULL is accepted */

#endif
