/* ir/interp.c: the reference interpreter, the oracle every backend is tested against.
 *
 * Semantics (SPEC §1, §5): float values are computed in double and are not rounded between
 * operations, even when a node's dtype is f16 or f32; only a CAST, a value flagged
 * IR_NODE_STORED (a kernel writes it to memory) and an OUTPUT round to their dtype. Integer
 * values are exact with wrap-around at their width: computed in uint64 (no signed overflow)
 * and wrapped with ir_wrap_int. Inputs are read from their storage dtype. What each
 * element-wise op, cast and constant computes is ir/scalar_ops.h's, shared with constant
 * folding and the front end; only reductions are defined here, each starting from its
 * identity (ir_reduce_identity) as both code generators do.
 *
 * Nodes are evaluated in index order (topological). Each value is one array of double (float
 * dtypes) or int64_t (integers and bool), freed after its last use; values no output needs
 * are not computed. Nothing here aborts: errors, out of memory included, return -1.
 */
#include "ir.h"
#include "philox.h"
#include "scalar_ops.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One node's value: d for float dtypes, i for integers and bool (0/1). */
typedef struct value {
    double *d;
    int64_t *i;
} value;

static int is_float(ir_dtype t) {
    return ir_dtype_is_float(t);
}

static void format_dims(char *buf, size_t len, const int64_t *dims, int32_t rank) {
    size_t used = 0;
    buf[0] = 0;
    for (int32_t i = 0; i <= rank && used < len; i++) {
        int n;
        if (i == rank)
            n = snprintf(buf + used, len - used, "]");
        else
            n = snprintf(buf + used, len - used, "%s%" PRId64, i ? ", " : "[", dims[i]);
        if (n > 0) used += (size_t)n;
    }
    if (rank == 0) snprintf(buf, len, "[]");
}

/* ---- element-wise loops ---------------------------------------------------------------- */

/* One loop per op: the switch on the op runs once per node, and the op's expression from
 * the lists of scalar_ops.h (the semantics ir_scalar_eval computes too) is inlined into the
 * loop. x[i] is operand i's array and st[i] its step: 1, or 0 for a rank-0 operand read at
 * every element; an operand past the op's arity reads a 0 with step 0. */
#define EW_LOOP(T, EXPR)                                                                           \
    do {                                                                                           \
        for (int64_t k = 0; k < cnt; k++) {                                                        \
            T a = x[0][k * st[0]], b = x[1][k * st[1]], c = x[2][k * st[2]];                       \
            (void)b;                                                                               \
            (void)c;                                                                               \
            out[k] = (EXPR);                                                                       \
        }                                                                                          \
    } while (0)

#define FLOAT_CASE(E, EXPR)                                                                        \
    case IR_OP_##E:                                                                                \
        EW_LOOP(double, EXPR);                                                                     \
        break;
#define INT_CASE(E, EXPR)                                                                          \
    case IR_OP_##E: EW_LOOP(int64_t, EXPR); break;

static void float_loop(ir_op op, double *out, const double *const *x, const int64_t *st,
                       int64_t cnt) {
    switch (op) {
        IR_SCALAR_FLOAT_OPS(FLOAT_CASE)
    default: break; /* not reached: the verifier admits no other op here */
    }
}

/* t: the node's dtype, which the expressions of IR_SCALAR_INT_OPS wrap to */
static void int_loop(ir_op op, ir_dtype t, int64_t *out, const int64_t *const *x, const int64_t *st,
                     int64_t cnt) {
    switch (op) {
        IR_SCALAR_INT_OPS(INT_CASE)
    default: break;
    }
}

/* Ops on floats that give a bool: comparisons and predicates. */
static void float_test_loop(ir_op op, int64_t *out, const double *const *x, const int64_t *st,
                            int64_t cnt) {
    switch (op) {
        IR_SCALAR_CMP_OPS(FLOAT_CASE)
        IR_SCALAR_PRED_OPS(FLOAT_CASE)
    default: break;
    }
}

/* Ops on integers or bools that give a bool: comparisons and logic. */
static void int_test_loop(ir_op op, int64_t *out, const int64_t *const *x, const int64_t *st,
                          int64_t cnt) {
    switch (op) {
        IR_SCALAR_CMP_OPS(INT_CASE)
        IR_SCALAR_LOGIC_OPS(INT_CASE)
    default: break;
    }
}

