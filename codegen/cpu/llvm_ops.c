/* codegen/cpu/llvm_ops.c: the CPU backend's value emitters: one LLVM-C emitter per IR op (a table
 * expanded from ir/ops.def), loads and stores per dtype (a table expanded from
 * ir/dtypes.def), conversions, and the reductions' accumulators.
 *
 * Semantics (SPEC §1, as the reference interpreter has them): integers wrap (no nsw/nuw
 * flags), division and remainder by zero give 0 and INT_MIN / -1 wraps, guarded before the
 * division since LLVM's sdiv by zero or of INT_MIN by -1 is undefined; float to integer
 * conversions saturate with NaN giving 0 (llvm.fptosi.sat); minimum, maximum, clamp and relu
 * propagate NaN; round is half to even; float % is fmod. f16 and bf16 values are held in
 * float and rounded to nearest even when stored or cast; conversions that would round twice
 * (f64 or a large integer to a 16-bit float) first round to float to odd, which makes the
 * second rounding exact. Transcendentals call the branch-free llvm_math_* functions of
 * codegen/cpu/llvm_math.c, linked as bitcode and inlined, so that loops over them vectorize.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cpu/llvm_gen.h"
#include "codegen/plan_math.h"
#include "ir/scalar.h"

/* ---- types and constants ----------------------------------------------------------------- */

LLVMTypeRef lg_storage_type(lg_mod *m, ir_dtype t) {
    switch (t) {
    case IR_BOOL: return m->t_i8;
    case IR_I32: return m->t_i32;
    case IR_I64: return m->t_i64;
    case IR_F16:
    case IR_BF16: return m->t_i16;
    case IR_F32: return m->t_f32;
    case IR_F64: return m->t_f64;
    default: return m->t_i8;
    }
}

LLVMTypeRef lg_compute_type(lg_mod *m, ir_dtype t) {
    switch (t) {
    case IR_BOOL: return m->t_i1;
    case IR_I32: return m->t_i32;
    case IR_I64: return m->t_i64;
    case IR_F64: return m->t_f64;
    default: return m->t_f32;
    }
}

static LLVMValueRef ci32(lg_mod *m, uint32_t v) {
    return LLVMConstInt(m->t_i32, v, 0);
}

static LLVMValueRef cint(LLVMTypeRef t, int64_t v) {
    return LLVMConstInt(t, (unsigned long long)v, 1);
}

static LLVMValueRef cfp(LLVMTypeRef t, double v) {
    return LLVMConstReal(t, v);
}

LLVMValueRef lg_const(lg_mod *m, const ir_node *n) {
    LLVMTypeRef t = lg_compute_type(m, n->dtype);
    if (ir_dtype_is_float(n->dtype)) {
        /* a literal takes part in the f32 computation unrounded to f16/bf16 (SPEC §1) */
        double v = n->dtype == IR_F64 ? n->value.f : (double)(float)n->value.f;
        return cfp(t, v);
    }
    return cint(t, ir_wrap_int(n->value.i, n->dtype));
}

LLVMValueRef lg_intrinsic_in(LLVMModuleRef mod, LLVMBuilderRef b, unsigned id, LLVMTypeRef *tys,
                             int ntys, LLVMValueRef *args, int nargs) {
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, id, tys, (size_t)ntys);
    LLVMTypeRef fty = LLVMIntrinsicGetType(LLVMGetModuleContext(mod), id, tys, (size_t)ntys);
    return LLVMBuildCall2(b, fty, fn, args, (unsigned)nargs, "");
}

LLVMValueRef lg_intrinsic(lg_mod *m, const char *name, LLVMTypeRef *tys, int ntys,
                          LLVMValueRef *args, int nargs) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (!id) {
        lg_fail(m, "internal error: no intrinsic %s", name);
        return LLVMGetUndef(LLVMTypeOf(args[0]));
    }
    return lg_intrinsic_in(m->mod, m->b, id, tys, ntys, args, nargs);
}

static LLVMValueRef intr1(lg_mod *m, const char *name, LLVMValueRef x) {
    LLVMTypeRef t = LLVMTypeOf(x);
    return lg_intrinsic(m, name, &t, 1, &x, 1);
}

static LLVMValueRef intr2(lg_mod *m, const char *name, LLVMValueRef x, LLVMValueRef y) {
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef a[2] = {x, y};
    return lg_intrinsic(m, name, &t, 1, a, 2);
}

/* A call of an llvm_math_* function (declared here, defined by the linked bitcode). */
static LLVMValueRef math_call(lg_mod *m, const char *name, LLVMValueRef *args, int nargs) {
    LLVMTypeRef t = LLVMTypeOf(args[0]);
    LLVMTypeRef ps[2] = {t, t};
    LLVMTypeRef fty = LLVMFunctionType(t, ps, (unsigned)nargs, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(m->mod, name);
    if (!fn) fn = LLVMAddFunction(m->mod, name, fty);
    m->math_calls++;
    return LLVMBuildCall2(m->b, fty, fn, args, (unsigned)nargs, "");
}

/* ---- 16-bit floats ----------------------------------------------------------------------- */

static LLVMValueRef bits32(lg_mod *m, LLVMValueRef x) {
    return LLVMBuildBitCast(m->b, x, m->t_i32, "");
}

static LLVMValueRef float32(lg_mod *m, LLVMValueRef u) {
    return LLVMBuildBitCast(m->b, u, m->t_f32, "");
}

/* f16 bits (i16) to float, exactly. */
static LLVMValueRef f16_to_f32(lg_mod *m, LLVMValueRef h) {
    LLVMBuilderRef b = m->b;
    if (m->f16c) return LLVMBuildFPExt(b, LLVMBuildBitCast(b, h, m->t_half, ""), m->t_f32, "");
    /* without hardware conversions: the magnitude's bits moved into a float's place, then
     * scaled by 2^112 (rebiasing the exponent, exact for subnormals too); inf and NaN keep
     * their payload */
    LLVMValueRef w = LLVMBuildZExt(b, h, m->t_i32, "");
    LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, w, ci32(m, 0x8000), ""), ci32(m, 16), "");
    LLVMValueRef em = LLVMBuildAnd(b, w, ci32(m, 0x7fff), "");
    LLVMValueRef sh = LLVMBuildShl(b, em, ci32(m, 13), "");
    LLVMValueRef mag = LLVMBuildFMul(b, float32(m, sh), cfp(m->t_f32, 0x1p112), "");
    LLVMValueRef spec = LLVMBuildICmp(b, LLVMIntUGE, em, ci32(m, 0x7c00), "");
    LLVMValueRef sbits = LLVMBuildOr(b, sh, ci32(m, 0x7f800000), "");
    LLVMValueRef u = LLVMBuildSelect(b, spec, sbits, bits32(m, mag), "");
    return float32(m, LLVMBuildOr(b, u, sign, ""));
}

