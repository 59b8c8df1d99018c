/* passes/kgraph.c: the kernel graph the fusion passes merge kernels on.
 *
 * A unit is a set of labels (kernels) merged so far, by union-find; an edge A -> B means a
 * node of B reads a node of A. A merge of two units is legal when
 *   1. their signatures agree (one launch can iterate both):
 *        pointwise(S)     + pointwise(S)     -> pointwise(S)
 *        reduction(D, A)  + reduction(D, A)  -> reduction(D, A)   (same shape, same axes)
 *        reduction(D, A)  + pointwise(S)     -> reduction(D, A)   when S is D (prologue,
 *                           epilogue or side output per element) or S is reduce(D, A)
 *                           (epilogue per reduced row, column or scalar);
 *   2. it makes no cycle: no path from one to the other through a third unit;
 *   3. for a full reduction (one result for the whole domain, no block owns all of it):
 *      no node that depends on one of the kernel's own reductions is per element (only
 *      scalar epilogues), and no reduction reads another one's result.
 *   4. the merged unit holds at most PASS_MAX_KERNEL_REDUCTIONS reductions, in at most
 *      PASS_MAX_KERNEL_LEVELS levels (rewrite.h): counted over the nodes of both when one
 *      reads the other, the larger of the two when neither does (siblings).
 * Row and column reductions may hold several reductions that depend on each other and
 * per-element epilogues (softmax, layernorm): one block owns each reduced row or column,
 * and goes over it as often as the chain needs, reading it from memory once.
 *
 * The graph keeps a topological order of its units up to date as they merge (Pearce and
 * Kelly's dynamic topological sort, with a merge as the edge that ties two units): a path
 * from u to v can only pass units ranked between them, so the search for one stays within
 * that window, and a merge reorders only the units inside it. A budget bounds the total
 * work still; when it is spent every further merge is refused (the partition stays valid,
 * only less fused), so no function can make fusion quadratic.
 */
#include "passes/rewrite.h"

#include <string.h>

#ifndef KG_BUDGET /* -DKG_BUDGET=... to test the fallback */
#define KG_BUDGET (INT64_C(50) * 1000 * 1000)
#endif

typedef struct vec {
    int32_t *a;
    int32_t n, cap;
} vec;

struct pass_kgraph {
    ir_func *f;
    int32_t n;        /* labels */
    int32_t *parent;  /* union-find */
    pass_ksig *sig;   /* of each root */
    vec *succ, *pred; /* of each root: labels (resolve with find) */
    vec *nodes;       /* of each root: node refs */
    int32_t *nreds;   /* of each root: its reductions */
    int32_t *levels;  /* of each root: its levels of reductions */
    int32_t *lvl;     /* per node: its level while the levels of a union are counted */
    vec scratch;      /* the nodes of that union */
    int32_t *trank;   /* topological rank of each label when the graph was built */
    int32_t *ord;     /* of each root: a topological order kept up to date */
    vec fwd, bwd;     /* the units a path check visited, for the reordering */
    int32_t *by_rank; /* labels in that order */
    int32_t *mark;    /* DFS stamps, per label */
    int32_t stamp;
    int32_t *dmark; /* de-duplication stamps, per label */
    int32_t dstamp;
    int32_t *stack;
    int32_t *nmark; /* per node: stamp of the unit being checked */
    int32_t nstamp;
    unsigned char *dep;
    int64_t budget;
    int32_t *part; /* after kgraph_combine began: each label's kernel before combining */
    pass_ksig *part_sig;
    pass_ksig *out_sig; /* after relabel */
};

static int vec_push(ir_arena *a, vec *v, int32_t x) {
    if (v->n >= v->cap) {
        int32_t *p = ir_arena_grow(a, v->a, sizeof(int32_t), &v->cap, v->n + 1);
        if (!p) return -1;
        v->a = p;
    }
    v->a[v->n++] = x;
    return 0;
}

static int vec_append(ir_arena *a, vec *dst, const vec *src) {
    for (int32_t i = 0; i < src->n; i++)
        if (vec_push(a, dst, src->a[i])) return -1;
    return 0;
}

int32_t pass_kgraph_find(pass_kgraph *g, int32_t u) {
    int32_t r = u;
    while (g->parent[r] != r)
        r = g->parent[r];
    while (g->parent[u] != r) {
        int32_t next = g->parent[u];
        g->parent[u] = r;
        u = next;
    }
    return r;
}