#undef INT_CASE
#undef FLOAT_CASE
#undef EW_LOOP

/* ---- the run --------------------------------------------------------------------------- */

typedef struct run {
    const ir_func *f;
    const ir_tensor *inputs;
    ir_tensor *outputs;
    int64_t *syms;
    int64_t *count; /* elements of each node's value */
    ir_ref *last;   /* the last node that reads each value; -1: no output needs it */
    value *vals;
    char *err;
    size_t errlen;
} run;

static void dims_of(const run *R, ir_ref r, int64_t *dims) {
    ir_shape_concrete(&R->f->nodes[r].shape, R->syms, dims);
}

static int alloc_value(run *R, ir_ref r) {
    size_t n = R->count[r] > 0 ? (size_t)R->count[r] : 1;
    value *v = &R->vals[r];
    if (is_float(R->f->nodes[r].dtype))
        v->d = malloc(n * sizeof(double));
    else
        v->i = malloc(n * sizeof(int64_t));
    if (!v->d && !v->i) return ir_fail(R->err, R->errlen, "out of memory");
    return 0;
}

static void free_value(value *v) {
    free(v->d);
    free(v->i);
    v->d = NULL;
    v->i = NULL;
}

/* The element offset of the row-major k-th element of t (its strides', or k). */
static int64_t input_offset(const ir_tensor *t, int64_t k) {
    if (!t->strides) return k;
    int64_t off = 0;
    for (int32_t d = t->rank - 1; d >= 0; d--) {
        int64_t n = t->dims[d] > 0 ? t->dims[d] : 1;
        off += (k % n) * t->strides[d];
        k /= n;
    }
    return off;
}

static void eval_input(run *R, ir_ref r) {
    const ir_node *n = &R->f->nodes[r];
    const ir_tensor *t = &R->inputs[n->index];
    value *v = &R->vals[r];
    int64_t cnt = R->count[r];
    for (int64_t k = 0; k < cnt; k++) {
        int64_t i = input_offset(t, k);
        switch (n->dtype) {
        case IR_BOOL: v->i[k] = ((const uint8_t *)t->data)[i] != 0; break;
        case IR_I32: v->i[k] = ((const int32_t *)t->data)[i]; break;
        case IR_I64: v->i[k] = ((const int64_t *)t->data)[i]; break;
        case IR_F16: v->d[k] = ir_f16_to_double(((const uint16_t *)t->data)[i]); break;
        case IR_BF16: v->d[k] = ir_bf16_to_double(((const uint16_t *)t->data)[i]); break;
        case IR_F32: v->d[k] = ((const float *)t->data)[i]; break;
        case IR_F64: v->d[k] = ((const double *)t->data)[i]; break;
        default: break;
        }
    }
}

static void eval_const(run *R, ir_ref r) {
    ir_scalar v = ir_scalar_of_const(&R->f->nodes[r]);
    if (R->vals[r].d)
        R->vals[r].d[0] = v.f;
    else
        R->vals[r].i[0] = v.i;
}

/* INDEX: each element's row-major flat index within the node's shape. */
static void eval_index(run *R, ir_ref r) {
    for (int64_t k = 0; k < R->count[r]; k++)
        R->vals[r].i[k] = k;
}

/* A comparison of f32 (f16, bf16) values compares them as that dtype holds them: the
 * interpreter carries them in f64 between stores, and a value compared with a stored one
 * (a max against the elements it came from, in a max's gradient) must meet it where the
 * program's f32 arithmetic would. */
static void compare_rounded(run *R, ir_ref r, const double *const *xd, const int64_t *st,
                            int64_t cnt) {
    const ir_node *n = &R->f->nodes[r];
    ir_dtype t = R->f->nodes[n->args[0]].dtype;
    double v[3] = {0, 0, 0};
    const double *x[3] = {&v[0], &v[1], &v[2]}; /* (the loops read three operands) */
    const int64_t zero[3] = {0, 0, 0};
    for (int64_t k = 0; k < cnt; k++) {
        v[0] = ir_round_to_dtype(xd[0][k * st[0]], t);
        v[1] = ir_round_to_dtype(xd[1][k * st[1]], t);
        float_test_loop(n->op, &R->vals[r].i[k], x, zero, 1);
    }
}

