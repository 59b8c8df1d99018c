/* runtime/cuda/cuda_launch.c: the Driver API launcher (see cuda_launch.h). codegen/cuda/cuda.h says
 * what each launch of a function takes; rt_cuda_resolve turns it into grids and argument values
 * for given dims, and this file keeps the last resolution of each function, so that a call
 * with the same dims (and pointers of the same alignment) packs its arguments from it and
 * goes straight to cuLaunchKernel. */
#include "runtime/cuda/cuda_launch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_gather.h"
#include "runtime/cuda/cuda_resolve.h"
#include "runtime/clock.h"

/* Scratch buffers are carved from one pool allocation at this alignment (rt_cuda_resolve's
 * rule; the pool's own allocations are at least this aligned). */
#define RT_CUDA_SCRATCH_ALIGN 256u
/* The most parameters and results of a call (IR_MAX_ARGS), and results. */
#define RT_CUDA_MAX_ARGS    IR_MAX_ARGS
#define RT_CUDA_MAX_RESULTS IR_MAX_ARGS

/* One resolution of a function for given dims: what its launches need. */
typedef struct resolution {
    rt_cuda_config *configs; /* [nlaunches] */
    int64_t *values;         /* [nvalues], as rt_cuda_resolve lays them out */
    uint64_t *scratch_off;   /* [nscratch] byte offsets into the scratch block */
    uint64_t scratch_bytes;
} resolution;

typedef struct rt_cuda_fn {
    const cuda_func *meta;
    rt_cu_function *funcs;  /* funcs[var_base[l] + variant] */
    rt_cu_function *gather; /* [nparams]: the gather kernel of each (NULL: rank 0) */
    int32_t *var_base;      /* [nlaunches] */
    int32_t *arg_base;      /* [nlaunches]: launch l's first value */
    int32_t nvalues, max_args, nptrs, nkey;
    /* the last resolution and its key (dims, then the low byte of every pointer) */
    pthread_mutex_t mu;
    int cached;
    int64_t *key;
    resolution last;
} rt_cuda_fn;

/* The module loaded on one device, in its primary context. */
typedef struct gpu_dev {
    rt_cuda_device dev;
    int ord; /* the device's ordinal */
    rt_cu_module module;
    int nfuncs;
    rt_cuda_fn *fns;
    int launched; /* a kernel of the module was launched (atomic): its free waits */
} gpu_dev;

/* A module of every device: loaded on each at its first use there (gpu_on), with the image
 * for that device's architecture. */
struct rt_cuda_gpu {
    const cuda_module *meta;
    rt_cuda_image_fn image;
    void *image_ctx;
    pthread_mutex_t mu; /* loads */
    /* published (atomically) once loaded; a failed load keeps its status and message */
    gpu_dev *on[RT_CUDA_MAX_DEVICES];
    fusec_status failed[RT_CUDA_MAX_DEVICES];
    char *why[RT_CUDA_MAX_DEVICES];
};

/* Results in place over a parameter the function reads after writing them (SPEC §3: as if
 * every input were read first): their temporaries, after the call's scratch. */
typedef struct temps {
    uint64_t off[RT_CUDA_MAX_RESULTS]; /* byte offset of result o's temporary; UINT64_MAX: none */
    uint64_t bytes;                    /* the temporaries' bytes, in all */
} temps;

/* Strided inputs (SPEC §3), each read by its gather kernel into a dense temporary after the
 * temps, which the launches read instead. */
typedef struct gathers {
    uint64_t off[RT_CUDA_MAX_ARGS]; /* byte offset of parameter p's; UINT64_MAX: dense */
    uint64_t bytes;
} gathers;

struct rt_cuda_plan {
    gpu_dev *g;
    rt_cuda_fn *fn;
    int64_t *syms; /* the dims it was made for */
    resolution res;
    void *res_mem;
    temps tmp;       /* room for every result that may need one, used where the pointers say */
    gathers gat;     /* the strided inputs' (a plan keeps its layouts: fusec_plan_rebind) */
    ir_tensor *args; /* as bound: the copies into place after a replay */
    rt_cu_deviceptr scratch;
    rt_cu_stream last_stream; /* of the last launch outside a capture */
    /* with scratch: recorded after each launch outside a capture, so that a launch on another
     * stream, and the scratch's free, come after the last one whatever stream it ran on (the
     * driver orders a graph's launches, not the copies into place that follow each) */
    rt_cu_event done;
    int launched;
    pthread_mutex_t lock; /* launches may come from several threads (fusec.h) */
    rt_cu_graph graph;
    rt_cu_graph_exec exec;
    int32_t nnodes;
    rt_cu_graph_node *nodes;
    int32_t *node_launch; /* the launch each node runs; -1 - p: parameter p's gather */
    /* each node's kernel and argument values as last set (kernel_params NULL; nslots values a
     * node), which a launch inside a stream capture issues one by one: graph_launch_captured */
    rt_cu_kernel_node_params *node_np;
    uint64_t *node_slots;
    int32_t nslots;
};

static fusec_status driver_failed(rt_cu_result r, const char *call, char *err, size_t errlen) {
    rt_cuda_error(r, call, err, errlen);
    return FUSEC_ERR_DRIVER;
}

static fusec_status no_memory(char *err, size_t errlen) {
    snprintf(err, errlen, "out of memory");
    return FUSEC_ERR_OUT_OF_MEMORY;
}

/* ---- loading ------------------------------------------------------------------------- */

static void fn_free(rt_cuda_fn *fn) {
    free(fn->funcs);
    free(fn->gather);
    free(fn->var_base);
    free(fn->arg_base);
    free(fn->key);
    free(fn->last.configs);
    free(fn->last.values);
    free(fn->last.scratch_off);
    pthread_mutex_destroy(&fn->mu);
}

static fusec_status fn_load(gpu_dev *g, const cuda_func *meta, rt_cuda_fn *fn, char *err,
                            size_t errlen) {
    const rt_cu_api *cu = rt_cuda_api();
    fn->meta = meta;
    pthread_mutex_init(&fn->mu, NULL);
    int32_t nvar = 0, nl = meta->nlaunches > 0 ? meta->nlaunches : 1;
    for (int32_t l = 0; l < meta->nlaunches; l++)
        nvar += meta->launches[l].nvariants;
    fn->funcs = calloc((size_t)(nvar ? nvar : 1), sizeof *fn->funcs);
    fn->gather = calloc((size_t)(meta->nparams ? meta->nparams : 1), sizeof *fn->gather);
    fn->var_base = calloc((size_t)nl, sizeof *fn->var_base);
    fn->arg_base = calloc((size_t)nl, sizeof *fn->arg_base);
    fn->nptrs = meta->nparams + meta->nresults;
    fn->nkey = meta->nsyms + fn->nptrs;
    fn->key = calloc((size_t)(fn->nkey ? fn->nkey : 1), sizeof *fn->key);
    fn->last.configs = calloc((size_t)nl, sizeof *fn->last.configs);
    fn->nvalues = rt_cuda_func_nargs(meta);
    fn->last.values = calloc((size_t)(fn->nvalues ? fn->nvalues : 1), sizeof(int64_t));
    fn->last.scratch_off = calloc((size_t)(meta->nscratch ? meta->nscratch : 1), sizeof(uint64_t));
    if (!fn->funcs || !fn->gather || !fn->var_base || !fn->arg_base || !fn->key ||
        !fn->last.configs || !fn->last.values || !fn->last.scratch_off)
        return no_memory(err, errlen);
    int32_t v = 0, a = 0;
    for (int32_t l = 0; l < meta->nlaunches; l++) {
        const cuda_launch *ln = &meta->launches[l];
        fn->var_base[l] = v;
        fn->arg_base[l] = a;
        a += ln->nargs;
        if (ln->nargs > fn->max_args) fn->max_args = ln->nargs;
        for (int32_t k = 0; k < ln->nvariants; k++, v++) {
            const cuda_variant *cv = &ln->variants[k];
            const char *call = "cuModuleGetFunction";
            rt_cu_result r = cu->ModuleGetFunction(&fn->funcs[v], g->module, cv->name);
            /* a block may take more than 48 KiB of dynamic shared memory only once its
             * function says so (every GPU from sm_80 has 99 KiB a block at least) */
            if (r == RT_CU_SUCCESS && cv->smem_bytes > RT_CU_DEFAULT_SHARED_BYTES) {
                call = "cuFuncSetAttribute";
                r = cu->FuncSetAttribute(fn->funcs[v],
                                         RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         cv->smem_bytes);
            }
            if (r != RT_CU_SUCCESS) {
                char why[256];
                snprintf(err, errlen, "kernel %s of '%s': %s", cv->name, meta->name,
                         rt_cuda_error(r, call, why, sizeof why));
                return FUSEC_ERR_DRIVER;
            }
        }
    }
    for (int32_t p = 0; p < meta->nparams; p++) {
        if (!meta->gather[p]) continue;
        rt_cu_result r = cu->ModuleGetFunction(&fn->gather[p], g->module, meta->gather[p]);
        if (r != RT_CU_SUCCESS) {
            char why[256];
            snprintf(err, errlen, "kernel %s: %s", meta->gather[p],
                     rt_cuda_error(r, "cuModuleGetFunction", why, sizeof why));
            return FUSEC_ERR_DRIVER;
        }
    }
    return FUSEC_OK;
}

