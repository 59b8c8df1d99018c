/* frontend/diag.h: diagnostics for a source file, rendered in the SPEC's form
 *
 *     FILE:LINE:COL: error: MESSAGE
 *     <the source line>
 *          ^
 *
 * Messages are collected as text (the library never prints); the same message at the same
 * place is reported once (a callee inlined twice does not report its error twice).
 */
#ifndef FUSEC_FRONTEND_DIAG_H
#define FUSEC_FRONTEND_DIAG_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../ir/arena.h"

/* The length of the UTF-8 byte-order mark src[0, len) starts with (3), or 0. Editors on some
 * systems write one; it is no part of the text, so the lexer skips it and line 1's columns
 * (and its echo under a diagnostic) start after it. Anywhere else it is an error. */
static inline size_t src_bom_len(const char *src, size_t len) {
    return len >= 3 && !memcmp(src, "\xEF\xBB\xBF", 3) ? 3 : 0;
}

/* A position in the source: LINE and COL count from 1, COL in bytes. */
typedef struct src_loc {
    int32_t line, col;
} src_loc;

typedef struct diag_seen diag_seen;

typedef struct diag_ctx {
    ir_arena *arena;
    const char *path; /* as the user gave it */
    const char *src;  /* the whole source; may hold NUL bytes */
    size_t len;
    ir_buf out; /* rendered diagnostics, in the order reported */
    int32_t nerrors, nwarnings;
    int32_t ninternal;  /* errors that are the compiler's own bugs (also counted in nerrors) */
    int32_t max_errors; /* stop recording past this many errors (0: 100) */
    diag_seen *seen;    /* for de-duplication */
} diag_ctx;

void diag_init(diag_ctx *d, ir_arena *a, const char *path, const char *src, size_t len);
void diag_error(diag_ctx *d, src_loc at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_warning(diag_ctx *d, src_loc at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An error about the file as a whole (empty, unreadable): "FILE: error: MESSAGE". */
void diag_file_error(diag_ctx *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag_file_warning(diag_ctx *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A bug of the compiler's own met while checking a file (an IR the checker built that does not
 * verify): "FILE: error: internal error: MESSAGE", counted in ninternal too, so that the
 * caller returns FUSEC_ERR_INTERNAL and a fuzzer can tell it from the user's errors. */
void diag_internal_error(diag_ctx *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