static void eval_ew(run *R, ir_ref r) {
    static const double zero_d = 0;
    static const int64_t zero_i = 0;
    const ir_node *n = &R->f->nodes[r];
    const ir_op_info *oi = &ir_ops[n->op];
    value *out = &R->vals[r];
    const double *xd[3] = {&zero_d, &zero_d, &zero_d};
    const int64_t *xi[3] = {&zero_i, &zero_i, &zero_i};
    int64_t st[3] = {0, 0, 0};
    for (int i = 0; i < oi->arity; i++) {
        const value *v = &R->vals[n->args[i]];
        if (v->d) xd[i] = v->d;
        if (v->i) xi[i] = v->i;
        st[i] = R->f->nodes[n->args[i]].shape.rank == 0 ? 0 : 1;
    }
    int64_t cnt = R->count[r];
    ir_dtype at = R->f->nodes[n->args[0]].dtype;
    if (oi->flags & IR_OPF_RANDOM) {
        for (int64_t k = 0; k < cnt; k++)
            out->d[k] = ir_philox_u01(xi[0][k * st[0]], xi[1][k * st[1]], n->index);
    } else if ((oi->flags & IR_OPF_CMP) && is_float(at) && at != IR_F64) {
        compare_rounded(R, r, xd, st, cnt);
    } else if ((oi->flags & (IR_OPF_CMP | IR_OPF_PRED)) && is_float(at)) {
        float_test_loop(n->op, out->i, xd, st, cnt);
    } else if (oi->flags & (IR_OPF_CMP | IR_OPF_LOGIC)) {
        int_test_loop(n->op, out->i, xi, st, cnt);
    } else if (oi->flags & IR_OPF_SELECT) {
        for (int64_t k = 0; k < cnt; k++) {
            int c = xi[0][k * st[0]] != 0;
            if (is_float(n->dtype))
                out->d[k] = c ? xd[1][k * st[1]] : xd[2][k * st[2]];
            else
                out->i[k] = c ? xi[1][k * st[1]] : xi[2][k * st[2]];
        }
    } else if (is_float(n->dtype)) {
        float_loop(n->op, out->d, xd, st, cnt);
    } else {
        int_loop(n->op, n->dtype, out->i, xi, st, cnt);
    }
}

static void eval_cast(run *R, ir_ref r) {
    const ir_node *n = &R->f->nodes[r];
    ir_dtype from = R->f->nodes[n->args[0]].dtype, to = n->dtype;
    const value *a = &R->vals[n->args[0]];
    value *out = &R->vals[r];
    int64_t cnt = R->count[r];
    for (int64_t k = 0; k < cnt; k++) {
        ir_scalar x = {a->d ? a->d[k] : 0, a->i ? a->i[k] : 0};
        ir_scalar y = ir_scalar_cast(x, from, to);
        if (out->d)
            out->d[k] = y.f;
        else
            out->i[k] = y.i;
    }
}

/* Row-major walk over `dims`; after each step *pos is the flat index into another array
 * whose strides for the same axes are `strides` (0 for an axis it does not have). */
typedef struct walk {
    int32_t rank;
    int64_t dims[IR_MAX_RANK], strides[IR_MAX_RANK], idx[IR_MAX_RANK];
    int64_t pos;
} walk;

static void walk_init(walk *w, int32_t rank, const int64_t *dims, const int64_t *strides) {
    w->rank = rank;
    for (int32_t i = 0; i < rank; i++) {
        w->dims[i] = dims[i];
        w->strides[i] = strides[i];
        w->idx[i] = 0;
    }
    w->pos = 0;
}

static void walk_next(walk *w) {
    for (int32_t i = w->rank - 1; i >= 0; i--) {
        if (++w->idx[i] < w->dims[i]) {
            w->pos += w->strides[i];
            return;
        }
        w->pos -= w->strides[i] * (w->dims[i] - 1);
        w->idx[i] = 0;
    }
}

