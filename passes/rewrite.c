/* passes/rewrite.c: the rewriting the passes share: compacting the node array after a
 * clean-up pass replaced or dropped nodes, hashing nodes by what they compute, and
 * building a partition (ir_partition) from per-node kernel labels, which every
 * partitioning pass ends with. */
#include "passes/rewrite.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int pass_fail(pass_ctx *c, const char *fmt, ...) {
    if (c && c->err && c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- shapes ---------------------------------------------------------------------------- */

int pass_shape_is_scalar(const ir_shape *s) {
    for (int32_t i = 0; i < s->rank; i++)
        if (!ir_dim_is_one(s->dims[i])) return 0;
    return 1;
}

/* ---- node identity --------------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdu;
}

uint64_t pass_node_hash(const ir_node *n) {
    uint64_t h = mix(0, (uint64_t)n->op);
    h = mix(h, (uint64_t)n->dtype);
    h = mix(h, (uint64_t)n->shape.rank);
    for (int32_t i = 0; i < n->shape.rank; i++) {
        h = mix(h, (uint64_t)(int64_t)n->shape.dims[i].sym);
        h = mix(h, (uint64_t)n->shape.dims[i].size);
    }
    for (int i = 0; i < 3; i++)
        h = mix(h, (uint64_t)(int64_t)n->args[i]);
    h = mix(h, n->axes);
    if (n->op == IR_OP_CONST) {
        uint64_t bits;
        if (ir_dtype_is_float(n->dtype))
            memcpy(&bits, &n->value.f, sizeof bits);
        else
            bits = (uint64_t)n->value.i;
        h = mix(h, bits);
    }
    if (n->op == IR_OP_INPUT || n->op == IR_OP_OUTPUT) h = mix(h, (uint64_t)(int64_t)n->index);
    return h;
}

int pass_node_same(const ir_node *a, const ir_node *b) {
    if (a->op != b->op || a->dtype != b->dtype || a->axes != b->axes) return 0;
    if (!ir_shape_equal(&a->shape, &b->shape)) return 0;
    /* symbolic and literal dims compare equal only to their own kind: shape_equal does */
    for (int i = 0; i < 3; i++)
        if (a->args[i] != b->args[i]) return 0;
    if (a->op == IR_OP_INPUT || a->op == IR_OP_OUTPUT) return a->index == b->index;
    if (a->op == IR_OP_CONST) {
        if (ir_dtype_is_float(a->dtype))
            return memcmp(&a->value.f, &b->value.f, sizeof(double)) == 0;
        return a->value.i == b->value.i;
    }
    return 1;
}

/* ---- compaction (clean-up passes) ------------------------------------------------------ */

int pass_compact(ir_func *f, ir_ref *repl, int drop_dead) {
    int32_t n = f->nnodes;
    ir_arena *a = f->arena;
    unsigned char *live = ir_arena_calloc(a, (size_t)n + 1, 1);
    ir_ref *newidx = ir_arena_calloc(a, (size_t)n + 1, sizeof(ir_ref));
    if (!live || !newidx) return -1;
    /* resolve chains: repl[r] < r, so a forward sweep sees the final target first */
    for (ir_ref r = 0; r < n; r++)
        if (repl[r] != r) repl[r] = repl[repl[r]];
    for (ir_ref r = 0; r < n; r++) {
        ir_node *nd = &f->nodes[r];
        for (int i = 0; i < ir_ops[nd->op].arity; i++)
            nd->args[i] = repl[nd->args[i]];
    }
    /* liveness, from the results back; INPUT nodes are parameters and always stay */
    for (ir_ref r = n - 1; r >= 0; r--) {
        ir_node *nd = &f->nodes[r];
        if (repl[r] != r) continue;
        if (nd->op == IR_OP_OUTPUT || nd->op == IR_OP_INPUT || !drop_dead) live[r] = 1;
        if (!live[r]) continue;
        for (int i = 0; i < ir_ops[nd->op].arity; i++)
            live[nd->args[i]] = 1;
    }
    int32_t m = 0;
    for (ir_ref r = 0; r < n; r++) {
        if (!live[r]) {
            newidx[r] = IR_NONE;
            continue;
        }
        newidx[r] = m;
        ir_node nd = f->nodes[r];
        for (int i = 0; i < ir_ops[nd.op].arity; i++)
            nd.args[i] = newidx[nd.args[i]];
        f->nodes[m++] = nd;
    }
    f->nnodes = m;
    for (int32_t i = 0; i < f->nparams; i++)
        f->params[i].node = newidx[f->params[i].node];
    for (int32_t i = 0; i < f->noutputs; i++)
        f->outputs[i].node = newidx[f->outputs[i].node];
    return 0;
}

