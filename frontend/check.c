/* frontend/check.c: check_file, the semantic checks of a parsed file and its lowering to IR.
 *
 * Every function of the file is an entry point, checked and lowered on its own into one
 * ir_func: its parameters become INPUT nodes, its lets and results are lowered in order
 * (calls of other functions inlined, see check_calls.c), its results become OUTPUT nodes.
 * Dtype rules live in ir/typing.c (what each op takes and gives) and check_types.c (weak
 * literals, promotion), the call graph (recursion, sizes) in check_graph.c.
 *
 * Errors go to the diag_ctx with the position of the offending token or expression:
 *   - a binary operator's errors (operand types, shapes): the operator token;
 *   - unary operators: the operator; casts never fail;
 *   - a call's own errors (unknown function, arity, batch axes): the callee's name;
 *   - a bad argument (dtype, shape, condition, `mean` of an integer): the argument's start;
 *     an axis number: that number;
 *   - return values: the returned expression; their count: the 'return' keyword;
 *   - names: the name; function-level limits: the function's name.
 * An erroneous expression yields an ERR value that silences errors that would follow from
 * it, so several independent errors are reported in one run. A callee's errors are its own:
 * they are reported when the callee itself is checked (every function is), never again at
 * each call; the caller just fails.
 *
 * Warnings: `unused variable` for a let and `unused parameter` for a parameter that the
 * function's body never names (a name used only by an unused let still counts as used).
 *
 * Messages (lowercase, names quoted):
 *   function 'f' is already defined at line 3
 *   function 'exp' has the name of a built-in function
 *   'x' is already defined at line 2                    (parameter or let)
 *   undefined name 'y'
 *   'f' is a function, not a value
 *   unknown function 'foo'
 *   'gelu' takes 1 argument, got 2
 *   'exp' takes no axis argument / axis is given twice
 *   function 'stats' returns 2 values and cannot be used in an expression
 *   recursive call to 'f' (f -> g -> f)
 *   function 'f' is too large after inlining
 *   function 'f' nests calls more than 64 deep
 *   function 'f' nests expressions too deeply after inlining
 *   function 'f' has 130 parameters and results; a launch takes at most 128
 *   argument 1 of 'g' has type f64, parameter 'x' is f32
 *   argument 1 of 'g' has shape [N], too few axes for parameter 'x' of shape [R, C]
 *   argument 1 of 'g' has shape [4], which does not fit parameter 'x' of shape [3]: dim 4 is not 3
 *   argument 2 of 'g' has shape [C], which does not fit parameter 'y' of shape [N]: N is already R
 *   batch axes [B] and [M] of the arguments of 'g' do not broadcast: dim B and dim M differ
 *   too many axes in the call to 'g': 9 with its batch axes (at most 8)
 *   the call to 'g' needs shape [B, 1] turned into [B], which is not supported yet
 *   operator '+' needs numeric operands, got bool
 *   operator '-' needs a numeric operand, got bool
 *   operator '!' needs a bool operand, got i32
 *   operator '&&' needs bool operands, got i32
 *   condition of '?:' must be bool, got f32             (also 'where')
 *   'mean' takes a float argument, got i32
 *   'abs' needs numeric arguments, got bool
 *   integer constant 3000000000 does not fit in i32
 *   shapes [R, C] and [R] do not broadcast: dim C and dim R differ
 *   axis 2 is out of range for a tensor of rank 2
 *   axis 1 is repeated
 *   function 'f' returns 2 values but is declared to return 1
 *   return value 1 has type f16, declared f32 (cast explicitly)
 *   return value 1 has shape [N, M], declared [N]
 *   dim 'M' of the result is not bound by any parameter
 *   no functions in file                                (warning, about the whole file)
 *   unused variable 'k' / unused parameter 'b'          (warnings)
 *
 * After syntax errors (d->nerrors > 0 on entry) the parser has dropped what it could not
 * parse, so `undefined name` errors and unused warnings are not reported: they would
 * mostly be echoes of the syntax errors.
 */
#include "check_internal.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- errors --------------------------------------------------------------------------- */

static void report(check_ctx *c, src_loc at, const char *fmt, va_list ap) {
    char msg[512];
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(msg, sizeof msg, fmt, aq);
    va_end(aq);
    if (n >= (int)sizeof msg) {
        char *big = ir_arena_alloc(c->a, (size_t)n + 1);
        if (big) {
            vsnprintf(big, (size_t)n + 1, fmt, ap);
            diag_error(c->d, at, "%s", big);
            c->reported++;
            return;
        }
    }
    diag_error(c->d, at, "%s", msg);
    c->reported++;
}

