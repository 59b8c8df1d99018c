/* ir/ir.h: the typed tensor-operation IR: dtypes, symbolic shapes, the node DAG of one
 * function (after inlining), its fusion partition, and the interfaces of the builder,
 * verifier, printer, shape binder and reference interpreter.
 *
 * The IR knows no syntax, no backend and no device. Nodes are addressed by index (ir_ref)
 * into the function's node array and allocated from the compilation's arena. Nodes are
 * kept in topological order: every operand has a smaller index than its user.
 */
#ifndef FUSEC_IR_H
#define FUSEC_IR_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"

/* ---- dtypes ---------------------------------------------------------------------------- */

typedef enum ir_dtype {
#define IR_DTYPE(E, NAME, BYTES, KIND, RANK) IR_##E,
#include "dtypes.def"
#undef IR_DTYPE
    IR_DTYPE_COUNT
} ir_dtype;

typedef enum ir_dkind { IR_DK_BOOL, IR_DK_INT, IR_DK_FLOAT } ir_dkind;

typedef struct ir_dtype_info {
    const char *name;
    int bytes;
    ir_dkind kind;
    int rank;
} ir_dtype_info;

extern const ir_dtype_info ir_dtypes[IR_DTYPE_COUNT];

static inline int ir_dtype_is_float(ir_dtype t) {
    return ir_dtypes[t].kind == IR_DK_FLOAT;
}
static inline int ir_dtype_is_int(ir_dtype t) {
    return ir_dtypes[t].kind == IR_DK_INT;
}
/* The SPEC's promotion of two tensor dtypes (f16 with bf16 gives f32; ir/typing.c). */
ir_dtype ir_dtype_promote(ir_dtype a, ir_dtype b);
/* 1 and *out set when `name` (length n) is a dtype name, else 0. */
int ir_dtype_lookup(const char *name, size_t n, ir_dtype *out);

/* Rounding and storage conversions (round to nearest even, straight from double: never
 * through float, which would round twice). */
uint16_t ir_f16_from_double(double x);
double ir_f16_to_double(uint16_t h);
uint16_t ir_bf16_from_double(double x);
double ir_bf16_to_double(uint16_t h);
/* x rounded to what dtype t can hold: floats to their precision (f64: unchanged), integers
 * as ir_float_to_int, bool to 0/1. */
double ir_round_to_dtype(double x, ir_dtype t);
/* A float to an integer dtype: NaN gives 0, finite values truncate toward zero, values out
 * of range saturate (as CUDA's and LLVM's saturating conversions do). */
int64_t ir_float_to_int(double x, ir_dtype t);
/* Integer wrap-around to the width of an integer dtype (bool: v != 0). */
int64_t ir_wrap_int(int64_t v, ir_dtype t);

/* ---- ops ------------------------------------------------------------------------------- */

typedef enum ir_op {
#define IR_OP(E, CLASS, ARITY, NAME, FLAGS, IDENTITY, DERIV) IR_OP_##E,
#include "ops.def"
#undef IR_OP
    IR_OP_COUNT
} ir_op;

typedef enum ir_class {
    IR_CLASS_LEAF,      /* INPUT, CONST */
    IR_CLASS_EW,        /* element-wise: operands have the node's shape (or are rank-0 CONST) */
    IR_CLASS_CAST,      /* dtype conversion, same shape */
    IR_CLASS_BROADCAST, /* numpy broadcast of the operand to the node's shape */
    IR_CLASS_REDUCE,    /* reduction over node.axes, reduced axes kept with size 1 */
    IR_CLASS_OUTPUT,    /* a function result */
} ir_class;

