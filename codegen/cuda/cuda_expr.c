/* codegen/cuda/cuda_expr.c: IR values as CUDA expressions: dtypes, the op table (every
 * element-wise op of ir/ops.def as an expression template per compute type), constants,
 * casts, the value of each node in the current scope, reductions' accumulators, and index
 * spaces: a kernel's domain collapsed into groups of axes, and the offset of an element in
 * each buffer.
 *
 * Values are computed in the node's compute type: f16, bf16 and f32 as float, f64 as
 * double, integers as int / long long (wrapping, through the prelude's helpers), bool as
 * bool. Each node becomes one `const T v<ref> = ...;` so generated code reads like the IR.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cuda_internal.h"
#include "codegen/plan_math.h"
#include "ir/scalar.h"

/* ---- sizes --------------------------------------------------------------------------------- */

cuda_size cugen_size_lit(int64_t v) {
    cuda_size s;
    memset(&s, 0, sizeof s);
    s.coeff = v;
    return s;
}

static void size_sort(cuda_size *s) {
    for (int32_t i = 1; i < s->nsyms; i++)
        for (int32_t j = i; j > 0 && s->syms[j - 1] > s->syms[j]; j--) {
            int32_t t = s->syms[j];
            s->syms[j] = s->syms[j - 1];
            s->syms[j - 1] = t;
        }
}

cuda_size cugen_size_mul(cuda_size a, cuda_size b) {
    cuda_size r = a;
    /* literal products stay far below 2^63 for any shape that fits a device */
    r.coeff = a.coeff * b.coeff;
    for (int32_t i = 0; i < b.nsyms && r.nsyms < CUDA_MAX_SIZE_SYMS; i++)
        r.syms[r.nsyms++] = b.syms[i];
    if (r.coeff == 0) r.nsyms = 0;
    size_sort(&r);
    return r;
}

int cugen_size_equal(const cuda_size *a, const cuda_size *b) {
    if (a->coeff != b->coeff || a->nsyms != b->nsyms) return 0;
    for (int32_t i = 0; i < a->nsyms; i++)
        if (a->syms[i] != b->syms[i]) return 0;
    return 1;
}

int cugen_size_is_lit(const cuda_size *s, int64_t v) {
    return s->nsyms == 0 && s->coeff == v;
}

cuda_size cugen_shape_elems(const ir_shape *s) {
    cuda_size r = cugen_size_lit(1);
    for (int32_t i = 0; i < s->rank; i++) {
        cuda_size d = cugen_size_lit(s->dims[i].sym >= 0 ? 1 : s->dims[i].size);
        if (s->dims[i].sym >= 0) d.syms[d.nsyms++] = s->dims[i].sym;
        r = cugen_size_mul(r, d);
    }
    return r;
}

/* ---- text ----------------------------------------------------------------------------------- */

