/* codegen/cuda/cuda.c: the CUDA code generator's driver: for each function, where every stored
 * value lives (a result's buffer, else scratch), the buffers and engine of each kernel, the
 * launches and their arguments, the checks made at launch; then the translation unit (the
 * helpers the kernels use, then the kernels). What turns a launch's metadata into a grid, a
 * block and argument values for given dims is the runtime's (runtime/cuda/cuda_resolve.c).
 *
 * Names come from the content: fusec_<function>_k<kernel index><variant suffix>, with the
 * partition's deterministic kernel order; the same IR gives byte-identical source.
 */
#include "codegen/cuda/cuda.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cuda_internal.h"
#include "codegen/plan_math.h"

/* codegen/cpu/llvm_math.c as a C string (generated/cuda_math_source.c, made by the build) */
extern const unsigned char cuda_math_source[];

/* The math library itself, then the names the op table calls (cuda_expr.c's FD): fx_NAME is
 * llvm_math_NAME, the CPU's function (codegen/plan_math.h), or under --use_fast_math CUDA's
 * own f32 function, which that option makes approximate (sigmoid has none: always the
 * library's). */
static void math_macros(ir_buf *src) {
    /* its C library #includes, inactive here (LLVM_MATH_CUDA), left out: a module includes
     * nothing */
    for (const char *l = (const char *)cuda_math_source; *l;) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) + 1 : strlen(l);
        if (strncmp(l, "#include", 8) != 0) ir_buf_putn(src, l, n);
        l += n;
    }
    /* NVRTC 13 defines __USE_FAST_MATH__ whether or not it is asked for fast math, as 0 or 1
     * (its first GPU run: every f32 transcendental was CUDA's own, up to an ulp from the
     * CPU's); `+ 0` also reads an empty definition as off */
    ir_buf_puts(src, "\n/* the op table's names */\n"
                     "#if defined(__USE_FAST_MATH__) && (__USE_FAST_MATH__ + 0)\n");
#define FAST(E, F32, F64, FASTF)                                                                   \
    ir_buf_puts(src, IR_OP_##E == IR_OP_SIGMOID ? "#define fx_" #F32 " llvm_math_" #F32 "\n"       \
                                                : "#define fx_" #F32 " " #F32 "\n");
    PLAN_MATH_OPS(FAST)
#undef FAST
    ir_buf_puts(src, "#define fx_expf expf\n#define fx_expf_nonpos expf\n#else\n");
#define PRECISE(E, F32, F64, FASTF) ir_buf_puts(src, "#define fx_" #F32 " llvm_math_" #F32 "\n");
    PLAN_MATH_OPS(PRECISE)
#undef PRECISE
    ir_buf_puts(src,
                "#define fx_expf llvm_math_expf\n#define fx_expf_nonpos llvm_math_expf_nonpos\n"
                "#endif\n#define fx_exp llvm_math_exp\n");
#define F64(E, F32, F64, FASTF) ir_buf_puts(src, "#define fx_" #F64 " llvm_math_" #F64 "\n");
    PLAN_MATH_OPS(F64)
#undef F64
}

/* 2048 units of 32 columns: about 16 blocks of 8 warps an SM on a 132-SM GPU, so that two
 * waves of full occupancy keep enough loads in flight (on an H100 a column sum over
 * [16384, 4096] took 57% of the copy bandwidth at 512 units, 81% at 2048, 78% at 4096) */
const plan_options cuda_plan_options = {1, CUDA_PLAN_WANT_UNITS};

/* ---- kernel arguments and functions -------------------------------------------------------- */

static int name_taken(const cugen_kernel *k, const char *name) {
    for (int32_t b = 0; b < k->nbufs; b++)
        if (strcmp(k->bufs[b].name, name) == 0) return 1;
    for (int32_t i = 0; i < k->nsizes; i++)
        if (strcmp(k->sizes[i].name, name) == 0) return 1;
    return 0;
}