static void gpu_dev_free(gpu_dev *g) {
    if (!g) return;
    for (int i = 0; i < g->nfuncs; i++)
        fn_free(&g->fns[i]);
    free(g->fns);
    if (g->module) {
        int pushed = 0;
        char err[256];
        if (rt_cuda_enter(g->ord, &pushed, err, sizeof err) == 0) {
            /* cuModuleUnload does not wait for the module's kernels still queued, on whatever
             * streams they were launched (a free right after an asynchronous call: Python's
             * `del m`), and those streams may be gone: the whole context is waited for */
            if (__atomic_load_n(&g->launched, __ATOMIC_RELAXED)) rt_cuda_api()->CtxSynchronize();
            rt_cuda_api()->ModuleUnload(g->module);
            rt_cuda_leave(pushed);
        }
    }
    free(g);
}

/* Loads the image (built from mod) on device dev. */
static fusec_status gpu_dev_load(const cuda_module *mod, const void *cubin, size_t len, int dev,
                                 gpu_dev **out, rt_cuda_load_times *times, char *err,
                                 size_t errlen) {
    *out = NULL;
    rt_cuda_load_times t = {0};
    gpu_dev *g = calloc(1, sizeof *g);
    if (!g) return no_memory(err, errlen);
    g->ord = dev;
    if (rt_cuda_device_info(dev, &g->dev, err, errlen) != 0) {
        free(g);
        return rt_cuda_api() ? FUSEC_ERR_INVALID_ARGUMENT : FUSEC_ERR_NO_DEVICE;
    }
    int pushed = 0;
    double t0 = rt_now_ms();
    if (rt_cuda_enter(dev, &pushed, err, errlen) != 0) {
        free(g);
        return FUSEC_ERR_DRIVER;
    }
    double t1 = rt_now_ms();
    t.context_ms = t1 - t0;
    const rt_cu_api *cu = rt_cuda_api();
    fusec_status st = FUSEC_OK;
    /* the memory pool and fusec's own stream now, not at the first launch or plan that needs
     * them, which may be inside a caller's stream capture (a device without pools says so at
     * that launch; a stream that cannot be made, at the first plan with scratch) */
    char pool_err[256];
    (void)rt_cuda_pool(dev, pool_err, sizeof pool_err);
    (void)rt_cuda_own_stream(dev, pool_err, sizeof pool_err);
    t0 = rt_now_ms();
    t.pool_ms = t0 - t1;
    if (cubin && len) {
        rt_cu_result r = cu->ModuleLoadData(&g->module, cubin);
        if (r != RT_CU_SUCCESS) {
            char why[256];
            snprintf(err, errlen,
                     "the kernels cannot be loaded on device %d, %s (compute capability %d.%d): "
                     "%s",
                     dev, g->dev.name, g->dev.major, g->dev.minor,
                     rt_cuda_error(r, "cuModuleLoadData", why, sizeof why));
            g->module = NULL;
            st = FUSEC_ERR_DRIVER;
        }
    }
    t1 = rt_now_ms();
    t.module_ms = t1 - t0;
    if (st == FUSEC_OK) {
        g->fns = calloc((size_t)(mod->nfuncs ? mod->nfuncs : 1), sizeof *g->fns);
        if (!g->fns) st = no_memory(err, errlen);
    }
    for (int i = 0; st == FUSEC_OK && i < mod->nfuncs; i++) {
        g->nfuncs = i + 1;
        st = fn_load(g, &mod->funcs[i], &g->fns[i], err, errlen);
    }
    t.functions_ms = rt_now_ms() - t1;
    rt_cuda_leave(pushed);
    if (times) *times = t;
    if (st != FUSEC_OK) {
        gpu_dev_free(g);
        return st;
    }
    *out = g;
    return FUSEC_OK;
}

fusec_status rt_cuda_gpu_new(const cuda_module *mod, rt_cuda_image_fn image, void *image_ctx,
                             rt_cuda_gpu **out, char *err, size_t errlen) {
    *out = NULL;
    rt_cuda_gpu *g = calloc(1, sizeof *g);
    if (!g || pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g);
        return no_memory(err, errlen);
    }
    g->meta = mod;
    g->image = image;
    g->image_ctx = image_ctx;
    *out = g;
    return FUSEC_OK;
}

fusec_status rt_cuda_gpu_load(rt_cuda_gpu *g, int dev, rt_cuda_load_times *times, char *err,
                              size_t errlen) {
    if (times) memset(times, 0, sizeof *times);
    if (dev < 0 || dev >= RT_CUDA_MAX_DEVICES) {
        snprintf(err, errlen, "CUDA device %d does not exist", dev);
        return FUSEC_ERR_INVALID_ARGUMENT;
    }
    if (__atomic_load_n(&g->on[dev], __ATOMIC_ACQUIRE)) return FUSEC_OK;
    pthread_mutex_lock(&g->mu);
    fusec_status st = FUSEC_OK;
    if (g->on[dev]) {
        st = FUSEC_OK;
    } else if (g->failed[dev] != FUSEC_OK) {
        st = g->failed[dev];
        snprintf(err, errlen, "%s", g->why[dev] ? g->why[dev] : "the kernels could not be loaded");
    } else {
        rt_cuda_device d;
        const void *image = NULL;
        size_t len = 0;
        gpu_dev *gd = NULL;
        if (rt_cuda_device_info(dev, &d, err, errlen) != 0)
            st = rt_cuda_api() ? FUSEC_ERR_INVALID_ARGUMENT : FUSEC_ERR_NO_DEVICE;
        if (st == FUSEC_OK) st = g->image(g->image_ctx, &d, &image, &len, err, errlen);
        if (st == FUSEC_OK) st = gpu_dev_load(g->meta, image, len, dev, &gd, times, err, errlen);
        if (st == FUSEC_OK) {
            __atomic_store_n(&g->on[dev], gd, __ATOMIC_RELEASE);
        } else if (st != FUSEC_ERR_INVALID_ARGUMENT) {
            /* kept: every later launch there fails the same way, without another build */
            g->failed[dev] = st;
            g->why[dev] = strdup(err);
        }
    }
    pthread_mutex_unlock(&g->mu);
    return st;
}

