/* frontend/check_calls.c: calls of the file's own functions, which are inlined.
 *
 * A call binds each parameter to its argument and lowers the callee's body in a new frame.
 * - Dtypes: an argument must promote to its parameter's dtype (i32 to an f32 parameter,
 *   not f64 to f32) and is cast to it; a weak argument becomes a constant of that dtype.
 * - Shapes: the parameter's dims are matched against the argument's trailing dims as at a
 *   launch (a literal must be equal, a name binds to the argument's dim, and every use of
 *   one name in one call must agree).
 * - Batch axes (SPEC: "A call may pass an argument with more leading axes..."): an
 *   argument's extra leading axes are batch axes; those of all arguments broadcast
 *   together, and the callee is mapped over them. Inside the callee every batched value
 *   starts with the batch axes, the callee's own axes follow, and its axis numbers and
 *   reductions count in its own frame only. The result gets the batch axes in front.
 * A failed call yields ERR; the callee's own errors are not reported again here (they are
 * when the callee is checked as an entry point), only those of the call.
 */
#include "check_internal.h"

#include <inttypes.h>
#include <string.h>

/* A parameter's declared shape as written, "[N, 3]", for messages. */
static const char *param_shape_str(check_ctx *c, const ast_type *t) {
    ir_buf b;
    ir_buf_init(&b, c->a);
    ir_buf_puts(&b, "[");
    for (int32_t i = 0; i < t->rank; i++) {
        if (i) ir_buf_puts(&b, ", ");
        if (t->dims[i].name)
            ir_buf_puts(&b, t->dims[i].name);
        else
            ir_buf_printf(&b, "%" PRId64, t->dims[i].size);
    }
    ir_buf_puts(&b, "]");
    return b.data ? b.data : "[?]";
}

/* One argument on its way to its parameter. */
typedef struct call_arg {
    check_val v;      /* cast to the parameter's dtype */
    ir_shape logical; /* in the caller's frame */
    int32_t extra;    /* leading axes beyond the parameter's rank: its batch axes */
} call_arg;

/* Checks argument i against parameter p: dtype, rank, and its dims (binding the callee's
 * dim names in gf). 0 after reporting. */
static int bind_arg(check_ctx *c, check_frame *gf, const ast_func *g, int32_t i, check_val v,
                    call_arg *out) {
    const ast_param *p = &g->params[i];
    ir_dtype pt = p->type.dtype;
    check_type t = check_type_of(c, &v);
    ir_dtype have = t.weak ? check_weak_meets(t.wk, pt) : ir_dtype_promote(t.t, pt);
    if (have != pt) {
        check_error(c, v.loc, "argument %d of '%s' has type %s, parameter '%s' is %s", (int)i + 1,
                    g->name, check_type_name(&t), p->name, ir_dtypes[pt].name);
        return 0;
    }
    src_loc loc = v.loc;
    if (v.kind == CHECK_WEAK)
        v = check_tensor(check_materialize(c, &v, pt), 0, 0, loc);
    else
        v.ref = ir_cast(c->f, v.ref, pt);
    if (v.kind == CHECK_ERR) return 0;
    out->v = v;
    out->logical = check_logical(c, &v);
    int32_t rank = p->type.rank;
    if (out->logical.rank < rank) {
        check_error(c, loc,
                    "argument %d of '%s' has shape %s, too few axes for parameter '%s' of shape %s",
                    (int)i + 1, g->name, check_shape_str(c, &out->logical), p->name,
                    param_shape_str(c, &p->type));
        return 0;
    }
    out->extra = out->logical.rank - rank;
    for (int32_t k = 0; k < rank; k++) {
        const ast_dim *d = &p->type.dims[k];
        ir_dim a = out->logical.dims[out->extra + k];
        const char *why = NULL;
        if (!d->name) {
            if (a.sym >= 0 || a.size != d->size)
                why = ir_arena_printf(c->a, "dim %s is not %" PRId64, check_dim_str(c, a), d->size);
        } else {
            int32_t b = check_map_get(&gf->dimmap, d->name);
            if (b < 0) {
                gf->dims[gf->ndims] = a;
                check_map_put(&gf->dimmap, d->name, gf->ndims++);
            } else if (!ir_dim_equal(gf->dims[b], a)) {
                why = ir_arena_printf(c->a, "%s is already %s", d->name,
                                      check_dim_str(c, gf->dims[b]));
            }
        }
        if (why) {
            check_error(c, loc,
                        "argument %d of '%s' has shape %s, which does not fit parameter '%s' of "
                        "shape %s: %s",
                        (int)i + 1, g->name, check_shape_str(c, &out->logical), p->name,
                        param_shape_str(c, &p->type), why);
            return 0;
        }
    }
    return 1;
}

