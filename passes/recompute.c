/* passes/recompute.c: Rule 1 of fusion, recompute or store, for a value V that a kernel K
 * needs but another kernel H computes (V feeds two reductions over different axes, a
 * kernel over another domain, a broadcast into a larger domain, ...).
 *
 * Within one kernel a value is computed once and kept in a register for all its uses. Across
 * kernels, V is recomputed in K (its element-wise cone, back to the values H reads from
 * memory, is copied into K) rather than written to memory by H and read back by K, when
 *     extra <  store,  or  extra == store and the cone holds no IR_OPF_EXPENSIVE op
 * where, in bytes per element of V,
 *     extra = the sizes of the cone's memory inputs (INPUTs and stored values) K does not
 *             read already,
 *     store = size(V) to read V back, plus size(V) to write it unless it is a function
 *             result (written anyway).
 * A cone that holds a reduction is never copied (a reduction is never done twice), nor one
 * over CONE_MAX nodes, nor one that would take a call of pass_recompute past its budget: as
 * many copied nodes as the function had when called, COPY_BUDGET_MIN at least. The budget
 * is per call, not per pass: fuse_pointwise calls it once, fuse_reduction and
 * fuse_horizontal once a round, in up to FUSE_ROUNDS_MAX (4) rounds each (pass_fuse_rounds
 * in kgraph.c). So, within these limits, an element-wise value is recomputed whenever that
 * moves no more bytes than storing it, and expensive work (transcendentals) is duplicated
 * only when that saves bytes: these kernels are memory-bound, where a duplicated exp costs a
 * few instructions and a stored intermediate costs a write and a read of every element.
 * Example: exp(x) feeding sum(axis=0) and sum(axis=1) is recomputed in both kernels (extra
 * 4 < store 8); a + b + c + d of four f32 inputs feeding both would be stored (extra 16 >
 * store 8).
 */
#include "passes/rewrite.h"

#include <string.h>

#define CONE_MAX 256

/* The floor of a call's budget of copied nodes (pass_recompute): 16 cones of CONE_MAX
 * nodes, so that the budget holds back no small function. */
#define COPY_BUDGET_MIN 4096

typedef struct cand {
    int32_t k;
    ir_ref v;
} cand;

/* What the steps of pass_recompute share. The stamps mark per-node scratch without
 * clearing it: a node is marked when its entry equals the current stamp. */
typedef struct recomp {
    ir_func *f;
    pass_ctx *c;
    int32_t nlabels;
    int32_t *start;           /* label -> its first node in members (CSR) */
    ir_ref *members;          /* the kernel nodes, label by label */
    unsigned char *is_result; /* per node: an OUTPUT reads it */
    cand *cands;              /* (K, V) pairs, by K */
    int32_t ncand;
    int32_t *reads;      /* == kstamp: the current K reads it from memory */
    int32_t *incone;     /* == stamp: in the current cone */
    int32_t *counted;    /* == stamp: counted in the cone's extra bytes */
    ir_ref *copy;        /* node of the cone -> its copy in K */
    ir_ref *cone;        /* the current cone, in topological order */
    int32_t ncone;       /* its size */
    ir_ref *stack;       /* the walk of the cone */
    unsigned char *argi; /* the next operand the walk visits, per node */
    int32_t stamp, kstamp;
} recomp;

/* Step 1: the nodes of each label (start, members) and the values OUTPUT nodes read
 * (is_result, which stores anyway). A kernel node without a label in range fails. */
static int index_labels(recomp *rc) {
    ir_arena *A = rc->f->arena;
    const ir_func *f = rc->f;
    int32_t n0 = f->nnodes, nlabels = rc->nlabels;
    rc->start = ir_arena_calloc(A, (size_t)nlabels + 2, sizeof(int32_t));
    rc->members = ir_arena_calloc(A, (size_t)n0 + 1, sizeof(ir_ref));
    rc->is_result = ir_arena_calloc(A, (size_t)n0 + 1, 1);
    if (!rc->start || !rc->members || !rc->is_result) return pass_fail(rc->c, "out of memory");
    for (ir_ref r = 0; r < n0; r++) {
        const ir_node *nd = &f->nodes[r];
        if (nd->op == IR_OP_OUTPUT) rc->is_result[nd->args[0]] = 1;
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT) continue;
        if (nd->kernel < 0 || nd->kernel >= nlabels)
            return pass_fail(rc->c, "internal: %%%d has no kernel label", (int)r);
        rc->start[nd->kernel + 1]++;
    }
    for (int32_t l = 0; l < nlabels; l++)
        rc->start[l + 1] += rc->start[l];
    int32_t *fill = ir_arena_calloc(A, (size_t)nlabels + 1, sizeof(int32_t));
    if (!fill) return pass_fail(rc->c, "out of memory");
    for (ir_ref r = 0; r < n0; r++) {
        const ir_node *nd = &f->nodes[r];
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT) continue;
        rc->members[rc->start[nd->kernel] + fill[nd->kernel]++] = r;
    }
    return 0;
}

