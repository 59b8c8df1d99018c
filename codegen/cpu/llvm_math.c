/* codegen/cpu/llvm_math.c: the element-wise math of the CPU backend (see llvm_math.h).
 *
 * Every function is straight-line code: special cases are selects computed alongside the
 * main path, never early returns, so that LLVM can if-convert and vectorize a loop that
 * calls it once it is inlined. Bits move between floats and integers through memcpy,
 * which compilers turn into a register move; bit arithmetic that could wrap is unsigned,
 * and no float is ever converted to an integer (a NaN or an out-of-range value would be
 * undefined behaviour): integers are read off the bits of `v + 1.5 * 2^23`, which rounds
 * v to an integer in its low mantissa bits.
 *
 * The polynomial coefficients are weighted minimax fits made by scripts/fit_math.py (the
 * name of each fit is given with its table, with the fitted relative error); the degrees
 * are the lowest that keep that error well under half an ulp of the result.
 */
#ifndef LLVM_MATH_CUDA
#include "codegen/cpu/llvm_math.h"
#include "ir/philox.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#endif
/* LLVM_MATH_CUDA: this file in a CUDA module (the CUDA code generator puts it there, CG_H_MATH in
 * codegen/cuda/cuda.c), C++ compiled by NVRTC with every function a device function
 * (-default-device, --fmad=false), or by the emulator's host compiler (tests/emu); the CUDA
 * prelude gives it the fixed-width integers and GCC's builtins, and rand is left out (CUDA's
 * is the prelude's own). */

/* The CPU backend may compile this file with LLVM_MATH_API defined to attributes of its
 * own; normally every function is an ordinary external definition. */
#ifndef LLVM_MATH_API
#define LLVM_MATH_API
#endif

/* ---- bits ---------------------------------------------------------------------------- */