const char *cugen_special_arg(cugen_kernel *k, cuda_arg_kind kind, int32_t index, const char *name,
                              const char *ctype) {
    for (int32_t i = 0; i < k->nsizes; i++)
        if (k->sizes[i].kind == kind && k->sizes[i].index == index) return k->sizes[i].name;
    const char *nm = name;
    for (int suffix = 2; name_taken(k, nm); suffix++)
        nm = cugen_fmt(k, "%s%d_", name, suffix);
    cugen_sizearg a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.index = index;
    a.name = nm;
    a.ctype = ctype;
    IR_VEC_PUSH(k->m->a, k->sizes, k->nsizes, k->cap_sizes, a);
    return nm;
}

const char *cugen_global_name(cugen_kernel *k, const char *suffix) {
    const char *n = cugen_fmt(k, "%s%s", k->name, suffix);
    cugen_module *m = k->m;
    for (int32_t i = 0; i < m->nnames; i++)
        if (strcmp(m->names[i], n) == 0) {
            cugen_fail(m, "cuda codegen: two kernels named %s", n);
            return n;
        }
    IR_VEC_PUSH(m->a, m->names, m->nnames, m->cap_names, n);
    return n;
}

/* The parameter list: buffers, then the other arguments with `size_type`. */
static const char *params(cugen_kernel *k, const char *size_type) {
    ir_buf b;
    ir_buf_init(&b, k->m->a);
    for (int32_t i = 0; i < k->nbufs; i++) {
        const cugen_buf *bf = &k->bufs[i];
        if (bf->computed) continue;
        ir_buf_printf(&b, "%s%s%s *__restrict__ %s", b.len ? ", " : "", bf->output ? "" : "const ",
                      cugen_stype(bf->dtype), bf->name);
    }
    for (int32_t i = 0; i < k->nsizes; i++) {
        const cugen_sizearg *s = &k->sizes[i];
        if (s->ctype)
            ir_buf_printf(&b, "%s%s %s", b.len ? ", " : "", s->ctype, s->name);
        else
            ir_buf_printf(&b, "%sconst %s %s", b.len ? ", " : "", size_type, s->name);
    }
    return b.data ? b.data : "";
}

/* The arguments of the call of a template body from an entry point. */
static const char *call_args(cugen_kernel *k, const char *cast) {
    ir_buf b;
    ir_buf_init(&b, k->m->a);
    for (int32_t i = 0; i < k->nbufs; i++)
        if (!k->bufs[i].computed) ir_buf_printf(&b, "%s%s", b.len ? ", " : "", k->bufs[i].name);
    for (int32_t i = 0; i < k->nsizes; i++) {
        const cugen_sizearg *s = &k->sizes[i];
        ir_buf_printf(&b, "%s%s%s", b.len ? ", " : "", s->ctype ? "" : cast, s->name);
    }
    return b.data ? b.data : "";
}

/* Appends a function header `head(params)`: on one line when short, else one parameter a
 * line. */
static void put_header(ir_buf *out, const char *head, const char *params_text, const char *tail) {
    if (strlen(head) + strlen(params_text) + strlen(tail) <= 100) {
        ir_buf_printf(out, "%s%s%s", head, params_text, tail);
        return;
    }
    ir_buf_puts(out, head);
    ir_buf_puts(out, "\n    ");
    for (const char *p = params_text; *p; p++) {
        if (p[0] == ',' && p[1] == ' ') {
            ir_buf_puts(out, ",\n    ");
            p++;
            continue;
        }
        ir_buf_putn(out, p, 1);
    }
    ir_buf_puts(out, tail);
}

/* The chunked entry point's call: full buffers advance to the chunk, the element count is
 * the chunk's. */