/* Sorts a[0..n) ascending, by key[a[i]] when key is set (shell sort). */
static void sort_ints(int32_t *a, int32_t n, const int32_t *key) {
    for (int32_t gap = n / 2; gap > 0; gap /= 2)
        for (int32_t i = gap; i < n; i++) {
            int32_t x = a[i], kx = key ? key[x] : x, j = i;
            while (j >= gap && (key ? key[a[j - gap]] : a[j - gap]) > kx) {
                a[j] = a[j - gap];
                j -= gap;
            }
            a[j] = x;
        }
}

/* Sorts and de-duplicates a label list after resolving each label to its unit. */
static void vec_normalize(pass_kgraph *g, vec *v, int32_t self) {
    int32_t m = 0;
    for (int32_t i = 0; i < v->n; i++) {
        int32_t x = pass_kgraph_find(g, v->a[i]);
        if (x != self) v->a[m++] = x;
    }
    v->n = m;
    sort_ints(v->a, v->n, NULL);
    m = 0;
    for (int32_t i = 0; i < v->n; i++)
        if (m == 0 || v->a[m - 1] != v->a[i]) v->a[m++] = v->a[i];
    v->n = m;
}

/* Sets g->lvl[r], node r's level of reductions within the nodes marked with `stamp` in
 * g->nmark (lvl holds theirs already: refs are in topological order): the deepest of its
 * marked arguments, plus one for a reduction; marks r. */
static int32_t node_level(pass_kgraph *g, ir_ref r, int32_t stamp) {
    const ir_node *nd = &g->f->nodes[r];
    int32_t m = 0;
    for (int k = 0; k < ir_ops[nd->op].arity; k++)
        if (g->nmark[nd->args[k]] == stamp && g->lvl[nd->args[k]] > m) m = g->lvl[nd->args[k]];
    g->nmark[r] = stamp;
    return g->lvl[r] = m + (ir_ops[nd->op].cls == IR_CLASS_REDUCE);
}

/* The levels of reductions in each label (its nodes marked with stamp l + 1, which no later
 * stamp reaches: nstamp starts past them). */
static void count_levels(pass_kgraph *g, int32_t nlabels) {
    const ir_func *f = g->f;
    for (ir_ref r = 0; r < f->nnodes; r++) {
        const ir_node *nd = &f->nodes[r];
        int32_t l = nd->kernel;
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT || l < 0 || l >= nlabels) continue;
        int32_t lv = node_level(g, r, l + 1);
        if (lv > g->levels[l]) g->levels[l] = lv;
    }
    g->nstamp = nlabels + 1;
}

pass_kgraph *pass_kgraph_new(ir_func *f, int32_t nlabels, const pass_ksig *sig) {
    ir_arena *A = f->arena;
    pass_kgraph *g = ir_arena_alloc(A, sizeof(*g));
    if (!g) return NULL;
    size_t n1 = (size_t)nlabels + 1;
    g->f = f;
    g->n = nlabels;
    g->parent = ir_arena_calloc(A, n1, sizeof(int32_t));
    g->sig = ir_arena_calloc(A, n1, sizeof(pass_ksig));
    g->succ = ir_arena_calloc(A, n1, sizeof(vec));
    g->pred = ir_arena_calloc(A, n1, sizeof(vec));
    g->nodes = ir_arena_calloc(A, n1, sizeof(vec));
    g->nreds = ir_arena_calloc(A, n1, sizeof(int32_t));
    g->levels = ir_arena_calloc(A, n1, sizeof(int32_t));
    g->lvl = ir_arena_calloc(A, (size_t)f->nnodes + 1, sizeof(int32_t));
    g->trank = ir_arena_calloc(A, n1, sizeof(int32_t));
    g->ord = ir_arena_calloc(A, n1, sizeof(int32_t));
    g->by_rank = ir_arena_calloc(A, n1, sizeof(int32_t));
    g->mark = ir_arena_calloc(A, n1, sizeof(int32_t));
    g->dmark = ir_arena_calloc(A, n1, sizeof(int32_t));
    g->stack = ir_arena_calloc(A, n1, sizeof(int32_t));
    g->nmark = ir_arena_calloc(A, (size_t)f->nnodes + 1, sizeof(int32_t));
    g->dep = ir_arena_calloc(A, (size_t)f->nnodes + 1, 1);
    if (!g->parent || !g->sig || !g->succ || !g->pred || !g->nodes || !g->nreds || !g->levels ||
        !g->lvl || !g->trank || !g->ord || !g->by_rank || !g->mark || !g->dmark || !g->stack ||
        !g->nmark || !g->dep)
        return NULL;
    g->budget = KG_BUDGET;
    for (int32_t l = 0; l < nlabels; l++) {
        g->parent[l] = l;
        g->sig[l] = sig[l];
    }
    for (ir_ref r = 0; r < f->nnodes; r++) {
        const ir_node *nd = &f->nodes[r];
        int32_t l = nd->kernel;
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT || l < 0 || l >= nlabels) continue;
        if (vec_push(A, &g->nodes[l], r)) return NULL;
        if (ir_ops[nd->op].cls == IR_CLASS_REDUCE) g->nreds[l]++;
        for (int k = 0; k < ir_ops[nd->op].arity; k++) {
            const ir_node *an = &f->nodes[nd->args[k]];
            int32_t la = an->kernel;
            if (pass_is_leaf(an) || la < 0 || la >= nlabels || la == l) continue;
            if (vec_push(A, &g->succ[la], l) || vec_push(A, &g->pred[l], la)) return NULL;
        }
    }
    for (int32_t l = 0; l < nlabels; l++) {
        vec_normalize(g, &g->succ[l], l);
        vec_normalize(g, &g->pred[l], l);
    }
    count_levels(g, nlabels);
    /* a topological order of the labels (Kahn's algorithm), for iteration */
    int32_t *indeg = ir_arena_calloc(A, n1, sizeof(int32_t));
    int32_t *queue = ir_arena_calloc(A, n1, sizeof(int32_t));
    if (!indeg || !queue) return NULL;
    for (int32_t l = 0; l < nlabels; l++)
        indeg[l] = g->pred[l].n;
    int32_t head = 0, tail = 0;
    for (int32_t l = 0; l < nlabels; l++)
        if (indeg[l] == 0) queue[tail++] = l;
    while (head < tail) {
        int32_t l = queue[head++];
        g->trank[l] = g->ord[l] = head - 1;
        g->by_rank[head - 1] = l;
        for (int32_t i = 0; i < g->succ[l].n; i++)
            if (--indeg[g->succ[l].a[i]] == 0) queue[tail++] = g->succ[l].a[i];
    }
    if (tail != nlabels) return NULL; /* a cycle: the caller's labels are broken */
    return g;
}