/* float to f16 bits (i16), rounded to nearest even. */
static LLVMValueRef f32_to_f16(lg_mod *m, LLVMValueRef x) {
    LLVMBuilderRef b = m->b;
    if (m->f16c) return LLVMBuildBitCast(b, LLVMBuildFPTrunc(b, x, m->t_half, ""), m->t_i16, "");
    LLVMValueRef u = bits32(m, x);
    LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, u, ci32(m, 16), ""), ci32(m, 0x8000), "");
    LLVMValueRef a = LLVMBuildAnd(b, u, ci32(m, 0x7fffffff), "");
    LLVMValueRef lsb = LLVMBuildAnd(b, LLVMBuildLShr(b, a, ci32(m, 13), ""), ci32(m, 1), "");
    /* normal results: rebias the exponent (127 - 15), round the 13 dropped bits to even */
    LLVMValueRef norm = LLVMBuildSub(b, a, ci32(m, 0x38000000), "");
    norm = LLVMBuildAdd(b, norm, LLVMBuildAdd(b, lsb, ci32(m, 0xfff), ""), "");
    norm = LLVMBuildLShr(b, norm, ci32(m, 13), "");
    /* subnormal results: adding 0.5 leaves the value on a grid of 2^-24, rounding to even */
    LLVMValueRef sub = LLVMBuildFAdd(b, float32(m, a), cfp(m->t_f32, 0.5), "");
    sub = LLVMBuildSub(b, bits32(m, sub), ci32(m, 0x3f000000), "");
    LLVMValueRef nan =
        LLVMBuildOr(b, ci32(m, 0x7e00),
                    LLVMBuildAnd(b, LLVMBuildLShr(b, a, ci32(m, 13), ""), ci32(m, 0x3ff), ""), "");
    LLVMValueRef r =
        LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGE, a, ci32(m, 0x38800000), ""), norm, sub, "");
    r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGE, a, ci32(m, 0x477ff000), ""),
                        ci32(m, 0x7c00), r, "");
    r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, a, ci32(m, 0x7f800000), ""), nan, r, "");
    return LLVMBuildTrunc(b, LLVMBuildOr(b, r, sign, ""), m->t_i16, "");
}

/* The bits of float x rounded to bf16 (to nearest even; a NaN stays a NaN, made quiet), in the
 * top half of an i32. A NaN goes through the rounding add too, and is then ORed with the quiet
 * NaN's bits: whatever the add left (a carry into the exponent's or the sign's bit) is still a
 * quiet NaN after it, and an AND with the compare's mask costs no FMA-pipe slot where a select
 * (vblendvps) does, which bf16's element-wise loops are short of. */
static LLVMValueRef bf16_round_bits(lg_mod *m, LLVMValueRef x) {
    LLVMBuilderRef b = m->b;
    LLVMValueRef u = bits32(m, x);
    LLVMValueRef lsb = LLVMBuildAnd(b, LLVMBuildLShr(b, u, ci32(m, 16), ""), ci32(m, 1), "");
    LLVMValueRef r = LLVMBuildAdd(b, u, LLVMBuildAdd(b, lsb, ci32(m, 0x7fff), ""), "");
    r = LLVMBuildAnd(b, r, ci32(m, 0xffff0000u), "");
    LLVMValueRef nan = LLVMBuildSExt(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), LLVMTypeOf(u), "");
    return LLVMBuildOr(b, r, LLVMBuildAnd(b, nan, ci32(m, 0x7fc00000), ""), "");
}

/* A double rounded to float to odd: truncated, with the lowest bit set when inexact, so that
 * rounding it again to a narrower format rounds as the double would directly. */
static LLVMValueRef f64_to_f32_odd(lg_mod *m, LLVMValueRef d) {
    LLVMBuilderRef b = m->b;
    LLVMValueRef t = LLVMBuildFPTrunc(b, d, m->t_f32, "");
    LLVMValueRef back = LLVMBuildFPExt(b, t, m->t_f64, "");
    LLVMValueRef up =
        LLVMBuildFCmp(b, LLVMRealOGT, intr1(m, "llvm.fabs", back), intr1(m, "llvm.fabs", d), "");
    LLVMValueRef inexact = LLVMBuildFCmp(b, LLVMRealONE, back, d, "");
    LLVMValueRef u = bits32(m, t);
    u = LLVMBuildSelect(b, up, LLVMBuildSub(b, u, ci32(m, 1), ""), u, "");
    u = LLVMBuildSelect(b, inexact, LLVMBuildOr(b, u, ci32(m, 1), ""), u, "");
    return float32(m, u);
}

