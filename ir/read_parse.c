/* ir/read_parse.c: the IR reader's first half: the lines of a function's text into the
 * tables of ir_rd_func (ir/read_parse.h), with a message at the line and column of the first
 * thing that is not what the printer (ir/print.c) writes there. Names are looked up in the
 * tables the printer prints from (ir_ops, ir_dtypes, ir_kernel_kind_name), so the reader
 * knows every op, dtype and kind the printer does. Whether the nodes make sense together is
 * for ir/read.c and the verifier. */
#include "read_parse.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read.h"

int ir_rd_fail(char *err, size_t errlen, ir_rd_pos pos, const char *fmt, ...) {
    if (!err || !errlen) return -1;
    int n = snprintf(err, errlen, "%d:%d: ", (int)pos.line, (int)pos.col);
    if (n < 0 || (size_t)n >= errlen) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- the cursor on one line ------------------------------------------------------------ */

typedef struct cur {
    const char *s, *p, *end; /* the line's start, the position, the line's end (no newline) */
    int32_t line;
    ir_func *f; /* where symbol names go */
    char *err;
    size_t errlen;
} cur;

static ir_rd_pos here(const cur *c) {
    ir_rd_pos pos = {c->line, (int32_t)(c->p - c->s) + 1};
    return pos;
}

static void blanks(cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

static int at_end(cur *c) {
    blanks(c);
    return c->p >= c->end;
}

static int is_word_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_';
}

/* What the cursor is at, for messages: the word there, or the one other character there
 * (non-printable as '?'), quoted; or "end of line". */
static const char *found(const cur *c, char *buf, size_t n) {
    if (c->p >= c->end) return "end of line";
    size_t i = 0;
    buf[i++] = '\'';
    const char *q = c->p;
    if (!is_word_char(*q)) buf[i++] = *q >= 0x20 && *q < 0x7f ? *q : '?';
    for (; q < c->end && i + 5 < n && is_word_char(*q); q++)
        buf[i++] = *q;
    buf[i++] = '\'';
    buf[i] = 0;
    return buf;
}

/* "L:C: expected WHAT, found ..." at the cursor. */
static int expected(cur *c, const char *what) {
    char buf[40];
    return ir_rd_fail(c->err, c->errlen, here(c), "expected %s, found %s", what,
                      found(c, buf, sizeof buf));
}

/* The character ch after blanks: 0 and past it, else -1 with "expected WHAT". */
static int expect(cur *c, char ch, const char *what) {
    blanks(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 0;
    }
    return expected(c, what);
}

/* kw after blanks: 1 and past it; a keyword that ends in a letter must end the word there. */
static int keyword(cur *c, const char *kw) {
    blanks(c);
    size_t n = strlen(kw);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, kw, n) != 0) return 0;
    if (is_word_char(kw[n - 1]) && c->p + n < c->end && is_word_char(c->p[n])) return 0;
    c->p += n;
    return 1;
}

/* A word of letters, digits and '_' (and '-' with dash) after blanks; its length (0: none). */
static size_t word(cur *c, const char **s, int dash) {
    blanks(c);
    *s = c->p;
    while (c->p < c->end && (is_word_char(*c->p) || (dash && *c->p == '-')))
        c->p++;
    return (size_t)(c->p - *s);
}

/* A decimal integer after blanks, with an optional '-': 0 and *v, else -1 with a message. */
static int integer(cur *c, int64_t *v) {
    blanks(c);
    ir_rd_pos pos = here(c);
    int neg = c->p < c->end && *c->p == '-';
    if (neg) c->p++;
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return expected(c, "a number");
    uint64_t u = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++) {
        unsigned d = (unsigned)(*c->p - '0');
        if (u > (limit - d) / 10)
            return ir_rd_fail(c->err, c->errlen, pos, "number out of range (64 bits)");
        u = u * 10 + d;
    }
    *v = neg ? (u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u) : (int64_t)u;
    return 0;
}

/* An integer from 0 to max (a count, a position, an axis): 0 and *v, else -1. */
static int small(cur *c, int32_t max, const char *what, int32_t *v) {
    blanks(c);
    ir_rd_pos pos = here(c);
    int64_t x;
    if (integer(c, &x)) return -1;
    if (x < 0 || x > max)
        return ir_rd_fail(c->err, c->errlen, pos, "%s %" PRId64 " out of range (0 to %d)", what, x,
                          (int)max);
    *v = (int32_t)x;
    return 0;
}

