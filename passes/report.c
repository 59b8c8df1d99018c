/* passes/report.c: the fusion report (`fusec -v`): each kernel's kind, domain and the bytes
 * it must move (each input read once, each output written once), and for the function the
 * bytes moved fused against the --no-fuse baseline of the same cleaned-up function.
 *
 * Bytes are polynomials in the symbolic dims (`8*R*C + 4*R`), or numbers when every dim is
 * a literal or the caller bound the symbols (pass_options.sym_values). The format, as
 * `fusec -v --target=ref examples/softmax.fuse` prints it (the second line wrapped here):
 *
 *   fusion softmax: kernel 0 row-reduction domain=[R, C] reduce=(1): 1 input, 1 output, 8*R*C bytes
 *   fusion softmax: 1 kernel moves 8*R*C bytes; unfused 5 kernels move 32*R*C + 16*R bytes
 *       (4.00x, large dims)
 *
 * The ratio is exact when the two polynomials are proportional, else taken for large dims
 * (every symbol 2^16). Under --no-fuse the summary line gives the partition alone.
 */
#include "passes/rewrite.h"

#include <math.h>
#include <string.h>

typedef struct term {
    int32_t deg;
    int32_t sym[IR_MAX_RANK]; /* sorted */
    double coef;
} term;

typedef struct poly {
    term *t;
    int32_t n, cap;
} poly;

static int poly_add(ir_arena *a, poly *p, const ir_shape *s, double bytes) {
    term x;
    memset(&x, 0, sizeof x);
    x.coef = bytes;
    for (int32_t i = 0; i < s->rank; i++) {
        if (s->dims[i].sym >= 0) {
            int32_t v = s->dims[i].sym, j = x.deg++;
            while (j > 0 && x.sym[j - 1] > v) {
                x.sym[j] = x.sym[j - 1];
                j--;
            }
            x.sym[j] = v;
        } else {
            x.coef *= (double)s->dims[i].size;
        }
    }
    if (x.coef == 0) return 0;
    for (int32_t i = 0; i < p->n; i++)
        if (p->t[i].deg == x.deg && !memcmp(p->t[i].sym, x.sym, sizeof(int32_t) * (size_t)x.deg)) {
            p->t[i].coef += x.coef;
            return 0;
        }
    IR_VEC_PUSH(a, p->t, p->n, p->cap, x);
    return p->t ? 0 : -1;
}

static double poly_eval(const poly *p, const int64_t *syms, double all) {
    double s = 0;
    for (int32_t i = 0; i < p->n; i++) {
        double v = p->t[i].coef;
        for (int32_t j = 0; j < p->t[i].deg; j++)
            v *= syms ? (double)syms[p->t[i].sym[j]] : all;
        s += v;
    }
    return s;
}

/* Terms by falling degree, then by symbols, for a stable text. */
static int term_before(const term *a, const term *b) {
    if (a->deg != b->deg) return a->deg > b->deg;
    for (int32_t i = 0; i < a->deg; i++)
        if (a->sym[i] != b->sym[i]) return a->sym[i] < b->sym[i];
    return 0;
}

static void poly_sort(poly *p) {
    for (int32_t i = 1; i < p->n; i++) {
        term x = p->t[i];
        int32_t j = i - 1;
        while (j >= 0 && term_before(&x, &p->t[j])) {
            p->t[j + 1] = p->t[j];
            j--;
        }
        p->t[j + 1] = x;
    }
}

static void print_bytes(ir_buf *b, const ir_func *f, poly *p, const int64_t *syms) {
    if (syms || p->n == 0 || (p->n == 1 && p->t[0].deg == 0)) {
        ir_buf_printf(b, "%.0f bytes", poly_eval(p, syms, 1));
        return;
    }
    poly_sort(p);
    for (int32_t i = 0; i < p->n; i++) {
        const term *t = &p->t[i];
        if (i) ir_buf_puts(b, " + ");
        if (t->coef != 1 || t->deg == 0) ir_buf_printf(b, "%.0f%s", t->coef, t->deg ? "*" : "");
        for (int32_t j = 0; j < t->deg; j++)
            ir_buf_printf(b, "%s%s", j ? "*" : "", f->syms[t->sym[j]]);
    }
    ir_buf_puts(b, " bytes");
}

/* The bytes of kernel k: its inputs read once, its outputs written once. A combined
 * kernel's too: an input that several of its parts load counts once (docs/fusion.md, the
 * report). */
static int kernel_poly(ir_arena *a, const ir_func *f, const ir_kernel *k, poly *p) {
    for (int32_t i = 0; i < k->ninputs; i++) {
        const ir_node *n = &f->nodes[k->inputs[i]];
        if (poly_add(a, p, &n->shape, ir_dtypes[n->dtype].bytes)) return -1;
    }
    for (int32_t i = 0; i < k->noutputs; i++) {
        const ir_node *n = &f->nodes[k->outputs[i]];
        if (poly_add(a, p, &n->shape, ir_dtypes[n->dtype].bytes)) return -1;
    }
    return 0;
}

