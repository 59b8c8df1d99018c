/* runtime/cpu/cpu_image.c: a CPU module to bytes and back (runtime/cpu/cpu_image.h).
 *
 * The layout, each field little-endian: the magic and version; the function count; per
 * function its name, counts, symbolic dims' names, arguments, value shapes, buffers, checks,
 * in-place hazards and kernels (every field of llvm_kernel_meta the runtime reads); the object
 * count; per object its CPU, length and bytes (padded to 16). A string is its length (u32,
 * 0xffffffff for none), its bytes and a NUL; a shape its rank and per dim (sym i32, size i64).
 */
#include "runtime/cpu/cpu_image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_STRING 0xffffffffu

/* ---- writing ------------------------------------------------------------------------------- */

typedef struct wbuf {
    unsigned char *data;
    size_t len, cap;
    int oom;
} wbuf;

static void w_bytes(wbuf *w, const void *p, size_t n) {
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

static void w_u64(wbuf *w, uint64_t v, int bytes) {
    unsigned char b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    w_bytes(w, b, (size_t)bytes);
}

static void w_i32(wbuf *w, int32_t v) {
    w_u64(w, (uint32_t)v, 4);
}

static void w_i64(wbuf *w, int64_t v) {
    w_u64(w, (uint64_t)v, 8);
}

static void w_str(wbuf *w, const char *s) {
    if (!s) {
        w_u64(w, NO_STRING, 4);
        return;
    }
    size_t n = strlen(s);
    w_u64(w, (uint32_t)n, 4);
    w_bytes(w, s, n + 1);
}

static void w_shape(wbuf *w, const ir_shape *s) {
    w_i32(w, s->rank);
    for (int32_t d = 0; d < s->rank; d++) {
        w_i32(w, s->dims[d].sym);
        w_i64(w, s->dims[d].size);
    }
}

static void w_kernel(wbuf *w, const llvm_kernel_meta *k) {
    w_i32(w, k->kernel);
    w_i32(w, (int32_t)k->kind);
    w_shape(w, &k->domain);
    w_i32(w, k->elem_out_bytes);
    w_i32(w, k->expensive);
    w_i32(w, k->ntasks);
    for (int32_t t = 0; t < k->ntasks; t++) {
        w_str(w, k->tasks[t].symbol);
        w_shape(w, &k->tasks[t].extent.outer);
        w_shape(w, &k->tasks[t].extent.inner);
        w_i64(w, k->tasks[t].extent.block);
    }
    w_shape(w, &k->run_shape);
    w_shape(w, &k->scratch_shape);
    w_i32(w, k->scratch_bytes);
    w_str(w, k->finalize);
    w_i32(w, k->npartials);
    w_str(w, k->split_pieces);
    w_str(w, k->split_join);
    w_i32(w, k->split_nreds);
    w_shape(w, &k->split_len);
    w_shape(w, &k->split_cols);
}

static void w_func(wbuf *w, const rt_cpu_func *f, const rt_image_sig *s) {
    w_str(w, f->name);
    w_i32(w, f->nparams);
    w_i32(w, f->noutputs);
    w_i32(w, f->nsyms);
    for (int32_t i = 0; i < f->nsyms; i++)
        w_str(w, s->sym_names[i]);
    for (int32_t i = 0; i < f->nparams + f->noutputs; i++) {
        w_str(w, s->args[i].name);
        w_i32(w, s->args[i].dtype);
        w_shape(w, &s->args[i].shape);
    }
    w_i32(w, s->nshapes);
    for (int32_t i = 0; i < s->nshapes; i++)
        w_shape(w, &s->shapes[i]);
    w_i32(w, f->nbufs);
    for (int32_t i = 0; i < f->nbufs; i++) {
        w_i32(w, (int32_t)f->bufs[i].kind);
        w_i32(w, f->bufs[i].index);
        w_i32(w, f->bufs[i].elem_bytes);
        w_shape(w, &f->bufs[i].shape);
    }
    w_i32(w, f->nchecks);
    for (int32_t i = 0; i < f->nchecks; i++) {
        w_str(w, f->checks[i].op);
        w_shape(w, &f->checks[i].shape);
    }
    w_bytes(w, f->inplace_hazard, (size_t)f->noutputs * (size_t)f->nparams);
    w_i32(w, f->nkernels);
    for (int32_t k = 0; k < f->nkernels; k++)
        w_kernel(w, &f->kernels[k]);
}

int rt_cpu_image_write(const rt_cpu_image *img, unsigned char **out, size_t *len) {
    wbuf w = {NULL, 0, 0, 0};
    w_bytes(&w, RT_CPU_IMAGE_MAGIC, 8);
    w_i32(&w, RT_CPU_IMAGE_VERSION);
    w_i32(&w, img->mod.nfuncs);
    for (int32_t f = 0; f < img->mod.nfuncs; f++)
        w_func(&w, &img->mod.funcs[f], &img->sigs[f]);
    w_i32(&w, img->nobjects);
    static const unsigned char zeros[16];
    for (int32_t i = 0; i < img->nobjects; i++) {
        w_str(&w, img->objects[i].cpu);
        w_i64(&w, (int64_t)img->objects[i].len);
        w_bytes(&w, zeros, (16 - w.len % 16) % 16);
        w_bytes(&w, img->objects[i].data, img->objects[i].len);
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

/* The image's memory: blocks freed together. */
typedef struct block {
    struct block *next;
    max_align_t data[];
} block;

typedef struct rbuf {
    const unsigned char *data;
    size_t len, at;
    int bad;
    block **blocks;
    int32_t nsyms; /* the current function's: shapes may name no other */
} rbuf;

static void *r_alloc(rbuf *r, size_t count, size_t size) {
    if (r->bad) return NULL;
    /* every count was bounded by the bytes left, so this stays far inside size_t */
    block *b = calloc(1, sizeof(block) + (count ? count : 1) * size);
    if (!b) {
        r->bad = 2;
        return NULL;
    }
    b->next = *r->blocks;
    *r->blocks = b;
    return b->data;
}

static uint64_t r_u64(rbuf *r, int bytes) {
    if (r->bad || r->len - r->at < (size_t)bytes) {
        r->bad = r->bad ? r->bad : 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)r->data[r->at + (size_t)i] << (8 * i);
    r->at += (size_t)bytes;
    return v;
}

static int32_t r_i32(rbuf *r) {
    return (int32_t)(uint32_t)r_u64(r, 4);
}

static int64_t r_i64(rbuf *r) {
    return (int64_t)r_u64(r, 8);
}

/* A count of things at least `each` bytes long each: refused when the bytes left cannot hold
 * them, so a bad count never allocates much. */
static int32_t r_count(rbuf *r, size_t each) {
    int32_t n = r_i32(r);
    if (n < 0 || (size_t)n > (r->len - r->at) / (each ? each : 1)) r->bad = r->bad ? r->bad : 1;
    return r->bad ? 0 : n;
}

static const char *r_str(rbuf *r) {
    uint32_t n = (uint32_t)r_u64(r, 4);
    if (r->bad || n == NO_STRING) return NULL;
    if ((size_t)n >= r->len - r->at || r->data[r->at + n] != 0) {
        r->bad = 1;
        return NULL;
    }
    const char *s = (const char *)r->data + r->at;
    r->at += (size_t)n + 1;
    return s;
}

static const char *r_str_set(rbuf *r) {
    const char *s = r_str(r);
    if (!s) r->bad = r->bad ? r->bad : 1;
    return s ? s : "";
}

static void r_shape(rbuf *r, ir_shape *s) {
    memset(s, 0, sizeof(*s));
    s->rank = r_i32(r);
    if (s->rank < 0 || s->rank > IR_MAX_RANK) {
        r->bad = r->bad ? r->bad : 1;
        s->rank = 0;
    }
    for (int32_t d = 0; d < s->rank; d++) {
        s->dims[d].sym = r_i32(r);
        s->dims[d].size = r_i64(r);
        if (s->dims[d].sym < -1 || s->dims[d].sym >= r->nsyms) r->bad = r->bad ? r->bad : 1;
    }
}

static void r_kernel(rbuf *r, llvm_kernel_meta *k) {
    k->kernel = r_i32(r);
    k->kind = (ir_kernel_kind)r_i32(r);
    r_shape(r, &k->domain);
    k->elem_out_bytes = r_i32(r);
    k->expensive = r_i32(r);
    k->ntasks = r_count(r, 4);
    if (k->ntasks < 1) r->bad = r->bad ? r->bad : 1;
    k->tasks = r_alloc(r, (size_t)k->ntasks, sizeof(llvm_task));
    for (int32_t t = 0; k->tasks && t < k->ntasks; t++) {
        k->tasks[t].symbol = r_str_set(r);
        r_shape(r, &k->tasks[t].extent.outer);
        r_shape(r, &k->tasks[t].extent.inner);
        k->tasks[t].extent.block = r_i64(r);
    }
    r_shape(r, &k->run_shape);
    r_shape(r, &k->scratch_shape);
    k->scratch_bytes = r_i32(r);
    k->finalize = r_str(r);
    k->npartials = r_i32(r);
    k->split_pieces = r_str(r);
    k->split_join = r_str(r);
    k->split_nreds = r_i32(r);
    r_shape(r, &k->split_len);
    r_shape(r, &k->split_cols);
    if (k->scratch_bytes < 0 || k->npartials < 0 || k->split_nreds < 0 || k->elem_out_bytes < 0 ||
        (k->split_pieces && !k->split_join))
        r->bad = r->bad ? r->bad : 1;
}

static void r_bufs(rbuf *r, rt_cpu_func *f) {
    f->nbufs = r_count(r, 12);
    f->bufs = r_alloc(r, (size_t)f->nbufs, sizeof(rt_cpu_buf));
    for (int32_t i = 0; f->bufs && i < f->nbufs; i++) {
        rt_cpu_buf *b = &f->bufs[i];
        b->kind = (plan_buf_kind)r_i32(r);
        b->index = r_i32(r);
        b->elem_bytes = r_i32(r);
        r_shape(r, &b->shape);
        int32_t limit = b->kind == PLAN_BUF_PARAM    ? f->nparams
                        : b->kind == PLAN_BUF_RESULT ? f->noutputs
                        : b->kind == PLAN_BUF_TEMP   ? f->nbufs
                                                     : 0;
        if (b->index < 0 || b->index >= limit || b->elem_bytes < 1 || b->elem_bytes > 8)
            r->bad = r->bad ? r->bad : 1;
    }
}

static void r_func(rbuf *r, rt_cpu_func *f, rt_image_sig *s) {
    f->name = r_str_set(r);
    f->nparams = r_count(r, 1);
    f->noutputs = r_count(r, 1);
    f->nsyms = r_count(r, 5);
    if (f->nparams + f->noutputs > IR_MAX_ARGS || f->nsyms > IR_MAX_ARGS * IR_MAX_RANK)
        r->bad = r->bad ? r->bad : 1;
    r->nsyms = f->nsyms;
    s->sym_names = r_alloc(r, (size_t)f->nsyms, sizeof(char *));
    for (int32_t i = 0; s->sym_names && i < f->nsyms; i++)
        s->sym_names[i] = r_str_set(r);
    s->nargs = f->nparams + f->noutputs;
    s->args = r_alloc(r, (size_t)s->nargs, sizeof(rt_image_arg));
    for (int32_t i = 0; s->args && i < s->nargs; i++) {
        s->args[i].name = r_str_set(r);
        s->args[i].dtype = r_i32(r);
        r_shape(r, &s->args[i].shape);
        if (s->args[i].dtype < 0 || s->args[i].dtype >= IR_DTYPE_COUNT)
            r->bad = r->bad ? r->bad : 1;
    }
    s->nshapes = r_count(r, 4);
    s->shapes = r_alloc(r, (size_t)s->nshapes, sizeof(ir_shape));
    for (int32_t i = 0; s->shapes && i < s->nshapes; i++)
        r_shape(r, &s->shapes[i]);
    r_bufs(r, f);
    f->nchecks = r_count(r, 8);
    f->checks = r_alloc(r, (size_t)f->nchecks, sizeof(rt_cpu_check));
    for (int32_t i = 0; f->checks && i < f->nchecks; i++) {
        f->checks[i].op = r_str_set(r);
        r_shape(r, &f->checks[i].shape);
    }
    size_t hz = (size_t)f->noutputs * (size_t)f->nparams;
    f->inplace_hazard = r_alloc(r, hz, 1);
    for (size_t i = 0; f->inplace_hazard && i < hz; i++)
        f->inplace_hazard[i] = (uint8_t)r_u64(r, 1);
    f->nkernels = r_count(r, 8);
    f->kernels = r_alloc(r, (size_t)f->nkernels, sizeof(llvm_kernel_meta));
    for (int32_t k = 0; f->kernels && k < f->nkernels; k++)
        r_kernel(r, &f->kernels[k]);
}

static void r_objects(rbuf *r, rt_cpu_image *img) {
    r->nsyms = 0;
    img->nobjects = r_count(r, 12);
    img->objects = r_alloc(r, (size_t)img->nobjects, sizeof(rt_image_object));
    for (int32_t i = 0; img->objects && i < img->nobjects; i++) {
        rt_image_object *o = &img->objects[i];
        o->cpu = r_str_set(r);
        o->len = (uint64_t)r_i64(r);
        size_t pad = (16 - r->at % 16) % 16;
        if (r->bad || pad > r->len - r->at || o->len > r->len - r->at - pad) {
            r->bad = r->bad ? r->bad : 1;
            return;
        }
        o->data = r->data + r->at + pad;
        r->at += pad + (size_t)o->len;
    }
}

/* The image and its blocks: one allocation holds the struct, the others hang from it. */
typedef struct image_box {
    rt_cpu_image img;
    block *blocks;
} image_box;

rt_cpu_image *rt_cpu_image_read(const void *data, size_t len, char *err, size_t errlen) {
    image_box *box = calloc(1, sizeof(*box));
    if (!box) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    rbuf r = {data, len, 0, 0, &box->blocks, 0};
    if (len < 12 || memcmp(data, RT_CPU_IMAGE_MAGIC, 8) != 0) {
        snprintf(err, errlen, "not a fusec library image");
        free(box);
        return NULL;
    }
    r.at = 8;
    int32_t version = r_i32(&r);
    if (version != RT_CPU_IMAGE_VERSION) {
        snprintf(err, errlen, "a fusec library image of version %d, this runtime reads %d",
                 (int)version, RT_CPU_IMAGE_VERSION);
        free(box);
        return NULL;
    }
    rt_cpu_image *img = &box->img;
    img->mod.nfuncs = r_count(&r, 16);
    img->mod.funcs = r_alloc(&r, (size_t)img->mod.nfuncs, sizeof(rt_cpu_func));
    img->sigs = r_alloc(&r, (size_t)img->mod.nfuncs, sizeof(rt_image_sig));
    for (int32_t f = 0; img->sigs && f < img->mod.nfuncs; f++)
        r_func(&r, &img->mod.funcs[f], &img->sigs[f]);
    r_objects(&r, img);
    if (!r.bad && r.at != len) r.bad = 1;
    if (r.bad) {
        snprintf(err, errlen, r.bad == 2 ? "out of memory" : "a malformed fusec library image");
        rt_cpu_image_free(img);
        return NULL;
    }
    return img;
}

void rt_cpu_image_free(rt_cpu_image *img) {
    if (!img) return;
    image_box *box = (image_box *)img;
    while (box->blocks) {
        block *b = box->blocks;
        box->blocks = b->next;
        free(b);
    }
    free(box);
}