/* "%N" after blanks: 0, *r and where it is, else -1. */
static int ref(cur *c, ir_ref *r, ir_rd_pos *pos) {
    blanks(c);
    *pos = here(c);
    if (c->p >= c->end || *c->p != '%') return expected(c, "a node '%N'");
    c->p++;
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return expected(c, "a node number");
    return small(c, INT32_MAX - 1, "node number", r);
}

/* ---- types and lists ------------------------------------------------------------------- */

/* "[D, ...]": each dim a size or a symbol's name (added to the function's symbols). */
static int shape(cur *c, ir_shape *s) {
    memset(s, 0, sizeof *s);
    if (expect(c, '[', "'[' and the dims")) return -1;
    if (keyword(c, "]")) return 0;
    for (;;) {
        blanks(c);
        if (s->rank == IR_MAX_RANK)
            return ir_rd_fail(c->err, c->errlen, here(c), "more than %d dims", IR_MAX_RANK);
        const char *w;
        size_t n = word(c, &w, 0);
        if (n && !(w[0] >= '0' && w[0] <= '9')) {
            char *name = ir_arena_strndup(c->f->arena, w, n);
            int32_t sym = name ? ir_func_symbol(c->f, name) : -1;
            if (sym < 0) return ir_rd_fail(c->err, c->errlen, here(c), "out of memory");
            s->dims[s->rank++] = ir_dim_sym(sym);
        } else {
            c->p = w; /* a size: read it again as a number */
            if (c->p >= c->end || (*c->p != '-' && (*c->p < '0' || *c->p > '9')))
                return expected(c, "a dim (a size or a name)");
            int64_t v;
            if (integer(c, &v)) return -1;
            if (v < 0) return ir_rd_fail(c->err, c->errlen, here(c), "negative dim %" PRId64, v);
            s->dims[s->rank++] = ir_dim_lit(v);
        }
        if (keyword(c, "]")) return 0;
        if (expect(c, ',', "',' or ']'")) return -1;
    }
}

/* "DTYPE[DIMS]". */
static int type(cur *c, ir_dtype *t, ir_shape *s) {
    const char *w;
    size_t n = word(c, &w, 0);
    if (!n) return expected(c, "a dtype");
    if (!ir_dtype_lookup(w, n, t)) {
        c->p = w;
        char buf[40];
        return ir_rd_fail(c->err, c->errlen, here(c), "unknown dtype %s",
                          found(c, buf, sizeof buf));
    }
    return shape(c, s);
}

/* "(A, B, ...)" of axes: a mask, each axis below 32 and greater than the one before. */
static int axes(cur *c, uint32_t *mask) {
    *mask = 0;
    if (expect(c, '(', "'(' and the axes")) return -1;
    if (keyword(c, ")")) return 0;
    int32_t last = -1;
    for (;;) {
        ir_rd_pos pos;
        int32_t a;
        blanks(c);
        pos = here(c);
        if (small(c, 31, "axis", &a)) return -1;
        if (a <= last)
            return ir_rd_fail(c->err, c->errlen, pos, "axis %d after axis %d (axes go up)", (int)a,
                              (int)last);
        *mask |= 1u << a;
        last = a;
        if (keyword(c, ")")) return 0;
        if (expect(c, ',', "',' or ')'")) return -1;
    }
}

/* "(X, ...)" of node refs (refs) or of positions (!refs) into an arena array. */
static int list(cur *c, int refs, int32_t **out, int32_t *n) {
    int32_t cap = 0;
    *out = NULL;
    *n = 0;
    if (expect(c, '(', "'('")) return -1;
    if (keyword(c, ")")) return 0;
    for (;;) {
        int32_t v;
        ir_rd_pos pos;
        if (refs ? ref(c, &v, &pos) : small(c, INT32_MAX - 1, "part start", &v)) return -1;
        IR_VEC_PUSH(c->f->arena, *out, *n, cap, v);
        if (!*out) return ir_rd_fail(c->err, c->errlen, here(c), "out of memory");
        if (keyword(c, ")")) return 0;
        if (expect(c, ',', "',' or ')'")) return -1;
    }
}

/* ---- node lines ------------------------------------------------------------------------ */

