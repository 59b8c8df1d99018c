/* ir/shape.c: symbolic shapes: equality, numpy broadcasting, reduction, squeeze-equality,
 * binding the symbolic dims to concrete sizes at launch (counting elements: ir/count.c). */
#include "ir.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

int ir_dim_equal(ir_dim a, ir_dim b) {
    if (a.sym >= 0 || b.sym >= 0) return a.sym == b.sym;
    return a.size == b.size;
}

int ir_shape_equal(const ir_shape *a, const ir_shape *b) {
    if (a->rank != b->rank) return 0;
    for (int32_t i = 0; i < a->rank; i++)
        if (!ir_dim_equal(a->dims[i], b->dims[i])) return 0;
    return 1;
}

ir_shape *ir_unique_shapes(const ir_func *f, ir_arena *a, int32_t *n) {
    ir_shape *out = ir_arena_calloc(a, (size_t)(f->nnodes ? f->nnodes : 1), sizeof(ir_shape));
    *n = 0;
    for (int32_t r = 0; r < f->nnodes; r++) {
        int seen = 0;
        for (int32_t k = 0; k < *n && !seen; k++)
            seen = ir_shape_equal(&out[k], &f->nodes[r].shape);
        if (!seen) out[(*n)++] = f->nodes[r].shape;
    }
    return out;
}

int ir_shape_broadcast(const ir_shape *a, const ir_shape *b, ir_shape *out) {
    int32_t rank = a->rank > b->rank ? a->rank : b->rank;
    ir_shape r = {0};
    r.rank = rank;
    for (int32_t i = 0; i < rank; i++) {
        /* shapes align on the right: a missing leading dim acts as a literal 1 */
        int32_t ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        ir_dim da = ia >= 0 ? a->dims[ia] : ir_dim_lit(1);
        ir_dim db = ib >= 0 ? b->dims[ib] : ir_dim_lit(1);
        if (ir_dim_is_one(da))
            r.dims[i] = db;
        else if (ir_dim_is_one(db) || ir_dim_equal(da, db))
            r.dims[i] = da;
        else
            return i;
    }
    *out = r;
    return -1;
}

ir_shape ir_shape_reduce(const ir_shape *s, uint32_t axes) {
    ir_shape r = *s;
    for (int32_t i = 0; i < s->rank; i++)
        if (axes & (1u << i)) r.dims[i] = ir_dim_lit(1);
    return r;
}

int ir_shape_squeeze_equal(const ir_shape *a, const ir_shape *b) {
    int32_t i = 0, j = 0;
    for (;;) {
        while (i < a->rank && ir_dim_is_one(a->dims[i]))
            i++;
        while (j < b->rank && ir_dim_is_one(b->dims[j]))
            j++;
        if (i == a->rank || j == b->rank) return i == a->rank && j == b->rank;
        if (!ir_dim_equal(a->dims[i], b->dims[j])) return 0;
        i++;
        j++;
    }
}

int ir_bind_shapes(const ir_func *f, const ir_tensor *inputs, int64_t *sym_values, char *err,
                   size_t errlen) {
    /* which parameter bound each symbol first, for the message when a later one disagrees */
    for (int32_t s = 0; s < f->nsyms; s++)
        sym_values[s] = -1;
    if (f->nparams > 0 && !inputs) {
        snprintf(err, errlen, "no input tensors for %d parameters", (int)f->nparams);
        return -1;
    }
    for (int32_t p = 0; p < f->nparams; p++) {
        const ir_param *par = &f->params[p];
        const ir_tensor *t = &inputs[p];
        if (t->rank != par->shape.rank) {
            snprintf(err, errlen, "parameter '%s': expected rank %d, got rank %d", par->name,
                     (int)par->shape.rank, (int)t->rank);
            return -1;
        }
        for (int32_t i = 0; i < t->rank; i++) {
            int64_t got = t->dims[i];
            ir_dim d = par->shape.dims[i];
            if (got < 0) {
                snprintf(err, errlen, "parameter '%s': dim %d is negative (%" PRId64 ")", par->name,
                         (int)i, got);
                return -1;
            }
            if (d.sym < 0) {
                if (got != d.size) {
                    snprintf(err, errlen,
                             "parameter '%s': dim %d must be %" PRId64 ", got %" PRId64, par->name,
                             (int)i, d.size, got);
                    return -1;
                }
                continue;
            }
            if (sym_values[d.sym] < 0) {
                sym_values[d.sym] = got;
                continue;
            }
            if (sym_values[d.sym] != got) {
                /* find the first parameter that bound it, to name it */
                const char *from = "?";
                for (int32_t q = 0; q < p && from[0] == '?'; q++)
                    for (int32_t k = 0; k < f->params[q].shape.rank; k++)
                        if (f->params[q].shape.dims[k].sym == d.sym) {
                            from = f->params[q].name;
                            break;
                        }
                if (from[0] == '?') from = par->name; /* an earlier dim of this parameter */
                snprintf(err, errlen,
                         "parameter '%s': dim %d is %" PRId64 " but %s is already %" PRId64
                         " (from parameter '%s')",
                         par->name, (int)i, got, f->syms[d.sym], sym_values[d.sym], from);
                return -1;
            }
        }
    }
    /* a symbol no parameter binds is an error only where some value's shape uses it */
    for (int32_t n = 0; n < f->nnodes; n++) {
        const ir_shape *s = &f->nodes[n].shape;
        for (int32_t i = 0; i < s->rank; i++) {
            int32_t sym = s->dims[i].sym;
            if (sym >= 0 && sym < f->nsyms && sym_values[sym] < 0) {
                snprintf(err, errlen, "symbolic dim '%s' is not bound by any parameter",
                         f->syms[sym]);
                return -1;
            }
        }
    }
    return 0;
}

/* The kind of a reduction over `d` that reduces `axes`. Axes of literal size 1 count as
 * either: they change neither the layout nor the number of elements. */
ir_kernel_kind ir_reduction_kind(const ir_shape *d, uint32_t axes) {
    uint32_t ones = 0, all = d->rank ? (uint32_t)((1u << d->rank) - 1) : 0;
    for (int32_t i = 0; i < d->rank; i++)
        if (ir_dim_is_one(d->dims[i])) ones |= 1u << i;
    uint32_t r = axes | ones;
    if (r == all) return IR_KERNEL_FULL_REDUCTION;
    /* row: from the first reduced axis (ignoring size-1 axes before it) to the last */
    uint32_t real = axes & ~ones;
    int first = 0;
    while (first < d->rank && !(real & (1u << first)))
        first++;
    uint32_t suffix = all & ~((1u << first) - 1);
    if ((r & suffix) == suffix) return IR_KERNEL_ROW_REDUCTION;
    return IR_KERNEL_COLUMN_REDUCTION;
}