/* The module as loaded on device dev (loading it there the first time). */
static fusec_status gpu_on(rt_cuda_gpu *g, int dev, gpu_dev **out, char *err, size_t errlen) {
    *out = dev >= 0 && dev < RT_CUDA_MAX_DEVICES ? __atomic_load_n(&g->on[dev], __ATOMIC_ACQUIRE)
                                                 : NULL;
    if (*out) return FUSEC_OK;
    fusec_status st = rt_cuda_gpu_load(g, dev, NULL, err, errlen);
    if (st == FUSEC_OK) *out = __atomic_load_n(&g->on[dev], __ATOMIC_ACQUIRE);
    return st;
}

void rt_cuda_gpu_free(rt_cuda_gpu *g) {
    if (!g) return;
    for (int d = 0; d < RT_CUDA_MAX_DEVICES; d++) {
        gpu_dev_free(g->on[d]);
        free(g->why[d]);
    }
    pthread_mutex_destroy(&g->mu);
    free(g);
}

int rt_cuda_plan_device(const rt_cuda_plan *p) {
    return p->g->ord;
}

/* ---- resolving and packing ------------------------------------------------------------- */

/* The per-call copy of a resolution, on the stack when it fits. */
typedef struct call {
    resolution res;
    void *heap;
    union {
        int64_t align;
        unsigned char bytes[8192];
    } stack;
} call;

static size_t resolution_size(const rt_cuda_fn *fn) {
    return sizeof(rt_cuda_config) * (size_t)fn->meta->nlaunches +
           sizeof(int64_t) * (size_t)fn->nvalues + sizeof(uint64_t) * (size_t)fn->meta->nscratch;
}

/* Points res's arrays into mem (resolution_size bytes; rt_cuda_config holds int64s first). */
static void resolution_place(const rt_cuda_fn *fn, resolution *res, void *mem) {
    unsigned char *p = mem;
    res->values = (int64_t *)p;
    p += sizeof(int64_t) * (size_t)fn->nvalues;
    res->scratch_off = (uint64_t *)p;
    p += sizeof(uint64_t) * (size_t)fn->meta->nscratch;
    res->configs = (rt_cuda_config *)p;
}

static void resolution_copy(const rt_cuda_fn *fn, resolution *dst, const resolution *src) {
    memcpy(dst->configs, src->configs, sizeof(rt_cuda_config) * (size_t)fn->meta->nlaunches);
    memcpy(dst->values, src->values, sizeof(int64_t) * (size_t)fn->nvalues);
    memcpy(dst->scratch_off, src->scratch_off, sizeof(uint64_t) * (size_t)fn->meta->nscratch);
    dst->scratch_bytes = src->scratch_bytes;
}

static int call_init(const rt_cuda_fn *fn, call *c) {
    size_t need = resolution_size(fn);
    c->heap = NULL;
    void *mem = c->stack.bytes;
    if (need > sizeof c->stack.bytes) {
        mem = c->heap = malloc(need);
        if (!mem) return -1;
    }
    resolution_place(fn, &c->res, mem);
    return 0;
}

static void call_done(call *c) {
    free(c->heap);
}

/* Resolves fn for these dims and pointers into c->res (from the function's last resolution
 * when the key matches). */
static fusec_status resolve(const gpu_dev *g, rt_cuda_fn *fn, const ir_tensor *args,
                            const int64_t *syms, call *c, char *err, size_t errlen) {
    const cuda_func *meta = fn->meta;
    int64_t key_stack[64], *key = key_stack;
    uint64_t ptr_stack[64], *ptrs = ptr_stack;
    if (fn->nkey > 64 || fn->nptrs > 64) {
        key = malloc(sizeof(int64_t) * (size_t)fn->nkey);
        ptrs = malloc(sizeof(uint64_t) * (size_t)fn->nptrs);
        if (!key || !ptrs) {
            free(key != key_stack ? key : NULL);
            free(ptrs != ptr_stack ? ptrs : NULL);
            return no_memory(err, errlen);
        }
    }
    for (int32_t i = 0; i < meta->nsyms; i++)
        key[i] = syms[i];
    for (int32_t i = 0; i < fn->nptrs; i++) {
        ptrs[i] = (uint64_t)(uintptr_t)args[i].data;
        key[meta->nsyms + i] = (int64_t)(ptrs[i] & 0xff); /* all alignment conditions need */
    }
    fusec_status st = FUSEC_OK;
    int hit = 0;
    pthread_mutex_lock(&fn->mu);
    if (fn->cached && memcmp(fn->key, key, sizeof(int64_t) * (size_t)fn->nkey) == 0) {
        resolution_copy(fn, &c->res, &fn->last);
        hit = 1;
    }
    pthread_mutex_unlock(&fn->mu);
    if (!hit) {
        if (rt_cuda_resolve(meta, syms, ptrs, ptrs + meta->nparams, g->dev.sm_count, c->res.configs,
                            c->res.values, err, errlen) != 0) {
            st = FUSEC_ERR_RUNTIME;
        } else {
            uint64_t total = 0;
            for (int32_t k = 0; k < meta->nscratch && st == FUSEC_OK; k++) {
                int64_t b = rt_cuda_scratch_bytes(meta, k, syms, c->res.configs);
                if (b < 0 || (uint64_t)b > (UINT64_MAX >> 2)) {
                    snprintf(err, errlen, "scratch buffer %d of '%s' is too large", (int)k,
                             meta->name);
                    st = FUSEC_ERR_OUT_OF_MEMORY;
                    break;
                }
                c->res.scratch_off[k] = total;
                total += ((uint64_t)(b ? b : 1) + RT_CUDA_SCRATCH_ALIGN - 1) &
                         ~(uint64_t)(RT_CUDA_SCRATCH_ALIGN - 1);
            }
            c->res.scratch_bytes = total;
        }
        if (st == FUSEC_OK) {
            pthread_mutex_lock(&fn->mu);
            memcpy(fn->key, key, sizeof(int64_t) * (size_t)fn->nkey);
            resolution_copy(fn, &fn->last, &c->res);
            fn->cached = 1;
            pthread_mutex_unlock(&fn->mu);
        }
    }
    if (key != key_stack) free(key);
    if (ptrs != ptr_stack) free(ptrs);
    return st;
}

/* Launch li's kernel arguments: slots[j] holds argument j, kp[j] points at it. */
static void pack(const rt_cuda_fn *fn, const resolution *res, int32_t li, const ir_tensor *args,
                 rt_cu_deviceptr scratch, uint64_t *slots, void **kp) {
    const cuda_launch *ln = &fn->meta->launches[li];
    const int64_t *values = res->values + fn->arg_base[li];
    for (int32_t j = 0; j < ln->nargs; j++) {
        const cuda_arg *a = &ln->args[j];
        switch (a->kind) {
        case CUDA_ARG_PARAM: slots[j] = (uint64_t)(uintptr_t)args[a->index].data; break;
        case CUDA_ARG_RESULT:
            slots[j] = (uint64_t)(uintptr_t)args[fn->meta->nparams + a->index].data;
            break;
        case CUDA_ARG_SCRATCH: slots[j] = scratch + res->scratch_off[a->index]; break;
        default: slots[j] = (uint64_t)values[j]; break;
        }
        kp[j] = &slots[j];
    }
}

/* Room for one launch's packed arguments: on the stack unless a launch has many. */
typedef struct arg_buffer {
    uint64_t *slots;
    void **kp;
    uint64_t slot_stack[128];
    void *kp_stack[128];
} arg_buffer;

static int arg_buffer_init(arg_buffer *b, int32_t max_args) {
    b->slots = b->slot_stack;
    b->kp = b->kp_stack;
    if (max_args <= 128) return 0;
    b->slots = malloc(sizeof *b->slots * (size_t)max_args);
    b->kp = malloc(sizeof *b->kp * (size_t)max_args);
    if (b->slots && b->kp) return 0;
    free(b->slots);
    free(b->kp);
    return -1;
}

static void arg_buffer_done(arg_buffer *b) {
    if (b->slots != b->slot_stack) free(b->slots);
    if (b->kp != b->kp_stack) free(b->kp);
}

