/* runtime/host_memory.h: tensor memory of the targets that run on the host (the CPU, the
 * reference interpreter): what their rt_backend memory fields are (driver/backend.h). */
#ifndef FUSEC_RUNTIME_HOST_MEMORY_H
#define FUSEC_RUNTIME_HOST_MEMORY_H

#include <stddef.h>

#include "fusec.h"

/* The memory fields of the backends that run on the host (runtime/host_memory.c): 64-byte
 * aligned malloc, memcpy, nothing to wait for. */
/* device: the backend field's (a GPU's), ignored here */
fusec_status rt_host_mem_alloc(int device, size_t bytes, void **ptr, char *err, size_t errlen);
fusec_status rt_host_mem_free(void *ptr, char *err, size_t errlen);
fusec_status rt_host_mem_copy(void *dst, const void *src, size_t bytes, int to_device, char *err,
                              size_t errlen);
fusec_status rt_host_synchronize(void *stream, char *err, size_t errlen);

#endif