static inline uint32_t f2u(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float u2f(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline uint64_t d2u(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double u2d(uint64_t u) {
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#define INF_F  __builtin_inff()
#define NAN_F  __builtin_nanf("")
#define INF_D  __builtin_inf()
#define NAN_D  __builtin_nan("")
#define SIGN_F 0x80000000u
/* v + MAGIC_F - MAGIC_F is v rounded to an integer (|v| < 2^22), which is also the low
 * bits of v + MAGIC_F (as two's complement, after subtracting MAGIC_F's bits) */
#define MAGIC_F 0x1.8p23f
#define MAGIC_D 0x1.8p52

/* A fused multiply-add, a * b + c rounded once, of floats or doubles. The bitcode is built
 * with -ffp-contract=off, so that these are the only fused operations: the sequence of IEEE
 * operations is the source's, whatever CPU the kernel is compiled for (SPEC §5; a CPU without
 * FMA instructions computes them unfused: driver/cpu/cpu_jit.c). */
#ifdef __cplusplus
#define FMA(a, b, c) fma(a, b, c) /* C++'s overloads: fmaf for floats */
#else
/* chosen by the type of c, which POLYn keeps small: a macro argument named twice doubles its
 * text, and POLYn's nested first arguments would grow as 2^n */
#define FMA(a, b, c) _Generic((c), float : __builtin_fmaf, default : __builtin_fma)(a, b, c)
#endif

/* Horner's rule on a coefficient table c (c[0] the constant term), written out so that
 * no loop is left to unroll: POLYn(x, c) = c[0] + x * (c[1] + ... + x * c[n]), one fused
 * multiply-add a degree. */
#define POLY1(x, c)  FMA((c)[1], (x), (c)[0])
#define POLY2(x, c)  FMA(POLY1(x, (c) + 1), (x), (c)[0])
#define POLY3(x, c)  FMA(POLY2(x, (c) + 1), (x), (c)[0])
#define POLY4(x, c)  FMA(POLY3(x, (c) + 1), (x), (c)[0])
#define POLY5(x, c)  FMA(POLY4(x, (c) + 1), (x), (c)[0])
#define POLY6(x, c)  FMA(POLY5(x, (c) + 1), (x), (c)[0])
#define POLY7(x, c)  FMA(POLY6(x, (c) + 1), (x), (c)[0])
#define POLY8(x, c)  FMA(POLY7(x, (c) + 1), (x), (c)[0])
#define POLY9(x, c)  FMA(POLY8(x, (c) + 1), (x), (c)[0])
#define POLY10(x, c) FMA(POLY9(x, (c) + 1), (x), (c)[0])
#define POLY11(x, c) FMA(POLY10(x, (c) + 1), (x), (c)[0])
#define POLY12(x, c) FMA(POLY11(x, (c) + 1), (x), (c)[0])
#define POLY13(x, c) FMA(POLY12(x, (c) + 1), (x), (c)[0])
#define POLY14(x, c) FMA(POLY13(x, (c) + 1), (x), (c)[0])
#define POLY15(x, c) FMA(POLY14(x, (c) + 1), (x), (c)[0])
#define POLY16(x, c) FMA(POLY15(x, (c) + 1), (x), (c)[0])
#define POLY17(x, c) FMA(POLY16(x, (c) + 1), (x), (c)[0])
#define POLY18(x, c) FMA(POLY17(x, (c) + 1), (x), (c)[0])
#define POLY19(x, c) FMA(POLY18(x, (c) + 1), (x), (c)[0])
#define POLY20(x, c) FMA(POLY19(x, (c) + 1), (x), (c)[0])

/* ---- constants ------------------------------------------------------------------------ */

/* Cody-Waite splits: the high part has few enough bits that k * HI is exact for the
 * integers k each is used with (|k| < 256 for float, < 2048 for double), so x - k * HI is
 * exact near a multiple and only the small k * LO part rounds. */
#define LN2_HI_F    0x1.62e4p-1f
#define LN2_LO_F    0x1.7f7d1cp-20f
#define LOG2E_F     0x1.715476p+0f
#define LOG2E_HI_F  0x1.714p+0f /* 12 bits, for products exact with a 12-bit f */
#define LOG2E_LO_F  0x1.47652cp-12f
#define LOG10E_F    0x1.bcb7b2p-2f
#define LOG10E_HI_F 0x1.bcap-2f
#define LOG10E_LO_F 0x1.7b1526p-14f
#define LG2_HI_F    0x1.344p-2f /* log10(2) */
#define LG2_LO_F    0x1.3509f8p-18f
#define PIO2_HI_F   0x1.921fb6p+0f /* pi/2 = PIO2_HI_F + PIO2_LO_F */
#define PIO2_LO_F   -0x1.777a5cp-25f
#define PI_HI_F     0x1.921fb6p+1f
#define PI_LO_F     -0x1.777a5cp-24f
#define PIO4_F      0x1.921fb6p-1f

#define LN2_HI_D    0x1.62e42feep-1
#define LN2_LO_D    0x1.a39ef35793c76p-33
#define LN2_D       0x1.62e42fefa39efp-1
#define LOG2E_D     0x1.71547652b82fep+0
#define LOG2E_LO_D  0x1.777d0ffda0d24p-56
#define LOG10E_D    0x1.bcb7b1526e50ep-2
#define LOG10E_LO_D 0x1.95355baaafad3p-57
#define LG2_HI_D    0x1.34413508p-2
#define LG2_LO_D    0x1.f79fef311f12bp-34

/* ---- coefficient tables (scripts/fit_math.py NAME; F, W and the interval are there) --- */

/* expf: e^r = 1 + r P(r), |r| <= ln2/2; relative error 2^-23.4 (fit_math.py's remez with F =
 * (e^r - 1) / r, W = |r| / e^r: the exp2f form in base e, not among its kernels). A degree
 * lower than the others': 2.3 ulp instead of 1.3 for 5% of softmax's time. */
#define EXPF_COEFFS(scale)                                                                         \
    {                                                                                              \
        0x1.fffff6p-1f * (scale), 0x1.fffdc6p-2f * (scale), 0x1.555a6ap-3f * (scale),              \
            0x1.573a54p-5f * (scale), 0x1.0fa834p-7f * (scale)                                     \
    }
static const float EXPF_P[5] = EXPF_COEFFS(1.0f);
/* expm1f: e^r - 1 = r + r^2 P(r), |r| <= ln2/2; relative error 2^-31.8 */
static const float EXPM1F_P[6] = {0x1p-1f,        0x1.555556p-3f,  0x1.5554ap-5f,
                                  0x1.11101ep-7f, 0x1.6d8338p-10f, 0x1.a2a2f6p-13f};
/* exp2f: 2^r = 1 + r P(r), |r| <= 1/2; 2^-28.9 */
static const float EXP2F_P[6] = {0x1.62e43p-1f,  0x1.ebfbdcp-3f,  0x1.c6aee8p-5f,
                                 0x1.3b2d4cp-7f, 0x1.5f3e52p-10f, 0x1.41fbbcp-13f};
/* logf: log1p(f) = f - f^2/2 + f^3 P(f), f in [sqrt(1/2) - 1, sqrt(2) - 1]; 2^-27.4 */
static const float LOGF_P[8] = {0x1.555554p-2f, -0x1.000226p-2f, 0x1.99a008p-3f, -0x1.547244p-3f,
                                0x1.22da1cp-3f, -0x1.0d8542p-3f, 0x1.055b6cp-3f, -0x1.38b584p-4f};
/* sinf: sin(r) = r + r^3 P(r^2), |r| <= pi/4; 2^-28.0 */
static const float SINF_P[3] = {-0x1.555546p-3f, 0x1.11073ap-7f, -0x1.9943ep-13f};
/* cosf: cos(r) = 1 - r^2/2 + r^4 P(r^2), |r| <= pi/4; 2^-33.0 */
static const float COSF_P[3] = {0x1.55554ap-5f, -0x1.6c0c34p-10f, 0x1.99eb9cp-16f};
/* asinf: asin(s) = s + s^3 P(s^2), s in [0, 1/2]; 2^-27.6 */
static const float ASINF_P[5] = {0x1.5555c8p-3f, 0x1.3301e4p-4f, 0x1.747e4ap-5f, 0x1.8c283cp-6f,
                                 0x1.596d28p-5f};
/* atanf: atan(t) = t + t^3 P(t^2), t in [0, 1] (one reduction, 1/t, and a degree-19
 * polynomial: cheaper than a second division for a second reduction); 2^-28.5 */
static const float ATANF_P[9] = {-0x1.55553ep-2f, 0x1.9991fep-3f,  -0x1.2421b6p-3f,
                                 0x1.c099fep-4f,  -0x1.583492p-4f, 0x1.dac9e8p-5f,
                                 -0x1.fed168p-6f, 0x1.65a666p-7f,  -0x1.d63p-10f};
/* erf0f: erf(x) = x + x P(x^2), x in [0, 1] (P(0) = 2/sqrt(pi) - 1 keeps all its bits,
 * and the rounding errors of P only touch the smaller term); 2^-29.6 */
static const float ERF0F_P[7] = {0x1.06eba8p-3f, -0x1.81273ep-2f, 0x1.ce2cf8p-4f, -0x1.b7f90ep-6f,
                                 0x1.5405b2p-8f, -0x1.a3f7p-11f,  0x1.496a32p-14f};
/* erfcf: erfc(x) = exp(-x^2) P(x - 5/2), x in [1, 4]; 2^-27.4 relative to erf(x) */
static const float ERFCF_P[9] = {0x1.afbbc4p-3f,  -0x1.306f8p-4f,  0x1.99c6e6p-6f,
                                 -0x1.058a42p-7f, 0x1.294336p-9f,  -0x1.054da6p-10f,
                                 0x1.66f77ep-13f, 0x1.b3897ep-15f, 0x1.414426p-14f};
/* tanhf: tanh(x) = x P(x^2) / Q(x^2), x in [0, 9], a (4, 4) rational minimax in x^2
 * (a rational Remez exchange, weight 1 / tanh; not in scripts/fit_math.py, which fits
 * polynomials); 2^-25.5 relative. All coefficients are positive, so that Horner's rule
 * has no cancellation: the error left is rounding, at most 6.5 ulp near |x| = 7. */
static const float TANHF_P[5] = {0x1p+0f, 0x1.120b1cp-3f, 0x1.ca2c72p-9f, 0x1.59c348p-16f,
                                 0x1.cadcbap-27f};
static const float TANHF_Q[5] = {0x1p+0f, 0x1.de5ad8p-2f, 0x1.a7f7eap-6f, 0x1.58860ep-12f,
                                 0x1.a1801ep-21f};
/* sinhf: sinh(x) = x + x^3 P(x^2), x in [0, 1]; 2^-34.2 */
static const float SINHF_P[4] = {0x1.555556p-3f, 0x1.111134p-7f, 0x1.9ffe92p-13f, 0x1.7a15b4p-19f};

/* the --fast-math fits, same forms, lower degrees */
/* expf_fast: e^r = 1 + r + r^2 P(r), |r| <= ln2/2; 2^-17.5 relative to e^r */
static const float EXPF_FAST_P[3] = {0x1.0006b4p-1f, 0x1.571caap-3f, 0x1.5225b6p-5f};
/* exp2f_fast: 2^r = 1 + r P(r), |r| <= 1/2; 2^-18.4 */
static const float EXP2F_FAST_P[4] = {0x1.62e12cp-1f, 0x1.ec0378p-3f, 0x1.c9fc46p-5f,
                                      0x1.3a02ccp-7f};
/* logf_fast: log1p(f) = f - f^2/2 + f^3 P(f); 2^-16.3 */
static const float LOGF_FAST_P[4] = {0x1.54d7dep-2f, -0x1.02823ep-2f, 0x1.bdfba2p-3f,
                                     -0x1.2adad2p-3f};
/* erf0f_fast: erf(x) = x P(x^2), x in [0, 1]; 2^-15.1 */
static const float ERF0F_FAST_P[4] = {0x1.20db6p+0f, -0x1.8023ccp-2f, 0x1.b9afccp-4f,
                                      -0x1.2ceeb8p-6f};
/* erfcf_fast: erfc(x) = exp(-x^2) P(x - 5/2), x in [1, 4]; 2^-18.3 */
static const float ERFCF_FAST_P[5] = {0x1.b0f4fap-3f, -0x1.1159e2p-4f, 0x1.7f3f8ep-5f,
                                      0x1.0c0482p-6f, 0x1.ab4bdap-7f};
/* sinf_fast, cosf_fast: as sinf and cosf; 2^-19.0 and 2^-23.5 */
static const float SINF_FAST_P[2] = {-0x1.554428p-3f, 0x1.0b7e92p-7f};
static const float COSF_FAST_P[2] = {0x1.55499ap-5f, -0x1.65caf8p-10f};

/* double kernels */
/* expm1: e^r - 1 = r + r^2 P(r), |r| <= ln2/2; 2^-58.4 */
static const double EXPM1_P[11] = {
    0x1.0000000000001p-1,  0x1.5555555555557p-3,  0x1.5555555554d3fp-5,  0x1.11111111100eap-7,
    0x1.6c16c16f09951p-10, 0x1.a01a01abe12fdp-13, 0x1.a019f398f05afp-16, 0x1.71de024530f2ap-19,
    0x1.280222a7fc1fap-22, 0x1.af4dc3e2dc614p-26, 0x1.e6324c32638a7p-30};
/* logs: log((1+s)/(1-s)) = 2s + s^3 P(s^2), |s| <= 3 - 2 sqrt(2); 2^-59.5 */
static const double LOGS_P[7] = {0x1.5555555555592p-1, 0x1.999999997fee9p-2, 0x1.24924941e0c26p-2,
                                 0x1.c71c52164c883p-3, 0x1.74663c5384094p-3, 0x1.39a1fb9bb2487p-3,
                                 0x1.2f02e5bb62640p-3};
/* erf0: erf(x) = x + x P(x^2), x in [0, 1]; 2^-56.9 */
static const double ERF0_P[12] = {
    0x1.06eba8214db68p-3,  -0x1.812746b0379bdp-2,  0x1.ce2f21a040d16p-4,  -0x1.b82ce311fa93dp-6,
    0x1.565bccf92b2ecp-8,  -0x1.c02db03dd700dp-11, 0x1.f9a2baa8fc66bp-14, -0x1.f4ca4d6f1b661p-17,
    0x1.b97fd3d85844ap-20, -0x1.5c0726e9706eep-23, 0x1.d71b0eefca7a8p-27, -0x1.abae48a6b763cp-31};
/* erfc: erfc(x) = exp(-x^2) P(x - 7/2), x in [1, 6]; 2^-55.1 relative to erf(x) */
static const double ERFC_P[21] = {
    0x1.3e0a99a0cf8a9p-3,   -0x1.5285d2f407732p-5,  0x1.5d5810cf93188p-7,   -0x1.5e5d78730c8b1p-9,
    0x1.5632a9c2262e8p-11,  -0x1.46071c889dda0p-13, 0x1.2f7d0a744c3a3p-15,  -0x1.1531fd3cc0f1ap-17,
    0x1.e56f3f7bb9e50p-20,  -0x1.b6e8e1b962afdp-22, 0x1.c50cea21c5504p-24,  0x1.6d99606afbde9p-28,
    0x1.dc075063ce7d1p-27,  -0x1.174a583c6d462p-29, -0x1.bf27460285849p-29, -0x1.9ef245e3ecf58p-30,
    -0x1.1686dbc0c1a0bp-33, 0x1.0732ed3159267p-33,  0x1.dd1debc10092fp-35,  0x1.56f6fe3c9b136p-37,
    0x1.9a4fec5c0a2ddp-41};
/* log2s, exp2d: the double kernels of powf: log2((1+s)/(1-s)) = s P(s^2), 2^-45.1;
 * 2^r = 1 + r P(r), |r| <= 1/2, 2^-34.3 */
static const double LOG2S_P[6] = {0x1.71547652b8251p+1, 0x1.ec709dc53c31cp-1, 0x1.2776c29380b06p-1,
                                  0x1.a61a2e918d223p-2, 0x1.47955fce8cd07p-2, 0x1.21b05981e1f80p-2};
static const double EXP2D_P[7] = {
    0x1.62e42ff0e1918p-1,  0x1.ebfbe07787275p-3,  0x1.c6b08ac06c913p-5, 0x1.3b29f39d4be08p-7,
    0x1.5d8a85fe2b45ap-10, 0x1.445c840544ce0p-13, 0x1.fde5fe8349f29p-17};

/* 2/pi as a bit string: bit i after the point (i = 1, 2, ...) is bit 64 - i of word 1,
 * bit 128 - i of word 2, and so on; word 0 stands for the zeros before the point.
 * 256 bits reach far enough for the largest float (see trigf_reduce). */
#define TWO_OVER_PI_0 UINT64_C(0)
#define TWO_OVER_PI_1 UINT64_C(0xa2f9836e4e441529)
#define TWO_OVER_PI_2 UINT64_C(0xfc2757d1f534ddc0)
#define TWO_OVER_PI_3 UINT64_C(0xdb6295993c439041)
#define TWO_OVER_PI_4 UINT64_C(0xfe5163abdebbc561)

/* ======================================================================================
 * f32: exponentials
 * ==================================================================================== */

/* e^x = 2^n (1 + em): n = x / ln2 rounded, r = x - n ln2 (|r| <= ln2/2, exact but for the
 * rounding of n * LN2_LO), em = expm1(r). x + xlo is the argument (xlo a small correction,
 * 0 but for erf); |x| <= 150 or NaN. */
typedef struct {
    float em;
    uint32_t n; /* two's complement */
} expf_red;

static inline expf_red expf_reduce(float x, float xlo) {
    float t = FMA(x, LOG2E_F, MAGIC_F);
    float k = t - MAGIC_F;
    float r = FMA(-k, LN2_HI_F, x);
    r = FMA(-k, LN2_LO_F, r) + xlo;
    expf_red red = {FMA(r * r, POLY5(r, EXPM1F_P), r), f2u(t) - f2u(MAGIC_F)};
    return red;
}

/* p * 2^n for n in [-252, 254] (two's complement): two factors 2^(n/2), each a normal
 * float, so that a subnormal result is rounded once and a large one overflows to inf. */
static inline float scale2f(float p, uint32_t n) {
    uint32_t nb = n + 512u;
    uint32_t h = nb >> 1;
    return p * u2f((h - 129u) << 23) * u2f((nb - h - 129u) << 23);
}

/* expm1 from a reduction with n in [-43, 128]: 2^n (1 + em) - 1 = 2 (u em + (u - 1/2))
 * with u = 2^(n-1), where the scalings are exact and the sum rounds once, so there is no
 * cancellation near x = 0 (n = 0 gives em itself). */
static inline float expm1f_from(expf_red k) {
    float u = u2f((k.n + 126u) << 23);
    return 2.0f * FMA(u, k.em, u - 0.5f);
}

/* expf has a reduction of its own, four operations cheaper than expf_reduce + scale2f:
 * e^r = 1 + r P(r) in one Horner chain of degree 5 (expf_reduce keeps expm1's extra bits,
 * which e^x does not need), and the magic constant carries the exponent bias, so that t's
 * bits shifted left give (n + 127) << 23 at once. The scaling by 2^n is still two exact
 * factors, so that subnormal results round once and large ones overflow to inf. */
#define MAGIC_BIAS_F 0x1.8000fep23f /* 1.5 * 2^23 + 127 */

LLVM_MATH_API float llvm_math_expf(float x) {
    x = x < -104.0f ? -104.0f : x; /* e^-104 rounds to 0; NaN passes the clamps */
    x = x > 89.0f ? 89.0f : x;     /* e^89 overflows */
    float t = FMA(x, LOG2E_F, MAGIC_BIAS_F);
    float k = t - MAGIC_BIAS_F;
    float r = FMA(-k, LN2_HI_F, x);
    r = FMA(-k, LN2_LO_F, r);
    float p = FMA(r, POLY4(r, EXPF_P), 1.0f);
    /* m = n + 127 in [-23, 255] as a 9-bit two's complement number in a's top bits; 2^n =
     * 2^(h - 63) 2^(m - h - 64) with h = floor(m / 2), both factors normal */
    uint32_t a = f2u(t) << 23;
    uint32_t h = (uint32_t)((int32_t)a >> 24) << 23;
    return p * u2f(h + (64u << 23)) * u2f(a - h + (63u << 23));
}

/* e^x for x <= 0 or NaN (the code generator calls it where that is known: softmax's
 * exp(x - max(x))), bit for bit llvm_math_expf there in six operations fewer: no upper
 * clamp, and with n <= 0, 2^n = 2^-64 2^(n+64) where 2^(n+64) is normal. The 2^-64 goes
 * into the polynomial's coefficients (exact: every term stays normal, and each FMA rounds
 * its exact sum once, scaled), so p 2^-64 times 2^(n+64) is one multiply rounded once.
 *
 * But for one thing: where e^x is subnormal (x below EXPF_NORMAL_MIN, about -87.34) the
 * result is 0, an error below 2^-126 (the SPEC allows 1e-6). Subnormal values are slow to
 * add and multiply on x86 (a microcode assist per instruction): softmax over rows whose
 * values span more than 87 summed them, and ran much slower for it; the flush costs
 * a few percent on rows that never reach it (bench/RESULTS.md). */
#define EXPF_NORMAL_MIN -0x1.5d589ep6f /* the least x with e^x >= 2^-126 */
static const float EXPF_P_2M64[5] = EXPF_COEFFS(0x1p-64f);

LLVM_MATH_API float llvm_math_expf_nonpos(float x) {
    float xc = x < -104.0f ? -104.0f : x; /* NaN passes */
    float t = FMA(xc, LOG2E_F, MAGIC_BIAS_F);
    float k = t - MAGIC_BIAS_F;
    float r = FMA(-k, LN2_HI_F, xc);
    r = FMA(-k, LN2_LO_F, r);
    float p = FMA(r, POLY4(r, EXPF_P_2M64), 0x1p-64f);
    /* (n + 127) << 23 with n in [-150, 0]; 64 more is in [41, 191], a normal exponent */
    float y = p * u2f((f2u(t) << 23) + (64u << 23));
    return x < EXPF_NORMAL_MIN ? 0.0f : y; /* NaN passes */
}

LLVM_MATH_API float llvm_math_exp2f(float x) {
    x = x < -151.0f ? -151.0f : x;
    x = x > 129.0f ? 129.0f : x;
    float t = x + MAGIC_F;
    float r = x - (t - MAGIC_F); /* exact, in [-1/2, 1/2] */
    return scale2f(FMA(r, POLY5(r, EXP2F_P), 1.0f), f2u(t) - f2u(MAGIC_F));
}

LLVM_MATH_API float llvm_math_expm1f(float x) {
    float xc = x < -30.0f ? -30.0f : x; /* expm1(-30) rounds to -1 */
    xc = xc > 89.0f ? 89.0f : xc;
    float res = expm1f_from(expf_reduce(xc, 0.0f));
    return x == 0.0f ? x : res; /* expm1(-0) = -0 */
}

/* ======================================================================================
 * f32: logarithms
 * ==================================================================================== */

/* x = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), for a positive normal finite x
 * (anything else gives a finite value that the caller replaces); log1p(f) = f + c, f exact
 * and c the polynomial's small correction. */
typedef struct {
    float e, f, c;
} logf_red;

static inline logf_red logf_reduce(float x) {
    /* adding the bits of 1 less those of sqrt(1/2) moves the exponent's step from 1 to
     * sqrt(1/2); the mantissa bits plus sqrt(1/2)'s give 1 + f */
    uint32_t ix = f2u(x) + (0x3f800000u - 0x3f3504f3u);
    logf_red red;
    red.e = (float)((int32_t)(ix >> 23) - 127);
    red.f = u2f((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
    red.c = (red.f * red.f) * FMA(red.f, POLY7(red.f, LOGF_P), -0.5f);
    return red;
}

/* logf_reduce for any x >= 0, subnormals scaled up by 2^23 first */
static inline logf_red logf_reduce_sub(float x) {
    int sub = x < 0x1p-126f;
    logf_red red = logf_reduce(sub ? x * 0x1p23f : x);
    red.e = sub ? red.e - 23.0f : red.e;
    return red;
}

/* log(u) + corr for u = 1 + t as rounded and corr = ((1 + t) - u) / u, the first-order
 * term of log(1 + that error): log1p to an ulp even where u has lost t's low bits.
 * Fast2Sum gives the error, larger operand first. */
typedef struct {
    float u, corr;
} onep;

static inline onep one_plus(float t) {
    onep o;
    o.u = 1.0f + t;
    float c = t > 1.0f ? 1.0f - (o.u - t) : t - (o.u - 1.0f);
    o.corr = c / o.u;
    return o;
}

static inline float logf_combine(logf_red k, float corr) {
    return FMA(k.e, LN2_HI_F, k.f + (k.c + FMA(k.e, LN2_LO_F, corr)));
}

/* log1p(t) for t > -1 finite; the special values are the callers' */
static inline float log1pf_core(float t) {
    onep o = one_plus(t);
    return logf_combine(logf_reduce(o.u), o.corr);
}

/* the special values of log, log2 and log10 */
static inline float logf_special(float x, float res) {
    res = x == INF_F ? x : res;
    res = x == 0.0f ? -INF_F : res;
    return x >= 0.0f ? res : NAN_F; /* negative or NaN */
}

LLVM_MATH_API float llvm_math_logf(float x) {
    return logf_special(x, logf_combine(logf_reduce_sub(x), 0.0f));
}

/* (f + c) * (hi + lo) as a sum whose first term is exact: f's top 12 bits times the
 * 12-bit hi, then everything else, so that the product costs no rounding of its own */
static inline float mul_split_f(logf_red k, float hi, float lo, float full) {
    float fh = u2f(f2u(k.f) & 0xfffff000u);
    return FMA(fh, hi, FMA(k.f - fh, hi, FMA(k.f, lo, k.c * full)));
}

LLVM_MATH_API float llvm_math_log2f(float x) {
    logf_red k = logf_reduce_sub(x);
    float res = k.e + mul_split_f(k, LOG2E_HI_F, LOG2E_LO_F, LOG2E_F); /* exact at 2^e */
    return logf_special(x, res);
}

LLVM_MATH_API float llvm_math_log10f(float x) {
    logf_red k = logf_reduce_sub(x);
    float fh = u2f(f2u(k.f) & 0xfffff000u);
    float lo =
        FMA(k.f - fh, LOG10E_HI_F, FMA(k.f, LOG10E_LO_F, FMA(k.c, LOG10E_F, k.e * LG2_LO_F)));
    float res = FMA(k.e, LG2_HI_F, FMA(fh, LOG10E_HI_F, lo));
    return logf_special(x, res);
}

LLVM_MATH_API float llvm_math_log1pf(float x) {
    float res = log1pf_core(x);
    res = x == INF_F ? x : res;
    res = x == -1.0f ? -INF_F : res;
    res = x >= -1.0f ? res : NAN_F; /* below -1, or NaN */
    return x == 0.0f ? x : res;     /* log1p(-0) = -0 */
}

/* ======================================================================================
 * f32: pow and hypot, in double inside (y log2(x) needs about 32 bits for 24 in 2^(...))
 * ==================================================================================== */

/* log2(x) for a positive normal finite double: m = 1 + f in [sqrt(1/2), sqrt(2)),
 * s = f / (2 + f), log2(m) = s P(s^2); about 2^-45 relative */
static inline double log2d_kernel(double x) {
    uint64_t ix = d2u(x) + (UINT64_C(0x3ff0000000000000) - UINT64_C(0x3fe6a09e667f3bcd));
    double e = (double)((int32_t)(ix >> 52) - 1023);
    double m = u2d((ix & UINT64_C(0x000fffffffffffff)) + UINT64_C(0x3fe6a09e667f3bcd));
    double s = (m - 1.0) / (m + 1.0);
    double s2 = s * s;
    return FMA(s, POLY5(s2, LOG2S_P), e);
}

/* 2^z as a float: z = n + r, |r| <= 1/2, 2^r = 1 + r P(r); the double result rounds once
 * to float, to a subnormal, 0 or inf as it must */
static inline float exp2d_to_float(double z) {
    z = z < -160.0 ? -160.0 : z; /* NaN passes */
    z = z > 130.0 ? 130.0 : z;
    double t = z + MAGIC_D;
    double r = z - (t - MAGIC_D);
    double p = FMA(r, POLY6(r, EXP2D_P), 1.0);
    return (float)(p * u2d((d2u(t) - d2u(MAGIC_D) + 1023u) << 52));
}

/* the sign and special cases of C99 Annex F, given mag = |x|^y away from them */
static inline float powf_special(float x, float y, float mag) {
    uint32_t iy = f2u(y) & 0x7fffffffu;
    uint32_t ey = iy >> 23; /* biased exponent */
    uint32_t mant = (iy & 0x007fffffu) | 0x00800000u;
    /* bits of y below the point: none from 2^24 up, all of them below 1 */
    uint32_t fb = ey > 150u ? 0u : (ey < 127u ? 24u : 150u - ey);
    int isint = (mant & ((1u << fb) - 1u)) == 0u; /* true for +-inf too: as in C */
    int isodd = isint && ey <= 150u && ((mant >> fb) & 1u);
    float res = (isodd && (f2u(x) & SIGN_F)) ? -mag : mag;
    res = (x < 0.0f && x > -INF_F && !isint) ? NAN_F : res; /* finite x < 0, y not integer */
    res = (x == -1.0f && (y == INF_F || y == -INF_F)) ? 1.0f : res;
    return (x == 1.0f || y == 0.0f) ? 1.0f : res; /* even for a NaN y or x */
}

LLVM_MATH_API float llvm_math_powf(float x, float y) {
    float ax = __builtin_fabsf(x);
    double l = log2d_kernel((double)ax); /* subnormal floats are normal doubles */
    l = ax < INF_F ? l : (double)ax;     /* inf, NaN */
    l = ax == 0.0f ? -INF_D : l;
    /* y l is exact but for one rounding: a 2^-53 relative error on an exponent below 160 */
    return powf_special(x, y, exp2d_to_float((double)y * l));
}

LLVM_MATH_API float llvm_math_hypotf(float x, float y) {
    double dx = x, dy = y; /* squares are exact, and cannot overflow, in double */
    float res = (float)__builtin_sqrt(FMA(dx, dx, dy * dy));
    int inf = __builtin_fabsf(x) == INF_F || __builtin_fabsf(y) == INF_F;
    return inf ? INF_F : res; /* hypot(inf, NaN) = inf */
}

/* ======================================================================================
 * f32: trigonometric
 * ==================================================================================== */

/* |x| = q pi/2 + r (mod 2 pi), |r| <= pi/4, for |x| >= pi/4 (below, r = |x|, q = 0).
 *
 * Payne-Hanek without a table lookup: |x| = m 2^(E-23) with a 24-bit integer m, and
 * y = |x| 2/pi mod 4 is wanted as a 2.62 fixed-point number. Bits of 2/pi above 2^(24-E)
 * add multiples of 4 to y and are dropped, bits 96 places further on are below 2^-70 and
 * are dropped too, so y 2^62 = m W 2^-32 mod 2^64 with W the 96 bits of 2/pi from bit
 * E - 24 on. W is cut out of the constant words with shifts and selects (no gather); the
 * product takes three 32 x 32 -> 64-bit multiplies. q is y rounded, r = (y - q) pi/2,
 * computed in double from a 62-bit fraction: an absolute error near 2^-60, while no float
 * lies closer than about 2^-29 to a multiple of pi/2 (the test checks every float). */
typedef struct {
    float r, rlo; /* r + rlo: the reduced argument to about 2^-48 */
    uint32_t q;
} trigf_red;

static inline trigf_red trigf_reduce(float a) {
    uint32_t ia = f2u(a);
    uint32_t eb = ia >> 23; /* biased E */
    eb = eb < 126u ? 126u : eb;
    eb = eb > 254u ? 254u : eb; /* inf and NaN: any window; replaced by the caller */
    uint64_t m = (ia & 0x007fffffu) | 0x00800000u;
    /* W starts at bit E - 24 of 2/pi, which is bit eb - 88 of the words 0..4 */
    uint32_t o = eb - 88u; /* 38 .. 166 */
    uint32_t w = o >> 6, h = o & 63u;
    uint64_t w0 = w == 0u ? TWO_OVER_PI_0 : (w == 1u ? TWO_OVER_PI_1 : TWO_OVER_PI_2);
    uint64_t w1 = w == 0u ? TWO_OVER_PI_1 : (w == 1u ? TWO_OVER_PI_2 : TWO_OVER_PI_3);
    uint64_t w2 = w == 0u ? TWO_OVER_PI_2 : (w == 1u ? TWO_OVER_PI_3 : TWO_OVER_PI_4);
    /* (v >> 1) >> (63 - h) is v >> (64 - h) without a shift by 64 when h = 0 */
    uint64_t hi = (w0 << h) | ((w1 >> 1) >> (63u - h)); /* W's top 64 bits */
    uint64_t lo = (w1 << h) | ((w2 >> 1) >> (63u - h)); /* the next 32, on top */
    uint64_t y = ((m * (hi >> 32)) << 32) + m * (hi & 0xffffffffu) + ((m * (lo >> 32)) >> 32);
    uint64_t d = y + (UINT64_C(1) << 61); /* + 1/2: q is the top two bits */
    /* the fraction (y - q) 2^62 + 2^61, in [0, 2^62), to double: two 31-bit halves,
     * each turned exact into a double by the 2^52 bit trick (an int64 conversion has no
     * instruction before AVX-512), the high one with its offset 2^61 taken off exactly */
    uint64_t fr = d & ((UINT64_C(1) << 62) - 1u);
    double fh = u2d((fr >> 31) | UINT64_C(0x4330000000000000)) - 0x1p52;
    double fl = u2d((fr & 0x7fffffffu) | UINT64_C(0x4330000000000000)) - 0x1p52;
    double frac = FMA(fh, 0x1p31, -0x1p61) + fl;
    trigf_red red;
    int small = a < PIO4_F;
    double r = frac * 0x1.921fb54442d18p-62; /* * pi/2 2^-62 */
    float rh = (float)r;
    red.r = small ? a : rh;
    red.rlo = small ? 0.0f : (float)(r - (double)rh);
    red.q = small ? 0u : (uint32_t)(d >> 62);
    return red;
}

/* sin and cos of r + rlo, to first order in rlo; (1 - w) - hz is the rounding error of
 * w = 1 - r^2/2, exact since w is in [0.69, 1] */
typedef struct {
    float s, c;
} sincosf_t;

static inline sincosf_t sincosf_red(trigf_red k) {
    /* the polynomials' small terms and rlo's terms (rlo cos(r) ~ rlo (1 - r^2/2), rlo
     * sin(r) ~ rlo r, each within a few per cent of a half-ulp term) are summed first, so
     * that the result rounds once */
    float r = k.r, r2 = r * r;
    float hz = 0.5f * r2;
    float w = 1.0f - hz;
    sincosf_t sc;
    sc.s = r + FMA(r, r2 * POLY2(r2, SINF_P), k.rlo * w);
    sc.c = w + FMA(-k.rlo, r, FMA(r2 * r2, POLY2(r2, COSF_P), (1.0f - w) - hz));
    return sc;
}

LLVM_MATH_API float llvm_math_sinf(float x) {
    float a = __builtin_fabsf(x);
    trigf_red k = trigf_reduce(a);
    sincosf_t sc = sincosf_red(k);
    float v = (k.q & 1u) ? sc.c : sc.s;
    uint32_t sign = ((k.q & 2u) << 30) ^ (f2u(x) & SIGN_F); /* sin is odd */
    v = u2f(f2u(v) ^ sign);
    return a < INF_F ? v : x - x; /* inf, NaN: NaN */
}

LLVM_MATH_API float llvm_math_cosf(float x) {
    float a = __builtin_fabsf(x);
    trigf_red k = trigf_reduce(a);
    sincosf_t sc = sincosf_red(k);
    float v = (k.q & 1u) ? sc.s : sc.c;
    v = u2f(f2u(v) ^ (((k.q + 1u) & 2u) << 30));
    return a < INF_F ? v : x - x;
}

LLVM_MATH_API float llvm_math_tanf(float x) {
    float a = __builtin_fabsf(x);
    trigf_red k = trigf_reduce(a);
    sincosf_t sc = sincosf_red(k);
    int odd = k.q & 1u;
    float v = (odd ? -sc.c : sc.s) / (odd ? sc.s : sc.c); /* tan(r + pi/2) = -1 / tan(r) */
    v = u2f(f2u(v) ^ (f2u(x) & SIGN_F));
    return a < INF_F ? v : x - x;
}

/* asin(s) = s + s^3 P(s^2) for s in [0, 1/2] */
static inline float asinf_poly(float s, float z) {
    return FMA(s, z * POLY4(z, ASINF_P), s);
}

LLVM_MATH_API float llvm_math_asinf(float x) {
    float a = __builtin_fabsf(x);
    /* above 1/2: asin(a) = pi/2 - 2 asin(s), s = sqrt((1 - a) / 2), 1 - a exact. The
     * doubling would double the rounding error of s, so s is taken as sh + sl from a
     * double square root, and pi/2 - 2 sh is formed as pi/4 + (pi/4 - 2 sh), exact
     * (Sterbenz) for 2 sh >= pi/8 and with a tiny error below. */
    int big = a > 0.5f;
    float z = big ? 0.5f * (1.0f - a) : a * a;
    double sd = __builtin_sqrt((double)z); /* a > 1: NaN */
    float sh = big ? (float)sd : a;
    float sl = big ? (float)(sd - (double)sh) : 0.0f;
    float corr = FMA(sh, z * POLY4(z, ASINF_P), sl); /* asin(s) - sh */
    float q = FMA(-2.0f, sh, PIO4_F);
    float res = big ? PIO4_F - (FMA(2.0f, corr, -PIO2_LO_F) - q) : sh + corr;
    return __builtin_copysignf(res, x);
}

LLVM_MATH_API float llvm_math_acosf(float x) {
    float a = __builtin_fabsf(x);
    /* above 1/2: acos(x) = 2 asin(sqrt((1 - x) / 2)); below -1/2, pi minus that of -x;
     * between, pi/2 - asin(x) */
    int big = a > 0.5f;
    float z = big ? 0.5f * (1.0f - a) : x * x;
    float s = big ? __builtin_sqrtf(z) : x;
    float p = asinf_poly(s, z);
    float neg = PI_HI_F - FMA(2.0f, p, -PI_LO_F);
    float res = big ? (x > 0.0f ? 2.0f * p : neg) : PIO2_HI_F - (p - PIO2_LO_F);
    return res;
}

/* atan(t) for t in [0, 1] */
static inline float atanf_poly(float t) {
    float t2 = t * t;
    return FMA(t, t2 * POLY8(t2, ATANF_P), t);
}

LLVM_MATH_API float llvm_math_atanf(float x) {
    float a = __builtin_fabsf(x);
    int big = a > 1.0f; /* atan(a) = pi/2 - atan(1/a) */
    float k = atanf_poly(big ? 1.0f / a : a);
    float res = big ? PIO2_HI_F - (k - PIO2_LO_F) : k;
    return __builtin_copysignf(res, x);
}

LLVM_MATH_API float llvm_math_atan2f(float y, float x) {
    float ax = __builtin_fabsf(x), ay = __builtin_fabsf(y);
    int swap = ay > ax;
    float num = swap ? ax : ay, den = swap ? ay : ax;
    float t = num / den;         /* in [0, 1] */
    t = den == 0.0f ? 0.0f : t;  /* both zero: 0, then the quadrant rules below */
    t = num == INF_F ? 1.0f : t; /* both infinite: pi/4 */
    float k = atanf_poly(t);
    k = swap ? PIO2_HI_F - (k - PIO2_LO_F) : k;
    k = (f2u(x) & SIGN_F) ? PI_HI_F - (k - PI_LO_F) : k; /* x < 0, or x = -0 */
    float res = __builtin_copysignf(k, y);
    return (x != x || y != y) ? x + y : res;
}

/* ======================================================================================
 * f32: hyperbolic, erf, sigmoid
 * ==================================================================================== */

LLVM_MATH_API float llvm_math_sinhf(float x) {
    float a = __builtin_fabsf(x);
    a = a > 90.0f ? 90.0f : a; /* sinh(90) overflows; NaN passes */
    /* below 1 a polynomial; above, h - 1 / (4 h) with h = e^a / 2 (scaled so that it
     * does not overflow before sinh does) */
    float a2 = a * a;
    float small = FMA(a, a2 * POLY3(a2, SINHF_P), a);
    expf_red k = expf_reduce(a, 0.0f);
    float h = scale2f(1.0f + k.em, k.n - 1u);
    float res = a < 1.0f ? small : h - 0.25f / h;
    return __builtin_copysignf(res, x);
}

LLVM_MATH_API float llvm_math_coshf(float x) {
    float a = __builtin_fabsf(x);
    a = a > 90.0f ? 90.0f : a;
    expf_red k = expf_reduce(a, 0.0f);
    float h = scale2f(1.0f + k.em, k.n - 1u); /* e^a / 2 */
    return h + 0.25f / h;                     /* an error in h cancels to first order near 0 */
}

LLVM_MATH_API float llvm_math_tanhf(float x) {
    /* x P(x^2) / Q(x^2): fourteen operations and a division, where E / (E + 2) with E =
     * expm1(2x) took twenty-two; odd by construction, x itself for tiny x (P(0) = Q(0) = 1).
     * Above about 9.35 the rational exceeds 1 (it grows like x), so the result is clamped to
     * +-1 and tanh saturates exactly, as 1 + tanh(x) near -1 needs; the clamp of x to 10
     * keeps x^4 P from overflowing. NaN passes every clamp. */
    float c = x > 10.0f ? 10.0f : x;
    c = c < -10.0f ? -10.0f : c;
    float s = c * c;
    float r = (c * POLY4(s, TANHF_P)) / POLY4(s, TANHF_Q);
    r = r > 1.0f ? 1.0f : r;
    return r < -1.0f ? -1.0f : r;
}

LLVM_MATH_API float llvm_math_sigmoidf(float x) {
    float a = __builtin_fabsf(x);
    a = a > 104.0f ? 104.0f : a;
    expf_red k = expf_reduce(-a, 0.0f);
    float t = scale2f(1.0f + k.em, k.n); /* e^-|x|: never overflows */
    /* x >= 0: 1 / (1 + t); x < 0: t / (1 + t), which keeps its relative accuracy as
     * sigmoid(x) goes to 0 */
    return (x < 0.0f ? t : 1.0f) / (1.0f + t);
}

/* exp(-a^2) for a in [1, 4], with a^2 = hi + lo exactly (a split into two 12-bit
 * halves) so that the exponential sees the whole argument: a rounded a^2 would cost up to
 * 16 ulp of it, 2^-20 relative in the result */
static inline float expf_neg_sq(float a) {
    float ah = u2f(f2u(a) & 0xfffff000u);
    float at = a - ah;
    float hi = ah * ah;
    float lo = at * (ah + a); /* 2 ah at + at^2 */
    expf_red k = expf_reduce(-hi, -lo);
    return u2f((k.n + 127u) << 23) * (1.0f + k.em); /* n in [-24, -1] */
}

#ifndef LLVM_MATH_CUDA
LLVM_MATH_API float llvm_math_rand(long long seed, long long index, int stream) {
    return ir_philox_u01((int64_t)seed, (int64_t)index, (int32_t)stream);
}
#endif

LLVM_MATH_API float llvm_math_erff(float x) {
    float a = __builtin_fabsf(x);
    float a2 = a * a;
    float small = FMA(a, POLY6(a2, ERF0F_P), a); /* below 1 */
    float al = a < 1.0f ? 1.0f : (a > 4.0f ? 4.0f : a);
    float t = al - 2.5f;
    float large = FMA(-expf_neg_sq(al), POLY8(t, ERFCF_P), 1.0f); /* 1 - erfc */
    /* erf rounds to 1 from 3.9193 on */
    float res = a < 1.0f ? small : (a < 3.92f ? large : 1.0f);
    res = a != a ? a : res;
    return __builtin_copysignf(res, x);
}

LLVM_MATH_API float llvm_math_asinhf(float x) {
    float a = __builtin_fabsf(x);
    /* below 2^12: log1p(a + a^2 / (1 + sqrt(1 + a^2))); above, log(a) + ln 2 (the next
     * term, 1 / (4 a^2), is below half an ulp) */
    int big = a > 0x1p12f;
    float a2 = a * a;
    onep o = one_plus(a + a2 / (1.0f + __builtin_sqrtf(1.0f + a2)));
    logf_red k = logf_reduce(big ? a : o.u);
    k.e = big ? k.e + 1.0f : k.e;
    float res = logf_combine(k, big ? 0.0f : o.corr);
    res = a < INF_F ? res : a; /* inf, NaN */
    return __builtin_copysignf(res, x);
}

LLVM_MATH_API float llvm_math_acoshf(float x) {
    /* below 2^12: log1p((x - 1) + sqrt((x - 1)(x + 1))), x - 1 exact; above, log(x) + ln 2 */
    int big = x > 0x1p12f;
    float xm1 = x - 1.0f;
    onep o = one_plus(xm1 + __builtin_sqrtf(xm1 * (x + 1.0f)));
    logf_red k = logf_reduce(big ? x : o.u);
    k.e = big ? k.e + 1.0f : k.e;
    float res = logf_combine(k, big ? 0.0f : o.corr);
    res = x < INF_F ? res : x;
    return x >= 1.0f ? res : NAN_F; /* below 1, or NaN */
}

LLVM_MATH_API float llvm_math_atanhf(float x) {
    float a = __builtin_fabsf(x);
    /* atanh(a) = log1p(2a / (1 - a)) / 2, written 2a + 2a^2 / (1 - a) below 1/2 so that
     * the rounding of 1 - a only touches a small term; one division for both */
    int small = a < 0.5f;
    float q = (small ? 2.0f * a * a : 2.0f * a) / (1.0f - a);
    float res = 0.5f * log1pf_core(small ? FMA(2.0f, a, q) : q);
    res = a == 1.0f ? INF_F : res;
    res = a <= 1.0f ? res : NAN_F; /* above 1, or NaN */
    return __builtin_copysignf(res, x);
}

/* ======================================================================================
 * f32: exact helpers
 * ==================================================================================== */

LLVM_MATH_API float llvm_math_fabsf(float x) {
    return __builtin_fabsf(x);
}

LLVM_MATH_API float llvm_math_sqrtf(float x) {
    return __builtin_sqrtf(x);
}

LLVM_MATH_API float llvm_math_rsqrtf(float x) {
    return 1.0f / __builtin_sqrtf(x); /* two roundings: within 1 ulp */
}

LLVM_MATH_API float llvm_math_reluf(float x) {
    return x > 0.0f ? x : (x == x ? 0.0f : x);
}

LLVM_MATH_API float llvm_math_signf(float x) {
    return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == x ? 0.0f : x));
}

LLVM_MATH_API float llvm_math_roundf(float x) {
    float a = __builtin_fabsf(x);
    float r = (a + 0x1p23f) - 0x1p23f; /* the addition rounds, ties to even, for a < 2^23 */
    return __builtin_copysignf(a < 0x1p23f ? r : a, x); /* larger floats are integers */
}

LLVM_MATH_API float llvm_math_floorf(float x) {
    return __builtin_floorf(x);
}

LLVM_MATH_API float llvm_math_ceilf(float x) {
    return __builtin_ceilf(x);
}

LLVM_MATH_API float llvm_math_truncf(float x) {
    return __builtin_truncf(x);
}

LLVM_MATH_API float llvm_math_copysignf(float x, float y) {
    return __builtin_copysignf(x, y);
}

LLVM_MATH_API float llvm_math_minimumf(float x, float y) {
    float m = x < y ? x : y;
    m = x == y ? u2f(f2u(x) | f2u(y)) : m; /* -0 and +0: -0 */
    return (x != x || y != y) ? x + y : m;
}

LLVM_MATH_API float llvm_math_maximumf(float x, float y) {
    float m = x > y ? x : y;
    m = x == y ? u2f(f2u(x) & f2u(y)) : m; /* -0 and +0: +0 */
    return (x != x || y != y) ? x + y : m;
}

/* One step of the exact remainder, in double: ys = |y| 2^k, with k chosen so that the
 * quotient q = ax / ys is below 2^28; then n = q rounded, n * ys has at most 53 bits and
 * ax - n ys is exact (both are multiples of ys's last bit and the difference is below ys),
 * and adding ys back when it is negative is exact too. ys divides |y| 2^k, so the final
 * remainder mod |y| is unchanged. q comes from a reciprocal: a 2^-52 relative error can
 * move n by one only where the remainder is near ys/2, and then it lands in (-ys, 0). */
static inline double fmod_step(double ax, double ay, double inv, uint64_t eyb) {
    uint64_t exb = d2u(ax) >> 52;
    uint64_t k = exb > eyb + 27u ? exb - eyb - 27u : 0u;
    double ys = ay * u2d((1023u + k) << 52);
    double q = (ax * inv) * u2d((1023u - k) << 52);
    double n = (q + MAGIC_D) - MAGIC_D;
    double r = FMA(-n, ys, ax);
    return r < 0.0 ? r + ys : r;
}

LLVM_MATH_API float llvm_math_fmodf(float x, float y) {
    double ax = __builtin_fabs((double)x), ay = __builtin_fabs((double)y);
    double inv = 1.0 / ay;
    uint64_t eyb = d2u(ay) >> 52;
    /* each step takes 27 bits off the exponent difference, which is at most 276 (FLT_MAX
     * over the smallest subnormal): ten steps bring it under 28, the eleventh finishes */
    ax = fmod_step(ax, ay, inv, eyb);
    ax = fmod_step(ax, ay, inv, eyb);
    ax = fmod_step(ax, ay, inv, eyb);
    ax = fmod_step(ax, ay, inv, eyb);
    ax = fmod_step(ax, ay, inv, eyb);
    ax = fmod_step(ax, ay, inv, eyb);
    ax = fmod_step(ax, ay, inv, eyb);
    ax = fmod_step(ax, ay, inv, eyb);
    ax = fmod_step(ax, ay, inv, eyb);
    ax = fmod_step(ax, ay, inv, eyb);
    ax = fmod_step(ax, ay, inv, eyb);
    float res = __builtin_copysignf((float)ax, x); /* exact: the remainder is a float */
    res = (__builtin_fabsf(y) == INF_F && __builtin_fabsf(x) < INF_F) ? x : res;
    return (y == 0.0f || !(__builtin_fabsf(x) < INF_F) || y != y) ? NAN_F : res;
}

/* ======================================================================================
 * f32 for --fast-math: lower degrees, plain reductions, results below FLT_MIN flushed
 * ==================================================================================== */

/* e^x for x in [-86.9, 88.8] (clamped by the caller), one scaling: 2^(n-1) * 2 covers
 * n = 128 without a second factor */
static inline float fast_exp_core(float x) {
    float t = FMA(x, LOG2E_F, MAGIC_F);
    float k = t - MAGIC_F;
    float r = FMA(-k, LN2_LO_F, FMA(-k, LN2_HI_F, x));
    float p = 1.0f + FMA(r * r, POLY2(r, EXPF_FAST_P), r);
    return (p * u2f((f2u(t) - f2u(MAGIC_F) + 126u) << 23)) * 2.0f;
}

LLVM_MATH_API float llvm_math_fast_expf(float x) {
    float xc = x < -86.9f ? -86.9f : (x > 88.8f ? 88.8f : x);
    float res = fast_exp_core(xc);
    return x < -86.9f ? 0.0f : res;
}

LLVM_MATH_API float llvm_math_fast_logf(float x) {
    int sub = x < 0x1p-126f;
    uint32_t ix = f2u(sub ? x * 0x1p23f : x) + (0x3f800000u - 0x3f3504f3u);
    float e = (float)((int32_t)(ix >> 23) - 127) - (sub ? 23.0f : 0.0f);
    float f = u2f((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
    float res =
        FMA(e, LN2_HI_F, f + FMA(f * f, FMA(f, POLY3(f, LOGF_FAST_P), -0.5f), e * LN2_LO_F));
    return logf_special(x, res);
}

/* tanhf's rational is cheaper than any exp-based form and already inside this bound; the
 * function stays for the code that names it (bench/math_vec.c) */
LLVM_MATH_API float llvm_math_fast_tanhf(float x) {
    return llvm_math_tanhf(x);
}

LLVM_MATH_API float llvm_math_fast_sigmoidf(float x) {
    float v = -x;
    v = v < -86.9f ? -86.9f : (v > 88.8f ? 88.8f : v); /* e^88.8 = inf: sigmoid 0 */
    return 1.0f / (1.0f + fast_exp_core(v));
}

LLVM_MATH_API float llvm_math_fast_erff(float x) {
    float a = __builtin_fabsf(x);
    float small = a * POLY3(a * a, ERF0F_FAST_P);
    float al = a < 1.0f ? 1.0f : (a > 4.0f ? 4.0f : a);
    float t = al - 2.5f;
    float large = FMA(-fast_exp_core(-(al * al)), POLY4(t, ERFCF_FAST_P), 1.0f);
    float res = a < 1.0f ? small : (a < 3.92f ? large : 1.0f);
    res = a != a ? a : res;
    return __builtin_copysignf(res, x);
}

/* |x| = q pi/2 + r with a two-part pi/2 in double (33 + 53 bits; q pi/2's first part is
 * exact for |q| < 2^20): accurate to |x| ~ 2^20, finite (r clamped) beyond */
static inline trigf_red fast_trigf_reduce(float a) {
    double d = a;
    double t = FMA(d, 0x1.45f306dc9c883p-1, MAGIC_D); /* 2/pi */
    double q = t - MAGIC_D;
    double r = FMA(-q, 0x1.0b4611a626331p-34, FMA(-q, 0x1.921fb544p+0, d));
    trigf_red red;
    float rf = (float)r;
    red.r = rf > 1.0f ? 1.0f : (rf < -1.0f ? -1.0f : rf);
    red.rlo = 0.0f;
    red.q = (uint32_t)(d2u(t) - d2u(MAGIC_D));
    return red;
}

static inline float fast_sin_poly(float r) {
    float r2 = r * r;
    return FMA(r, r2 * POLY1(r2, SINF_FAST_P), r);
}

static inline float fast_cos_poly(float r) {
    float r2 = r * r;
    return FMA(r2 * r2, POLY1(r2, COSF_FAST_P), FMA(-0.5f, r2, 1.0f));
}

LLVM_MATH_API float llvm_math_fast_sinf(float x) {
    trigf_red k = fast_trigf_reduce(__builtin_fabsf(x));
    float v = (k.q & 1u) ? fast_cos_poly(k.r) : fast_sin_poly(k.r);
    return u2f(f2u(v) ^ (((k.q & 2u) << 30) ^ (f2u(x) & SIGN_F)));
}

LLVM_MATH_API float llvm_math_fast_cosf(float x) {
    trigf_red k = fast_trigf_reduce(__builtin_fabsf(x));
    float v = (k.q & 1u) ? fast_sin_poly(k.r) : fast_cos_poly(k.r);
    return u2f(f2u(v) ^ (((k.q + 1u) & 2u) << 30));
}

LLVM_MATH_API float llvm_math_fast_powf(float x, float y) {
    /* all in float: log2|x| from the accurate float kernel (its 2^-24 rounding is what
     * limits y log2|x|), 2^z from a degree-4 polynomial */
    float ax = __builtin_fabsf(x);
    logf_red k = logf_reduce_sub(ax);
    float l = k.e + mul_split_f(k, LOG2E_HI_F, LOG2E_LO_F, LOG2E_F);
    l = ax < INF_F ? l : ax;
    l = ax == 0.0f ? -INF_F : l;
    float z = y * l;
    z = z < -151.0f ? -151.0f : (z > 129.0f ? 129.0f : z);
    float t = z + MAGIC_F;
    float r = z - (t - MAGIC_F);
    float mag = scale2f(FMA(r, POLY3(r, EXP2F_FAST_P), 1.0f), f2u(t) - f2u(MAGIC_F));
    return powf_special(x, y, mag);
}

/* ======================================================================================
 * f64: the same designs in double, for exp, log and the functions built on them
 * ==================================================================================== */

typedef struct {
    double em;
    uint64_t n; /* two's complement */
} exp_red;

/* e^(x + xlo) = 2^n (1 + em), |x| <= 1100 or NaN; LN2_HI_D has 32 bits, so k LN2_HI_D is
 * exact for |k| < 2^21 */
static inline exp_red exp_reduce(double x, double xlo) {
    double t = FMA(x, LOG2E_D, MAGIC_D);
    double k = t - MAGIC_D;
    double r = FMA(-k, LN2_HI_D, x);
    r = FMA(-k, LN2_LO_D, r) + xlo;
    exp_red red = {FMA(r * r, POLY10(r, EXPM1_P), r), d2u(t) - d2u(MAGIC_D)};
    return red;
}

/* p * 2^n for n in [-2044, 2046], as two normal factors */
static inline double scale2d(double p, uint64_t n) {
    uint64_t nb = n + 4096u;
    uint64_t h = nb >> 1;
    return p * u2d((h - 1025u) << 52) * u2d((nb - h - 1025u) << 52);
}

/* expm1 from a reduction with n in [-60, 1024], as expm1f_from */
static inline double expm1_from(exp_red k) {
    double u = u2d((k.n + 1022u) << 52);
    return 2.0 * FMA(u, k.em, u - 0.5);
}

LLVM_MATH_API double llvm_math_exp(double x) {
    x = x < -746.0 ? -746.0 : x;
    x = x > 710.0 ? 710.0 : x;
    exp_red k = exp_reduce(x, 0.0);
    return scale2d(1.0 + k.em, k.n);
}

LLVM_MATH_API double llvm_math_exp2(double x) {
    x = x < -1080.0 ? -1080.0 : x;
    x = x > 1025.0 ? 1025.0 : x;
    double t = x + MAGIC_D;
    double r = (x - (t - MAGIC_D)) * LN2_D; /* |r| <= ln2/2, one rounding */
    double em = FMA(r * r, POLY10(r, EXPM1_P), r);
    return scale2d(1.0 + em, d2u(t) - d2u(MAGIC_D));
}

LLVM_MATH_API double llvm_math_expm1(double x) {
    double xc = x < -40.0 ? -40.0 : x; /* expm1(-40) rounds to -1 */
    xc = xc > 710.0 ? 710.0 : xc;
    double res = expm1_from(exp_reduce(xc, 0.0));
    return x == 0.0 ? x : res;
}

/* x = 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2)); log1p(f) = f + c with
 * s = f / (2 + f): log1p(f) = 2s + s^3 P(s^2) = f - s (f - s^2 P(s^2)) */
typedef struct {
    double e, f, c;
} log_red;

static inline log_red log_reduce(double x) {
    uint64_t ix = d2u(x) + (UINT64_C(0x3ff0000000000000) - UINT64_C(0x3fe6a09e667f3bcd));
    log_red red;
    red.e = (double)((int32_t)(ix >> 52) - 1023);
    red.f = u2d((ix & UINT64_C(0x000fffffffffffff)) + UINT64_C(0x3fe6a09e667f3bcd)) - 1.0;
    double s = red.f / (2.0 + red.f);
    double z = s * s;
    red.c = -s * FMA(-z, POLY6(z, LOGS_P), red.f);
    return red;
}

static inline log_red log_reduce_sub(double x) {
    int sub = x < 0x1p-1022;
    log_red red = log_reduce(sub ? x * 0x1p54 : x);
    red.e = sub ? red.e - 54.0 : red.e;
    return red;
}

static inline double log_combine(log_red k, double corr) {
    return FMA(k.e, LN2_HI_D, k.f + (k.c + FMA(k.e, LN2_LO_D, corr)));
}

typedef struct {
    double u, corr;
} onep_d;

static inline onep_d one_plus_d(double t) {
    onep_d o;
    o.u = 1.0 + t;
    double c = t > 1.0 ? 1.0 - (o.u - t) : t - (o.u - 1.0);
    o.corr = c / o.u;
    return o;
}

static inline double log1p_core(double t) {
    onep_d o = one_plus_d(t);
    return log_combine(log_reduce(o.u), o.corr);
}

static inline double log_special(double x, double res) {
    res = x == INF_D ? x : res;
    res = x == 0.0 ? -INF_D : res;
    return x >= 0.0 ? res : NAN_D;
}

LLVM_MATH_API double llvm_math_log(double x) {
    return log_special(x, log_combine(log_reduce_sub(x), 0.0));
}

LLVM_MATH_API double llvm_math_log2(double x) {
    log_red k = log_reduce_sub(x);
    double res = k.e + FMA(k.f, LOG2E_D, FMA(k.f, LOG2E_LO_D, k.c * LOG2E_D));
    return log_special(x, res);
}

LLVM_MATH_API double llvm_math_log10(double x) {
    log_red k = log_reduce_sub(x);
    double lo = FMA(k.f, LOG10E_LO_D, FMA(k.c, LOG10E_D, k.e * LG2_LO_D));
    double res = FMA(k.e, LG2_HI_D, FMA(k.f, LOG10E_D, lo));
    return log_special(x, res);
}

LLVM_MATH_API double llvm_math_log1p(double x) {
    double res = log1p_core(x);
    res = x == INF_D ? x : res;
    res = x == -1.0 ? -INF_D : res;
    res = x >= -1.0 ? res : NAN_D;
    return x == 0.0 ? x : res;
}

LLVM_MATH_API double llvm_math_sqrt(double x) {
    return __builtin_sqrt(x);
}

LLVM_MATH_API double llvm_math_rsqrt(double x) {
    return 1.0 / __builtin_sqrt(x);
}

LLVM_MATH_API double llvm_math_sinh(double x) {
    double a = __builtin_fabs(x);
    a = a > 711.0 ? 711.0 : a;
    exp_red k = exp_reduce(a, 0.0);
    int small = a < 1.0;
    double e = expm1_from(k);
    double h = scale2d(1.0 + k.em, k.n - 1u);
    double q = (small ? e : 0.25) / (small ? e + 1.0 : h);
    double res = small ? 0.5 * (e + q) : h - q;
    return __builtin_copysign(res, x);
}

LLVM_MATH_API double llvm_math_cosh(double x) {
    double a = __builtin_fabs(x);
    a = a > 711.0 ? 711.0 : a;
    exp_red k = exp_reduce(a, 0.0);
    double h = scale2d(1.0 + k.em, k.n - 1u);
    return h + 0.25 / h;
}

LLVM_MATH_API double llvm_math_tanh(double x) {
    double a = __builtin_fabs(x);
    a = a > 22.0 ? 22.0 : a; /* tanh(22) rounds to 1 */
    double e = expm1_from(exp_reduce(2.0 * a, 0.0));
    return __builtin_copysign(e / (e + 2.0), x);
}

LLVM_MATH_API double llvm_math_sigmoid(double x) {
    double a = __builtin_fabs(x);
    a = a > 746.0 ? 746.0 : a;
    exp_red k = exp_reduce(-a, 0.0);
    double t = scale2d(1.0 + k.em, k.n);
    return (x < 0.0 ? t : 1.0) / (1.0 + t);
}

LLVM_MATH_API double llvm_math_erf(double x) {
    double a = __builtin_fabs(x);
    double a2 = a * a;
    double small = FMA(a, POLY11(a2, ERF0_P), a); /* below 1 */
    /* 1 - exp(-a^2) P(a - 7/2) on [1, 6], a^2 = hi + lo exactly (26-bit halves) */
    double al = a < 1.0 ? 1.0 : (a > 6.0 ? 6.0 : a);
    double ah = u2d(d2u(al) & UINT64_C(0xfffffffff8000000));
    double at = al - ah;
    exp_red k = exp_reduce(-(ah * ah), -(at * (ah + al)));
    double ex = u2d((k.n + 1023u) << 52) * (1.0 + k.em); /* n in [-52, -1] */
    double t = al - 3.5;
    double large = FMA(-ex, POLY20(t, ERFC_P), 1.0);
    double res = a < 1.0 ? small : (a < 6.0 ? large : 1.0); /* erf rounds to 1 from 5.92 */
    res = a != a ? a : res;
    return __builtin_copysign(res, x);
}

LLVM_MATH_API double llvm_math_asinh(double x) {
    double a = __builtin_fabs(x);
    int big = a > 0x1p28; /* log(2a): the next term is below half an ulp */
    double a2 = a * a;
    onep_d o = one_plus_d(a + a2 / (1.0 + __builtin_sqrt(1.0 + a2)));
    log_red k = log_reduce(big ? a : o.u);
    k.e = big ? k.e + 1.0 : k.e;
    double res = log_combine(k, big ? 0.0 : o.corr);
    res = a < INF_D ? res : a;
    return __builtin_copysign(res, x);
}

LLVM_MATH_API double llvm_math_acosh(double x) {
    int big = x > 0x1p28;
    double xm1 = x - 1.0;
    onep_d o = one_plus_d(xm1 + __builtin_sqrt(xm1 * (x + 1.0)));
    log_red k = log_reduce(big ? x : o.u);
    k.e = big ? k.e + 1.0 : k.e;
    double res = log_combine(k, big ? 0.0 : o.corr);
    res = x < INF_D ? res : x;
    return x >= 1.0 ? res : NAN_D;
}

LLVM_MATH_API double llvm_math_atanh(double x) {
    double a = __builtin_fabs(x);
    int small = a < 0.5;
    double q = (small ? 2.0 * a * a : 2.0 * a) / (1.0 - a);
    double res = 0.5 * log1p_core(small ? FMA(2.0, a, q) : q);
    res = a == 1.0 ? INF_D : res;
    res = a <= 1.0 ? res : NAN_D;
    return __builtin_copysign(res, x);
}

LLVM_MATH_API double llvm_math_fabs(double x) {
    return __builtin_fabs(x);
}

LLVM_MATH_API double llvm_math_relu(double x) {
    return x > 0.0 ? x : (x == x ? 0.0 : x);
}

LLVM_MATH_API double llvm_math_sign(double x) {
    return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : (x == x ? 0.0 : x));
}

LLVM_MATH_API double llvm_math_round(double x) {
    double a = __builtin_fabs(x);
    double r = (a + 0x1p52) - 0x1p52;
    return __builtin_copysign(a < 0x1p52 ? r : a, x);
}

LLVM_MATH_API double llvm_math_floor(double x) {
    return __builtin_floor(x);
}

LLVM_MATH_API double llvm_math_ceil(double x) {
    return __builtin_ceil(x);
}

LLVM_MATH_API double llvm_math_trunc(double x) {
    return __builtin_trunc(x);
}

LLVM_MATH_API double llvm_math_copysign(double x, double y) {
    return __builtin_copysign(x, y);
}

LLVM_MATH_API double llvm_math_minimum(double x, double y) {
    double m = x < y ? x : y;
    m = x == y ? u2d(d2u(x) | d2u(y)) : m;
    return (x != x || y != y) ? x + y : m;
}

LLVM_MATH_API double llvm_math_maximum(double x, double y) {
    double m = x > y ? x : y;
    m = x == y ? u2d(d2u(x) & d2u(y)) : m;
    return (x != x || y != y) ? x + y : m;
}

/* ---- f64 through libm: scalar calls, exact to libm's accuracy ------------------------- */

LLVM_MATH_API double llvm_math_sin(double x) {
    return sin(x);
}

LLVM_MATH_API double llvm_math_cos(double x) {
    return cos(x);
}

LLVM_MATH_API double llvm_math_tan(double x) {
    return tan(x);
}

LLVM_MATH_API double llvm_math_asin(double x) {
    return asin(x);
}

LLVM_MATH_API double llvm_math_acos(double x) {
    return acos(x);
}

LLVM_MATH_API double llvm_math_atan(double x) {
    return atan(x);
}

LLVM_MATH_API double llvm_math_atan2(double y, double x) {
    return atan2(y, x);
}

LLVM_MATH_API double llvm_math_pow(double x, double y) {
    return pow(x, y);
}

LLVM_MATH_API double llvm_math_hypot(double x, double y) {
    return hypot(x, y);
}

LLVM_MATH_API double llvm_math_fmod(double x, double y) {
    return fmod(x, y);
}
