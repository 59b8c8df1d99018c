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
 * over CONE_MAX nodes, nor past a budget of copies per pass. So an element-wise value is
 * recomputed whenever that moves no more bytes than storing it, and expensive work
 * (transcendentals) is duplicated only when that saves bytes: these kernels are
 * memory-bound, where a duplicated exp costs a few instructions and a stored intermediate
 * costs a write and a read of every element. Example: exp(x) feeding sum(axis=0) and
 * sum(axis=1) is recomputed in both kernels (extra 4 < store 8); a + b + c + d of four f32
 * inputs feeding both would be stored (extra 16 > store 8).
 */
#include "passes/rewrite.h"

#include <string.h>

#define CONE_MAX 256

typedef struct cand {
    int32_t k;
    ir_ref v;
} cand;

int pass_recompute(ir_func *f, int32_t nlabels, const unsigned char *may_receive, pass_ctx *c) {
    ir_arena *A = f->arena;
    int32_t n0 = f->nnodes;
    size_t n1 = (size_t)n0 + 1;
    /* nodes of each label (CSR), and which values OUTPUT nodes read */
    int32_t *start = ir_arena_calloc(A, (size_t)nlabels + 2, sizeof(int32_t));
    ir_ref *members = ir_arena_calloc(A, n1, sizeof(ir_ref));
    unsigned char *is_result = ir_arena_calloc(A, n1, 1);
    if (!start || !members || !is_result) return pass_fail(c, "out of memory");
    for (ir_ref r = 0; r < n0; r++) {
        const ir_node *nd = &f->nodes[r];
        if (nd->op == IR_OP_OUTPUT) is_result[nd->args[0]] = 1;
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT) continue;
        if (nd->kernel < 0 || nd->kernel >= nlabels)
            return pass_fail(c, "internal: %%%d has no kernel label", (int)r);
        start[nd->kernel + 1]++;
    }
    for (int32_t l = 0; l < nlabels; l++)
        start[l + 1] += start[l];
    int32_t *fill = ir_arena_calloc(A, (size_t)nlabels + 1, sizeof(int32_t));
    if (!fill) return pass_fail(c, "out of memory");
    for (ir_ref r = 0; r < n0; r++) {
        const ir_node *nd = &f->nodes[r];
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT) continue;
        members[start[nd->kernel] + fill[nd->kernel]++] = r;
    }

    /* candidates: (K, V) with V of another kernel, element-wise, read by a node of K */
    cand *cands = NULL;
    int32_t ncand = 0, capcand = 0;
    int32_t *seen_k = ir_arena_calloc(A, n1, sizeof(int32_t)); /* per V: last K + 1 */
    if (!seen_k) return pass_fail(c, "out of memory");
    for (int32_t k = 0; k < nlabels; k++) {
        if (may_receive && !may_receive[k]) continue;
        for (int32_t i = start[k]; i < start[k + 1]; i++) {
            const ir_node *nd = &f->nodes[members[i]];
            for (int a = 0; a < ir_ops[nd->op].arity; a++) {
                ir_ref v = nd->args[a];
                const ir_node *vn = &f->nodes[v];
                if (pass_is_leaf(vn) || vn->kernel == k || !pass_is_pointwise(vn)) continue;
                if (seen_k[v] == k + 1) continue;
                seen_k[v] = k + 1;
                IR_VEC_PUSH(A, cands, ncand, capcand, ((cand){k, v}));
                if (!cands) return pass_fail(c, "out of memory");
            }
        }
    }
    if (ncand == 0) return 0;

    /* per-node scratch, sized for the copies to come */
    int64_t budget = n0 > 4096 ? n0 : 4096;
    size_t cap = (size_t)n0 + (size_t)budget + 1;
    int32_t *reads = ir_arena_calloc(A, cap, sizeof(int32_t));  /* stamp: K reads it */
    int32_t *incone = ir_arena_calloc(A, cap, sizeof(int32_t)); /* stamp: in the cone */
    int32_t *counted = ir_arena_calloc(A, cap, sizeof(int32_t));
    ir_ref *copy = ir_arena_calloc(A, cap, sizeof(ir_ref));
    ir_ref *cone = ir_arena_calloc(A, CONE_MAX + 1, sizeof(ir_ref));
    ir_ref *stack = ir_arena_calloc(A, CONE_MAX * 3 + 4, sizeof(ir_ref));
    unsigned char *argi = ir_arena_calloc(A, cap, 1);
    if (!reads || !incone || !counted || !copy || !cone || !stack || !argi)
        return pass_fail(c, "out of memory");
    int32_t stamp = 0, kstamp = 0, cur_k = -1;
    int done = 0;

    for (int32_t ci = 0; ci < ncand && budget > 0; ci++) {
        int32_t k = cands[ci].k;
        ir_ref v = cands[ci].v;
        int32_t h = f->nodes[v].kernel;
        if (k != cur_k) {
            /* what K reads from memory now */
            cur_k = k;
            kstamp++;
            for (int32_t i = start[k]; i < start[k + 1]; i++) {
                const ir_node *nd = &f->nodes[members[i]];
                for (int a = 0; a < ir_ops[nd->op].arity; a++) {
                    const ir_node *an = &f->nodes[nd->args[a]];
                    if (an->op == IR_OP_INPUT || (!pass_is_leaf(an) && an->kernel != k))
                        reads[nd->args[a]] = kstamp;
                }
            }
        }
        /* V's cone in H, in topological order (post-order of a depth-first walk) */
        stamp++;
        int32_t ncone = 0, sp = 0, ok = 1;
        stack[sp++] = v;
        incone[v] = stamp;
        argi[v] = 0;
        while (sp > 0 && ok) {
            ir_ref r = stack[sp - 1];
            const ir_node *nd = &f->nodes[r];
            if (pass_is_reduce(nd)) {
                ok = 0;
                break;
            }
            if (argi[r] < ir_ops[nd->op].arity) {
                ir_ref a = nd->args[argi[r]++];
                const ir_node *an = &f->nodes[a];
                if (pass_is_leaf(an) || an->kernel != h || incone[a] == stamp) continue;
                if (sp >= CONE_MAX * 3) {
                    ok = 0;
                    break;
                }
                incone[a] = stamp;
                argi[a] = 0;
                stack[sp++] = a;
                continue;
            }
            sp--;
            if (ncone >= CONE_MAX) {
                ok = 0;
                break;
            }
            cone[ncone++] = r;
        }
        if (!ok || ncone > budget) continue;
        /* the rule */
        int64_t extra = 0;
        int expensive = 0;
        for (int32_t i = 0; i < ncone; i++) {
            const ir_node *nd = &f->nodes[cone[i]];
            if (ir_ops[nd->op].flags & IR_OPF_EXPENSIVE) expensive = 1;
            for (int a = 0; a < ir_ops[nd->op].arity; a++) {
                ir_ref q = nd->args[a];
                const ir_node *qn = &f->nodes[q];
                if (qn->op == IR_OP_CONST || incone[q] == stamp) continue;
                if (reads[q] == kstamp || counted[q] == stamp) continue;
                counted[q] = stamp;
                extra += ir_dtypes[qn->dtype].bytes;
            }
        }
        int64_t vsize = ir_dtypes[f->nodes[v].dtype].bytes;
        int64_t store = is_result[v] ? vsize : 2 * vsize;
        if (!(extra < store || (extra == store && !expensive))) continue;

        /* copy the cone into K, then make K's nodes read the copy of V */
        for (int32_t i = 0; i < ncone; i++) {
            ir_node nd = f->nodes[cone[i]];
            for (int a = 0; a < ir_ops[nd.op].arity; a++)
                if (incone[nd.args[a]] == stamp) nd.args[a] = copy[nd.args[a]];
            nd.kernel = k;
            nd.flags = 0;
            if (f->nnodes >= f->cap_nodes) {
                ir_node *p =
                    ir_arena_grow(A, f->nodes, sizeof(*f->nodes), &f->cap_nodes, f->nnodes + 1);
                if (!p) return pass_fail(c, "out of memory");
                f->nodes = p;
            }
            f->nodes[f->nnodes] = nd;
            copy[cone[i]] = f->nnodes++;
            /* the copy reads what the cone reads: K reads that now */
            for (int a = 0; a < ir_ops[nd.op].arity; a++) {
                const ir_node *qn = &f->nodes[nd.args[a]];
                if (qn->op == IR_OP_INPUT || (!pass_is_leaf(qn) && qn->kernel != k))
                    reads[nd.args[a]] = kstamp;
            }
        }
        budget -= ncone;
        for (int32_t i = start[k]; i < start[k + 1]; i++) {
            ir_node *nd = &f->nodes[members[i]];
            for (int a = 0; a < ir_ops[nd->op].arity; a++)
                if (nd->args[a] == v) nd->args[a] = copy[v];
        }
        done++;
    }
    return done;
}
