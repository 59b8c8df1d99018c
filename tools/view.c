/* tools/view.c: views of `fusec run` inputs, written after the file as numpy writes them
 * (`--in x=a.npy[::2, ::-1].T`), so that strided inputs (SPEC §3) can be tried from the command
 * line: the view is described to the library by strides over the file's own data (in its
 * order, C or Fortran), never copied. The grammar, applied left to right:
 *
 *   [item, ...]         one item an axis from the first (the others kept whole): a slice
 *                       start:stop:step (numpy's rules: each part optional, negative counts
 *                       from the end, a negative step walks backwards), an index (the axis
 *                       goes), None (a new axis of one element), or, once, '...' (as many
 *                       whole axes as the other items leave: [..., 1] is the last axis's)
 *   .T                  the axes reversed
 *   .broadcast_to(d, ...)  numpy's broadcast_to: dims aligned on the right, an axis of one
 *                       element repeated with stride 0, new leading axes likewise
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *cli_view_split(const char *arg, size_t *path_len) {
    const char *end = arg + strlen(arg), *npy = NULL;
    for (const char *p = strstr(arg, ".npy"); p; p = strstr(p + 1, ".npy"))
        npy = p;
    /* a view starts right after the last ".npy" with '[' or '.' */
    if (npy && (npy[4] == '[' || npy[4] == '.')) end = npy + 4;
    *path_len = (size_t)(end - arg);
    return end;
}

typedef struct parser {
    const char *s, *at; /* the whole view, where we are */
    char *err;
    size_t errlen;
} parser;

static int fail(parser *p, const char *what) {
    if (*p->at)
        snprintf(p->err, p->errlen, "view '%s': %s at '%s'", p->s, what, p->at);
    else
        snprintf(p->err, p->errlen, "view '%s': %s at the end", p->s, what);
    return -1;
}

static void skip_space(parser *p) {
    while (isspace((unsigned char)*p->at))
        p->at++;
}

static int accept(parser *p, const char *word) {
    skip_space(p);
    size_t n = strlen(word);
    if (strncmp(p->at, word, n)) return 0;
    p->at += n;
    return 1;
}

/* An integer, if one is here: 1 and *v, 0 if none, -1 on overflow. */
static int integer(parser *p, int64_t *v) {
    skip_space(p);
    const char *q = p->at;
    if (*q == '-' || *q == '+') q++;
    if (!isdigit((unsigned char)*q)) return 0;
    char *end;
    errno = 0;
    long long x = strtoll(p->at, &end, 10);
    if (errno == ERANGE) return fail(p, "an integer out of range");
    p->at = end;
    *v = x;
    return 1;
}

/* One item of [...] as written: a slice start:stop:step (each part optional), an index, None
 * or '...'. Items are read whole before any is applied: a '...' stands for as many axes as
 * the items after it leave. */
typedef enum item_kind { ITEM_SLICE, ITEM_INDEX, ITEM_NEW, ITEM_ELLIPSIS } item_kind;

typedef struct item {
    item_kind kind;
    const char *at; /* where it starts, for messages */
    int has_start, has_stop;
    int64_t start, stop, step;
} item;

/* Indices and new axes of at most 8 axes each, and one '...' */
#define MAX_ITEMS (2 * FUSEC_MAX_RANK + 1)

static int parse_item(parser *p, item *it) {
    skip_space(p);
    memset(it, 0, sizeof *it);
    it->at = p->at;
    it->step = 1;
    if (accept(p, "...")) {
        it->kind = ITEM_ELLIPSIS;
        return 0;
    }
    if (accept(p, "None")) {
        it->kind = ITEM_NEW;
        return 0;
    }
    if ((it->has_start = integer(p, &it->start)) < 0) return -1;
    if (!accept(p, ":")) {
        it->kind = ITEM_INDEX;
        return it->has_start ? 0 : fail(p, "expected an index, a slice, None or '...'");
    }
    if ((it->has_stop = integer(p, &it->stop)) < 0) return -1;
    if (accept(p, ":") && integer(p, &it->step) < 0) return -1;
    if (it->step == 0) return fail(p, "a slice step of 0");
    if (it->step == INT64_MIN) return fail(p, "a slice step out of range");
    return 0;
}

/* numpy's slice of an axis of n elements: its first element and length
 * (PySlice_AdjustIndices). */
static void slice(const item *it, int64_t n, int64_t *first, int64_t *len) {
    int64_t step = it->step, start = it->start, stop = it->stop;
    int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? n - 1 : n;
    if (!it->has_start) start = step < 0 ? hi : lo;
    if (!it->has_stop) stop = step < 0 ? lo : hi;
    if (it->has_start)
        start = start < 0 ? (start + n < lo ? lo : start + n) : (start > hi ? hi : start);
    if (it->has_stop) stop = stop < 0 ? (stop + n < lo ? lo : stop + n) : (stop > hi ? hi : stop);
    if (step > 0)
        *len = stop > start ? (stop - start - 1) / step + 1 : 0;
    else
        *len = start > stop ? (start - stop - 1) / -step + 1 : 0;
    *first = *len ? start : 0;
}

static int insert_axis(parser *p, cli_view *v, int at) {
    if (v->rank == FUSEC_MAX_RANK) return fail(p, "more than 8 axes");
    memmove(v->shape + at + 1, v->shape + at, sizeof(int64_t) * (size_t)(v->rank - at));
    memmove(v->strides + at + 1, v->strides + at, sizeof(int64_t) * (size_t)(v->rank - at));
    v->shape[at] = 1;
    v->strides[at] = 0;
    v->rank++;
    return 0;
}