enum {
    IR_OPF_BUILTIN = 1u << 0,    /* callable by its name from .fuse source */
    IR_OPF_NUMERIC = 1u << 1,    /* takes ints and floats; result has the promoted dtype */
    IR_OPF_FLOATFN = 1u << 2,    /* operands promoted together, then an integer type -> f32 */
    IR_OPF_CMP = 1u << 3,        /* operands promoted together, result bool */
    IR_OPF_LOGIC = 1u << 4,      /* bool operands, bool result */
    IR_OPF_PRED = 1u << 5,       /* float operand, bool result (isnan, isinf) */
    IR_OPF_SELECT = 1u << 6,     /* where(c, a, b): c bool, a and b promoted together */
    IR_OPF_EXPENSIVE = 1u << 7,  /* transcendental: worth storing rather than recomputing */
    IR_OPF_WIDEN = 1u << 8,      /* reduction of bool or i32 accumulates in i64 (sum, prod) */
    IR_OPF_NONEMPTY = 1u << 9,   /* reduction without a result over nothing: an error there */
    IR_OPF_FLOATONLY = 1u << 10, /* takes float operands only, integers are an error (mean) */
    IR_OPF_RANDOM = 1u << 11,    /* i64 operands (seed, index) and a stream, f32 result: rand */
    IR_OPF_ARGREDUCE = 1u << 12, /* argmax/argmin: lowered by the front end, never in the IR */
    IR_OPF_GRADREQ = 1u << 13,   /* grad(L, x): expanded by passes/grad.c, never past it */
};

/* The identity of a reduction: the value it starts from, and so its result over nothing (but
 * for max and min, which fail there). The lowest and highest are the dtype's: -inf and +inf
 * for floats, the least and greatest integer, false and true. */
typedef enum ir_identity {
    IR_ID_NONE, /* not a reduction */
    IR_ID_ZERO,
    IR_ID_ONE,
    IR_ID_LOWEST,
    IR_ID_HIGHEST,
} ir_identity;

typedef struct ir_op_info {
    const char *name;
    ir_class cls;
    int arity;
    unsigned flags;
    ir_identity identity;
    const char *deriv; /* its derivative (ops.def: DERIV) */
} ir_op_info;

extern const ir_op_info ir_ops[IR_OP_COUNT];

/* A leaf no kernel loads: a constant, or an index; each kernel computes it where it reads it
 * (INPUT is the other leaf: a parameter, in memory). */
static inline int ir_op_is_inline_leaf(ir_op op) {
    return op == IR_OP_CONST || op == IR_OP_INDEX;
}

/* 1 and *out set when `name` (length n) is a built-in function (IR_OPF_BUILTIN), else 0. */
int ir_op_lookup_builtin(const char *name, size_t n, ir_op *out);

/* The dtype rules of ops (SPEC §1), stated once in ir/typing.c: the front end lowers by
 * them, the verifier holds the IR to them.
 *
 * The dtype operand i of op is converted to when the operands, promoted together
 * (ir_dtype_promote, or the checker's rule for weak literals), have dtype `promoted`:
 * logic takes bool, where's condition is bool, float functions (predicates too) compute in
 * f32 where `promoted` is an integer or bool, sum and prod of bool or i32 accumulate in
 * i64; every other operand keeps `promoted`. */
ir_dtype ir_op_operand_dtype(ir_op op, int i, ir_dtype promoted);
/* The dtype of op's result on operands of dtypes args[0 .. arity - 1], promoted together
 * first (where's condition, args[0], aside): comparisons, logic and predicates give bool;
 * the other element-wise ops, broadcast, output and the reductions give their operands'
 * dtype as ir_op_operand_dtype converts it (f32 for a float function of integers, i64 for
 * a sum of i32). A cast gives `target`, and so does a leaf, whose dtype is its own. */
ir_dtype ir_op_result_dtype(ir_op op, const ir_dtype *args, ir_dtype target);

/* ---- shapes ---------------------------------------------------------------------------- */

#define IR_MAX_RANK 8

/* One dimension: symbolic (sym >= 0, an index into ir_func.syms, bound at launch) or a
 * literal size (sym < 0, size >= 0). */
typedef struct ir_dim {
    int32_t sym;
    int64_t size;
} ir_dim;

typedef struct ir_shape {
    int32_t rank;
    ir_dim dims[IR_MAX_RANK];
} ir_shape;