static rt_cu_function variant_function(const rt_cuda_fn *fn, const resolution *res, int32_t li) {
    return fn->funcs[fn->var_base[li] + res->configs[li].variant];
}

/* Scratch for one call: one block from the pool, ordered on `stream`. */
static fusec_status scratch_alloc(int dev, uint64_t bytes, rt_cu_stream stream,
                                  rt_cu_deviceptr *out, char *err, size_t errlen) {
    *out = 0;
    if (!bytes) return FUSEC_OK;
    rt_cu_mempool pool = rt_cuda_pool(dev, err, errlen);
    if (!pool) return FUSEC_ERR_UNSUPPORTED;
    rt_cu_result r = rt_cuda_api()->MemAllocFromPoolAsync(out, (size_t)bytes, pool, stream);
    if (r != RT_CU_SUCCESS) {
        fusec_status st = driver_failed(r, "cuMemAllocFromPoolAsync", err, errlen);
        return r == 2 ? FUSEC_ERR_OUT_OF_MEMORY : st; /* CUDA_ERROR_OUT_OF_MEMORY */
    }
    if (*out % RT_CUDA_SCRATCH_ALIGN) {
        rt_cuda_api()->MemFreeAsync(*out, stream);
        snprintf(err, errlen, "the memory pool returned memory aligned to less than %u bytes",
                 RT_CUDA_SCRATCH_ALIGN);
        return FUSEC_ERR_INTERNAL;
    }
    return FUSEC_OK;
}

/* ---- results in place ----------------------------------------------------------------- */

static uint64_t tensor_bytes(const ir_tensor *t) {
    uint64_t n = (uint64_t)ir_dtypes[t->dtype].bytes;
    for (int32_t d = 0; d < t->rank; d++)
        n *= (uint64_t)t->dims[d];
    return n;
}

/* Whether result o's buffer is a parameter's that the function reads after writing o. */
static int needs_temp(const cuda_func *meta, const ir_tensor *args, int32_t o) {
    const void *data = args[meta->nparams + o].data;
    for (int32_t p = 0; p < meta->nparams; p++)
        if (data && args[p].data == data && meta->inplace_hazard[o * meta->nparams + p]) return 1;
    return 0;
}

/* Places the temporaries from byte `base` on: of the results needing one for these
 * pointers, or (every) of each result that may need one with some pointers (a plan, which
 * may be re-bound). */
static void temps_place(const cuda_func *meta, const ir_tensor *args, uint64_t base, int every,
                        temps *t) {
    t->bytes = 0;
    for (int32_t o = 0; o < meta->nresults && o < RT_CUDA_MAX_RESULTS; o++) {
        int may = 0;
        for (int32_t p = 0; p < meta->nparams; p++)
            may |= meta->inplace_hazard[o * meta->nparams + p];
        t->off[o] = UINT64_MAX;
        if (!(every ? may : needs_temp(meta, args, o))) continue;
        t->off[o] = base + t->bytes;
        uint64_t b = tensor_bytes(&args[meta->nparams + o]);
        t->bytes += (b + RT_CUDA_SCRATCH_ALIGN - 1) / RT_CUDA_SCRATCH_ALIGN * RT_CUDA_SCRATCH_ALIGN;
    }
}

/* args with each result that needs its temporary pointed there (into out). */
static void temps_apply(const cuda_func *meta, const ir_tensor *args, const temps *t,
                        rt_cu_deviceptr scratch, ir_tensor *out) {
    memcpy(out, args, sizeof(ir_tensor) * (size_t)(meta->nparams + meta->nresults));
    for (int32_t o = 0; o < meta->nresults && o < RT_CUDA_MAX_RESULTS; o++)
        if (t->off[o] != UINT64_MAX && needs_temp(meta, args, o))
            out[meta->nparams + o].data = (void *)(uintptr_t)(scratch + t->off[o]);
}

/* The temporaries into place, on the stream after the launches. */
static fusec_status temps_copy(const cuda_func *meta, const ir_tensor *args, const temps *t,
                               rt_cu_deviceptr scratch, rt_cu_stream s, char *err, size_t errlen) {
    for (int32_t o = 0; o < meta->nresults && o < RT_CUDA_MAX_RESULTS; o++) {
        if (t->off[o] == UINT64_MAX || !needs_temp(meta, args, o)) continue;
        const ir_tensor *r = &args[meta->nparams + o];
        rt_cu_result e = rt_cuda_api()->MemcpyDtoDAsync((rt_cu_deviceptr)(uintptr_t)r->data,
                                                        scratch + t->off[o], tensor_bytes(r), s);
        if (e != RT_CU_SUCCESS) return driver_failed(e, "cuMemcpyDtoDAsync", err, errlen);
    }
    return FUSEC_OK;
}

/* ---- strided inputs ------------------------------------------------------------------- */

/* Places the temporaries of the strided parameters from byte `base` on. */
static void gathers_place(const cuda_func *meta, const ir_tensor *args, uint64_t base, gathers *g) {
    g->bytes = 0;
    for (int32_t p = 0; p < meta->nparams && p < RT_CUDA_MAX_ARGS; p++) {
        g->off[p] = UINT64_MAX;
        if (!args[p].strides) continue;
        g->off[p] = base + g->bytes;
        uint64_t b = tensor_bytes(&args[p]);
        g->bytes += (b + RT_CUDA_SCRATCH_ALIGN - 1) / RT_CUDA_SCRATCH_ALIGN * RT_CUDA_SCRATCH_ALIGN;
    }
}

/* out (a copy of the arguments) with each strided parameter read from its temporary. */
static void gathers_apply(const cuda_func *meta, const gathers *g, rt_cu_deviceptr scratch,
                          ir_tensor *out) {
    for (int32_t p = 0; p < meta->nparams && p < RT_CUDA_MAX_ARGS; p++)
        if (g->off[p] != UINT64_MAX) {
            out[p].data = (void *)(uintptr_t)(scratch + g->off[p]);
            out[p].strides = NULL;
        }
}

/* args as the launches will see them, for choosing variants before the scratch exists: a
 * strided parameter's temporary is aligned to RT_CUDA_SCRATCH_ALIGN, whatever the caller's
 * pointer. */
static void resolve_view(const rt_cuda_fn *fn, const ir_tensor *args, ir_tensor *out) {
    memcpy(out, args, sizeof(ir_tensor) * (size_t)fn->nptrs);
    for (int32_t p = 0; p < fn->meta->nparams; p++)
        if (args[p].strides) out[p].data = (void *)(uintptr_t)RT_CUDA_SCRATCH_ALIGN;
}

/* The gather of `arg` into dst: its kernel arguments into slots (kp pointing at them) and
 * its grid (0: no element). */
typedef struct gather_call {
    uint64_t slots[2 + RT_CUDA_GATHER_VALUES];
    void *kp[2 + RT_CUDA_GATHER_VALUES];
    uint32_t grid;
} gather_call;

static void gather_pack(const gpu_dev *g, const ir_tensor *arg, rt_cu_deviceptr dst,
                        gather_call *c) {
    int64_t values[RT_CUDA_GATHER_VALUES];
    rt_cuda_gather_values(arg, g->dev.sm_count, values, &c->grid);
    c->slots[0] = dst;
    c->slots[1] = (uint64_t)(uintptr_t)arg->data;
    for (int j = 0; j < RT_CUDA_GATHER_VALUES; j++)
        c->slots[2 + j] = (uint64_t)values[j];
    for (int j = 0; j < 2 + RT_CUDA_GATHER_VALUES; j++)
        c->kp[j] = &c->slots[j];
}