void check_error(check_ctx *c, src_loc at, const char *fmt, ...) {
    c->errors++;
    if (c->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    report(c, at, fmt, ap);
    va_end(ap);
}

void check_error_ctx(check_ctx *c, src_loc at, const char *fmt, ...) {
    c->errors++;
    va_list ap;
    va_start(ap, fmt);
    report(c, c->outer_name ? c->outer_loc : at, fmt, ap);
    va_end(ap);
}

/* ---- names ---------------------------------------------------------------------------- */

int check_map_init(check_ctx *c, check_map *m, int32_t n) {
    uint32_t cap = 8;
    while (cap < (uint32_t)n * 2 + 2 && cap < (UINT32_C(1) << 30))
        cap <<= 1;
    m->keys = ir_arena_calloc(c->a, cap, sizeof *m->keys);
    m->vals = ir_arena_calloc(c->a, cap, sizeof *m->vals);
    m->mask = cap - 1;
    return m->keys && m->vals;
}

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

int32_t check_map_get(const check_map *m, const char *key) {
    if (!m->keys || !key) return -1;
    for (uint32_t i = hash_str(key) & m->mask; m->keys[i]; i = (i + 1) & m->mask)
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
    return -1;
}

void check_map_put(check_map *m, const char *key, int32_t val) {
    if (!m->keys || !key) return;
    uint32_t i = hash_str(key) & m->mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & m->mask;
    m->keys[i] = key;
    m->vals[i] = val;
}

int check_frame_init(check_ctx *c, check_frame *fr, const ast_func *fn, check_frame *parent) {
    memset(fr, 0, sizeof *fr);
    fr->fn = fn;
    fr->parent = parent;
    int32_t nbinds = fn->nparams + fn->nlets, ndims = 0;
    for (int32_t i = 0; i < fn->nparams; i++)
        ndims += fn->params[i].type.rank;
    fr->binds = ir_arena_calloc(c->a, (size_t)(nbinds > 0 ? nbinds : 1), sizeof *fr->binds);
    fr->dims = ir_arena_calloc(c->a, (size_t)(ndims > 0 ? ndims : 1), sizeof *fr->dims);
    return fr->binds && fr->dims && check_map_init(c, &fr->scope, nbinds) &&
           check_map_init(c, &fr->dimmap, ndims);
}

void check_bind(check_ctx *c, check_frame *fr, const char *name, src_loc loc, check_val v,
                int is_param) {
    if (!name) return;
    int32_t prev = check_map_get(&fr->scope, name);
    if (prev >= 0) {
        check_error(c, loc, "'%s' is already defined at line %d", name,
                    (int)fr->binds[prev].loc.line);
        return;
    }
    check_binding *b = &fr->binds[fr->nbinds];
    b->name = name;
    b->loc = loc;
    b->v = v;
    b->is_param = is_param;
    check_map_put(&fr->scope, name, fr->nbinds++);
}

/* ---- shapes --------------------------------------------------------------------------- */

const char *check_dim_str(check_ctx *c, ir_dim d) {
    if (d.sym >= 0 && d.sym < c->f->nsyms) return c->f->syms[d.sym];
    return ir_arena_printf(c->a, "%" PRId64, d.size);
}

const char *check_shape_str(check_ctx *c, const ir_shape *s) {
    ir_buf b;
    ir_buf_init(&b, c->a);
    ir_buf_puts(&b, "[");
    for (int32_t i = 0; i < s->rank; i++)
        ir_buf_printf(&b, "%s%s", i ? ", " : "", check_dim_str(c, s->dims[i]));
    ir_buf_puts(&b, "]");
    return b.data ? b.data : "[?]";
}

check_val check_err_val(void) {
    check_val v;
    memset(&v, 0, sizeof v);
    v.kind = CHECK_ERR;
    v.ref = IR_NONE;
    return v;
}

check_val check_tensor(ir_ref ref, int32_t nb, int32_t pad, src_loc loc) {
    if (ref == IR_NONE) return check_err_val();
    check_val v = check_err_val();
    v.kind = CHECK_TENSOR;
    v.ref = ref;
    v.nb = nb;
    v.pad = pad;
    v.loc = loc;
    return v;
}

ir_shape check_logical(const check_ctx *c, const check_val *v) {
    ir_shape r = {0};
    if (v->kind != CHECK_TENSOR) return r;
    const ir_shape *s = &c->f->nodes[v->ref].shape;
    int32_t skip = v->nb + v->pad;
    for (int32_t i = skip; i < s->rank; i++)
        r.dims[r.rank++] = s->dims[i];
    return r;
}

int check_shape_cat(ir_shape *out, const ir_shape *a, const ir_shape *b, int32_t from) {
    if (a->rank + b->rank - from > IR_MAX_RANK) return 0;
    ir_shape r = *a;
    for (int32_t i = from; i < b->rank; i++)
        r.dims[r.rank++] = b->dims[i];
    *out = r;
    return 1;
}

/* The IR has no op that inserts or removes axes of size 1 yet (the data would not move: a
 * row-major layout is the same). Until it has one, the few programs that need it, all of
 * them calls with batch axes or results declared without the size-1 axes their value has,
 * are rejected here, the one place to change when the op exists. */
ir_ref check_reshape(check_ctx *c, ir_ref x, const ir_shape *to, src_loc at) {
    const ir_shape *from = &c->f->nodes[x].shape;
    check_error_ctx(
        c, at, "the call to '%s' needs shape %s turned into %s, which is not supported yet",
        c->outer_name ? c->outer_name : "?", check_shape_str(c, from), check_shape_str(c, to));
    return IR_NONE;
}

/* out = broadcast(a, b), or an error at `at` naming both shapes and the dims that differ. */
static int broadcast2(check_ctx *c, const ir_shape *a, const ir_shape *b, ir_shape *out,
                      src_loc at) {
    int k = ir_shape_broadcast(a, b, out);
    if (k < 0) return 1;
    int32_t rank = a->rank > b->rank ? a->rank : b->rank;
    ir_dim da = a->dims[k - (rank - a->rank)], db = b->dims[k - (rank - b->rank)];
    check_error(c, at, "shapes %s and %s do not broadcast: dim %s and dim %s differ",
                check_shape_str(c, a), check_shape_str(c, b), check_dim_str(c, da),
                check_dim_str(c, db));
    return 0;
}

/* ---- element-wise operations ------------------------------------------------------------ */

/* Lowers an element-wise op of n operands: their logical shapes broadcast together (an
 * error at `at` otherwise), operand i is cast to argt[i] and broadcast to the result. The
 * result carries the batch axes if any operand does. */
static check_val lower_ew(check_ctx *c, check_frame *fr, ir_op op, const ir_dtype *argt,
                          ir_dtype rt, int n, const check_val *args, src_loc at) {
    ir_shape logical = {0}, target;
    int batched = 0;
    for (int i = 0; i < n; i++) {
        if (args[i].kind != CHECK_TENSOR) continue;
        ir_shape li = check_logical(c, &args[i]), next;
        if (!broadcast2(c, &logical, &li, &next, at)) return check_err_val();
        logical = next;
        if (args[i].nb > 0) batched = 1;
    }
    int32_t pad = 0;
    if (batched) {
        if (!check_shape_cat(&target, &fr->batch, &logical, 0)) {
            check_error_ctx(
                c, at, "too many axes in the call to '%s': %d with its batch axes (at most %d)",
                c->outer_name ? c->outer_name : "?", (int)(fr->nb + logical.rank), IR_MAX_RANK);
            return check_err_val();
        }
    } else {
        /* unbatched operands may have leading 1s beyond their logical shape (pad): keep them,
         * they broadcast like absent axes */
        target = logical;
        for (int i = 0; i < n; i++) {
            if (args[i].kind != CHECK_TENSOR) continue;
            ir_shape phys = c->f->nodes[args[i].ref].shape, next;
            if (ir_shape_broadcast(&target, &phys, &next) < 0) target = next;
        }
        pad = target.rank - logical.rank;
    }
    ir_ref refs[3] = {IR_NONE, IR_NONE, IR_NONE};
    for (int i = 0; i < n; i++) {
        const check_val *v = &args[i];
        if (v->kind == CHECK_WEAK) {
            refs[i] = check_materialize(c, v, argt[i]); /* a rank-0 CONST serves as it is */
        } else {
            ir_ref r = ir_cast(c->f, v->ref, argt[i]);
            const ir_node *node = &c->f->nodes[r];
            if (node->op != IR_OP_CONST || node->shape.rank != 0) {
                ir_shape li = check_logical(c, v);
                if (batched && v->nb > 0 && li.rank < logical.rank) {
                    /* the batch axes lead, so a lower-rank operand needs 1s after them */
                    ir_shape to = fr->batch;
                    while (to.rank < fr->nb + logical.rank - li.rank)
                        to.dims[to.rank++] = ir_dim_lit(1);
                    check_shape_cat(&to, &to, &li, 0);
                    r = check_reshape(c, r, &to, at);
                } else if (batched && v->nb == 0 && node->shape.rank > target.rank) {
                    r = check_reshape(c, r, &li, at);
                }
                if (r != IR_NONE) r = ir_broadcast(c->f, r, &target);
            }
            refs[i] = r;
        }
        if (refs[i] == IR_NONE) return check_err_val();
    }
    ir_ref r = ir_ew(c->f, op, rt, &target, n, refs);
    return check_tensor(r, batched ? fr->nb : 0, pad, at);
}

/* Lowers op on n operands promoted together to `promoted`: each converted to the dtype the op
 * takes it in, the result of the dtype the op gives (ir/typing.c). */
static check_val lower_op(check_ctx *c, check_frame *fr, ir_op op, ir_dtype promoted, int n,
                          const check_val *args, src_loc at) {
    ir_dtype argt[3];
    for (int i = 0; i < n; i++)
        argt[i] = ir_op_operand_dtype(op, i, promoted);
    return lower_ew(c, fr, op, argt, ir_op_result_dtype(op, argt, promoted), n, args, at);
}

static int is_bool(const check_type *t) {
    return t->weak ? t->wk == CHECK_W_BOOL : t->t == IR_BOOL;
}

static int all_weak(const check_val *v, int n) {
    for (int i = 0; i < n; i++)
        if (v[i].kind != CHECK_WEAK) return 0;
    return 1;
}

static check_val lower_unary(check_ctx *c, check_frame *fr, const ast_expr *e) {
    check_val x = check_lower_expr(c, fr, e->u.unary.x);
    if (x.kind == CHECK_ERR) return x;
    check_type t = check_type_of(c, &x);
    ir_op op = e->u.unary.op;
    if (op == IR_OP_NOT && !is_bool(&t)) {
        check_error(c, e->loc, "operator '!' needs a bool operand, got %s", check_type_name(&t));
        return check_err_val();
    }
    if (op == IR_OP_NEG && is_bool(&t)) {
        check_error(c, e->loc, "operator '-' needs a numeric operand, got bool");
        return check_err_val();
    }
    if (x.kind == CHECK_WEAK) return check_fold_unary(op, &x);
    return lower_op(c, fr, op, t.t, 1, &x, e->loc);
}

static check_val lower_binary(check_ctx *c, check_frame *fr, const ast_expr *e) {
    check_val v[2];
    v[0] = check_lower_expr(c, fr, e->u.binary.l);
    v[1] = check_lower_expr(c, fr, e->u.binary.r);
    if (v[0].kind == CHECK_ERR || v[1].kind == CHECK_ERR) return check_err_val();
    ir_op op = e->u.binary.op;
    src_loc at = e->u.binary.op_loc;
    unsigned flags = ir_ops[op].flags;
    if (flags & IR_OPF_LOGIC) {
        for (int i = 0; i < 2; i++) {
            check_type t = check_type_of(c, &v[i]);
            if (!is_bool(&t)) {
                check_error(c, at, "operator '%s' needs bool operands, got %s", parse_op_token(op),
                            check_type_name(&t));
                return check_err_val();
            }
        }
        if (all_weak(v, 2)) return check_fold_binary(op, &v[0], &v[1]);
        return lower_op(c, fr, op, IR_BOOL, 2, v, at);
    }
    check_type t = check_promote(c, v, 2);
    if (!(flags & IR_OPF_CMP) && is_bool(&t)) {
        check_error(c, at, "operator '%s' needs numeric operands, got bool", parse_op_token(op));
        return check_err_val();
    }
    if (all_weak(v, 2)) return check_fold_binary(op, &v[0], &v[1]);
    return lower_op(c, fr, op, t.t, 2, v, at);
}

/* c ? a : b and where(c, a, b): v holds the three operands. */
static check_val lower_select(check_ctx *c, check_frame *fr, const check_val *v, const char *what,
                              src_loc at) {
    for (int i = 0; i < 3; i++)
        if (v[i].kind == CHECK_ERR) return check_err_val();
    check_type ct = check_type_of(c, &v[0]);
    if (!is_bool(&ct)) {
        check_error(c, v[0].loc, "condition of '%s' must be bool, got %s", what,
                    check_type_name(&ct));
        return check_err_val();
    }
    if (all_weak(v, 3)) return check_fold_builtin(IR_OP_WHERE, v, 3);
    check_type t = check_promote(c, v + 1, 2);
    return lower_op(c, fr, IR_OP_WHERE, t.t, 3, v, at);
}

/* ---- calls of built-ins ----------------------------------------------------------------- */

static check_val lower_reduce(check_ctx *c, ir_op op, const check_val *x, const ast_arg *axis) {
    const char *name = ir_ops[op].name;
    int32_t rank = 0;
    if (x->kind == CHECK_TENSOR) rank = check_logical(c, x).rank;
    uint32_t axes = rank > 0 ? (UINT32_C(1) << rank) - 1 : 0;
    int ok = 1;
    if (axis) {
        axes = 0;
        for (int32_t k = 0; k < axis->naxes; k++) {
            int64_t a = axis->axes[k], n = a < 0 ? a + rank : a;
            src_loc at = axis->axes_locs ? axis->axes_locs[k] : axis->loc;
            if (n < 0 || n >= rank) {
                check_error(c, at, "axis %" PRId64 " is out of range for a tensor of rank %d", a,
                            (int)rank);
                ok = 0;
            } else if (axes & (UINT32_C(1) << n)) {
                check_error(c, at, "axis %" PRId64 " is repeated", a);
                ok = 0;
            } else {
                axes |= UINT32_C(1) << n;
            }
        }
    }
    check_type t = check_type_of(c, x);
    int is_float = t.weak ? t.wk == CHECK_W_FLOAT : ir_dtype_is_float(t.t);
    if ((ir_ops[op].flags & IR_OPF_FLOATONLY) && !is_float) {
        check_error(c, x->loc, "'%s' takes a float argument, got %s", name, check_type_name(&t));
        ok = 0;
    }
    if (!ok) return check_err_val();
    /* a rank-0 value is its own reduction, of the kind the op gives (the sum of a bool is a
     * number) */
    if (x->kind == CHECK_WEAK) return check_weak_to(x, check_weak_result(op, x->wk));
    ir_dtype at = ir_op_operand_dtype(op, 0, t.t);
    ir_ref r = ir_cast(c->f, x->ref, at);
    if (axes) r = ir_reduce(c->f, op, r, axes << (x->nb + x->pad), ir_op_result_dtype(op, &at, at));
    return check_tensor(r, x->nb, x->pad, x->loc);
}

/* rand(seed, x): RAND of the seed and the index of x's shape (its values are not read) on
 * `stream`, the count of rand calls met before this one in the entry point, in source order
 * (the call before its arguments), inlined calls counted each time (SPEC §1). The seed is an
 * i64 scalar: a tensor of rank 0, or an integer literal. */
static check_val lower_rand(check_ctx *c, const check_val *v, int32_t stream) {
    check_type st = check_type_of(c, &v[0]);
    int int_lit = v[0].kind == CHECK_WEAK && v[0].wk == CHECK_W_INT;
    int scalar = v[0].kind == CHECK_TENSOR && c->f->nodes[v[0].ref].shape.rank == 0;
    if (!int_lit && !(scalar && !st.weak && st.t == IR_I64)) {
        const char *what = check_type_name(&st);
        if (v[0].kind == CHECK_TENSOR && !scalar)
            what =
                ir_arena_printf(c->a, "%s of rank %d", what, (int)c->f->nodes[v[0].ref].shape.rank);
        check_error(c, v[0].loc, "'rand' takes an i64 scalar seed, got %s", what);
        return check_err_val();
    }
    ir_ref seed = int_lit ? ir_const_int(c->f, IR_I64, v[0].i) : v[0].ref;
    ir_shape shape = {0};
    if (v[1].kind == CHECK_TENSOR) shape = c->f->nodes[v[1].ref].shape;
    ir_ref r = ir_rand(c->f, seed, &shape, stream);
    if (v[1].kind != CHECK_TENSOR) return check_tensor(r, 0, 0, v[1].loc);
    return check_tensor(r, v[1].nb, v[1].pad, v[1].loc);
}

/* argmax(x, axis=k) / argmin (one axis, or none: the flat index over every axis): the
 * extreme m = max(x) or min(x) over the axes, then the least index where x is m (where m is
 * NaN, where x is NaN): numpy's first index on ties and first NaN (SPEC §1). The index is
 * the row-major position within the reduced axes: an INDEX of x's shape with its kept axes
 * set to 1, broadcast. Both reductions run over the same axes, so they fuse into one kernel,
 * and a max of x the program takes too is the same node (CSE). Over nothing, the max or
 * min fails at launch. */
static check_val lower_argreduce(check_ctx *c, ir_op op, const check_val *x, const ast_arg *axis) {
    if (axis && axis->naxes != 1) {
        check_error(c, axis->loc, "'%s' takes one axis, got %d", ir_ops[op].name, (int)axis->naxes);
        return check_err_val();
    }
    ir_op ext = op == IR_OP_ARGMAX ? IR_OP_MAX : IR_OP_MIN;
    check_val m = lower_reduce(c, ext, x, axis);
    if (m.kind == CHECK_ERR) return m;
    ir_func *f = c->f;
    if (x->kind == CHECK_WEAK) return check_tensor(ir_const_int(f, IR_I64, 0), 0, 0, x->loc);
    const ir_shape xs = f->nodes[x->ref].shape;
    uint32_t axes = 0;
    for (int32_t a = 0; a < xs.rank; a++)
        if (f->nodes[m.ref].shape.dims[a].sym != xs.dims[a].sym ||
            f->nodes[m.ref].shape.dims[a].size != xs.dims[a].size)
            axes |= 1u << a;
    if (!axes) return check_tensor(ir_const_int(f, IR_I64, 0), 0, 0, x->loc); /* rank 0 */
    ir_ref mb = ir_broadcast(f, m.ref, &xs);
    ir_dtype t = f->nodes[x->ref].dtype;
    ir_ref eqa[2] = {x->ref, mb};
    ir_ref hit = ir_ew(f, IR_OP_EQ, IR_BOOL, &xs, 2, eqa);
    if (ir_dtype_is_float(t)) {
        ir_ref nm = ir_ew(f, IR_OP_ISNAN, IR_BOOL, &xs, 1, &mb);
        ir_ref nx = ir_ew(f, IR_OP_ISNAN, IR_BOOL, &xs, 1, &x->ref);
        ir_ref wa[3] = {nm, nx, hit};
        hit = ir_ew(f, IR_OP_WHERE, IR_BOOL, &xs, 3, wa);
    }
    ir_shape sub = ir_shape_reduce(&xs, ~axes & ((1u << xs.rank) - 1));
    ir_ref idx = ir_broadcast(f, ir_index(f, &sub), &xs);
    ir_ref none = ir_const_int(f, IR_I64, INT64_MAX);
    ir_ref sa[3] = {hit, idx, none};
    ir_ref sel = ir_ew(f, IR_OP_WHERE, IR_I64, &xs, 3, sa);
    ir_ref r = ir_reduce(f, IR_OP_MIN, sel, axes, IR_I64);
    return check_tensor(r, x->nb, x->pad, x->loc);
}

static check_val lower_builtin(check_ctx *c, check_frame *fr, const ast_expr *e, ir_op op) {
    const char *name = ir_ops[op].name;
    int reduce = ir_ops[op].cls == IR_CLASS_REDUCE;
    int arity = reduce ? 1 : ir_ops[op].arity;
    int32_t npos = 0;
    const ast_arg *axis = NULL;
    int ok = 1;
    for (int32_t i = 0; i < e->u.call.nargs; i++) {
        const ast_arg *a = &e->u.call.args[i];
        if (!a->is_axis) {
            npos++;
        } else if (!reduce) {
            check_error(c, a->loc, "'%s' takes no axis argument", name);
            ok = 0;
        } else if (axis) {
            check_error(c, a->loc, "axis is given twice");
            ok = 0;
        } else {
            axis = a;
        }
        if (a->axis_too_large) { /* the parser said so; its stand-in is no axis of the user's */
            c->errors++;
            ok = 0;
        }
    }
    if (npos != arity) {
        check_error(c, e->loc, "'%s' takes %d argument%s, got %d", name, arity,
                    arity == 1 ? "" : "s", (int)npos);
        ok = 0;
    }
    int32_t stream = (ir_ops[op].flags & IR_OPF_RANDOM) ? c->nrand++ : 0;
    check_val v[3];
    int32_t k = 0;
    for (int32_t i = 0; i < e->u.call.nargs; i++) {
        const ast_arg *a = &e->u.call.args[i];
        if (a->is_axis) continue;
        check_val x = check_lower_expr(c, fr, a->expr);
        if (x.kind == CHECK_ERR) ok = 0;
        if (k < 3) v[k++] = x;
    }
    if (!ok) return check_err_val();
    if (ir_ops[op].flags & IR_OPF_ARGREDUCE) return lower_argreduce(c, op, &v[0], axis);
    if (reduce) return lower_reduce(c, op, &v[0], axis);
    unsigned flags = ir_ops[op].flags;
    if (flags & IR_OPF_RANDOM) return lower_rand(c, v, stream);
    if (flags & IR_OPF_SELECT) return lower_select(c, fr, v, name, e->loc);
    check_type t = check_promote(c, v, arity);
    /* float functions take bools and integers as f32; numeric ones take no bool */
    if (!(flags & IR_OPF_FLOATFN) && is_bool(&t)) {
        check_error(c, v[0].loc, "'%s' needs numeric arguments, got bool", name);
        return check_err_val();
    }
    if (all_weak(v, arity)) return check_fold_builtin(op, v, arity);
    return lower_op(c, fr, op, t.t, arity, v, e->loc);
}

static check_val lower_call(check_ctx *c, check_frame *fr, const ast_expr *e) {
    const char *name = e->u.call.name ? e->u.call.name : "";
    ir_op op;
    if (ir_op_lookup_builtin(name, strlen(name), &op)) return lower_builtin(c, fr, e, op);
    int32_t callee = check_map_get(&c->funcs, name);
    if (callee >= 0) return check_lower_call(c, fr, e, callee);
    check_error(c, e->loc, "unknown function '%s'", name);
    for (int32_t i = 0; i < e->u.call.nargs; i++)
        if (!e->u.call.args[i].is_axis) check_lower_expr(c, fr, e->u.call.args[i].expr);
    return check_err_val();
}

/* ---- expressions ------------------------------------------------------------------------- */

static check_val lower_name(check_ctx *c, check_frame *fr, const ast_expr *e) {
    const char *name = e->u.name.name ? e->u.name.name : "";
    int32_t b = check_map_get(&fr->scope, name);
    if (b >= 0) {
        fr->binds[b].used = 1;
        return fr->binds[b].v;
    }
    ir_op op;
    if (check_map_get(&c->funcs, name) >= 0 || ir_op_lookup_builtin(name, strlen(name), &op)) {
        check_error(c, e->loc, "'%s' is a function, not a value", name);
    } else if (c->after_syntax_errors) {
        c->errors++; /* probably a let the parser dropped */
    } else {
        check_error(c, e->loc, "undefined name '%s'", name);
    }
    return check_err_val();
}

static check_val lower_expr_kind(check_ctx *c, check_frame *fr, const ast_expr *e) {
    check_val v = check_err_val();
    switch (e->kind) {
    case AST_INT:
        if (e->u.ilit.too_large) { /* the parser said so; its stand-in is no number to check */
            c->errors++;
            return v;
        }
        v.kind = CHECK_WEAK;
        v.wk = CHECK_W_INT;
        v.i = e->u.ilit.value;
        return v;
    case AST_FLOAT:
        v.kind = CHECK_WEAK;
        v.wk = CHECK_W_FLOAT;
        v.f = e->u.flit.value;
        return v;
    case AST_BOOL:
        v.kind = CHECK_WEAK;
        v.wk = CHECK_W_BOOL;
        v.i = e->u.blit.value != 0;
        return v;
    case AST_NAME: return lower_name(c, fr, e);
    case AST_UNARY: return lower_unary(c, fr, e);
    case AST_BINARY: return lower_binary(c, fr, e);
    case AST_TERNARY: {
        check_val t[3];
        t[0] = check_lower_expr(c, fr, e->u.ternary.c);
        t[1] = check_lower_expr(c, fr, e->u.ternary.a);
        t[2] = check_lower_expr(c, fr, e->u.ternary.b);
        return lower_select(c, fr, t, "?:", e->loc);
    }
    case AST_CALL: return lower_call(c, fr, e);
    case AST_CAST: {
        check_val x = check_lower_expr(c, fr, e->u.cast.x);
        if (x.kind == CHECK_WEAK)
            return check_tensor(check_const_cast(c, &x, e->u.cast.to), 0, 0, e->loc);
        if (x.kind == CHECK_TENSOR) x.ref = ir_cast(c->f, x.ref, e->u.cast.to);
        return x;
    }
    }
    return v;
}

check_val check_lower_expr(check_ctx *c, check_frame *fr, const ast_expr *e) {
    if (!e || c->oversized) {
        c->errors++;
        return check_err_val();
    }
    if (++c->visits > CHECK_MAX_VISITS || c->f->nnodes > CHECK_MAX_NODES ||
        c->nest >= CHECK_MAX_NEST) {
        c->oversized = 1;
        c->errors++;
        return check_err_val();
    }
    c->nest++;
    check_val v = lower_expr_kind(c, fr, e);
    c->nest--;
    v.loc = e->loc;
    return v;
}

/* ---- function bodies ---------------------------------------------------------------------- */

/* The declared type's shape in frame fr; 0 when a dim name is bound by no parameter (the
 * entry point reported it). */
static int declared_shape(check_ctx *c, check_frame *fr, const ast_type *t, ir_shape *out) {
    memset(out, 0, sizeof *out);
    for (int32_t i = 0; i < t->rank; i++) {
        const ast_dim *d = &t->dims[i];
        if (!d->name) {
            out->dims[i] = ir_dim_lit(d->size);
        } else {
            int32_t k = check_map_get(&fr->dimmap, d->name);
            if (k < 0) {
                c->errors++;
                return 0;
            }
            out->dims[i] = fr->dims[k];
        }
    }
    out->rank = t->rank;
    return 1;
}

/* Result k checked against its declared type and given that dtype (a weak constant takes
 * it; a tensor must have it already). */
static check_val check_result(check_ctx *c, check_frame *fr, int32_t k, check_val v,
                              const ir_shape *decl) {
    const ast_type *rt = &fr->fn->rets[k];
    if (v.kind == CHECK_ERR) return v;
    check_type t = check_type_of(c, &v);
    ir_dtype have = t.weak ? check_weak_meets(t.wk, rt->dtype) : t.t;
    int ok = 1;
    if (have != rt->dtype) {
        check_error(c, v.loc, "return value %d has type %s, declared %s (cast explicitly)",
                    (int)k + 1, check_type_name(&t), ir_dtypes[rt->dtype].name);
        ok = 0;
    }
    ir_shape logical = check_logical(c, &v);
    if (decl && !ir_shape_squeeze_equal(&logical, decl)) {
        check_error(c, v.loc, "return value %d has shape %s, declared %s", (int)k + 1,
                    check_shape_str(c, &logical), check_shape_str(c, decl));
        ok = 0;
    }
    if (!ok) return check_err_val();
    if (v.kind == CHECK_WEAK) return check_tensor(check_materialize(c, &v, rt->dtype), 0, 0, v.loc);
    return v;
}

int check_lower_body(check_ctx *c, check_frame *fr, check_val *results, ir_shape *decl) {
    const ast_func *fn = fr->fn;
    int32_t before = c->errors;
    for (int32_t i = 0; i < fn->nlets; i++) {
        const ast_let *let = &fn->lets[i];
        check_val v = check_lower_expr(c, fr, let->value);
        check_bind(c, fr, let->name, let->loc, v, 0);
    }
    if (fn->nresults == 0) {
        c->errors++; /* the parser reported the missing or broken return */
        return 0;
    }
    if (fn->nresults != fn->nrets) {
        check_error(c, fn->return_loc,
                    "function '%s' returns %d value%s but is declared to return %d", fn->name,
                    (int)fn->nresults, fn->nresults == 1 ? "" : "s", (int)fn->nrets);
        for (int32_t k = 0; k < fn->nresults; k++)
            check_lower_expr(c, fr, fn->results[k]);
        return 0;
    }
    for (int32_t k = 0; k < fn->nresults; k++) {
        check_val v = check_lower_expr(c, fr, fn->results[k]);
        int known = declared_shape(c, fr, &fn->rets[k], &decl[k]);
        results[k] = check_result(c, fr, k, v, known ? &decl[k] : NULL);
    }
    return c->errors == before;
}

/* ---- entry points -------------------------------------------------------------------------- */

/* Drops the nodes no output needs (an unused let, a callee's unused lets); INPUT nodes stay
 * since they are the parameters. Nodes keep their order, so operands stay earlier. */
static int remove_dead(check_ctx *c, ir_func *f) {
    int32_t n = f->nnodes;
    if (n == 0) return 1;
    uint8_t *live = ir_arena_calloc(c->a, (size_t)n, 1);
    ir_ref *map = ir_arena_calloc(c->a, (size_t)n, sizeof *map);
    if (!live || !map) return 0;
    for (int32_t i = n - 1; i >= 0; i--) {
        const ir_node *node = &f->nodes[i];
        if (node->op == IR_OP_OUTPUT || node->op == IR_OP_INPUT) live[i] = 1;
        if (!live[i]) continue;
        for (int a = 0; a < ir_ops[node->op].arity; a++)
            live[node->args[a]] = 1;
    }
    int32_t j = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!live[i]) {
            map[i] = IR_NONE;
            continue;
        }
        ir_node node = f->nodes[i];
        for (int a = 0; a < ir_ops[node.op].arity; a++)
            node.args[a] = map[node.args[a]];
        map[i] = j;
        f->nodes[j++] = node;
    }
    f->nnodes = j;
    for (int32_t i = 0; i < f->nparams; i++)
        f->params[i].node = map[f->params[i].node];
    for (int32_t i = 0; i < f->noutputs; i++)
        f->outputs[i].node = map[f->outputs[i].node];
    return 1;
}