pass_ksig *pass_sigs_of_partition(ir_func *f) {
    const ir_partition *p = f->partition;
    int32_t nk = p ? p->nkernels : 0;
    pass_ksig *s = ir_arena_calloc(f->arena, (size_t)nk + 1, sizeof(pass_ksig));
    if (!s) return NULL;
    for (int32_t k = 0; k < nk; k++) {
        const ir_kernel *kn = &p->kernels[k];
        s[k].red = kn->kind == IR_KERNEL_ROW_REDUCTION || kn->kind == IR_KERNEL_COLUMN_REDUCTION ||
                   kn->kind == IR_KERNEL_FULL_REDUCTION;
        s[k].dom = kn->domain;
        s[k].axes = kn->reduce_axes;
        s[k].combined = kn->kind == IR_KERNEL_COMBINED;
    }
    return s;
}

/* ---- legality ---------------------------------------------------------------------------- */

/* The signature of a and b merged into one launch; 0 when they cannot be. */
static int sig_merge(const pass_ksig *a, const pass_ksig *b, pass_ksig *out) {
    if (a->combined || b->combined) return 0;
    if (!a->red && !b->red) {
        if (!ir_shape_equal(&a->dom, &b->dom)) return 0;
        *out = *a;
        return 1;
    }
    if (a->red && b->red) {
        if (a->axes != b->axes || !ir_shape_equal(&a->dom, &b->dom)) return 0;
        *out = *a;
        return 1;
    }
    const pass_ksig *r = a->red ? a : b, *p = a->red ? b : a;
    ir_shape outer = ir_shape_reduce(&r->dom, r->axes);
    if (!ir_shape_equal(&p->dom, &r->dom) && !ir_shape_equal(&p->dom, &outer)) return 0;
    *out = *r;
    return 1;
}

/* Resolves the labels of a root's edge list to units in place, dropping the root itself
 * and repeats, so lists of merged units do not keep growing with stale entries. */
static void vec_compact(pass_kgraph *g, vec *v, int32_t self) {
    int32_t stamp = ++g->dstamp, m = 0;
    for (int32_t i = 0; i < v->n; i++) {
        int32_t y = pass_kgraph_find(g, v->a[i]);
        if (y == self || g->dmark[y] == stamp) continue;
        g->dmark[y] = stamp;
        v->a[m++] = y;
    }
    v->n = m;
}

/* Is there a path from unit u to unit v? With skip_direct, the edge u -> v itself does not
 * count. Only units ranked before v can lie on such a path; the units visited (all those
 * reachable from u and ranked before v, when the answer is no) are left in g->fwd. A spent
 * budget answers yes. */