/* The batch axes of all arguments, broadcast together (in the caller's frame). */
static int batch_axes(check_ctx *c, const ast_expr *e, const ast_func *g, const call_arg *args,
                      ir_shape *q) {
    memset(q, 0, sizeof *q);
    for (int32_t i = 0; i < g->nparams; i++) {
        ir_shape ei = args[i].logical, next;
        ei.rank = args[i].extra;
        int k = ir_shape_broadcast(q, &ei, &next);
        if (k >= 0) {
            int32_t rank = q->rank > ei.rank ? q->rank : ei.rank;
            check_error(c, e->loc,
                        "batch axes %s and %s of the arguments of '%s' do not broadcast: dim %s "
                        "and dim %s differ",
                        check_shape_str(c, q), check_shape_str(c, &ei), g->name,
                        check_dim_str(c, q->dims[k - (rank - q->rank)]),
                        check_dim_str(c, ei.dims[k - (rank - ei.rank)]));
            return 0;
        }
        *q = next;
    }
    return 1;
}

static int too_many_axes(check_ctx *c, const ast_expr *e, const char *name, int32_t n) {
    check_error_ctx(c, e->loc,
                    "too many axes in the call to '%s': %d with its batch axes (at most %d)", name,
                    (int)n, IR_MAX_RANK);
    return 0;
}

/* Binds the parameters in gf: batched arguments (they carry the caller's batch axes or have
 * batch axes of their own) are broadcast to the callee's batch axes followed by their own
 * trailing dims; the others are bound as they are. */
static int bind_params(check_ctx *c, check_frame *fr, check_frame *gf, const ast_expr *e,
                       const call_arg *args, const ir_shape *q) {
    const ast_func *g = gf->fn;
    for (int32_t i = 0; i < g->nparams; i++) {
        const call_arg *a = &args[i];
        check_val v = a->v;
        if (a->v.nb > 0 || a->extra > 0) {
            ir_shape target;
            if (!check_shape_cat(&target, &gf->batch, &a->logical, a->extra))
                return too_many_axes(c, e, g->name, gf->nb + a->logical.rank - a->extra);
            ir_ref r = v.ref;
            if (v.nb > 0 && a->extra < q->rank) {
                /* the caller's batch axes lead: insert 1s for the batch axes it lacks */
                ir_shape to = fr->batch;
                while (to.rank < fr->nb + q->rank - a->extra)
                    to.dims[to.rank++] = ir_dim_lit(1);
                check_shape_cat(&to, &to, &a->logical, 0);
                r = check_reshape(c, r, &to, e->loc);
            } else if (v.nb == 0 && c->f->nodes[r].shape.rank > target.rank) {
                r = check_reshape(c, r, &a->logical, e->loc);
            }
            if (r == IR_NONE) return 0;
            v = check_tensor(ir_broadcast(c->f, r, &target), gf->nb, 0, v.loc);
        }
        check_bind(c, gf, g->params[i].name, g->params[i].loc, v, 1);
    }
    return 1;
}

/* 1 if s is ones(j) ++ d for some j >= 0 (leading 1s that broadcasting ignores); *j set. */
static int leading_ones(const ir_shape *s, const ir_shape *d, int32_t *j) {
    *j = s->rank - d->rank;
    if (*j < 0) return 0;
    for (int32_t i = 0; i < *j; i++)
        if (!ir_dim_is_one(s->dims[i])) return 0;
    for (int32_t i = 0; i < d->rank; i++)
        if (!ir_dim_equal(s->dims[*j + i], d->dims[i])) return 0;
    return 1;
}

/* The callee's result v (declared shape decl) as a value of the caller's frame. */
static check_val call_result(check_ctx *c, check_frame *fr, check_frame *gf, const ast_expr *e,
                             int any_caller_batch, check_val v, const ir_shape *decl) {
    ir_shape logical = check_logical(c, &v);
    int32_t j;
    int fits = leading_ones(&logical, decl, &j);
    if (gf->nb == 0) {
        /* unbatched: leading 1s the declared shape lacks become pad */
        if (fits) return check_tensor(v.ref, 0, v.pad + j, e->loc);
        return check_tensor(check_reshape(c, v.ref, decl, e->loc), 0, 0, e->loc);
    }
    ir_shape target;
    if (!check_shape_cat(&target, &gf->batch, decl, 0)) {
        too_many_axes(c, e, gf->fn->name, gf->nb + decl->rank);
        return check_err_val();
    }
    ir_ref r = v.ref;
    if (v.nb > 0) {
        if (!ir_shape_equal(&logical, decl)) r = check_reshape(c, r, &target, e->loc);
    } else {
        /* constant along the batch axes: broadcast to them */
        if (!fits || c->f->nodes[r].shape.rank > target.rank) r = check_reshape(c, r, decl, e->loc);
        if (r != IR_NONE) r = ir_broadcast(c->f, r, &target);
    }
    return check_tensor(r, any_caller_batch ? fr->nb : 0, 0, e->loc);
}

