/* driver/cpu/cpu_backend.c: the CPU backend (rt_backend_cpu): every kernel of the partition as
 * LLVM-generated code (codegen/cpu/llvm.c), built for the host CPU through the disk cache, run on
 * all cores by the thread pool (runtime/cpu/threadpool.c).
 *
 * Compiling plans the module (codegen/cpu/llvm_plan.c, plain C), keys the cache with the printed
 * partitions, the options, the host CPU (CPUID), LLVM's version and a hash of the code
 * generator's sources, and looks the object code up. On a miss, libfusec_llvm.so (LLVM and
 * codegen/cpu/llvm*.c, driver/cpu/cpu_jit.c) is loaded and builds the object. On x86-64 Linux
 * runtime/cpu/cpu_elf.c loads every object, built or found, so that a process that finds its
 * kernels in the cache never loads LLVM at all; elsewhere ORC LLJIT does (FUSEC_CPU_LOADER=orc|elf
 * forces either loader, for tests). Modules that fusec's loader loads call the short rows' copy
 * functions instead of holding them: each is an object of its own, built once for the target,
 * cached like a module and loaded once a process (copy_resolve).
 *
 * Launches are runtime/cpu/cpu_launch.c's (libfusec_rt), from a description of the planned
 * module (`describe`), as a library built ahead of time runs them.
 *
 * Built without LLVM (-DFUSEC_LLVM=OFF), the backend reports itself unavailable.
 */
#include <stdio.h>

#include "driver/backend.h"
#include "runtime/cpu/cpu_target.h"

#if FUSEC_HAVE_LLVM

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cpu/llvm.h"
#include "llvm_codegen_hash.h" /* generated: LLVM_CODEGEN_SOURCE_HASH */
#include "driver/cache.h"
#include "runtime/cpu/cpu_elf.h"
#include "runtime/aot/aot_image.h"
#include "driver/cpu/cpu_jit.h"
#include "runtime/cpu/cpu_launch.h"
#include "runtime/clock.h"

#ifndef FUSEC_LLVM_VERSION
#define FUSEC_LLVM_VERSION "?"
#endif

/* A compiled module: its code, loaded by LLVM's JIT or by fusec's own loader, and the
 * program that runs it (runtime/cpu/cpu_launch.c). */
typedef struct cpu_program {
    const rt_llvm_api *api; /* with jit */
    rt_jit *jit;            /* loaded by LLVM's JIT, or */
    rt_elf **elf;           /* by fusec's own loader: an object, or each of a split build's */
    int nelf;
    rt_cpu_program *run;
} cpu_program;

/* Available when the LLVM module is there to build kernels (its presence is checked, it is
 * not loaded: --target=auto must stay cheap). */
static int cpu_available(char *why, size_t whylen) {
    if (rt_llvm_present()) return 1;
    char err[512];
    if (!rt_llvm_open(err, sizeof err)) snprintf(why, whylen, "%s", err);
    return 0;
}

/* The LLVM module, loaded and initialized (LLVM's targets registered); NULL with err. */
static const rt_llvm_api *llvm_ready(char *err, size_t errlen) {
    const rt_llvm_api *api = rt_llvm_open(err, errlen);
    return api && api->init(err, errlen) == 0 ? api : NULL;
}

/* The options and the identity of the CPU the code is for (a cache key part): a named CPU's
 * from the table; the host's from CPUID where fusec can load objects itself (so a cache hit
 * needs no LLVM), else from LLVM. */
