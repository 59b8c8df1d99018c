/* runtime/aot/aot_image.c: a compiled module to bytes and back (runtime/aot/aot_image.h): the
 * primitives, the container, the signatures and the code; the targets' launch descriptions
 * are aot_image_cpu.c's and aot_image_cuda.c's.
 *
 * The layout, each field little-endian: the magic, the version, the target, the function
 * count; per function its signature (name, counts, symbolic dims' names, arguments, value
 * shapes); the target's part; the code count; per code its architecture, length and bytes
 * (padded to 16 from the image's start). A string is its length (u32, 0xffffffff for none),
 * its bytes and a NUL; a shape its rank and per dim (sym i32, size i64).
 */
#include "runtime/aot/aot_image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/aot/aot_image_io.h"

#define NO_STRING 0xffffffffu

/* ---- writing ------------------------------------------------------------------------------- */

void rt_w_bytes(rt_wbuf *w, const void *p, size_t n) {
    if (w->oom) return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + n)
            cap *= 2;
        unsigned char *d = realloc(w->data, cap);
        if (!d) {
            w->oom = 1;
            return;
        }
        w->data = d;
        w->cap = cap;
    }
    if (n) memcpy(w->data + w->len, p, n);
    w->len += n;
}

static void w_le(rt_wbuf *w, uint64_t v, int bytes) {
    unsigned char b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    rt_w_bytes(w, b, (size_t)bytes);
}

void rt_w_i32(rt_wbuf *w, int32_t v) {
    w_le(w, (uint32_t)v, 4);
}

void rt_w_i64(rt_wbuf *w, int64_t v) {
    w_le(w, (uint64_t)v, 8);
}

void rt_w_str(rt_wbuf *w, const char *s) {
    if (!s) {
        w_le(w, NO_STRING, 4);
        return;
    }
    size_t n = strlen(s);
    w_le(w, (uint32_t)n, 4);
    rt_w_bytes(w, s, n + 1);
}

void rt_w_shape(rt_wbuf *w, const ir_shape *s) {
    rt_w_i32(w, s->rank);
    for (int32_t d = 0; d < s->rank; d++) {
        rt_w_i32(w, s->dims[d].sym);
        rt_w_i64(w, s->dims[d].size);
    }
}

static void w_sig(rt_wbuf *w, const rt_image_sig *s) {
    rt_w_str(w, s->name);
    rt_w_i32(w, s->nparams);
    rt_w_i32(w, s->noutputs);
    rt_w_i32(w, s->nsyms);
    for (int32_t i = 0; i < s->nsyms; i++)
        rt_w_str(w, s->sym_names[i]);
    for (int32_t i = 0; i < s->nparams + s->noutputs; i++) {
        rt_w_str(w, s->args[i].name);
        rt_w_i32(w, s->args[i].dtype);
        rt_w_shape(w, &s->args[i].shape);
    }
    rt_w_i32(w, s->nshapes);
    for (int32_t i = 0; i < s->nshapes; i++)
        rt_w_shape(w, &s->shapes[i]);
}

int rt_image_write(const rt_image *img, unsigned char **out, size_t *len) {
    rt_wbuf w = {NULL, 0, 0, 0};
    rt_w_bytes(&w, RT_IMAGE_MAGIC, 8);
    rt_w_i32(&w, RT_IMAGE_VERSION);
    rt_w_i32(&w, (int32_t)img->target);
    rt_w_i32(&w, img->nfuncs);
    for (int32_t f = 0; f < img->nfuncs; f++)
        w_sig(&w, &img->sigs[f]);
    if (img->target == RT_IMAGE_CPU)
        rt_img_write_cpu(&w, img);
    else
        rt_img_write_cuda(&w, img);
    rt_w_i32(&w, img->ncode);
    static const unsigned char zeros[16];
    for (int32_t i = 0; i < img->ncode; i++) {
        rt_w_str(&w, img->code[i].arch);
        rt_w_i64(&w, (int64_t)img->code[i].len);
        rt_w_bytes(&w, zeros, (16 - w.len % 16) % 16);
        rt_w_bytes(&w, img->code[i].data, img->code[i].len);
    }
    if (w.oom) {
        free(w.data);
        return -1;
    }
    *out = w.data;
    *len = w.len;
    return 0;
}

