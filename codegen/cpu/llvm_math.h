/* codegen/cpu/llvm_math.h: the element-wise math of the CPU backend, as plain C functions.
 *
 * Every function here is branch-free straight-line code on one element (selects instead of
 * early returns, no libm call, no errno, no table indexed by data), so that once it is
 * inlined into a kernel's loop, LLVM's loop vectorizer turns the loop into SIMD code. The
 * CPU backend compiles codegen/cpu/llvm_math.c to bitcode when fusec is built, links it into
 * each JIT module and marks these functions always-inline (past a budget a kernel calls them
 * instead: codegen/cpu/llvm_outline.c); the same file is compiled into the library, which is
 * how tests/unit/test_llvm_math.c measures the accuracy; and the CUDA code generator puts the
 * file itself into its modules (CG_H_MATH), so that both targets compute the same bits.
 *
 * Fused multiply-adds: every one is written out (FMA in llvm_math.c) and the bitcode is built
 * with -ffp-contract=off, so that nothing else is fused, on any CPU or GPU (NVRTC runs with
 * --fmad=false). A CPU without FMA instructions (x86-64-v2) computes them as a multiplication
 * and an addition (driver/cpu/cpu_jit.c, unfuse_math): other bits, outside SPEC §5's one
 * answer, which the docs say.
 *
 * Building the bitcode: `clang -O2 -fno-math-errno -ffp-contract=off -fno-vectorize
 * -fno-slp-vectorize -emit-llvm -c codegen/cpu/llvm_math.c` for the generic target (no
 * -march): no errno, so
 * that sqrt is an instruction; no vector code inside a function, which would stop the
 * loop vectorizer after inlining; only baseline target features, so that the functions
 * inline into kernels compiled for any x86-64 CPU. No fast-math flag may be put on their
 * instructions: the rounding tricks (adding 1.5 * 2^23 and subtracting it again) need IEEE
 * rounding. floor, ceil, trunc and sqrt become single instructions from SSE4.1 on.
 *
 * Accuracy: the comment after each f32 function gives its largest error in ulps over all
 * 2^32 inputs (the test fails past it), against C's double function rounded as little as
 * possible; all are far inside the SPEC's 1e-5 |ref| + 1e-6 (about 80 ulp) and hold
 * relative accuracy to the smallest inputs (tanh, expm1, log1p, erf, sinh, asinh, atanh
 * near 0, sigmoid to -104). Out of a function's domain, and at zeros, infinities and NaN,
 * the result is what C99 Annex F gives. The f64 functions are within 2.5 ulp (SPEC: 1e-12
 * relative); those marked "libm" call the C library and are therefore scalar calls. The
 * `fast` variants, for --fast-math, state their bound and range.
 */
#ifndef FUSEC_CODEGEN_LLVM_MATH_H
#define FUSEC_CODEGEN_LLVM_MATH_H

/* ---- f32: exponentials and logarithms ------------------------------------------------ */
float llvm_math_expf(float x);          /* 2.02 ulp (2.31 without FMA) */
float llvm_math_expf_nonpos(float x);   /* x <= 0 or NaN: llvm_math_expf, cheaper */
float llvm_math_exp2f(float x);         /* 1.23 ulp */
float llvm_math_expm1f(float x);        /* 1.50 ulp */
float llvm_math_logf(float x);          /* 0.93 ulp */
float llvm_math_log2f(float x);         /* 1.32 ulp */
float llvm_math_log10f(float x);        /* 1.23 ulp */
float llvm_math_log1pf(float x);        /* 1.02 ulp */
float llvm_math_powf(float x, float y); /* 0.51 ulp (double inside); Annex F specials */

/* ---- f32: roots ---------------------------------------------------------------------- */
float llvm_math_sqrtf(float x);           /* correctly rounded */
float llvm_math_rsqrtf(float x);          /* 1.49 ulp; rsqrt(+-0) = +-inf, rsqrt(inf) = 0 */
float llvm_math_hypotf(float x, float y); /* 0.50 ulp (double inside); hypot(inf, NaN) = inf */

/* ---- f32: trigonometric (exact argument reduction over the whole float range) ------- */
float llvm_math_sinf(float x);            /* 0.88 ulp */
float llvm_math_cosf(float x);            /* 0.88 ulp */
float llvm_math_tanf(float x);            /* 2.51 ulp */
float llvm_math_asinf(float x);           /* 1.01 ulp */
float llvm_math_acosf(float x);           /* 1.15 ulp */
float llvm_math_atanf(float x);           /* 1.63 ulp */
float llvm_math_atan2f(float y, float x); /* 1.52 ulp (sampled); Annex F zeros/infinities */

