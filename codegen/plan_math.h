/* codegen/plan_math.h: which function of the one element-wise math library
 * (codegen/cpu/llvm_math.c) computes each transcendental op, for both code generators: the CPU
 * links the functions as bitcode, CUDA compiles the same file into its modules (SPEC §5: one
 * implementation, the same IEEE operations, the same bits). Ops that are one IEEE operation or
 * exact everywhere (sqrt, floor, abs, copysign, fmod, min and max) are not here.
 */
#ifndef FUSEC_CODEGEN_PLAN_MATH_H
#define FUSEC_CODEGEN_PLAN_MATH_H

#include "ir/ir.h"

/* X(op, f32, f64, f32 under --fast-math): the llvm_math_ function's name without its prefix.
 * The f64 ones that call libm (sin, cos, tan, asin, acos, atan, atan2, pow, hypot) are each
 * target's own C library: outside the one answer. */
#define PLAN_MATH_OPS(X)                                                                           \
    X(EXP2, exp2f, exp2, exp2f)                                                                    \
    X(EXPM1, expm1f, expm1, expm1f)                                                                \
    X(LOG, logf, log, fast_logf)                                                                   \
    X(LOG2, log2f, log2, log2f)                                                                    \
    X(LOG10, log10f, log10, log10f)                                                                \
    X(LOG1P, log1pf, log1p, log1pf)                                                                \
    X(SIN, sinf, sin, fast_sinf)                                                                   \
    X(COS, cosf, cos, fast_cosf)                                                                   \
    X(TAN, tanf, tan, tanf)                                                                        \
    X(ASIN, asinf, asin, asinf)                                                                    \
    X(ACOS, acosf, acos, acosf)                                                                    \
    X(ATAN, atanf, atan, atanf)                                                                    \
    X(SINH, sinhf, sinh, sinhf)                                                                    \
    X(COSH, coshf, cosh, coshf)                                                                    \
    X(TANH, tanhf, tanh, tanhf)                                                                    \
    X(ASINH, asinhf, asinh, asinhf)                                                                \
    X(ACOSH, acoshf, acosh, acoshf)                                                                \
    X(ATANH, atanhf, atanh, atanhf)                                                                \
    X(ERF, erff, erf, fast_erff)                                                                   \
    X(SIGMOID, sigmoidf, sigmoid, fast_sigmoidf)                                                   \
    X(POW, powf, pow, fast_powf)                                                                   \
    X(ATAN2, atan2f, atan2, atan2f)                                                                \
    X(HYPOT, hypotf, hypot, hypotf)

/* exp is expf, or for an argument known to be at most 0 (or NaN), expf_nonpos: the same bits
 * but where e^x is subnormal, which it flushes to 0. Known: node r is x - max(x) (over any
 * axes, broadcast back), softmax's argument. Both targets must make the same choice. */
static inline int plan_exp_nonpositive(const ir_func *f, ir_ref r) {
    const ir_node *n = &f->nodes[r];
    if (n->op != IR_OP_SUB) return 0;
    ir_ref b = n->args[1];
    while (f->nodes[b].op == IR_OP_BROADCAST)
        b = f->nodes[b].args[0];
    return f->nodes[b].op == IR_OP_MAX && f->nodes[b].args[0] == n->args[0];
}

#endif
