/* tools/npy.c: the .npy reader and writer of the fusec command line. The format: a magic
 * string, a version, a header length, a Python dict literal with 'descr', 'fortran_order'
 * and 'shape', then the raw elements. */
#include "npy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NPY_MAX_HEADER (1u << 20)

static int fail(char *err, size_t errlen, const char *path, const char *what) {
    snprintf(err, errlen, "'%s': %s", path, what);
    return -1;
}

/* The value text after 'key': in a header dict, or NULL. */
static const char *dict_value(const char *h, const char *key) {
    char q1[64], q2[64];
    snprintf(q1, sizeof q1, "'%s'", key);
    snprintf(q2, sizeof q2, "\"%s\"", key);
    const char *p = strstr(h, q1);
    if (!p) p = strstr(h, q2);
    if (!p) return NULL;
    p += strlen(q1);
    while (*p == ' ')
        p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

static int parse_descr(const char *v, npy_array *a) {
    char q = *v;
    if (q != '\'' && q != '"') return -1;
    v++;
    char order = v[0];
    if (order != '<' && order != '>' && order != '|' && order != '=') return -1;
    char code = v[1];
    char *end;
    long size = strtol(v + 2, &end, 10);
    if (*end != q) return -1;
    a->swap = order == '>' && size > 1;
    a->itemsize = (int)size;
    switch (code) {
    case 'b': a->kind = NPY_BOOL; return size == 1 ? 0 : -1;
    case 'i': a->kind = NPY_INT; break;
    case 'u': a->kind = NPY_UINT; break;
    case 'f': a->kind = NPY_FLOAT; return (size == 2 || size == 4 || size == 8) ? 0 : -1;
    default: return -1;
    }
    return (size == 1 || size == 2 || size == 4 || size == 8) ? 0 : -1;
}

/* The shape into a->shape and a->count: 0, -1 malformed, -2 rank above 8, -3 too large.
 * The bytes of the nonzero dims' product must fit an int64 even when another dim is zero:
 * strides are products of them. */
static int parse_shape(const char *v, npy_array *a) {
    if (*v != '(') return -1;
    v++;
    a->rank = 0;
    int64_t live = 1;
    int empty = 0;
    for (;;) {
        while (*v == ' ')
            v++;
        if (*v == ')') break;
        if (a->rank == FUSEC_MAX_RANK) return -2;
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (end == v || n < 0 || errno) return -1;
        a->shape[a->rank++] = n;
        if (n == 0)
            empty = 1;
        else if (live > INT64_MAX / 8 / n)
            return -3;
        else
            live *= n;
        v = end;
        while (*v == ' ')
            v++;
        if (*v == ',')
            v++;
        else if (*v != ')')
            return -1;
    }
    a->count = empty ? 0 : live;
    return 0;
}

/* A header may claim any shape: before that many bytes are allocated, a regular file must
 * hold them after the header (f is positioned there), else it is truncated, not a reason to
 * run out of memory. A pipe's length is not known, and the read finds out. */
static int check_data_size(FILE *f, size_t bytes, char *err, size_t errlen, const char *path) {
    struct stat st;
    long at = ftell(f);
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || at < 0) return 0;
    uint64_t have = (uint64_t)st.st_size > (uint64_t)at ? (uint64_t)st.st_size - (uint64_t)at : 0;
    if (have >= bytes) return 0;
    char what[160];
    snprintf(what, sizeof what,
             "truncated .npy file: its header's shape needs %llu bytes of data, it holds %llu",
             (unsigned long long)bytes, (unsigned long long)have);
    return fail(err, errlen, path, what);
}

int npy_read(const char *path, npy_array *a, char *err, size_t errlen) {
    memset(a, 0, sizeof(*a));
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    unsigned char pre[10];
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        fclose(f);
        return fail(err, errlen, path, "not a .npy file");
    }
    uint32_t hlen;
    if (pre[6] == 1) {
        if (fread(pre + 8, 1, 2, f) != 2) goto truncated;
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        unsigned char l[4];
        if (fread(l, 1, 4, f) != 4) goto truncated;
        hlen = (uint32_t)l[0] | (uint32_t)l[1] << 8 | (uint32_t)l[2] << 16 | (uint32_t)l[3] << 24;
    } else {
        fclose(f);
        return fail(err, errlen, path, "unsupported .npy format version");
    }
    if (hlen > NPY_MAX_HEADER) {
        fclose(f);
        return fail(err, errlen, path, "header too large");
    }
    char *h = malloc(hlen + 1);
    if (!h) {
        fclose(f);
        return fail(err, errlen, path, "out of memory");
    }
    if (fread(h, 1, hlen, f) != hlen) {
        free(h);
        goto truncated;
    }
    h[hlen] = 0;
    const char *descr = dict_value(h, "descr"), *fo = dict_value(h, "fortran_order"),
               *shape = dict_value(h, "shape");
    int rc = 0;
    if (!descr || !fo || !shape)
        rc = fail(err, errlen, path, "malformed .npy header");
    else if (parse_descr(descr, a) != 0) {
        char what[128];
        const char *e = strpbrk(descr + 1, "'\"");
        snprintf(what, sizeof what, "unsupported dtype %.*s (numeric dtypes only)",
                 e ? (int)(e - descr + 1) : 8, descr);
        rc = fail(err, errlen, path, what);
    } else if (strncmp(fo, "False", 5) != 0)
        rc = fail(err, errlen, path, "Fortran-order arrays are not supported (save in C order)");
    else {
        int s = parse_shape(shape, a);
        if (s == -2)
            rc = fail(err, errlen, path, "rank above 8");
        else if (s == -3)
            rc = fail(err, errlen, path, "array too large");
        else if (s != 0)
            rc = fail(err, errlen, path, "malformed shape in header");
    }
    free(h);
    if (rc) {
        fclose(f);
        return rc;
    }
    /* element offsets are int64_t products, byte counts size_t */
    if (a->count > INT64_MAX / 8 || (uint64_t)a->count > SIZE_MAX / (size_t)a->itemsize) {
        fclose(f);
        return fail(err, errlen, path, "array too large");
    }
    size_t bytes = (size_t)a->count * (size_t)a->itemsize;
    if (check_data_size(f, bytes, err, errlen, path) != 0) {
        fclose(f);
        return -1;
    }
    a->data = malloc(bytes ? bytes : 1);
    if (!a->data) {
        fclose(f);
        return fail(err, errlen, path, "out of memory");
    }
    if (fread(a->data, 1, bytes, f) != bytes) {
        npy_free(a);
        goto truncated;
    }
    fclose(f);
    return 0;