/* ---- reading ------------------------------------------------------------------------------- */

void rt_r_fail(rt_rbuf *r) {
    if (!r->bad) r->bad = 1;
}

void *rt_r_alloc(rt_rbuf *r, size_t count, size_t size) {
    if (r->bad) return NULL;
    /* every count was bounded by the bytes left, so this stays far inside size_t */
    rt_img_block *b = calloc(1, sizeof(rt_img_block) + (count ? count : 1) * size);
    if (!b) {
        r->bad = 2;
        return NULL;
    }
    b->next = *r->blocks;
    *r->blocks = b;
    return b->data;
}

static uint64_t r_le(rt_rbuf *r, int bytes) {
    if (r->bad || r->len - r->at < (size_t)bytes) {
        rt_r_fail(r);
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)r->data[r->at + (size_t)i] << (8 * i);
    r->at += (size_t)bytes;
    return v;
}

int32_t rt_r_i32(rt_rbuf *r) {
    return (int32_t)(uint32_t)r_le(r, 4);
}

int64_t rt_r_i64(rt_rbuf *r) {
    return (int64_t)r_le(r, 8);
}

uint8_t rt_r_u8(rt_rbuf *r) {
    return (uint8_t)r_le(r, 1);
}

int32_t rt_r_count(rt_rbuf *r, size_t each) {
    int32_t n = rt_r_i32(r);
    if (n < 0 || (size_t)n > (r->len - r->at) / (each ? each : 1)) rt_r_fail(r);
    return r->bad ? 0 : n;
}

int32_t rt_r_index(rt_rbuf *r, int32_t lo, int32_t hi) {
    int32_t v = rt_r_i32(r);
    if (v < lo || v >= hi) rt_r_fail(r);
    return r->bad ? lo : v;
}

const char *rt_r_str(rt_rbuf *r) {
    uint32_t n = (uint32_t)r_le(r, 4);
    if (r->bad || n == NO_STRING) return NULL;
    if ((size_t)n >= r->len - r->at || r->data[r->at + n] != 0) {
        rt_r_fail(r);
        return NULL;
    }
    const char *s = (const char *)r->data + r->at;
    r->at += (size_t)n + 1;
    return s;
}

const char *rt_r_str_set(rt_rbuf *r) {
    const char *s = rt_r_str(r);
    if (!s) rt_r_fail(r);
    return s ? s : "";
}

void rt_r_shape(rt_rbuf *r, ir_shape *s) {
    memset(s, 0, sizeof(*s));
    s->rank = rt_r_i32(r);
    if (s->rank < 0 || s->rank > IR_MAX_RANK) {
        rt_r_fail(r);
        s->rank = 0;
    }
    for (int32_t d = 0; d < s->rank; d++) {
        s->dims[d].sym = rt_r_i32(r);
        s->dims[d].size = rt_r_i64(r);
        if (s->dims[d].sym < -1 || s->dims[d].sym >= r->nsyms) rt_r_fail(r);
    }
}