static int target_setup(const rt_backend_request *req, llvm_gen_options *o, const char **arch,
                        char *err, size_t errlen) {
    memset(o, 0, sizeof(*o));
    o->fast_math = req->opt && req->opt->fast_math;
    const rt_cpu_target *cpu = req->resolved; /* cpu_resolve_options's: NULL, the host */
    if (cpu) {
        o->f16c = cpu->f16c;
        o->x86 = 1;
        o->vector_bytes = cpu->vector_bytes;
        o->fma = (cpu->needs & ((rt_cpu_features)1 << RT_CPU_F_FMA)) != 0;
        o->cpu = cpu->llvm_cpu;
        o->cpu_features = cpu->llvm_features;
        *arch = ir_arena_printf(req->arena, "cpu %s: %s %s", cpu->name, o->cpu, o->cpu_features);
        return 0;
    }
    if (rt_elf_supported() && *rt_cpu_host_id()) {
        o->f16c = rt_cpu_host_f16c();
        o->x86 = 1;
        o->vector_bytes = rt_cpu_host_vector_bytes();
        o->fma = (rt_cpu_host_features() & ((rt_cpu_features)1 << RT_CPU_F_FMA)) != 0;
        *arch = rt_cpu_host_id();
        return 0;
    }
    const rt_llvm_api *api = llvm_ready(err, errlen);
    if (!api) return -1;
    api->host_options(o);
    *arch = ir_arena_printf(req->arena, "%s %s", api->cpu_name(), api->cpu_features());
    return 0;
}

/* What emitting and compiling both start from: the module's plan, and the options and the
 * identity of the CPU it is for. */
static fusec_status plan_for_target(const rt_backend_request *req, llvm_module_meta **meta,
                                    llvm_gen_options *o, const char **arch, char *err,
                                    size_t errlen) {
    if (llvm_plan_module(req->funcs, req->nfuncs, req->arena, meta, err, errlen))
        return FUSEC_ERR_INTERNAL;
    if (target_setup(req, o, arch, err, errlen)) return FUSEC_ERR_UNSUPPORTED;
    return FUSEC_OK;
}

static fusec_status cpu_emit(const rt_backend_request *req, fusec_emit kind, ir_buf *out, char *err,
                             size_t errlen) {
    if (kind == FUSEC_EMIT_PLAN) {
        llvm_module_meta *meta;
        if (llvm_plan_module(req->funcs, req->nfuncs, req->arena, &meta, err, errlen))
            return FUSEC_ERR_INTERNAL;
        plan_print(out, meta->plan);
        return FUSEC_OK;
    }
    if (kind != FUSEC_EMIT_LLVM) {
        snprintf(err, errlen, "the cpu backend emits LLVM IR and its plan only");
        return FUSEC_ERR_UNSUPPORTED;
    }
    const rt_llvm_api *api = llvm_ready(err, errlen);
    if (!api) return FUSEC_ERR_UNSUPPORTED;
    llvm_module_meta *meta;
    llvm_gen_options o;
    const char *arch;
    fusec_status st = plan_for_target(req, &meta, &o, &arch, err, errlen);
    if (st != FUSEC_OK) return st;
    if (api->print_ir(meta, &o, req->arena, out, err, errlen)) return FUSEC_ERR_COMPILER;
    return FUSEC_OK;
}

/* ---- building ------------------------------------------------------------------------------ */

typedef struct build_ctx {
    const llvm_module_meta *meta;
    const llvm_gen_options *opt;
    ir_arena *arena;
    rt_jit_times times;
    char err[512];
} build_ctx;

/* Builds on a miss: only now is LLVM loaded. */
static int build_cb(void *ctx, void **out, size_t *outlen) {
    build_ctx *b = ctx;
    const rt_llvm_api *api = llvm_ready(b->err, sizeof b->err);
    if (!api) return -1;
    return api->build(b->meta, b->opt, b->arena, out, outlen, &b->times, b->err, sizeof b->err);
}