/* An INPUT's `K "name"`, or an OUTPUT's `K`: the index, and the name into nd. */
static int leaf_index(cur *c, ir_rd_node *nd) {
    if (small(c, INT32_MAX - 1, "index", &nd->node.index)) return -1;
    if (nd->node.op != IR_OP_INPUT) return 0;
    if (expect(c, '"', "the parameter's name in quotes")) return -1;
    const char *s = c->p;
    while (c->p < c->end && *c->p != '"') {
        if ((unsigned char)*c->p < 0x20 || *c->p == 0x7f)
            return ir_rd_fail(c->err, c->errlen, here(c), "a control character in a name");
        c->p++;
    }
    if (c->p >= c->end)
        return ir_rd_fail(c->err, c->errlen, here(c), "the name has no closing '\"'");
    nd->name = ir_arena_strndup(c->f->arena, s, (size_t)(c->p - s));
    c->p++;
    return nd->name ? 0 : ir_rd_fail(c->err, c->errlen, here(c), "out of memory");
}

/* A float constant: what strtod reads of the whole word (the printer's shortest round-trip
 * form, "nan", "-nan", "inf", "-inf"), but no overflow to an infinity. */
static int float_value(cur *c, const char *w, size_t n, ir_rd_pos pos, double *v) {
    char buf[64], *end;
    if (n >= sizeof buf) return ir_rd_fail(c->err, c->errlen, pos, "constant too long");
    memcpy(buf, w, n);
    buf[n] = 0;
    *v = strtod(buf, &end);
    if (end != buf + n || !n)
        return ir_rd_fail(c->err, c->errlen, pos, "bad float constant '%s'", buf);
    if (isinf(*v) && strpbrk(buf, "0123456789")) /* a number past DBL_MAX, not "inf" */
        return ir_rd_fail(c->err, c->errlen, pos, "float constant '%s' out of range", buf);
    return 0;
}

/* A constant's value (the word at pos, read once the dtype is known) into nd. */
static int const_value(cur *c, ir_rd_node *nd, const char *w, size_t n, ir_rd_pos pos) {
    ir_node *node = &nd->node;
    if (ir_dtype_is_float(node->dtype)) return float_value(c, w, n, pos, &node->value.f);
    if (node->dtype == IR_BOOL) {
        int t = n == 4 && !memcmp(w, "true", 4), f = n == 5 && !memcmp(w, "false", 5);
        if (!t && !f)
            return ir_rd_fail(c->err, c->errlen, pos, "bad bool constant (true or false)");
        node->value.i = t;
        return 0;
    }
    cur sub = *c; /* an integer: exactly the word */
    sub.p = w;
    sub.end = w + n;
    if (integer(&sub, &node->value.i)) return -1;
    if (sub.p != sub.end) return ir_rd_fail(c->err, c->errlen, pos, "bad integer constant");
    return 0;
}

/* The operands: up to three "%N" separated by ',', as many as the op takes. */
static int operands(cur *c, ir_rd_node *nd, ir_rd_pos op_pos) {
    const ir_op_info *oi = &ir_ops[nd->node.op];
    int n = 0;
    blanks(c);
    while (c->p < c->end && *c->p == '%') {
        if (n == 3) return ir_rd_fail(c->err, c->errlen, here(c), "more than 3 operands");
        if (ref(c, &nd->node.args[n], &nd->arg_pos[n])) return -1;
        n++;
        if (!keyword(c, ",")) break;
        blanks(c);
        if (c->p >= c->end || *c->p != '%') return expected(c, "an operand after ','");
    }
    if (n != oi->arity)
        return ir_rd_fail(c->err, c->errlen, op_pos, "%s takes %d operand%s, not %d", oi->name,
                          oi->arity, oi->arity == 1 ? "" : "s", n);
    return 0;
}

/* The op's name after '=': 0 and *op, else -1 ("unknown op"). */
static int op_name(cur *c, ir_op *op) {
    const char *w;
    size_t n = word(c, &w, 0);
    for (int i = 0; n && i < IR_OP_COUNT; i++)
        if (strlen(ir_ops[i].name) == n && !memcmp(ir_ops[i].name, w, n)) {
            *op = (ir_op)i;
            return 0;
        }
    if (!n) return expected(c, "an op");
    c->p = w;
    char buf[40];
    return ir_rd_fail(c->err, c->errlen, here(c), "unknown op %s", found(c, buf, sizeof buf));
}

/* "%N = OP [K "name" | VALUE | K] [%A, ...] [axes=(..)] [stream=N] : TYPE [stored]", the line's
 * node appended to rf with `kernel`. */