/* The parameters as INPUT nodes, their dim names as the function's symbols. */
static void bind_params(check_ctx *c, check_frame *fr) {
    const ast_func *fn = fr->fn;
    for (int32_t i = 0; i < fn->nparams; i++) {
        const ast_param *p = &fn->params[i];
        ir_shape s = {0};
        s.rank = p->type.rank;
        for (int32_t k = 0; k < p->type.rank; k++) {
            const ast_dim *d = &p->type.dims[k];
            if (!d->name) {
                s.dims[k] = ir_dim_lit(d->size);
                continue;
            }
            s.dims[k] = ir_dim_sym(ir_func_symbol(c->f, d->name));
            if (check_map_get(&fr->dimmap, d->name) < 0) {
                fr->dims[fr->ndims] = s.dims[k];
                check_map_put(&fr->dimmap, d->name, fr->ndims++);
            }
        }
        ir_ref r = ir_add_input(c->f, p->name ? p->name : "?", p->type.dtype, &s);
        check_bind(c, fr, p->name, p->loc, check_tensor(r, 0, 0, p->loc), 1);
    }
}

/* Compares what inlining would cost with the limits; 0 after reporting one. */
static int within_limits(check_ctx *c, const ast_func *fn, const check_fninfo *fi) {
    if (fi->in_cycle || fi->reaches_cycle) return 1; /* their calls are never inlined */
    if (fi->cost > CHECK_MAX_VISITS) {
        check_error(c, fn->loc, "function '%s' is too large after inlining", fn->name);
        return 0;
    }
    if (fi->calldepth > CHECK_MAX_INLINE_DEPTH) {
        check_error(c, fn->loc, "function '%s' nests calls more than %d deep", fn->name,
                    CHECK_MAX_INLINE_DEPTH);
        return 0;
    }
    if (fi->nest > CHECK_MAX_NEST) {
        check_error(c, fn->loc, "function '%s' nests expressions too deeply after inlining",
                    fn->name);
        return 0;
    }
    return 1;
}

