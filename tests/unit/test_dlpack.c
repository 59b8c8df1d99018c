/* tests/unit/test_dlpack.c: fusec_launch_dlpack (fusec.h 0.5), tensors as DLPack describes
 * them, on every target this machine has, fused and --no-fuse: each call against the same
 * call through fusec_launch on the same memory (bit for bit), for every dtype DLPack and
 * fusec share, a byte_offset, a transposed and a broadcast input, a result in place; one
 * function's values checked here by hand. Then what a careless caller gets, each refused
 * before anything runs (the results stay poisoned): dtypes fusec has no type for (uint8,
 * complex64, vectors of lanes), a device the target cannot reach, bad ranks, a shape left
 * NULL, NULL tensors, wrong counts, a dtype that is not the parameter's, a strided result,
 * a byte_offset or strides taking an address around the end of the address space.
 * The DLPack structs are written out below as dlpack.h has them, apart from the library's
 * own copy (runtime/dlpack.h), so a layout mistake there shows here. */
#include "fusec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"

/* dlpack.h (v1.0), the parts a caller fills in */
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 } DLDeviceType;
typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;
typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
    kDLBool = 6U
} DLDataTypeCode;
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

static const char *SRC =
    "fn pw(x: f32[R, C], y: f32[C]) -> f32[R, C] {\n"
    "    return x * 2.0 + y;\n"
    "}\n"
    "fn mixed(a: i64[R, C], h: f16[R, C], c: bool[R, C], d: f64[R, C], w: bf16[C], k: i32[])\n"
    "    -> (f64[R, C], f32[R]) {\n"
    "    let v = where(c, f64(a), d) + f64(h) * f64(w) + f64(k);\n"
    "    return v, sum(f32(v), axis=1);\n"
    "}\n";

#define R 37
#define C 53

static uint32_t rng = 4242;

/* The DLPack dtype of each fusec dtype, by fusec's number */
static const DLDataType DL_OF[] = {
    {kDLBool, 8, 1},    {kDLInt, 32, 1},   {kDLInt, 64, 1},   {kDLFloat, 16, 1},
    {kDLBfloat, 16, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1},
};

/* One array on the target: its memory, a fusec_tensor and a DLTensor over it. */
typedef struct arr {
    void *mem;
    size_t bytes;
    fusec_tensor t;
    DLTensor dl;
    int64_t shape[2];
} arr;

/* Random non-zero elements of a dtype (bool: 0/1; f16/bf16: normal numbers of either sign). */
static void fill_random(fusec_dtype dt, void *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float f = api_frand(&rng, 3);
        switch (dt) {
        case FUSEC_BOOL: ((uint8_t *)p)[i] = f > 0; break;
        case FUSEC_I32: ((int32_t *)p)[i] = (int32_t)(f * 100); break;
        case FUSEC_I64: ((int64_t *)p)[i] = (int64_t)(f * 1000); break;
        case FUSEC_F16:
            ((uint16_t *)p)[i] = (uint16_t)(((f < 0) << 15) | (14u << 10) | (i & 0x3ff));
            break;
        case FUSEC_BF16: {
            uint32_t u;
            memcpy(&u, &f, 4);
            ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
            break;
        }
        case FUSEC_F32: ((float *)p)[i] = f; break;
        case FUSEC_F64: ((double *)p)[i] = f * 1.000001; break;
        }
    }
}

/* An array of rank `rank` (shape [R, C], [C], [R] or []) on m's target; random contents, or
 * poison (0xA5 bytes) when `poison` is set. Made in place: its DLTensor points at its shape. */
