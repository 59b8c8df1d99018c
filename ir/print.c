/* ir/print.c: the stable text form of the IR (`fusec --emit=ir`), also used by tests and
 * `--dump-after`, and read back by ir/read.c. The format is fixed by tests: change it only
 * with them, and with the reader (tests/unit/test_ir_read.c holds the two together).
 *
 *   func NAME(%0: f32[N], ...) -> f32[N]          (several results: -> (f32[], f32[]))
 *     %0 = input 0 "x" : f32[N]
 *     %1 = const 0.5 : f32[]
 *     %2 = mul %1, %0 : f32[N]
 *     %5 = max %4 axes=(1) : f32[R, 1]
 *     %7 = rand %5, %6 stream=0 : f32[N]
 *     %6 = cast %3 : f16[N]
 *     %9 = output 0 %8 : f32[N]
 *
 * With a partition, leaves and other nodes in no kernel come first, then each kernel as a
 * header line starting "kernel " (in column 0) and its body indented by four, then the
 * outputs.
 */
#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_dim(ir_buf *b, const ir_func *f, ir_dim d) {
    if (d.sym >= 0) {
        if (d.sym < f->nsyms && f->syms[d.sym])
            ir_buf_puts(b, f->syms[d.sym]);
        else
            ir_buf_printf(b, "?sym%d", (int)d.sym); /* only in IR the verifier rejects */
    } else {
        ir_buf_printf(b, "%" PRId64, d.size);
    }
}

void ir_print_shape(ir_buf *b, const ir_func *f, const ir_shape *s) {
    ir_buf_puts(b, "[");
    for (int32_t i = 0; i < s->rank && i < IR_MAX_RANK; i++) {
        if (i) ir_buf_puts(b, ", ");
        print_dim(b, f, s->dims[i]);
    }
    ir_buf_puts(b, "]");
}

static const char *dtype_name(ir_dtype t) {
    return t >= 0 && t < IR_DTYPE_COUNT ? ir_dtypes[t].name : "?dtype";
}

static void print_type(ir_buf *b, const ir_func *f, ir_dtype t, const ir_shape *s) {
    ir_buf_puts(b, dtype_name(t));
    ir_print_shape(b, f, s);
}

static void print_axes(ir_buf *b, uint32_t axes) {
    ir_buf_puts(b, "(");
    int first = 1;
    for (int i = 0; i < 32; i++) {
        if (!(axes & (1u << i))) continue;
        ir_buf_printf(b, first ? "%d" : ", %d", i);
        first = 0;
    }
    ir_buf_puts(b, ")");
}

/* The shortest %g form that reads back as the same double (ir/read.c reads it with strtod);
 * a float keeps a '.' or an exponent so it never reads as an integer. A NaN keeps its sign
 * ("-nan": x86's 0.0 / 0.0, which fold makes, has it) but not its payload: fold and the front
 * end make only the default NaN of either sign, which strtod gives back. */
static void print_float(ir_buf *b, double v) {
    char s[40];
    if (isnan(v)) {
        ir_buf_puts(b, signbit(v) ? "-nan" : "nan");
        return;
    }
    if (isinf(v)) {
        ir_buf_puts(b, v < 0 ? "-inf" : "inf");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(s, sizeof s, "%.*g", p, v);
        if (strtod(s, NULL) == v) break;
    }
    if (!strpbrk(s, ".e")) strcat(s, ".0");
    ir_buf_puts(b, s);
}

static void print_node(ir_buf *b, const ir_func *f, ir_ref r, const char *indent) {
    const ir_node *n = &f->nodes[r];
    ir_buf_printf(b, "%s%%%d = ", indent, (int)r);
    if (n->op < 0 || n->op >= IR_OP_COUNT) {
        ir_buf_printf(b, "?op%d", (int)n->op);
    } else {
        ir_buf_puts(b, ir_ops[n->op].name);
        int arity = ir_ops[n->op].arity;
        switch (n->op) {
        case IR_OP_INPUT: {
            const char *name =
                n->index >= 0 && n->index < f->nparams ? f->params[n->index].name : "?";
            ir_buf_printf(b, " %d \"%s\"", (int)n->index, name);
            break;
        }
        case IR_OP_CONST:
            ir_buf_puts(b, " ");
            if (n->dtype >= 0 && n->dtype < IR_DTYPE_COUNT && ir_dtype_is_float(n->dtype))
                print_float(b, n->value.f);
            else if (n->dtype == IR_BOOL)
                ir_buf_puts(b, n->value.i ? "true" : "false");
            else
                ir_buf_printf(b, "%lld", (long long)n->value.i);
            break;
        case IR_OP_OUTPUT: ir_buf_printf(b, " %d", (int)n->index); break;
        default: break;
        }
        for (int i = 0; i < arity && i < 3; i++)
            ir_buf_printf(b, i ? ", %%%d" : " %%%d", (int)n->args[i]);
        if (ir_ops[n->op].cls == IR_CLASS_REDUCE) {
            ir_buf_puts(b, " axes=");
            print_axes(b, n->axes);
        }
        if (ir_ops[n->op].flags & IR_OPF_RANDOM) ir_buf_printf(b, " stream=%d", (int)n->index);
    }
    ir_buf_puts(b, " : ");
    print_type(b, f, n->dtype, &n->shape);
    if (n->flags & IR_NODE_STORED) ir_buf_puts(b, " stored");
    ir_buf_puts(b, "\n");
}