/* Step 2: the candidates, each (K, V) once: V element-wise, of another kernel, read by a
 * node of K, where K may receive copies. In order of K, so step 4 runs once per K. */
static int find_candidates(recomp *rc, const unsigned char *may_receive) {
    ir_arena *A = rc->f->arena;
    const ir_func *f = rc->f;
    int32_t capcand = 0;
    int32_t *seen_k = ir_arena_calloc(A, (size_t)f->nnodes + 1, sizeof(int32_t)); /* last K+1 */
    if (!seen_k) return pass_fail(rc->c, "out of memory");
    for (int32_t k = 0; k < rc->nlabels; k++) {
        if (may_receive && !may_receive[k]) continue;
        for (int32_t i = rc->start[k]; i < rc->start[k + 1]; i++) {
            const ir_node *nd = &f->nodes[rc->members[i]];
            for (int a = 0; a < ir_ops[nd->op].arity; a++) {
                ir_ref v = nd->args[a];
                const ir_node *vn = &f->nodes[v];
                if (pass_is_leaf(vn) || vn->kernel == k || !pass_is_pointwise(vn)) continue;
                if (seen_k[v] == k + 1) continue;
                seen_k[v] = k + 1;
                IR_VEC_PUSH(A, rc->cands, rc->ncand, capcand, ((cand){k, v}));
                if (!rc->cands) return pass_fail(rc->c, "out of memory");
            }
        }
    }
    return 0;
}

/* Step 3: the per-node scratch, with cap entries: room for the copies to come. */
static int alloc_scratch(recomp *rc, size_t cap) {
    ir_arena *A = rc->f->arena;
    rc->reads = ir_arena_calloc(A, cap, sizeof(int32_t));
    rc->incone = ir_arena_calloc(A, cap, sizeof(int32_t));
    rc->counted = ir_arena_calloc(A, cap, sizeof(int32_t));
    rc->copy = ir_arena_calloc(A, cap, sizeof(ir_ref));
    rc->cone = ir_arena_calloc(A, CONE_MAX + 1, sizeof(ir_ref));
    rc->stack = ir_arena_calloc(A, CONE_MAX * 3 + 4, sizeof(ir_ref));
    rc->argi = ir_arena_calloc(A, cap, 1);
    if (!rc->reads || !rc->incone || !rc->counted || !rc->copy || !rc->cone || !rc->stack ||
        !rc->argi)
        return pass_fail(rc->c, "out of memory");
    return 0;
}

/* Marks q (kstamp) when K, reading it, loads it from memory: an INPUT, or a value of
 * another kernel. A cone that reads q then costs K no extra bytes for it. */
static void note_read(recomp *rc, int32_t k, ir_ref q) {
    const ir_node *qn = &rc->f->nodes[q];
    if (qn->op == IR_OP_INPUT || (!pass_is_leaf(qn) && qn->kernel != k)) rc->reads[q] = rc->kstamp;
}

/* Step 4: what K reads from memory now, which a cone may read for free. */
static void note_reads_of(recomp *rc, int32_t k) {
    rc->kstamp++;
    for (int32_t i = rc->start[k]; i < rc->start[k + 1]; i++) {
        const ir_node *nd = &rc->f->nodes[rc->members[i]];
        for (int a = 0; a < ir_ops[nd->op].arity; a++)
            note_read(rc, k, nd->args[a]);
    }
}

/* Step 5: V's cone in its kernel H (what V is computed from there, up to H's memory
 * inputs), in topological order: the post-order of a depth-first walk. 0 when it may not
 * be copied: it holds a reduction, or is over CONE_MAX nodes. */
static int walk_cone(recomp *rc, ir_ref v) {
    const ir_func *f = rc->f;
    int32_t h = f->nodes[v].kernel, sp = 0;
    rc->stamp++;
    rc->ncone = 0;
    rc->stack[sp++] = v;
    rc->incone[v] = rc->stamp;
    rc->argi[v] = 0;
    while (sp > 0) {
        ir_ref r = rc->stack[sp - 1];
        const ir_node *nd = &f->nodes[r];
        if (pass_is_reduce(nd)) return 0;
        if (rc->argi[r] < ir_ops[nd->op].arity) {
            ir_ref a = nd->args[rc->argi[r]++];
            const ir_node *an = &f->nodes[a];
            if (pass_is_leaf(an) || an->kernel != h || rc->incone[a] == rc->stamp) continue;
            if (sp >= CONE_MAX * 3) return 0;
            rc->incone[a] = rc->stamp;
            rc->argi[a] = 0;
            rc->stack[sp++] = a;
            continue;
        }
        sp--;
        if (rc->ncone >= CONE_MAX) return 0;
        rc->cone[rc->ncone++] = r;
    }
    return 1;
}

