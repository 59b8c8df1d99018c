/* ir/philox.h: Philox4x32-10 (Random123: Salmon et al., "Parallel random numbers: as easy as 1,
 * 2, 3", SC'11), and rand's value from it as SPEC §1 fixes it, bit for bit: key
 * (seed & 0xffffffff, seed >> 32), counter (index & 0xffffffff, index >> 32, stream, 0), ten
 * rounds with the key bumped before every round but the first; the first output word w gives
 * (w >> 8) * 2^-24, uniform in [0, 1) with 24 bits.
 *
 * Header-only, branch-free C: the reference interpreter (ir/interp.c) calls it, and the CPU
 * backend's math (codegen/cpu/llvm_math.c) inlines the same code into vectorized kernel loops.
 * The CUDA prelude (codegen/cuda/cuda_prelude.c) has its own copy in CUDA C; the tests hold
 * all three to Random123's known answers and to an independent implementation.
 */
#ifndef FUSEC_IR_PHILOX_H
#define FUSEC_IR_PHILOX_H

#include <stdint.h>

#define IR_PHILOX_M0 0xD2511F53u
#define IR_PHILOX_M1 0xCD9E8D57u
#define IR_PHILOX_W0 0x9E3779B9u
#define IR_PHILOX_W1 0xBB67AE85u

/* Philox4x32-10 of counter c and key k into out. */
static inline void ir_philox4x32_10(const uint32_t c[4], const uint32_t k[2], uint32_t out[4]) {
    uint32_t c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], k0 = k[0], k1 = k[1];
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += IR_PHILOX_W0;
            k1 += IR_PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)IR_PHILOX_M0 * c0, p1 = (uint64_t)IR_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* rand's value for a seed, an element's flat index and a stream. */
static inline float ir_philox_u01(int64_t seed, int64_t index, int32_t stream) {
    uint64_t s = (uint64_t)seed, i = (uint64_t)index;
    uint32_t c[4] = {(uint32_t)i, (uint32_t)(i >> 32), (uint32_t)stream, 0};
    uint32_t k[2] = {(uint32_t)s, (uint32_t)(s >> 32)};
    uint32_t out[4];
    ir_philox4x32_10(c, k, out);
    return (float)(out[0] >> 8) * (1.0f / 16777216.0f);
}

#endif