int check_name_ok(check_ctx *c, int32_t index) {
    const ast_func *fn = &c->file->funcs[index];
    const check_fninfo *fi = &c->info[index];
    c->quiet = 0;
    c->outer_name = NULL;
    if (fi->dup_of >= 0) {
        check_error(c, fn->loc, "function '%s' is already defined at line %d", fn->name,
                    (int)c->file->funcs[fi->dup_of].loc.line);
        return 0;
    }
    if (fi->builtin_name) {
        check_error(c, fn->loc, "function '%s' has the name of a built-in function", fn->name);
        return 0;
    }
    return 1;
}

static void check_entry(check_ctx *c, int32_t index);

void check_body_entry(check_ctx *c, int32_t index) {
    if (c->grad_state[index]) return;
    c->grad_state[index] = 2;
    check_entry(c, index);
}

static void check_entry(check_ctx *c, int32_t index) {
    const ast_func *fn = &c->file->funcs[index];
    const check_fninfo *fi = &c->info[index];
    if (!check_name_ok(c, index)) return;
    c->f = ir_func_new(c->scratch, fn->name ? fn->name : "?");
    c->entry = index;
    c->errors = 0;
    c->no_inline = c->oversized = 0;
    c->visits = 0;
    c->nest = c->inline_depth = 0;
    c->nrand = 0;
    int32_t reported = c->reported;

    check_frame top;
    check_val *results = ir_arena_calloc(c->a, (size_t)fn->nrets + 1, sizeof *results);
    ir_shape *decl = ir_arena_calloc(c->a, (size_t)fn->nrets + 1, sizeof *decl);
    if (!c->f || !results || !decl || !check_frame_init(c, &top, fn, NULL)) {
        check_error(c, fn->loc, "out of memory");
        return;
    }
    bind_params(c, &top);
    for (int32_t k = 0; k < fn->nrets; k++)
        for (int32_t i = 0; i < fn->rets[k].rank; i++) {
            const ast_dim *d = &fn->rets[k].dims[i];
            if (d->name && check_map_get(&top.dimmap, d->name) < 0)
                check_error(c, d->loc, "dim '%s' of the result is not bound by any parameter",
                            d->name);
        }
    if (fn->nparams + fn->nrets > IR_MAX_ARGS)
        check_error(c, fn->loc,
                    "function '%s' has %d parameters and results; a launch takes at most %d",
                    fn->name, (int)(fn->nparams + fn->nrets), IR_MAX_ARGS);
    int large = !within_limits(c, fn, fi);
    c->no_inline = large;
    check_lower_body(c, &top, results, decl);
    if (c->oversized && !large)
        check_error(c, fn->loc, "function '%s' is too large after inlining", fn->name);

    if (!c->after_syntax_errors && !c->oversized)
        for (int32_t i = 0; i < top.nbinds; i++)
            /* a let whose value is an error has had its message */
            if (!top.binds[i].used && (top.binds[i].is_param || top.binds[i].v.kind != CHECK_ERR))
                diag_warning(c->d, top.binds[i].loc, "unused %s '%s'",
                             top.binds[i].is_param ? "parameter" : "variable", top.binds[i].name);

    if (c->errors > 0) {
        if (c->reported == reported) c->failed_silently++;
        return;
    }
    for (int32_t k = 0; k < fn->nrets; k++)
        ir_add_output(c->f, results[k].ref, fn->rets[k].dtype, &decl[k]);
    char err[256];
    if (!remove_dead(c, c->f) || ir_verify(c->f, err, sizeof err) != 0) {
        assert(!"check_file built a function the verifier rejects");
        diag_internal_error(c->d, "function '%s' does not verify: %s", fn->name, err);
        c->reported++;
        return;
    }
    c->built[index] = c->f;
}