/* A cache key's parts after the source: the options, the CPU, LLVM's version and fusec's. */
static void key_common(const rt_backend_request *req, const llvm_gen_options *o, const char *arch,
                       rt_cache_key *k) {
    rt_cache_key_part_str(k, "options",
                          ir_arena_printf(req->arena, "O3%s%s v%d%s",
                                          o->fast_math ? " fast-math" : "", o->f16c ? " f16c" : "",
                                          o->vector_bytes,
                                          o->shared_copies ? " shared-copies" : ""));
    rt_cache_key_part_str(k, "arch", arch);
    rt_cache_key_part_str(k, "compiler", "LLVM " FUSEC_LLVM_VERSION);
    /* the hash covers codegen/cpu/llvm*.[ch] (the math's source included) and driver/cpu/cpu_jit.c
     */
    rt_cache_key_part_str(k, "fusec",
                          ir_arena_printf(req->arena, "%s/%s-%s", FUSEC_VERSION_STRING,
                                          LLVM_CODEGEN_VERSION, LLVM_CODEGEN_SOURCE_HASH));
}

/* The cache key: the partitions (which decide the generated code, with the codegen and math
 * versions), the options, the host CPU, LLVM's version and fusec's. */
static void make_key(const rt_backend_request *req, const llvm_gen_options *o, const char *arch,
                     rt_cache_key *k) {
    ir_buf src, grp;
    ir_buf_init(&src, req->arena);
    ir_buf_init(&grp, req->arena);
    ir_buf_puts(&grp, "cpu:");
    for (int i = 0; i < req->nfuncs; i++) {
        ir_print_func(&src, req->funcs[i]);
        if (grp.len < 200) ir_buf_printf(&grp, "%s%s", i ? "," : "", req->funcs[i]->name);
    }
    rt_cache_key_init(k, grp.data);
    rt_cache_key_part_str(k, "source", src.data);
    key_common(req, o, arch, k);
}

static void cpu_destroy(void *program) {
    cpu_program *p = program;
    if (!p) return;
    rt_cpu_program_free(p->run);
    if (p->jit) p->api->free(p->jit);
    for (int i = 0; i < p->nelf; i++)
        rt_elf_free(p->elf[i]);
    free(p->elf);
    free(p);
}

static void *jit_lookup(void *code, const char *name, char *err, size_t errlen) {
    const cpu_program *p = code;
    return p->api->lookup(p->jit, name, err, errlen);
}

/* Symbol `name` in the objects p has loaded (a split build's parts in order), or NULL. */
static void *parts_lookup(const cpu_program *p, const char *name) {
    void *addr = NULL;
    for (int i = 0; i < p->nelf && !addr; i++)
        addr = rt_elf_lookup(p->elf[i], name);
    return addr;
}

static void *elf_lookup(void *code, const char *name, char *err, size_t errlen) {
    void *addr = parts_lookup(code, name);
    if (!addr) snprintf(err, errlen, "cached object code lacks %s", name);
    return addr;
}

/* Which loader loads a module's objects: FUSEC_CPU_LOADER=orc|elf forces either (for tests). */
static int use_elf_loader(void) {
    const char *loader = getenv("FUSEC_CPU_LOADER");
    if (loader && !strcmp(loader, "orc")) return 0;
    return rt_elf_supported();
}

/* ---- the copy functions of short rows ----------------------------------------------------
 * Modules that fusec's loader loads are built with shared_copies: their narrow kernels call the
 * copy functions (LLVM_NARROW_COPY_PREFIX...) instead of holding them, and the loader finds
 * them here (copy_resolve): each built once for its target (through the disk cache, keyed like
 * a module) and loaded for the process's lifetime, behind a lock. */

typedef struct copy_obj {
    struct copy_obj *next;
    char *key; /* the target (arch, vector bytes) and the function's name */
    rt_elf *elf;
    void *addr;
} copy_obj;

static pthread_mutex_t copies_lock = PTHREAD_MUTEX_INITIALIZER;
static copy_obj *copies; /* never freed: the process's code may call them until it ends */

typedef struct copy_ctx {
    const rt_backend_request *req;
    const llvm_gen_options *o;
    const char *arch;
    const char *name; /* the function being built */
    char err[512];
} copy_ctx;

static int copy_build_cb(void *ctx, void **out, size_t *outlen) {
    copy_ctx *c = ctx;
    const rt_llvm_api *api = llvm_ready(c->err, sizeof c->err);
    if (!api) return -1;
    rt_jit_times times;
    return api->build_copy(c->name, c->o, c->req->arena, out, outlen, &times, c->err,
                           sizeof c->err);
}