static void make(arr *out, fusec_module *m, fusec_dtype dt, int rank, int64_t d0, int64_t d1,
                 int poison) {
    memset(out, 0, sizeof *out);
    out->shape[0] = d0;
    out->shape[1] = d1;
    size_t n = rank == 0 ? 1 : rank == 1 ? (size_t)d0 : (size_t)(d0 * d1);
    out->bytes = n * fusec_dtype_size(dt);
    void *h = malloc(out->bytes);
    if (poison)
        memset(h, 0xA5, out->bytes);
    else
        fill_random(dt, h, n);
    CHECK(fusec_memory_alloc(m, out->bytes, &out->mem) == FUSEC_OK);
    CHECK(fusec_memory_upload(m, out->mem, h, out->bytes) == FUSEC_OK);
    free(h);
    out->t = api_tensor(out->mem, dt, rank, out->shape, NULL);
    int cuda = fusec_module_target(m) == FUSEC_TARGET_CUDA;
    out->dl.data = out->mem;
    out->dl.device = (DLDevice){cuda ? kDLCUDA : kDLCPU, 0};
    out->dl.ndim = rank;
    out->dl.dtype = DL_OF[dt];
    out->dl.shape = out->shape;
}

/* Whether two arrays on m's target hold the same bytes. */
static int same_bytes(fusec_module *m, const arr *x, const arr *y) {
    void *a = malloc(x->bytes), *b = malloc(y->bytes);
    CHECK(fusec_memory_download(m, a, x->mem, x->bytes) == FUSEC_OK);
    CHECK(fusec_memory_download(m, b, y->mem, y->bytes) == FUSEC_OK);
    int same = x->bytes == y->bytes && memcmp(a, b, x->bytes) == 0;
    free(a);
    free(b);
    return same;
}

/* Whether an array still holds its poison (nothing was written). */
static int poisoned(fusec_module *m, const arr *x) {
    unsigned char *a = malloc(x->bytes);
    CHECK(fusec_memory_download(m, a, x->mem, x->bytes) == FUSEC_OK);
    int all = 1;
    for (size_t i = 0; i < x->bytes; i++)
        all &= a[i] == 0xA5;
    free(a);
    return all;
}

/* Every dtype: `mixed` through DLPack against `mixed` through fusec_launch, bit for bit. */
static void test_dtypes(fusec_module *m, const char *what) {
    fusec_function *f = api_fn(m, "mixed");
    arr in[6], want[2], got[2];
    make(&in[0], m, FUSEC_I64, 2, R, C, 0);
    make(&in[1], m, FUSEC_F16, 2, R, C, 0);
    make(&in[2], m, FUSEC_BOOL, 2, R, C, 0);
    make(&in[3], m, FUSEC_F64, 2, R, C, 0);
    make(&in[4], m, FUSEC_BF16, 1, C, 0, 0);
    make(&in[5], m, FUSEC_I32, 0, 0, 0, 0);
    for (int i = 0; i < 2; i++) {
        make(&want[i], m, i ? FUSEC_F32 : FUSEC_F64, 2 - i, R, i ? 0 : C, 1);
        make(&got[i], m, i ? FUSEC_F32 : FUSEC_F64, 2 - i, R, i ? 0 : C, 1);
    }
    fusec_tensor ts[6], rs[2] = {want[0].t, want[1].t};
    const void *dls[8];
    for (int i = 0; i < 6; i++) {
        ts[i] = in[i].t;
        dls[i] = &in[i].dl;
    }
    dls[6] = &got[0].dl;
    dls[7] = &got[1].dl;
    CHECK_MSG(fusec_launch(f, ts, 6, rs, 2, NULL) == FUSEC_OK, "%s", fusec_module_message(m));
    CHECK_MSG(fusec_launch_dlpack(f, dls, 6, 2, NULL) == FUSEC_OK, "%s: %s", what,
              fusec_module_message(m));
    CHECK_MSG(fusec_synchronize(m, NULL) == FUSEC_OK, "%s", what);
    CHECK_MSG(!poisoned(m, &got[0]) && same_bytes(m, &want[0], &got[0]) &&
                  same_bytes(m, &want[1], &got[1]),
              "%s: mixed (every dtype) through DLPack differs from fusec_launch", what);
    for (int i = 0; i < 6; i++)
        fusec_memory_free(m, in[i].mem);
    for (int i = 0; i < 2; i++) {
        fusec_memory_free(m, want[i].mem);
        fusec_memory_free(m, got[i].mem);
    }
}