static int reach(pass_kgraph *g, int32_t u, int32_t v, int skip_direct) {
    g->fwd.n = 0;
    if (g->budget <= 0) return 1;
    if (g->ord[u] > g->ord[v]) return 0;
    ir_arena *A = g->f->arena;
    int32_t stamp = ++g->stamp, limit = g->ord[v];
    int32_t sp = 0;
    g->mark[u] = stamp;
    g->stack[sp++] = u;
    while (sp > 0) {
        int32_t x = g->stack[--sp];
        vec *xs = &g->succ[x];
        g->budget -= xs->n + 1;
        if (g->budget <= 0) return 1;
        vec_compact(g, xs, x);
        for (int32_t i = 0; i < xs->n; i++) {
            int32_t y = xs->a[i];
            if (y == v) {
                if (x == u && skip_direct) continue;
                return 1;
            }
            if (y == x || g->mark[y] == stamp || g->ord[y] > limit) continue;
            g->mark[y] = stamp;
            g->stack[sp++] = y;
            if (vec_push(A, &g->fwd, y)) return 1;
        }
    }
    return 0;
}

/* The units that reach v, ranked after u (excluding u), into g->bwd. */
static int reach_back(pass_kgraph *g, int32_t u, int32_t v) {
    g->bwd.n = 0;
    ir_arena *A = g->f->arena;
    int32_t stamp = ++g->stamp, limit = g->ord[u];
    int32_t sp = 0;
    g->mark[v] = stamp;
    g->stack[sp++] = v;
    while (sp > 0) {
        int32_t x = g->stack[--sp];
        vec *xp = &g->pred[x];
        g->budget -= xp->n + 1;
        vec_compact(g, xp, x);
        for (int32_t i = 0; i < xp->n; i++) {
            int32_t y = xp->a[i];
            if (y == u || y == x || g->mark[y] == stamp || g->ord[y] < limit) continue;
            g->mark[y] = stamp;
            g->stack[sp++] = y;
            if (vec_push(A, &g->bwd, y)) return -1;
        }
    }
    return 0;
}

/* One node of a full-reduction kernel in topological order: 0 when it breaks rule 3 (it
 * depends on a reduction of the kernel and is per element, or is a reduction itself). */
static int full_step(pass_kgraph *g, ir_ref r, int32_t stamp) {
    const ir_node *nd = &g->f->nodes[r];
    int d = 0;
    for (int k = 0; k < ir_ops[nd->op].arity; k++) {
        ir_ref a = nd->args[k];
        if (g->nmark[a] == stamp && (g->dep[a] || pass_is_reduce(&g->f->nodes[a]))) d = 1;
    }
    g->dep[r] = (unsigned char)d;
    return !(d && (pass_is_reduce(nd) || !pass_shape_is_scalar(&nd->shape)));
}

/* Rule 3 of the header, for the units u and v merged into the full reduction s. */
static int full_reduction_ok(pass_kgraph *g, int32_t u, int32_t v, const pass_ksig *s) {
    ir_shape outer = ir_shape_reduce(&s->dom, s->axes);
    if (!s->red || !pass_shape_is_scalar(&outer) || pass_shape_is_scalar(&s->dom)) return 1;
    int32_t stamp = ++g->nstamp;
    vec *lists[2] = {&g->nodes[u], &g->nodes[v]};
    int32_t total = lists[0]->n + lists[1]->n;
    ir_ref lo = INT32_MAX, hi = -1;
    for (int w = 0; w < 2; w++)
        for (int32_t i = 0; i < lists[w]->n; i++) {
            ir_ref r = lists[w]->a[i];
            g->nmark[r] = stamp;
            g->dep[r] = 0;
            if (r < lo) lo = r;
            if (r > hi) hi = r;
        }
    g->budget -= total;
    /* node refs are in topological order; a unit's list is not sorted: walk the range they
     * span, or a sorted copy when the range is much longer than the lists */
    if ((int64_t)hi - lo <= 4 * (int64_t)total + 1024) {
        for (ir_ref r = lo; r <= hi; r++)
            if (g->nmark[r] == stamp && !full_step(g, r, stamp)) return 0;
        return 1;
    }
    ir_ref *rs = ir_arena_calloc(g->f->arena, (size_t)total + 1, sizeof(ir_ref));
    if (!rs) return 0;
    int32_t m = 0;
    for (int w = 0; w < 2; w++)
        for (int32_t i = 0; i < lists[w]->n; i++)
            rs[m++] = lists[w]->a[i];
    sort_ints(rs, m, NULL);
    for (int32_t i = 0; i < m; i++)
        if (!full_step(g, rs[i], stamp)) return 0;
    return 1;
}

/* Appends the smaller list to the larger and leaves the result in *dst. */
static int vec_join(ir_arena *a, vec *dst, vec *src) {
    if (dst->n < src->n) {
        vec t = *dst;
        *dst = *src;
        *src = t;
    }
    return vec_append(a, dst, src);
}