static const char *chunk_args(cugen_kernel *k, const char *n) {
    ir_buf b;
    ir_buf_init(&b, k->m->a);
    for (int32_t i = 0; i < k->nbufs; i++)
        ir_buf_printf(&b, "%s%s%s", i ? ", " : "", k->bufs[i].name, k->bufs[i].mask ? " + c" : "");
    for (int32_t i = 0; i < k->nsizes; i++)
        ir_buf_printf(&b, "%s%s", b.len ? ", " : "",
                      strcmp(k->sizes[i].name, n) == 0 ? "(unsigned)m" : k->sizes[i].name);
    return b.data ? b.data : "";
}

/* Appends the kernel functions of cugen_emit_function to o. */
static void put_function(cugen_kernel *k, ir_buf *o, const char *name, int max_block,
                         const char *body, int templ) {
    const char *bounds = k->min_blocks ? cugen_fmt(k, "%d, %d", max_block, k->min_blocks)
                                       : cugen_fmt(k, "%d", max_block);
    if (templ == CG_FN_CHUNKED) {
        ir_buf_puts(o, "template <typename I>\n");
        put_header(o, cugen_fmt(k, "__device__ __forceinline__ void %s_run(", name), params(k, "I"),
                   ") {\n");
        ir_buf_puts(o, body);
        ir_buf_puts(o, "}\n");
        put_header(
            o, cugen_fmt(k, "extern \"C\" __global__ void __launch_bounds__(%s) %s(", bounds, name),
            params(k, "long long"), ") {\n");
        const char *n = k->nsizes ? k->sizes[0].name : NULL;
        if (!n) {
            ir_buf_printf(o, "    %s_run<unsigned>(%s);\n}\n", name, call_args(k, ""));
            return;
        }
        ir_buf_printf(o,
                      "    /* 32-bit indexes: the elements go in chunks of 2^30 */\n"
                      "    for (long long c = 0; c < %s; c += %" PRId64 "LL) {\n"
                      "        const long long m = %s - c < %" PRId64 "LL ? %s - c : %" PRId64
                      "LL;\n"
                      "        %s_run<unsigned>(%s);\n"
                      "    }\n}\n",
                      n, CG_CHUNK, n, CG_CHUNK, n, CG_CHUNK, name, chunk_args(k, n));
        return;
    }
    if (templ == CG_FN_TEMPLATE) {
        ir_buf_puts(o, "template <typename I>\n");
        put_header(o, cugen_fmt(k, "__device__ __forceinline__ void %s_run(", name), params(k, "I"),
                   ") {\n");
        ir_buf_puts(o, body);
        ir_buf_puts(o, "}\n");
        static const char *const idx[2][2] = {{"", "unsigned"}, {"_i64", "unsigned long long"}};
        for (int v = 0; v < 2; v++) {
            put_header(o,
                       cugen_fmt(k, "extern \"C\" __global__ void __launch_bounds__(%s) %s%s(",
                                 bounds, name, idx[v][0]),
                       params(k, "long long"), ") {\n");
            ir_buf_printf(o, "    %s_run<%s>(%s);\n}\n", name, idx[v][1],
                          call_args(k, cugen_fmt(k, "(%s)", idx[v][1])));
        }
    } else {
        put_header(
            o, cugen_fmt(k, "extern \"C\" __global__ void __launch_bounds__(%s) %s(", bounds, name),
            params(k, "long long"), ") {\n");
        ir_buf_puts(o, body);
        ir_buf_puts(o, "}\n");
    }
}

/* Whether c may end a generated local name: fusec numbers its locals and parameters by the
 * node they hold (v12, a12c, t12, red12, cb12, o3, part0_, ...), so that two kernels doing
 * the same work on other nodes differ only in those numbers. */
static int local_prefix(const char *s, size_t n) {
    static const char *const prefixes[] = {"a", "v", "red", "o",    "s", "cv", "x",
                                           "u", "t", "r",   "part", "l", "i",  "cb"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strlen(prefixes[i]) == n && memcmp(prefixes[i], s, n) == 0) return 1;
    return 0;
}

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

/* Numbers for the distinct names of a text, in order of first appearance (open addressing
 * in the arena: a kernel of thousands of values stays linear). */