/* ---- building a partition from labels --------------------------------------------------- */

/* An open-addressing set of node refs keyed by (label, what the node computes). */
typedef struct node_set {
    ir_ref *slot;
    uint32_t mask;
} node_set;

static int set_init(ir_arena *a, node_set *s, int32_t n) {
    uint32_t cap = 16;
    while (cap < (uint32_t)n * 2u + 16u)
        cap *= 2;
    s->slot = ir_arena_calloc(a, cap, sizeof(ir_ref));
    if (!s->slot) return -1;
    for (uint32_t i = 0; i < cap; i++)
        s->slot[i] = IR_NONE;
    s->mask = cap - 1;
    return 0;
}

/* The ref of a node in the set computing what r computes in the same kernel, or r after
 * adding it. */
static ir_ref set_intern(node_set *s, const ir_func *f, ir_ref r) {
    const ir_node *n = &f->nodes[r];
    uint64_t h = mix(pass_node_hash(n), (uint64_t)(int64_t)n->kernel);
    for (uint32_t i = (uint32_t)h & s->mask;; i = (i + 1) & s->mask) {
        ir_ref q = s->slot[i];
        if (q == IR_NONE) {
            s->slot[i] = r;
            return r;
        }
        if (f->nodes[q].kernel == n->kernel && pass_node_same(&f->nodes[q], n)) return q;
    }
}

/* A binary min-heap of ints keyed by key[]. */
typedef struct heap {
    int32_t *a;
    int32_t n;
    const int32_t *key;
} heap;

static void heap_push(heap *h, int32_t v) {
    int32_t i = h->n++;
    h->a[i] = v;
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (h->key[h->a[p]] <= h->key[h->a[i]]) break;
        int32_t t = h->a[p];
        h->a[p] = h->a[i];
        h->a[i] = t;
        i = p;
    }
}

static int32_t heap_pop(heap *h) {
    int32_t top = h->a[0];
    h->a[0] = h->a[--h->n];
    int32_t i = 0;
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->key[h->a[l]] < h->key[h->a[m]]) m = l;
        if (r < h->n && h->key[h->a[r]] < h->key[h->a[m]]) m = r;
        if (m == i) break;
        int32_t t = h->a[m];
        h->a[m] = h->a[i];
        h->a[i] = t;
        i = m;
    }
    return top;
}

/* Appends a node to f; returns its ref or IR_NONE when out of memory. */
static ir_ref append_node(ir_func *f, const ir_node *n) {
    if (f->nnodes >= f->cap_nodes) {
        ir_node *p =
            ir_arena_grow(f->arena, f->nodes, sizeof(*f->nodes), &f->cap_nodes, f->nnodes + 1);
        if (!p) return IR_NONE;
        f->nodes = p;
    }
    f->nodes[f->nnodes] = *n;
    return f->nnodes++;
}

/* Fills kind, domain and reduce axes of the part body[from, to) of a kernel. */
static void describe_part(const ir_func *f, const ir_ref *body, int32_t from, int32_t to,
                          ir_kernel *k) {
    const ir_node *first_out = NULL;
    for (int32_t i = from; i < to; i++) {
        const ir_node *n = &f->nodes[body[i]];
        if (pass_is_reduce(n)) {
            k->domain = f->nodes[n->args[0]].shape;
            k->reduce_axes = n->axes;
            k->kind = ir_reduction_kind(&k->domain, n->axes);
            return;
        }
        if (!first_out && (n->flags & IR_NODE_STORED)) first_out = n;
    }
    k->kind = IR_KERNEL_POINTWISE;
    k->reduce_axes = 0;
    k->domain = first_out ? first_out->shape : f->nodes[body[to - 1]].shape;
}

/* The place of each launch in an order that respects their dependencies (Kahn's
 * algorithm; of the ready launches, the one whose first node comes first in topological
 * order goes first). lof maps labels to launches. NULL on a cycle or when out of memory. */