static inline ir_dim ir_dim_lit(int64_t n) {
    ir_dim d = {-1, n};
    return d;
}
static inline ir_dim ir_dim_sym(int32_t s) {
    ir_dim d = {s, 0};
    return d;
}
static inline int ir_dim_is_one(ir_dim d) {
    return d.sym < 0 && d.size == 1;
}
int ir_dim_equal(ir_dim a, ir_dim b);
int ir_shape_equal(const ir_shape *a, const ir_shape *b);
/* numpy broadcasting of a and b into *out. Returns -1 on success, else the index (in out's
 * frame, counted from the left of the longer shape) of the first pair of dims that do not
 * agree. */
int ir_shape_broadcast(const ir_shape *a, const ir_shape *b, ir_shape *out);
/* `s` with the axes in `axes` (bit i = axis i) set to size 1. */
ir_shape ir_shape_reduce(const ir_shape *s, uint32_t axes);
/* 1 if a and b differ only by axes of literal size 1 (same element order in memory). */
int ir_shape_squeeze_equal(const ir_shape *a, const ir_shape *b);

/* ---- nodes and functions --------------------------------------------------------------- */

typedef int32_t ir_ref;
#define IR_NONE (-1)

enum {
    IR_NODE_STORED = 1u << 0, /* the fusion partition writes this value to memory */
};

typedef struct ir_node {
    ir_op op;
    ir_dtype dtype; /* storage dtype; f16/bf16 values are computed in f32 within a kernel */
    ir_shape shape;
    ir_ref args[3]; /* ir_ops[op].arity of them, IR_NONE past that */
    uint32_t axes;  /* REDUCE: the reduced axes (bit i = axis i) */
    int32_t index;  /* INPUT: parameter position; OUTPUT: output position; RAND: its stream */
    union {
        double f;  /* CONST of a float dtype: the value, not rounded to a 16-bit dtype */
        int64_t i; /* CONST of an integer or bool dtype */
    } value;
    int32_t kernel; /* the partition's kernel that computes it; -1 before fusion */
    uint32_t flags; /* IR_NODE_* */
} ir_node;

typedef struct ir_param {
    const char *name;
    ir_dtype dtype;
    ir_shape shape; /* the declared shape, which launches bind and check */
    ir_ref node;    /* its INPUT node, of this shape or one that differs by axes of literal size
                     * 1 (squeeze-equal: the same elements in the same order, as an output's
                     * value may be): a gradient's cotangent has its result's value's shape */
} ir_param;

typedef struct ir_output {
    ir_dtype dtype;
    ir_shape shape; /* the declared shape */
    ir_ref node;    /* its OUTPUT node */
} ir_output;

typedef struct ir_partition ir_partition;

/* The most parameters plus results a function may have: the runtime launches it with one
 * argument table of this size (driver/api.c), and the checker refuses a function past it,
 * so that no function compiles that no call could launch. */
#define IR_MAX_ARGS 128

typedef struct ir_func {
    const char *name;
    ir_arena *arena;
    ir_node *nodes;
    int32_t nnodes, cap_nodes;
    ir_param *params;
    int32_t nparams, cap_params;
    ir_output *outputs;
    int32_t noutputs, cap_outputs;
    const char **syms; /* names of the symbolic dims */
    int32_t nsyms, cap_syms;
    ir_partition *partition; /* NULL until the fusion passes ran */
    /* a gradient (`fn d = grad(f)`): the function it differentiates, and for each output
     * the index of the parameter of that function it is the gradient with respect to */
    const char *grad_of;
    int32_t *grad_wrt;
} ir_func;

/* The distinct shapes of f's nodes (in the arena), *n of them: what a launch checks the sizes
 * of, once each (most nodes of a function share a few shapes). */
ir_shape *ir_unique_shapes(const ir_func *f, ir_arena *a, int32_t *n);

typedef struct ir_module {
    ir_arena *arena;
    ir_func **funcs; /* in source order */
    int32_t nfuncs, cap_funcs;
} ir_module;

/* ---- the fusion partition ------------------------------------------------------------- */

