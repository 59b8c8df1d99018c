/* tests/unit/test_philox.c: ir/philox.h against Random123's known answers for Philox4x32-10,
 * and rand's value (ir_philox_u01) against words computed by tests/cli_py/test_rand.py's numpy
 * implementation (written from the SPEC alone) where the index and the seed have their high
 * words set, which no test program reaches (2^32 elements); and the CPU backend's math
 * (llvm_math_rand, the code the kernels inline) giving the same bits. */
#include "codegen/cpu/llvm_math.h"
#include "ir/philox.h"

#include <stdio.h>
#include <string.h>

#include "check.h"

static void test_kat(void) {
    /* Random123 kat_vectors: philox4x32 10 rounds, counter, key, result */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        ir_philox4x32_10(kat[i], kat[i] + 4, out);
        CHECK_MSG(!memcmp(out, kat[i] + 6, sizeof out), "vector %d: %08x %08x %08x %08x", i, out[0],
                  out[1], out[2], out[3]);
    }
}

static void test_u01(void) {
    static const struct {
        int64_t seed, index;
        int32_t stream;
        uint32_t w; /* the first output word */
    } cases[] = {
        {0, 0, 0, 0x6627e8d5},
        {1, ((int64_t)1 << 40) + 5, 3, 0x85332e24},
        {-1, (int64_t)1 << 32, 0, 0x85af3999},
        {0x123456789abcdef0, ((int64_t)1 << 62) + 12345, 7, 0xb7c83e8a},
        {INT64_MIN, 1, 2, 0x8387fe4b},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float want = (float)(cases[i].w >> 8) * (1.0f / 16777216.0f);
        float got = ir_philox_u01(cases[i].seed, cases[i].index, cases[i].stream);
        CHECK_MSG(got == want, "case %zu: %.9g, want %.9g", i, got, want);
        float cpu = llvm_math_rand(cases[i].seed, cases[i].index, cases[i].stream);
        CHECK_MSG(cpu == want, "case %zu on the CPU backend: %.9g, want %.9g", i, cpu, want);
        CHECK(got >= 0.0f && got < 1.0f);
    }
}

int main(void) {
    test_kat();
    test_u01();
    return check_exit("test_philox");
}