/* The gathers of a call, on its stream before its launches. */
static fusec_status gathers_launch(const gpu_dev *g, const rt_cuda_fn *fn, const gathers *gt,
                                   const ir_tensor *args, rt_cu_deviceptr scratch, rt_cu_stream s,
                                   char *err, size_t errlen) {
    for (int32_t p = 0; p < fn->meta->nparams && p < RT_CUDA_MAX_ARGS; p++) {
        if (gt->off[p] == UINT64_MAX) continue;
        gather_call c;
        gather_pack(g, &args[p], scratch + gt->off[p], &c);
        if (!c.grid) continue;
        rt_cu_result r = rt_cuda_api()->LaunchKernel(fn->gather[p], c.grid, 1, 1, CUDA_GATHER_BLOCK,
                                                     1, 1, 0, s, c.kp, NULL);
        if (r != RT_CU_SUCCESS) {
            char why[256];
            snprintf(err, errlen, "launching %s: %s", fn->meta->gather[p],
                     rt_cuda_error(r, "cuLaunchKernel", why, sizeof why));
            return FUSEC_ERR_DRIVER;
        }
    }
    return FUSEC_OK;
}

/* ---- stream launches ------------------------------------------------------------------- */

static fusec_status launch_all(const rt_cuda_fn *fn, const resolution *res, const ir_tensor *args,
                               rt_cu_deviceptr scratch, rt_cu_stream stream, char *err,
                               size_t errlen) {
    const rt_cu_api *cu = rt_cuda_api();
    arg_buffer ab;
    if (arg_buffer_init(&ab, fn->max_args) != 0) return no_memory(err, errlen);
    uint64_t *slots = ab.slots;
    void **kp = ab.kp;
    fusec_status st = FUSEC_OK;
    for (int32_t li = 0; li < fn->meta->nlaunches && st == FUSEC_OK; li++) {
        const rt_cuda_config *cf = &res->configs[li];
        if (cf->skip) continue;
        pack(fn, res, li, args, scratch, slots, kp);
        rt_cu_result r = cu->LaunchKernel(variant_function(fn, res, li), cf->grid, 1, 1, cf->block,
                                          1, 1, cf->smem_bytes, stream, kp, NULL);
        if (r != RT_CU_SUCCESS) {
            char why[256];
            snprintf(err, errlen, "launching %s: %s", cf->name,
                     rt_cuda_error(r, "cuLaunchKernel", why, sizeof why));
            st = FUSEC_ERR_DRIVER;
        }
    }
    arg_buffer_done(&ab);
    return st;
}

/* Notes that kernels of g were launched (the first time only: a store per launch would make
 * every launching thread write one cache line). */
static void mark_launched(gpu_dev *g) {
    if (!__atomic_load_n(&g->launched, __ATOMIC_RELAXED))
        __atomic_store_n(&g->launched, 1, __ATOMIC_RELAXED);
}

fusec_status rt_cuda_gpu_launch(rt_cuda_gpu *G, int dev, int func, const ir_tensor *args,
                                const int64_t *syms, void *stream, char *err, size_t errlen) {
    gpu_dev *g = NULL;
    fusec_status lst = gpu_on(G, dev, &g, err, errlen);
    if (lst != FUSEC_OK) return lst;
    rt_cuda_fn *fn = &g->fns[func];
    mark_launched(g);
    call c;
    if (call_init(fn, &c) != 0) return no_memory(err, errlen);
    int pushed = 0;
    fusec_status st = FUSEC_OK;
    if (rt_cuda_enter(dev, &pushed, err, errlen) != 0) {
        call_done(&c);
        return FUSEC_ERR_DRIVER;
    }
    ir_tensor targs[RT_CUDA_MAX_ARGS];
    resolve_view(fn, args, targs);
    st = resolve(g, fn, targs, syms, &c, err, errlen);
    rt_cu_deviceptr scratch = 0;
    rt_cu_stream s = (rt_cu_stream)stream;
    temps t;
    gathers gt;
    temps_place(fn->meta, args, c.res.scratch_bytes, 0, &t);
    gathers_place(fn->meta, args, c.res.scratch_bytes + t.bytes, &gt);
    if (st == FUSEC_OK)
        st = scratch_alloc(g->ord, c.res.scratch_bytes + t.bytes + gt.bytes, s, &scratch, err,
                           errlen);
    if (st == FUSEC_OK) {
        temps_apply(fn->meta, args, &t, scratch, targs);
        gathers_apply(fn->meta, &gt, scratch, targs);
        st = gathers_launch(g, fn, &gt, args, scratch, s, err, errlen);
        if (st == FUSEC_OK) st = launch_all(fn, &c.res, targs, scratch, s, err, errlen);
        if (st == FUSEC_OK) st = temps_copy(fn->meta, args, &t, scratch, s, err, errlen);
        /* ordered after the launches on the same stream: the next call may reuse it */
        if (scratch) rt_cuda_api()->MemFreeAsync(scratch, s);
    }
    rt_cuda_leave(pushed);
    call_done(&c);
    return st;
}

/* ---- plans ------------------------------------------------------------------------------- */

static void node_params(const rt_cuda_fn *fn, const resolution *res, int32_t li, void **kp,
                        rt_cu_kernel_node_params *np) {
    const rt_cuda_config *cf = &res->configs[li];
    memset(np, 0, sizeof *np);
    np->func = variant_function(fn, res, li);
    np->grid_x = cf->grid;
    np->grid_y = np->grid_z = 1;
    np->block_x = cf->block;
    np->block_y = np->block_z = 1;
    np->shared_mem_bytes = cf->smem_bytes;
    np->kernel_params = kp;
}

/* A gather's node: parameter `param` (p->args', as bound) into its temporary. */
static void gather_node_params(const rt_cuda_plan *p, int32_t param, gather_call *c,
                               rt_cu_kernel_node_params *np) {
    gather_pack(p->g, &p->args[param], p->scratch + p->gat.off[param], c);
    memset(np, 0, sizeof *np);
    np->func = p->fn->gather[param];
    np->grid_x = c->grid;
    np->grid_y = np->grid_z = 1;
    np->block_x = CUDA_GATHER_BLOCK;
    np->block_y = np->block_z = 1;
    np->kernel_params = c->kp;
}

/* Sets (node < p->nnodes) or adds (after `prev`) the kernel node of launch li (-1 - p: the
 * gather of parameter p). The driver copies the argument values, so the slots are scratch
 * space. */
static fusec_status graph_node(rt_cuda_plan *p, int32_t li, const ir_tensor *args, int32_t node,
                               rt_cu_graph_node prev, char *err, size_t errlen) {
    const rt_cu_api *cu = rt_cuda_api();
    const rt_cuda_fn *fn = p->fn;
    arg_buffer ab;
    if (arg_buffer_init(&ab, fn->max_args) != 0) return no_memory(err, errlen);
    uint64_t *slots = ab.slots;
    void **kp = ab.kp;
    rt_cu_kernel_node_params np;
    gather_call gc;
    int32_t nargs;
    if (li < 0) {
        gather_node_params(p, -1 - li, &gc, &np);
        nargs = 2 + RT_CUDA_GATHER_VALUES;
        slots = gc.slots;
    } else {
        pack(fn, &p->res, li, args, p->scratch, slots, kp);
        node_params(fn, &p->res, li, kp, &np);
        nargs = fn->meta->launches[li].nargs;
    }
    p->node_np[node] = np;
    p->node_np[node].kernel_params = NULL;
    memcpy(p->node_slots + (size_t)node * (size_t)p->nslots, slots, sizeof *slots * (size_t)nargs);
    rt_cu_result r;
    const char *what;
    if (node < p->nnodes) {
        what = "cuGraphExecKernelNodeSetParams";
        r = cu->GraphExecKernelNodeSetParams(p->exec, p->nodes[node], &np);
    } else {
        what = "cuGraphAddKernelNode";
        r = cu->GraphAddKernelNode(&p->nodes[node], p->graph, prev ? &prev : NULL, prev ? 1 : 0,
                                   &np);
    }
    arg_buffer_done(&ab);
    if (r != RT_CU_SUCCESS) return driver_failed(r, what, err, errlen);
    return FUSEC_OK;
}

