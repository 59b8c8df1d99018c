/* frontend/diag.c: diagnostics rendered as text in the SPEC's form (file:line:col, the
 * source line, a caret), de-duplicated and capped. The library never prints: the text
 * collects in d->out and the caller decides where it goes. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DIAG_DEFAULT_MAX_ERRORS 100
/* Source lines longer than this are shown as a window around the caret, so a megabyte
 * line with a hundred errors in it does not produce a hundred megabytes of output. */
#define DIAG_MAX_ECHO    240
#define DIAG_ECHO_BEFORE 120

typedef enum diag_severity { DIAG_ERROR, DIAG_WARNING } diag_severity;

typedef struct diag_entry {
    uint64_t hash; /* 0: empty slot */
    src_loc at;
    diag_severity sev;
    const char *msg;
} diag_entry;

struct diag_seen {
    diag_entry *slots; /* open addressing; the capacity is a power of two */
    int32_t cap, count;
    size_t *line_starts; /* byte offset of each line, built on first use */
    int32_t nlines;
    int too_many; /* the "too many errors" line is out */
};

void diag_init(diag_ctx *d, ir_arena *a, const char *path, const char *src, size_t len) {
    memset(d, 0, sizeof *d);
    d->arena = a;
    d->path = path ? path : "<input>";
    d->src = src;
    d->len = len;
    ir_buf_init(&d->out, a);
    d->seen = ir_arena_alloc(a, sizeof *d->seen);
}

static uint64_t diag_hash(src_loc at, diag_severity sev, const char *msg) {
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    uint64_t key[3] = {(uint64_t)(uint32_t)at.line, (uint64_t)(uint32_t)at.col, sev};
    for (int i = 0; i < 3; i++) {
        h ^= key[i];
        h *= 1099511628211u;
    }
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        h ^= *p;
        h *= 1099511628211u;
    }
    return h ? h : 1;
}

/* 1 if this diagnostic was reported before; else remembers it and returns 0. When memory
 * runs out the diagnostic is simply not remembered (a repeat is better than a crash). */
static int diag_seen_before(diag_ctx *d, src_loc at, diag_severity sev, const char *msg) {
    diag_seen *s = d->seen;
    if (!s) return 0;
    uint64_t h = diag_hash(at, sev, msg);
    if (s->cap) {
        for (uint32_t i = (uint32_t)h & (uint32_t)(s->cap - 1);;
             i = (i + 1) & (uint32_t)(s->cap - 1)) {
            diag_entry *e = &s->slots[i];
            if (!e->hash) break;
            if (e->hash == h && e->at.line == at.line && e->at.col == at.col && e->sev == sev &&
                strcmp(e->msg, msg) == 0)
                return 1;
        }
    }
    if ((s->count + 1) * 2 > s->cap) {
        int32_t ncap = s->cap ? s->cap * 2 : 64;
        if (ncap < s->cap) return 0;
        diag_entry *slots = ir_arena_calloc(d->arena, (size_t)ncap, sizeof *slots);
        if (!slots) return 0;
        for (int32_t j = 0; j < s->cap; j++) {
            diag_entry *e = &s->slots[j];
            if (!e->hash) continue;
            uint32_t i = (uint32_t)e->hash & (uint32_t)(ncap - 1);
            while (slots[i].hash)
                i = (i + 1) & (uint32_t)(ncap - 1);
            slots[i] = *e;
        }
        s->slots = slots;
        s->cap = ncap;
    }
    uint32_t i = (uint32_t)h & (uint32_t)(s->cap - 1);
    while (s->slots[i].hash)
        i = (i + 1) & (uint32_t)(s->cap - 1);
    s->slots[i] = (diag_entry){h, at, sev, msg};
    s->count++;
    return 0;
}

/* Offsets of the line starts, so each diagnostic finds its line without rescanning. */
static int diag_index_lines(diag_ctx *d) {
    diag_seen *s = d->seen;
    if (!s) return 0;
    if (s->line_starts) return 1;
    int32_t n = 1;
    for (size_t i = 0; i < d->len; i++)
        if (d->src[i] == '\n' && n < INT32_MAX) n++;
    size_t *starts = ir_arena_calloc(d->arena, (size_t)n, sizeof *starts);
    if (!starts) return 0;
    starts[0] = src_bom_len(d->src, d->len); /* columns count from after it, as the lexer's */
    int32_t k = 1;
    for (size_t i = 0; i < d->len && k < n; i++)
        if (d->src[i] == '\n') starts[k++] = i + 1;
    s->line_starts = starts;
    s->nlines = n;
    return 1;
}

/* Length of the well-formed UTF-8 sequence of 2 to 4 bytes at p (n bytes available), or 0
 * when there is none; such a character is echoed as is and counts as one column. */