/* Unites u and v (roots, ord[u] < ord[v], no path between them but a direct edge; the
 * units reachable from u ranked before v in g->fwd) under one root with signature s, and
 * restores the topological order: the units that reach v from after u, then the merged
 * unit, then those reachable from u, on the ranks they held. */
static int unite(pass_kgraph *g, int32_t u, int32_t v, const pass_ksig *s) {
    ir_arena *A = g->f->arena;
    if (reach_back(g, u, v)) return -1;
    int32_t nb = g->bwd.n, nf = g->fwd.n;
    int32_t *ranks = ir_arena_calloc(A, (size_t)(nb + nf) + 2, sizeof(int32_t));
    if (!ranks) return -1;
    int32_t nr = 0;
    for (int32_t i = 0; i < nb; i++)
        ranks[nr++] = g->ord[g->bwd.a[i]];
    for (int32_t i = 0; i < nf; i++)
        ranks[nr++] = g->ord[g->fwd.a[i]];
    ranks[nr++] = g->ord[u];
    ranks[nr++] = g->ord[v];
    sort_ints(ranks, nr, NULL);
    sort_ints(g->bwd.a, nb, g->ord);
    sort_ints(g->fwd.a, nf, g->ord);
    /* the root keeps the longer node list */
    int32_t root = u, other = v;
    if (g->nodes[u].n < g->nodes[v].n) {
        root = v;
        other = u;
    }
    int32_t k = 0;
    for (int32_t i = 0; i < nb; i++)
        g->ord[g->bwd.a[i]] = ranks[k++];
    g->ord[root] = ranks[k++];
    for (int32_t i = 0; i < nf; i++)
        g->ord[g->fwd.a[i]] = ranks[k++];
    g->parent[other] = root;
    g->sig[root] = *s;
    g->nreds[root] += g->nreds[other];
    if (g->levels[other] > g->levels[root]) g->levels[root] = g->levels[other];
    if (vec_join(A, &g->nodes[root], &g->nodes[other]) ||
        vec_join(A, &g->succ[root], &g->succ[other]) ||
        vec_join(A, &g->pred[root], &g->pred[other]))
        return -1;
    return 0;
}

/* Whether u and v (roots) may share a launch as far as the graph goes: no path from one to
 * the other but a direct edge (`independent`: none at all). Orders them so that ord[u] <
 * ord[v] and leaves the forward search in g->fwd for unite. */
static int no_cycle(pass_kgraph *g, int32_t *u, int32_t *v, int independent) {
    if (g->ord[*u] > g->ord[*v]) {
        int32_t t = *u;
        *u = *v;
        *v = t;
    }
    return !reach(g, *u, *v, !independent);
}

/* Whether unit u reads unit v or v reads u (roots; an edge list's labels resolved here, the
 * lists' length charged to the budget: a unit of many consumers is asked often). */
static int adjacent(pass_kgraph *g, int32_t u, int32_t v) {
    g->budget -= g->succ[u].n + g->pred[u].n;
    for (int32_t i = 0; i < g->succ[u].n; i++)
        if (pass_kgraph_find(g, g->succ[u].a[i]) == v) return 1;
    for (int32_t i = 0; i < g->pred[u].n; i++)
        if (pass_kgraph_find(g, g->pred[u].a[i]) == v) return 1;
    return 0;
}

/* The levels of reductions of the nodes of u and v together, counted over their nodes in
 * topological order (refs are); the count is charged to the budget. */
static int32_t count_union_levels(pass_kgraph *g, int32_t u, int32_t v) {
    const ir_func *f = g->f;
    g->scratch.n = 0;
    if (vec_append(f->arena, &g->scratch, &g->nodes[u]) ||
        vec_append(f->arena, &g->scratch, &g->nodes[v]))
        return PASS_MAX_KERNEL_LEVELS + 1; /* out of memory: no merge */
    sort_ints(g->scratch.a, g->scratch.n, NULL);
    int32_t stamp = ++g->nstamp, most = 0;
    g->budget -= g->scratch.n;
    for (int32_t i = 0; i < g->scratch.n; i++) {
        int32_t lv = node_level(g, g->scratch.a[i], stamp);
        if (lv > most) most = lv;
    }
    return most;
}

/* The levels of u and v merged (rule 4): the larger when neither reads the other (a merge
 * leaves no other path between them), else counted over their nodes. */
static int32_t merged_levels(pass_kgraph *g, int32_t u, int32_t v) {
    int32_t a = g->levels[u], b = g->levels[v];
    if (a && b && adjacent(g, u, v)) return count_union_levels(g, u, v);
    return a > b ? a : b;
}