static fusec_status fetch_cached(const rt_backend_request *req, const rt_cache_key *key,
                                 rt_cache_build_fn build, void *ctx, const char *build_err,
                                 void **obj, size_t *len, char *err, size_t errlen);
/* The address of copy function `name` for the target of c, built, found in the cache or loaded
 * before; NULL with err. Called with copies_lock held. */
static void *copy_get(copy_ctx *c, const char *key, char *err, size_t errlen) {
    for (copy_obj *o = copies; o; o = o->next)
        if (!strcmp(o->key, key)) return o->addr;
    void *obj = NULL;
    size_t len = 0;
    rt_backend_request quiet = *c->req; /* the module's fetch reports on the cache */
    quiet.report = NULL;
    rt_cache_key k;
    rt_cache_key_init(&k, ir_arena_printf(c->req->arena, "cpu:%s", c->name));
    rt_cache_key_part_str(&k, "source", c->name);
    key_common(c->req, c->o, c->arch, &k);
    if (fetch_cached(&quiet, &k, copy_build_cb, c, c->err, &obj, &len, err, errlen) != FUSEC_OK)
        return NULL;
    copy_obj *o = calloc(1, sizeof *o);
    size_t kl = strlen(key) + 1;
    if (o) o->key = malloc(kl);
    if (o && o->key) {
        memcpy(o->key, key, kl);
        o->elf = rt_elf_load(obj, len, err, errlen);
    } else {
        snprintf(err, errlen, "out of memory");
    }
    free(obj);
    if (o && o->elf && !(o->addr = rt_elf_lookup(o->elf, c->name)))
        snprintf(err, errlen, "the object of %s lacks it", c->name);
    if (!o || !o->addr) {
        if (o) rt_elf_free(o->elf), free(o->key), free(o);
        return NULL;
    }
    o->next = copies;
    copies = o;
    return o->addr;
}

/* rt_elf_resolver for a module's objects: the copy functions, for the module's target. */
static void *copy_resolve(void *ctx, const char *name, int *failed, char *err, size_t errlen) {
    copy_ctx *c = ctx;
    if (strncmp(name, LLVM_NARROW_COPY_PREFIX, strlen(LLVM_NARROW_COPY_PREFIX)) != 0) return NULL;
    char *key = ir_arena_printf(c->req->arena, "%s v%d %s", c->arch, c->o->vector_bytes, name);
    c->name = name;
    pthread_mutex_lock(&copies_lock);
    void *addr = copy_get(c, key, err, errlen);
    pthread_mutex_unlock(&copies_lock);
    if (!addr) *failed = 1;
    return addr;
}

/* The objects of a cached blob into objs and lens: the parts of a split build (cpu_jit.h), or
 * the blob itself. Their number, or -1 with err when the blob's parts do not fit in it. */
static int unpack(const void *blob, size_t len, const void **objs, size_t *lens, char *err,
                  size_t errlen) {
    const unsigned char *b = blob;
    if (len < 16 || memcmp(b, RT_JIT_OBJS_MAGIC, 8) != 0) {
        objs[0] = blob;
        lens[0] = len;
        return 1;
    }
    uint64_t n;
    memcpy(&n, b + 8, 8);
    if (n < 1 || n > RT_JIT_OBJS_MAX || len < RT_JIT_OBJS_HEADER(n)) goto bad;
    size_t at = RT_JIT_OBJS_HEADER(n);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t l;
        memcpy(&l, b + 16 + 8 * i, 8);
        at = RT_JIT_OBJS_ALIGN(at);
        if (at > len || l > len - at) goto bad;
        objs[i] = b + at;
        lens[i] = (size_t)l;
        at += (size_t)l;
    }
    return (int)n;
bad:
    snprintf(err, errlen, "cached object code: a blob of parts that do not fit in its %zu bytes",
             len);
    return -1;
}