static void r_sig(rt_rbuf *r, rt_image_sig *s) {
    s->name = rt_r_str_set(r);
    s->nparams = rt_r_count(r, 1);
    s->noutputs = rt_r_count(r, 1);
    s->nsyms = rt_r_count(r, 5);
    if (s->nparams + s->noutputs > IR_MAX_ARGS || s->nsyms > IR_MAX_ARGS * IR_MAX_RANK)
        rt_r_fail(r);
    r->nsyms = s->nsyms;
    s->sym_names = rt_r_alloc(r, (size_t)s->nsyms, sizeof(char *));
    for (int32_t i = 0; s->sym_names && i < s->nsyms; i++)
        s->sym_names[i] = rt_r_str_set(r);
    int32_t nargs = s->nparams + s->noutputs;
    s->args = rt_r_alloc(r, (size_t)nargs, sizeof(rt_image_arg));
    for (int32_t i = 0; s->args && i < nargs; i++) {
        s->args[i].name = rt_r_str_set(r);
        s->args[i].dtype = rt_r_index(r, 0, IR_DTYPE_COUNT);
        rt_r_shape(r, &s->args[i].shape);
    }
    s->nshapes = rt_r_count(r, 4);
    s->shapes = rt_r_alloc(r, (size_t)s->nshapes, sizeof(ir_shape));
    for (int32_t i = 0; s->shapes && i < s->nshapes; i++)
        rt_r_shape(r, &s->shapes[i]);
}

static void r_code(rt_rbuf *r, rt_image *img) {
    r->nsyms = 0;
    img->ncode = rt_r_count(r, 12);
    img->code = rt_r_alloc(r, (size_t)img->ncode, sizeof(rt_image_code));
    for (int32_t i = 0; img->code && i < img->ncode; i++) {
        rt_image_code *c = &img->code[i];
        c->arch = rt_r_str_set(r);
        c->len = (uint64_t)rt_r_i64(r);
        size_t pad = (16 - r->at % 16) % 16;
        if (r->bad || pad > r->len - r->at || c->len > r->len - r->at - pad) {
            rt_r_fail(r);
            return;
        }
        c->data = r->data + r->at + pad;
        r->at += pad + (size_t)c->len;
    }
}

/* The image and its blocks: one allocation holds the struct, the others hang from it. */
typedef struct image_box {
    rt_image img;
    rt_img_block *blocks;
} image_box;

rt_image *rt_image_read(const void *data, size_t len, char *err, size_t errlen) {
    image_box *box = calloc(1, sizeof(*box));
    if (!box) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    rt_rbuf r = {data, len, 0, 0, &box->blocks, 0};
    if (len < 12 || memcmp(data, RT_IMAGE_MAGIC, 8) != 0) {
        snprintf(err, errlen, "not a fusec library image");
        free(box);
        return NULL;
    }
    r.at = 8;
    int32_t version = rt_r_i32(&r);
    if (version != RT_IMAGE_VERSION) {
        snprintf(err, errlen, "a fusec library image of version %d, this runtime reads %d",
                 (int)version, RT_IMAGE_VERSION);
        free(box);
        return NULL;
    }
    rt_image *img = &box->img;
    img->target = (rt_image_target)rt_r_index(&r, RT_IMAGE_CPU, RT_IMAGE_CUDA + 1);
    img->nfuncs = rt_r_count(&r, 16);
    img->sigs = rt_r_alloc(&r, (size_t)img->nfuncs, sizeof(rt_image_sig));
    for (int32_t f = 0; img->sigs && f < img->nfuncs; f++)
        r_sig(&r, &img->sigs[f]);
    if (!r.bad && img->target == RT_IMAGE_CPU) rt_img_read_cpu(&r, img);
    if (!r.bad && img->target == RT_IMAGE_CUDA) rt_img_read_cuda(&r, img);
    r_code(&r, img);
    if (!r.bad && r.at != len) r.bad = 1;
    if (r.bad) {
        snprintf(err, errlen, r.bad == 2 ? "out of memory" : "a malformed fusec library image");
        rt_image_free(img);
        return NULL;
    }
    return img;
}

void rt_image_free(rt_image *img) {
    if (!img) return;
    image_box *box = (image_box *)img;
    while (box->blocks) {
        rt_img_block *b = box->blocks;
        box->blocks = b->next;
        free(b);
    }
    free(box);
}
