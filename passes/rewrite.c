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
    if (n->op == IR_OP_INPUT || n->op == IR_OP_OUTPUT || (ir_ops[n->op].flags & IR_OPF_RANDOM))
        h = mix(h, (uint64_t)(int64_t)n->index);
    return h;
}

int pass_node_same(const ir_node *a, const ir_node *b) {
    if (a->op != b->op || a->dtype != b->dtype || a->axes != b->axes) return 0;
    if (!ir_shape_equal(&a->shape, &b->shape)) return 0;
    /* symbolic and literal dims compare equal only to their own kind: shape_equal does */
    for (int i = 0; i < 3; i++)
        if (a->args[i] != b->args[i]) return 0;
    /* an input's or output's position; rand's stream: two draws are two values */
    if (a->op == IR_OP_INPUT || a->op == IR_OP_OUTPUT || (ir_ops[a->op].flags & IR_OPF_RANDOM))
        return a->index == b->index;
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

/* What the steps of pass_partition_build share. Node arrays are indexed by the old refs
 * (n of them, the copy kernels' nodes included) unless said otherwise. */
typedef struct build {
    ir_func *f;
    pass_ctx *c;
    int32_t nlabels;        /* the labels the pass gave */
    int32_t nl;             /* with a label more per copy kernel */
    int32_t n;              /* nodes in the old numbering */
    int32_t *grp;           /* label -> its launch group (a label) */
    ir_ref *topo;           /* the live nodes, in topological order */
    int32_t ntopo;          /* how many */
    ir_ref *canon;          /* node -> the identical node of its kernel that stays */
    int32_t nlaunch;        /* launches */
    int32_t *launch_of_grp; /* launch group -> launch (dense, in order of first node) */
    int32_t *lkey;          /* launch -> topological position of its first node */
    int32_t *labkey;        /* label -> topological position of its first node */
    int32_t *lof;           /* label -> launch */
    int32_t *rank;          /* launch -> its place in dependency order */
    ir_ref *newidx;         /* old ref -> new ref (IR_NONE: dropped) */
    ir_ref *old_of;         /* new ref -> old ref */
    int32_t m;              /* new refs given so far; at the end, the new node count */
    int32_t *bucket_start;  /* launch rank -> its first kernel node, counted from the first */
    ir_ref *kn;             /* the kernel nodes (old refs) in their new order */
    int32_t nk;             /* how many */
    int32_t first_kernel;   /* the new ref of kn[0] */
    ir_node *nodes;         /* the new node array */
    int32_t *part_label;    /* kernel node (new order) -> its label: the part it is in */
} build;

/* Step 1: every result is written by a kernel. An OUTPUT of a leaf (a parameter or a
 * constant returned as is) reads a copy kernel instead: a cast to the leaf's own dtype,
 * labelled past the pass's labels. Sets nl and n. */
static int add_copy_kernels(build *b) {
    ir_func *f = b->f;
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
        copy.kernel = b->nlabels + nextra;
        ir_ref r = append_node(f, &copy);
        if (r == IR_NONE) return pass_fail(b->c, "out of memory");
        f->nodes[out].args[0] = r;
        nextra++;
    }
    b->nl = b->nlabels + nextra;
    b->n = f->nnodes;
    return 0;
}

/* Step 2: the launch group of each label (group's, or the label alone), and a check that
 * every kernel node has a label and every label a group in range: a pass that broke
 * either fails here with a message naming the node, instead of corrupting the arrays. */
static int check_labels(build *b, const int32_t *group) {
    const ir_func *f = b->f;
    int32_t nl = b->nl;
    b->grp = ir_arena_calloc(f->arena, (size_t)nl + 1, sizeof(int32_t));
    if (!b->grp) return pass_fail(b->c, "out of memory");
    for (int32_t l = 0; l < nl; l++)
        b->grp[l] = group && l < b->nlabels ? group[l] : l;
    for (ir_ref r = 0; r < b->n; r++) {
        const ir_node *nd = &f->nodes[r];
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT) continue;
        if (nd->kernel < 0 || nd->kernel >= nl)
            return pass_fail(b->c, "internal: %%%d (%s) has kernel label %d of %d", (int)r,
                             ir_ops[nd->op].name, (int)nd->kernel, (int)nl);
        if (b->grp[nd->kernel] < 0 || b->grp[nd->kernel] >= nl)
            return pass_fail(b->c, "internal: label %d has launch group %d", (int)nd->kernel,
                             (int)b->grp[nd->kernel]);
    }
    return 0;
}