truncated:
    fclose(f);
    return fail(err, errlen, path, "truncated .npy file");
}

void npy_free(npy_array *a) {
    free(a->data);
    a->data = NULL;
}

static void load_bytes(const unsigned char *p, int n, int swap, unsigned char *out) {
    for (int i = 0; i < n; i++)
        out[i] = swap ? p[n - 1 - i] : p[i];
}

/* Element i as an int64 (exact for integers) and as a double. */
static void load(const npy_array *a, int64_t i, int64_t *iv, double *fv, int *is_float) {
    unsigned char b[8];
    load_bytes((const unsigned char *)a->data + i * a->itemsize, a->itemsize, a->swap, b);
    *is_float = a->kind == NPY_FLOAT;
    switch (a->kind) {
    case NPY_BOOL: *iv = b[0] != 0; break;
    case NPY_INT:
        switch (a->itemsize) {
        case 1: {
            int8_t v;
            memcpy(&v, b, 1);
            *iv = v;
        } break;
        case 2: {
            int16_t v;
            memcpy(&v, b, 2);
            *iv = v;
        } break;
        case 4: {
            int32_t v;
            memcpy(&v, b, 4);
            *iv = v;
        } break;
        default: {
            int64_t v;
            memcpy(&v, b, 8);
            *iv = v;
        } break;
        }
        break;
    case NPY_UINT:
        switch (a->itemsize) {
        case 1: *iv = b[0]; break;
        case 2: {
            uint16_t v;
            memcpy(&v, b, 2);
            *iv = v;
        } break;
        case 4: {
            uint32_t v;
            memcpy(&v, b, 4);
            *iv = v;
        } break;
        default: {
            uint64_t v;
            memcpy(&v, b, 8);
            *iv = (int64_t)v;
        } break;
        }
        break;
    case NPY_FLOAT:
        if (a->itemsize == 2) {
            fusec_convert(FUSEC_F16, b, FUSEC_F64, fv, 1);
        } else if (a->itemsize == 4) {
            float v;
            memcpy(&v, b, 4);
            *fv = v;
        } else {
            memcpy(fv, b, 8);
        }
        return;
    }
    *fv = (double)*iv;
}

int npy_convert(const npy_array *a, fusec_dtype t, void **out, char *err, size_t errlen) {
    size_t size = fusec_dtype_size(t);
    if (!size) {
        snprintf(err, errlen, "unknown dtype");
        return -1;
    }
    if ((uint64_t)a->count > SIZE_MAX / size) {
        snprintf(err, errlen, "array too large");
        return -1;
    }
    unsigned char *o = malloc(a->count ? (size_t)a->count * size : 1);
    if (!o) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* integers convert from int64 (exact), floats from double (exact for every float) */
    for (int64_t i = 0; i < a->count; i++) {
        int64_t iv = 0;
        double fv = 0;
        int is_float;
        load(a, i, &iv, &fv, &is_float);
        unsigned char *p = o + (size_t)i * size;
        if (is_float)
            fusec_convert(FUSEC_F64, &fv, t, p, 1);
        else
            fusec_convert(FUSEC_I64, &iv, t, p, 1);
    }
    *out = o;
    return 0;
}

int npy_write(const char *path, fusec_dtype t, int rank, const int64_t *shape, const void *data,
              char *err, size_t errlen) {
    const char *descr;
    switch (t) {
    case FUSEC_BOOL: descr = "|b1"; break;
    case FUSEC_I32: descr = "<i4"; break;
    case FUSEC_I64: descr = "<i8"; break;
    case FUSEC_F16: descr = "<f2"; break;
    case FUSEC_BF16:
    case FUSEC_F32: descr = "<f4"; break;
    case FUSEC_F64: descr = "<f8"; break;
    default: snprintf(err, errlen, "unknown dtype"); return -1;
    }
    char dict[512];
    int n =
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    int64_t count = 1;
    for (int i = 0; i < rank; i++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld%s", (long long)shape[i],
                      rank == 1 ? "," : (i + 1 < rank ? ", " : ""));
        count *= shape[i];
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    /* pad so the data starts on a 64-byte boundary, header ending in '\n' */
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        return -1;
    }
    uint16_t hlen = (uint16_t)(n + pad + 1);
    unsigned char pre[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    fwrite(pre, 1, 10, f);
    fwrite(dict, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    if (t == FUSEC_BF16) {
        const uint16_t *h = data;
        for (int64_t i = 0; i < count; i++) {
            float v;
            fusec_convert(FUSEC_BF16, &h[i], FUSEC_F32, &v, 1);
            fwrite(&v, 4, 1, f);
        }
    } else {
        fwrite(data, fusec_dtype_size(t), (size_t)count, f);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
