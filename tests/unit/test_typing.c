/* tests/unit/test_typing.c: the dtype rules of ops (ir/typing.c) and the identities of the
 * reductions (ir_reduce_identity), pinned by hand where SPEC §1 states them; then, for every
 * op and dtype, the rules agree with the verifier (a node built by them verifies) and each
 * identity is one (combined with any value, the value is left). */
#include "ir/ir.h"
#include "ir/scalar.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

static ir_dtype result1(ir_op op, ir_dtype a) {
    return ir_op_result_dtype(op, &a, IR_DTYPE_COUNT);
}

static ir_dtype result2(ir_op op, ir_dtype a, ir_dtype b) {
    ir_dtype args[2] = {a, b};
    return ir_op_result_dtype(op, args, IR_DTYPE_COUNT);
}

static void test_pinned_rules(void) {
    CHECK(result2(IR_OP_ADD, IR_I32, IR_F16) == IR_F16);
    CHECK(result2(IR_OP_ADD, IR_F16, IR_BF16) == IR_F32);
    CHECK(result2(IR_OP_MOD, IR_I32, IR_I64) == IR_I64);
    CHECK(result2(IR_OP_LT, IR_F32, IR_F32) == IR_BOOL);
    CHECK(result2(IR_OP_AND, IR_BOOL, IR_BOOL) == IR_BOOL);
    CHECK(result1(IR_OP_NEG, IR_I32) == IR_I32);
    CHECK(result1(IR_OP_EXP, IR_I32) == IR_F32);
    CHECK(result1(IR_OP_EXP, IR_BOOL) == IR_F32);
    CHECK(result1(IR_OP_EXP, IR_F16) == IR_F16);
    CHECK(result2(IR_OP_POW, IR_I64, IR_F64) == IR_F64);
    CHECK(result1(IR_OP_ISNAN, IR_F64) == IR_BOOL);
    CHECK(result1(IR_OP_ABS, IR_I64) == IR_I64);
    ir_dtype sel[3] = {IR_BOOL, IR_I32, IR_F64};
    CHECK(ir_op_result_dtype(IR_OP_WHERE, sel, IR_DTYPE_COUNT) == IR_F64);
    /* sums and products of bool and i32 widen; the other reductions keep the dtype */
    CHECK(result1(IR_OP_SUM, IR_BOOL) == IR_I64);
    CHECK(result1(IR_OP_SUM, IR_I32) == IR_I64);
    CHECK(result1(IR_OP_PROD, IR_I32) == IR_I64);
    CHECK(result1(IR_OP_SUM, IR_I64) == IR_I64);
    CHECK(result1(IR_OP_PROD, IR_F16) == IR_F16);
    CHECK(result1(IR_OP_MAX, IR_I32) == IR_I32);
    CHECK(result1(IR_OP_MIN, IR_BOOL) == IR_BOOL);
    CHECK(result1(IR_OP_MEAN, IR_BF16) == IR_BF16);
    /* a cast gives its target, a leaf its own dtype; broadcast and output keep the operand's */
    ir_dtype f32 = IR_F32;
    CHECK(ir_op_result_dtype(IR_OP_CAST, &f32, IR_I32) == IR_I32);
    CHECK(ir_op_result_dtype(IR_OP_CONST, NULL, IR_F16) == IR_F16);
    CHECK(result1(IR_OP_BROADCAST, IR_BF16) == IR_BF16);
    CHECK(result1(IR_OP_OUTPUT, IR_I64) == IR_I64);

    CHECK(ir_op_operand_dtype(IR_OP_AND, 1, IR_I32) == IR_BOOL);
    CHECK(ir_op_operand_dtype(IR_OP_WHERE, 0, IR_F32) == IR_BOOL);
    CHECK(ir_op_operand_dtype(IR_OP_WHERE, 2, IR_F32) == IR_F32);
    CHECK(ir_op_operand_dtype(IR_OP_EXP, 0, IR_I64) == IR_F32);
    CHECK(ir_op_operand_dtype(IR_OP_ISINF, 0, IR_BOOL) == IR_F32);
    CHECK(ir_op_operand_dtype(IR_OP_ISINF, 0, IR_F64) == IR_F64);
    CHECK(ir_op_operand_dtype(IR_OP_SUM, 0, IR_I32) == IR_I64);
    CHECK(ir_op_operand_dtype(IR_OP_MAX, 0, IR_I32) == IR_I32);
    CHECK(ir_op_operand_dtype(IR_OP_LT, 1, IR_I64) == IR_I64);
}

/* For every element-wise op and reduction and every dtype its operands may promote to, the
 * node the rules make (operands converted as ir_op_operand_dtype says, the result of
 * ir_op_result_dtype) is one the verifier accepts; the one exception is mean, which the front
 * end rejects rather than converts for integers. (argmax and argmin never reach the IR: the
 * front end lowers them.) */