/* Step 6: the rule (the comment at the top): 1 when recomputing V's cone in K moves fewer
 * bytes than storing V, or as many and the cone holds no expensive op. */
static int recompute_pays(recomp *rc, ir_ref v) {
    const ir_func *f = rc->f;
    int64_t extra = 0;
    int expensive = 0;
    for (int32_t i = 0; i < rc->ncone; i++) {
        const ir_node *nd = &f->nodes[rc->cone[i]];
        if (ir_ops[nd->op].flags & IR_OPF_EXPENSIVE) expensive = 1;
        for (int a = 0; a < ir_ops[nd->op].arity; a++) {
            ir_ref q = nd->args[a];
            const ir_node *qn = &f->nodes[q];
            if (ir_op_is_inline_leaf(qn->op) || rc->incone[q] == rc->stamp) continue;
            if (rc->reads[q] == rc->kstamp || rc->counted[q] == rc->stamp) continue;
            rc->counted[q] = rc->stamp;
            extra += ir_dtypes[qn->dtype].bytes;
        }
    }
    int64_t vsize = ir_dtypes[f->nodes[v].dtype].bytes;
    int64_t store = rc->is_result[v] ? vsize : 2 * vsize;
    return extra < store || (extra == store && !expensive);
}

/* Step 7: appends a copy of the cone, labelled K, reading the copies of its own nodes;
 * what the copies read from memory K reads now. */
static int copy_cone(recomp *rc, int32_t k) {
    ir_func *f = rc->f;
    for (int32_t i = 0; i < rc->ncone; i++) {
        ir_node nd = f->nodes[rc->cone[i]];
        for (int a = 0; a < ir_ops[nd.op].arity; a++)
            if (rc->incone[nd.args[a]] == rc->stamp) nd.args[a] = rc->copy[nd.args[a]];
        nd.kernel = k;
        nd.flags = 0;
        if (f->nnodes >= f->cap_nodes) {
            ir_node *p =
                ir_arena_grow(f->arena, f->nodes, sizeof(*f->nodes), &f->cap_nodes, f->nnodes + 1);
            if (!p) return pass_fail(rc->c, "out of memory");
            f->nodes = p;
        }
        f->nodes[f->nnodes] = nd;
        rc->copy[rc->cone[i]] = f->nnodes++;
        for (int a = 0; a < ir_ops[nd.op].arity; a++)
            note_read(rc, k, nd.args[a]);
    }
    return 0;
}

/* Step 8: K's own nodes read the copy of V instead of V. */
static void read_copy(recomp *rc, int32_t k, ir_ref v) {
    for (int32_t i = rc->start[k]; i < rc->start[k + 1]; i++) {
        ir_node *nd = &rc->f->nodes[rc->members[i]];
        for (int a = 0; a < ir_ops[nd->op].arity; a++)
            if (nd->args[a] == v) nd->args[a] = rc->copy[v];
    }
}

int pass_recompute(ir_func *f, int32_t nlabels, const unsigned char *may_receive, pass_ctx *c) {
    recomp rc = {.f = f, .c = c, .nlabels = nlabels};
    int32_t n0 = f->nnodes;
    if (index_labels(&rc) || find_candidates(&rc, may_receive)) return -1;
    if (rc.ncand == 0) return 0;
    /* the budget bounds the nodes one call copies, so the scratch is sized up front and a
     * large function at most doubles */
    int64_t budget = n0 > COPY_BUDGET_MIN ? n0 : COPY_BUDGET_MIN;
    if (alloc_scratch(&rc, (size_t)n0 + (size_t)budget + 1)) return -1;
    int32_t cur_k = -1;
    int done = 0;
    for (int32_t ci = 0; ci < rc.ncand && budget > 0; ci++) {
        int32_t k = rc.cands[ci].k;
        ir_ref v = rc.cands[ci].v;
        if (k != cur_k) {
            cur_k = k;
            note_reads_of(&rc, k);
        }
        if (!walk_cone(&rc, v) || rc.ncone > budget || !recompute_pays(&rc, v)) continue;
        if (copy_cone(&rc, k)) return -1;
        budget -= rc.ncone;
        read_copy(&rc, k, v);
        done++;
    }
    return done;
}