int pass_kgraph_try_merge(pass_kgraph *g, int32_t u, int32_t v) {
    u = pass_kgraph_find(g, u);
    v = pass_kgraph_find(g, v);
    if (u == v || g->budget <= 0) return 0;
    pass_ksig s;
    if (!sig_merge(&g->sig[u], &g->sig[v], &s)) return 0;
    if (g->nreds[u] + g->nreds[v] > PASS_MAX_KERNEL_REDUCTIONS) return 0;
    int32_t levels = merged_levels(g, u, v);
    if (levels > PASS_MAX_KERNEL_LEVELS) return 0;
    if (!no_cycle(g, &u, &v, 0)) return 0;
    if (!full_reduction_ok(g, u, v, &s)) return 0; /* leaves g->fwd for unite */
    if (unite(g, u, v, &s)) return 0;
    g->levels[pass_kgraph_find(g, u)] = levels;
    return 1;
}

/* The most rounds pass_kgraph_merge_edges makes. A round visits the units in topological
 * order and tries each one's producers; another round merges only what a merge made wanted
 * or legal after the round had passed it. In every case measured, that was a pointwise
 * producer over the reduced shape (a per-row value, such as a cast of an [R, 1] parameter)
 * of a pointwise kernel that became part of a reduction kernel only after its own producers
 * were tried. Of the 4460 calls on the functions of examples/, tests/programs/,
 * bench/programs/, tests/fuzz/corpus/ and 1500 random programs
 * (tests/cli_py/test_random_programs.py, seeds 20261122, 1 and 2; each round of
 * pass_fuse_rounds counted), 2237 merged nothing, 2212 merged in the first round only, 11
 * (all in fuse_reduction) in the second as well, and none in a third. The bound is there
 * because KG_BUDGET charges the searches of each merge, not a round's visit of every unit:
 * unbounded, a function whose rounds each merge one pair would make fusion quadratic. A
 * merge the bound cuts off only leaves the partition less fused; eight rounds are four
 * times the two that any call needed. */
#define MERGE_EDGES_ROUNDS_MAX 8

int pass_kgraph_merge_edges(pass_kgraph *g, int (*want)(const pass_ksig *p, const pass_ksig *c)) {
    ir_arena *A = g->f->arena;
    vec preds = {0};
    int total = 0;
    for (int round = 0; round < MERGE_EDGES_ROUNDS_MAX; round++) {
        int merged = 0;
        for (int32_t i = 0; i < g->n && g->budget > 0; i++) {
            int32_t c = g->by_rank[i];
            if (pass_kgraph_find(g, c) != c) continue; /* a unit once, at its root */
            /* the producers of c now; c grows as they merge */
            vec_normalize(g, &g->pred[c], c);
            preds.n = 0;
            if (vec_append(A, &preds, &g->pred[c])) return total;
            for (int32_t j = 0; j < preds.n; j++) {
                int32_t p = pass_kgraph_find(g, preds.a[j]);
                c = pass_kgraph_find(g, c);
                if (p == c || !want(&g->sig[p], &g->sig[c])) continue;
                if (pass_kgraph_try_merge(g, p, c)) merged++;
            }
        }
        total += merged;
        if (!merged || g->budget <= 0) break;
    }
    return total;
}

/* ---- pairs over a common domain ------------------------------------------------------ */

#define PAIR_TRIES 16 /* groups a kernel tries to join, nearest first */

static uint64_t shape_key(const ir_shape *s) {
    uint64_t h = 1469598103934665603u ^ (uint64_t)s->rank;
    for (int32_t i = 0; i < s->rank; i++) {
        h = (h ^ (uint64_t)(int64_t)s->dims[i].sym) * 1099511628211u;
        h = (h ^ (uint64_t)(s->dims[i].sym >= 0 ? 0 : s->dims[i].size)) * 1099511628211u;
    }
    return h;
}

typedef struct pair_entry {
    uint64_t key;
    int32_t rank, label;
} pair_entry;

static int entry_less(const pair_entry *a, const pair_entry *b) {
    if (a->key != b->key) return a->key < b->key;
    if (a->rank != b->rank) return a->rank < b->rank;
    return a->label < b->label;
}

static void sort_entries(pair_entry *e, int32_t n) {
    for (int32_t gap = n / 2; gap > 0; gap /= 2)
        for (int32_t i = gap; i < n; i++) {
            pair_entry x = e[i];
            int32_t j = i;
            while (j >= gap && entry_less(&x, &e[j - gap])) {
                e[j] = e[j - gap];
                j -= gap;
            }
            e[j] = x;
        }
}

