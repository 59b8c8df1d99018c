/* runtime/cuda/cuda_device.h: which CUDA device a call runs on, for every caller of the CUDA
 * launcher (fusec_launch and plans, and the entry points of a library built ahead of time):
 * one rule, so that a module runs wherever its tensors are, and a call whose tensors and
 * stream are of different devices is refused before anything runs.
 */
#ifndef FUSEC_RUNTIME_CUDA_DEVICE_H
#define FUSEC_RUNTIME_CUDA_DEVICE_H

#include <stddef.h>

#include "fusec.h"
#include "ir/ir.h"

/* The device of a call of args[0 .. nargs) (nparams parameters, named param_names, then
 * results) on `stream`: the device of the tensors' memory (asked of the driver only on a
 * machine of more than one device, where it costs one query a tensor), which every tensor,
 * the stream when one is given, and `pinned` (a device the call is bound to, by `pinned_by`:
 * "the module (fusec_options.device)", "the plan"; -1: none) must share; without tensors the
 * driver knows, the stream's, else `pinned`, else the calling thread's current device.
 * FUSEC_OK with *dev, FUSEC_ERR_INVALID_ARGUMENT with a message naming what differs, or
 * FUSEC_ERR_NO_DEVICE. */
fusec_status rt_cuda_call_device(const ir_tensor *args, int nparams, int nargs,
                                 const char *const *param_names, void *stream, int pinned,
                                 const char *pinned_by, int *dev, char *err, size_t errlen);

#endif