/* Scratch of the depth-first walk of step 3. */
typedef struct walk {
    ir_ref *stack;
    unsigned char *state; /* 0 new, 1 open, 2 done */
    int32_t *argi;        /* the next operand to visit */
} walk;

/* Appends to topo, in post-order, the nodes reachable from root not yet visited. A read
 * out of range or a cycle (a pass wired the nodes wrongly) fails. */
static int visit_from(build *b, walk *w, ir_ref root) {
    const ir_func *f = b->f;
    int32_t sp = 0;
    w->stack[sp++] = root;
    w->state[root] = 1;
    w->argi[root] = 0;
    while (sp > 0) {
        ir_ref r = w->stack[sp - 1];
        const ir_node *nd = &f->nodes[r];
        if (w->argi[r] < ir_ops[nd->op].arity) {
            ir_ref a = nd->args[w->argi[r]++];
            if (a < 0 || a >= b->n)
                return pass_fail(b->c, "internal: %%%d reads %%%d", (int)r, (int)a);
            if (w->state[a] == 1) return pass_fail(b->c, "internal: a cycle through %%%d", (int)a);
            if (w->state[a] == 0) {
                w->state[a] = 1;
                w->argi[a] = 0;
                w->stack[sp++] = a;
            }
            continue;
        }
        w->state[r] = 2;
        sp--;
        b->topo[b->ntopo++] = r;
    }
    return 0;
}

/* Step 3: the live nodes in topological order, walked from the parameters (they all stay)
 * and then from the results. What no result needs is never reached, so it is dropped; the
 * clones that passes append out of order land in their place. */
static int order_nodes(build *b) {
    ir_arena *A = b->f->arena;
    const ir_func *f = b->f;
    int32_t n = b->n;
    b->topo = ir_arena_calloc(A, (size_t)n + 1, sizeof(ir_ref));
    walk w;
    w.stack = ir_arena_calloc(A, (size_t)n + 1, sizeof(ir_ref));
    w.state = ir_arena_calloc(A, (size_t)n + 1, 1);
    w.argi = ir_arena_calloc(A, (size_t)n + 1, sizeof(int32_t));
    if (!b->topo || !w.stack || !w.state || !w.argi) return pass_fail(b->c, "out of memory");
    b->ntopo = 0;
    for (int32_t i = 0; i < f->nparams; i++)
        if (!w.state[f->params[i].node] && visit_from(b, &w, f->params[i].node)) return -1;
    for (int32_t i = 0; i < f->noutputs; i++)
        if (!w.state[f->outputs[i].node] && visit_from(b, &w, f->outputs[i].node)) return -1;
    return 0;
}

/* Step 4: identical nodes of one kernel become one (canon), since kernels merged from
 * several may each hold a copy of a value (Rule 1 clones). Leaves and OUTPUT nodes lose
 * their label here: only kernel nodes keep one. */
static int merge_identical(build *b) {
    ir_func *f = b->f;
    b->canon = ir_arena_calloc(f->arena, (size_t)b->n + 1, sizeof(ir_ref));
    node_set set;
    if (!b->canon || set_init(f->arena, &set, b->ntopo)) return pass_fail(b->c, "out of memory");
    for (ir_ref r = 0; r < b->n; r++)
        b->canon[r] = r;
    for (int32_t i = 0; i < b->ntopo; i++) {
        ir_ref r = b->topo[i];
        ir_node *nd = &f->nodes[r];
        for (int k = 0; k < ir_ops[nd->op].arity; k++)
            nd->args[k] = b->canon[nd->args[k]];
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT) nd->kernel = -1;
        if (nd->op == IR_OP_INPUT || nd->op == IR_OP_OUTPUT) continue;
        b->canon[r] = set_intern(&set, f, r);
    }
    return 0;
}

/* Step 5: the launches, dense ids in the order of their first node, each keyed by that
 * node's topological position (labkey likewise per label, for the order of parts); then
 * their order by dependencies (rank), which fails on a cycle between launches. */