/* Within each run of entries with one key (in rank order), each unit tries to join one of
 * the groups formed so far (the nearest PAIR_TRIES), else starts a group. */
static int merge_runs(pass_kgraph *g, pair_entry *e, int32_t ne,
                      int (*want)(const pass_ksig *a, const pass_ksig *b)) {
    ir_arena *A = g->f->arena;
    int32_t *groups = ir_arena_calloc(A, (size_t)ne + 1, sizeof(int32_t));
    if (!groups) return 0;
    int merged = 0;
    for (int32_t lo = 0; lo < ne && g->budget > 0;) {
        int32_t hi = lo;
        while (hi < ne && e[hi].key == e[lo].key)
            hi++;
        int32_t ng = 0;
        for (int32_t i = lo; i < hi && g->budget > 0; i++) {
            int32_t u = pass_kgraph_find(g, e[i].label);
            int joined = 0;
            for (int32_t k = ng - 1; k >= 0 && k >= ng - PAIR_TRIES && g->budget > 0; k--) {
                int32_t v = pass_kgraph_find(g, groups[k]);
                g->budget--;
                if (v == u) {
                    joined = 1;
                    break;
                }
                if (!want(&g->sig[v], &g->sig[u])) continue;
                if (pass_kgraph_try_merge(g, v, u)) {
                    merged++;
                    groups[k] = pass_kgraph_find(g, u);
                    joined = 1;
                    break;
                }
            }
            if (!joined) groups[ng++] = u;
        }
        lo = hi;
    }
    return merged;
}

int pass_kgraph_merge_pairs(pass_kgraph *g, int shared_only,
                            int (*want)(const pass_ksig *a, const pass_ksig *b)) {
    ir_arena *A = g->f->arena;
    pair_entry *e = NULL;
    int32_t ne = 0, cap = 0;
    const ir_func *f = g->f;
    for (int32_t i = 0; i < g->n; i++) {
        int32_t l = g->by_rank[i];
        if (pass_kgraph_find(g, l) != l || g->sig[l].combined) continue;
        if (shared_only) {
            /* siblings: one entry per value the unit reads from memory, keyed by it and by
             * the unit's domain */
            int32_t stamp = ++g->nstamp;
            for (int32_t j = 0; j < g->nodes[l].n; j++) {
                const ir_node *nd = &f->nodes[g->nodes[l].a[j]];
                for (int k = 0; k < ir_ops[nd->op].arity; k++) {
                    ir_ref a = nd->args[k];
                    const ir_node *an = &f->nodes[a];
                    if (ir_op_is_inline_leaf(an->op) || g->nmark[a] == stamp) continue;
                    if (an->op != IR_OP_INPUT && pass_kgraph_find(g, an->kernel) == l) continue;
                    g->nmark[a] = stamp;
                    uint64_t key = shape_key(&g->sig[l].dom) * 31 + (uint64_t)a;
                    IR_VEC_PUSH(A, e, ne, cap, ((pair_entry){key, g->ord[l], l}));
                    if (!e) return 0;
                }
            }
            continue;
        }
        IR_VEC_PUSH(A, e, ne, cap, ((pair_entry){shape_key(&g->sig[l].dom), g->ord[l], l}));
        if (!e) return 0;
        if (g->sig[l].red) {
            ir_shape outer = ir_shape_reduce(&g->sig[l].dom, g->sig[l].axes);
            if (!ir_shape_equal(&outer, &g->sig[l].dom)) {
                IR_VEC_PUSH(A, e, ne, cap, ((pair_entry){shape_key(&outer), g->ord[l], l}));
                if (!e) return 0;
            }
        }
    }
    sort_entries(e, ne);
    return merge_runs(g, e, ne, want);
}

/* ---- combined launches --------------------------------------------------------------- */