/* pw's values by hand, for x read through a byte_offset, transposed, and y broadcast. */
static void test_views(fusec_module *m, const char *what) {
    fusec_function *f = api_fn(m, "pw");
    float *xh = malloc(sizeof(float) * (R * C + 3)), yh[C], *out = malloc(sizeof(float) * R * C);
    fill_random(FUSEC_F32, xh, R * C + 3);
    fill_random(FUSEC_F32, yh, C);
    void *xd, *yd, *od;
    CHECK(fusec_memory_alloc(m, sizeof(float) * (R * C + 3), &xd) == FUSEC_OK);
    CHECK(fusec_memory_alloc(m, sizeof yh, &yd) == FUSEC_OK);
    CHECK(fusec_memory_alloc(m, sizeof(float) * R * C, &od) == FUSEC_OK);
    CHECK(fusec_memory_upload(m, xd, xh, sizeof(float) * (R * C + 3)) == FUSEC_OK);
    CHECK(fusec_memory_upload(m, yd, yh, sizeof yh) == FUSEC_OK);
    DLDevice dev = {fusec_module_target(m) == FUSEC_TARGET_CUDA ? kDLCUDA : kDLCPU, 0};
    int64_t shape[2] = {R, C}, yshape[1] = {C}, tstrides[2] = {1, R}, ystride[1] = {0};
    for (int v = 0; v < 3; v++) {
        /* 0: x dense at byte_offset 12; 1: x[i][j] = xh[3 + j * R + i] (a transposed [C, R]);
         * 2: y[j] = yh[0] (stride 0) */
        DLTensor x = {xd, dev, 2, {kDLFloat, 32, 1}, shape, v == 1 ? tstrides : NULL, 12};
        DLTensor y = {yd, dev, 1, {kDLFloat, 32, 1}, yshape, v == 2 ? ystride : NULL, 0};
        DLTensor o = {od, dev, 2, {kDLFloat, 32, 1}, shape, NULL, 0};
        const void *dls[3] = {&x, &y, &o};
        CHECK(fusec_memory_upload(m, od, xh, sizeof(float) * R * C) == FUSEC_OK); /* poison */
        CHECK_MSG(fusec_launch_dlpack(f, dls, 2, 1, NULL) == FUSEC_OK, "%s: %s", what,
                  fusec_module_message(m));
        CHECK(fusec_memory_download(m, out, od, sizeof(float) * R * C) == FUSEC_OK);
        int bad = 0;
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) {
                float xv = v == 1 ? xh[3 + j * R + i] : xh[3 + i * C + j];
                bad += out[i * C + j] != xv * 2.0f + yh[v == 2 ? 0 : j];
            }
        CHECK_MSG(!bad, "%s: pw through DLPack view %d: %d wrong", what, v, bad);
    }
    /* in place: the result is x's own memory */
    DLTensor x = {xd, dev, 2, {kDLFloat, 32, 1}, shape, NULL, 0};
    DLTensor y = {yd, dev, 1, {kDLFloat, 32, 1}, yshape, NULL, 0};
    const void *dls[3] = {&x, &y, &x};
    CHECK_MSG(fusec_launch_dlpack(f, dls, 2, 1, NULL) == FUSEC_OK, "%s: in place: %s", what,
              fusec_module_message(m));
    CHECK(fusec_memory_download(m, out, xd, sizeof(float) * R * C) == FUSEC_OK);
    int bad = 0;
    for (int i = 0; i < R * C; i++)
        bad += out[i] != xh[i] * 2.0f + yh[i % C];
    CHECK_MSG(!bad, "%s: pw in place through DLPack: %d wrong", what, bad);
    fusec_memory_free(m, xd);
    fusec_memory_free(m, yd);
    fusec_memory_free(m, od);
    free(xh);
    free(out);
}