static int partition_poly(ir_arena *a, const ir_func *f, poly *p) {
    if (!f->partition) return 0;
    for (int32_t k = 0; k < f->partition->nkernels; k++)
        if (kernel_poly(a, f, &f->partition->kernels[k], p)) return -1;
    return 0;
}

double pass_partition_bytes(const ir_func *f, const int64_t *sym_values) {
    poly p = {0};
    if (partition_poly(f->arena, f, &p)) return -1;
    return poly_eval(&p, sym_values, 1);
}

static void print_axes(ir_buf *b, uint32_t axes) {
    ir_buf_puts(b, "(");
    int first = 1;
    for (int i = 0; i < 32; i++)
        if (axes & (1u << i)) {
            ir_buf_printf(b, first ? "%d" : ", %d", i);
            first = 0;
        }
    ir_buf_puts(b, ")");
}

/* Requires: a partition. Changes nothing; writes to opt->report when opt->verbose. */
int pass_report(ir_func *f, pass_ctx *c) {
    const pass_options *o = c->opt;
    if (!o || !o->verbose || !o->report) return 0;
    if (!f->partition) return pass_fail(c, "report: the function is not partitioned");
    ir_buf *b = o->report;
    ir_arena *a = f->arena;
    const int64_t *syms = o->sym_values;
    int literal = 1;
    for (ir_ref r = 0; r < f->nnodes && literal; r++)
        for (int32_t i = 0; i < f->nodes[r].shape.rank; i++)
            if (f->nodes[r].shape.dims[i].sym >= 0) literal = 0;
    const ir_partition *p = f->partition;
    poly total = {0};
    for (int32_t k = 0; k < p->nkernels; k++) {
        const ir_kernel *kn = &p->kernels[k];
        poly kp = {0};
        if (kernel_poly(a, f, kn, &kp) || kernel_poly(a, f, kn, &total))
            return pass_fail(c, "out of memory");
        ir_buf_printf(b, "fusion %s: kernel %d %s domain=", f->name, (int)k,
                      ir_kernel_kind_name(kn->kind));
        ir_print_shape(b, f, &kn->domain);
        if (kn->kind != IR_KERNEL_POINTWISE && kn->kind != IR_KERNEL_COMBINED) {
            ir_buf_puts(b, " reduce=");
            print_axes(b, kn->reduce_axes);
        }
        if (kn->kind == IR_KERNEL_COMBINED) ir_buf_printf(b, " parts=%d", (int)kn->nparts);
        ir_buf_printf(b, ": %d input%s, %d output%s, ", (int)kn->ninputs,
                      kn->ninputs == 1 ? "" : "s", (int)kn->noutputs, kn->noutputs == 1 ? "" : "s");
        print_bytes(b, f, &kp, syms);
        ir_buf_puts(b, "\n");
    }
    ir_buf_printf(b, "fusion %s: %d kernel%s move%s ", f->name, (int)p->nkernels,
                  p->nkernels == 1 ? "" : "s", p->nkernels == 1 ? "s" : "");
    print_bytes(b, f, &total, syms);
    if (o->no_fuse || !c->cleaned) {
        ir_buf_puts(b, o->no_fuse ? " (--no-fuse)\n" : "\n");
        return 0;
    }
    /* the baseline: --no-fuse on the same cleaned-up function */
    ir_func *base = ir_func_clone(a, c->cleaned);
    if (!base) return pass_fail(c, "out of memory");
    if (pass_nofuse(base, c)) return -1;
    poly up = {0};
    if (partition_poly(a, base, &up)) return pass_fail(c, "out of memory");
    ir_buf_printf(b, "; unfused %d kernel%s move%s ", (int)base->partition->nkernels,
                  base->partition->nkernels == 1 ? "" : "s",
                  base->partition->nkernels == 1 ? "s" : "");
    print_bytes(b, base, &up, syms);
    /* proportional polynomials give an exact ratio; otherwise, for large dims */
    int exact = syms || literal;
    double big = 65536.0;
    double fb = poly_eval(&total, syms, big), ub = poly_eval(&up, syms, big);
    if (!exact && fb > 0 && up.n == total.n) {
        poly_sort(&up);
        poly_sort(&total);
        double r = up.t[0].coef / total.t[0].coef;
        exact = 1;
        for (int32_t i = 0; i < up.n && exact; i++)
            if (up.t[i].deg != total.t[i].deg ||
                memcmp(up.t[i].sym, total.t[i].sym, sizeof(int32_t) * (size_t)up.t[i].deg) ||
                fabs(up.t[i].coef - r * total.t[i].coef) > 1e-9 * fabs(up.t[i].coef))
                exact = 0;
    }
    if (fb > 0) ir_buf_printf(b, " (%.2fx%s)", ub / fb, exact ? "" : ", large dims");
    ir_buf_puts(b, "\n");
    return 0;
}
