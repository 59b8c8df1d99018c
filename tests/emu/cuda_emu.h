/* tests/emu/cuda_emu.h: what CUDA gives the generated kernels, for a host build of them
 * (g++ -include this header; tests/emu/nvrtc_emu.c). Threads are the emulating driver's
 * fibers (tests/emu/emu_run.c), one block at a time, so `__shared__` is `static`. The
 * fx_host_* helpers stand in for the inline PTX of codegen/cuda/cuda_prelude.c, with PTX's
 * semantics: cvt.rn to f16 rounds to nearest even, cvt.rzi truncates and saturates. A
 * misaligned vector access fails the launch, as it faults on a GPU. */
#ifndef FUSEC_TESTS_CUDA_EMU_H
#define FUSEC_TESTS_CUDA_EMU_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <limits>
#include <type_traits>
#include <utility>

#include "emu_abi.h"

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__    __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static

static const emu_api *fx_emu_api;
extern "C" void fx_emu_bind(const emu_api *a) {
    fx_emu_api = a;
}

#define threadIdx ((*fx_emu_api->cur)->tid)
#define blockIdx  ((*fx_emu_api->cur)->bid)
#define blockDim  ((*fx_emu_api->cur)->bdim)
#define gridDim   ((*fx_emu_api->cur)->gdim)

static inline void __syncthreads(void) {
    fx_emu_api->syncthreads();
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int o) {
    fx_emu_api->shfl_xor(mask, &v, o, sizeof v);
    return v;
}

template <typename To, typename From> static inline To fx_host_bits(From f) {
    static_assert(sizeof(To) == sizeof(From), "same size");
    To t;
    memcpy(&t, &f, sizeof t);
    return t;
}
static inline float __int_as_float(int i) {
    return fx_host_bits<float>(i);
}
static inline float __uint_as_float(unsigned i) {
    return fx_host_bits<float>(i);
}
static inline unsigned __float_as_uint(float f) {
    return fx_host_bits<unsigned>(f);
}
static inline int __float_as_int(float f) {
    return fx_host_bits<int>(f);
}
static inline double __longlong_as_double(long long i) {
    return fx_host_bits<double>(i);
}
/* double to float rounding toward zero: the nearest, stepped back where it rounded up */
static inline float __double2float_rz(double d) {
    float f = (float)d;
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
    return f;
}
static inline float rsqrtf(float x) {
    return 1.0f / sqrtf(x);
}
static inline double rsqrt(double x) {
    return 1.0 / sqrt(x);
}

/* vector accesses: one copy of B bytes, from an address aligned to B */
template <int B> struct fx_host_raw {
    struct alignas(B) type {
        unsigned char b[B];
    };
    static void aligned(const void *p) {
        if ((uintptr_t)p % B) fx_emu_api->fail("misaligned vector access");
    }
    static type ld(const void *p) {
        aligned(p);
        type v;
        memcpy(&v, p, B);
        return v;
    }
    static void st(void *p, type v) {
        aligned(p);
        memcpy(p, &v, B);
    }
};

static inline float fx_host_h2f(unsigned short h) {
    return (float)fx_host_bits<_Float16>(h);
}
static inline unsigned short fx_host_f2h(float f) {
    return fx_host_bits<unsigned short>((_Float16)f);
}
static inline unsigned short fx_host_d2h(double d) {
    return fx_host_bits<unsigned short>((_Float16)d);
}
/* cvt.rzi: toward zero, saturating; NaN gives 0 */
template <typename I, typename F> static inline I fx_host_cvt(F x) {
    if (x != x) return 0;
    const F lo = (F)std::numeric_limits<I>::min(); /* a power of two: exact */
    if (x <= lo) return std::numeric_limits<I>::min();
    if (x >= -lo) return std::numeric_limits<I>::max();
    return (I)x;
}
static inline int fx_host_f2i(float x) {
    return fx_host_cvt<int>(x);
}
static inline long long fx_host_f2ll(float x) {
    return fx_host_cvt<long long>(x);
}
static inline int fx_host_d2i(double x) {
    return fx_host_cvt<int>(x);
}
static inline long long fx_host_d2ll(double x) {
    return fx_host_cvt<long long>(x);
}

/* a kernel called with its arguments from an array of pointers to them, as cuLaunchKernel
 * takes them */
template <typename... A, size_t... I>
static inline void fx_emu_call_(void (*f)(A...), void **a, std::index_sequence<I...>) {
    f(*(std::remove_cv_t<A> *)a[I]...);
}
template <typename... A> static inline void fx_emu_call(void (*f)(A...), void **a) {
    fx_emu_call_(f, a, std::index_sequence_for<A...>{});
}
template <typename... A> constexpr int fx_emu_nargs(void (*)(A...)) {
    return (int)sizeof...(A);
}

#endif