/* A refused call: its status, every fragment in the message, the result unwritten. */
static void refused(fusec_module *m, fusec_function *f, const void *const *dls, int ni, int nr,
                    fusec_status want, const char *frag1, const char *frag2, const arr *res,
                    const char *what) {
    fusec_status st = fusec_launch_dlpack(f, dls, ni, nr, NULL);
    const char *msg = fusec_module_message(m);
    CHECK_MSG(st == want && strstr(msg, frag1) && (!frag2 || strstr(msg, frag2)),
              "%s: status %d (want %d), message \"%s\" (want \"%s\"%s%s)", what, st, want, msg,
              frag1, frag2 ? ", " : "", frag2 ? frag2 : "");
    CHECK(fusec_synchronize(m, NULL) == FUSEC_OK);
    CHECK_MSG(poisoned(m, res), "%s: a refused call wrote its result", what);
}

/* Addresses that wrap around the address space, each refused before anything is read (they
 * pointed before the array, or anywhere): a byte_offset of 2^64 - 4 (data - 4 once wrapped),
 * negative strides reaching below address 0, a dense array running past the top. x is left
 * as it was. */
static void test_wrapping(fusec_module *m, fusec_function *f, arr *x, const arr *o,
                          const char *what) {
    const void *dls[3] = {&x->dl, NULL, &o->dl};
    arr y;
    make(&y, m, FUSEC_F32, 1, C, 0, 0);
    dls[1] = &y.dl;
    x->dl.byte_offset = UINT64_MAX - 3;
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "parameter 'x'", "byte_offset", o, what);
    x->dl.byte_offset = UINT64_MAX;
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "parameter 'x'", "wraps", o, what);
    x->dl.byte_offset = 0;
    /* row R - 1 lies (R - 1) * stride elements from data: a little below address 0 */
    int64_t below[2] = {-(int64_t)((uintptr_t)x->mem / 4 / (R - 1)) - 1, 1};
    x->dl.strides = below;
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "parameter 'x'", "strides", o, what);
    int64_t huge[2] = {INT64_MAX / 4, 1}; /* an offset past int64 */
    x->dl.strides = huge;
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "parameter 'x'", "strides", o, what);
    x->dl.strides = NULL;
    x->dl.data = (void *)(UINTPTR_MAX - 63); /* R * C elements from there run past the top */
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "parameter 'x'", "address space", o, what);
    /* a wrap that lands on the array itself is refused all the same: an offset is no
     * negative number in DLPack, so this is not what the caller meant */
    x->dl.data = (char *)x->mem + 4;
    x->dl.byte_offset = UINT64_MAX - 3;
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "parameter 'x'", "byte_offset", o, what);
    x->dl.data = x->mem;
    x->dl.byte_offset = 0;
    fusec_memory_free(m, y.mem);
}

