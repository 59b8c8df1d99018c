/* tests/unit/line_diff.h: a unified diff of two texts, line by line, for the messages of tests
 * that compare printed output with an expectation (test_ir_passes.c). The longest common
 * subsequence of the lines decides what is kept; each hunk shows three lines of context. */
#ifndef FUSEC_TESTS_LINE_DIFF_H
#define FUSEC_TESTS_LINE_DIFF_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct diff_lines {
    const char **at; /* each line's start */
    int *len;        /* its length, without the newline */
    int n;
} diff_lines;

/* The lines of s; 0, or -1 when out of memory. */
static inline int diff_split(const char *s, diff_lines *l) {
    int cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == '\n';
    l->at = malloc((size_t)cap * sizeof *l->at);
    l->len = malloc((size_t)cap * sizeof *l->len);
    l->n = 0;
    if (!l->at || !l->len) return -1;
    for (const char *p = s; *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        l->at[l->n] = p;
        l->len[l->n++] = n;
        p += n + (nl != NULL);
    }
    return 0;
}

static inline int diff_same(const diff_lines *a, int i, const diff_lines *b, int j) {
    return a->len[i] == b->len[j] && !memcmp(a->at[i], b->at[j], (size_t)a->len[i]);
}

/* The edit script from a to b into ops (' ' kept, '-' only in a, '+' only in b), its length
 * returned (-1: too large or out of memory). L[i][j] is the longest common subsequence of
 * the suffixes a[i..] and b[j..]. */
static inline int diff_script(const diff_lines *a, const diff_lines *b, char *ops) {
    size_t w = (size_t)b->n + 1;
    if ((size_t)(a->n + 1) * w > 16u << 20) return -1;
    int *L = calloc((size_t)(a->n + 1) * w, sizeof *L);
    if (!L) return -1;
    for (int i = a->n - 1; i >= 0; i--)
        for (int j = b->n - 1; j >= 0; j--)
            L[i * w + j] = diff_same(a, i, b, j)
                               ? L[(i + 1) * w + j + 1] + 1
                               : (L[(i + 1) * w + j] > L[i * w + j + 1] ? L[(i + 1) * w + j]
                                                                        : L[i * w + j + 1]);
    int n = 0, i = 0, j = 0;
    while (i < a->n || j < b->n) {
        if (i < a->n && j < b->n && diff_same(a, i, b, j)) {
            ops[n++] = ' ';
            i++;
            j++;
        } else if (j >= b->n || (i < a->n && L[(i + 1) * w + j] >= L[i * w + j + 1])) {
            ops[n++] = '-';
            i++;
        } else {
            ops[n++] = '+';
            j++;
        }
    }
    free(L);
    return n;
}

/* Op k of the script is a change or within three ops of one: a line a hunk shows. */
static inline int diff_shown(const char *ops, int n, int k) {
    for (int q = k < 3 ? 0 : k - 3; q <= k + 3 && q < n; q++)
        if (ops[q] != ' ') return 1;
    return 0;
}

/* The hunks of the script: each run of shown ops, headed by where it is in a and in b. */
static inline void diff_hunks(FILE *out, const diff_lines *a, const diff_lines *b, const char *ops,
                              int n) {
    int i = 0, j = 0; /* the lines of a and of b before op k */
    for (int k = 0; k < n;) {
        if (!diff_shown(ops, n, k)) {
            i += ops[k] != '+';
            j += ops[k] != '-';
            k++;
            continue;
        }
        int end = k, na = 0, nb = 0;
        for (; end < n && diff_shown(ops, n, end); end++) {
            na += ops[end] != '+';
            nb += ops[end] != '-';
        }
        fprintf(out, "@@ -%d,%d +%d,%d @@\n", i + 1, na, j + 1, nb);
        for (; k < end; k++) {
            const diff_lines *l = ops[k] == '+' ? b : a;
            int at = ops[k] == '+' ? j : i;
            fprintf(out, "%c%.*s\n", ops[k], l->len[at], l->at[at]);
            i += ops[k] != '+';
            j += ops[k] != '-';
        }
    }
}

/* A unified diff of text a (named name_a) against text b (name_b) to out. */
static inline void line_diff(FILE *out, const char *name_a, const char *a, const char *name_b,
                             const char *b) {
    diff_lines la = {0}, lb = {0};
    char *ops = NULL;
    int n = -1;
    if (!diff_split(a, &la) && !diff_split(b, &lb)) {
        ops = malloc((size_t)la.n + (size_t)lb.n + 1);
        if (ops) n = diff_script(&la, &lb, ops);
    }
    fprintf(out, "--- %s\n+++ %s\n", name_a, name_b);
    if (n >= 0)
        diff_hunks(out, &la, &lb, ops, n);
    else
        fprintf(out, "(too large to diff)\n--- %s:\n%s+++ %s:\n%s", name_a, a, name_b, b);
    free(ops);
    free(la.at);
    free(la.len);
    free(lb.at);
    free(lb.len);
}

#endif