typedef enum ir_kernel_kind {
    IR_KERNEL_POINTWISE,
    IR_KERNEL_ROW_REDUCTION,    /* reduces the innermost axes */
    IR_KERNEL_COLUMN_REDUCTION, /* reduces outer axes, keeps inner ones */
    IR_KERNEL_FULL_REDUCTION,   /* reduces every axis */
    IR_KERNEL_COMBINED,         /* several independent kernels in one launch */
} ir_kernel_kind;

/* One kernel: a launch that reads `inputs` from memory once, computes `body` (topological
 * order) over its iteration domain, and writes `outputs` to memory once. */
typedef struct ir_kernel {
    ir_kernel_kind kind;
    ir_shape domain;      /* iteration domain: for reductions, the shape being reduced */
    uint32_t reduce_axes; /* reductions: the reduced axes of `domain` */
    ir_ref *body;
    int32_t nbody, cap_body;
    ir_ref *inputs; /* INPUT nodes, or values another kernel stores */
    int32_t ninputs, cap_inputs;
    ir_ref *outputs; /* values this kernel stores (IR_NODE_STORED) */
    int32_t noutputs, cap_outputs;
    /* COMBINED: where each part starts in `body` (parts[0] == 0; part i runs to parts[i + 1]
     * or the end). Each part is an independent pointwise kernel over the shape of its
     * outputs; `domain` is the first part's. */
    int32_t *parts;
    int32_t nparts, cap_parts;
} ir_kernel;

/* The kind of a reduction of domain `d` over `axes`: full, row (reduces a suffix of the axes)
 * or column. Axes of literal size 1 count as either (ir/shape.c). */
ir_kernel_kind ir_reduction_kind(const ir_shape *d, uint32_t axes);

struct ir_partition {
    ir_kernel *kernels; /* in an order that respects their dependencies */
    int32_t nkernels, cap_kernels;
};

/* ---- builder (ir/build.c) ------------------------------------------------------------- */
/* Builders append a node and return its ref. They assert on misuse (an internal error);
 * checking the user's program is the front end's job. */

ir_module *ir_module_new(ir_arena *a);
ir_func *ir_func_new(ir_module *m, const char *name);
ir_func *ir_module_find(const ir_module *m, const char *name);
int32_t ir_func_symbol(ir_func *f, const char *name); /* find or add a symbolic dim */

ir_ref ir_add_input(ir_func *f, const char *name, ir_dtype t, const ir_shape *shape);
/* A parameter declared `declared` whose INPUT node has `shape`, squeeze-equal to it. */
ir_ref ir_add_input_as(ir_func *f, const char *name, ir_dtype t, const ir_shape *declared,
                       const ir_shape *shape);
ir_ref ir_const_float(ir_func *f, ir_dtype t, double v); /* rank 0 */
ir_ref ir_const_int(ir_func *f, ir_dtype t, int64_t v);  /* rank 0; bool: 0 or 1 */
/* Element-wise op with result dtype t and shape; operands must already have that shape
 * (or be rank-0 CONST nodes) and the dtypes the op expects. */
ir_ref ir_ew(ir_func *f, ir_op op, ir_dtype t, const ir_shape *shape, int nargs,
             const ir_ref *args);
/* The row-major flat index of each element of `shape` (i64). */
ir_ref ir_index(ir_func *f, const ir_shape *shape);
/* rand's values over `shape` for an i64 seed of rank 0 (an input or a constant) and a stream:
 * RAND(seed broadcast to shape, INDEX of shape). */
ir_ref ir_rand(ir_func *f, ir_ref seed, const ir_shape *shape, int32_t stream);
ir_ref ir_cast(ir_func *f, ir_ref x, ir_dtype t); /* returns x when it already has dtype t */
ir_ref ir_broadcast(ir_func *f, ir_ref x, const ir_shape *to); /* x when shapes are equal */
ir_ref ir_reduce(ir_func *f, ir_op op, ir_ref x, uint32_t axes, ir_dtype t);
ir_ref ir_add_output(ir_func *f, ir_ref x, ir_dtype t, const ir_shape *declared);
/* A deep copy of f (nodes, params, outputs, symbols, partition) in arena a (ir/clone.c). */
ir_func *ir_func_clone(ir_arena *a, const ir_func *f);