int pass_kgraph_combine(pass_kgraph *g) {
    ir_arena *A = g->f->arena;
    if (!g->part) {
        g->part = ir_arena_calloc(A, (size_t)g->n + 1, sizeof(int32_t));
        g->part_sig = ir_arena_calloc(A, (size_t)g->n + 1, sizeof(pass_ksig));
        if (!g->part || !g->part_sig) return 0;
        for (int32_t l = 0; l < g->n; l++) {
            g->part[l] = pass_kgraph_find(g, l);
            g->part_sig[l] = g->sig[g->part[l]];
        }
    }
    int32_t *groups = ir_arena_calloc(A, (size_t)g->n + 1, sizeof(int32_t));
    if (!groups) return 0;
    int32_t ngroups = 0;
    for (int32_t i = 0; i < g->n && g->budget > 0; i++) {
        int32_t l = g->by_rank[i];
        if (g->part[l] != l) continue; /* one try per kernel */
        int32_t u = pass_kgraph_find(g, l);
        if (g->sig[u].red || g->sig[u].combined) continue;
        int joined = 0;
        for (int32_t k = ngroups - 1; k >= 0 && k >= ngroups - PAIR_TRIES && !joined; k--) {
            int32_t v = pass_kgraph_find(g, groups[k]);
            g->budget--;
            if (v == u) {
                joined = 1;
                break;
            }
            int32_t a = u, b = v;
            if (!no_cycle(g, &a, &b, 1)) continue;
            pass_ksig s = g->sig[v];
            s.combined = 1;
            if (unite(g, a, b, &s)) return 0;
            groups[k] = pass_kgraph_find(g, u);
            joined = 1;
        }
        if (!joined) groups[ngroups++] = u;
    }
    int n = 0;
    for (int32_t k = 0; k < ngroups; k++)
        if (g->sig[pass_kgraph_find(g, groups[k])].combined) n++;
    return n;
}

int32_t pass_kgraph_relabel(pass_kgraph *g, int32_t **group) {
    ir_arena *A = g->f->arena;
    int32_t *newid = ir_arena_calloc(A, (size_t)g->n + 1, sizeof(int32_t));
    int32_t *grp = ir_arena_calloc(A, (size_t)g->n + 1, sizeof(int32_t));
    int32_t *gid = ir_arena_calloc(A, (size_t)g->n + 1, sizeof(int32_t));
    g->out_sig = ir_arena_calloc(A, (size_t)g->n + 1, sizeof(pass_ksig));
    if (!newid || !grp || !gid || !g->out_sig) return -1;
    for (int32_t l = 0; l < g->n; l++) {
        newid[l] = -1;
        gid[l] = -1;
    }
    int32_t m = 0;
    for (int32_t i = 0; i < g->n; i++) {
        int32_t l = g->by_rank[i];
        int32_t part = g->part ? g->part[l] : pass_kgraph_find(g, l);
        if (newid[part] < 0) {
            newid[part] = m;
            g->out_sig[m] = g->part ? g->part_sig[l] : g->sig[part];
            int32_t launch = pass_kgraph_find(g, l);
            if (gid[launch] < 0) gid[launch] = m;
            grp[m] = gid[launch];
            m++;
        }
    }
    ir_func *f = g->f;
    for (ir_ref r = 0; r < f->nnodes; r++) {
        ir_node *nd = &f->nodes[r];
        if (pass_is_leaf(nd) || nd->op == IR_OP_OUTPUT || nd->kernel < 0 || nd->kernel >= g->n)
            continue;
        int32_t part = g->part ? g->part[nd->kernel] : pass_kgraph_find(g, nd->kernel);
        nd->kernel = newid[part];
    }
    if (group) *group = grp;
    return m;
}

pass_ksig *pass_kgraph_sigs(pass_kgraph *g) {
    return g->out_sig;
}

/* ---- rounds of fusion (fuse_reduction, fuse_horizontal) ------------------------------ */

/* The most rounds pass_fuse_rounds runs. Another round runs only when Rule 1 copied
 * something (a copy can leave a kernel with nothing to do, or free a merge), and rounds
 * settle fast: of the 1518 runs of the two passes on the functions of examples/, tests/,
 * bench/ and 500 random programs (tests/cli_py/test_random_programs.py's seed), 1410 settled
 * in one round, 102 in two, 5 in three and one in four (its fourth copied nothing); a
 * higher bound changes none of their partitions. Nothing proves that the rounds end (Rule 1
 * also copies where that moves as many bytes as storing, which need not be progress), and
 * each round costs a partition build and may add as many nodes as the function has
 * (recompute's budget): four rounds keep that to 16 times a large function at most. */
#define FUSE_ROUNDS_MAX 4

int pass_fuse_rounds(ir_func *f, pass_ctx *c, void (*merge)(pass_kgraph *g)) {
    for (int round = 0; round < FUSE_ROUNDS_MAX; round++) {
        int32_t nl = f->partition->nkernels;
        pass_ksig *sig = pass_sigs_of_partition(f);
        pass_kgraph *g = sig ? pass_kgraph_new(f, nl, sig) : NULL;
        if (!g) return pass_fail(c, "out of memory");
        merge(g);
        nl = pass_kgraph_relabel(g, NULL);
        if (nl < 0) return pass_fail(c, "out of memory");
        int copied = pass_recompute(f, nl, NULL, c);
        if (copied < 0) return -1;
        if (pass_partition_build(f, nl, NULL, c)) return -1;
        /* a copy can leave its kernel with nothing to do, or free a merge: once more */
        if (!copied) break;
    }
    return 0;
}
