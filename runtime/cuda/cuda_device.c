/* runtime/cuda/cuda_device.c: which CUDA device a call runs on (see cuda_device.h). */
#include "runtime/cuda/cuda_device.h"

#include <stdint.h>
#include <stdio.h>

#include "runtime/args.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/dlpack.h"

_Static_assert(RT_DL_MAX_DEVICES == RT_CUDA_MAX_DEVICES,
               "DLPack takes the device ids the CUDA runtime keeps state for");

/* CU_STREAM_LEGACY and CU_STREAM_PER_THREAD, and NULL: streams of whichever context is current */
static int named_stream(void *stream) {
    return (uintptr_t)stream > 2;
}

fusec_status rt_cuda_call_device(const ir_tensor *args, int nparams, int nargs,
                                 const char *const *param_names, void *stream, int pinned,
                                 const char *pinned_by, int *dev, char *err, size_t errlen) {
    rt_cuda_device d0;
    if (!rt_cuda_probe(&d0, err, errlen)) return FUSEC_ERR_NO_DEVICE;
    if (pinned >= d0.count) {
        snprintf(err, errlen, "CUDA device %d does not exist (the driver shows %d)", pinned,
                 d0.count);
        return FUSEC_ERR_INVALID_ARGUMENT;
    }
    *dev = 0;
    if (d0.count == 1) return FUSEC_OK; /* one device: nothing to choose, nothing to ask */
    int want = -1, who = -1;
    char a[160], b[160];
#define NAME(i, buf)                                                                               \
    rt_arg_name((i) < nparams && param_names ? param_names[i] : NULL, nparams, (i), (buf),         \
                sizeof(buf))
    for (int i = 0; i < nargs; i++) {
        int k = args[i].data ? rt_cuda_pointer_device(args[i].data) : -1;
        if (k < 0) continue;
        if (want < 0) {
            want = k;
            who = i;
        } else if (k != want) {
            snprintf(err, errlen, "%s is memory of CUDA device %d, %s of device %d", NAME(who, a),
                     want, NAME(i, b), k);
            return FUSEC_ERR_INVALID_ARGUMENT;
        }
    }
    if (named_stream(stream)) {
        int s = rt_cuda_stream_device(stream, err, errlen);
        if (s < 0) return FUSEC_ERR_INVALID_ARGUMENT;
        if (want >= 0 && s != want) {
            snprintf(err, errlen, "the stream belongs to CUDA device %d, %s to device %d", s,
                     NAME(who, a), want);
            return FUSEC_ERR_INVALID_ARGUMENT;
        }
        if (want < 0) want = s;
    }
    if (want >= 0 && pinned >= 0 && want != pinned) {
        if (who >= 0)
            snprintf(err, errlen, "%s runs on CUDA device %d, but %s is memory of device %d",
                     pinned_by, pinned, NAME(who, a), want);
        else
            snprintf(err, errlen, "%s runs on CUDA device %d, but the stream belongs to device %d",
                     pinned_by, pinned, want);
        return FUSEC_ERR_INVALID_ARGUMENT;
    }
#undef NAME
    *dev = want >= 0 ? want : pinned >= 0 ? pinned : rt_cuda_current_device();
    return FUSEC_OK;
}