/* ---- verifier, printer ---------------------------------------------------------------- */

/* 0 when f is well formed (topological order, arities, shapes and dtypes of every node,
 * outputs, and the partition if there is one); else -1 with a message in err. */
int ir_verify(const ir_func *f, char *err, size_t errlen);
/* The checks ir_verify makes of one node (operands, arity, shape, dtype; the param/output
 * entry of an INPUT/OUTPUT node). The builders run it on each node they make (debug). */
int ir_verify_node(const ir_func *f, ir_ref r, char *err, size_t errlen);
/* The partition's checks (ir/verify_partition.c); ir_verify calls it when f->partition is
 * set. 0 when well formed, else -1 with a message in err. */
int ir_verify_partition(const ir_func *f, char *err, size_t errlen);

/* Stable text form (`fusec --emit=ir`). With a partition, one header line per kernel that
 * starts with "kernel " followed by its body. */
void ir_print_func(ir_buf *b, const ir_func *f);
void ir_print_module(ir_buf *b, const ir_module *m);
void ir_print_shape(ir_buf *b, const ir_func *f, const ir_shape *s);
/* The name of a kernel kind as the printer writes it ("row-reduction"), which the reader
 * (ir/read.h) matches and the plan and the code generators print. */
const char *ir_kernel_kind_name(ir_kernel_kind k);

/* ---- shapes at launch, and the reference interpreter ----------------------------------- */

/* A host tensor. data holds elements in C order in the dtype's storage: bool as uint8_t
 * (0/1), f16 and bf16 as uint16_t bit patterns. */
typedef struct ir_tensor {
    ir_dtype dtype;
    int32_t rank;
    int64_t dims[IR_MAX_RANK];
    void *data;
    /* an input's strides in elements (any sign, 0 broadcasts); NULL: dense row-major. data
     * is element (0, ..., 0). */
    const int64_t *strides;
} ir_tensor;

/* Binds f's symbolic dims from the shapes of `inputs` (f->nparams of them; dtype and data
 * ignored) into sym_values[f->nsyms]: ranks must match, literal dims must equal, every use
 * of one symbol must agree. 0 on success; else -1 with a message naming the parameter. */
int ir_bind_shapes(const ir_func *f, const ir_tensor *inputs, int64_t *sym_values, char *err,
                   size_t errlen);
/* The concrete dims of shape s under sym_values. */
void ir_shape_concrete(const ir_shape *s, const int64_t *sym_values, int64_t *dims);
/* The number of elements of `rank` dims; -1 when a dim is negative or the count passes 2^56
 * (far past any memory: the bytes of such a tensor, up to 16 a element, fit in int64 and
 * size_t, so counts the limit admits can be multiplied by an element size unchecked). */
int64_t ir_dims_count(const int64_t *dims, int32_t rank);
/* The bytes a tensor's elements take around its element (0, ..., 0), in integers (no address
 * is formed): from *lo (0, or below where negative strides reach) to *hi (one past the last);
 * both 0 for a tensor of no element. strides: in elements, NULL for dense row-major. -1 when
 * ir_dims_count refuses the dims or an offset overflows int64 (a stride times a dim: no memory
 * holds that), else 0. */
int ir_byte_span(const int64_t *dims, const int64_t *strides, int32_t rank, int64_t elem_bytes,
                 int64_t *lo, int64_t *hi);

/* Runs f in float64 (integers exactly, with the SPEC's semantics) on `inputs` (one per
 * parameter, in the parameter's dtype, shapes already bound) and writes each output into
 * `outputs` (caller-allocated, dtype and dims set to the output's). Values flagged
 * IR_NODE_STORED are rounded to their dtype, as a kernel writing them to memory would.
 * 0 on success; else -1 with a message in err (e.g. max over an empty axis). */
int ir_interp_run(const ir_func *f, const ir_tensor *inputs, ir_tensor *outputs, char *err,
                  size_t errlen);

#endif