static int node_line(cur *c, ir_rd_func *rf, int32_t kernel) {
    ir_rd_node nd;
    memset(&nd, 0, sizeof nd);
    nd.node.args[0] = nd.node.args[1] = nd.node.args[2] = IR_NONE;
    nd.node.kernel = -1;
    nd.kernel = kernel;
    if (ref(c, &nd.ref, &nd.pos) || expect(c, '=', "'='")) return -1;
    blanks(c);
    ir_rd_pos op_pos = here(c), value_pos = op_pos;
    const char *value = NULL;
    size_t nvalue = 0;
    if (op_name(c, &nd.node.op)) return -1;
    if (nd.node.op == IR_OP_INPUT || nd.node.op == IR_OP_OUTPUT) {
        if (leaf_index(c, &nd)) return -1;
    } else if (nd.node.op == IR_OP_CONST) {
        blanks(c);
        value_pos = here(c);
        for (value = c->p; c->p < c->end && *c->p != ' ' && *c->p != '\t' && *c->p != ':';)
            c->p++;
        nvalue = (size_t)(c->p - value);
        if (!nvalue) return expected(c, "the constant's value");
    }
    if (operands(c, &nd, op_pos)) return -1;
    if (ir_ops[nd.node.op].cls == IR_CLASS_REDUCE) {
        if (!keyword(c, "axes=")) return expected(c, "'axes=(..)'");
        if (axes(c, &nd.node.axes)) return -1;
    }
    if (ir_ops[nd.node.op].flags & IR_OPF_RANDOM) {
        if (!keyword(c, "stream=")) return expected(c, "'stream=N'");
        if (small(c, INT32_MAX - 1, "stream", &nd.node.index)) return -1;
    }
    if (expect(c, ':', "':' and the node's type") || type(c, &nd.node.dtype, &nd.node.shape))
        return -1;
    if (value && const_value(c, &nd, value, nvalue, value_pos)) return -1;
    if (keyword(c, "stored")) nd.node.flags |= IR_NODE_STORED;
    if (!at_end(c)) return expected(c, "the end of the line");
    IR_VEC_PUSH(rf->f->arena, rf->nodes, rf->nnodes, rf->cap_nodes, nd);
    return rf->nodes ? 0 : ir_rd_fail(c->err, c->errlen, nd.pos, "out of memory");
}

/* ---- kernel and func lines ------------------------------------------------------------- */

/* The kind's name, as the printer spells it. */
static int kernel_kind(cur *c, ir_kernel_kind *kind) {
    const char *w;
    size_t n = word(c, &w, 1);
    for (int k = IR_KERNEL_POINTWISE; n && k <= IR_KERNEL_COMBINED; k++) {
        const char *name = ir_kernel_kind_name((ir_kernel_kind)k);
        if (strlen(name) == n && !memcmp(name, w, n)) {
            *kind = (ir_kernel_kind)k;
            return 0;
        }
    }
    c->p = w;
    char buf[40];
    return ir_rd_fail(c->err, c->errlen, here(c), "unknown kernel kind %s",
                      found(c, buf, sizeof buf));
}

/* "kernel K KIND domain=[..] [reduce=(..)] [parts=(..)] in=(..) out=(..)" after "kernel":
 * the kernel appended to rf (its number must be the next one). */
static int kernel_line(cur *c, ir_rd_func *rf, ir_rd_pos pos) {
    ir_rd_kernel rk;
    memset(&rk, 0, sizeof rk);
    rk.pos = pos;
    ir_kernel *k = &rk.kernel;
    blanks(c);
    ir_rd_pos num_pos = here(c);
    int32_t num;
    if (small(c, INT32_MAX - 1, "kernel number", &num)) return -1;
    if (num != rf->nkernels)
        return ir_rd_fail(c->err, c->errlen, num_pos, "kernel %d where kernel %d comes next",
                          (int)num, (int)rf->nkernels);
    if (kernel_kind(c, &k->kind)) return -1;
    if (!keyword(c, "domain=")) return expected(c, "'domain=[..]'");
    if (shape(c, &k->domain)) return -1;
    if (keyword(c, "reduce=") && axes(c, &k->reduce_axes)) return -1;
    if (keyword(c, "parts=") && list(c, 0, &k->parts, &k->nparts)) return -1;
    if (!keyword(c, "in=")) return expected(c, "'in=(..)'");
    if (list(c, 1, &k->inputs, &k->ninputs)) return -1;
    if (!keyword(c, "out=")) return expected(c, "'out=(..)'");
    if (list(c, 1, &k->outputs, &k->noutputs)) return -1;
    if (!at_end(c)) return expected(c, "the end of the line");
    k->cap_parts = k->nparts;
    k->cap_inputs = k->ninputs;
    k->cap_outputs = k->noutputs;
    IR_VEC_PUSH(rf->f->arena, rf->kernels, rf->nkernels, rf->cap_kernels, rk);
    return rf->kernels ? 0 : ir_rd_fail(c->err, c->errlen, pos, "out of memory");
}

