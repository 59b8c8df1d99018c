/* runtime/aot/aot_image_io.h: the primitives the image's writer and reader are made of
 * (runtime/aot/aot_image.c), shared with the target parts (aot_image_cpu.c, aot_image_cuda.c).
 * Not for other files: the format is runtime/aot/aot_image.h's.
 */
#ifndef FUSEC_RUNTIME_AOT_IMAGE_IO_H
#define FUSEC_RUNTIME_AOT_IMAGE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/aot/aot_image.h"

/* A growing byte buffer; oom set once an allocation failed (everything after is dropped). */
typedef struct rt_wbuf {
    unsigned char *data;
    size_t len, cap;
    int oom;
} rt_wbuf;

void rt_w_bytes(rt_wbuf *w, const void *p, size_t n);
void rt_w_i32(rt_wbuf *w, int32_t v);
void rt_w_i64(rt_wbuf *w, int64_t v);
void rt_w_str(rt_wbuf *w, const char *s); /* NULL is written as none */
void rt_w_shape(rt_wbuf *w, const ir_shape *s);

/* The image's memory: blocks freed together. */
typedef struct rt_img_block {
    struct rt_img_block *next;
    max_align_t data[];
} rt_img_block;

/* A cursor over the bytes; bad: 1 malformed, 2 out of memory (then every read gives 0). */
typedef struct rt_rbuf {
    const unsigned char *data;
    size_t len, at;
    int bad;
    rt_img_block **blocks;
    int32_t nsyms; /* the current function's: shapes and sizes may name no other */
} rt_rbuf;

void rt_r_fail(rt_rbuf *r);                              /* marks it malformed */
void *rt_r_alloc(rt_rbuf *r, size_t count, size_t size); /* zeroed; NULL once bad */
int32_t rt_r_i32(rt_rbuf *r);
int64_t rt_r_i64(rt_rbuf *r);
uint8_t rt_r_u8(rt_rbuf *r);
/* A count of things at least `each` bytes long each: refused when the bytes left cannot hold
 * them, so a bad count never allocates much. */
int32_t rt_r_count(rt_rbuf *r, size_t each);
const char *rt_r_str(rt_rbuf *r);     /* NULL for none */
const char *rt_r_str_set(rt_rbuf *r); /* none is malformed */
void rt_r_shape(rt_rbuf *r, ir_shape *s);
/* An index that must lie in [lo, hi): else the image is malformed. */
int32_t rt_r_index(rt_rbuf *r, int32_t lo, int32_t hi);

/* The target parts: each function's launch description. */
void rt_img_write_cpu(rt_wbuf *w, const rt_image *img);
void rt_img_read_cpu(rt_rbuf *r, rt_image *img);
void rt_img_write_cuda(rt_wbuf *w, const rt_image *img);
void rt_img_read_cuda(rt_rbuf *r, rt_image *img);

#endif