/* rt_elf_resolver for the parts of a split build: what the parts loaded before define (a
 * kernel's entry, in the last part, calls its bodies in the others), then the copy functions. */
typedef struct parts_ctx {
    const cpu_program *p;
    copy_ctx *cc;
} parts_ctx;

static void *parts_resolve(void *ctx, const char *name, int *failed, char *err, size_t errlen) {
    parts_ctx *c = ctx;
    void *addr = parts_lookup(c->p, name);
    return addr ? addr : copy_resolve(c->cc, name, failed, err, errlen);
}

/* Loads the object code (freed here): fusec's own loader where it runs (x86-64 Linux), else
 * LLVM's JIT. Not ORC where fusec's loader runs, even with LLVM in the process: its memory
 * manager maps code and read-only data apart, and in a process whose address space is crowded
 * (Python with PyTorch) they landed over 2 GB apart, where a small-model PC-relative
 * relocation cannot reach; RuntimeDyld truncated it without a word and the kernel's first
 * constant load faulted (tests/package/test_torch_op.py, one cold run in five once the module
 * grew to 1.3 MB). fusec's loader maps an object in one piece and refuses a relocation out of
 * range. cc: the module's target, for the copy functions. 0, or -1 with err. */
static int load(cpu_program *p, void *obj, size_t len, copy_ctx *cc, char *err, size_t errlen) {
    const void *objs[RT_JIT_OBJS_MAX];
    size_t lens[RT_JIT_OBJS_MAX];
    int n = unpack(obj, len, objs, lens, err, errlen);
    if (n > 0 && use_elf_loader()) {
        parts_ctx pc = {p, cc};
        if ((p->elf = calloc((size_t)n, sizeof *p->elf)))
            for (p->nelf = 0; p->nelf < n; p->nelf++)
                if (!(p->elf[p->nelf] = rt_elf_load_with(objs[p->nelf], lens[p->nelf],
                                                         parts_resolve, &pc, err, errlen)))
                    break;
        if (!p->elf) snprintf(err, errlen, "out of memory");
    } else if (n == 1) {
        p->api = llvm_ready(err, errlen);
        if (p->api) p->jit = p->api->load(obj, len, err, errlen);
    } else if (n > 1) {
        snprintf(err, errlen, "cached object code in %d parts needs fusec's loader", n);
    }
    free(obj);
    return p->jit || (p->nelf && p->nelf == n) ? 0 : -1;
}

/* What a launch needs of the planned module (runtime/cpu/cpu_launch.h), in `arena`. */
static rt_cpu_module *describe(const llvm_module_meta *meta, ir_arena *arena) {
    rt_cpu_module *m = ir_arena_calloc(arena, 1, sizeof(*m));
    m->nfuncs = meta->nfuncs;
    m->funcs =
        ir_arena_calloc(arena, (size_t)(meta->nfuncs ? meta->nfuncs : 1), sizeof(rt_cpu_func));
    for (int32_t i = 0; i < meta->nfuncs; i++) {
        const llvm_func_meta *fm = &meta->funcs[i];
        const plan_func *pf = fm->plan;
        rt_cpu_func *f = &m->funcs[i];
        f->name = fm->func->name;
        f->nparams = fm->func->nparams;
        f->noutputs = fm->func->noutputs;
        f->nsyms = fm->func->nsyms;
        f->nbufs = pf->nbufs;
        f->bufs = ir_arena_calloc(arena, (size_t)(pf->nbufs ? pf->nbufs : 1), sizeof(rt_cpu_buf));
        for (int32_t b = 0; b < pf->nbufs; b++) {
            rt_cpu_buf x = {pf->bufs[b].kind, pf->bufs[b].index, ir_dtypes[pf->bufs[b].dtype].bytes,
                            pf->bufs[b].shape};
            f->bufs[b] = x;
        }
        f->nchecks = pf->nchecks;
        f->checks =
            ir_arena_calloc(arena, (size_t)(pf->nchecks ? pf->nchecks : 1), sizeof(rt_cpu_check));
        for (int32_t c = 0; c < pf->nchecks; c++) {
            f->checks[c].op = ir_ops[pf->checks[c].op].name;
            f->checks[c].shape = pf->checks[c].shape;
        }
        f->inplace_hazard = pf->inplace_hazard;
        f->nkernels = fm->nkernels;
        f->kernels = fm->kernels;
    }
    return m;
}