static void test_refusals(fusec_module *m, const char *what) {
    fusec_function *f = api_fn(m, "pw");
    arr x, y, o;
    make(&x, m, FUSEC_F32, 2, R, C, 0);
    make(&y, m, FUSEC_F32, 1, C, 0, 0);
    make(&o, m, FUSEC_F32, 2, R, C, 1);
    const void *dls[3] = {&x.dl, &y.dl, &o.dl};
    char w[160];
    snprintf(w, sizeof w, "%s: uint8", what);
    x.dl.dtype = (DLDataType){kDLUInt, 8, 1};
    refused(m, f, dls, 2, 1, FUSEC_ERR_DTYPE, "parameter 'x'", "uint8", &o, w);
    x.dl.dtype = (DLDataType){kDLComplex, 64, 1};
    refused(m, f, dls, 2, 1, FUSEC_ERR_DTYPE, "parameter 'x'", "complex64", &o, w);
    x.dl.dtype = (DLDataType){kDLFloat, 32, 4};
    refused(m, f, dls, 2, 1, FUSEC_ERR_DTYPE, "float32 x4 lanes", NULL, &o, w);
    x.dl.dtype = (DLDataType){kDLFloat, 64, 1}; /* a dtype fusec has, not the parameter's */
    refused(m, f, dls, 2, 1, FUSEC_ERR_DTYPE, "parameter 'x'", "expected f32, got f64", &o, w);
    x.dl.dtype = (DLDataType){kDLFloat, 32, 1};
    int cuda = fusec_module_target(m) == FUSEC_TARGET_CUDA;
    o.dl.device.device_type = cuda ? kDLCPU : kDLCUDA;
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "result 0", "cannot reach", &o, what);
    o.dl.device.device_type = cuda ? kDLCUDA : kDLCPU;
    if (cuda) {
        /* any device's memory (the call runs where it is), but no id past the 64th */
        o.dl.device.device_id = 64;
        refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "id 64", "CUDA devices 0 to 63", &o,
                what);
        o.dl.device.device_id = -1;
        refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "id -1", "cannot reach", &o, what);
        o.dl.device.device_id = 0;
    }
    y.dl.ndim = 2; /* [C, 0]: not pw's f32[C] */
    refused(m, f, dls, 2, 1, FUSEC_ERR_SHAPE, "'y'", NULL, &o, what);
    y.dl.ndim = 9;
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "parameter 'y'", "rank 9", &o, what);
    y.dl.ndim = -1;
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "parameter 'y'", "rank -1", &o, what);
    y.dl.ndim = 1;
    y.dl.shape = NULL;
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "without a shape", NULL, &o, what);
    y.dl.shape = y.shape;
    const void *with_null[3] = {&x.dl, NULL, &o.dl};
    refused(m, f, with_null, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "parameter 'y'", "NULL", &o, what);
    refused(m, f, NULL, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "no tensors", NULL, &o, what);
    refused(m, f, dls, 1, 1, FUSEC_ERR_INVALID_ARGUMENT, "takes 2 inputs, got 1", NULL, &o, what);
    refused(m, f, dls, 2, 2, FUSEC_ERR_INVALID_ARGUMENT, "has 1 result, got 2", NULL, &o, what);
    refused(m, f, dls, -5, 1, FUSEC_ERR_INVALID_ARGUMENT, "got -5", NULL, &o, what);
    int64_t strides[2] = {1, R};
    o.dl.strides = strides;
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "result 0", "dense", &o, what);
    o.dl.strides = NULL;
    o.dl.data = NULL;
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "result 0", NULL, &o, what);
    o.dl.data = o.mem;
    o.dl.byte_offset = 2; /* misaligned */
    refused(m, f, dls, 2, 1, FUSEC_ERR_INVALID_ARGUMENT, "result 0", NULL, &o, what);
    o.dl.byte_offset = 0;
    test_wrapping(m, f, &x, &o, what);
    CHECK(fusec_launch_dlpack(NULL, dls, 2, 1, NULL) == FUSEC_ERR_INVALID_ARGUMENT);
    fusec_memory_free(m, x.mem);
    fusec_memory_free(m, y.mem);
    fusec_memory_free(m, o.mem);
}

static void test_target(fusec_target t, const char *name, int no_fuse) {
    char what[64];
    snprintf(what, sizeof what, "%s%s", name, no_fuse ? " --no-fuse" : "");
    fusec_module *m = api_compile(SRC, t, no_fuse, NULL, 1);
    if (!m) return;
    test_dtypes(m, what);
    test_views(m, what);
    test_refusals(m, what);
    fusec_module_free(m);
}

int main(void) {
    api_each_target(test_target);
    return check_exit("test_dlpack");
}
