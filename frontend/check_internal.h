/* frontend/check_internal.h: what the files of the checker share (not part of frontend.h).
 *
 *   check.c        check_file: the driver, function bodies, expressions, element-wise ops,
 *                  reductions, returns, errors
 *   check_types.c  dtypes: promotion with weak literals, folding of weak expressions,
 *                  materializing weak constants, names for messages
 *   check_calls.c  calls of the file's functions: arguments, batch axes, inlining, results
 *   check_graph.c  the call graph before any lowering: duplicate names, recursion, and how
 *                  large each function grows once inlined
 *
 * Terms used throughout:
 * - A value is ERR (an error was reported; it silences follow-on errors), WEAK (an
 *   expression made only of literals, folded to a constant) or a TENSOR (an IR node).
 * - A frame is one function body being lowered: the entry point itself, or a callee
 *   inlined at a call. A callee may be mapped over batch axes: extra leading axes of its
 *   arguments. Every batched value of the frame starts with the frame's `batch` dims
 *   (nb of them); its logical shape, the one the callee's source sees, is what follows.
 * - A tensor's node shape is [batch ++] [ones(pad) ++] logical: `pad` counts leading axes of
 *   size 1 that the logical shape does not have (a callee's `-> f32[]` result that is
 *   physically [1]); only unbatched values have a pad, and leading 1s change nothing in
 *   broadcasting, so the value can be used as it is.
 */
#ifndef FUSEC_FRONTEND_CHECK_INTERNAL_H
#define FUSEC_FRONTEND_CHECK_INTERNAL_H

#include <stdint.h>

#include "frontend.h"

/* Expression visits one entry point may take after inlining (each makes a few nodes), and
 * how deep expressions may nest through inlined calls (the checker recurses that deep). */
#define CHECK_MAX_VISITS (CHECK_MAX_NODES / 4)
#define CHECK_MAX_NEST   2000

typedef enum check_vkind { CHECK_ERR, CHECK_WEAK, CHECK_TENSOR } check_vkind;
/* ORDER: bool < int < float, the promotion order of weak values */
typedef enum check_wkind { CHECK_W_BOOL, CHECK_W_INT, CHECK_W_FLOAT } check_wkind;

typedef struct check_val {
    check_vkind kind;
    check_wkind wk; /* WEAK */
    int64_t i;      /* WEAK bool (0/1) and int */
    double f;       /* WEAK float */
    ir_ref ref;     /* TENSOR */
    int32_t nb;     /* TENSOR: 0, or the frame's nb when the value carries the batch axes */
    int32_t pad;    /* TENSOR with nb == 0: leading size-1 axes beyond the logical shape */
    src_loc loc;    /* where the expression starts */
} check_val;

/* The dtype an operation works in: a tensor dtype, or (weak) a weak kind. */
typedef struct check_type {
    int weak;
    check_wkind wk;
    ir_dtype t;
} check_type;

/* A string -> int32 table of fixed capacity (open addressing), for names. */
typedef struct check_map {
    const char **keys;
    int32_t *vals;
    uint32_t mask;
} check_map;

typedef struct check_binding {
    const char *name;
    src_loc loc;
    check_val v;
    int used;
    int is_param;
} check_binding;

typedef struct check_frame {
    const ast_func *fn;
    struct check_frame *parent; /* the caller's frame; NULL for the entry point */
    int32_t nb;                 /* batch axes */
    ir_shape batch;             /* their dims (rank nb) */
    check_binding *binds;       /* parameters, then lets */
    int32_t nbinds;
    check_map scope;  /* name -> index into binds */
    ir_dim *dims;     /* the declared dim names' values in this frame */
    check_map dimmap; /* dim name -> index into dims */
    int32_t ndims;
} check_frame;

/* A call that closes a cycle, found before lowering; reported when its function is checked. */
typedef struct check_recursion {
    const ast_expr *call;
    const char *path; /* "f -> g -> f" */
} check_recursion;

typedef struct check_edge {
    int32_t callee;
    int32_t depth; /* nesting of the call expression in its function */
    const ast_expr *call;
} check_edge;

typedef struct check_fninfo {
    int32_t dup_of;   /* index of the earlier function of this name, or -1 */
    int builtin_name; /* named like a built-in: neither an entry nor callable */
    int in_cycle;     /* calls itself, directly or not: never inlined */
    int reaches_cycle;
    int state;         /* depth-first search: 0 new, 1 on the stack, 2 done */
    int64_t cost;      /* expression visits to lower it with every call inlined */
    int64_t calldepth; /* nested inlined calls */
    int64_t nest;      /* expression nesting through inlined calls */
    check_edge *edges;
    int32_t nedges, cap_edges;
    int64_t own_visits;
    int32_t own_nest;
    check_recursion *recs;
    int32_t nrecs, cap_recs;
} check_fninfo;

typedef struct check_ctx {
    diag_ctx *d;
    ir_arena *a;
    const ast_file *file;
    check_fninfo *info;
    check_map funcs;         /* name -> index of its first definition (not built-in names) */
    ir_module *out;          /* functions that checked cleanly */
    ir_module *scratch;      /* where functions are built before they are known to be clean */
    int32_t reported;        /* errors this check reported, over the whole file */
    int32_t failed_silently; /* entry points that failed without a message of their own */
    int after_syntax_errors; /* the parser reported errors: some statements are missing */
    ir_func **built;         /* [nfuncs]: each function's IR once it checked cleanly, else NULL */
    uint8_t *grad_state;     /* [nfuncs]: 0 not checked yet, 1 (a gradient) building, 2 done */

    /* the entry point being checked */
    ir_func *f;
    int32_t entry;
    int32_t errors; /* errors in it, reported or not (inside inlined calls, not) */
    int quiet;      /* > 0 while lowering an inlined callee: its errors are its own */
    int no_inline;  /* the entry is known too large: calls are checked, not inlined */
    int oversized;  /* ran past CHECK_MAX_VISITS or CHECK_MAX_NODES: stop lowering */
    int64_t visits;
    int32_t nest;
    int32_t inline_depth;
    src_loc outer_loc;      /* the entry's call being inlined, for errors found inside it */
    const char *outer_name; /* its callee */
    int32_t nrand;          /* rand calls met so far: the next one's stream (SPEC §1) */
} check_ctx;