/* An integer (i1, i32, i64) as float, rounded to odd past 24 bits (see f64_to_f32_odd). */
static LLVMValueRef int_to_f32_odd(lg_mod *m, LLVMValueRef v, int is_bool) {
    LLVMBuilderRef b = m->b;
    if (is_bool) return LLVMBuildUIToFP(b, v, m->t_f32, "");
    LLVMValueRef x = LLVMBuildSExt(b, v, m->t_i64, "");
    if (LLVMTypeOf(v) == m->t_i64) x = v;
    LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, x, cint(m->t_i64, 0), "");
    LLVMValueRef u = LLVMBuildSelect(b, neg, LLVMBuildNeg(b, x, ""), x, "");
    LLVMValueRef args[2] = {u, LLVMConstInt(m->t_i1, 0, 0)};
    LLVMTypeRef t64 = m->t_i64;
    LLVMValueRef nlz = lg_intrinsic(m, "llvm.ctlz", &t64, 1, args, 2);
    /* keep 24 bits: shift by s = 40 - nlz when positive */
    LLVMValueRef s = LLVMBuildSub(b, cint(m->t_i64, 40), nlz, "");
    s = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, s, cint(m->t_i64, 0), ""), s,
                        cint(m->t_i64, 0), "");
    LLVMValueRef mant = LLVMBuildLShr(b, u, s, "");
    LLVMValueRef lost = LLVMBuildAnd(
        b, u, LLVMBuildSub(b, LLVMBuildShl(b, cint(m->t_i64, 1), s, ""), cint(m->t_i64, 1), ""),
        "");
    LLVMValueRef sticky =
        LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntNE, lost, cint(m->t_i64, 0), ""), m->t_i64, "");
    mant = LLVMBuildOr(b, mant, sticky, "");
    LLVMValueRef f = LLVMBuildUIToFP(b, mant, m->t_f32, "");
    LLVMValueRef e = LLVMBuildShl(
        b, LLVMBuildTrunc(b, LLVMBuildAdd(b, s, cint(m->t_i64, 127), ""), m->t_i32, ""),
        ci32(m, 23), "");
    f = LLVMBuildFMul(b, f, float32(m, e), ""); /* times 2^s: exact */
    return LLVMBuildSelect(b, neg, LLVMBuildFNeg(b, f, ""), f, "");
}

/* ---- conversions ------------------------------------------------------------------------- */

/* A compute-type value of dtype `from` converted to dtype `to` (SPEC §1, ir/dtype.c). */
static LLVMValueRef convert(lg_mod *m, LLVMValueRef v, ir_dtype from, ir_dtype to) {
    LLVMBuilderRef b = m->b;
    LLVMTypeRef tt = lg_compute_type(m, to);
    if (from == to) return v;
    int ff = ir_dtype_is_float(from), tf = ir_dtype_is_float(to);
    if (ff && tf) {
        switch (to) {
        case IR_F64: return from == IR_F64 ? v : LLVMBuildFPExt(b, v, m->t_f64, "");
        case IR_F32: return from == IR_F64 ? LLVMBuildFPTrunc(b, v, m->t_f32, "") : v;
        case IR_F16:
            if (from == IR_F64) v = f64_to_f32_odd(m, v);
            return f16_to_f32(m, f32_to_f16(m, v));
        case IR_BF16:
            if (from == IR_F64) v = f64_to_f32_odd(m, v);
            return float32(m, bf16_round_bits(m, v));
        default: break;
        }
    } else if (ff) {
        if (to == IR_BOOL) return LLVMBuildFCmp(b, LLVMRealUNE, v, cfp(LLVMTypeOf(v), 0), "");
        LLVMTypeRef ts[2] = {tt, LLVMTypeOf(v)};
        return lg_intrinsic(m, "llvm.fptosi.sat", ts, 2, &v, 1);
    } else if (tf) {
        int is_bool = from == IR_BOOL;
        switch (to) {
        case IR_F64:
        case IR_F32: return is_bool ? LLVMBuildUIToFP(b, v, tt, "") : LLVMBuildSIToFP(b, v, tt, "");
        case IR_F16: return f16_to_f32(m, f32_to_f16(m, int_to_f32_odd(m, v, is_bool)));
        case IR_BF16: return float32(m, bf16_round_bits(m, int_to_f32_odd(m, v, is_bool)));
        default: break;
        }
    } else {
        if (to == IR_BOOL) return LLVMBuildICmp(b, LLVMIntNE, v, cint(LLVMTypeOf(v), 0), "");
        if (from == IR_BOOL) return LLVMBuildZExt(b, v, tt, "");
        return LLVMBuildIntCast2(b, v, tt, 1, ""); /* i64 -> i32 wraps, i32 -> i64 extends */
    }
    lg_fail(m, "internal error: no conversion from %s to %s", ir_dtypes[from].name,
            ir_dtypes[to].name);
    return LLVMGetUndef(tt);
}

LLVMValueRef lg_round_to(lg_mod *m, ir_dtype t, LLVMValueRef v) {
    return t == IR_F16 || t == IR_BF16 ? convert(m, v, IR_F32, t) : v;
}

/* ---- loads and stores, one pair per dtype (ORDER IR_DTYPE) ---------------------------------- */

typedef LLVMValueRef (*lg_load_fn)(lg_mod *m, LLVMValueRef ptr);
typedef void (*lg_store_fn)(lg_mod *m, LLVMValueRef v, LLVMValueRef ptr);

static LLVMValueRef load_raw(lg_mod *m, LLVMTypeRef t, LLVMValueRef ptr, unsigned align) {
    LLVMValueRef v = LLVMBuildLoad2(m->b, t, ptr, "");
    LLVMSetAlignment(v, align);
    return v;
}

static void store_raw(lg_mod *m, LLVMValueRef v, LLVMValueRef ptr, unsigned align) {
    LLVMSetAlignment(LLVMBuildStore(m->b, v, ptr), align);
}

static LLVMValueRef load_BOOL(lg_mod *m, LLVMValueRef p) {
    return LLVMBuildICmp(m->b, LLVMIntNE, load_raw(m, m->t_i8, p, 1), LLVMConstInt(m->t_i8, 0, 0),
                         "");
}
static LLVMValueRef load_I32(lg_mod *m, LLVMValueRef p) {
    return load_raw(m, m->t_i32, p, 4);
}
static LLVMValueRef load_I64(lg_mod *m, LLVMValueRef p) {
    return load_raw(m, m->t_i64, p, 8);
}
static LLVMValueRef load_F16(lg_mod *m, LLVMValueRef p) {
    return f16_to_f32(m, load_raw(m, m->t_i16, p, 2));
}
static LLVMValueRef load_BF16(lg_mod *m, LLVMValueRef p) {
    LLVMValueRef w = LLVMBuildZExt(m->b, load_raw(m, m->t_i16, p, 2), m->t_i32, "");
    return float32(m, LLVMBuildShl(m->b, w, ci32(m, 16), ""));
}
static LLVMValueRef load_F32(lg_mod *m, LLVMValueRef p) {
    return load_raw(m, m->t_f32, p, 4);
}
static LLVMValueRef load_F64(lg_mod *m, LLVMValueRef p) {
    return load_raw(m, m->t_f64, p, 8);
}

