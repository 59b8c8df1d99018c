/* tests/mock/cuda_mock.h: what the stand-in driver (cuda_mock.c) counts, for its test. */
#ifndef FUSEC_TESTS_CUDA_MOCK_H
#define FUSEC_TESTS_CUDA_MOCK_H

typedef struct mock_stats {
    int launches, graph_launches, graph_nodes, node_updates, instantiations;
    int pushes, pops, allocs, frees, pool_allocs, pool_frees, streams, events, graphs;
    char last_kernel[128];
    unsigned last_grid, last_block;
} mock_stats;

/* The counts so far (exported by the mock; found with dlsym). */
mock_stats *mock_get_stats(void);

#endif
