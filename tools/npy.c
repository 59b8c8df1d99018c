/* tools/npy.c: the .npy reader and writer of the fusec command line. The format: a magic
 * string, a version, a header length, a Python dict literal with 'descr', 'fortran_order'
 * and 'shape', then the raw elements (in C order, or in Fortran order: first index fastest). */
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
    } else if (strncmp(fo, "False", 5) != 0 && strncmp(fo, "True", 4) != 0) {
        rc = fail(err, errlen, path, "malformed .npy header ('fortran_order' is not a bool)");
    } else {
        a->fortran = *fo == 'T';
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

/* Element i of a: a float as a double (exact for every float dtype), an integer as its 64-bit
 * two's complement (sign-extended from a signed dtype), so that every int64 and uint64 is
 * exact: uint64 values from 2^63 up are not negative. */
typedef struct npy_value {
    int is_float, negative;
    uint64_t bits;
    double f;
} npy_value;

/* The n bytes at b (host order) as an unsigned number. */
static uint64_t load_unsigned(const unsigned char *b, int n) {
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (n) {
    case 1: return b[0];
    case 2: memcpy(&u16, b, 2); return u16;
    case 4: memcpy(&u32, b, 4); return u32;
    default: memcpy(&u64, b, 8); return u64;
    }
}

static npy_value load(const npy_array *a, int64_t i) {
    unsigned char b[8];
    load_bytes((const unsigned char *)a->data + i * a->itemsize, a->itemsize, a->swap, b);
    npy_value v = {a->kind == NPY_FLOAT, 0, load_unsigned(b, a->itemsize), 0};
    int sign_bit = 8 * a->itemsize - 1;
    if (a->kind == NPY_FLOAT && a->itemsize == 2) {
        fusec_convert(FUSEC_F16, b, FUSEC_F64, &v.f, 1);
    } else if (a->kind == NPY_FLOAT && a->itemsize == 4) {
        float f;
        memcpy(&f, b, 4);
        v.f = f;
    } else if (a->kind == NPY_FLOAT) {
        memcpy(&v.f, b, 8);
    } else if (a->kind == NPY_BOOL) {
        v.bits = v.bits != 0;
    } else if (a->kind == NPY_INT && (v.bits >> sign_bit) & 1) {
        v.negative = 1;
        v.bits |= ~UINT64_C(0) << sign_bit;
    }
    return v;
}

/* An integer as the double from which fusec_convert gives the float dtype t that numpy's
 * astype gives: for f64 the value rounded once (C's conversion, as numpy's); for the narrower
 * ones the value rounded to 53 bits *to odd*, which then rounds to f32, f16 or bf16 as the
 * exact value would (a value rounded to nearest twice can land on a tie it was not on:
 * 2^62 + 2^38 + 1 gave 2^62 in f32, not 2^62 + 2^39). */
static double int_as_double(const npy_value *v, fusec_dtype t) {
    uint64_t m = v->negative ? (uint64_t)0 - v->bits : v->bits;
    double d;
    if (t == FUSEC_F64 || m < (UINT64_C(1) << 53)) {
        d = (double)m;
    } else {
        int shift = 11 - __builtin_clzll(m); /* the bits past 53 */
        uint64_t kept = m >> shift | ((m & ((UINT64_C(1) << shift) - 1)) != 0);
        d = ldexp((double)kept, shift);
    }
    return v->negative ? -d : d;
}

/* v as dtype t at p: floats from the double; integers to integers wrap as numpy's astype
 * does (uint64 2^64 - 1 is int64 -1), to floats rounded once from the exact value. */
static void store(const npy_value *v, fusec_dtype t, unsigned char *p) {
    if (v->is_float) {
        fusec_convert(FUSEC_F64, &v->f, t, p, 1);
    } else if (t == FUSEC_BOOL || t == FUSEC_I32 || t == FUSEC_I64) {
        int64_t i;
        memcpy(&i, &v->bits, sizeof i);
        fusec_convert(FUSEC_I64, &i, t, p, 1);
    } else {
        double d = int_as_double(v, t);
        fusec_convert(FUSEC_F64, &d, t, p, 1);
    }
}

/* The fusec dtype whose bytes a's elements are as they lie in memory (host order, two's
 * complement or IEEE), or -1 where there is none: bool too, since a bool file may hold bytes
 * other than 0 and 1, which load() makes 1. */
static int same_dtype(const npy_array *a) {
    if (a->swap) return -1;
    if (a->kind == NPY_FLOAT)
        return a->itemsize == 2 ? FUSEC_F16 : a->itemsize == 4 ? FUSEC_F32 : FUSEC_F64;
    if (a->kind == NPY_INT && (a->itemsize == 4 || a->itemsize == 8))
        return a->itemsize == 4 ? FUSEC_I32 : FUSEC_I64;
    return -1;
}

static int is_float(int t) {
    return t == FUSEC_F16 || t == FUSEC_BF16 || t == FUSEC_F32 || t == FUSEC_F64;
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
    int same = same_dtype(a);
    if (same == (int)t) {
        memcpy(o, a->data, (size_t)a->count * size); /* the common case: as fast as a copy */
    } else if (is_float(same) && is_float(t)) {
        /* float to float: fusec_convert goes through double too, in one call */
        fusec_convert((fusec_dtype)same, a->data, t, o, (size_t)a->count);
    } else {
        for (int64_t i = 0; i < a->count; i++) {
            npy_value v = load(a, i);
            store(&v, t, o + (size_t)i * size);
        }
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