static void store_BOOL(lg_mod *m, LLVMValueRef v, LLVMValueRef p) {
    store_raw(m, LLVMBuildZExt(m->b, v, m->t_i8, ""), p, 1);
}
static void store_I32(lg_mod *m, LLVMValueRef v, LLVMValueRef p) {
    store_raw(m, v, p, 4);
}
static void store_I64(lg_mod *m, LLVMValueRef v, LLVMValueRef p) {
    store_raw(m, v, p, 8);
}
static void store_F16(lg_mod *m, LLVMValueRef v, LLVMValueRef p) {
    store_raw(m, f32_to_f16(m, v), p, 2);
}
static void store_BF16(lg_mod *m, LLVMValueRef v, LLVMValueRef p) {
    LLVMValueRef u = LLVMBuildLShr(m->b, bf16_round_bits(m, v), ci32(m, 16), "");
    store_raw(m, LLVMBuildTrunc(m->b, u, m->t_i16, ""), p, 2);
}
static void store_F32(lg_mod *m, LLVMValueRef v, LLVMValueRef p) {
    store_raw(m, v, p, 4);
}
static void store_F64(lg_mod *m, LLVMValueRef v, LLVMValueRef p) {
    store_raw(m, v, p, 8);
}

static const struct {
    lg_load_fn load;
    lg_store_fn store;
} dtype_table[IR_DTYPE_COUNT] = {
#define IR_DTYPE(E, NAME, BYTES, KIND, RANK) [IR_##E] = {load_##E, store_##E},
#include "ir/dtypes.def"
#undef IR_DTYPE
};

LLVMValueRef lg_load(lg_mod *m, ir_dtype t, LLVMValueRef ptr) {
    return dtype_table[t].load(m, ptr);
}

void lg_store(lg_mod *m, ir_dtype t, LLVMValueRef v, LLVMValueRef ptr) {
    dtype_table[t].store(m, v, ptr);
}

/* ---- element-wise ops, one emitter per op (ORDER IR_OP) ------------------------------------- */

typedef struct lg_args {
    const ir_func *f;
    const ir_node *n;
    ir_dtype t;  /* the node's dtype */
    ir_dtype at; /* its first operand's dtype */
    LLVMValueRef *v;
} lg_args;

typedef LLVMValueRef (*lg_op_fn)(lg_mod *m, const lg_args *a);

static int a_float(const lg_args *a) {
    return ir_dtype_is_float(a->t);
}

static LLVMValueRef op_NEG(lg_mod *m, const lg_args *a) {
    return a_float(a) ? LLVMBuildFNeg(m->b, a->v[0], "") : LLVMBuildNeg(m->b, a->v[0], "");
}
static LLVMValueRef op_NOT(lg_mod *m, const lg_args *a) {
    return LLVMBuildNot(m->b, a->v[0], "");
}
static LLVMValueRef op_ADD(lg_mod *m, const lg_args *a) {
    return a_float(a) ? LLVMBuildFAdd(m->b, a->v[0], a->v[1], "")
                      : LLVMBuildAdd(m->b, a->v[0], a->v[1], "");
}
static LLVMValueRef op_SUB(lg_mod *m, const lg_args *a) {
    return a_float(a) ? LLVMBuildFSub(m->b, a->v[0], a->v[1], "")
                      : LLVMBuildSub(m->b, a->v[0], a->v[1], "");
}
static LLVMValueRef op_MUL(lg_mod *m, const lg_args *a) {
    return a_float(a) ? LLVMBuildFMul(m->b, a->v[0], a->v[1], "")
                      : LLVMBuildMul(m->b, a->v[0], a->v[1], "");
}

/* Integer division and remainder with a divisor that cannot trap: 0 and -1 are replaced by 1
 * and their results chosen afterwards (x / 0 = 0, x / -1 = -x wrapping, x % 0 = x % -1 = 0). */
static LLVMValueRef int_divrem(lg_mod *m, const lg_args *a, int rem) {
    LLVMBuilderRef b = m->b;
    LLVMTypeRef t = LLVMTypeOf(a->v[0]);
    LLVMValueRef x = a->v[0], y = a->v[1];
    LLVMValueRef zero = cint(t, 0), one = cint(t, 1);
    LLVMValueRef is0 = LLVMBuildICmp(b, LLVMIntEQ, y, zero, "");
    LLVMValueRef ism1 = LLVMBuildICmp(b, LLVMIntEQ, y, cint(t, -1), "");
    LLVMValueRef bad = LLVMBuildOr(b, is0, ism1, "");
    LLVMValueRef safe = LLVMBuildSelect(b, bad, one, y, "");
    if (rem) return LLVMBuildSelect(b, bad, zero, LLVMBuildSRem(b, x, safe, ""), "");
    LLVMValueRef q = LLVMBuildSDiv(b, x, safe, "");
    q = LLVMBuildSelect(b, ism1, LLVMBuildNeg(b, x, ""), q, "");
    return LLVMBuildSelect(b, is0, zero, q, "");
}

static const char *math_name(lg_mod *m, const lg_args *a, const char *f32, const char *f64,
                             const char *fast) {
    if (a->t == IR_F64) return f64;
    return m->fast_math ? fast : f32;
}

static LLVMValueRef op_DIV(lg_mod *m, const lg_args *a) {
    return a_float(a) ? LLVMBuildFDiv(m->b, a->v[0], a->v[1], "") : int_divrem(m, a, 0);
}
/* Under --fast-math only, x / r for a float r computed outside the loop that divides by it (a
 * row's sum in softmax): one division per row instead of one per element, whose throughput
 * is a fraction of a multiply's (softmax gained a tenth: bench/RESULTS.md). Without it the
 * division is the program's, one correctly rounded division an element, as --no-fuse and the
 * CUDA target divide: the product below differs from it in the last bit of about a quarter of
 * softmax's results, and SPEC §5 asks for one answer, bit for bit (1-3% of softmax's time at
 * two threads, 8% on one core: bench/RESULTS.md).
 * x / r becomes (x * s) * inv with inv = 1 / (r * s), built right after r so that it is
 * hoisted before the loop is vectorized. s is 1, or 2^64 (2^512 for double) where |r| is so
 * small that 1 / r would overflow: both scalings are exact, so the result is rounded twice
 * (inv, then the product), within an ulp of the division; a huge r makes inv subnormal,
 * still within 2^-21 (2^-50) relative. Zeros, infinities and NaN of r and x give what the
 * division gives. */
