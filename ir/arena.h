/* ir/arena.h: the bump allocator that holds all compiler data of one compilation.
 *
 * Everything a compilation makes (tokens, AST, IR, partitions, generated text) is allocated
 * here and freed in one call. Out of memory is not an assert: when `oom` is set, a failed
 * allocation longjmps there (the compile entry point turns it into FUSEC_ERR_OUT_OF_MEMORY);
 * with no `oom` set it returns NULL.
 */
#ifndef FUSEC_IR_ARENA_H
#define FUSEC_IR_ARENA_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ir_arena_block ir_arena_block;

typedef struct ir_arena {
    ir_arena_block *head;
    size_t bytes; /* total bytes handed out, for limits and reports */
    size_t limit; /* 0: no limit; else allocations past it fail like malloc failing */
    jmp_buf *oom; /* where to go when an allocation fails; NULL: return NULL */
} ir_arena;

void ir_arena_init(ir_arena *a);
void ir_arena_free(ir_arena *a); /* frees every block; the arena may be used again */

/* Zeroed memory, aligned for any type. */
void *ir_arena_alloc(ir_arena *a, size_t size);
void *ir_arena_calloc(ir_arena *a, size_t n, size_t size); /* n*size checked for overflow */
char *ir_arena_strdup(ir_arena *a, const char *s);
char *ir_arena_strndup(ir_arena *a, const char *s, size_t n);
char *ir_arena_printf(ir_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Formats a message into err (when err and errlen are set) and returns -1: the failure path
 * of the functions that report into a caller's buffer. */
int ir_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The first internal error of a generation, in the caller's buffer: later ones are dropped,
 * so that the message names the cause rather than a consequence. */
typedef struct ir_failure {
    char *err;
    size_t errlen;
    int failed;
} ir_failure;

void ir_failure_set(ir_failure *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Grows an arena array to hold at least `need` elements (doubling); returns the array. */
void *ir_arena_grow(ir_arena *a, void *ptr, size_t elem, int32_t *cap, int32_t need);

/* Appends one element to an arena array `ptr` of length `len` and capacity `cap`. */
#define IR_VEC_PUSH(arena, ptr, len, cap, value)                                                   \
    do {                                                                                           \
        if ((len) >= (cap))                                                                        \
            (ptr) = ir_arena_grow((arena), (ptr), sizeof(*(ptr)), &(cap), (len) + 1);              \
        if (ptr) (ptr)[(len)++] = (value); /* NULL: out of memory, for the caller to see */        \
    } while (0)

/* A growable text buffer in the arena, for printers and code generators. */
typedef struct ir_buf {
    ir_arena *arena;
    char *data; /* always NUL-terminated */
    int32_t len, cap;
} ir_buf;

void ir_buf_init(ir_buf *b, ir_arena *a);
void ir_buf_puts(ir_buf *b, const char *s);
void ir_buf_putn(ir_buf *b, const char *s, size_t n);
void ir_buf_printf(ir_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