static void remove_axis(cli_view *v, int at) {
    memmove(v->shape + at, v->shape + at + 1, sizeof(int64_t) * (size_t)(v->rank - at - 1));
    memmove(v->strides + at, v->strides + at + 1, sizeof(int64_t) * (size_t)(v->rank - at - 1));
    v->rank--;
}

/* Item it on axis *axis (advanced past the axes it keeps or makes); a '...' passes over
 * `spanned` axes whole. */
static int apply_item(parser *p, cli_view *v, const item *it, int *axis, int spanned) {
    p->at = it->at;
    if (it->kind == ITEM_ELLIPSIS) {
        *axis += spanned;
        return 0;
    }
    if (it->kind == ITEM_NEW) {
        if (insert_axis(p, v, *axis) != 0) return -1;
        ++*axis;
        return 0;
    }
    int64_t n = v->shape[*axis], i = it->start < 0 ? it->start + n : it->start;
    if (it->kind == ITEM_INDEX && (i < 0 || i >= n)) {
        char what[128];
        snprintf(what, sizeof what, "index %lld is out of bounds for axis %d with size %lld",
                 (long long)it->start, *axis, (long long)n);
        return fail(p, what);
    }
    if (it->kind == ITEM_INDEX) {
        v->offset += i * v->strides[*axis];
        remove_axis(v, *axis);
        return 0;
    }
    int64_t first, len;
    slice(it, n, &first, &len);
    v->offset += first * v->strides[*axis];
    v->shape[*axis] = len;
    if (len > 1) v->strides[*axis] *= it->step; /* then |step| < n: within the array's span */
    ++*axis;
    return 0;
}

/* The items of [...] after its '[' up to its ']' into items[*n]; the count of those that take
 * an axis (indices and slices) into *indexed. */
static int parse_items(parser *p, item *items, int *n, int *indexed) {
    int ellipses = 0;
    *n = *indexed = 0;
    if (accept(p, "]")) return 0;
    do {
        if (*n == MAX_ITEMS) return fail(p, "more items than 8 axes can take");
        item *it = &items[(*n)++];
        if (parse_item(p, it) != 0) return -1;
        *indexed += it->kind == ITEM_INDEX || it->kind == ITEM_SLICE;
        if (it->kind == ITEM_ELLIPSIS && ellipses++) {
            p->at = it->at;
            return fail(p, "a second '...' (an index takes one at most)");
        }
    } while (accept(p, ","));
    return accept(p, "]") ? 0 : fail(p, "expected ',' or ']'");
}

/* [item, ...] applied to v, from its first axis; those no item names stay whole. */
static int bracket(parser *p, cli_view *v) {
    item items[MAX_ITEMS];
    int n, indexed;
    if (parse_items(p, items, &n, &indexed) != 0) return -1;
    const char *end = p->at;
    for (int i = 0, seen = 0; i < n && indexed > v->rank; i++) {
        seen += items[i].kind == ITEM_INDEX || items[i].kind == ITEM_SLICE;
        if (seen > v->rank) {
            p->at = items[i].at;
            return fail(p, "more indices than axes");
        }
    }
    int axis = 0, spanned = v->rank - indexed;
    for (int i = 0; i < n; i++)
        if (apply_item(p, v, &items[i], &axis, spanned) != 0) return -1;
    p->at = end;
    return 0;
}

static int broadcast_to(parser *p, cli_view *v) {
    int64_t to[FUSEC_MAX_RANK];
    int k = 0;
    if (!accept(p, "(")) return fail(p, "expected '('");
    do {
        if (k == FUSEC_MAX_RANK) return fail(p, "more than 8 axes");
        int got = integer(p, &to[k]);
        if (got < 0) return -1;
        if (!got || to[k] < 0) return fail(p, "expected a dim (0 or more)");
        k++;
    } while (accept(p, ","));
    if (!accept(p, ")")) return fail(p, "expected ')'");
    if (k < v->rank) return fail(p, "fewer dims than the array has axes");
    cli_view b = *v;
    b.rank = k;
    for (int d = k - 1, s = v->rank - 1; d >= 0; d--, s--) {
        b.shape[d] = to[d];
        b.strides[d] = s >= 0 && v->shape[s] == to[d] ? v->strides[s] : 0;
        if (s >= 0 && v->shape[s] != to[d] && v->shape[s] != 1)
            return fail(p, "an axis that is neither the same size nor 1");
    }
    *v = b;
    return 0;
}

int cli_view_parse(const char *expr, int rank, const int64_t *shape, int fortran, cli_view *v,
                   char *err, size_t errlen) {
    parser p = {expr, expr, err, errlen};
    memset(v, 0, sizeof *v);
    v->rank = rank;
    int64_t stride = 1;
    for (int k = 0; k < rank; k++) { /* the axis whose index varies fastest first */
        int d = fortran ? k : rank - 1 - k;
        v->shape[d] = shape[d];
        v->strides[d] = stride;
        stride *= shape[d];
    }
    for (skip_space(&p); *p.at; skip_space(&p)) {
        if (accept(&p, "[")) {
            if (bracket(&p, v) != 0) return -1;
        } else if (accept(&p, ".T")) {
            for (int d = 0; d < v->rank / 2; d++) {
                int e = v->rank - 1 - d;
                int64_t t = v->shape[d];
                v->shape[d] = v->shape[e], v->shape[e] = t;
                t = v->strides[d];
                v->strides[d] = v->strides[e], v->strides[e] = t;
            }
        } else if (accept(&p, ".broadcast_to")) {
            if (broadcast_to(&p, v) != 0) return -1;
        } else {
            return fail(&p, "expected [...], .T or .broadcast_to(...)");
        }
    }
    return 0;
}
