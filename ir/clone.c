/* ir/clone.c: a deep copy of an IR function, so passes can rewrite one copy while the
 * original stays the reference. */
#include "ir.h"

#include <string.h>

#define CLONE_ARRAY(a, dst, src, n)                                                                \
    do {                                                                                           \
        if ((n) > 0) {                                                                             \
            (dst) = ir_arena_calloc((a), (size_t)(n), sizeof(*(src)));                             \
            if (!(dst)) return NULL;                                                               \
            memcpy((dst), (src), (size_t)(n) * sizeof(*(src)));                                    \
        }                                                                                          \
    } while (0)

static ir_kernel *clone_kernels(ir_arena *a, const ir_partition *p) {
    ir_kernel *k = ir_arena_calloc(a, (size_t)p->nkernels, sizeof(*k));
    if (!k) return NULL;
    for (int32_t i = 0; i < p->nkernels; i++) {
        const ir_kernel *s = &p->kernels[i];
        k[i] = *s;
        k[i].body = NULL;
        k[i].inputs = NULL;
        k[i].outputs = NULL;
        k[i].parts = NULL;
        CLONE_ARRAY(a, k[i].body, s->body, s->nbody);
        CLONE_ARRAY(a, k[i].inputs, s->inputs, s->ninputs);
        CLONE_ARRAY(a, k[i].outputs, s->outputs, s->noutputs);
        CLONE_ARRAY(a, k[i].parts, s->parts, s->nparts);
        k[i].cap_body = s->nbody;
        k[i].cap_inputs = s->ninputs;
        k[i].cap_outputs = s->noutputs;
        k[i].cap_parts = s->nparts;
    }
    return k;
}

ir_func *ir_func_clone(ir_arena *a, const ir_func *f) {
    ir_func *c = ir_arena_alloc(a, sizeof(*c));
    if (!c) return NULL;
    *c = *f;
    c->arena = a;
    c->nodes = NULL;
    c->params = NULL;
    c->outputs = NULL;
    c->syms = NULL;
    c->partition = NULL;
    CLONE_ARRAY(a, c->nodes, f->nodes, f->nnodes);
    CLONE_ARRAY(a, c->params, f->params, f->nparams);
    CLONE_ARRAY(a, c->outputs, f->outputs, f->noutputs);
    CLONE_ARRAY(a, c->syms, f->syms, f->nsyms);
    c->grad_wrt = NULL;
    if (f->grad_of) {
        c->grad_of = ir_arena_strdup(a, f->grad_of);
        CLONE_ARRAY(a, c->grad_wrt, f->grad_wrt, f->noutputs);
    }
    c->cap_nodes = f->nnodes;
    c->cap_params = f->nparams;
    c->cap_outputs = f->noutputs;
    c->cap_syms = f->nsyms;
    if (f->partition) {
        c->partition = ir_arena_alloc(a, sizeof(*c->partition));
        if (!c->partition) return NULL;
        c->partition->nkernels = f->partition->nkernels;
        c->partition->cap_kernels = f->partition->nkernels;
        if (f->partition->nkernels) {
            c->partition->kernels = clone_kernels(a, f->partition);
            if (!c->partition->kernels) return NULL;
        }
    }
    return c;
}