/* The results after "->": one type, or "(T, ...)" (none, or several). */
static int results(cur *c, ir_rd_func *rf) {
    int paren = keyword(c, "(");
    if (paren && keyword(c, ")")) return 0;
    for (;;) {
        ir_output o;
        memset(&o, 0, sizeof o);
        o.node = IR_NONE;
        if (type(c, &o.dtype, &o.shape)) return -1;
        IR_VEC_PUSH(rf->f->arena, rf->outputs, rf->noutputs, rf->cap_outputs, o);
        if (!rf->outputs) return ir_rd_fail(c->err, c->errlen, here(c), "out of memory");
        if (!paren) return 0;
        if (keyword(c, ")")) return 0;
        if (expect(c, ',', "',' or ')'")) return -1;
    }
}

/* "func NAME(%P: TYPE, ...) -> RESULTS" after "func": the new function of m, its header into
 * rf. */
static int func_line(cur *c, ir_module *m, ir_rd_func *rf) {
    const char *w;
    size_t n = word(c, &w, 0);
    if (!n) return expected(c, "the function's name");
    char *name = ir_arena_strndup(m->arena, w, n);
    rf->f = name ? ir_func_new(m, name) : NULL;
    if (!rf->f) return ir_rd_fail(c->err, c->errlen, rf->pos, "out of memory");
    c->f = rf->f;
    if (expect(c, '(', "'('")) return -1;
    while (!keyword(c, ")")) {
        ir_rd_param p;
        memset(&p, 0, sizeof p);
        if (rf->nparams && expect(c, ',', "',' or ')'")) return -1;
        if (ref(c, &p.param.node, &p.pos) || expect(c, ':', "':' and the parameter's type") ||
            type(c, &p.param.dtype, &p.param.shape))
            return -1;
        IR_VEC_PUSH(m->arena, rf->params, rf->nparams, rf->cap_params, p);
        if (!rf->params) return ir_rd_fail(c->err, c->errlen, p.pos, "out of memory");
    }
    if (!keyword(c, "->")) return expected(c, "'->' and the result types");
    if (results(c, rf)) return -1;
    return at_end(c) ? 0 : expected(c, "the end of the line");
}

/* ---- lines ----------------------------------------------------------------------------- */

/* The next line of t into c (no newline); 0 at the end of the text. */
static int next_line(ir_rd_text *t, cur *c) {
    if (t->p >= t->end) return 0;
    const char *nl = memchr(t->p, '\n', (size_t)(t->end - t->p));
    c->s = c->p = t->p;
    c->end = nl ? nl : t->end;
    c->line = t->line++;
    t->p = nl ? nl + 1 : t->end;
    return 1;
}

/* A blank line or a comment ('#' first). */
static int skippable(cur *c) {
    return at_end(c) || *c->p == '#';
}

/* The width of the line's indent, a tab counting as four. */
static int indent(const cur *c) {
    int w = 0;
    for (const char *q = c->s; q < c->end && (*q == ' ' || *q == '\t'); q++)
        w += *q == '\t' ? 4 : 1;
    return w;
}

/* One line of the function after its header: a node line (in the last kernel's body when
 * indented by four or more), or a kernel header. */
static int body_line(cur *c, ir_rd_func *rf) {
    ir_rd_pos pos = here(c);
    if (keyword(c, "kernel")) return kernel_line(c, rf, pos);
    if (*c->p != '%') return expected(c, "a node line '%N = ...', 'kernel' or 'func'");
    int deep = indent(c) >= 4;
    if (deep && !rf->nkernels)
        return ir_rd_fail(c->err, c->errlen, pos,
                          "a node line indented as a kernel's body, with no kernel line above");
    return node_line(c, rf, deep ? rf->nkernels - 1 : -1);
}

int ir_rd_parse_func(ir_rd_text *t, ir_module *m, ir_rd_func *out, char *err, size_t errlen) {
    cur c = {0};
    c.err = err;
    c.errlen = errlen;
    memset(out, 0, sizeof *out);
    for (;;) {
        if (!next_line(t, &c)) return 1;
        if (!skippable(&c)) break;
    }
    out->pos = here(&c);
    if (!keyword(&c, "func")) return expected(&c, "'func'");
    if (func_line(&c, m, out)) return -1;
    for (;;) {
        ir_rd_text before = *t;
        if (!next_line(t, &c)) return 0;
        if (skippable(&c)) continue;
        if (keyword(&c, "func")) {
            *t = before; /* the next function's */
            return 0;
        }
        if (body_line(&c, out)) return -1;
    }
}