static int32_t *order_launches(const ir_func *f, const ir_ref *topo, int32_t ntopo,
                               const ir_ref *canon, const int32_t *lof, int32_t nlaunch,
                               const int32_t *lkey, pass_ctx *c) {
    ir_arena *A = f->arena;
    /* edges as CSR, one per reading operand (Kahn's algorithm counts them all) */
    int32_t *start = ir_arena_calloc(A, (size_t)nlaunch + 2, sizeof(int32_t));
    int32_t *fill = ir_arena_calloc(A, (size_t)nlaunch + 1, sizeof(int32_t));
    int32_t *indeg = ir_arena_calloc(A, (size_t)nlaunch + 1, sizeof(int32_t));
    if (!start || !fill || !indeg) {
        pass_fail(c, "out of memory");
        return NULL;
    }
    int32_t *dst = NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t i = 0; i < ntopo; i++) {
            ir_ref r = topo[i];
            const ir_node *nd = &f->nodes[r];
            if (canon[r] != r || nd->kernel < 0) continue;
            int32_t lr = lof[nd->kernel];
            for (int k = 0; k < ir_ops[nd->op].arity; k++) {
                const ir_node *an = &f->nodes[nd->args[k]];
                if (an->kernel < 0) continue;
                int32_t la = lof[an->kernel];
                if (la == lr && an->kernel != nd->kernel) {
                    pass_fail(c,
                              "internal: parts %d and %d of one combined kernel depend on "
                              "each other (%%%d reads %%%d)",
                              (int)an->kernel, (int)nd->kernel, (int)r, (int)nd->args[k]);
                    return NULL;
                }
                if (la == lr) continue;
                if (pass == 0) {
                    start[la + 1]++;
                } else {
                    dst[start[la] + fill[la]++] = lr;
                    indeg[lr]++;
                }
            }
        }
        if (pass == 0) {
            for (int32_t l = 0; l < nlaunch; l++)
                start[l + 1] += start[l];
            dst = ir_arena_calloc(A, (size_t)start[nlaunch] + 1, sizeof(int32_t));
            if (!dst) {
                pass_fail(c, "out of memory");
                return NULL;
            }
        }
    }
    int32_t *rank = ir_arena_calloc(A, (size_t)nlaunch + 1, sizeof(int32_t));
    heap h = {ir_arena_calloc(A, (size_t)nlaunch + 1, sizeof(int32_t)), 0, lkey};
    if (!rank || !h.a) {
        pass_fail(c, "out of memory");
        return NULL;
    }
    for (int32_t l = 0; l < nlaunch; l++)
        if (indeg[l] == 0) heap_push(&h, l);
    int32_t norder = 0;
    while (h.n > 0) {
        int32_t l = heap_pop(&h);
        rank[l] = norder++;
        for (int32_t e = start[l]; e < start[l + 1]; e++)
            if (--indeg[dst[e]] == 0) heap_push(&h, dst[e]);
    }
    if (norder != nlaunch) {
        pass_fail(c, "internal: the kernels depend on each other in a cycle");
        return NULL;
    }
    return rank;
}

