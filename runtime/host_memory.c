/* runtime/host_memory.c: tensor memory for the backends that run on the host (the CPU backend
 * and the reference interpreter): 64-byte aligned allocations (a cache line, and the widest
 * vector), memcpy, and a synchronize that has nothing to wait for. They fill those backends'
 * memory fields, so the API treats every target alike. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/host_memory.h"

#define HOST_ALIGN 64

fusec_status rt_host_mem_alloc(int device, size_t bytes, void **ptr, char *err, size_t errlen) {
    (void)device;
    size_t n = (bytes + HOST_ALIGN - 1) & ~(size_t)(HOST_ALIGN - 1);
    *ptr = n < bytes ? NULL : aligned_alloc(HOST_ALIGN, n ? n : HOST_ALIGN);
    if (*ptr) return FUSEC_OK;
    snprintf(err, errlen, "out of memory for %zu bytes", bytes);
    return FUSEC_ERR_OUT_OF_MEMORY;
}

fusec_status rt_host_mem_free(void *ptr, char *err, size_t errlen) {
    (void)err, (void)errlen;
    free(ptr);
    return FUSEC_OK;
}

fusec_status rt_host_mem_copy(void *dst, const void *src, size_t bytes, int to_device, char *err,
                              size_t errlen) {
    (void)to_device, (void)err, (void)errlen;
    if (bytes) memcpy(dst, src, bytes);
    return FUSEC_OK;
}

fusec_status rt_host_synchronize(void *stream, char *err, size_t errlen) {
    (void)stream, (void)err, (void)errlen;
    return FUSEC_OK; /* host launches are done when they return */
}