static int number_launches(build *b) {
    ir_arena *A = b->f->arena;
    const ir_func *f = b->f;
    int32_t nl = b->nl;
    b->launch_of_grp = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    b->lkey = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    b->labkey = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    if (!b->launch_of_grp || !b->lkey || !b->labkey) return pass_fail(b->c, "out of memory");
    for (int32_t l = 0; l < nl; l++) {
        b->launch_of_grp[l] = -1;
        b->labkey[l] = -1;
    }
    b->nlaunch = 0;
    for (int32_t i = 0; i < b->ntopo; i++) {
        ir_ref r = b->topo[i];
        const ir_node *nd = &f->nodes[r];
        if (b->canon[r] != r || nd->kernel < 0) continue;
        int32_t g = b->grp[nd->kernel];
        if (b->launch_of_grp[g] < 0) {
            b->launch_of_grp[g] = b->nlaunch;
            b->lkey[b->nlaunch] = i;
            b->nlaunch++;
        }
        if (b->labkey[nd->kernel] < 0) b->labkey[nd->kernel] = i;
    }
    b->lof = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    if (!b->lof) return pass_fail(b->c, "out of memory");
    for (int32_t l = 0; l < nl; l++)
        b->lof[l] = b->launch_of_grp[b->grp[l]];
    b->rank = order_launches(f, b->topo, b->ntopo, b->canon, b->lof, b->nlaunch, b->lkey, b->c);
    return b->rank ? 0 : -1;
}

/* Sorts a[0..n) ascending by key[a[i]] (shell sort). */
static void sort_by_key(int32_t *a, int32_t n, const int64_t *key) {
    for (int32_t gap = n / 2; gap > 0; gap /= 2)
        for (int32_t i = gap; i < n; i++) {
            int32_t x = a[i], j = i;
            while (j >= gap && key[a[j - gap]] > key[x]) {
                a[j] = a[j - gap];
                j -= gap;
            }
            a[j] = x;
        }
}

/* Step 6b: the kernel nodes in their new order, kn: by launch rank, then within a launch by
 * part (each label's first topological position), then topologically. Each label's nodes
 * are bucketed in topological order, then the labels sorted. Also bucket_start, where
 * each launch's nodes begin in kn. */
static int order_kernel_nodes(build *b) {
    ir_arena *A = b->f->arena;
    const ir_func *f = b->f;
    int32_t nl = b->nl;
    int32_t *lstart = ir_arena_calloc(A, (size_t)nl + 2, sizeof(int32_t));
    int32_t *lfill = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    int32_t *labs = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int32_t));
    int64_t *lsort = ir_arena_calloc(A, (size_t)nl + 1, sizeof(int64_t));
    if (!lstart || !lfill || !labs || !lsort) return pass_fail(b->c, "out of memory");
    for (int32_t i = 0; i < b->ntopo; i++) {
        ir_ref r = b->topo[i];
        if (b->canon[r] == r && f->nodes[r].kernel >= 0) lstart[f->nodes[r].kernel + 1]++;
    }
    int32_t nlabs = 0;
    for (int32_t l = 0; l < nl; l++) {
        if (lstart[l + 1] > 0) {
            labs[nlabs++] = l;
            lsort[l] = (int64_t)b->rank[b->lof[l]] * ((int64_t)b->ntopo + 1) + b->labkey[l];
            b->bucket_start[b->rank[b->lof[l]] + 1] += lstart[l + 1];
        }
        lstart[l + 1] += lstart[l];
    }
    b->nk = lstart[nl];
    for (int32_t l = 0; l < b->nlaunch; l++)
        b->bucket_start[l + 1] += b->bucket_start[l];
    ir_ref *lnodes = ir_arena_calloc(A, (size_t)b->nk + 1, sizeof(ir_ref));
    b->kn = ir_arena_calloc(A, (size_t)b->nk + 1, sizeof(ir_ref));
    if (!lnodes || !b->kn) return pass_fail(b->c, "out of memory");
    for (int32_t i = 0; i < b->ntopo; i++) {
        ir_ref r = b->topo[i];
        int32_t l = f->nodes[r].kernel;
        if (b->canon[r] == r && l >= 0) lnodes[lstart[l] + lfill[l]++] = r;
    }
    sort_by_key(labs, nlabs, lsort);
    for (int32_t i = 0, k = 0; i < nlabs; i++)
        for (int32_t j = lstart[labs[i]]; j < lstart[labs[i] + 1]; j++)
            b->kn[k++] = lnodes[j];
    return 0;
}

/* Step 6: the new numbering (newidx, old_of): the parameters, the constants, the kernel
 * nodes launch by launch, then the OUTPUT nodes, the order the printer and the code
 * generators expect. */