/* ---- f32: hyperbolic and special ------------------------------------------------------ */
float llvm_math_sinhf(float x);    /* 1.62 ulp */
float llvm_math_coshf(float x);    /* 1.43 ulp */
float llvm_math_tanhf(float x);    /* 5.2 ulp (6.5 without FMA); exactly +-1 from |x| = 9.35 */
float llvm_math_asinhf(float x);   /* 1.92 ulp */
float llvm_math_acoshf(float x);   /* 2.41 ulp */
float llvm_math_atanhf(float x);   /* 1.93 ulp */
float llvm_math_erff(float x);     /* 1.32 ulp */
float llvm_math_sigmoidf(float x); /* 2.41 ulp; 1 / (1 + exp(-x)) */

/* ---- f32: exact helpers --------------------------------------------------------------- */
float llvm_math_fabsf(float x);
float llvm_math_reluf(float x);  /* relu(NaN) = NaN, relu(-0) = +0 */
float llvm_math_signf(float x);  /* -1, 0 or 1; sign(+-0) = +0, sign(NaN) = NaN */
float llvm_math_roundf(float x); /* half to even */
float llvm_math_floorf(float x);
float llvm_math_ceilf(float x);
float llvm_math_truncf(float x);
float llvm_math_copysignf(float x, float y);
float llvm_math_minimumf(float x, float y); /* NaN if either is NaN; -0 < +0 */
float llvm_math_maximumf(float x, float y); /* NaN if either is NaN; -0 < +0 */
float llvm_math_fmodf(float x, float y);    /* exact, as C's fmodf: the float `%` */

/* ---- f32 for --fast-math: cheaper, with these bounds (the test checks them) ----------- */
float llvm_math_fast_expf(float x);          /* 1e-5 relative on [-86.9, 88.7]; 0 below */
float llvm_math_fast_logf(float x);          /* 2e-5 relative for x > 0 */
float llvm_math_fast_tanhf(float x);         /* llvm_math_tanhf */
float llvm_math_fast_sigmoidf(float x);      /* 1e-5 relative from -87 up; to 0 below -88.7 */
float llvm_math_fast_erff(float x);          /* 5e-5 relative everywhere */
float llvm_math_fast_sinf(float x);          /* 2e-6 absolute for |x| <= 1e6; finite beyond */
float llvm_math_fast_cosf(float x);          /* 2e-6 absolute for |x| <= 1e6; finite beyond */
float llvm_math_fast_powf(float x, float y); /* 2e-5 relative for normal results; the
                                                special cases of llvm_math_powf */

/* ---- f64 (SPEC: 1e-12 relative): vectorizable approximations --------------------------- */
double llvm_math_exp(double x);
double llvm_math_exp2(double x);
double llvm_math_expm1(double x);
double llvm_math_log(double x);
double llvm_math_log2(double x);
double llvm_math_log10(double x);
double llvm_math_log1p(double x);
double llvm_math_sqrt(double x);
double llvm_math_rsqrt(double x);
double llvm_math_sinh(double x);
double llvm_math_cosh(double x);
double llvm_math_tanh(double x);
double llvm_math_asinh(double x);
double llvm_math_acosh(double x);
double llvm_math_atanh(double x);
double llvm_math_erf(double x);
double llvm_math_sigmoid(double x);
double llvm_math_fabs(double x);
double llvm_math_relu(double x);
double llvm_math_sign(double x);
double llvm_math_round(double x); /* half to even */
double llvm_math_floor(double x);
double llvm_math_ceil(double x);
double llvm_math_trunc(double x);
double llvm_math_copysign(double x, double y);
double llvm_math_minimum(double x, double y);
double llvm_math_maximum(double x, double y);

/* ---- random numbers ----------------------------------------------------------------------- */
/* rand's value: Philox4x32-10 of (seed, the element's flat index, the stream), ir/philox.h's
 * code, bit for bit the reference's */
float llvm_math_rand(long long seed, long long index, int stream);

/* ---- f64 that call libm (scalar calls, libm's accuracy) -------------------------------- */
double llvm_math_sin(double x);
double llvm_math_cos(double x);
double llvm_math_tan(double x);
double llvm_math_asin(double x);
double llvm_math_acos(double x);
double llvm_math_atan(double x);
double llvm_math_atan2(double y, double x);
double llvm_math_pow(double x, double y);
double llvm_math_hypot(double x, double y);
double llvm_math_fmod(double x, double y);

#endif