/* Whether the plan gathers parameter `param` (strided, with elements). */
static int graph_gathers(const rt_cuda_plan *p, int32_t param) {
    if (p->gat.off[param] == UINT64_MAX) return 0;
    return ir_dims_count(p->args[param].dims, p->args[param].rank) > 0;
}

/* A plan may be freed during a stream capture (Python's garbage collector, inside
 * torch.cuda.graph): nothing here goes on the legacy stream, which a capture on a blocking
 * stream forbids, and the calls a capture in global mode forbids are made in relaxed mode,
 * being outside it on purpose. */
void rt_cuda_plan_free(rt_cuda_plan *p) {
    if (!p) return;
    int pushed = 0;
    char err[256];
    if (p->g && rt_cuda_enter(p->g->ord, &pushed, err, sizeof err) == 0) {
        const rt_cu_api *cu = rt_cuda_api();
        int mode = rt_cuda_mode_relaxed();
        /* an executable graph still running is freed when it completes (the driver's rule) */
        if (p->exec) cu->GraphExecDestroy(p->exec);
        if (p->graph) cu->GraphDestroy(p->graph);
        /* after the last launch outside a capture (`done` is never recorded in one), on
         * fusec's own stream: the launch's may be gone by now (a caller's, fusec_bench_run's) */
        rt_cu_stream own = p->scratch ? rt_cuda_own_stream(p->g->ord, err, sizeof err) : NULL;
        if (own && p->launched) cu->StreamWaitEvent(own, p->done, 0);
        if (own) cu->MemFreeAsync(p->scratch, own);
        if (p->done) cu->EventDestroy(p->done);
        rt_cuda_mode_restore(mode);
        rt_cuda_leave(pushed);
    }
    pthread_mutex_destroy(&p->lock);
    free(p->syms);
    free(p->args);
    free(p->res_mem);
    free(p->nodes);
    free(p->node_launch);
    free(p->node_np);
    free(p->node_slots);
    free(p);
}

/* The plan's scratch (and its `done` event), taken on fusec's own stream and waited for there,
 * so that replays on any stream find it. Never on the caller's stream: a plan may be made
 * inside a stream capture (torch.cuda.graph around a call that makes one), where that stream
 * may not be synchronized and an allocation on it would be the captured graph's, not the
 * plan's. The caller has set relaxed mode: these calls are outside any capture on purpose, and
 * one in global mode would forbid them. */
static fusec_status graph_take_scratch(rt_cuda_plan *p, uint64_t bytes, char *err, size_t errlen) {
    if (!bytes) return FUSEC_OK;
    const rt_cu_api *cu = rt_cuda_api();
    rt_cu_stream own = rt_cuda_own_stream(p->g->ord, err, errlen);
    if (!own) return FUSEC_ERR_DRIVER;
    fusec_status st = scratch_alloc(p->g->ord, bytes, own, &p->scratch, err, errlen);
    rt_cu_result r = RT_CU_SUCCESS;
    if (st == FUSEC_OK && (r = cu->StreamSynchronize(own)) != RT_CU_SUCCESS)
        st = driver_failed(r, "cuStreamSynchronize", err, errlen);
    if (st == FUSEC_OK && (r = cu->EventCreate(&p->done, RT_CU_EVENT_DISABLE_TIMING)) != 0)
        st = driver_failed(r, "cuEventCreate", err, errlen);
    return st;
}

fusec_status rt_cuda_plan_create(rt_cuda_gpu *G, int dev, int func, const ir_tensor *args,
                                 const int64_t *syms, void *stream, rt_cuda_plan **out, char *err,
                                 size_t errlen) {
    *out = NULL;
    gpu_dev *g = NULL;
    fusec_status lst = gpu_on(G, dev, &g, err, errlen);
    if (lst != FUSEC_OK) return lst;
    rt_cuda_fn *fn = &g->fns[func];
    rt_cuda_plan *p = calloc(1, sizeof *p);
    if (!p) return no_memory(err, errlen);
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return no_memory(err, errlen);
    }
    p->g = g;
    p->fn = fn;
    p->last_stream = (rt_cu_stream)stream;
    int32_t nl = fn->meta->nlaunches, nmax = nl + fn->meta->nparams;
    p->res_mem = malloc(resolution_size(fn) + 1);
    p->syms = malloc(sizeof(int64_t) * (size_t)(fn->meta->nsyms + 1));
    p->args = malloc(sizeof(ir_tensor) * (size_t)(fn->nptrs + 1));
    p->nodes = calloc((size_t)(nmax ? nmax : 1), sizeof *p->nodes);
    p->node_launch = calloc((size_t)(nmax ? nmax : 1), sizeof *p->node_launch);
    p->nslots = fn->max_args > 2 + RT_CUDA_GATHER_VALUES ? fn->max_args : 2 + RT_CUDA_GATHER_VALUES;
    p->node_np = calloc((size_t)(nmax ? nmax : 1), sizeof *p->node_np);
    p->node_slots = calloc((size_t)(nmax ? nmax : 1) * (size_t)p->nslots, sizeof *p->node_slots);
    if (!p->res_mem || !p->syms || !p->args || !p->nodes || !p->node_launch || !p->node_np ||
        !p->node_slots) {
        rt_cuda_plan_free(p);
        return no_memory(err, errlen);
    }
    resolution_place(fn, &p->res, p->res_mem);
    memcpy(p->syms, syms, sizeof(int64_t) * (size_t)fn->meta->nsyms);
    int pushed = 0;
    if (rt_cuda_enter(dev, &pushed, err, errlen) != 0) {
        rt_cuda_plan_free(p);
        return FUSEC_ERR_DRIVER;
    }
    const rt_cu_api *cu = rt_cuda_api();
    call c;
    ir_tensor targs[RT_CUDA_MAX_ARGS];
    resolve_view(fn, args, targs);
    fusec_status st = call_init(fn, &c) == 0 ? FUSEC_OK : no_memory(err, errlen);
    if (st == FUSEC_OK) {
        st = resolve(g, fn, targs, syms, &c, err, errlen);
        if (st == FUSEC_OK) resolution_copy(fn, &p->res, &c.res);
        call_done(&c);
    }
    memcpy(p->args, args, sizeof(ir_tensor) * (size_t)fn->nptrs);
    temps_place(fn->meta, args, p->res.scratch_bytes, 1, &p->tmp);
    gathers_place(fn->meta, args, p->res.scratch_bytes + p->tmp.bytes, &p->gat);
    int mode = rt_cuda_mode_relaxed(); /* see graph_take_scratch */
    if (st == FUSEC_OK)
        st = graph_take_scratch(p, p->res.scratch_bytes + p->tmp.bytes + p->gat.bytes, err, errlen);
    temps_apply(fn->meta, args, &p->tmp, p->scratch, targs);
    gathers_apply(fn->meta, &p->gat, p->scratch, targs);
    if (st == FUSEC_OK) {
        rt_cu_result r = cu->GraphCreate(&p->graph, 0);
        if (r != RT_CU_SUCCESS) st = driver_failed(r, "cuGraphCreate", err, errlen);
    }
    /* the gathers, then the launches in order, each depending on the one before: the
     * partition's order is a topological order of the kernels, and a chain keeps the
     * graph's scheduling trivial */
    rt_cu_graph_node prev = NULL;
    for (int32_t li = -fn->meta->nparams; li < nl && st == FUSEC_OK; li++) {
        if (li < 0 ? !graph_gathers(p, -1 - li) : p->res.configs[li].skip) continue;
        int32_t node = p->nnodes;
        st = graph_node(p, li, targs, node, prev, err, errlen);
        if (st == FUSEC_OK) {
            p->node_launch[node] = li;
            prev = p->nodes[node];
            p->nnodes++;
        }
    }
    if (st == FUSEC_OK) {
        rt_cu_result r = cu->GraphInstantiateWithFlags(&p->exec, p->graph, 0);
        if (r != RT_CU_SUCCESS) st = driver_failed(r, "cuGraphInstantiateWithFlags", err, errlen);
    }
    rt_cuda_mode_restore(mode);
    rt_cuda_leave(pushed);
    if (st != FUSEC_OK) {
        rt_cuda_plan_free(p);
        return st;
    }
    *out = p;
    return FUSEC_OK;
}