int pass_partition_build(ir_func *f, int32_t nlabels, const int32_t *group, pass_ctx *c) {
    ir_arena *A = f->arena;

    /* every result is written by a kernel: a returned leaf gets a copy kernel */
    int32_t nextra = 0;
    for (int32_t o = 0; o < f->noutputs; o++) {
        ir_ref out = f->outputs[o].node;
        ir_ref v = f->nodes[out].args[0];
        if (!pass_is_leaf(&f->nodes[v])) continue;
        ir_node copy = f->nodes[v];
        copy.op = IR_OP_CAST;
        copy.args[0] = v;
        copy.args[1] = copy.args[2] = IR_NONE;
        copy.index = 0;
        copy.axes = 0;
        memset(&copy.value, 0, sizeof copy.value);
        copy.flags = 0;
        copy.kernel = nlabels + nextra;
        ir_ref r = append_node(f, &copy);
        if (r == IR_NONE) return pass_fail(c, "out of memory");
        f->nodes[out].args[0] = r;
        nextra++;
    }
    int32_t nl = nlabels + nextra;
    int32_t n = f->nnodes;
    int32_t *grp = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    if (!grp) return pass_fail(c, "out of memory");
    for (int32_t l = 0; l < nl; l++)
        grp[l] = group && l < nlabels ? group[l] : l;
    for (ir_ref r = 0; r < n; r++) {
        const ir_node *nd = &f->nodes[r];
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT) continue;
        if (nd->kernel < 0 || nd->kernel >= nl)
            return pass_fail(c, "internal: %%%d (%s) has kernel label %d of %d", (int)r,
                             ir_ops[nd->op].name, (int)nd->kernel, (int)nl);
        if (grp[nd->kernel] < 0 || grp[nd->kernel] >= nl)
            return pass_fail(c, "internal: label %d has launch group %d", (int)nd->kernel,
                             (int)grp[nd->kernel]);
    }

    /* topological order of the live nodes: depth-first from the results (post-order) */
    ir_ref *topo = ir_arena_calloc(A, (size_t)n + 1, sizeof(ir_ref));
    ir_ref *stack = ir_arena_calloc(A, (size_t)n + 1, sizeof(ir_ref));
    unsigned char *state = ir_arena_calloc(A, (size_t)n + 1, 1); /* 0 new, 1 open, 2 done */
    int32_t *argi = ir_arena_calloc(A, (size_t)n + 1, sizeof(int32_t));
    if (!topo || !stack || !state || !argi) return pass_fail(c, "out of memory");
    int32_t ntopo = 0;
    for (int32_t pass = 0; pass < 2; pass++) {
        int32_t nroots = pass == 0 ? f->nparams : f->noutputs;
        for (int32_t i = 0; i < nroots; i++) {
            ir_ref root = pass == 0 ? f->params[i].node : f->outputs[i].node;
            if (state[root]) continue;
            int32_t sp = 0;
            stack[sp++] = root;
            state[root] = 1;
            argi[root] = 0;
            while (sp > 0) {
                ir_ref r = stack[sp - 1];
                const ir_node *nd = &f->nodes[r];
                if (argi[r] < ir_ops[nd->op].arity) {
                    ir_ref a = nd->args[argi[r]++];
                    if (a < 0 || a >= n)
                        return pass_fail(c, "internal: %%%d reads %%%d", (int)r, (int)a);
                    if (state[a] == 1)
                        return pass_fail(c, "internal: a cycle through %%%d", (int)a);
                    if (state[a] == 0) {
                        state[a] = 1;
                        argi[a] = 0;
                        stack[sp++] = a;
                    }
                    continue;
                }
                state[r] = 2;
                sp--;
                topo[ntopo++] = r;
            }
        }
    }

    /* merge identical nodes of one kernel (merged kernels may each hold a copy of a value) */
    ir_ref *canon = ir_arena_calloc(A, (size_t)n + 1, sizeof(ir_ref));
    node_set set;
    if (!canon || set_init(A, &set, ntopo)) return pass_fail(c, "out of memory");
    for (ir_ref r = 0; r < n; r++)
        canon[r] = r;
    for (int32_t i = 0; i < ntopo; i++) {
        ir_ref r = topo[i];
        ir_node *nd = &f->nodes[r];
        for (int k = 0; k < ir_ops[nd->op].arity; k++)
            nd->args[k] = canon[nd->args[k]];
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT) nd->kernel = -1;
        if (nd->op == IR_OP_INPUT || nd->op == IR_OP_OUTPUT) continue;
        canon[r] = set_intern(&set, f, r);
    }

    /* launches: dense ids, each keyed by the first topological position of its nodes */
    int32_t *launch_of_grp = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    int32_t *lkey = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    int32_t *labkey = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    if (!launch_of_grp || !lkey || !labkey) return pass_fail(c, "out of memory");
    for (int32_t l = 0; l < nl; l++) {
        launch_of_grp[l] = -1;
        labkey[l] = -1;
    }
    int32_t nlaunch = 0;
    for (int32_t i = 0; i < ntopo; i++) {
        ir_ref r = topo[i];
        const ir_node *nd = &f->nodes[r];
        if (canon[r] != r || nd->kernel < 0) continue;
        int32_t g = grp[nd->kernel];
        if (launch_of_grp[g] < 0) {
            launch_of_grp[g] = nlaunch;
            lkey[nlaunch] = i;
            nlaunch++;
        }
        if (labkey[nd->kernel] < 0) labkey[nd->kernel] = i;
    }
    int32_t *lof = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t)); /* label -> launch */
    if (!lof) return pass_fail(c, "out of memory");
    for (int32_t l = 0; l < nl; l++)
        lof[l] = launch_of_grp[grp[l]];
    int32_t *rank = order_launches(f, topo, ntopo, canon, lof, nlaunch, lkey, c);
    if (!rank) return -1;

    /* new numbering: inputs, constants, each launch's parts in turn, outputs */
    int32_t *bucket_start = ir_arena_calloc(A, (size_t)nlaunch + 2, sizeof(int32_t));
    ir_ref *newidx = ir_arena_calloc(A, (size_t)n + 1, sizeof(ir_ref));
    ir_node *nodes = ir_arena_calloc(A, (size_t)n + 1, sizeof(ir_node));
    ir_ref *old_of = ir_arena_calloc(A, (size_t)n + 1, sizeof(ir_ref));
    if (!bucket_start || !newidx || !nodes || !old_of) return pass_fail(c, "out of memory");
    for (ir_ref r = 0; r < n; r++)
        newidx[r] = IR_NONE;
    int32_t m = 0;
    for (int32_t i = 0; i < f->nparams; i++)
        old_of[newidx[f->params[i].node] = m++] = f->params[i].node;
    for (int32_t i = 0; i < ntopo; i++) {
        ir_ref r = topo[i];
        if (f->nodes[r].op == IR_OP_CONST && canon[r] == r) old_of[newidx[r] = m++] = r;
    }
    /* kernel nodes in (launch rank, part key, topological) order: first each label's nodes
     * in topological order, then the labels by launch rank and key */
    int32_t *lstart = ir_arena_calloc(A, (size_t)nl + 2, sizeof(int32_t));
    int32_t *lfill = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    int32_t *labs = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    int64_t *lsort = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int64_t));
    if (!lstart || !lfill || !labs || !lsort) return pass_fail(c, "out of memory");
    for (int32_t i = 0; i < ntopo; i++) {
        ir_ref r = topo[i];
        if (canon[r] == r && f->nodes[r].kernel >= 0) lstart[f->nodes[r].kernel + 1]++;
    }
    int32_t nlabs = 0;
    for (int32_t l = 0; l < nl; l++) {
        if (lstart[l + 1] > 0) {
            labs[nlabs++] = l;
            lsort[l] = (int64_t)rank[lof[l]] * ((int64_t)ntopo + 1) + labkey[l];
            bucket_start[rank[lof[l]] + 1] += lstart[l + 1];
        }
        lstart[l + 1] += lstart[l];
    }
    int32_t nk = lstart[nl];
    for (int32_t l = 0; l < nlaunch; l++)
        bucket_start[l + 1] += bucket_start[l];
    ir_ref *lnodes = ir_arena_calloc(A, (size_t)nk + 1, sizeof(ir_ref));
    ir_ref *kn = ir_arena_calloc(A, (size_t)nk + 1, sizeof(ir_ref));
    if (!lnodes || !kn) return pass_fail(c, "out of memory");
    for (int32_t i = 0; i < ntopo; i++) {
        ir_ref r = topo[i];
        int32_t l = f->nodes[r].kernel;
        if (canon[r] == r && l >= 0) lnodes[lstart[l] + lfill[l]++] = r;
    }
    for (int32_t gap = nlabs / 2; gap > 0; gap /= 2) /* shell sort of the labels */
        for (int32_t i = gap; i < nlabs; i++) {
            int32_t x = labs[i], j = i;
            while (j >= gap && lsort[labs[j - gap]] > lsort[x]) {
                labs[j] = labs[j - gap];
                j -= gap;
            }
            labs[j] = x;
        }
    for (int32_t i = 0, k = 0; i < nlabs; i++)
        for (int32_t j = lstart[labs[i]]; j < lstart[labs[i] + 1]; j++)
            kn[k++] = lnodes[j];
    int32_t first_kernel_node = m;
    for (int32_t i = 0; i < nk; i++)
        old_of[newidx[kn[i]] = m++] = kn[i];
    for (int32_t i = 0; i < f->noutputs; i++)
        old_of[newidx[f->outputs[i].node] = m++] = f->outputs[i].node;

    /* the new node array */
    for (int32_t i = 0; i < m; i++) {
        ir_node nd = f->nodes[old_of[i]];
        for (int k = 0; k < ir_ops[nd.op].arity; k++)
            nd.args[k] = newidx[canon[nd.args[k]]];
        nd.flags &= ~(uint32_t)IR_NODE_STORED;
        if (nd.kernel >= 0) {
            nd.kernel = rank[launch_of_grp[grp[nd.kernel]]];
        }
        nodes[i] = nd;
    }
    /* stored: read by another kernel or by an OUTPUT */
    for (int32_t i = 0; i < m; i++) {
        const ir_node *nd = &nodes[i];
        if (pass_is_leaf(nd)) continue;
        for (int k = 0; k < ir_ops[nd->op].arity; k++) {
            ir_node *an = &nodes[nd->args[k]];
            if (an->kernel < 0) continue;
            if (nd->op == IR_OP_OUTPUT || an->kernel != nd->kernel) an->flags |= IR_NODE_STORED;
        }
    }
    /* the part (old label) of each kernel node, for the parts of combined kernels */
    int32_t *part_label = ir_arena_calloc(A, (size_t)nk + 1, sizeof(int32_t));
    if (!part_label) return pass_fail(c, "out of memory");
    for (int32_t i = 0; i < nk; i++)
        part_label[i] = f->nodes[kn[i]].kernel;

    f->nodes = nodes;
    f->nnodes = m;
    f->cap_nodes = n + 1;
    for (int32_t i = 0; i < f->nparams; i++)
        f->params[i].node = newidx[f->params[i].node];
    for (int32_t i = 0; i < f->noutputs; i++)
        f->outputs[i].node = newidx[f->outputs[i].node];

    /* the partition */
    ir_partition *p = ir_arena_alloc(A, sizeof(*p));
    ir_kernel *ks = ir_arena_calloc(A, (size_t)nlaunch + 1, sizeof(ir_kernel));
    unsigned char *seen = ir_arena_calloc(A, (size_t)m + 1, 1);
    if (!p || !ks || !seen) return pass_fail(c, "out of memory");
    p->kernels = ks;
    p->nkernels = nlaunch;
    p->cap_kernels = nlaunch + 1;
    for (int32_t l = 0; l < nlaunch; l++) {
        ir_kernel *k = &ks[l];
        int32_t from = bucket_start[l], to = bucket_start[l + 1];
        int32_t nb = to - from;
        k->body = ir_arena_calloc(A, (size_t)nb + 1, sizeof(ir_ref));
        k->inputs = ir_arena_calloc(A, (size_t)nb * 3 + 1, sizeof(ir_ref));
        k->outputs = ir_arena_calloc(A, (size_t)nb + 1, sizeof(ir_ref));
        if (!k->body || !k->inputs || !k->outputs) return pass_fail(c, "out of memory");
        k->cap_body = nb + 1;
        k->cap_inputs = nb * 3 + 1;
        k->cap_outputs = nb + 1;
        int32_t nparts = 0;
        for (int32_t i = from; i < to; i++) {
            ir_ref r = first_kernel_node + i;
            k->body[k->nbody++] = r;
            if (nodes[r].flags & IR_NODE_STORED) k->outputs[k->noutputs++] = r;
            if (i == from || part_label[i] != part_label[i - 1]) nparts++;
            const ir_node *nd = &nodes[r];
            for (int a = 0; a < ir_ops[nd->op].arity; a++) {
                ir_ref q = nd->args[a];
                const ir_node *qn = &nodes[q];
                if (qn->op == IR_OP_CONST || qn->kernel == l || seen[q]) continue;
                seen[q] = 1;
                k->inputs[k->ninputs++] = q;
            }
        }
        for (int32_t i = 0; i < k->ninputs; i++)
            seen[k->inputs[i]] = 0;
        /* inputs in ascending order, for a stable text form */
        for (int32_t i = 1; i < k->ninputs; i++) {
            ir_ref v = k->inputs[i];
            int32_t j = i - 1;
            while (j >= 0 && k->inputs[j] > v) {
                k->inputs[j + 1] = k->inputs[j];
                j--;
            }
            k->inputs[j + 1] = v;
        }
        if (nparts <= 1) {
            describe_part(&(ir_func){.nodes = nodes}, k->body, 0, k->nbody, k);
            continue;
        }
        k->parts = ir_arena_calloc(A, (size_t)nparts, sizeof(int32_t));
        if (!k->parts) return pass_fail(c, "out of memory");
        k->cap_parts = nparts;
        for (int32_t i = from; i < to; i++)
            if (i == from || part_label[i] != part_label[i - 1]) k->parts[k->nparts++] = i - from;
        describe_part(&(ir_func){.nodes = nodes}, k->body, 0,
                      k->nparts > 1 ? k->parts[1] : k->nbody, k);
        k->kind = IR_KERNEL_COMBINED;
        k->reduce_axes = 0;
    }
    f->partition = p;
    return 0;
}