static int number_nodes(build *b) {
    ir_arena *A = b->f->arena;
    const ir_func *f = b->f;
    int32_t n = b->n;
    b->bucket_start = ir_arena_calloc(A, (size_t)b->nlaunch + 2, sizeof(int32_t));
    b->newidx = ir_arena_calloc(A, (size_t)n + 1, sizeof(ir_ref));
    b->nodes = ir_arena_calloc(A, (size_t)n + 1, sizeof(ir_node));
    b->old_of = ir_arena_calloc(A, (size_t)n + 1, sizeof(ir_ref));
    if (!b->bucket_start || !b->newidx || !b->nodes || !b->old_of)
        return pass_fail(b->c, "out of memory");
    for (ir_ref r = 0; r < n; r++)
        b->newidx[r] = IR_NONE;
    b->m = 0;
    for (int32_t i = 0; i < f->nparams; i++)
        b->old_of[b->newidx[f->params[i].node] = b->m++] = f->params[i].node;
    for (int32_t i = 0; i < b->ntopo; i++) {
        ir_ref r = b->topo[i];
        if (ir_op_is_inline_leaf(f->nodes[r].op) && b->canon[r] == r)
            b->old_of[b->newidx[r] = b->m++] = r;
    }
    if (order_kernel_nodes(b)) return -1;
    b->first_kernel = b->m;
    for (int32_t i = 0; i < b->nk; i++)
        b->old_of[b->newidx[b->kn[i]] = b->m++] = b->kn[i];
    for (int32_t i = 0; i < f->noutputs; i++)
        b->old_of[b->newidx[f->outputs[i].node] = b->m++] = f->outputs[i].node;
    return 0;
}

/* Step 7: the new node array replaces f's: operands renumbered (through canon), each
 * kernel node labelled with its launch's rank, IR_NODE_STORED on exactly the values
 * another kernel or an OUTPUT reads. part_label keeps each kernel node's old label, the
 * part of a combined kernel it belongs to. */
static int rewrite_nodes(build *b) {
    ir_func *f = b->f;
    ir_node *nodes = b->nodes;
    for (int32_t i = 0; i < b->m; i++) {
        ir_node nd = f->nodes[b->old_of[i]];
        for (int k = 0; k < ir_ops[nd.op].arity; k++)
            nd.args[k] = b->newidx[b->canon[nd.args[k]]];
        nd.flags &= ~(uint32_t)IR_NODE_STORED;
        if (nd.kernel >= 0) {
            nd.kernel = b->rank[b->launch_of_grp[b->grp[nd.kernel]]];
        }
        nodes[i] = nd;
    }
    for (int32_t i = 0; i < b->m; i++) {
        const ir_node *nd = &nodes[i];
        if (pass_is_leaf(nd)) continue;
        for (int k = 0; k < ir_ops[nd->op].arity; k++) {
            ir_node *an = &nodes[nd->args[k]];
            if (an->kernel < 0) continue;
            if (nd->op == IR_OP_OUTPUT || an->kernel != nd->kernel) an->flags |= IR_NODE_STORED;
        }
    }
    b->part_label = ir_arena_calloc(f->arena, (size_t)b->nk + 1, sizeof(int32_t));
    if (!b->part_label) return pass_fail(b->c, "out of memory");
    for (int32_t i = 0; i < b->nk; i++)
        b->part_label[i] = f->nodes[b->kn[i]].kernel;

    f->nodes = nodes;
    f->nnodes = b->m;
    f->cap_nodes = b->n + 1;
    for (int32_t i = 0; i < f->nparams; i++)
        f->params[i].node = b->newidx[f->params[i].node];
    for (int32_t i = 0; i < f->noutputs; i++)
        f->outputs[i].node = b->newidx[f->outputs[i].node];
    return 0;
}

