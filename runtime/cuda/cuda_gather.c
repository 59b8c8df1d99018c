/* runtime/cuda/cuda_gather.c: a strided input's layout as the gather kernel takes it. Dims of
 * one element go, and a dim laid out right after the next one inside it (stride = its
 * stride times its extent) merges with it, so a sliced or permuted matrix costs the
 * kernel two divisions an element however many dims of one it had. */
#include "runtime/cuda/cuda_gather.h"

#include <string.h>

void rt_cuda_gather_values(const ir_tensor *t, int sm_count, int64_t *values, uint32_t *grid) {
    int64_t dims[CUDA_GATHER_MAX_RANK], strides[CUDA_GATHER_MAX_RANK], n = 1;
    int r = 0;
    /* from the outermost dim in: each either merges into the one before or starts one */
    for (int d = 0; d < t->rank; d++) {
        n *= t->dims[d];
        if (t->dims[d] == 1) continue;
        if (r && strides[r - 1] == t->strides[d] * t->dims[d]) {
            dims[r - 1] *= t->dims[d];
            strides[r - 1] = t->strides[d];
            continue;
        }
        dims[r] = t->dims[d];
        strides[r++] = t->strides[d];
    }
    if (r == 0) { /* one element (or none) */
        dims[0] = 1;
        strides[0] = 0;
        r = 1;
    }
    memset(values, 0, sizeof(int64_t) * RT_CUDA_GATHER_VALUES);
    values[0] = n;
    values[1] = r;
    for (int d = 0; d < CUDA_GATHER_MAX_RANK; d++) {
        values[2 + d] = d < r ? dims[d] : 1;
        values[2 + CUDA_GATHER_MAX_RANK + d] = d < r ? strides[d] : 0;
    }
    /* enough blocks to fill the device a few times over; the kernel loops over the rest */
    int64_t blocks = (n + CUDA_GATHER_BLOCK - 1) / CUDA_GATHER_BLOCK;
    int64_t cap = (int64_t)(sm_count > 0 ? sm_count : 1) * 8;
    *grid = (uint32_t)(blocks < cap ? blocks : cap);
}
