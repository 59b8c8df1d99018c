/* codegen/cuda/cuda_outline.c: a bound on how much math NVRTC inlines into one kernel.
 *
 * Why: CUDA's math functions (sinf, powf, log1p, every f64 one) are inlined where they are
 * called, and every element-wise body is emitted several times (the vector steps of 4 elements,
 * the tail, each sweep of a row): sinf alone is about 110 PTX instructions with a loop over a
 * local array (its Payne-Hanek range reduction), and ptxas's time grows with all of it. A chain
 * of 60 sin took 18 s to build, 150 with their gradient over a minute (bench/RESULTS.md,
 * "Compile time of deep programs"); the CPU target bounds the same thing in llvm_outline.c.
 *
 * How: before a kernel is emitted, its math is weighed (calls times the size of each function
 * in PTX, measured with NVRTC 13 for sm_90); while the weight inlined passes INLINE_BUDGET,
 * the function with the most weight (size times calls) is called instead through a wrapper,
 * `static __device__ __noinline__`, which ptxas compiles once a module. Small functions
 * (exp2f, sqrt, floor, ...) always stay inline. Kernels within the budget (gelu, softmax,
 * layernorm, every example) are emitted exactly as before.
 *
 * The results are the same: the wrapper calls the very function on the same argument. (With
 * --fmad=true, the default, a multiply of the caller could in principle be contracted into the
 * function's first addition where it is inlined, which a call stops; issue 30's --fmad=false
 * rules that out.) */
#include <string.h>

#include "codegen/cuda/cuda_internal.h"

/* PTX instructions of math inlined into one kernel's body, at most, counting each call once
 * however many times the engines emit it: about 3 sinf, 20 expf, 8 logf. Measured with nvcc
 * 13 for sm_90 on a 2-core EPYC: each unit costs about 2.5 ms of build time (a chain of 10 sinf
 * 3.1 s, 30 expf 1.7 s, with the build's fixed 0.6 s), and a call costs run time only where the
 * function is cheap. */
#define INLINE_BUDGET 400
/* How much more often a row kernel emits a per-element value than an element-wise kernel
 * does (4 lanes and the tail): its variant that holds the row in registers unrolls 16
 * elements a thread, and its streaming variant 4 lanes again. Chains of 30 row softmaxes
 * took 16 s to build with their exp inlined (47 s at 100). */
#define ROW_COPIES 4
/* A function at most this size always stays inline: a call costs about what its body does. */
#define SMALL_MATH 12

/* The PTX size of each math function (f32, f64) above the 10 instructions of a kernel that
 * calls nothing; 0: not a function NVRTC inlines from libdevice (an operator or a helper). */
typedef struct math_size {
    int op;
    short f, d;
} math_size;

static const math_size sizes[] = {
    {IR_OP_EXP, 17, 60},    {IR_OP_EXP2, 0, 62},    {IR_OP_EXPM1, 35, 67},  {IR_OP_LOG, 41, 81},
    {IR_OP_LOG2, 44, 84},   {IR_OP_LOG10, 42, 84},  {IR_OP_LOG1P, 47, 114}, {IR_OP_SIN, 112, 52},
    {IR_OP_COS, 113, 53},   {IR_OP_TAN, 113, 73},   {IR_OP_ASIN, 33, 93},   {IR_OP_ACOS, 37, 115},
    {IR_OP_ATAN, 30, 58},   {IR_OP_SINH, 36, 87},   {IR_OP_COSH, 23, 58},   {IR_OP_TANH, 23, 81},
    {IR_OP_ASINH, 61, 142}, {IR_OP_ACOSH, 63, 140}, {IR_OP_ATANH, 57, 121}, {IR_OP_ERF, 27, 90},
    {IR_OP_POW, 131, 91},   {IR_OP_ATAN2, 60, 74},  {IR_OP_HYPOT, 26, 43},  {IR_OP_MOD, 85, 585},
};

#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

static int math_weight(int op, int dbl) {
    for (int i = 0; i < NSIZES; i++)
        if (sizes[i].op == op) return dbl ? sizes[i].d : sizes[i].f;
    return 0;
}

/* The floating class of node r's computation: 0 float, 1 double, -1 neither (an integer or
 * bool op has no math function). */
static int float_class(const cugen_kernel *k, ir_ref r) {
    cugen_cclass c = cugen_class_of(k->f->nodes[r].dtype);
    return c == CG_CC_DOUBLE ? 1 : c == CG_CC_FLOAT ? 0 : -1;
}

void cugen_outline_plan(cugen_kernel *k) {
    memset(k->outlined, 0, sizeof k->outlined);
    k->outlines = 0;
    int32_t count[IR_OP_COUNT][2];
    memset(count, 0, sizeof count);
    long inlined = 0;
    int row = k->kn->kind == IR_KERNEL_ROW_REDUCTION;
    for (int32_t i = 0; i < k->kn->nbody; i++) {
        ir_ref r = k->kn->body[i];
        int c = float_class(k, r), op = k->f->nodes[r].op;
        if (c < 0 || ir_ops[op].cls != IR_CLASS_EW) continue;
        int w = math_weight(op, c);
        if (w <= SMALL_MATH) continue;
        /* a row kernel's per-element values are emitted ROW_COPIES times as often */
        int copies = row && ir_shape_equal(&k->f->nodes[r].shape, &k->kn->domain) ? ROW_COPIES : 1;
        count[op][c] += copies;
        inlined += (long)w * copies;
    }
    while (inlined > INLINE_BUDGET) {
        long best = 0;
        int bop = -1, bc = 0;
        for (int i = 0; i < NSIZES; i++)
            for (int c = 0; c < 2; c++) {
                int op = sizes[i].op;
                long wt = (long)count[op][c] * (c ? sizes[i].d : sizes[i].f);
                if (!k->outlined[op][c] && wt > best) best = wt, bop = op, bc = c;
            }
        if (bop < 0) break;
        k->outlined[bop][bc] = 1;
        k->outlines = 1;
        inlined -= best;
    }
}

const char *cugen_outline_call(cugen_kernel *k, int op, int dbl) {
    if (!k->outlined[op][dbl]) return NULL;
    k->m->outlined[op][dbl] = 1;
    return cugen_fmt(k, "fx_ol_%s_%c($0%s)", ir_ops[op].name, dbl ? 'd' : 'f',
                     ir_ops[op].arity == 2 ? ", $1" : "");
}

void cugen_outline_emit(cugen_module *m, ir_buf *out) {
    for (int op = 0; op < IR_OP_COUNT; op++)
        for (int dbl = 0; dbl < 2; dbl++) {
            if (!m->outlined[op][dbl]) continue;
            const char *t = dbl ? "double" : "float", *name = ir_ops[op].name;
            char sfx = dbl ? 'd' : 'f';
            if (ir_ops[op].arity == 2)
                ir_buf_printf(out,
                              "\nstatic __device__ __noinline__ %s fx_ol_%s_%c(%s a, %s b) {\n", t,
                              name, sfx, t, t);
            else
                ir_buf_printf(out, "\nstatic __device__ __noinline__ %s fx_ol_%s_%c(%s a) {\n", t,
                              name, sfx, t);
            ir_buf_printf(out, "    return %s;\n}\n", cugen_math_call(m, op, dbl));
        }
}
