/* driver/convert.c: fusec_convert, host-side dtype conversion with the SPEC's rounding, for
 * embedders preparing f16/bf16 buffers and for the command line's .npy files. */
#include "fusec.h"

#include <string.h>

#include "ir/ir.h"

/* Integers go through int64 (exact), floats through double (exact for every float dtype). */
static int is_int_like(fusec_dtype t) {
    return t == FUSEC_BOOL || t == FUSEC_I32 || t == FUSEC_I64;
}

static int64_t load_int(fusec_dtype t, const unsigned char *p) {
    switch (t) {
    case FUSEC_BOOL: return p[0] != 0;
    case FUSEC_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    default: {
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

static double load_float(fusec_dtype t, const unsigned char *p) {
    uint16_t h;
    switch (t) {
    case FUSEC_F16: memcpy(&h, p, 2); return ir_f16_to_double(h);
    case FUSEC_BF16: memcpy(&h, p, 2); return ir_bf16_to_double(h);
    case FUSEC_F32: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    default: {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    }
}

static void store_int(fusec_dtype t, unsigned char *p, int64_t v) {
    switch (t) {
    case FUSEC_BOOL: p[0] = v != 0; break;
    case FUSEC_I32: {
        int32_t w = (int32_t)ir_wrap_int(v, IR_I32);
        memcpy(p, &w, 4);
    } break;
    default: memcpy(p, &v, 8); break;
    }
}

static void store_float(fusec_dtype t, unsigned char *p, double v) {
    uint16_t h;
    switch (t) {
    case FUSEC_F16:
        h = ir_f16_from_double(v);
        memcpy(p, &h, 2);
        break;
    case FUSEC_BF16:
        h = ir_bf16_from_double(v);
        memcpy(p, &h, 2);
        break;
    case FUSEC_F32: {
        float f = (float)v;
        memcpy(p, &f, 4);
    } break;
    default: memcpy(p, &v, 8); break;
    }
}

fusec_status fusec_convert(fusec_dtype from, const void *src, fusec_dtype to, void *dst,
                           size_t count) {
    size_t fs = fusec_dtype_size(from), ts = fusec_dtype_size(to);
    if (!fs || !ts || (count && (!src || !dst))) return FUSEC_ERR_INVALID_ARGUMENT;
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (size_t i = 0; i < count; i++, s += fs, d += ts) {
        if (is_int_like(from)) {
            int64_t v = load_int(from, s);
            if (is_int_like(to))
                store_int(to, d, v);
            else
                store_float(to, d, (double)v);
        } else {
            double v = load_float(from, s);
            if (is_int_like(to))
                store_int(to, d, ir_float_to_int(v, (ir_dtype)to));
            else
                store_float(to, d, v);
        }
    }
    return FUSEC_OK;
}