static void eval_broadcast(run *R, ir_ref r) {
    const ir_node *n = &R->f->nodes[r];
    const ir_node *an = &R->f->nodes[n->args[0]];
    int64_t od[IR_MAX_RANK], ad[IR_MAX_RANK], st[IR_MAX_RANK];
    dims_of(R, r, od);
    dims_of(R, n->args[0], ad);
    /* the operand's axes align with the node's last ones; a size-1 axis repeats */
    int32_t off = n->shape.rank - an->shape.rank;
    int64_t s = 1;
    for (int32_t i = n->shape.rank - 1; i >= 0; i--) {
        int32_t j = i - off;
        if (j < 0 || ad[j] == 1) {
            st[i] = 0;
        } else {
            st[i] = s;
        }
        if (j >= 0) s *= ad[j];
    }
    walk w;
    walk_init(&w, n->shape.rank, od, st);
    const value *a = &R->vals[n->args[0]];
    value *out = &R->vals[r];
    int64_t cnt = R->count[r];
    for (int64_t k = 0; k < cnt; k++, walk_next(&w)) {
        if (is_float(n->dtype))
            out->d[k] = a->d[w.pos];
        else
            out->i[k] = a->i[w.pos];
    }
}

static int eval_reduce(run *R, ir_ref r) {
    const ir_node *n = &R->f->nodes[r];
    ir_ref x = n->args[0];
    const ir_node *xn = &R->f->nodes[x];
    int64_t xd[IR_MAX_RANK], st[IR_MAX_RANK];
    dims_of(R, x, xd);
    int32_t rank = xn->shape.rank;
    /* the input is walked in order; st maps it to the output element it reduces into */
    int64_t s = 1, reduced = 1;
    for (int32_t i = rank - 1; i >= 0; i--) {
        if (n->axes & (1u << i)) {
            st[i] = 0;
            reduced = xd[i] == 0 ? 0 : reduced * xd[i];
        } else {
            st[i] = s;
            s *= xd[i];
        }
    }
    if (reduced == 0 && (ir_ops[n->op].flags & IR_OPF_NONEMPTY))
        return ir_fail(R->err, R->errlen, "%s over an empty axis", ir_ops[n->op].name);
    int64_t ocnt = R->count[r], icnt = R->count[x];
    const value *a = &R->vals[x];
    value *out = &R->vals[r];
    walk w;
    walk_init(&w, rank, xd, st);
    ir_scalar id = ir_reduce_identity(n->op, n->dtype);

    if (!is_float(xn->dtype)) {
        /* integers: exact, wrapping at 64 bits, then at the node's width */
        uint64_t *acc = malloc((size_t)(ocnt > 0 ? ocnt : 1) * sizeof(uint64_t));
        if (!acc) return ir_fail(R->err, R->errlen, "out of memory");
        for (int64_t k = 0; k < ocnt; k++)
            acc[k] = (uint64_t)id.i;
        for (int64_t k = 0; k < icnt; k++, walk_next(&w)) {
            uint64_t *p = &acc[w.pos];
            int64_t v = a->i[k];
            switch (n->op) {
            case IR_OP_SUM: *p += (uint64_t)v; break;
            case IR_OP_PROD: *p *= (uint64_t)v; break;
            case IR_OP_MAX:
                if (v > ir_scalar_wrap_u(*p, IR_I64)) *p = (uint64_t)v;
                break;
            case IR_OP_MIN:
                if (v < ir_scalar_wrap_u(*p, IR_I64)) *p = (uint64_t)v;
                break;
            default: break;
            }
        }
        for (int64_t k = 0; k < ocnt; k++)
            out->i[k] = ir_scalar_wrap_u(acc[k], n->dtype);
        free(acc);
        return 0;
    }

    /* floats: sums are compensated (Neumaier), so the reference is accurate to about one
     * rounding of the result whatever the length; max/min propagate NaN */
    double *acc = malloc((size_t)(ocnt > 0 ? ocnt : 1) * sizeof(double));
    double *comp = NULL;
    if (acc && (n->op == IR_OP_SUM || n->op == IR_OP_MEAN))
        comp = calloc((size_t)(ocnt > 0 ? ocnt : 1), sizeof(double));
    if (!acc || ((n->op == IR_OP_SUM || n->op == IR_OP_MEAN) && !comp)) {
        free(acc);
        free(comp);
        return ir_fail(R->err, R->errlen, "out of memory");
    }
    for (int64_t k = 0; k < ocnt; k++)
        acc[k] = id.f;
    for (int64_t k = 0; k < icnt; k++, walk_next(&w)) {
        double *p = &acc[w.pos];
        double v = a->d[k];
        switch (n->op) {
        case IR_OP_SUM:
        case IR_OP_MEAN: {
            double t = *p + v;
            comp[w.pos] += fabs(*p) >= fabs(v) ? (*p - t) + v : (v - t) + *p;
            *p = t;
            break;
        }
        case IR_OP_PROD: *p *= v; break;
        case IR_OP_MAX: *p = ir_scalar_fmax(*p, v); break;
        case IR_OP_MIN: *p = ir_scalar_fmin(*p, v); break;
        default: break;
        }
    }
    for (int64_t k = 0; k < ocnt; k++) {
        double v = acc[k];
        if (comp && isfinite(v)) v += comp[k]; /* with an inf or NaN, comp is meaningless */
        if (n->op == IR_OP_MEAN) v = reduced == 0 ? NAN : v / (double)reduced;
        out->d[k] = v;
    }
    free(acc);
    free(comp);
    return 0;
}

