/* ir/arena.c: the per-compilation bump allocator, the text buffer built on it, and error
 * messages formatted into a caller's buffer. */
#include "arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_MIN_BLOCK (64 * 1024)
#define ARENA_ALIGN     16

struct ir_arena_block {
    ir_arena_block *next;
    size_t size, used;
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

void ir_arena_init(ir_arena *a) {
    memset(a, 0, sizeof(*a));
}

void ir_arena_free(ir_arena *a) {
    ir_arena_block *b = a->head;
    while (b) {
        ir_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->bytes = 0;
}

static void *arena_fail(ir_arena *a) {
    if (a->oom) longjmp(*a->oom, 1);
    return NULL;
}

void *ir_arena_alloc(ir_arena *a, size_t size) {
    size_t rounded = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (rounded < size) return arena_fail(a);
    if (a->limit && (a->bytes + rounded < a->bytes || a->bytes + rounded > a->limit))
        return arena_fail(a);
    ir_arena_block *b = a->head;
    if (!b || b->size - b->used < rounded) {
        size_t want = rounded > ARENA_MIN_BLOCK ? rounded : ARENA_MIN_BLOCK;
        if (want > SIZE_MAX - sizeof(ir_arena_block)) return arena_fail(a);
        b = malloc(sizeof(ir_arena_block) + want);
        if (!b) return arena_fail(a);
        b->size = want;
        b->used = 0;
        /* a large block goes behind the current one so the current one keeps filling */
        if (a->head && rounded > ARENA_MIN_BLOCK) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += rounded;
    a->bytes += rounded;
    memset(p, 0, size);
    return p;
}

void *ir_arena_calloc(ir_arena *a, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return arena_fail(a);
    return ir_arena_alloc(a, n * size);
}

char *ir_arena_strndup(ir_arena *a, const char *s, size_t n) {
    char *p = ir_arena_alloc(a, n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *ir_arena_strdup(ir_arena *a, const char *s) {
    return ir_arena_strndup(a, s, strlen(s));
}

char *ir_arena_printf(ir_arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *p = ir_arena_alloc(a, (size_t)n + 1);
    if (!p) return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void *ir_arena_grow(ir_arena *a, void *ptr, size_t elem, int32_t *cap, int32_t need) {
    if (need <= *cap) return ptr;
    int64_t ncap = *cap ? (int64_t)*cap * 2 : 8;
    while (ncap < need)
        ncap *= 2;
    if (ncap > INT32_MAX) ncap = INT32_MAX;
    if (ncap < need) return arena_fail(a);
    void *p = ir_arena_calloc(a, (size_t)ncap, elem);
    if (!p) return NULL;
    if (ptr && *cap) memcpy(p, ptr, (size_t)*cap * elem);
    *cap = (int32_t)ncap;
    return p;
}

void ir_buf_init(ir_buf *b, ir_arena *a) {
    b->arena = a;
    b->len = 0;
    b->cap = 0;
    b->data = NULL;
    b->data = ir_arena_grow(a, NULL, 1, &b->cap, 256);
}

void ir_buf_putn(ir_buf *b, const char *s, size_t n) {
    if (n >= (size_t)INT32_MAX - (size_t)b->len) {
        arena_fail(b->arena);
        return;
    }
    int32_t need = b->len + (int32_t)n + 1;
    if (need > b->cap) {
        char *p = ir_arena_grow(b->arena, b->data, 1, &b->cap, need);
        if (!p) return;
        b->data = p;
    }
    memcpy(b->data + b->len, s, n);
    b->len += (int32_t)n;
    b->data[b->len] = 0;
}

void ir_buf_puts(ir_buf *b, const char *s) {
    ir_buf_putn(b, s, strlen(s));
}

void ir_buf_printf(ir_buf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        ir_buf_putn(b, small, (size_t)n);
        return;
    }
    char *big = ir_arena_alloc(b->arena, (size_t)n + 1);
    if (!big) return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    ir_buf_putn(b, big, (size_t)n);
}

void ir_failure_set(ir_failure *f, const char *fmt, ...) {
    if (f->failed) return;
    f->failed = 1;
    if (f->err && f->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->err, f->errlen, fmt, ap);
        va_end(ap);
    }
}

int ir_fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}