LLVMValueRef lg_fdiv_invariant(lg_mod *m, LLVMValueRef x, LLVMValueRef r) {
    LLVMTypeRef t = LLVMTypeOf(r);
    int dbl = t == m->t_f64;
    LLVMBuilderRef hb = LLVMCreateBuilderInContext(m->ctx);
    LLVMValueRef after = LLVMGetNextInstruction(r);
    while (after && LLVMIsAPHINode(after))
        after = LLVMGetNextInstruction(after);
    if (after)
        LLVMPositionBuilderBefore(hb, after);
    else
        LLVMPositionBuilderAtEnd(hb, LLVMGetInstructionParent(r));
    LLVMBuilderRef b = m->b;
    m->b = hb;
    LLVMValueRef tiny = LLVMBuildFCmp(hb, LLVMRealOLT, intr1(m, "llvm.fabs", r),
                                      cfp(t, dbl ? 0x1p-512 : 0x1p-64), "");
    m->b = b;
    LLVMValueRef s = LLVMBuildSelect(hb, tiny, cfp(t, dbl ? 0x1p512 : 0x1p64), cfp(t, 1.0), "");
    LLVMValueRef inv = LLVMBuildFDiv(hb, cfp(t, 1.0), LLVMBuildFMul(hb, r, s, ""), "inv");
    LLVMDisposeBuilder(hb);
    return LLVMBuildFMul(m->b, LLVMBuildFMul(m->b, x, s, ""), inv, "");
}

static LLVMValueRef op_MOD(lg_mod *m, const lg_args *a) {
    if (!a_float(a)) return int_divrem(m, a, 1);
    return math_call(m, math_name(m, a, "llvm_math_fmodf", "llvm_math_fmod", "llvm_math_fmodf"),
                     a->v, 2);
}

static LLVMValueRef compare(lg_mod *m, const lg_args *a, LLVMRealPredicate fp, LLVMIntPredicate sp,
                            LLVMIntPredicate up) {
    if (ir_dtype_is_float(a->at)) return LLVMBuildFCmp(m->b, fp, a->v[0], a->v[1], "");
    /* bool is i1, where 1 is -1 to a signed comparison */
    return LLVMBuildICmp(m->b, a->at == IR_BOOL ? up : sp, a->v[0], a->v[1], "");
}
static LLVMValueRef op_EQ(lg_mod *m, const lg_args *a) {
    return compare(m, a, LLVMRealOEQ, LLVMIntEQ, LLVMIntEQ);
}
static LLVMValueRef op_NE(lg_mod *m, const lg_args *a) {
    return compare(m, a, LLVMRealUNE, LLVMIntNE, LLVMIntNE);
}
static LLVMValueRef op_LT(lg_mod *m, const lg_args *a) {
    return compare(m, a, LLVMRealOLT, LLVMIntSLT, LLVMIntULT);
}
static LLVMValueRef op_LE(lg_mod *m, const lg_args *a) {
    return compare(m, a, LLVMRealOLE, LLVMIntSLE, LLVMIntULE);
}
static LLVMValueRef op_GT(lg_mod *m, const lg_args *a) {
    return compare(m, a, LLVMRealOGT, LLVMIntSGT, LLVMIntUGT);
}
static LLVMValueRef op_GE(lg_mod *m, const lg_args *a) {
    return compare(m, a, LLVMRealOGE, LLVMIntSGE, LLVMIntUGE);
}
static LLVMValueRef op_AND(lg_mod *m, const lg_args *a) {
    return LLVMBuildAnd(m->b, a->v[0], a->v[1], "");
}
static LLVMValueRef op_OR(lg_mod *m, const lg_args *a) {
    return LLVMBuildOr(m->b, a->v[0], a->v[1], "");
}
static LLVMValueRef op_WHERE(lg_mod *m, const lg_args *a) {
    return LLVMBuildSelect(m->b, a->v[0], a->v[1], a->v[2], "");
}

static LLVMValueRef op_ABS(lg_mod *m, const lg_args *a) {
    if (a_float(a)) return intr1(m, "llvm.fabs", a->v[0]);
    /* INT_MIN stays INT_MIN (wrap-around), so it must not be poison */
    return intr2(m, "llvm.abs", a->v[0], LLVMConstInt(m->t_i1, 0, 0));
}
static LLVMValueRef op_SIGN(lg_mod *m, const lg_args *a) {
    LLVMBuilderRef b = m->b;
    LLVMValueRef x = a->v[0];
    LLVMTypeRef t = LLVMTypeOf(x);
    if (!a_float(a)) {
        LLVMValueRef gt = LLVMBuildICmp(b, LLVMIntSGT, x, cint(t, 0), "");
        LLVMValueRef lt = LLVMBuildICmp(b, LLVMIntSLT, x, cint(t, 0), "");
        return LLVMBuildSub(b, LLVMBuildZExt(b, gt, t, ""), LLVMBuildZExt(b, lt, t, ""), "");
    }
    /* -1, +1, +0 for either zero, NaN for NaN */
    LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, cfp(t, 0), ""), cfp(t, -1),
                                     cfp(t, 0), "");
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, x, cfp(t, 0), ""), cfp(t, 1), r, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, r, "");
}

/* numpy's maximum/minimum, as the reference has them: a NaN operand wins (the sum of the two
 * is that NaN, quieted), else b if it is strictly greater (less), else a */
static LLVMValueRef fminmax(lg_mod *m, LLVMValueRef x, LLVMValueRef y, int max) {
    LLVMBuilderRef b = m->b;
    LLVMValueRef pick = LLVMBuildFCmp(b, max ? LLVMRealOGT : LLVMRealOLT, y, x, "");
    LLVMValueRef r = LLVMBuildSelect(b, pick, y, x, "");
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, y, "");
    return LLVMBuildSelect(b, nan, LLVMBuildFAdd(b, x, y, ""), r, "");
}