static void eval_output(run *R, ir_ref r) {
    const ir_node *n = &R->f->nodes[r];
    ir_tensor *t = &R->outputs[n->index];
    const value *a = &R->vals[n->args[0]];
    int64_t cnt = R->count[r];
    for (int64_t k = 0; k < cnt; k++) {
        switch (n->dtype) {
        case IR_BOOL: ((uint8_t *)t->data)[k] = a->i[k] != 0; break;
        case IR_I32: ((int32_t *)t->data)[k] = (int32_t)ir_wrap_int(a->i[k], IR_I32); break;
        case IR_I64: ((int64_t *)t->data)[k] = a->i[k]; break;
        case IR_F16: ((uint16_t *)t->data)[k] = ir_f16_from_double(a->d[k]); break;
        case IR_BF16: ((uint16_t *)t->data)[k] = ir_bf16_from_double(a->d[k]); break;
        case IR_F32: ((float *)t->data)[k] = (float)a->d[k]; break;
        case IR_F64: ((double *)t->data)[k] = a->d[k]; break;
        default: break;
        }
    }
}

/* A value a kernel writes to memory is held in its dtype, as the kernel would store it. */
static void round_stored(run *R, ir_ref r) {
    const ir_node *n = &R->f->nodes[r];
    /* integers are already wrapped; an OUTPUT has no value of its own */
    if (!is_float(n->dtype) || n->dtype == IR_F64 || n->op == IR_OP_OUTPUT) return;
    value *v = &R->vals[r];
    for (int64_t k = 0; k < R->count[r]; k++)
        v->d[k] = ir_round_to_dtype(v->d[k], n->dtype);
}

static int check_tensors(run *R) {
    const ir_func *f = R->f;
    int64_t dims[IR_MAX_RANK];
    char want[200], got[200];
    for (int32_t p = 0; p < f->nparams; p++) {
        const ir_tensor *t = &R->inputs[p];
        if (t->dtype != f->params[p].dtype)
            return ir_fail(R->err, R->errlen, "parameter '%s': expected %s, got %s",
                           f->params[p].name, ir_dtypes[f->params[p].dtype].name,
                           t->dtype >= 0 && t->dtype < IR_DTYPE_COUNT ? ir_dtypes[t->dtype].name
                                                                      : "?");
        if (!t->data && R->count[f->params[p].node] > 0)
            return ir_fail(R->err, R->errlen, "parameter '%s': no data", f->params[p].name);
    }
    if (f->noutputs > 0 && !R->outputs) return ir_fail(R->err, R->errlen, "no output tensors");
    for (int32_t o = 0; o < f->noutputs; o++) {
        const ir_output *out = &f->outputs[o];
        const ir_tensor *t = &R->outputs[o];
        if (t->dtype != out->dtype)
            return ir_fail(R->err, R->errlen, "output %d: expected %s, got %s", (int)o,
                           ir_dtypes[out->dtype].name,
                           t->dtype >= 0 && t->dtype < IR_DTYPE_COUNT ? ir_dtypes[t->dtype].name
                                                                      : "?");
        ir_shape_concrete(&out->shape, R->syms, dims);
        int same = t->rank == out->shape.rank;
        for (int32_t i = 0; same && i < t->rank; i++)
            same = t->dims[i] == dims[i];
        if (!same) {
            format_dims(want, sizeof want, dims, out->shape.rank);
            format_dims(got, sizeof got, t->dims,
                        t->rank >= 0 && t->rank <= IR_MAX_RANK ? t->rank : 0);
            return ir_fail(R->err, R->errlen, "output %d: expected shape %s, got %s", (int)o, want,
                           got);
        }
        if (!t->data && R->count[out->node] > 0)
            return ir_fail(R->err, R->errlen, "output %d: no data", (int)o);
    }
    return 0;
}