typedef struct name_ids {
    const char **key;
    size_t *len;
    int32_t *id;
    uint32_t cap;
    int32_t n;
} name_ids;

static int name_ids_room(ir_arena *a, name_ids *t, uint32_t cap) {
    name_ids g = {ir_arena_calloc(a, cap, sizeof(const char *)),
                  ir_arena_calloc(a, cap, sizeof(size_t)), ir_arena_calloc(a, cap, sizeof(int32_t)),
                  cap, t->n};
    if (!g.key || !g.len || !g.id) return -1;
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!t->key[i]) continue;
        uint32_t j = (uint32_t)fnv1a(t->key[i], t->len[i]) & (cap - 1);
        while (g.key[j])
            j = (j + 1) & (cap - 1);
        g.key[j] = t->key[i];
        g.len[j] = t->len[i];
        g.id[j] = t->id[i];
    }
    *t = g;
    return 0;
}

/* The number of the name p[0..len), given the next one when it is new; -1: out of memory. */
static int32_t name_id(ir_arena *a, name_ids *t, const char *p, size_t len) {
    if ((uint32_t)(t->n + 1) * 2 > t->cap && name_ids_room(a, t, t->cap ? t->cap * 2 : 64))
        return -1;
    uint32_t j = (uint32_t)fnv1a(p, len) & (t->cap - 1);
    while (t->key[j] && !(t->len[j] == len && memcmp(t->key[j], p, len) == 0))
        j = (j + 1) & (t->cap - 1);
    if (!t->key[j]) {
        t->key[j] = p;
        t->len[j] = len;
        t->id[j] = t->n++;
    }
    return t->id[j];
}

/* Whether p[0..len) names a parameter of k (a buffer, p_<parameter> after the user's name,
 * or a size, <symbol>_). */
static int is_param(const cugen_kernel *k, const char *p, size_t len) {
    for (int32_t i = 0; i < k->nbufs; i++)
        if (strlen(k->bufs[i].name) == len && memcmp(k->bufs[i].name, p, len) == 0) return 1;
    for (int32_t i = 0; i < k->nsizes; i++)
        if (strlen(k->sizes[i].name) == len && memcmp(k->sizes[i].name, p, len) == 0) return 1;
    return 0;
}

/* `text` with the kernel's name replaced by "@" and each parameter and numbered local name
 * (local_prefix, digits, then letters or '_') by "@<n>", n its order of first appearance:
 * equal for two kernels exactly when one is the other with its names consistently renamed
 * (strings, inline PTX, as they are). NULL: out of memory. */
static const char *canonical(cugen_kernel *k, const char *text, const char *name) {
    cugen_module *m = k->m;
    ir_buf b;
    ir_buf_init(&b, m->a);
    name_ids ids = {0};
    size_t nlen = strlen(name);
    for (const char *p = text; *p;) {
        if (*p == '"') { /* a string (inline PTX): as it is, "u64" and "u32" kept apart */
            const char *q = p + 1;
            while (*q && *q != '"')
                q += q[0] == '\\' && q[1] ? 2 : 1;
            q += *q == '"';
            ir_buf_putn(&b, p, (size_t)(q - p));
            p = q;
            continue;
        }
        if (!(isalpha((unsigned char)*p) || *p == '_') ||
            (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))) {
            ir_buf_putn(&b, p++, 1);
            continue;
        }
        const char *q = p;
        while (isalnum((unsigned char)*q) || *q == '_')
            q++;
        size_t len = (size_t)(q - p);
        const char *d = p;
        while (d < q && isalpha((unsigned char)*d))
            d++;
        if (len >= nlen && memcmp(p, name, nlen) == 0) {
            ir_buf_puts(&b, "@");
            ir_buf_putn(&b, p + nlen, len - nlen);
        } else if ((d < q && isdigit((unsigned char)*d) && local_prefix(p, (size_t)(d - p))) ||
                   is_param(k, p, len)) {
            int32_t id = name_id(m->a, &ids, p, len);
            if (id < 0) return NULL;
            ir_buf_printf(&b, "@%d", (int)id);
        } else {
            ir_buf_putn(&b, p, len);
        }
        p = q;
    }
    return b.data ? b.data : "";
}