static LLVMValueRef iminmax(lg_mod *m, LLVMValueRef x, LLVMValueRef y, int max) {
    LLVMValueRef pick = LLVMBuildICmp(m->b, max ? LLVMIntSGT : LLVMIntSLT, y, x, "");
    return LLVMBuildSelect(m->b, pick, y, x, "");
}

static LLVMValueRef op_MINIMUM(lg_mod *m, const lg_args *a) {
    return a_float(a) ? fminmax(m, a->v[0], a->v[1], 0) : iminmax(m, a->v[0], a->v[1], 0);
}
static LLVMValueRef op_MAXIMUM(lg_mod *m, const lg_args *a) {
    return a_float(a) ? fminmax(m, a->v[0], a->v[1], 1) : iminmax(m, a->v[0], a->v[1], 1);
}
static LLVMValueRef op_CLAMP(lg_mod *m, const lg_args *a) {
    if (a_float(a)) return fminmax(m, fminmax(m, a->v[0], a->v[1], 1), a->v[2], 0);
    return iminmax(m, iminmax(m, a->v[0], a->v[1], 1), a->v[2], 0);
}

static LLVMValueRef op_SQRT(lg_mod *m, const lg_args *a) {
    return intr1(m, "llvm.sqrt", a->v[0]);
}
static LLVMValueRef op_RSQRT(lg_mod *m, const lg_args *a) {
    LLVMValueRef s = intr1(m, "llvm.sqrt", a->v[0]);
    return LLVMBuildFDiv(m->b, cfp(LLVMTypeOf(s), 1.0), s, "");
}
static LLVMValueRef op_RELU(lg_mod *m, const lg_args *a) {
    /* x when x > 0 or NaN, else +0 (relu(-0) is +0) */
    LLVMTypeRef t = LLVMTypeOf(a->v[0]);
    LLVMValueRef keep = LLVMBuildFCmp(m->b, LLVMRealUGT, a->v[0], cfp(t, 0), "");
    return LLVMBuildSelect(m->b, keep, a->v[0], cfp(t, 0), "");
}
static LLVMValueRef op_FLOOR(lg_mod *m, const lg_args *a) {
    return intr1(m, "llvm.floor", a->v[0]);
}
static LLVMValueRef op_CEIL(lg_mod *m, const lg_args *a) {
    return intr1(m, "llvm.ceil", a->v[0]);
}
static LLVMValueRef op_ROUND(lg_mod *m, const lg_args *a) {
    return intr1(m, "llvm.roundeven", a->v[0]);
}
static LLVMValueRef op_TRUNC(lg_mod *m, const lg_args *a) {
    return intr1(m, "llvm.trunc", a->v[0]);
}
static LLVMValueRef op_ISNAN(lg_mod *m, const lg_args *a) {
    return LLVMBuildFCmp(m->b, LLVMRealUNO, a->v[0], a->v[0], "");
}
static LLVMValueRef op_ISINF(lg_mod *m, const lg_args *a) {
    LLVMValueRef x = intr1(m, "llvm.fabs", a->v[0]);
    return LLVMBuildFCmp(m->b, LLVMRealOEQ, x, cfp(LLVMTypeOf(x), __builtin_inf()), "");
}
static LLVMValueRef op_COPYSIGN(lg_mod *m, const lg_args *a) {
    return intr2(m, "llvm.copysign", a->v[0], a->v[1]);
}

/* The transcendentals: op, then the llvm_math function for f32, f64 and f32 --fast-math, from
 * the table both code generators read (codegen/plan_math.h). */
#define LG_MATH_OP(E, F32, F64, FAST)                                                              \
    static LLVMValueRef op_##E(lg_mod *m, const lg_args *a) {                                      \
        return math_call(                                                                          \
            m, math_name(m, a, "llvm_math_" #F32, "llvm_math_" #F64, "llvm_math_" #FAST), a->v,    \
            ir_ops[IR_OP_##E].arity);                                                              \
    }
PLAN_MATH_OPS(LG_MATH_OP)
#undef LG_MATH_OP

static LLVMValueRef op_EXP(lg_mod *m, const lg_args *a) {
    const char *f32 =
        plan_exp_nonpositive(a->f, a->n->args[0]) ? "llvm_math_expf_nonpos" : "llvm_math_expf";
    return math_call(m, math_name(m, a, f32, "llvm_math_exp", "llvm_math_fast_expf"), a->v, 1);
}

static LLVMValueRef op_CAST(lg_mod *m, const lg_args *a) {
    return convert(m, a->v[0], a->at, a->t);
}
static LLVMValueRef op_BROADCAST(lg_mod *m, const lg_args *a) {
    (void)m;
    return a->v[0]; /* every value is evaluated at the point of the kernel's domain */
}

/* The reductions' emitters combine two accumulators (see lg_red_combine). */
static LLVMValueRef red_sum(lg_mod *m, const lg_args *a) {
    LLVMTypeRef t = LLVMTypeOf(a->v[0]);
    if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind) return LLVMBuildAdd(m->b, a->v[0], a->v[1], "");
    return LLVMBuildFAdd(m->b, a->v[0], a->v[1], "");
}
static LLVMValueRef op_SUM(lg_mod *m, const lg_args *a) {
    return red_sum(m, a);
}
static LLVMValueRef op_MEAN(lg_mod *m, const lg_args *a) {
    return red_sum(m, a);
}
static LLVMValueRef op_PROD(lg_mod *m, const lg_args *a) {
    LLVMTypeRef t = LLVMTypeOf(a->v[0]);
    if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind) return LLVMBuildMul(m->b, a->v[0], a->v[1], "");
    return LLVMBuildFMul(m->b, a->v[0], a->v[1], "");
}
/* max and min accumulate integers: the values themselves, or the order keys of floats */
static LLVMValueRef op_MAX(lg_mod *m, const lg_args *a) {
    return iminmax(m, a->v[0], a->v[1], 1);
}
static LLVMValueRef op_MIN(lg_mod *m, const lg_args *a) {
    return iminmax(m, a->v[0], a->v[1], 0);
}

