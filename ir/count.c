/* ir/count.c: a shape's concrete dims, a tensor's element count and the bytes its elements
 * span, checked against overflow: launch-time arithmetic that the runtime library
 * (libfusec_rt) shares with the compiler, so it depends on nothing else of ir/. */
#include "ir.h"

#include <stdint.h>

void ir_shape_concrete(const ir_shape *s, const int64_t *sym_values, int64_t *dims) {
    for (int32_t i = 0; i < s->rank; i++)
        dims[i] = s->dims[i].sym >= 0 ? sym_values[s->dims[i].sym] : s->dims[i].size;
}

int64_t ir_dims_count(const int64_t *dims, int32_t rank) {
    for (int32_t i = 0; i < rank; i++)
        if (dims[i] == 0) return 0;
    /* 2^56 elements is far past any memory, and keeps n * 8 bytes inside int64 and size_t */
    const int64_t limit =
        (SIZE_MAX / 16 < (UINT64_C(1) << 56)) ? (int64_t)(SIZE_MAX / 16) : (INT64_C(1) << 56);
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++) /* (n * dims[i] > limit: no division, launches count) */
        if (dims[i] < 0 || __builtin_mul_overflow(n, dims[i], &n) || n > limit) return -1;
    return n;
}

int ir_byte_span(const int64_t *dims, const int64_t *strides, int32_t rank, int64_t elem_bytes,
                 int64_t *lo, int64_t *hi) {
    int64_t n = ir_dims_count(dims, rank);
    *lo = *hi = 0;
    if (n <= 0) return n == 0 ? 0 : -1;
    int64_t min = 0, max = strides ? 0 : n - 1; /* elements from (0, ..., 0) */
    for (int32_t d = 0; strides && d < rank; d++) {
        int64_t reach;
        if (__builtin_mul_overflow(strides[d], dims[d] - 1, &reach) ||
            __builtin_add_overflow(reach < 0 ? min : max, reach, reach < 0 ? &min : &max))
            return -1;
    }
    if (__builtin_mul_overflow(min, elem_bytes, lo) ||
        __builtin_mul_overflow(max + 1, elem_bytes, hi))
        return -1;
    return 0;
}