const char *cugen_emit_function(cugen_kernel *k, const char *name, int max_block, const char *body,
                                int templ) {
    cugen_module *m = k->m;
    ir_buf fn;
    ir_buf_init(&fn, m->a);
    put_function(k, &fn, name, max_block, body, templ);
    const char *text = fn.data ? fn.data : "";
    /* a kernel that is an earlier one renamed (a chain of identical layers) is that one:
     * NVRTC compiles it once */
    const char *canon = canonical(k, text, name);
    uint64_t h = canon ? fnv1a(canon, strlen(canon)) : 0;
    for (int32_t i = 0; canon && i < m->nemitted; i++)
        if (m->emitted[i].hash == h && strcmp(m->emitted[i].canon, canon) == 0)
            return m->emitted[i].name;
    cugen_emitted e = {canon ? canon : "", name, h};
    IR_VEC_PUSH(m->a, m->emitted, m->nemitted, m->cap_emitted, e);
    ir_buf_puts(&m->text, text);
    return name;
}

void cugen_launch_args(cugen_kernel *k, cuda_launch *l) {
    int32_t nreal = cugen_real_bufs(k);
    int32_t n = nreal + k->nsizes;
    cuda_arg *a = ir_arena_calloc(k->m->a, (size_t)(n ? n : 1), sizeof(cuda_arg));
    for (int32_t i = 0; i < nreal; i++) {
        a[i].kind = k->bufs[i].kind;
        a[i].index = k->bufs[i].index;
        a[i].name = k->bufs[i].name;
    }
    for (int32_t i = 0; i < k->nsizes; i++) {
        cuda_arg *x = &a[nreal + i];
        x->kind = k->sizes[i].kind;
        x->index = k->sizes[i].index;
        x->size = k->sizes[i].size;
        x->name = k->sizes[i].name;
    }
    l->nargs = n;
    l->args = a;
}

/* ---- one function ------------------------------------------------------------------------------
 */

/* Where each stored value lives: the lowest result that returns it, else a scratch buffer. */
typedef struct home {
    cuda_arg_kind kind;
    int32_t index;
} home;

typedef struct fn_state {
    cugen_module *m;
    const ir_func *f;
    const plan_func *pf; /* its kernel plan */
    home *homes;         /* per node */
    int32_t *nresults;   /* per node: results that return it */
    cuda_scratch *scratch;
    int32_t nscratch, cap_scratch;
    cuda_launch *launches;
    int32_t nlaunches, cap_launches;
    const char *prefix; /* fusec_<function> */
} fn_state;

static void add_buf(cugen_kernel *k, ir_ref node, int output, cuda_arg_kind kind, int32_t index) {
    cugen_buf b;
    memset(&b, 0, sizeof b);
    b.node = node;
    b.output = output;
    b.dtype = k->f->nodes[node].dtype;
    b.kind = kind;
    b.index = index;
    b.computed = k->f->nodes[node].op == IR_OP_INDEX;
    if (b.computed)
        b.name = cugen_fmt(k, "i%d", (int)node);
    else if (kind == CUDA_ARG_PARAM)
        b.name = cugen_fmt(k, "p_%s", k->f->params[index].name);
    else if (kind == CUDA_ARG_RESULT)
        b.name = cugen_fmt(k, "r%d", (int)index);
    else
        b.name = cugen_fmt(k, "t%d", (int)node);
    if (!output) k->inbuf[node] = k->nbufs;
    IR_VEC_PUSH(k->m->a, k->bufs, k->nbufs, k->cap_bufs, b);
}

static const char *shape_text(cugen_kernel *k, const ir_shape *s) {
    ir_buf b;
    ir_buf_init(&b, k->m->a);
    ir_print_shape(&b, k->f, s);
    return b.data ? b.data : "[]";
}