/* ---- check.c -------------------------------------------------------------------------- */

/* Whether function `index` may be defined under its name (not a second definition, not a
 * built-in's name); reports why not. */
int check_name_ok(check_ctx *c, int32_t index);
/* Checks function `index` (one with a body) unless it was already: its IR into c->built. */
void check_body_entry(check_ctx *c, int32_t index);

void check_error(check_ctx *c, src_loc at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An error that only arises in this call's context (batch axes): reported at the entry's
 * call being inlined, even inside a callee. */
void check_error_ctx(check_ctx *c, src_loc at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int check_map_init(check_ctx *c, check_map *m, int32_t n);
int32_t check_map_get(const check_map *m, const char *key);
void check_map_put(check_map *m, const char *key, int32_t val);
const char *check_shape_str(check_ctx *c, const ir_shape *s);
const char *check_dim_str(check_ctx *c, ir_dim d);
check_val check_err_val(void);
check_val check_tensor(ir_ref ref, int32_t nb, int32_t pad, src_loc loc);
/* The logical shape of a tensor value (node shape without batch axes and pad). */
ir_shape check_logical(const check_ctx *c, const check_val *v);
/* a ++ b[from:]; 0 (nothing written) when the result would have more than IR_MAX_RANK axes. */
int check_shape_cat(ir_shape *out, const ir_shape *a, const ir_shape *b, int32_t from);
/* x with size-1 axes inserted or removed to give `to`; IR_NONE after reporting. */
ir_ref check_reshape(check_ctx *c, ir_ref x, const ir_shape *to, src_loc at);
check_val check_lower_expr(check_ctx *c, check_frame *fr, const ast_expr *e);
/* Lowers fn's lets and results in fr (parameters bound). Each result is converted to its
 * declared dtype; decl[k] gets the declared shape in the frame. 1 when all went well. */
int check_lower_body(check_ctx *c, check_frame *fr, check_val *results, ir_shape *decl);
/* A frame for fn with room for its bindings and dims; 0 when out of memory. */
int check_frame_init(check_ctx *c, check_frame *fr, const ast_func *fn, check_frame *parent);
/* Binds a name in fr; reports a duplicate. */
void check_bind(check_ctx *c, check_frame *fr, const char *name, src_loc loc, check_val v,
                int is_param);

/* ---- check_types.c -------------------------------------------------------------------- */

ir_dtype check_wk_dtype(check_wkind wk);
check_type check_type_of(const check_ctx *c, const check_val *v);
const char *check_type_name(const check_type *t);
/* The dtype a weak value of kind wk takes when it meets a tensor of dtype t. */
ir_dtype check_weak_meets(check_wkind wk, ir_dtype t);
/* The type n operands are promoted to together: the tensors' promotion, then the weak
 * operands' kind applied to it (a weak operand never widens a tensor). ERR operands are
 * skipped. */
check_type check_promote(const check_ctx *c, const check_val *v, int n);
/* A weak value as a rank-0 CONST of dtype t; IR_NONE (reported) when it does not fit. */
ir_ref check_materialize(check_ctx *c, const check_val *v, ir_dtype t);
/* The explicit cast of a weak value: a rank-0 CONST holding the value rounded to t. */
ir_ref check_const_cast(check_ctx *c, const check_val *v, ir_dtype t);
/* Folding of weak operands (checked beforehand: kinds valid for op). */
check_val check_fold_unary(ir_op op, const check_val *x);
check_val check_fold_binary(ir_op op, const check_val *l, const check_val *r);
check_val check_fold_builtin(ir_op op, const check_val *args, int n);
/* A weak value converted to kind wk. */
check_val check_weak_to(const check_val *v, check_wkind wk);
/* The kind of op's result on weak operands promoted to kind k: the IR's rule
 * (ir_op_result_dtype) on the dtypes weak values compute in. */
check_wkind check_weak_result(ir_op op, check_wkind k);

/* ---- check_calls.c -------------------------------------------------------------------- */

/* A call of file function `callee` (args not lowered yet). */
check_val check_lower_call(check_ctx *c, check_frame *fr, const ast_expr *e, int32_t callee);

/* ---- check_graph.c -------------------------------------------------------------------- */

/* Fills c->funcs and c->info: names, call edges, cycles (their errors are recorded on the
 * calling function, reported when it is checked), sizes after inlining. 0 when out of
 * memory. */
int check_graph(check_ctx *c);
/* The recursion message recorded for call expression e of function fn, or NULL. */
const char *check_recursion_at(const check_ctx *c, int32_t fn, const ast_expr *e);

/* ---- check_grad.c ---------------------------------------------------------------------- */

/* `fn NAME = grad(FN ...)`, function `index` of the file: checked, its IR into c->built
 * (FN's first, when FN is a gradient too). Every function with a body is checked first. */
void check_grad_entry(check_ctx *c, int32_t index);

#endif