/* Whether code for cpu cannot run here: then why, in msg. */
static int refused(const rt_cpu_target *cpu, char *msg, size_t len) {
    char lack[256];
    int n = rt_cpu_target_missing(cpu, lack, sizeof lack);
    if (n == 0) return 0;
    snprintf(msg, len,
             "the kernels were built for %s, whose instructions this CPU lacks (%s); they are "
             "never run here",
             cpu->name, lack);
    return 1;
}

/* The object code of key from the cache, or built by build(ctx) (and cached; build_err: its
 * message on failure; with the request's no_cache, built and not cached): *obj malloc'd. */
static fusec_status fetch_cached(const rt_backend_request *req, const rt_cache_key *key,
                                 rt_cache_build_fn build, void *ctx, const char *build_err,
                                 void **obj, size_t *len, char *err, size_t errlen) {
    const fusec_options *opt = req->opt;
    int verbose = opt && opt->verbose && req->report;
    if (opt && opt->no_cache) {
        if (build(ctx, obj, len) != 0) {
            snprintf(err, errlen, "%s", build_err);
            return FUSEC_ERR_COMPILER;
        }
        if (verbose) ir_buf_printf(req->report, "cpu: cache off\n");
        return FUSEC_OK;
    }
    rt_cache_config cfg = {opt ? opt->cache_dir : NULL, 0, 0, 0};
    rt_cache *cache = rt_cache_open(&cfg);
    if (!cache) {
        snprintf(err, errlen, "out of memory");
        return FUSEC_ERR_OUT_OF_MEMORY;
    }
    rt_cache_info info;
    rt_cache_status cs = rt_cache_get_or_build(cache, key, build, ctx, obj, len, &info);
    const char *warn = rt_cache_warning(cache);
    if (warn && req->report) ir_buf_printf(req->report, "warning: %s\n", warn);
    if (verbose) ir_buf_printf(req->report, "cpu: cache %s\n", info.reason);
    rt_cache_close(cache);
    if (cs == RT_CACHE_BUILD_FAILED) {
        snprintf(err, errlen, "%s", build_err);
        return FUSEC_ERR_COMPILER;
    }
    if (cs != RT_CACHE_OK) {
        snprintf(err, errlen, "kernel cache: %s",
                 cs == RT_CACHE_NOMEM ? "out of memory" : "invalid key");
        return cs == RT_CACHE_NOMEM ? FUSEC_ERR_OUT_OF_MEMORY : FUSEC_ERR_INTERNAL;
    }
    return FUSEC_OK;
}

/* The module's object code for the CPU of o and arch, from the cache or built (and cached):
 * *obj malloc'd. bc: the build's context, its times filled in when it built. */
static fusec_status fetch_object(const rt_backend_request *req, const llvm_gen_options *o,
                                 const char *arch, build_ctx *bc, void **obj, size_t *len,
                                 char *err, size_t errlen) {
    rt_cache_key key;
    make_key(req, o, arch, &key);
    return fetch_cached(req, &key, build_cb, bc, bc->err, obj, len, err, errlen);
}