static void check_all(check_ctx *c) {
    if (!check_graph(c)) {
        diag_file_error(c->d, "out of memory");
        c->reported++;
        return;
    }
    int32_t n = c->file->nfuncs;
    c->built = ir_arena_calloc(c->a, (size_t)n, sizeof *c->built);
    c->grad_state = ir_arena_calloc(c->a, (size_t)n, 1);
    /* in file order; a gradient checks the function it differentiates first when that
     * comes later (it starts from that function's IR) */
    for (int32_t i = 0; i < n; i++)
        if (c->file->funcs[i].grad_of)
            check_grad_entry(c, i);
        else
            check_body_entry(c, i);
    for (int32_t i = 0; i < n; i++)
        if (c->built[i])
            IR_VEC_PUSH(c->a, c->out->funcs, c->out->nfuncs, c->out->cap_funcs, c->built[i]);
    if (c->failed_silently && c->reported == 0 && !c->after_syntax_errors) {
        /* every failure has a message somewhere; this would be a checker bug */
        diag_internal_error(c->d, "a function failed to check without a message");
        c->reported++;
    }
}

int check_file(diag_ctx *d, const ast_file *file, ir_module **out) {
    ir_module *m = ir_module_new(d->arena);
    *out = m;
    check_ctx *c = ir_arena_alloc(d->arena, sizeof *c); /* not on the stack: see longjmp */
    if (!m || !c) {
        diag_file_error(d, "out of memory");
        return 1;
    }
    if (!file || file->nfuncs == 0) {
        if (d->nerrors == 0) diag_file_warning(d, "no functions in file");
        return 0;
    }
    c->d = d;
    c->a = d->arena;
    c->file = file;
    c->out = m;
    c->after_syntax_errors = d->nerrors > 0;
    c->scratch = ir_module_new(d->arena);
    if (!c->scratch) {
        diag_file_error(d, "out of memory");
        return 1;
    }
    /* Without an out-of-memory handler the arena (and the IR builders) return NULL: catch
     * that here, as parse_file does, rather than check every allocation. */
    jmp_buf oom;
    jmp_buf *saved = d->arena->oom;
    if (!saved) {
        if (setjmp(oom)) {
            d->arena->oom = NULL;
            diag_file_error(d, "out of memory");
            m->nfuncs = 0;
            return c->reported + 1;
        }
        d->arena->oom = &oom;
    }
    check_all(c);
    d->arena->oom = saved;
    return c->reported;
}