static void gen_kernel(fn_state *st, int32_t ki) {
    cugen_module *m = st->m;
    const ir_func *f = st->f;
    const ir_kernel *kn = &f->partition->kernels[ki];
    size_t nn = (size_t)f->nnodes;
    cugen_kernel *k = ir_arena_calloc(m->a, 1, sizeof(cugen_kernel));
    k->m = m;
    k->f = f;
    k->kn = kn;
    k->kidx = ki;
    k->plans = &st->pf->kernels[ki];
    k->plan = &k->plans->parts[0];
    k->name = cugen_fmt(k, "%s_k%d", st->prefix, (int)ki);
    k->inbuf = ir_arena_calloc(m->a, nn, sizeof(int32_t));
    k->var = ir_arena_calloc(m->a, nn, sizeof(uint32_t));
    k->in = ir_arena_calloc(m->a, nn, 1);
    k->val = ir_arena_calloc(m->a, nn, sizeof(char *));
    k->ind = 1;
    ir_buf_init(&k->body, m->a);
    for (size_t i = 0; i < nn; i++)
        k->inbuf[i] = -1;
    cugen_outline_plan(k);

    /* buffers: inputs, then each output at each of its homes */
    for (int32_t i = 0; i < kn->ninputs; i++) {
        ir_ref q = kn->inputs[i];
        const ir_node *qn = &f->nodes[q];
        if (qn->op == IR_OP_INPUT)
            add_buf(k, q, 0, CUDA_ARG_PARAM, qn->index);
        else
            add_buf(k, q, 0, st->homes[q].kind, st->homes[q].index);
    }
    for (int32_t i = 0; i < kn->noutputs; i++) {
        ir_ref q = kn->outputs[i];
        if (st->nresults[q] == 0) {
            add_buf(k, q, 1, CUDA_ARG_SCRATCH, st->homes[q].index);
            continue;
        }
        for (int32_t o = 0; o < f->noutputs; o++)
            if (f->nodes[f->outputs[o].node].args[0] == q) add_buf(k, q, 1, CUDA_ARG_RESULT, o);
    }
    /* last, so that a real buffer's index is its argument's: the indexes it reads */
    for (int32_t i = 0; i < kn->nbody; i++) {
        const ir_node *n = &f->nodes[kn->body[i]];
        for (int a = 0; a < ir_ops[n->op].arity; a++)
            if (f->nodes[n->args[a]].op == IR_OP_INDEX && k->inbuf[n->args[a]] < 0)
                add_buf(k, n->args[a], 0, CUDA_ARG_PARAM, -1);
    }

    /* a comment naming the kernel */
    int reduction = kn->kind != IR_KERNEL_POINTWISE && kn->kind != IR_KERNEL_COMBINED;
    ir_buf_printf(&m->text, "\n/* %s kernel %d: %s over %s", f->name, (int)ki,
                  ir_kernel_kind_name(kn->kind), shape_text(k, &kn->domain));
    if (reduction) {
        ir_buf_puts(&m->text, " reducing axes");
        for (int32_t a = 0; a < kn->domain.rank; a++)
            if (kn->reduce_axes & (1u << a)) ir_buf_printf(&m->text, " %d", (int)a);
    }
    ir_buf_puts(&m->text, " */\n");
    /* the engine, from the plan's layout */
    plan_layout layout = k->plans->parts[0].layout;
    int full = layout == PLAN_FULL;
    int split = kn->kind != IR_KERNEL_COMBINED && k->plans->parts[0].split.splittable;
    IR_VEC_PUSH(m->a, st->launches, st->nlaunches, st->cap_launches, (cuda_launch){0});
    if (full || split)
        IR_VEC_PUSH(m->a, st->launches, st->nlaunches, st->cap_launches, (cuda_launch){0});
    cuda_launch *l = &st->launches[st->nlaunches - 1];
    l->kernel = ki;
    k->launch_index = st->nlaunches - 1;
    if (kn->kind == IR_KERNEL_COMBINED || layout == PLAN_ELEMENTWISE) {
        cugen_gen_elementwise(k, l);
        cugen_launch_args(k, l);
        return;
    }
    cugen_space_build(k, 0);
    if (full) {
        cuda_scratch sc;
        sc.node = IR_NONE;
        sc.split_launch = -1;
        sc.bytes = cugen_size_lit((int64_t)k->plan->nreds * CG_MAX_PARTIALS * 8);
        k->partials_scratch = st->nscratch;
        IR_VEC_PUSH(m->a, st->scratch, st->nscratch, st->cap_scratch, sc);
        l[-1].kernel = ki;
        cugen_gen_full(k, l);
    } else if (layout == PLAN_ROW) {
        cugen_gen_row(k, l);
    } else if (split) {
        /* the partials: nreds 8-byte slots a column a piece, as many pieces as the launch
         * has (the plan's bound, PLAN_SPLIT_MAX, is far more than most launches need) */
        const plan_scratch *ps = &st->pf->scratch[k->plan->split.scratch];
        cuda_scratch sc;
        sc.node = IR_NONE;
        sc.split_launch = st->nlaunches - 2;
        sc.bytes = cugen_size_mul(cugen_shape_elems(&ps->per),
                                  cugen_size_lit((int64_t)k->plan->nreds * 8));
        k->partials_scratch = st->nscratch;
        IR_VEC_PUSH(m->a, st->scratch, st->nscratch, st->cap_scratch, sc);
        l[-1].kernel = ki;
        cugen_gen_column_split(k, l);
    } else {
        cugen_gen_column(k, l);
    }
    cugen_launch_args(k, l);
}