/* A plan run inside a stream capture: its kernels launched one by one on s, which the capture
 * records as it would the stream launches (a cuGraphLaunch may not be captured: the driver
 * answers CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture), with the
 * arguments the plan's graph holds. */
static fusec_status graph_launch_captured(const rt_cuda_plan *p, rt_cu_stream s, char *err,
                                          size_t errlen) {
    const rt_cu_api *cu = rt_cuda_api();
    arg_buffer ab;
    if (arg_buffer_init(&ab, p->nslots) != 0) return no_memory(err, errlen);
    fusec_status st = FUSEC_OK;
    for (int32_t n = 0; n < p->nnodes && st == FUSEC_OK; n++) {
        const rt_cu_kernel_node_params *np = &p->node_np[n];
        for (int32_t j = 0; j < p->nslots; j++)
            ab.kp[j] = &p->node_slots[(size_t)n * (size_t)p->nslots + (size_t)j];
        rt_cu_result r = cu->LaunchKernel(np->func, np->grid_x, 1, 1, np->block_x, 1, 1,
                                          np->shared_mem_bytes, s, ab.kp, NULL);
        if (r != RT_CU_SUCCESS) st = driver_failed(r, "cuLaunchKernel", err, errlen);
    }
    arg_buffer_done(&ab);
    return st;
}

fusec_status rt_cuda_plan_launch(rt_cuda_plan *p, void *stream, char *err, size_t errlen) {
    int pushed = 0;
    if (rt_cuda_enter(p->g->ord, &pushed, err, errlen) != 0) return FUSEC_ERR_DRIVER;
    const rt_cu_api *cu = rt_cuda_api();
    rt_cu_stream s = (rt_cu_stream)stream;
    fusec_status st = FUSEC_OK;
    mark_launched(p->g);
    /* In a capture the kernels are recorded, not run, and the order of the captured graph's replays
     * against this plan's other launches is its caller's: the capture may not wait for an event
     * recorded outside it (the last launch's), and `done` is not recorded in it (a wait on a
     * captured event would join the capture, as plan_free's would). The legacy stream is never
     * capturing, and may not even be asked while a blocking stream is. */
    int status = RT_CU_STREAM_CAPTURE_STATUS_NONE;
    rt_cu_result r = s ? cu->StreamIsCapturing(s, &status) : RT_CU_SUCCESS;
    if (r != RT_CU_SUCCESS) st = driver_failed(r, "cuStreamIsCapturing", err, errlen);
    int outside = status == RT_CU_STREAM_CAPTURE_STATUS_NONE;
    pthread_mutex_lock(&p->lock);
    /* on another stream than the last launch's: after that launch's copies into place, which
     * read the scratch this one's graph writes (a handle is compared: one that a destroyed
     * stream's reuses is taken for it, and that stream's work was done once it was gone) */
    if (st == FUSEC_OK && outside && p->done && p->launched && s != p->last_stream) {
        r = cu->StreamWaitEvent(s, p->done, 0);
        if (r != RT_CU_SUCCESS) st = driver_failed(r, "cuStreamWaitEvent", err, errlen);
    }
    if (st == FUSEC_OK && !outside) {
        st = graph_launch_captured(p, s, err, errlen);
    } else if (st == FUSEC_OK) {
        r = cu->GraphLaunch(p->exec, s);
        if (r != RT_CU_SUCCESS) st = driver_failed(r, "cuGraphLaunch", err, errlen);
    }
    /* results in place through temporaries: into place after the graph, on its stream */
    if (st == FUSEC_OK) st = temps_copy(p->fn->meta, p->args, &p->tmp, p->scratch, s, err, errlen);
    if (st == FUSEC_OK && outside && p->done) {
        r = cu->EventRecord(p->done, s);
        if (r != RT_CU_SUCCESS) st = driver_failed(r, "cuEventRecord", err, errlen);
    }
    if (st == FUSEC_OK && outside) {
        p->last_stream = s;
        p->launched = 1;
    }
    pthread_mutex_unlock(&p->lock);
    rt_cuda_leave(pushed);
    return st;
}

fusec_status rt_cuda_plan_rebind(rt_cuda_plan *p, const ir_tensor *args, char *err, size_t errlen) {
    rt_cuda_fn *fn = p->fn;
    int pushed = 0;
    if (rt_cuda_enter(p->g->ord, &pushed, err, errlen) != 0) return FUSEC_ERR_DRIVER;
    /* the dims are the plan's, so the same launches run; new pointers may pick other
     * variants (alignment), and a kernel node may change its function */
    call c;
    ir_tensor targs[RT_CUDA_MAX_ARGS];
    resolve_view(fn, args, targs);
    fusec_status st = call_init(fn, &c) == 0 ? FUSEC_OK : no_memory(err, errlen);
    if (st == FUSEC_OK) {
        st = resolve(p->g, fn, targs, p->syms, &c, err, errlen);
        if (st == FUSEC_OK) resolution_copy(fn, &p->res, &c.res);
        call_done(&c);
    }
    /* the results in place now may be others: each has its room in the plan's scratch; the
     * strided inputs are those of the plan (fusec_plan_rebind keeps layouts) */
    if (st == FUSEC_OK) {
        memcpy(p->args, args, sizeof(ir_tensor) * (size_t)fn->nptrs);
        temps_apply(fn->meta, args, &p->tmp, p->scratch, targs);
        gathers_apply(fn->meta, &p->gat, p->scratch, targs);
    }
    int mode = rt_cuda_mode_relaxed(); /* the plan's own graph: outside any capture */
    for (int32_t n = 0; n < p->nnodes && st == FUSEC_OK; n++)
        st = graph_node(p, p->node_launch[n], targs, n, NULL, err, errlen);
    rt_cuda_mode_restore(mode);
    rt_cuda_leave(pushed);
    return st;
}

/* ---- timing ---------------------------------------------------------------------------- */

/* Events around each of `reps` runs of `run` (after a warm-up) on a stream of fusec's own,
 * recorded back to back so the device never waits for the host between runs. */
typedef fusec_status (*timed_fn)(void *ctx, rt_cu_stream s, char *err, size_t errlen);

static fusec_status time_runs(timed_fn run, void *ctx, int reps, double *times_ms, char *err,
                              size_t errlen) {
    const rt_cu_api *cu = rt_cuda_api();
    rt_cu_stream s = NULL;
    rt_cu_result r = cu->StreamCreate(&s, RT_CU_STREAM_NON_BLOCKING);
    if (r != RT_CU_SUCCESS) return driver_failed(r, "cuStreamCreate", err, errlen);
    rt_cu_event *ev = calloc((size_t)reps * 2, sizeof *ev);
    fusec_status st = ev ? FUSEC_OK : no_memory(err, errlen);
    for (int i = 0; i < 2 * reps && st == FUSEC_OK; i++) {
        r = cu->EventCreate(&ev[i], RT_CU_EVENT_DEFAULT);
        if (r != RT_CU_SUCCESS) st = driver_failed(r, "cuEventCreate", err, errlen);
    }
    if (st == FUSEC_OK) st = run(ctx, s, err, errlen);
    for (int i = 0; i < reps && st == FUSEC_OK; i++) {
        r = cu->EventRecord(ev[2 * i], s);
        if (r == RT_CU_SUCCESS) st = run(ctx, s, err, errlen);
        if (r == RT_CU_SUCCESS && st == FUSEC_OK) r = cu->EventRecord(ev[2 * i + 1], s);
        if (r != RT_CU_SUCCESS) st = driver_failed(r, "cuEventRecord", err, errlen);
    }
    if (st == FUSEC_OK) {
        r = cu->StreamSynchronize(s);
        if (r != RT_CU_SUCCESS) st = driver_failed(r, "cuStreamSynchronize", err, errlen);
    }
    for (int i = 0; i < reps && st == FUSEC_OK; i++) {
        float ms = 0;
        r = cu->EventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]);
        if (r != RT_CU_SUCCESS) st = driver_failed(r, "cuEventElapsedTime", err, errlen);
        times_ms[i] = ms;
    }
    if (st != FUSEC_OK) cu->StreamSynchronize(s); /* nothing may still use what is freed */
    for (int i = 0; ev && i < 2 * reps; i++)
        if (ev[i]) cu->EventDestroy(ev[i]);
    free(ev);
    cu->StreamDestroy(s);
    return st;
}

