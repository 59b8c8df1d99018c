/* runtime/cuda/cuda_gather.h: the arguments of a gather kernel (codegen/cuda/cuda.h:
 * cuda_func.gather) for a strided input: its layout made as short as it can be, and a grid. */
#ifndef FUSEC_RUNTIME_CUDA_GATHER_H
#define FUSEC_RUNTIME_CUDA_GATHER_H

#include <stdint.h>

#include "codegen/cuda/cuda.h"
#include "ir/ir.h"

/* the int64 arguments after dst and src: count, rank, dims, strides */
#define RT_CUDA_GATHER_VALUES (2 + 2 * CUDA_GATHER_MAX_RANK)

/* t's gather arguments into values (t->strides set); *grid its blocks for a device of
 * sm_count multiprocessors, 0 when t has no element (nothing to launch). */
void rt_cuda_gather_values(const ir_tensor *t, int sm_count, int64_t *values, uint32_t *grid);

#endif