/* Where each stored value lives (the plan's buffers): the lowest result that returns it, else
 * a scratch buffer, one a temporary in the plan's order. */
static void gen_homes(fn_state *st) {
    const plan_func *pf = st->pf;
    for (int32_t i = pf->nbufs - 1; i >= 0; i--) {
        const plan_buf *b = &pf->bufs[i];
        if (b->kind != PLAN_BUF_RESULT) continue;
        st->homes[b->node].kind = CUDA_ARG_RESULT;
        st->homes[b->node].index = b->index;
        st->nresults[b->node]++;
    }
    for (int32_t i = 0; i < pf->nbufs; i++) {
        const plan_buf *b = &pf->bufs[i];
        if (b->kind != PLAN_BUF_TEMP) continue;
        cuda_scratch sc;
        sc.bytes =
            cugen_size_mul(cugen_shape_elems(&b->shape), cugen_size_lit(ir_dtypes[b->dtype].bytes));
        sc.node = b->node;
        sc.split_launch = -1;
        st->homes[b->node].kind = CUDA_ARG_SCRATCH;
        st->homes[b->node].index = st->nscratch;
        IR_VEC_PUSH(st->m->a, st->scratch, st->nscratch, st->cap_scratch, sc);
    }
}

/* The launch checks: the plan's (max and min over an empty axis fail, as in the reference),
 * those that can fail for some sizes. */
static void gen_checks(fn_state *st, cuda_func *out) {
    cuda_check *checks = NULL;
    int32_t nchecks = 0, cap = 0;
    for (int32_t i = 0; i < st->pf->nchecks; i++) {
        const plan_check *pc = &st->pf->checks[i];
        cuda_check c;
        c.extent = cugen_shape_elems(&pc->shape);
        c.message = ir_arena_printf(st->m->a, "%s over an empty axis", ir_ops[pc->op].name);
        if (cugen_size_is_lit(&c.extent, 0) || c.extent.nsyms > 0)
            IR_VEC_PUSH(st->m->a, checks, nchecks, cap, c);
    }
    out->nchecks = nchecks;
    out->checks = checks;
}