static size_t utf8_seq_len(const unsigned char *p, size_t n) {
    size_t len;
    uint32_t cp;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        len = 2;
        cp = p[0] & 0x1f;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        len = 3;
        cp = p[0] & 0x0f;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        len = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* How many bytes the next displayed character takes (at least 1). */
static size_t diag_char_len(const unsigned char *p, size_t n) {
    if (p[0] < 0x80) return 1;
    size_t len = utf8_seq_len(p, n);
    return len ? len : 1;
}

/* Echoes line [p, p+n) with a caret under byte offset `caret`. Tabs stay tabs in both lines
 * so the caret lines up in any tab setting; other control bytes and malformed UTF-8 show
 * as '?', one column each. */
static void diag_echo_line(ir_buf *b, const unsigned char *p, size_t n, size_t caret) {
    size_t ws = 0, we = n;
    if (n > DIAG_MAX_ECHO) {
        if (caret > DIAG_ECHO_BEFORE) ws = caret - DIAG_ECHO_BEFORE;
        if (ws > n) ws = n;
        /* do not start inside a UTF-8 sequence */
        for (int k = 0; k < 3 && ws < n && (p[ws] & 0xc0) == 0x80; k++)
            ws++;
        we = ws + DIAG_MAX_ECHO < n ? ws + DIAG_MAX_ECHO : n;
        while (we < n && (p[we] & 0xc0) == 0x80)
            we++;
    }
    if (ws > 0) ir_buf_puts(b, "...");
    for (size_t i = ws; i < we;) {
        unsigned char c = p[i];
        size_t len = diag_char_len(p + i, we - i);
        if (len > 1)
            ir_buf_putn(b, (const char *)p + i, len);
        else if (c == '\t' || (c >= 0x20 && c < 0x7f))
            ir_buf_putn(b, (const char *)&c, 1);
        else
            ir_buf_puts(b, "?");
        i += len;
    }
    if (we < n) ir_buf_puts(b, "...");
    ir_buf_puts(b, "\n");

    if (ws > 0) ir_buf_puts(b, "   ");
    for (size_t i = ws; i < caret && i < we;) {
        ir_buf_puts(b, p[i] == '\t' ? "\t" : " ");
        i += diag_char_len(p + i, we - i);
    }
    ir_buf_puts(b, "^\n");
}

static void diag_render(diag_ctx *d, diag_severity sev, src_loc at, const char *msg) {
    const char *what = sev == DIAG_ERROR ? "error" : "warning";
    if (at.line <= 0) {
        ir_buf_printf(&d->out, "%s: %s: %s\n", d->path, what, msg);
        return;
    }
    int32_t col = at.col > 0 ? at.col : 1;
    ir_buf_printf(&d->out, "%s:%d:%d: %s: %s\n", d->path, at.line, col, what, msg);
    if (!d->src || !diag_index_lines(d)) return;
    const diag_seen *s = d->seen;
    size_t start = d->len, end = d->len;
    if (at.line <= s->nlines) {
        start = s->line_starts[at.line - 1];
        end = start;
        while (end < d->len && d->src[end] != '\n')
            end++;
        if (end > start && d->src[end - 1] == '\r') end--;
    }
    /* a column past the end of the line (the end of the file) puts the caret just after it */
    size_t caret = (size_t)col - 1;
    if (caret > end - start) caret = end - start;
    diag_echo_line(&d->out, (const unsigned char *)d->src + start, end - start, caret);
}

static void diag_report(diag_ctx *d, diag_severity sev, src_loc at, const char *fmt, va_list ap) {
    int32_t max = d->max_errors > 0 ? d->max_errors : DIAG_DEFAULT_MAX_ERRORS;
    if (sev == DIAG_ERROR && d->nerrors >= max) {
        if (d->seen && !d->seen->too_many) {
            d->seen->too_many = 1;
            ir_buf_printf(&d->out, "%s: error: too many errors, stopping\n", d->path);
        }
        return;
    }
    char small[256];
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(small, sizeof small, fmt, aq);
    va_end(aq);
    if (n < 0) {
        n = 0;
        small[0] = 0;
    }
    const char *msg = small;
    if ((size_t)n >= sizeof small) {
        char *big = ir_arena_alloc(d->arena, (size_t)n + 1);
        if (big) {
            vsnprintf(big, (size_t)n + 1, fmt, ap);
            msg = big;
        }
    }
    if (at.line <= 0) at.line = at.col = 0;
    /* the table keeps the message, so it must outlive this call */
    const char *kept = msg == small ? ir_arena_strdup(d->arena, small) : msg;
    if (kept && diag_seen_before(d, at, sev, kept)) return;
    if (sev == DIAG_ERROR)
        d->nerrors++;
    else
        d->nwarnings++;
    diag_render(d, sev, at, msg);
}

void diag_error(diag_ctx *d, src_loc at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_report(d, DIAG_ERROR, at, fmt, ap);
    va_end(ap);
}

void diag_warning(diag_ctx *d, src_loc at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_report(d, DIAG_WARNING, at, fmt, ap);
    va_end(ap);
}

void diag_file_error(diag_ctx *d, const char *fmt, ...) {
    src_loc none = {0, 0};
    va_list ap;
    va_start(ap, fmt);
    diag_report(d, DIAG_ERROR, none, fmt, ap);
    va_end(ap);
}

void diag_internal_error(diag_ctx *d, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    d->ninternal++;
    diag_file_error(d, "internal error: %s", msg);
}

void diag_file_warning(diag_ctx *d, const char *fmt, ...) {
    src_loc none = {0, 0};
    va_list ap;
    va_start(ap, fmt);
    diag_report(d, DIAG_WARNING, none, fmt, ap);
    va_end(ap);
}