static void test_rules_verify(void) {
    for (int op = 0; op < IR_OP_COUNT; op++) {
        int cls = ir_ops[op].cls;
        if (cls != IR_CLASS_EW && cls != IR_CLASS_REDUCE) continue;
        if (ir_ops[op].flags & (IR_OPF_ARGREDUCE | IR_OPF_GRADREQ)) continue;
        for (int t = 0; t < IR_DTYPE_COUNT; t++) {
            if (op == IR_OP_MEAN && !ir_dtype_is_float((ir_dtype)t)) continue;
            ir_arena a;
            ir_arena_init(&a);
            ir_func *f = ir_func_new(ir_module_new(&a), "f");
            ir_shape s = {1, {ir_dim_sym(ir_func_symbol(f, "N"))}};
            ir_dtype argt[3];
            ir_ref args[3];
            int arity = ir_ops[op].arity;
            for (int i = 0; i < arity; i++) {
                argt[i] = ir_op_operand_dtype((ir_op)op, i, (ir_dtype)t);
                char name[3] = {'a', (char)('0' + i), 0};
                args[i] = ir_add_input(f, name, argt[i], &s);
            }
            ir_dtype rt = ir_op_result_dtype((ir_op)op, argt, IR_DTYPE_COUNT);
            ir_ref r = cls == IR_CLASS_EW ? ir_ew(f, (ir_op)op, rt, &s, arity, args)
                                          : ir_reduce(f, (ir_op)op, args[0], 1, rt);
            char err[256] = "";
            CHECK_MSG(ir_verify_node(f, r, err, sizeof err) == 0, "%s of %s: %s", ir_ops[op].name,
                      ir_dtypes[t].name, err);
            ir_arena_free(&a);
        }
    }
}

static void test_pinned_identities(void) {
    CHECK(ir_reduce_identity(IR_OP_SUM, IR_I32).i == 0);
    CHECK(ir_reduce_identity(IR_OP_MEAN, IR_F32).f == 0.0);
    CHECK(ir_reduce_identity(IR_OP_PROD, IR_I64).i == 1);
    CHECK(ir_reduce_identity(IR_OP_PROD, IR_BF16).f == 1.0);
    CHECK(ir_reduce_identity(IR_OP_MAX, IR_F16).f == -INFINITY);
    CHECK(ir_reduce_identity(IR_OP_MIN, IR_F64).f == INFINITY);
    CHECK(ir_reduce_identity(IR_OP_MAX, IR_I32).i == INT32_MIN);
    CHECK(ir_reduce_identity(IR_OP_MIN, IR_I32).i == INT32_MAX);
    CHECK(ir_reduce_identity(IR_OP_MAX, IR_I64).i == INT64_MIN);
    CHECK(ir_reduce_identity(IR_OP_MIN, IR_I64).i == INT64_MAX);
    CHECK(ir_reduce_identity(IR_OP_MAX, IR_BOOL).i == 0);
    CHECK(ir_reduce_identity(IR_OP_MIN, IR_BOOL).i == 1);
    /* no identity for what is no reduction; the unused field is 0 */
    ir_scalar none = ir_reduce_identity(IR_OP_ADD, IR_F32);
    CHECK(none.f == 0.0 && none.i == 0);
    CHECK(ir_reduce_identity(IR_OP_PROD, IR_F32).i == 0);
    CHECK(ir_reduce_identity(IR_OP_MAX, IR_I32).f == 0.0);
}

/* The element-wise op that combines two partial results of reduction op (this test's own
 * statement of what each reduction does). */
static ir_op combiner(ir_op op) {
    switch (op) {
    case IR_OP_SUM:
    case IR_OP_MEAN: return IR_OP_ADD;
    case IR_OP_PROD: return IR_OP_MUL;
    case IR_OP_MAX: return IR_OP_MAXIMUM;
    case IR_OP_MIN: return IR_OP_MINIMUM;
    default: return IR_OP_COUNT;
    }
}

/* Every reduction's identity, combined with values of every dtype (extremes, zeros of both
 * signs, infinities, NaN), leaves the value. */
static void test_identities_are_identities(void) {
    static const double floats[] = {0.0,   -0.0,    1.0,      -2.5,      65504.0,
                                    1e300, -1e-300, INFINITY, -INFINITY, NAN};
    static const int64_t ints[] = {0, 1, -1, 7, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX};
    int n = 0;
    for (int op = 0; op < IR_OP_COUNT; op++) {
        if (ir_ops[op].identity == IR_ID_NONE) continue;
        CHECK_MSG(combiner((ir_op)op) != IR_OP_COUNT, "no combiner for %s", ir_ops[op].name);
        if (combiner((ir_op)op) == IR_OP_COUNT) continue;
        for (int t = 0; t < IR_DTYPE_COUNT; t++) {
            int fl = ir_dtype_is_float((ir_dtype)t);
            int nv = fl ? (int)(sizeof floats / sizeof *floats) : (int)(sizeof ints / sizeof *ints);
            for (int k = 0; k < nv; k++) {
                ir_scalar args[2] = {ir_reduce_identity((ir_op)op, (ir_dtype)t), {0, 0}};
                if (fl)
                    args[1].f = floats[k];
                else
                    args[1].i = ir_wrap_int(ints[k], (ir_dtype)t);
                ir_scalar r = {0, 0};
                int rc = ir_scalar_eval(combiner((ir_op)op), (ir_dtype)t, (ir_dtype)t, args, 2, &r);
                int same =
                    fl ? (isnan(args[1].f) ? isnan(r.f)
                                           : r.f == args[1].f && signbit(r.f) == signbit(args[1].f))
                       : r.i == args[1].i;
                /* 0 + -0 is +0: the sum's identity leaves every value but the sign of -0 */
                if (fl && combiner((ir_op)op) == IR_OP_ADD && args[1].f == 0.0) same = r.f == 0.0;
                CHECK_MSG(rc == 0 && same, "%s identity in %s with value %d", ir_ops[op].name,
                          ir_dtypes[t].name, k);
                n++;
            }
        }
    }
    CHECK(n > 0);
}

int main(void) {
    test_pinned_rules();
    test_rules_verify();
    test_pinned_identities();
    test_identities_are_identities();
    return check_exit("test_typing");
}
