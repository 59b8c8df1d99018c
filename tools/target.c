/* tools/target.c: tensors in memory for `fusec run` and `fusec bench`: host buffers, their
 * sizes checked first (they come from the user), and the target's memory (a GPU's, or the
 * host's) through fusec.h's memory functions like any embedder. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_tensor_size(fusec_dtype t, int rank, const int64_t *shape, int64_t *count, size_t *bytes) {
    int64_t n = 1;
    int zero = 0;
    /* the other dims of an empty tensor must fit too: strides are products of them */
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 0) return -1;
        if (shape[d] == 0)
            zero = 1;
        else if (n > INT64_MAX / shape[d])
            return -1;
        else
            n *= shape[d];
    }
    /* no object is larger than PTRDIFF_MAX bytes in C (nor does malloc make one) */
    size_t size = fusec_dtype_size(t);
    if (!size || (uint64_t)n > (uint64_t)PTRDIFF_MAX / size) return -1;
    *count = zero ? 0 : n;
    *bytes = zero ? 0 : (size_t)n * size;
    return 0;
}

size_t cli_tensor_bytes(const fusec_tensor *t) {
    int64_t count;
    size_t bytes;
    if (cli_tensor_size(t->dtype, t->rank, t->shape, &count, &bytes) != 0) return SIZE_MAX;
    return bytes;
}

/* "fusec: error: WHAT is too large: f32[2, 3] WHY", the error of a size from the user. */
static int too_large(const char *what, const fusec_tensor *t, const char *why) {
    fprintf(stderr, "fusec: error: %s is too large: %s[", what, fusec_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++)
        fprintf(stderr, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    fprintf(stderr, "] %s\n", why);
    return EXIT_INPUT;
}

/* The bytes of memory this machine has; 0 if unknown. */
static uint64_t machine_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* Host buffers start on a cache line, like the copy bench measures against and like
 * PyTorch's tensors; malloc's 16-byte alignment would also measure split vector loads. */
static void *alloc_aligned(size_t bytes) {
    size_t rounded = bytes ? (bytes + 63) / 64 * 64 : 64; /* bytes <= PTRDIFF_MAX: no wrap */
    return aligned_alloc(64, rounded);
}

int cli_alloc_tensor(fusec_tensor *t, const char *what, int64_t *count, size_t *bytes) {
    if (cli_tensor_size(t->dtype, t->rank, t->shape, count, bytes) != 0)
        return too_large(what, t, "has more elements or bytes than this machine can address");
    uint64_t have = machine_memory();
    if (have && *bytes > have) {
        char why[128];
        snprintf(why, sizeof why, "needs %zu bytes, more than this machine's memory (%llu bytes)",
                 *bytes, (unsigned long long)have);
        return too_large(what, t, why);
    }
    t->data = alloc_aligned(*bytes);
    if (!t->data) {
        fprintf(stderr, "fusec: error: out of memory for %s (%zu bytes)\n", what, *bytes);
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}

/* The host is the target's memory: the host tensors serve as they are. */
static int on_host(const fusec_module *m) {
    return fusec_module_target(m) != FUSEC_TARGET_CUDA;
}

int cli_to_target(fusec_module *m, const fusec_tensor *host, int n, int upload, fusec_tensor *dev) {
    for (int i = 0; i < n; i++) {
        dev[i] = host[i];
        if (!on_host(m)) dev[i].data = NULL;
    }
    if (on_host(m)) return EXIT_OK;
    for (int i = 0; i < n; i++) {
        size_t bytes = cli_tensor_bytes(&host[i]);
        fusec_status st = fusec_memory_alloc(m, bytes, &dev[i].data);
        if (st == FUSEC_OK && upload) st = fusec_memory_upload(m, dev[i].data, host[i].data, bytes);
        if (st != FUSEC_OK) {
            fprintf(stderr, "fusec: error: %s\n", fusec_module_message(m));
            return cli_exit_code(st);
        }
    }
    return EXIT_OK;
}

int cli_from_target(fusec_module *m, fusec_tensor *host, const fusec_tensor *dev, int n) {
    fusec_status st = fusec_synchronize(m, NULL);
    for (int i = 0; i < n && st == FUSEC_OK && !on_host(m); i++)
        st = fusec_memory_download(m, host[i].data, dev[i].data, cli_tensor_bytes(&host[i]));
    if (st != FUSEC_OK) {
        fprintf(stderr, "fusec: error: %s\n", fusec_module_message(m));
        return cli_exit_code(st);
    }
    return EXIT_OK;
}

void cli_free_target(fusec_module *m, fusec_tensor *dev, int n) {
    for (int i = 0; i < n && !on_host(m); i++) {
        fusec_memory_free(m, dev[i].data);
        dev[i].data = NULL;
    }
}