typedef struct launch_ctx {
    rt_cuda_gpu *g;
    int dev;
    rt_cuda_plan *plan;
    int func;
    const ir_tensor *args;
    const int64_t *syms;
} launch_ctx;

static fusec_status run_launch(void *vctx, rt_cu_stream s, char *err, size_t errlen) {
    launch_ctx *c = vctx;
    if (c->plan) return rt_cuda_plan_launch(c->plan, s, err, errlen);
    return rt_cuda_gpu_launch(c->g, c->dev, c->func, c->args, c->syms, s, err, errlen);
}

fusec_status rt_cuda_time_launches(rt_cuda_gpu *g, int dev, rt_cuda_plan *plan, int func,
                                   const ir_tensor *args, const int64_t *syms, int reps,
                                   double *times_ms, char *err, size_t errlen) {
    int pushed = 0;
    if (plan) dev = plan->g->ord;
    if (rt_cuda_enter(dev, &pushed, err, errlen) != 0) return FUSEC_ERR_DRIVER;
    launch_ctx c = {g, dev, plan, func, args, syms};
    fusec_status st = time_runs(run_launch, &c, reps, times_ms, err, errlen);
    rt_cuda_leave(pushed);
    return st;
}

typedef struct copy_ctx {
    rt_cu_deviceptr a, b;
    size_t half;
} copy_ctx;

static fusec_status run_copy(void *vctx, rt_cu_stream s, char *err, size_t errlen) {
    copy_ctx *c = vctx;
    rt_cu_result r = rt_cuda_api()->MemcpyDtoDAsync(c->b, c->a, c->half, s);
    if (r != RT_CU_SUCCESS) return driver_failed(r, "cuMemcpyDtoDAsync", err, errlen);
    return FUSEC_OK;
}

fusec_status rt_cuda_copy_time(int dev, size_t bytes, int reps, double *median_ms, char *err,
                               size_t errlen) {
    *median_ms = 0;
    int pushed = 0;
    if (rt_cuda_enter(dev, &pushed, err, errlen) != 0) return FUSEC_ERR_NO_DEVICE;
    const rt_cu_api *cu = rt_cuda_api();
    copy_ctx c = {0, 0, bytes / 2 ? bytes / 2 : 1};
    fusec_status st = FUSEC_OK;
    rt_cu_result r = cu->MemAlloc(&c.a, c.half);
    if (r == RT_CU_SUCCESS) r = cu->MemAlloc(&c.b, c.half);
    if (r != RT_CU_SUCCESS) {
        st = driver_failed(r, "cuMemAlloc", err, errlen);
        if (r == 2) st = FUSEC_ERR_OUT_OF_MEMORY; /* CUDA_ERROR_OUT_OF_MEMORY */
    }
    double *t = st == FUSEC_OK ? malloc(sizeof(double) * (size_t)reps) : NULL;
    if (st == FUSEC_OK && !t) st = no_memory(err, errlen);
    if (st == FUSEC_OK) st = time_runs(run_copy, &c, reps, t, err, errlen);
    if (st == FUSEC_OK) {
        *median_ms = rt_median(t, reps);
    }
    free(t);
    if (c.a) cu->MemFree(c.a);
    if (c.b) cu->MemFree(c.b);
    rt_cuda_leave(pushed);
    return st;
}

/* ---- device memory -------------------------------------------------------------------- */

fusec_status rt_cuda_mem_alloc(int dev, size_t bytes, void **ptr, char *err, size_t errlen) {
    *ptr = NULL;
    int pushed = 0;
    if (rt_cuda_enter(dev, &pushed, err, errlen) != 0) return FUSEC_ERR_NO_DEVICE;
    rt_cu_deviceptr d = 0;
    rt_cu_result r = rt_cuda_api()->MemAlloc(&d, bytes ? bytes : 1);
    rt_cuda_leave(pushed);
    if (r != RT_CU_SUCCESS) {
        fusec_status st = driver_failed(r, "cuMemAlloc", err, errlen);
        return r == 2 ? FUSEC_ERR_OUT_OF_MEMORY : st; /* CUDA_ERROR_OUT_OF_MEMORY */
    }
    *ptr = (void *)(uintptr_t)d;
    return FUSEC_OK;
}

fusec_status rt_cuda_mem_free(void *ptr, char *err, size_t errlen) {
    if (!ptr) return FUSEC_OK;
    int pushed = 0;
    int dev = rt_cuda_pointer_device(ptr);
    if (rt_cuda_enter(dev >= 0 ? dev : rt_cuda_current_device(), &pushed, err, errlen) != 0)
        return FUSEC_ERR_NO_DEVICE;
    rt_cu_result r = rt_cuda_api()->MemFree((rt_cu_deviceptr)(uintptr_t)ptr);
    rt_cuda_leave(pushed);
    if (r != RT_CU_SUCCESS) return driver_failed(r, "cuMemFree", err, errlen);
    return FUSEC_OK;
}

fusec_status rt_cuda_mem_copy(void *dst, const void *src, size_t bytes, int to_device, char *err,
                              size_t errlen) {
    if (!bytes) return FUSEC_OK;
    int pushed = 0;
    int dev = rt_cuda_pointer_device(to_device ? dst : src);
    if (rt_cuda_enter(dev >= 0 ? dev : rt_cuda_current_device(), &pushed, err, errlen) != 0)
        return FUSEC_ERR_NO_DEVICE;
    const rt_cu_api *cu = rt_cuda_api();
    const char *what = to_device ? "cuMemcpyHtoD" : "cuMemcpyDtoH";
    rt_cu_result r = to_device ? cu->MemcpyHtoD((rt_cu_deviceptr)(uintptr_t)dst, src, bytes)
                               : cu->MemcpyDtoH(dst, (rt_cu_deviceptr)(uintptr_t)src, bytes);
    /* from pageable memory, which a caller's is, cuMemcpyHtoD returns once the bytes are
     * staged, before they land ("API synchronization behavior"): the legacy stream's next work
     * comes after the copy, a non-blocking stream's (a framework's side stream,
     * fusec_bench_run's) does not, so the upload is waited for here */
    if (to_device && r == RT_CU_SUCCESS) {
        what = "cuStreamSynchronize";
        r = cu->StreamSynchronize(NULL);
    }
    rt_cuda_leave(pushed);
    if (r != RT_CU_SUCCESS) return driver_failed(r, what, err, errlen);
    return FUSEC_OK;
}

fusec_status rt_cuda_synchronize(void *stream, char *err, size_t errlen) {
    int pushed = 0;
    int dev = rt_cuda_stream_device(stream, err, errlen);
    if (dev < 0) return rt_cuda_api() ? FUSEC_ERR_INVALID_ARGUMENT : FUSEC_ERR_NO_DEVICE;
    if (rt_cuda_enter(dev, &pushed, err, errlen) != 0) return FUSEC_ERR_NO_DEVICE;
    rt_cu_result r = rt_cuda_api()->StreamSynchronize((rt_cu_stream)stream);
    rt_cuda_leave(pushed);
    if (r != RT_CU_SUCCESS) return driver_failed(r, "cuStreamSynchronize", err, errlen);
    return FUSEC_OK;
}
