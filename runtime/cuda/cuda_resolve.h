/* runtime/cuda/cuda_resolve.h: the CUDA generator's launch descriptions (codegen/cuda/cuda.h)
 * made concrete at a call: the sizes, each launch's variant, grid, block and argument values,
 * the scratch. Needs no compiler: part of libfusec_rt. */
#ifndef FUSEC_RUNTIME_CUDA_RESOLVE_H
#define FUSEC_RUNTIME_CUDA_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/cuda/cuda.h"

/* A size's value; -1 when it overflows int64. */
int64_t rt_cuda_size_eval(const cuda_size *s, const int64_t *syms);

/* One launch made concrete. */
typedef struct rt_cuda_config {
    int skip;         /* no work: do not launch */
    int variant;      /* index into launch.variants */
    const char *name; /* its function */
    uint32_t grid, block, smem_bytes;
    int64_t row_threads; /* ROWS grids: T */
    int64_t pieces;      /* a split launch's pieces (1: not split) */
} rt_cuda_config;

/* Resolves every launch of f for the symbolic dims `syms` on a device with `sm_count`
 * multiprocessors: configs[f->nlaunches], and values[] holds, for launch i, argument j at
 * values[sum of nargs of launches before i + j] (int64 kinds; 0 for pointers). `params` and
 * `results` are the device addresses of the call's tensors, for alignment conditions (NULL:
 * taken as unaligned); scratch buffers must be allocated 256-byte aligned. Checks f's
 * `checks` first. 0, or -1 with a message (a check failed, or a size overflows). */
int rt_cuda_resolve(const cuda_func *f, const int64_t *syms, const uint64_t *params,
                    const uint64_t *results, int sm_count, rt_cuda_config *configs, int64_t *values,
                    char *err, size_t errlen);
/* The bytes of scratch buffer k of f for these dims, once rt_cuda_resolve has filled `configs`;
 * -1 when it overflows int64. */
int64_t rt_cuda_scratch_bytes(const cuda_func *f, int32_t k, const int64_t *syms,
                              const rt_cuda_config *configs);
/* The number of int64 slots rt_cuda_resolve needs in `values`. */
int32_t rt_cuda_func_nargs(const cuda_func *f);

#endif
