/* tests/mock/cuda_mock.h: what the stand-in driver (cuda_mock.c, mock_streams.c) counts, for its
 * tests. */
#ifndef FUSEC_TESTS_CUDA_MOCK_H
#define FUSEC_TESTS_CUDA_MOCK_H

typedef struct mock_stats {
    int launches, graph_launches, graph_nodes, node_updates, instantiations;
    int pushes, pops, allocs, frees, pool_allocs, pool_frees, streams, events, graphs;
    int unloads_queued; /* cuModuleUnload while kernels of the module were still queued */
    int invalidations;  /* stream captures invalidated by a call the capture forbids */
    int jit_loads;      /* modules loaded from PTX (JIT-compiled) */
    char last_kernel[128];
    unsigned last_grid, last_block;
    int launches_on[8]; /* kernel launches and graph launches, by device (MOCK_MAX_DEVICES) */
} mock_stats;

enum { MOCK_MAX_DEVICES = 8 };

/* The counts so far (exported by the mock; found with dlsym). */
mock_stats *mock_get_stats(void);

#endif