/* Sorts refs a[0..n) ascending (insertion sort: a kernel has few inputs). */
static void sort_refs(ir_ref *a, int32_t n) {
    for (int32_t i = 1; i < n; i++) {
        ir_ref v = a[i];
        int32_t j = i - 1;
        while (j >= 0 && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

/* Step 8a: kernel l's body, outputs (its stored nodes) and inputs (the non-constant values
 * it reads from outside, once each, in ascending order for a stable text form); seen is
 * zero on entry and on return. Returns the number of parts, or -1. */
static int32_t fill_body(build *b, ir_kernel *k, int32_t l, unsigned char *seen) {
    const ir_node *nodes = b->nodes;
    int32_t from = b->bucket_start[l], to = b->bucket_start[l + 1];
    int32_t nb = to - from;
    k->body = ir_arena_calloc(b->f->arena, (size_t)nb + 1, sizeof(ir_ref));
    k->inputs = ir_arena_calloc(b->f->arena, (size_t)nb * 3 + 1, sizeof(ir_ref));
    k->outputs = ir_arena_calloc(b->f->arena, (size_t)nb + 1, sizeof(ir_ref));
    if (!k->body || !k->inputs || !k->outputs) return pass_fail(b->c, "out of memory");
    k->cap_body = nb + 1;
    k->cap_inputs = nb * 3 + 1;
    k->cap_outputs = nb + 1;
    int32_t nparts = 0;
    for (int32_t i = from; i < to; i++) {
        ir_ref r = b->first_kernel + i;
        k->body[k->nbody++] = r;
        if (nodes[r].flags & IR_NODE_STORED) k->outputs[k->noutputs++] = r;
        if (i == from || b->part_label[i] != b->part_label[i - 1]) nparts++;
        const ir_node *nd = &nodes[r];
        for (int a = 0; a < ir_ops[nd->op].arity; a++) {
            ir_ref q = nd->args[a];
            const ir_node *qn = &nodes[q];
            if (ir_op_is_inline_leaf(qn->op) || qn->kernel == l || seen[q]) continue;
            seen[q] = 1;
            k->inputs[k->ninputs++] = q;
        }
    }
    for (int32_t i = 0; i < k->ninputs; i++)
        seen[k->inputs[i]] = 0;
    sort_refs(k->inputs, k->ninputs);
    return nparts;
}

/* Step 8b: kernel l's kind, domain and reduce axes. A kernel of several parts is COMBINED,
 * with the start of each part in its body and the domain of its first part. */
static int describe_kernel(build *b, ir_kernel *k, int32_t l, int32_t nparts) {
    const ir_func nf = {.nodes = b->nodes};
    if (nparts <= 1) {
        describe_part(&nf, k->body, 0, k->nbody, k);
        return 0;
    }
    int32_t from = b->bucket_start[l], to = b->bucket_start[l + 1];
    k->parts = ir_arena_calloc(b->f->arena, (size_t)nparts, sizeof(int32_t));
    if (!k->parts) return pass_fail(b->c, "out of memory");
    k->cap_parts = nparts;
    for (int32_t i = from; i < to; i++)
        if (i == from || b->part_label[i] != b->part_label[i - 1]) k->parts[k->nparts++] = i - from;
    describe_part(&nf, k->body, 0, k->nparts > 1 ? k->parts[1] : k->nbody, k);
    k->kind = IR_KERNEL_COMBINED;
    k->reduce_axes = 0;
    return 0;
}

/* Step 8: the partition, a kernel per launch in rank order. */
static int fill_partition(build *b) {
    ir_arena *A = b->f->arena;
    ir_partition *p = ir_arena_alloc(A, sizeof(*p));
    ir_kernel *ks = ir_arena_calloc(A, (size_t)b->nlaunch + 1, sizeof(ir_kernel));
    unsigned char *seen = ir_arena_calloc(A, (size_t)b->m + 1, 1);
    if (!p || !ks || !seen) return pass_fail(b->c, "out of memory");
    p->kernels = ks;
    p->nkernels = b->nlaunch;
    p->cap_kernels = b->nlaunch + 1;
    for (int32_t l = 0; l < b->nlaunch; l++) {
        int32_t nparts = fill_body(b, &ks[l], l, seen);
        if (nparts < 0 || describe_kernel(b, &ks[l], l, nparts)) return -1;
    }
    b->f->partition = p;
    return 0;
}

int pass_partition_build(ir_func *f, int32_t nlabels, const int32_t *group, pass_ctx *c) {
    build b = {.f = f, .c = c, .nlabels = nlabels};
    if (add_copy_kernels(&b) || check_labels(&b, group)) return -1;
    if (order_nodes(&b) || merge_identical(&b)) return -1;
    if (number_launches(&b) || number_nodes(&b)) return -1;
    if (rewrite_nodes(&b) || fill_partition(&b)) return -1;
    return 0;
}