/* rand: Philox4x32-10 of (seed, index, the node's stream), the reference's own C (ir/philox.h)
 * through the math bitcode, so the bits are the same */
static LLVMValueRef op_RAND(lg_mod *m, const lg_args *a) {
    LLVMTypeRef ps[3] = {m->t_i64, m->t_i64, m->t_i32};
    LLVMTypeRef fty = LLVMFunctionType(m->t_f32, ps, 3, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(m->mod, "llvm_math_rand");
    if (!fn) fn = LLVMAddFunction(m->mod, "llvm_math_rand", fty);
    m->math_calls++;
    LLVMValueRef args[3] = {a->v[0], a->v[1],
                            LLVMConstInt(m->t_i32, (unsigned long long)a->n->index, 0)};
    return LLVMBuildCall2(m->b, fty, fn, args, 3, "");
}

/* leaves and outputs are not computed by an emitter */
#define op_INPUT NULL
#define op_CONST NULL
#define op_INDEX NULL
/* argmax and argmin are lowered by the front end */
#define op_ARGMAX NULL
#define op_GRAD   NULL
#define op_ARGMIN NULL
#define op_OUTPUT NULL

static const lg_op_fn op_table[IR_OP_COUNT] = {
#define IR_OP(E, CLASS, ARITY, NAME, FLAGS, IDENTITY, DERIV) [IR_OP_##E] = op_##E,
#include "ir/ops.def"
#undef IR_OP
};

LLVMValueRef lg_emit_op(lg_mod *m, const ir_func *f, const ir_node *n, LLVMValueRef *args) {
    lg_op_fn fn = op_table[n->op];
    LLVMTypeRef t = lg_compute_type(m, n->dtype);
    if (!fn || ir_ops[n->op].cls == IR_CLASS_REDUCE) {
        lg_fail(m, "internal error: %s is not an element-wise op", ir_ops[n->op].name);
        return LLVMGetUndef(t);
    }
    lg_args a = {f, n, n->dtype, f->nodes[n->args[0]].dtype, args};
    if ((ir_ops[n->op].flags & IR_OPF_NUMERIC) && n->dtype == IR_BOOL) {
        /* arithmetic on bool: computed on 0/1 in i64 and made bool again, as the reference
         * wraps an integer result to bool (x != 0) */
        LLVMValueRef w[3];
        for (int i = 0; i < ir_ops[n->op].arity; i++)
            w[i] = LLVMBuildZExt(m->b, args[i], m->t_i64, "");
        lg_args wa = {f, n, IR_I64, IR_I64, w};
        LLVMValueRef r = fn(m, &wa);
        return LLVMBuildICmp(m->b, LLVMIntNE, r, cint(m->t_i64, 0), "");
    }
    return fn(m, &a);
}

/* ---- reductions -------------------------------------------------------------------------- */

static int red_float_key(const ir_func *f, const ir_node *n) {
    return ir_dtype_is_float(f->nodes[n->args[0]].dtype) &&
           (n->op == IR_OP_MAX || n->op == IR_OP_MIN);
}

/* The dtype reduction n accumulates in: a float sum or product in its operand's; a float
 * max or min in i32 or i64, the order keys of its floats; integers and bools (as 0/1) in
 * i64 where the operand or the result is i64 or bool, else in i32. */
static ir_dtype red_dtype(const ir_func *f, const ir_node *n) {
    ir_dtype at = f->nodes[n->args[0]].dtype;
    if (ir_dtype_is_float(at)) {
        if (red_float_key(f, n)) return at == IR_F64 ? IR_I64 : IR_I32;
        return at;
    }
    if (at == IR_BOOL || at == IR_I64 || n->dtype == IR_I64) return IR_I64;
    return IR_I32;
}

LLVMTypeRef lg_red_type(lg_mod *m, const ir_func *f, const ir_node *n) {
    return lg_compute_type(m, red_dtype(f, n));
}

/* The identity in the accumulator's dtype: for max and min of floats, whose accumulators are
 * order keys, the key type's extreme lies past every float's key, as -inf's and +inf's
 * would. */
LLVMValueRef lg_red_identity(lg_mod *m, const ir_func *f, const ir_node *n) {
    LLVMTypeRef t = lg_red_type(m, f, n);
    if (ir_ops[n->op].identity == IR_ID_NONE) {
        lg_fail(m, "internal error: %s is no reduction", ir_ops[n->op].name);
        return LLVMGetUndef(t);
    }
    ir_dtype rt = red_dtype(f, n);
    ir_scalar id = ir_reduce_identity(n->op, rt);
    return ir_dtype_is_float(rt) ? cfp(t, id.f) : cint(t, id.i);
}

/* The order key of a float: an integer that compares as the float does (-0 below +0), with
 * NaN mapped past every number so that max and min return it. */
static LLVMValueRef float_key(lg_mod *m, LLVMValueRef x, int max) {
    LLVMBuilderRef b = m->b;
    int wide = LLVMTypeOf(x) == m->t_f64;
    LLVMTypeRef it = wide ? m->t_i64 : m->t_i32;
    int64_t big = wide ? INT64_MAX : INT32_MAX;
    LLVMValueRef u = LLVMBuildBitCast(b, x, it, "");
    LLVMValueRef s = LLVMBuildAShr(b, u, cint(it, wide ? 63 : 31), "");
    LLVMValueRef k = LLVMBuildXor(b, u, LLVMBuildAnd(b, s, cint(it, big), ""), "");
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
    return LLVMBuildSelect(b, nan, cint(it, max ? big : -big - 1), k, "");
}

static LLVMValueRef key_float(lg_mod *m, LLVMValueRef k, LLVMTypeRef ft) {
    LLVMBuilderRef b = m->b;
    LLVMTypeRef it = LLVMTypeOf(k);
    int wide = it == m->t_i64;
    int64_t big = wide ? INT64_MAX : INT32_MAX;
    LLVMValueRef s = LLVMBuildAShr(b, k, cint(it, wide ? 63 : 31), "");
    LLVMValueRef u = LLVMBuildXor(b, k, LLVMBuildAnd(b, s, cint(it, big), ""), "");
    return LLVMBuildBitCast(b, u, ft, "");
}

LLVMValueRef lg_red_pre(lg_mod *m, const ir_func *f, const ir_node *n, LLVMValueRef x) {
    ir_dtype at = f->nodes[n->args[0]].dtype;
    LLVMTypeRef t = lg_red_type(m, f, n);
    if (red_float_key(f, n)) return float_key(m, x, n->op == IR_OP_MAX);
    if (ir_dtype_is_float(at) || LLVMTypeOf(x) == t) return x;
    if (at == IR_BOOL) return LLVMBuildZExt(m->b, x, t, "");
    return LLVMBuildSExt(m->b, x, t, "");
}

LLVMValueRef lg_red_combine(lg_mod *m, const ir_func *f, const ir_node *n, LLVMValueRef acc,
                            LLVMValueRef x) {
    LLVMValueRef v[2] = {acc, x};
    lg_args a = {f, n, n->dtype, f->nodes[n->args[0]].dtype, v};
    lg_op_fn fn = op_table[n->op];
    if (!fn || ir_ops[n->op].cls != IR_CLASS_REDUCE) {
        lg_fail(m, "internal error: %s is no reduction", ir_ops[n->op].name);
        return acc;
    }
    return fn(m, &a);
}

LLVMValueRef lg_red_post(lg_mod *m, const ir_func *f, const ir_node *n, LLVMValueRef acc,
                         LLVMValueRef count) {
    LLVMBuilderRef b = m->b;
    ir_dtype at = f->nodes[n->args[0]].dtype;
    LLVMTypeRef rt = lg_compute_type(m, n->dtype);
    if (red_float_key(f, n)) return key_float(m, acc, rt);
    if (ir_dtype_is_float(at)) {
        if (n->op == IR_OP_MEAN)
            acc = LLVMBuildFDiv(b, acc, LLVMBuildSIToFP(b, count, LLVMTypeOf(acc), ""), "");
        return acc;
    }
    if (n->dtype == IR_BOOL) return LLVMBuildICmp(b, LLVMIntNE, acc, cint(LLVMTypeOf(acc), 0), "");
    if (LLVMTypeOf(acc) == rt) return acc;
    return LLVMBuildIntCast2(b, acc, rt, 1, "");
}

/* ---- float max and min in a streaming sweep ------------------------------------------------
 *
 * The order key above costs five operations per element before the max. A sweep over
 * contiguous elements (rows, chunks) instead keeps three integer reductions of the raw bits,
 * one operation each, which the loop vectorizer recognizes: the signed max S, the unsigned
 * min Umin and the unsigned max Umax. Non-negative floats (sign bit clear) order as their
 * bits, signed or not, and lie below every negative one unsigned; negative floats order
 * inversely to their bits. So:
 *   NaN present   S above +inf's bits (a positive NaN), or Umax above -inf's (a negative one)
 *   max           S when some element has a clear sign bit (S >= 0), else Umin (the negative
 *                 of least magnitude: -0 above -1)
 *   min           Umax when some element is negative (Umax has the sign bit), else Umin
 * which is exactly the order key's result, -0 below +0 included. The sweep ends by turning
 * the three into the order key (lg_red_parts_key), so totals, partials and finalizes are
 * unchanged. Half the instructions of softmax's max pass. */

int lg_red_nparts(lg_mod *m, const ir_func *f, const ir_node *n) {
    (void)m;
    return red_float_key(f, n) ? LG_RED_PARTS : 1;
}

LLVMValueRef lg_red_part_identity(lg_mod *m, const ir_func *f, const ir_node *n, int k) {
    LLVMTypeRef t = lg_red_type(m, f, n);
    int64_t smin = t == m->t_i64 ? INT64_MIN : INT32_MIN;
    return cint(t, k == 0 ? smin : k == 1 ? -1 : 0); /* S, Umin (all ones), Umax */
}

LLVMValueRef lg_red_part_pre(lg_mod *m, const ir_func *f, const ir_node *n, LLVMValueRef x) {
    return LLVMBuildBitCast(m->b, x, lg_red_type(m, f, n), "");
}

LLVMValueRef lg_red_part_combine(lg_mod *m, const ir_func *f, const ir_node *n, int k,
                                 LLVMValueRef acc, LLVMValueRef x) {
    (void)f;
    (void)n;
    static const LLVMIntPredicate pred[3] = {LLVMIntSGT, LLVMIntULT, LLVMIntUGT};
    LLVMValueRef pick = LLVMBuildICmp(m->b, pred[k], x, acc, "");
    return LLVMBuildSelect(m->b, pick, x, acc, "");
}

LLVMValueRef lg_red_parts_key(lg_mod *m, const ir_func *f, const ir_node *n,
                              const LLVMValueRef *parts) {
    LLVMBuilderRef b = m->b;
    LLVMTypeRef t = lg_red_type(m, f, n);
    int wide = t == m->t_i64;
    LLVMTypeRef ft = wide ? m->t_f64 : m->t_f32;
    int64_t inf = wide ? INT64_C(0x7ff0000000000000) : INT64_C(0x7f800000);
    LLVMValueRef sign = wide ? LLVMConstInt(t, UINT64_C(0x8000000000000000), 0)
                             : LLVMConstInt(t, UINT64_C(0x80000000), 0);
    LLVMValueRef s = parts[0], umin = parts[1], umax = parts[2];
    LLVMValueRef nan = LLVMBuildOr(
        b, LLVMBuildICmp(b, LLVMIntSGT, s, cint(t, inf), ""),
        LLVMBuildICmp(b, LLVMIntUGT, umax, LLVMBuildOr(b, sign, cint(t, inf), ""), ""), "");
    LLVMValueRef bits;
    if (n->op == IR_OP_MAX)
        bits = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGE, s, cint(t, 0), ""), s, umin, "");
    else
        bits = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGE, umax, sign, ""), umax, umin, "");
    LLVMValueRef key = float_key(m, LLVMBuildBitCast(b, bits, ft, ""), n->op == IR_OP_MAX);
    int64_t big = wide ? INT64_MAX : INT32_MAX;
    return LLVMBuildSelect(b, nan, cint(t, n->op == IR_OP_MAX ? big : -big - 1), key, "");
}
