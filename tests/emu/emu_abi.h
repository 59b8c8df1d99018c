/* tests/emu/emu_abi.h: what a host build of generated CUDA code (tests/emu/cuda_emu.h) and the
 * emulating driver (tests/mock/cuda_mock.c with tests/emu/emu_run.c) share: the running
 * thread's coordinates and the two collective operations, __syncthreads and warp shuffles.
 * C and C++ alike. */
#ifndef FUSEC_TESTS_EMU_ABI_H
#define FUSEC_TESTS_EMU_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct emu_dim3 {
    unsigned x, y, z;
} emu_dim3;

/* one CUDA thread's coordinates */
typedef struct emu_coords {
    emu_dim3 tid, bid, bdim, gdim;
} emu_coords;

typedef struct emu_api {
    emu_coords *const *cur; /* the running thread's */
    void (*syncthreads)(void);
    /* the `size` bytes at v become those lane (this ^ o) of the warp passed in */
    void (*shfl_xor)(unsigned mask, void *v, int o, size_t size);
    /* a kernel error (a misaligned vector access): the launch fails with this message */
    void (*fail)(const char *msg);
} emu_api;

/* exported by every kernel object: fx_emu_bind, and per kernel K, K__emu(args) and
 * K__emu_nargs (every argument of a fusec kernel is 8 bytes: a pointer or a long long) */
typedef void (*emu_bind_fn)(const emu_api *);
typedef void (*emu_kernel_fn)(void **args);

#ifdef __cplusplus
}
#endif
#endif