/* Checks the call's arguments and inlines the callee; ERR when either fails. */
static check_val inline_call(check_ctx *c, check_frame *fr, const ast_expr *e, const ast_func *g,
                             const check_val *vals) {
    check_frame gf;
    call_arg *args = ir_arena_calloc(c->a, (size_t)g->nparams + 1, sizeof *args);
    check_val *res = ir_arena_calloc(c->a, (size_t)g->nrets + 1, sizeof *res);
    ir_shape *decl = ir_arena_calloc(c->a, (size_t)g->nrets + 1, sizeof *decl);
    if (!args || !res || !decl || !check_frame_init(c, &gf, g, fr)) {
        check_error_ctx(c, e->loc, "out of memory");
        return check_err_val();
    }
    int ok = 1;
    for (int32_t i = 0; i < g->nparams; i++)
        if (!bind_arg(c, &gf, g, i, vals[i], &args[i])) ok = 0;
    ir_shape q;
    if (!ok || !batch_axes(c, e, g, args, &q)) return check_err_val();

    int any_caller_batch = 0, any_batch = 0;
    int32_t max_rank = 0;
    for (int32_t i = 0; i < g->nparams; i++) {
        if (args[i].v.nb > 0) any_caller_batch = 1;
        if (args[i].v.nb > 0 || args[i].extra > 0) any_batch = 1;
        if (g->params[i].type.rank > max_rank) max_rank = g->params[i].type.rank;
    }
    ir_shape none = {0};
    if (!check_shape_cat(&gf.batch, any_caller_batch ? &fr->batch : &none, &q, 0)) {
        too_many_axes(c, e, g->name, (any_caller_batch ? fr->nb : 0) + q.rank + max_rank);
        return check_err_val();
    }
    gf.nb = any_batch ? gf.batch.rank : 0;
    if (gf.nb + max_rank > IR_MAX_RANK) {
        too_many_axes(c, e, g->name, gf.nb + max_rank);
        return check_err_val();
    }
    if (c->no_inline || c->inline_depth >= CHECK_MAX_INLINE_DEPTH) {
        c->errors++; /* reported at the entry point (too large) */
        return check_err_val();
    }

    int32_t before = c->errors;
    c->quiet++;
    c->inline_depth++;
    ok = bind_params(c, fr, &gf, e, args, &q) && check_lower_body(c, &gf, res, decl);
    c->inline_depth--;
    c->quiet--;
    if (!ok || c->errors != before || res[0].kind != CHECK_TENSOR) {
        c->errors++;
        return check_err_val();
    }
    return call_result(c, fr, &gf, e, any_caller_batch, res[0], &decl[0]);
}

check_val check_lower_call(check_ctx *c, check_frame *fr, const ast_expr *e, int32_t callee) {
    const ast_func *g = &c->file->funcs[callee];
    const char *name = g->name;
    int32_t npos = 0;
    int ok = 1;
    if (g->grad_of) {
        /* its body is built from grad_of's IR, not from syntax this inliner could lower */
        check_error(c, e->loc,
                    "'%s' is a gradient (grad of '%s') and cannot be called from another "
                    "function yet; call it from the API or the command line",
                    name, g->grad_of);
        for (int32_t i = 0; i < e->u.call.nargs; i++)
            if (!e->u.call.args[i].is_axis) check_lower_expr(c, fr, e->u.call.args[i].expr);
        return check_err_val();
    }
    for (int32_t i = 0; i < e->u.call.nargs; i++) {
        const ast_arg *a = &e->u.call.args[i];
        if (a->is_axis) {
            check_error(c, a->loc, "'%s' takes no axis argument", name);
            ok = 0;
        } else {
            npos++;
        }
    }
    if (g->nrets != 1) {
        check_error(c, e->loc,
                    "function '%s' returns %d values and cannot be used in an expression", name,
                    (int)g->nrets);
        ok = 0;
    } else if (npos != g->nparams) {
        check_error(c, e->loc, "'%s' takes %d argument%s, got %d", name, (int)g->nparams,
                    g->nparams == 1 ? "" : "s", (int)npos);
        ok = 0;
    }
    check_val *vals = ir_arena_calloc(c->a, (size_t)npos + 1, sizeof *vals);
    if (!vals) return check_err_val();
    int32_t k = 0;
    for (int32_t i = 0; i < e->u.call.nargs; i++) {
        if (e->u.call.args[i].is_axis) continue;
        vals[k] = check_lower_expr(c, fr, e->u.call.args[i].expr);
        if (vals[k++].kind == CHECK_ERR) ok = 0;
    }
    /* a cycle's back edge is reported in the function that makes the call; every other
     * call into a cycle fails silently (the cycle has its error) */
    const char *cycle = fr->parent ? NULL : check_recursion_at(c, c->entry, e);
    if (cycle) {
        check_error(c, e->loc, "recursive call to '%s' (%s)", name, cycle);
        return check_err_val();
    }
    if (c->info[callee].in_cycle || c->info[callee].reaches_cycle) {
        c->errors++;
        return check_err_val();
    }
    if (!ok) return check_err_val();

    /* errors found while inlining this call are reported here, at the entry's own call */
    int outermost = c->outer_name == NULL;
    if (outermost) {
        c->outer_name = name;
        c->outer_loc = e->loc;
    }
    check_val v = inline_call(c, fr, e, g, vals);
    if (outermost) c->outer_name = NULL;
    return v;
}