static void gen_func(cugen_module *m, const ir_func *f, const plan_func *pf, cuda_func *out) {
    fn_state st;
    memset(&st, 0, sizeof st);
    st.m = m;
    st.f = f;
    st.pf = pf;
    size_t nn = (size_t)f->nnodes;
    st.homes = ir_arena_calloc(m->a, nn ? nn : 1, sizeof(home));
    st.nresults = ir_arena_calloc(m->a, nn ? nn : 1, sizeof(int32_t));
    st.prefix = ir_arena_printf(m->a, "fusec_%s", f->name);
    gen_homes(&st);
    for (int32_t ki = 0; ki < f->partition->nkernels && !m->fail.failed; ki++)
        gen_kernel(&st, ki);
    gen_checks(&st, out);
    out->name = f->name;
    out->nparams = f->nparams;
    out->nresults = f->noutputs;
    out->nsyms = f->nsyms;
    out->nlaunches = st.nlaunches;
    out->launches = st.launches;
    out->nscratch = st.nscratch;
    out->scratch = st.scratch;
    out->inplace_hazard = pf->inplace_hazard;
}

/* ---- the module
 * ----------------------------------------------------------------------------------- */

int cuda_generate(ir_arena *a, ir_func *const *funcs, int nfuncs, cuda_module **out, char *err,
                  size_t errlen) {
    cugen_module mod;
    memset(&mod, 0, sizeof mod);
    mod.a = a;
    mod.fail.err = err;
    mod.fail.errlen = errlen;
    if (err && errlen) err[0] = 0;
    *out = NULL;
    ir_buf_init(&mod.text, a);
    plan_module *pm;
    if (plan_module_build(funcs, nfuncs, &cuda_plan_options, a, &pm, err, errlen)) return -1;
    cuda_func *fs = ir_arena_calloc(a, (size_t)(nfuncs > 0 ? nfuncs : 1), sizeof(cuda_func));
    for (int i = 0; i < nfuncs && !mod.fail.failed; i++)
        gen_func(&mod, funcs[i], &pm->funcs[i], &fs[i]);
    if (mod.fail.failed) return -1;

    ir_buf src;
    ir_buf_init(&src, a);
    ir_buf_printf(
        &src, "/* Generated by fusec's CUDA code generator (version %d): ", CUDA_CODEGEN_VERSION);
    if (nfuncs == 0) ir_buf_puts(&src, "no functions");
    for (int i = 0; i < nfuncs; i++)
        ir_buf_printf(&src, "%s%s", i ? ", " : "", funcs[i]->name);
    ir_buf_puts(&src, ".\n * Self-contained CUDA C++ for NVRTC: no headers, no runtime API. Kernel "
                      "arguments end in '_'\n * (except the buffers: p_<parameter>, r<result>, "
                      "t<node> for scratch). */\n");
    /* the helpers, each after the ones it needs */
    unsigned used = mod.helpers;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int h = 0; h < CG_H_COUNT; h++) {
            unsigned deps = 0;
            if (!(used & (1u << h))) continue;
            cugen_helper_text((cugen_helper)h, &deps);
            if ((used | deps) != used) {
                used |= deps;
                changed = 1;
            }
        }
    }
    for (int h = 0; h < CG_H_COUNT; h++)
        if (used & (1u << h)) {
            ir_buf_puts(&src, "\n");
            ir_buf_puts(&src, cugen_helper_text((cugen_helper)h, NULL));
            if (h == CG_H_MATH) math_macros(&src);
        }
    cugen_outline_emit(&mod, &src);
    if (mod.text.data) ir_buf_puts(&src, mod.text.data);
    cugen_gen_gathers(&mod, funcs, nfuncs, fs, &src);

    cuda_module *cm = ir_arena_calloc(a, 1, sizeof(cuda_module));
    cm->source = src.data ? src.data : "";
    cm->source_len = (size_t)src.len;
    cm->nfuncs = nfuncs;
    cm->funcs = fs;
    cm->nnames = mod.nnames;
    cm->names = mod.names;
    *out = cm;
    return 0;
}