void cugen_line(cugen_kernel *k, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    for (int i = 0; i < k->ind; i++)
        ir_buf_puts(&k->body, "    ");
    if (n >= 0 && (size_t)n < sizeof small) {
        ir_buf_puts(&k->body, small);
    } else if (n >= 0) {
        char *big = ir_arena_alloc(k->m->a, (size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        ir_buf_puts(&k->body, big);
    }
    ir_buf_puts(&k->body, "\n");
}

const char *cugen_fmt(cugen_kernel *k, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return "";
    char *s = ir_arena_alloc(k->m->a, (size_t)n + 1);
    if ((size_t)n < sizeof small) {
        memcpy(s, small, (size_t)n + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(s, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return s;
}

void cugen_use(cugen_kernel *k, cugen_helper h) {
    k->m->helpers |= 1u << h;
}

/* ---- dtypes --------------------------------------------------------------------------------- */

/* ORDER IR_DTYPE */
static const struct {
    const char *ctype, *stype;
    int words;
} dtype_c[IR_DTYPE_COUNT] = {
    [IR_BOOL] = {"bool", "unsigned char", 1},   [IR_I32] = {"int", "int", 1},
    [IR_I64] = {"long long", "long long", 2},   [IR_F16] = {"float", "unsigned short", 1},
    [IR_BF16] = {"float", "unsigned short", 1}, [IR_F32] = {"float", "float", 1},
    [IR_F64] = {"double", "double", 2},
};

const char *cugen_ctype(ir_dtype t) {
    return dtype_c[t].ctype;
}

const char *cugen_stype(ir_dtype t) {
    return dtype_c[t].stype;
}

int cugen_ctype_words(ir_dtype t) {
    return dtype_c[t].words;
}

cugen_cclass cugen_class_of(ir_dtype t) {
    switch (t) {
    case IR_BOOL: return CG_CC_BOOL;
    case IR_I32:
    case IR_I64: return CG_CC_INT;
    case IR_F64: return CG_CC_DOUBLE;
    default: return CG_CC_FLOAT;
    }
}

const char *cugen_from_storage(cugen_kernel *k, ir_dtype t, const char *expr) {
    switch (t) {
    case IR_BOOL: return cugen_fmt(k, "(%s != 0)", expr);
    case IR_F16: cugen_use(k, CG_H_F16); return cugen_fmt(k, "fx_h2f(%s)", expr);
    case IR_BF16: cugen_use(k, CG_H_BF16); return cugen_fmt(k, "fx_b2f(%s)", expr);
    default: return expr;
    }
}

const char *cugen_to_storage(cugen_kernel *k, ir_dtype t, const char *expr) {
    switch (t) {
    case IR_BOOL: return cugen_fmt(k, "(unsigned char)%s", expr);
    case IR_F16: cugen_use(k, CG_H_F16); return cugen_fmt(k, "fx_f2h(%s)", expr);
    case IR_BF16: cugen_use(k, CG_H_BF16); return cugen_fmt(k, "fx_f2b(%s)", expr);
    default: return expr;
    }
}

/* ---- the op table --------------------------------------------------------------------------- */

/* One element-wise op as CUDA: an expression template per compute class of its operands
 * ($0, $1, $2 stand for them), and the helpers the templates call. NULL: the class does
 * not occur (the verifier rules it out).
 *
 * The table is expanded from ops.def, each op's entry being the macro TMPL_<ENUM> below, so
 * an op added to ops.def without its template here fails to compile. The ops that are no
 * element-wise expression (leaves, cast, broadcast, reductions, output: cugen_emit_node makes
 * those otherwise) are NONE. cugen_op_table_check (tests) makes sure that each element-wise op
 * has the templates its flags in ops.def call for. */
typedef struct op_tmpl {
    const char *f, *d, *i, *b;
    unsigned hfd, hi; /* helpers the float/double templates and the integer one call */
} op_tmpl;

#define H(x)    (1u << CG_H_##x)
#define NONE    NULL, NULL, NULL, NULL, 0, 0
#define SAME(t) t, t, t, t, 0, 0
/* the math library's function (fx_NAME: llvm_math_NAME, or CUDA's own under --use_fast_math:
 * math_macros in cuda.c); C's function where it is one IEEE operation or exact */
#define FD(fn)        "fx_" fn "f($0)", "fx_" fn "($0)", NULL, NULL, H(MATH), 0
#define FD2(fn)       "fx_" fn "f($0, $1)", "fx_" fn "($0, $1)", NULL, NULL, H(MATH), 0
#define FC(fn)        fn "f($0)", fn "($0)", NULL, NULL, 0, 0
#define FC2(fn)       fn "f($0, $1)", fn "($0, $1)", NULL, NULL, 0, 0
#define ARITH(op, fn) "($0 " op " $1)", "($0 " op " $1)", "fx_" fn "($0, $1)", NULL, 0, H(INT)
/* minimum, maximum and clamp: NaN-propagating helpers; on bool, logic */
#define MINMAX(t, b) t, t, t, b, H(MINMAX), H(MINMAX)

#define TMPL_INPUT     NONE
#define TMPL_CONST     NONE
#define TMPL_INDEX     NONE
#define TMPL_NEG       "(-$0)", "(-$0)", "fx_neg($0)", NULL, 0, H(INT)
#define TMPL_NOT       NULL, NULL, NULL, "(!$0)", 0, 0
#define TMPL_ADD       ARITH("+", "add")
#define TMPL_SUB       ARITH("-", "sub")
#define TMPL_MUL       ARITH("*", "mul")
#define TMPL_DIV       ARITH("/", "div")
#define TMPL_MOD       "fmodf($0, $1)", "fmod($0, $1)", "fx_mod($0, $1)", NULL, 0, H(INT)
#define TMPL_EQ        SAME("($0 == $1)")
#define TMPL_NE        SAME("($0 != $1)")
#define TMPL_LT        SAME("($0 < $1)")
#define TMPL_LE        SAME("($0 <= $1)")
#define TMPL_GT        SAME("($0 > $1)")
#define TMPL_GE        SAME("($0 >= $1)")
#define TMPL_AND       NULL, NULL, NULL, "($0 && $1)", 0, 0
#define TMPL_OR        NULL, NULL, NULL, "($0 || $1)", 0, 0
#define TMPL_WHERE     SAME("($0 ? $1 : $2)")
#define TMPL_ABS       "fabsf($0)", "fabs($0)", "fx_abs($0)", NULL, 0, H(INT)
#define TMPL_SIGN      "fx_sign($0)", "fx_sign($0)", "fx_sign($0)", NULL, H(FLOAT), H(INT)
#define TMPL_MINIMUM   MINMAX("fx_min($0, $1)", "($0 && $1)")
#define TMPL_MAXIMUM   MINMAX("fx_max($0, $1)", "($0 || $1)")
#define TMPL_CLAMP     MINMAX("fx_min(fx_max($0, $1), $2)", "(($0 || $1) && $2)")
#define TMPL_EXP       FD("exp")
#define TMPL_EXP2      FD("exp2")
#define TMPL_EXPM1     FD("expm1")
#define TMPL_LOG       FD("log")
#define TMPL_LOG2      FD("log2")
#define TMPL_LOG10     FD("log10")
#define TMPL_LOG1P     FD("log1p")
#define TMPL_SQRT      FC("sqrt")
#define TMPL_RSQRT     "(1.0f / sqrtf($0))", "(1.0 / sqrt($0))", NULL, NULL, 0, 0 /* as the CPU */
#define TMPL_SIN       FD("sin")
#define TMPL_COS       FD("cos")
#define TMPL_TAN       FD("tan")
#define TMPL_ASIN      FD("asin")
#define TMPL_ACOS      FD("acos")
#define TMPL_ATAN      FD("atan")
#define TMPL_SINH      FD("sinh")
#define TMPL_COSH      FD("cosh")
#define TMPL_TANH      FD("tanh")
#define TMPL_ASINH     FD("asinh")
#define TMPL_ACOSH     FD("acosh")
#define TMPL_ATANH     FD("atanh")
#define TMPL_ERF       FD("erf")
#define TMPL_SIGMOID   FD("sigmoid")
#define TMPL_RELU      "fx_relu($0)", "fx_relu($0)", NULL, NULL, H(FLOAT), 0
#define TMPL_FLOOR     FC("floor")
#define TMPL_CEIL      FC("ceil")
#define TMPL_ROUND     FC("rint") /* half to even in the default rounding mode */
#define TMPL_TRUNC     FC("trunc")
#define TMPL_ISNAN     "isnan($0)", "isnan($0)", NULL, NULL, 0, 0
#define TMPL_ISINF     "isinf($0)", "isinf($0)", NULL, NULL, 0, 0
#define TMPL_POW       FD2("pow")
#define TMPL_ATAN2     FD2("atan2")
#define TMPL_HYPOT     FD2("hypot")
#define TMPL_COPYSIGN  FC2("copysign")
#define TMPL_RAND      "fx_rand($0, $1, $Su)", NULL, NULL, NULL, H(RAND), 0
#define TMPL_CAST      NONE
#define TMPL_BROADCAST NONE
#define TMPL_SUM       NONE
#define TMPL_PROD      NONE
#define TMPL_MEAN      NONE
#define TMPL_MAX       NONE
#define TMPL_MIN       NONE
#define TMPL_ARGMAX    NONE
#define TMPL_GRAD      NONE
#define TMPL_ARGMIN    NONE
#define TMPL_OUTPUT    NONE

static const op_tmpl op_table[IR_OP_COUNT] = {
#define IR_OP(E, CLASS, ARITY, NAME, FLAGS, IDENTITY, DERIV) [IR_OP_##E] = {TMPL_##E},
#include "ir/ops.def"
#undef IR_OP
};

#undef H
#undef NONE
#undef SAME
#undef FD
#undef FD2
#undef FC
#undef FC2
#undef ARITH
#undef MINMAX

const char *cugen_op_table_check(void) {
    for (int op = 0; op < IR_OP_COUNT; op++) {
        const ir_op_info *oi = &ir_ops[op];
        if (oi->cls != IR_CLASS_EW) continue;
        const op_tmpl *t = &op_table[op];
        if (oi->flags & IR_OPF_GRADREQ) continue; /* expanded before any code is made */
        if (oi->flags & IR_OPF_LOGIC) {
            if (!t->b) return oi->name;
        } else if (oi->flags & (IR_OPF_FLOATFN | IR_OPF_PRED)) {
            if (!t->f || !t->d) return oi->name;
        } else if (oi->flags & IR_OPF_RANDOM) {
            if (!t->f) return oi->name;
        } else if (!t->f || !t->d || !t->i) {
            return oi->name;
        }
    }
    return NULL;
}

/* Substitutes $0..$2 in a template, and $S (rand's stream) with ops[3]. */
static const char *subst_in(ir_arena *a, const char *tmpl, const char *const *ops) {
    ir_buf b;
    ir_buf_init(&b, a);
    for (const char *p = tmpl; *p; p++) {
        if (p[0] == '$' && ((p[1] >= '0' && p[1] <= '2') || p[1] == 'S')) {
            ir_buf_puts(&b, ops[p[1] == 'S' ? 3 : p[1] - '0']);
            p++;
        } else {
            ir_buf_putn(&b, p, 1);
        }
    }
    return b.data ? b.data : "";
}

static const char *subst(cugen_kernel *k, const char *tmpl, const char *const *ops) {
    return subst_in(k->m->a, tmpl, ops);
}

const char *cugen_math_call(cugen_module *m, int op, int dbl) {
    const char *ops[4] = {"a", "b", "", ""};
    return subst_in(m->a, dbl ? op_table[op].d : op_table[op].f, ops);
}

/* ---- constants ------------------------------------------------------------------------------- */

static const char *float_literal(cugen_kernel *k, double v, int is_double) {
    cugen_use(k, CG_H_BITS);
    if (isnan(v)) return is_double ? "FX_NAN_D" : "FX_NAN_F";
    if (!is_double) v = (double)(float)v; /* the value the f32 computation uses */
    if (isinf(v)) {
        if (is_double) return v > 0 ? "FX_INF_D" : "(-FX_INF_D)";
        return v > 0 ? "FX_INF_F" : "(-FX_INF_F)";
    }
    char buf[64];
    snprintf(buf, sizeof buf, is_double ? "%.17g" : "%.9g", v);
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    if (!is_double) strcat(buf, "f");
    if (buf[0] == '-') return cugen_fmt(k, "(%s)", buf);
    return cugen_fmt(k, "%s", buf);
}

static const char *const_literal(cugen_kernel *k, const ir_node *n) {
    switch (n->dtype) {
    case IR_BOOL: return n->value.i ? "true" : "false";
    case IR_I32: {
        int64_t v = ir_wrap_int(n->value.i, IR_I32);
        if (v == INT32_MIN) return "(-2147483647 - 1)";
        return cugen_fmt(k, v < 0 ? "(%" PRId64 ")" : "%" PRId64, v);
    }
    case IR_I64: {
        int64_t v = n->value.i;
        if (v == INT64_MIN) return "(-9223372036854775807LL - 1LL)";
        return cugen_fmt(k, v < 0 ? "(%" PRId64 "LL)" : "%" PRId64 "LL", v);
    }
    case IR_F64: return float_literal(k, n->value.f, 1);
    default: return float_literal(k, n->value.f, 0);
    }
}

const char *cugen_operand(cugen_kernel *k, ir_ref r) {
    const ir_node *n = &k->f->nodes[r];
    if (n->op == IR_OP_CONST) return const_literal(k, n);
    if (!k->val[r]) {
        cugen_fail(k->m, "cuda codegen: %%%d of '%s' has no value where it is used", (int)r,
                   k->f->name);
        return "0";
    }
    return k->val[r];
}

/* ---- casts ---------------------------------------------------------------------------------- */

/* x, of compute class of `from`, converted as the reference converts (ir/interp.c eval_cast):
 * rounding to the target's precision, float -> integer saturating with NaN -> 0, integers
 * wrapping, anything -> bool as != 0. */
static const char *cast_expr(cugen_kernel *k, ir_dtype from, ir_dtype to, const char *x) {
    if (from == to) return x;
    cugen_cclass cf = cugen_class_of(from);
    switch (to) {
    case IR_BOOL:
        if (cf == CG_CC_FLOAT) return cugen_fmt(k, "(%s != 0.0f)", x);
        if (cf == CG_CC_DOUBLE) return cugen_fmt(k, "(%s != 0.0)", x);
        return cugen_fmt(k, "(%s != 0)", x);
    case IR_I32:
    case IR_I64: {
        int w = to == IR_I64;
        if (cf == CG_CC_BOOL) return cugen_fmt(k, "(%s)%s", w ? "long long" : "int", x);
        if (cf == CG_CC_INT) {
            if (w) return cugen_fmt(k, "(long long)%s", x);
            cugen_use(k, CG_H_INT);
            return cugen_fmt(k, "fx_wrap32(%s)", x);
        }
        cugen_use(k, CG_H_CVT);
        if (cf == CG_CC_FLOAT) return cugen_fmt(k, w ? "fx_f2ll(%s)" : "fx_f2i(%s)", x);
        return cugen_fmt(k, w ? "fx_d2ll(%s)" : "fx_d2i(%s)", x);
    }
    case IR_F64:
        if (cf == CG_CC_BOOL) return cugen_fmt(k, "(%s ? 1.0 : 0.0)", x);
        return cugen_fmt(k, "(double)%s", x);
    case IR_F32:
    case IR_F16:
    case IR_BF16: {
        const char *f;
        if (cf == CG_CC_BOOL) {
            f = cugen_fmt(k, "(%s ? 1.0f : 0.0f)", x);
        } else if (cf == CG_CC_DOUBLE) {
            if (to == IR_F16) {
                cugen_use(k, CG_H_F64HALF);
                return cugen_fmt(k, "fx_d2h_round(%s)", x);
            }
            if (to == IR_BF16) {
                cugen_use(k, CG_H_F64HALF);
                return cugen_fmt(k, "fx_d2b_round(%s)", x);
            }
            return cugen_fmt(k, "(float)%s", x);
        } else if (cf == CG_CC_INT) {
            /* to f16 exact: every integer f16 holds is exact in f32; to bf16 an integer past
             * 2^24 rounds twice (within the SPEC's one unit in the last place) */
            f = cugen_fmt(k, "(float)%s", x);
        } else {
            f = x;
        }
        if (to == IR_F16) {
            cugen_use(k, CG_H_F16);
            return cugen_fmt(k, "fx_rnd_h(%s)", f);
        }
        if (to == IR_BF16) {
            cugen_use(k, CG_H_BF16);
            return cugen_fmt(k, "fx_rnd_b(%s)", f);
        }
        return f;
    }
    default: return x;
    }
}

/* ---- nodes ----------------------------------------------------------------------------------- */

static const char *ew_expr(cugen_kernel *k, ir_ref r) {
    const ir_node *n = &k->f->nodes[r];
    const ir_op_info *oi = &ir_ops[n->op];
    const op_tmpl *t = &op_table[n->op];
    const char *ops[4] = {"", "", "", cugen_fmt(k, "%d", (int)n->index)};
    for (int i = 0; i < oi->arity; i++)
        ops[i] = cugen_operand(k, n->args[i]);
    /* the class of the computation: the operands' for comparisons and predicates */
    ir_dtype ct =
        (oi->flags & (IR_OPF_CMP | IR_OPF_PRED)) ? k->f->nodes[n->args[0]].dtype : n->dtype;
    cugen_cclass c = cugen_class_of(ct);
    const char *tmpl = c == CG_CC_FLOAT    ? t->f
                       : c == CG_CC_DOUBLE ? t->d
                       : c == CG_CC_INT    ? t->i
                                           : t->b;
    if (!tmpl && c == CG_CC_BOOL && t->i && (oi->flags & IR_OPF_NUMERIC)) {
        /* arithmetic on bool (the IR allows it; the front end does not make it): as the
         * reference, in integers, then != 0 */
        const char *iops[4] = {"", "", "", ops[3]};
        for (int i = 0; i < 3; i++)
            iops[i] = cugen_fmt(k, "(int)%s", ops[i]);
        for (int h = 0; h < CG_H_COUNT; h++)
            if (t->hi & (1u << h)) cugen_use(k, (cugen_helper)h);
        return cugen_fmt(k, "(%s != 0)", subst(k, t->i, iops));
    }
    if (!tmpl) {
        cugen_fail(k->m, "cuda codegen: %s has no form for %s operands", oi->name,
                   ir_dtypes[ct].name);
        return "0";
    }
    unsigned hs = c == CG_CC_INT ? t->hi : c == CG_CC_BOOL ? 0 : t->hfd;
    for (int h = 0; h < CG_H_COUNT; h++)
        if (hs & (1u << h)) cugen_use(k, (cugen_helper)h);
    if (n->op == IR_OP_EXP && c == CG_CC_FLOAT && plan_exp_nonpositive(k->f, n->args[0])) {
        tmpl = "fx_expf_nonpos($0)"; /* as the CPU chooses it (never outlined: small) */
    } else if (c == CG_CC_FLOAT || c == CG_CC_DOUBLE) {
        const char *call = cugen_outline_call(k, n->op, c == CG_CC_DOUBLE);
        if (call) tmpl = call;
    }
    return subst(k, tmpl, ops);
}

/* Whether a stored f16/bf16 value must be rounded where it is computed: the reference holds
 * the stored (rounded) value for every later reader (the plan's rounding). */
static int round_stored(const cugen_kernel *k, ir_ref r) {
    return k->plan->round_kept[r];
}

void cugen_emit_node(cugen_kernel *k, ir_ref r) {
    const ir_node *n = &k->f->nodes[r];
    const char *e;
    switch (ir_ops[n->op].cls) {
    case IR_CLASS_BROADCAST:
        /* an indexed read: the operand's value at the mapped point is its value here */
        cugen_set_val(k, r, cugen_operand(k, n->args[0]));
        return;
    case IR_CLASS_EW: e = ew_expr(k, r); break;
    case IR_CLASS_CAST:
        e = cast_expr(k, k->f->nodes[n->args[0]].dtype, n->dtype, cugen_operand(k, n->args[0]));
        break;
    case IR_CLASS_REDUCE:
        if (k->reduce_single) {
            /* a reduction of one element: the identity combined with it, as the reference */
            const char *x = cugen_operand(k, n->args[0]);
            if (k->f->nodes[n->args[0]].dtype != n->dtype)
                x = cugen_fmt(k, "(%s)%s", cugen_ctype(n->dtype), x);
            e = cugen_red_finish(
                k, r, cugen_fmt(k, "(%s)", cugen_red_combine(k, r, cugen_red_init(k, r), x)), "1");
            break;
        }
        /* fall through */
    default:
        cugen_fail(k->m, "cuda codegen: %s %%%d of '%s' has no value where it is used",
                   ir_ops[n->op].name, (int)r, k->f->name);
        return;
    }
    if (round_stored(k, r)) {
        cugen_helper h = n->dtype == IR_F16 ? CG_H_F16 : CG_H_BF16;
        cugen_use(k, h);
        e = cugen_fmt(k, "%s(%s)", n->dtype == IR_F16 ? "fx_rnd_h" : "fx_rnd_b", e);
    }
    cugen_line(k, "const %s v%d = %s;", cugen_ctype(n->dtype), (int)r, e);
    cugen_set_val(k, r, cugen_fmt(k, "v%d", (int)r));
}

/* ---- scopes ---------------------------------------------------------------------------------- */

int32_t cugen_scope_mark(cugen_kernel *k) {
    return k->nsaved;
}

void cugen_scope_pop(cugen_kernel *k, int32_t mark) {
    while (k->nsaved > mark) {
        cugen_saved *s = &k->saved[--k->nsaved];
        k->val[s->node] = s->prev;
    }
}

void cugen_set_val(cugen_kernel *k, ir_ref r, const char *expr) {
    cugen_saved s = {r, k->val[r]};
    IR_VEC_PUSH(k->m->a, k->saved, k->nsaved, k->cap_saved, s);
    k->val[r] = expr;
}

static void need_rec(cugen_kernel *k, ir_ref r, unsigned char *need) {
    const ir_node *n = &k->f->nodes[r];
    if (need[r] || k->val[r] || n->op == IR_OP_CONST) return;
    if (k->inbuf[r] >= 0) {
        need[r] = 1;
        return;
    }
    if (!k->in[r]) {
        cugen_fail(k->m, "cuda codegen: %%%d of '%s' is read outside its kernel", (int)r,
                   k->f->name);
        return;
    }
    if (ir_ops[n->op].cls == IR_CLASS_REDUCE && !k->reduce_single) {
        cugen_fail(k->m, "cuda codegen: %s %%%d of '%s' is read before it is computed",
                   ir_ops[n->op].name, (int)r, k->f->name);
        return;
    }
    need[r] = 1;
    for (int i = 0; i < ir_ops[n->op].arity; i++)
        need_rec(k, n->args[i], need);
}

void cugen_need(cugen_kernel *k, const ir_ref *targets, int32_t n, unsigned char *need) {
    for (int32_t i = 0; i < n; i++)
        need_rec(k, targets[i], need);
}

void cugen_emit_needed(cugen_kernel *k, const unsigned char *need) {
    for (int32_t b = 0; b < k->nbufs; b++) {
        const cugen_buf *bf = &k->bufs[b];
        if (bf->output || !need[bf->node] || k->val[bf->node]) continue;
        cugen_set_val(k, bf->node, k->load(k, b));
    }
    for (int32_t i = k->from; i < k->to; i++) {
        ir_ref r = k->kn->body[i];
        if (need[r] && !k->val[r]) cugen_emit_node(k, r);
    }
}

void cugen_emit_values(cugen_kernel *k, const ir_ref *targets, int32_t n) {
    unsigned char *need = ir_arena_calloc(k->m->a, (size_t)k->f->nnodes, 1);
    cugen_need(k, targets, n, need);
    cugen_emit_needed(k, need);
}

/* ---- reductions ------------------------------------------------------------------------------ */

/* The identity of reduction r (ir_reduce_identity) as a literal of its compute type: an
 * integer takes the LL suffix only where an int cannot hold it; a finite float identity is 0
 * or 1, exact with one decimal. */
const char *cugen_red_init(cugen_kernel *k, ir_ref r) {
    const ir_node *n = &k->f->nodes[r];
    ir_identity kind = ir_ops[n->op].identity;
    if (kind == IR_ID_NONE) {
        cugen_fail(k->m, "cuda codegen: %s is no reduction", ir_ops[n->op].name);
        return "0";
    }
    /* the extremes of floats are the infinities of the bits helper; integer extremes take
     * the helper in too, unused, which keeps the generated code as it has been */
    if (kind == IR_ID_LOWEST || kind == IR_ID_HIGHEST) cugen_use(k, CG_H_BITS);
    ir_scalar id = ir_reduce_identity(n->op, n->dtype);
    switch (cugen_class_of(n->dtype)) {
    case CG_CC_BOOL: return id.i ? "true" : "false";
    case CG_CC_INT:
        if (id.i == INT64_MIN) return "(-9223372036854775807LL - 1LL)";
        if (id.i == INT32_MIN) return "(-2147483647 - 1)";
        return cugen_fmt(k, id.i > INT32_MAX ? "%" PRId64 "LL" : "%" PRId64, id.i);
    case CG_CC_DOUBLE:
        if (isinf(id.f)) return id.f > 0 ? "FX_INF_D" : "(-FX_INF_D)";
        return cugen_fmt(k, "%.1f", id.f);
    case CG_CC_FLOAT:
        if (isinf(id.f)) return id.f > 0 ? "FX_INF_F" : "(-FX_INF_F)";
        return cugen_fmt(k, "%.1ff", id.f);
    }
    return "0";
}

const char *cugen_red_combine(cugen_kernel *k, ir_ref r, const char *acc, const char *x) {
    const ir_node *n = &k->f->nodes[r];
    cugen_cclass c = cugen_class_of(n->dtype);
    switch (n->op) {
    case IR_OP_SUM:
    case IR_OP_MEAN:
        if (c == CG_CC_INT) {
            cugen_use(k, CG_H_INT);
            return cugen_fmt(k, "fx_add(%s, %s)", acc, x);
        }
        if (c == CG_CC_BOOL) return cugen_fmt(k, "(%s || %s)", acc, x);
        return cugen_fmt(k, "%s + %s", acc, x);
    case IR_OP_PROD:
        if (c == CG_CC_INT) {
            cugen_use(k, CG_H_INT);
            return cugen_fmt(k, "fx_mul(%s, %s)", acc, x);
        }
        if (c == CG_CC_BOOL) return cugen_fmt(k, "(%s && %s)", acc, x);
        return cugen_fmt(k, "%s * %s", acc, x);
    case IR_OP_MAX:
        if (c == CG_CC_BOOL) return cugen_fmt(k, "(%s || %s)", acc, x);
        cugen_use(k, CG_H_MINMAX);
        return cugen_fmt(k, "fx_max(%s, %s)", acc, x);
    case IR_OP_MIN:
        if (c == CG_CC_BOOL) return cugen_fmt(k, "(%s && %s)", acc, x);
        cugen_use(k, CG_H_MINMAX);
        return cugen_fmt(k, "fx_min(%s, %s)", acc, x);
    default: return acc;
    }
}

const char *cugen_red_finish(cugen_kernel *k, ir_ref r, const char *acc, const char *count) {
    const ir_node *n = &k->f->nodes[r];
    if (n->op != IR_OP_MEAN) return acc;
    /* 0 / 0 is NaN: the mean over an empty axis, as the reference has it */
    if (n->dtype == IR_F64) return cugen_fmt(k, "%s / (double)%s", acc, count);
    return cugen_fmt(k, "%s / (float)%s", acc, count);
}

/* ---- index spaces ---------------------------------------------------------------------------- */

int cugen_buf_used(const cugen_kernel *k, int32_t b) {
    const cugen_buf *bf = &k->bufs[b];
    if (bf->output) return k->in[bf->node];
    /* an input: read by a node of the range */
    for (int32_t i = k->from; i < k->to; i++) {
        const ir_node *n = &k->f->nodes[k->kn->body[i]];
        for (int a = 0; a < ir_ops[n->op].arity; a++)
            if (n->args[a] == bf->node) return 1;
    }
    return 0;
}

void cugen_space_build(cugen_kernel *k, int32_t part) {
    const ir_func *f = k->f;
    const plan_kernel *p = &k->plans->parts[part];
    k->plan = p;
    k->from = p->from;
    k->to = p->to;
    memset(k->in, 0, (size_t)f->nnodes);
    for (int32_t i = p->from; i < p->to; i++)
        k->in[k->kn->body[i]] = 1;

    /* groups: the plan's collapsed axes */
    k->ngroups = p->naxes;
    k->reduced = p->reduced;
    for (int32_t g = 0; g < p->naxes; g++) {
        ir_shape s = plan_axes_shape(p, 1u << g);
        k->groups[g].extent = cugen_shape_elems(&s);
        k->groups[g].reduced = (int)((p->reduced >> g) & 1);
    }
    for (int32_t b = 0; b < k->nbufs; b++) {
        cugen_buf *bf = &k->bufs[b];
        bf->mask = cugen_buf_used(k, b) ? plan_presence(p, &f->nodes[bf->node].shape) : 0;
    }

    /* what each value varies over */
    memset(k->var, 0, sizeof(uint32_t) * (size_t)f->nnodes);
    for (int32_t b = 0; b < k->nbufs; b++)
        if (!k->bufs[b].output && cugen_buf_used(k, b)) k->var[k->bufs[b].node] = k->bufs[b].mask;
    for (int32_t i = p->from; i < p->to; i++) {
        ir_ref r = k->kn->body[i];
        const ir_node *n = &f->nodes[r];
        uint32_t v = 0;
        for (int a = 0; a < ir_ops[n->op].arity; a++)
            v |= k->var[n->args[a]];
        if (ir_ops[n->op].cls == IR_CLASS_REDUCE) v &= ~k->reduced;
        k->var[r] = v;
    }
    /* a value stored where it is the same along some axes (a broadcast of a row's value, a
     * gradient's) is still written to every element of its buffer: it counts as varying
     * there, so the engines write it where they write each element */
    for (int32_t b = 0; b < k->nbufs; b++)
        if (k->bufs[b].output && cugen_buf_used(k, b)) k->var[k->bufs[b].node] |= k->bufs[b].mask;
}

const char *cugen_size_expr(cugen_kernel *k, cuda_size s, const char *hint) {
    if (s.nsyms == 0) {
        if (s.coeff > INT32_MAX || s.coeff < INT32_MIN)
            return cugen_fmt(k, "%" PRId64 "LL", s.coeff);
        return cugen_fmt(k, "%" PRId64, s.coeff);
    }
    for (int32_t i = 0; i < k->nsizes; i++)
        if (k->sizes[i].kind == CUDA_ARG_SIZE && cugen_size_equal(&k->sizes[i].size, &s))
            return k->sizes[i].name;
    /* a readable name: the symbol itself for a lone symbol, else the hint */
    /* kernel arguments end in '_' (locals never do); a lone symbol is named after it */
    const char *name = NULL;
    if (s.coeff == 1 && s.nsyms == 1)
        name = cugen_fmt(k, "%s_", k->f->syms[s.syms[0]]);
    else
        name = cugen_fmt(k, "%s_", hint);
    for (int32_t i = 0, suffix = 2; i < k->nsizes; i++) {
        if (strcmp(k->sizes[i].name, name) == 0) {
            name = cugen_fmt(k, "%s%d_", hint, (int)suffix++);
            i = -1;
        }
    }
    cugen_sizearg a = {CUDA_ARG_SIZE, 0, s, name, NULL};
    IR_VEC_PUSH(k->m->a, k->sizes, k->nsizes, k->cap_sizes, a);
    return name;
}

cuda_size cugen_groups_extent(const cugen_kernel *k, uint32_t mask) {
    cuda_size s = cugen_size_lit(1);
    for (int32_t g = 0; g < k->ngroups; g++)
        if (mask & (1u << g)) s = cugen_size_mul(s, k->groups[g].extent);
    return s;
}

static uint32_t after(int32_t g) {
    return g >= 31 ? 0 : ~((2u << g) - 1);
}

/* The offset part of buffer b from the groups in `space` (the kept or the reduced ones), whose
 * linear index within that space is t: for each run of consecutive groups b spans, the run's
 * own index ((t / D) % P) times b's stride after the run. */
static const char *offset_part(cugen_kernel *k, int32_t b, uint32_t space, const char *t) {
    uint32_t m = k->bufs[b].mask & space;
    if (!m) return NULL;
    const char *sum = NULL;
    for (int32_t g = 0; g < k->ngroups; g++) {
        if (!(m & (1u << g))) continue;
        int32_t c = g;
        while (c + 1 < k->ngroups && (m & (1u << (c + 1))))
            c++;
        uint32_t run = 0;
        for (int32_t h = g; h <= c; h++)
            run |= 1u << h;
        cuda_size div = cugen_groups_extent(k, space & after(c));
        cuda_size per = cugen_groups_extent(k, run);
        int first = !(space & ((1u << g) - 1)); /* no group of the space before the run */
        const char *x = t;
        if (!cugen_size_is_lit(&div, 1))
            x = cugen_fmt(k, strpbrk(t, " +-*/%") ? "(%s) / %s" : "%s / %s", x,
                          cugen_size_expr(k, div, "div"));
        if (!first)
            x = cugen_fmt(k, "(%s) %% %s", x, cugen_size_expr(k, per, "ext"));
        else if (!cugen_size_is_lit(&div, 1))
            x = cugen_fmt(k, "(%s)", x);
        cuda_size stride = cugen_groups_extent(k, k->bufs[b].mask & after(c));
        if (!cugen_size_is_lit(&stride, 1))
            x = cugen_fmt(k, "%s * %s", x, cugen_size_expr(k, stride, "stride"));
        sum = sum ? cugen_fmt(k, "%s + %s", sum, x) : x;
        g = c;
    }
    return sum;
}

const char *cugen_offset_kept(cugen_kernel *k, int32_t b, const char *o, const char *cast) {
    (void)cast;
    return offset_part(k, b, ~k->reduced & ((1u << k->ngroups) - 1), o);
}

const char *cugen_offset_reduced(cugen_kernel *k, int32_t b, const char *l, const char *cast) {
    (void)cast;
    return offset_part(k, b, k->reduced, l);
}

const char *cugen_offset(cugen_kernel *k, int32_t b, const char *o, const char *l,
                         const char *cast) {
    const char *x = o ? cugen_offset_kept(k, b, o, cast) : NULL;
    const char *y = l ? cugen_offset_reduced(k, b, l, cast) : NULL;
    if (x && y) return cugen_fmt(k, "%s + %s", x, y);
    return x ? x : y ? y : "0";
}

int cugen_reduced_linear(const cugen_kernel *k, int32_t b) {
    uint32_t m = k->bufs[b].mask;
    if ((m & k->reduced) != k->reduced) return 0;
    if (!k->reduced) return 1;
    /* no kept group it spans between the reduced ones (a row layout may interleave them:
     * reduced, kept, reduced), which would put a stride inside the reduced index */
    uint32_t from_first = ~((1u << __builtin_ctz(k->reduced)) - 1);
    return (m & from_first & ~k->reduced) == 0;
}