static void print_refs(ir_buf *b, const ir_ref *refs, int32_t n) {
    ir_buf_puts(b, "(");
    for (int32_t i = 0; i < n; i++)
        ir_buf_printf(b, i ? ", %%%d" : "%%%d", (int)refs[i]);
    ir_buf_puts(b, ")");
}

const char *ir_kernel_kind_name(ir_kernel_kind k) {
    switch (k) {
    case IR_KERNEL_POINTWISE: return "pointwise";
    case IR_KERNEL_ROW_REDUCTION: return "row-reduction";
    case IR_KERNEL_COLUMN_REDUCTION: return "column-reduction";
    case IR_KERNEL_FULL_REDUCTION: return "full-reduction";
    case IR_KERNEL_COMBINED: return "combined";
    }
    return "?kind";
}

static void print_kernel(ir_buf *b, const ir_func *f, int32_t k, const ir_kernel *kn) {
    ir_buf_printf(b, "kernel %d %s domain=", (int)k, ir_kernel_kind_name(kn->kind));
    ir_print_shape(b, f, &kn->domain);
    if (kn->kind == IR_KERNEL_ROW_REDUCTION || kn->kind == IR_KERNEL_COLUMN_REDUCTION ||
        kn->kind == IR_KERNEL_FULL_REDUCTION) {
        ir_buf_puts(b, " reduce=");
        print_axes(b, kn->reduce_axes);
    }
    if (kn->nparts > 0) {
        ir_buf_puts(b, " parts=(");
        for (int32_t i = 0; i < kn->nparts; i++)
            ir_buf_printf(b, i ? ", %d" : "%d", (int)kn->parts[i]);
        ir_buf_puts(b, ")");
    }
    ir_buf_puts(b, " in=");
    print_refs(b, kn->inputs, kn->ninputs);
    ir_buf_puts(b, " out=");
    print_refs(b, kn->outputs, kn->noutputs);
    ir_buf_puts(b, "\n");
    for (int32_t i = 0; i < kn->nbody; i++) {
        ir_ref r = kn->body[i];
        if (r >= 0 && r < f->nnodes)
            print_node(b, f, r, "    ");
        else
            ir_buf_printf(b, "    %%%d ?\n", (int)r);
    }
}

static void print_partitioned(ir_buf *b, const ir_func *f, const ir_partition *p) {
    /* which nodes some kernel's body holds; the others print outside the kernels */
    unsigned char *in_body = calloc((size_t)f->nnodes + 1, 1);
    for (int32_t k = 0; k < p->nkernels && in_body; k++)
        for (int32_t i = 0; i < p->kernels[k].nbody; i++) {
            ir_ref r = p->kernels[k].body[i];
            if (r >= 0 && r < f->nnodes) in_body[r] = 1;
        }
    for (ir_ref r = 0; r < f->nnodes; r++)
        if (!(in_body && in_body[r]) && f->nodes[r].op != IR_OP_OUTPUT) print_node(b, f, r, "  ");
    for (int32_t k = 0; k < p->nkernels; k++)
        print_kernel(b, f, k, &p->kernels[k]);
    for (ir_ref r = 0; r < f->nnodes; r++)
        if (!(in_body && in_body[r]) && f->nodes[r].op == IR_OP_OUTPUT) print_node(b, f, r, "  ");
    free(in_body);
}

void ir_print_func(ir_buf *b, const ir_func *f) {
    ir_buf_printf(b, "func %s(", f->name);
    for (int32_t i = 0; i < f->nparams; i++) {
        const ir_param *p = &f->params[i];
        ir_buf_printf(b, i ? ", %%%d: " : "%%%d: ", (int)p->node);
        print_type(b, f, p->dtype, &p->shape);
    }
    ir_buf_puts(b, ") -> ");
    if (f->noutputs != 1) ir_buf_puts(b, "(");
    for (int32_t i = 0; i < f->noutputs; i++) {
        if (i) ir_buf_puts(b, ", ");
        print_type(b, f, f->outputs[i].dtype, &f->outputs[i].shape);
    }
    if (f->noutputs != 1) ir_buf_puts(b, ")");
    ir_buf_puts(b, "\n");
    if (f->partition) {
        print_partitioned(b, f, f->partition);
        return;
    }
    for (ir_ref r = 0; r < f->nnodes; r++)
        print_node(b, f, r, "  ");
}

void ir_print_module(ir_buf *b, const ir_module *m) {
    for (int32_t i = 0; i < m->nfuncs; i++) {
        if (i) ir_buf_puts(b, "\n");
        ir_print_func(b, m->funcs[i]);
    }
}