static int interp(run *R) {
    const ir_func *f = R->f;
    int64_t dims[IR_MAX_RANK];
    char buf[200];
    for (ir_ref r = 0; r < f->nnodes; r++) {
        dims_of(R, r, dims);
        R->count[r] = ir_dims_count(dims, f->nodes[r].shape.rank);
        if (R->count[r] < 0) {
            format_dims(buf, sizeof buf, dims, f->nodes[r].shape.rank);
            return ir_fail(R->err, R->errlen, "%%%d: a tensor of shape %s is too large", (int)r,
                           buf);
        }
    }
    if (check_tensors(R)) return -1;

    /* liveness: outputs are needed, and whatever a needed node reads; last[r] is the last
     * reader of r */
    for (ir_ref r = 0; r < f->nnodes; r++)
        R->last[r] = -1;
    for (ir_ref r = f->nnodes - 1; r >= 0; r--) {
        const ir_node *n = &f->nodes[r];
        if (n->op != IR_OP_OUTPUT && R->last[r] < 0) continue;
        if (n->op == IR_OP_OUTPUT) R->last[r] = r;
        for (int i = 0; i < ir_ops[n->op].arity; i++)
            if (R->last[n->args[i]] < r) R->last[n->args[i]] = r;
    }

    for (ir_ref r = 0; r < f->nnodes; r++) {
        if (R->last[r] < 0) continue;
        const ir_node *n = &f->nodes[r];
        if (n->op == IR_OP_GRAD) /* (the caller runs passes/grad.c first) */
            return ir_fail(R->err, R->errlen, "%%%d: a gradient the gradient pass did not expand",
                           (int)r);
        if (n->op != IR_OP_OUTPUT && alloc_value(R, r)) return -1;
        switch (ir_ops[n->op].cls) {
        case IR_CLASS_LEAF:
            if (n->op == IR_OP_INPUT)
                eval_input(R, r);
            else if (n->op == IR_OP_INDEX)
                eval_index(R, r);
            else
                eval_const(R, r);
            break;
        case IR_CLASS_EW: eval_ew(R, r); break;
        case IR_CLASS_CAST: eval_cast(R, r); break;
        case IR_CLASS_BROADCAST: eval_broadcast(R, r); break;
        case IR_CLASS_REDUCE:
            if (eval_reduce(R, r)) return -1;
            break;
        case IR_CLASS_OUTPUT: eval_output(R, r); break;
        }
        if (n->flags & IR_NODE_STORED) round_stored(R, r);
        for (int i = 0; i < ir_ops[n->op].arity; i++)
            if (R->last[n->args[i]] == r) free_value(&R->vals[n->args[i]]);
    }
    return 0;
}

int ir_interp_run(const ir_func *f, const ir_tensor *inputs, ir_tensor *outputs, char *err,
                  size_t errlen) {
    if (err && errlen) err[0] = 0;
    /* a malformed function must not crash the oracle */
    if (ir_verify(f, err, errlen)) return -1;
    size_t nn = (size_t)f->nnodes + 1;
    run R = {0};
    R.f = f;
    R.inputs = inputs;
    R.outputs = outputs;
    R.err = err;
    R.errlen = errlen;
    R.syms = malloc(((size_t)f->nsyms + 1) * sizeof(int64_t));
    R.count = malloc(nn * sizeof(int64_t));
    R.last = malloc(nn * sizeof(ir_ref));
    R.vals = calloc(nn, sizeof(value));
    int rc;
    if (!R.syms || !R.count || !R.last || !R.vals)
        rc = ir_fail(err, errlen, "out of memory");
    else if (ir_bind_shapes(f, inputs, R.syms, err, errlen))
        rc = -1;
    else
        rc = interp(&R);
    if (R.vals)
        for (int32_t r = 0; r < f->nnodes; r++)
            free_value(&R.vals[r]);
    free(R.syms);
    free(R.count);
    free(R.last);
    free(R.vals);
    return rc;
}