static fusec_status cpu_compile(const rt_backend_request *req, void **program, char *err,
                                size_t errlen) {
    const rt_cpu_target *cpu = req->resolved; /* NULL: the host */
    *program = NULL;
    const fusec_options *opt = req->opt;
    int verbose = opt && opt->verbose && req->report;
    double t0 = rt_now_ms();
    llvm_module_meta *meta;
    llvm_gen_options o;
    const char *arch;
    fusec_status st = plan_for_target(req, &meta, &o, &arch, err, errlen);
    if (st != FUSEC_OK) return st;
    o.shared_copies = use_elf_loader();
    build_ctx bc = {meta, &o, req->arena, {0, 0, 0, 0}, ""};
    void *obj = NULL;
    size_t len = 0;
    double t1 = rt_now_ms();
    st = fetch_object(req, &o, arch, &bc, &obj, &len, err, errlen);
    if (st != FUSEC_OK) return st;
    double t2 = rt_now_ms();
    if (verbose)
        ir_buf_printf(req->report,
                      "cpu: code for %s (%d-byte vectors); results of %.0f bytes or more "
                      "stream\n",
                      cpu ? cpu->name : "this host's CPU", o.vector_bytes,
                      rt_cpu_stream_min_bytes());
    cpu_program *p = calloc(1, sizeof(*p));
    if (!p) {
        free(obj);
        snprintf(err, errlen, "out of memory");
        return FUSEC_ERR_OUT_OF_MEMORY;
    }
    const rt_cpu_module *desc = describe(meta, req->arena);
    char refusal[512] = "";
    if (cpu && refused(cpu, refusal, sizeof refusal)) {
        free(obj);
        if (!(p->run =
                  rt_cpu_program_new(desc, o.vector_bytes, NULL, NULL, refusal, err, errlen))) {
            cpu_destroy(p);
            return FUSEC_ERR_OUT_OF_MEMORY;
        }
        *program = p;
        if (verbose) ir_buf_printf(req->report, "cpu: built, not loaded: %s\n", refusal);
        return FUSEC_OK;
    }
    copy_ctx cc = {req, &o, arch, NULL, ""};
    if (load(p, obj, len, &cc, err, errlen) ||
        !(p->run = rt_cpu_program_new(desc, o.vector_bytes, p->jit ? jit_lookup : elf_lookup, p,
                                      NULL, err, errlen))) {
        cpu_destroy(p);
        return FUSEC_ERR_COMPILER;
    }
    double t3 = rt_now_ms();
    if (verbose) {
        if (bc.times.gen + bc.times.opt > 0)
            ir_buf_printf(req->report,
                          "cpu: build: generate %.3f ms, link math %.3f ms, O3 %.3f ms, "
                          "codegen %.3f ms\n",
                          bc.times.gen, bc.times.link, bc.times.opt, bc.times.emit);
        ir_buf_printf(req->report,
                      "cpu: plan %.3f ms, build or cache %.3f ms, load %.3f ms (%zu bytes of "
                      "object code%s, loaded by %s)\n",
                      t1 - t0, t2 - t1, t3 - t2, len,
                      p->nelf > 1 ? ir_arena_printf(req->arena, " in %d parts", p->nelf) : "",
                      p->nelf ? "fusec" : "LLVM ORC LLJIT");
    }
    *program = p;
    return st;
}

/* ---- libraries built ahead of time -------------------------------------------------------- */

/* The image's CPU part (runtime/aot/aot_image.h): the launch description and an object for
 * each CPU, in the request's arena. */
static fusec_status cpu_library_image(const rt_backend_request *req, const char *const *archs,
                                      int narchs, rt_image *img, char *err, size_t errlen) {
    img->target = RT_IMAGE_CPU;
    img->code = ir_arena_calloc(req->arena, (size_t)(narchs ? narchs : 1), sizeof(rt_image_code));
    for (int i = 0; i < narchs; i++) {
        rt_backend_request r = *req;
        if (!(r.resolved = rt_cpu_target_find(archs[i]))) {
            snprintf(err, errlen, "unknown CPU '%s' (known: %s)", archs[i], rt_cpu_target_names());
            return FUSEC_ERR_INVALID_ARGUMENT;
        }
        llvm_module_meta *meta;
        llvm_gen_options o;
        const char *arch;
        fusec_status st = plan_for_target(&r, &meta, &o, &arch, err, errlen);
        if (st != FUSEC_OK) return st;
        if (i == 0) img->cpu = *describe(meta, req->arena);
        build_ctx bc = {meta, &o, req->arena, {0, 0, 0, 0}, ""};
        void *obj = NULL;
        size_t len = 0;
        st = fetch_object(&r, &o, arch, &bc, &obj, &len, err, errlen);
        if (st != FUSEC_OK) return st;
        void *copy = ir_arena_alloc(req->arena, len ? len : 1);
        memcpy(copy, obj, len);
        free(obj);
        rt_image_code c = {archs[i], copy, len};
        img->code[img->ncode++] = c;
    }
    return FUSEC_OK;
}

/* ---- launching ----------------------------------------------------------------------------- */

static fusec_status cpu_launch(void *program, int func, const ir_tensor *args, const int64_t *syms,
                               void *stream, char *err, size_t errlen) {
    (void)stream; /* CPU launches complete before they return */
    cpu_program *p = program;
    return rt_cpu_run(p ? p->run : NULL, func, args, syms, err, errlen);
}

static fusec_status cpu_copy_time(int device, size_t bytes, int reps, double *median_ms, char *err,
                                  size_t errlen) {
    (void)device;
    return rt_cpu_copy_time(bytes, reps, median_ms, err, errlen);
}

#else /* !FUSEC_HAVE_LLVM */

static int cpu_available(char *why, size_t whylen) {
    snprintf(why, whylen,
             "the cpu backend is not part of this build of fusec (built without LLVM)");
    return 0;
}

static fusec_status cpu_emit(const rt_backend_request *req, fusec_emit kind, ir_buf *out, char *err,
                             size_t errlen) {
    (void)req, (void)kind, (void)out;
    cpu_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

static fusec_status cpu_compile(const rt_backend_request *req, void **program, char *err,
                                size_t errlen) {
    (void)req;
    *program = NULL;
    cpu_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

static fusec_status cpu_launch(void *program, int func, const ir_tensor *args, const int64_t *syms,
                               void *stream, char *err, size_t errlen) {
    (void)program, (void)func, (void)args, (void)syms, (void)stream;
    cpu_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

static void cpu_destroy(void *program) {
    (void)program;
}

static fusec_status cpu_library_image(const rt_backend_request *req, const char *const *archs,
                                      int narchs, struct rt_image *img, char *err, size_t errlen) {
    (void)req, (void)archs, (void)narchs, (void)img;
    cpu_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

static fusec_status cpu_copy_time(int device, size_t bytes, int reps, double *median_ms, char *err,
                                  size_t errlen) {
    (void)device, (void)bytes, (void)reps;
    *median_ms = 0;
    cpu_available(err, errlen);
    return FUSEC_ERR_UNSUPPORTED;
}

#endif

/* The CPU --cpu names (NULL: the host's), or its misspelling refused: with or without LLVM,
 * a misspelling is an error where it is made. */
static fusec_status cpu_resolve_options(const fusec_options *opt, const void **resolved, char *err,
                                        size_t errlen) {
    const rt_cpu_target *t = NULL;
    *resolved = NULL;
    if (rt_cpu_target_resolve(opt->cpu, &t, err, errlen) != 0) return FUSEC_ERR_INVALID_ARGUMENT;
    *resolved = t;
    return FUSEC_OK;
}

const rt_backend rt_backend_cpu = {
    .name = "cpu",
    .target = FUSEC_TARGET_CPU,
    .available = cpu_available,
    .resolve_options = cpu_resolve_options,
    .emit = cpu_emit,
    .library_image = cpu_library_image,
    .compile = cpu_compile,
    .launch = cpu_launch,
    .destroy = cpu_destroy,
    .copy_time = cpu_copy_time,
    .mem_alloc = rt_host_mem_alloc,
    .mem_free = rt_host_mem_free,
    .mem_copy = rt_host_mem_copy,
    .synchronize = rt_host_synchronize,
};
