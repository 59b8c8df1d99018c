/* driver/cuda/cuda_backend.c: the cuda backend: CUDA C from the code generator
 * (codegen/cuda/cuda.c), built by NVRTC (driver/cuda/nvrtc.c) through the kernel cache
 * (driver/cache.c).
 *
 * All kernels of a module are one translation unit, so one NVRTC run (one cache entry) builds
 * them all. The architecture is --arch, else the GPU's own; without either, emitting PTX or a
 * cubin uses RT_CUDA_DEFAULT_ARCH (said with -v) while building for a run fails: there is
 * nothing to run on. A GPU that NVRTC does not know (newer than the toolkit) gets PTX for the
 * newest virtual architecture NVRTC has, which the driver JIT-compiles when it loads it. With a
 * GPU, compile also loads the image (runtime/cuda/cuda_launch.c), so a built module is ready to
 * launch.
 *
 * The only state shared between modules is the cache handles: one per cache configuration,
 * opened on first use, kept for the process, behind a mutex.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/cuda/cuda.h"
#include "runtime/aot/aot_image.h"
#include "driver/backend.h"
#include "driver/cache.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_launch.h"
#include "driver/cuda/nvrtc.h"
#include "runtime/clock.h"

/* The architecture emitted without --arch and without a GPU. */
#define RT_CUDA_DEFAULT_ARCH "sm_90"

/* What building needs: the module's options (fast_math, no_cache, cache_dir, verbose), the
 * cache key's group name, where reports go (NULL: nowhere, at a launch). */
typedef struct build_env {
    fusec_options opt;
    const char *group;
    ir_buf *report;
} build_env;

/* An image built at a launch, for a device of another architecture than the first. */
typedef struct arch_image {
    int major, minor;
    void *image; /* malloc'd */
    size_t len;
} arch_image;

/* What compile hands to launch: the generated module and its image, a cubin or PTX text. */
typedef struct rt_cuda_program {
    cuda_module *module;      /* in the module's arena */
    void *cubin;              /* malloc'd; NULL when the module has no kernel */
    size_t cubin_len;         /* PTX: its length, the NUL after it not counted */
    char arch[32];            /* sm_XY, or compute_XY for PTX */
    int major, minor;         /* the device it was built for (0.0: --arch) */
    rt_cuda_gpu *gpu;         /* the module of every device */
    fusec_status load_status; /* why gpu is NULL when a device is present */
    char load_err[512];
    int device;            /* fusec_options.device: -1 any */
    ir_func *const *funcs; /* the functions' signatures, for messages */
    build_env env;         /* env.opt's strings owned (cache_dir, arch) */
    pthread_mutex_t mu;    /* extra */
    arch_image extra[RT_CUDA_MAX_DEVICES];
    int nextra;
} rt_cuda_program;

/* ---- cache handles: one per configuration, for the process ---------------------------------- */

#define RT_CUDA_MAX_CACHES 16

typedef struct cache_slot {
    char *dir; /* the explicit directory, NULL: the default */
    int off;   /* --no-cache */
    rt_cache *cache;
} cache_slot;

static pthread_mutex_t caches_mu = PTHREAD_MUTEX_INITIALIZER;
static cache_slot caches[RT_CUDA_MAX_CACHES];
static int ncaches;

/* The handle for a configuration; *owned set when it is a one-off the caller closes (the
 * table is full). NULL when memory runs out. */
static rt_cache *cache_for(const fusec_options *opt, int *owned) {
    const char *dir = opt->cache_dir && *opt->cache_dir ? opt->cache_dir : NULL;
    int off = opt->no_cache != 0;
    rt_cache_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.dir = dir;
    cfg.no_disk = off;
    cfg.no_memory = off;
    *owned = 0;
    pthread_mutex_lock(&caches_mu);
    rt_cache *c = NULL;
    for (int i = 0; i < ncaches && !c; i++)
        if (caches[i].off == off &&
            ((!dir && !caches[i].dir) || (dir && caches[i].dir && strcmp(dir, caches[i].dir) == 0)))
            c = caches[i].cache;
    if (!c) {
        c = rt_cache_open(&cfg);
        if (c && ncaches < RT_CUDA_MAX_CACHES) {
            char *d = dir ? strdup(dir) : NULL;
            if (!dir || d) {
                caches[ncaches].dir = d;
                caches[ncaches].off = off;
                caches[ncaches].cache = c;
                ncaches++;
            } else {
                *owned = 1;
            }
        } else if (c) {
            *owned = 1;
        }
    }
    pthread_mutex_unlock(&caches_mu);
    return c;
}

/* ---- building -----------------------------------------------------------------------------------
 */

/* The architecture NVRTC builds for device d: its own, or the newest virtual one NVRTC has for
 * a device newer than it (*ptx_only set: PTX, which the driver JIT-compiles at load). */
static fusec_status device_arch(const rt_cuda_device *d, char *arch, size_t len, int *ptx_only,
                                char *err, size_t errlen) {
    rt_nvrtc_status s = rt_nvrtc_pick_arch(d->major, d->minor, arch, len, ptx_only);
    if (s == RT_NVRTC_ERR_LOAD) {
        rt_nvrtc_load(err, errlen);
        return FUSEC_ERR_COMPILER;
    }
    if (s != RT_NVRTC_OK) {
        snprintf(err, errlen, "NVRTC cannot build for device %d (compute capability %d.%d)",
                 d->ordinal, d->major, d->minor);
        return FUSEC_ERR_COMPILER;
    }
    return FUSEC_OK;
}

/* The architecture to build for: --arch, else the GPU's own; else, when `allow_default`, the
 * default (noted in the report), else FUSEC_ERR_NO_DEVICE. When NVRTC does not know the GPU's
 * architecture (a GPU newer than the toolkit), the newest virtual one NVRTC has: arch
 * "compute_XY" and *ptx_only set, PTX that the driver JIT-compiles for the GPU at load. */
static fusec_status pick_arch(const rt_backend_request *req, int allow_default, char *arch,
                              size_t len, int *ptx_only, char *err, size_t errlen) {
    const fusec_options *opt = req->opt;
    *ptx_only = 0;
    if (opt->arch && *opt->arch) {
        snprintf(arch, len, "%s", opt->arch);
        return FUSEC_OK;
    }
    rt_cuda_device d;
    char why[1024];
    if (rt_cuda_probe(&d, why, sizeof why)) {
        /* the calling thread's current device (a `torchrun` rank's own) */
        int dev = opt->device >= 0 ? opt->device : rt_cuda_current_device();
        if (rt_cuda_device_info(dev, &d, err, errlen) != 0) return FUSEC_ERR_INVALID_ARGUMENT;
        fusec_status st = device_arch(&d, arch, len, ptx_only, err, errlen);
        if (st != FUSEC_OK) return st;
        if (opt->verbose && *ptx_only)
            ir_buf_printf(req->report,
                          "cuda: NVRTC does not know the GPU (sm_%d%d): building PTX for %s, "
                          "which the driver JIT-compiles\n",
                          d.major, d.minor, arch);
        else if (opt->verbose)
            ir_buf_printf(req->report, "cuda: building for %s (the GPU's)\n", arch);
        if (opt->verbose) {
            /* what starting CUDA cost this process (paid once; later modules say it again) */
            rt_cuda_startup t;
            rt_cuda_startup_times(&t);
            ir_buf_printf(req->report,
                          "time: cuda start (once a process): dlopen %s %.3f ms, cuInit %.3f ms, "
                          "device 0 %.3f ms\n",
                          t.library, t.dlopen_ms, t.init_ms, t.describe_ms);
        }
        return FUSEC_OK;
    }
    if (!allow_default) {
        snprintf(err, errlen, "%s; pass --arch=sm_XX to build without one", why);
        return FUSEC_ERR_NO_DEVICE;
    }
    snprintf(arch, len, "%s", RT_CUDA_DEFAULT_ARCH);
    if (opt->verbose)
        ir_buf_printf(req->report, "cuda: no --arch and no GPU: building for %s (the default)\n",
                      arch);
    return FUSEC_OK;
}

typedef struct build_ctx {
    const char *source;
    const char *arch;
    int fast_math, want_ptx;
    rt_nvrtc_status status;
    char *log; /* malloc'd */
} build_ctx;

static int build(void *vctx, void **out, size_t *outlen) {
    build_ctx *b = vctx;
    b->status = rt_nvrtc_compile(b->source, "fusec.cu", b->arch, b->fast_math, b->want_ptx, out,
                                 outlen, &b->log);
    return b->status != RT_NVRTC_OK;
}

/* The module's kernels as a cache key group name: "cuda:<function>,<function>,...". */
static const char *group_name(const rt_backend_request *req) {
    ir_buf g;
    ir_buf_init(&g, req->arena);
    ir_buf_puts(&g, "cuda:");
    for (int i = 0; i < req->nfuncs && g.len < 200; i++)
        ir_buf_printf(&g, "%s%s", i ? "," : "", req->funcs[i]->name);
    return g.data;
}

/* What building for req needs (its pointers valid while req is). */
static build_env req_env(const rt_backend_request *req) {
    build_env e = {*req->opt, group_name(req), req->report};
    return e;
}

/* Builds `mod` for `arch` (a cubin, or PTX) through the cache: *image malloc'd. */
static fusec_status build_cached(const build_env *env, const cuda_module *mod, const char *arch,
                                 int want_ptx, void **image, size_t *len, char *err,
                                 size_t errlen) {
    const fusec_options *opt = &env->opt;
    char options[256], compiler[4200], fusec_id[64];
    *image = NULL;
    *len = 0;
    if (rt_nvrtc_options_string(arch, opt->fast_math, want_ptx, options, sizeof options) !=
        RT_NVRTC_OK) {
        snprintf(err, errlen, "invalid CUDA architecture '%s' (expected sm_XY)", arch);
        return FUSEC_ERR_INVALID_ARGUMENT;
    }
    if (rt_nvrtc_identity(compiler, sizeof compiler) != RT_NVRTC_OK) {
        rt_nvrtc_load(err, errlen);
        return FUSEC_ERR_COMPILER;
    }
    snprintf(fusec_id, sizeof fusec_id, "%s/cuda-codegen-%d", FUSEC_VERSION_STRING,
             CUDA_CODEGEN_VERSION);
    rt_cache_key key;
    rt_cache_key_init(&key, env->group);
    rt_cache_key_part_str(&key, "source", mod->source);
    rt_cache_key_part_str(&key, "options", options);
    rt_cache_key_part_str(&key, "arch", arch);
    rt_cache_key_part_str(&key, "compiler", compiler);
    rt_cache_key_part_str(&key, "fusec", fusec_id);

    int owned = 0;
    rt_cache *c = cache_for(opt, &owned);
    if (!c) {
        snprintf(err, errlen, "out of memory opening the kernel cache");
        return FUSEC_ERR_OUT_OF_MEMORY;
    }
    const char *warning = rt_cache_warning(c);
    if (warning && env->report) ir_buf_printf(env->report, "warning: %s\n", warning);
    build_ctx b = {mod->source, arch, opt->fast_math, want_ptx, RT_NVRTC_OK, NULL};
    rt_cache_info info;
    memset(&info, 0, sizeof info);
    rt_cache_status cs = rt_cache_get_or_build(c, &key, build, &b, image, len, &info);
    if (owned) rt_cache_close(c);
    if (opt->verbose && env->report) {
        ir_buf *r = env->report;
        ir_buf_printf(r, "cuda: module [");
        for (int i = 0; i < mod->nfuncs; i++)
            ir_buf_printf(r, "%s%s (%d launch%s)", i ? ", " : "", mod->funcs[i].name,
                          (int)mod->funcs[i].nlaunches, mod->funcs[i].nlaunches == 1 ? "" : "es");
        ir_buf_printf(r, "] %s for %s: %s", want_ptx ? "PTX" : "cubin", arch,
                      info.reason[0] ? info.reason : "?");
        if (info.source == RT_CACHE_FROM_BUILD)
            ir_buf_printf(r, "; NVRTC %.1f ms\n", info.build_ms);
        else
            ir_buf_printf(r, " (%.2f ms)\n", info.lookup_ms);
    }
    fusec_status st = FUSEC_OK;
    if (cs == RT_CACHE_BUILD_FAILED) {
        if (b.status == RT_NVRTC_ERR_COMPILE) {
            /* the generated code did not compile: a bug in fusec, with NVRTC's words */
            st = FUSEC_ERR_COMPILER;
            snprintf(err, errlen, "NVRTC rejected the generated CUDA C (a fusec bug):\n%s",
                     b.log ? b.log : "");
        } else {
            st = b.status == RT_NVRTC_ERR_ARCH ? FUSEC_ERR_INVALID_ARGUMENT : FUSEC_ERR_COMPILER;
            snprintf(err, errlen, "%s: %s", rt_nvrtc_status_string(b.status),
                     b.log ? b.log : "no details");
        }
    } else if (cs == RT_CACHE_NOMEM) {
        snprintf(err, errlen, "out of memory in the kernel cache");
        st = FUSEC_ERR_OUT_OF_MEMORY;
    } else if (cs != RT_CACHE_OK) {
        snprintf(err, errlen, "the kernel cache failed (status %d)", (int)cs);
        st = FUSEC_ERR_INTERNAL;
    }
    free(b.log);
    return st;
}

static fusec_status generate(const rt_backend_request *req, cuda_module **mod, char *err,
                             size_t errlen) {
    double t0 = rt_now_ms();
    if (cuda_generate(req->arena, req->funcs, req->nfuncs, mod, err, errlen) != 0)
        return FUSEC_ERR_INTERNAL;
    if (req->opt->verbose)
        ir_buf_printf(req->report, "time: cuda codegen %.3f ms (%zu bytes of CUDA C)\n",
                      rt_now_ms() - t0, (*mod)->source_len);
    return FUSEC_OK;
}

/* ---- libraries built ahead of time --------------------------------------------------------------
 */

/* The image's CUDA part (runtime/aot/aot_image.h): the launch description (the module without
 * its source) and, for each of archs, a cubin ("sm_90") or PTX ("compute_90", its NUL counted),
 * in the request's arena. */
static fusec_status rt_cuda_library_image(const rt_backend_request *req, const char *const *archs,
                                          int narchs, rt_image *img, char *err, size_t errlen) {
    cuda_module *mod = NULL;
    fusec_status st = generate(req, &mod, err, errlen);
    if (st != FUSEC_OK) return st;
    img->target = RT_IMAGE_CUDA;
    img->cuda = *mod;
    img->cuda.source = NULL;
    img->cuda.source_len = 0;
    img->code = ir_arena_calloc(req->arena, (size_t)(narchs ? narchs : 1), sizeof(rt_image_code));
    for (int i = 0; i < narchs; i++) {
        int ptx = !strncmp(archs[i], "compute_", 8);
        const char *arch = ptx ? ir_arena_printf(req->arena, "sm_%s", archs[i] + 8) : archs[i];
        void *image = NULL;
        size_t len = 0;
        if (mod->nnames > 0) {
            build_env env = req_env(req);
            st = build_cached(&env, mod, arch, ptx, &image, &len, err, errlen);
            if (st != FUSEC_OK) return st;
        }
        char *copy = ir_arena_alloc(req->arena, len + 1);
        if (len) memcpy(copy, image, len);
        copy[len] = 0; /* PTX as cuModuleLoadData takes it: with its NUL */
        free(image);
        rt_image_code c = {archs[i], copy, len + (size_t)ptx};
        img->code[img->ncode++] = c;
    }
    return FUSEC_OK;
}

/* ---- the backend --------------------------------------------------------------------------------
 */

static int rt_cuda_available(char *why, size_t whylen) {
    return rt_cuda_probe(NULL, why, whylen);
}

static fusec_status rt_cuda_emit(const rt_backend_request *req, fusec_emit kind, ir_buf *out,
                                 char *err, size_t errlen) {
    if (kind == FUSEC_EMIT_PLAN) {
        plan_module *pm;
        if (plan_module_build(req->funcs, req->nfuncs, &cuda_plan_options, req->arena, &pm, err,
                              errlen))
            return FUSEC_ERR_INTERNAL;
        plan_print(out, pm);
        return FUSEC_OK;
    }
    cuda_module *mod = NULL;
    fusec_status st = generate(req, &mod, err, errlen);
    if (st != FUSEC_OK) return st;
    if (kind == FUSEC_EMIT_CUDA) {
        ir_buf_putn(out, mod->source, mod->source_len);
        return FUSEC_OK;
    }
    if (kind != FUSEC_EMIT_PTX && kind != FUSEC_EMIT_CUBIN) {
        snprintf(err, errlen, "the cuda backend emits cuda, ptx or cubin");
        return FUSEC_ERR_INVALID_ARGUMENT;
    }
    int want_ptx = kind == FUSEC_EMIT_PTX, ptx_only = 0;
    char arch[32];
    st = pick_arch(req, 1, arch, sizeof arch, &ptx_only, err, errlen);
    if (st != FUSEC_OK) return st;
    if (ptx_only && !want_ptx) {
        snprintf(err, errlen,
                 "NVRTC cannot make a cubin for the GPU; the newest architecture it has is %s "
                 "(PTX, which the driver JIT-compiles: --emit=ptx)",
                 arch);
        return FUSEC_ERR_COMPILER;
    }
    void *image = NULL;
    size_t len = 0;
    build_env env = req_env(req);
    st = build_cached(&env, mod, arch, want_ptx, &image, &len, err, errlen);
    if (st != FUSEC_OK) return st;
    ir_buf_putn(out, image, len);
    free(image);
    return FUSEC_OK;
}

static void rt_cuda_destroy(void *program);

/* PTX as cuModuleLoadData takes it: text with its NUL (the cache gives back the bytes only). */
static fusec_status nul_terminate(void **image, size_t len, char *err, size_t errlen) {
    char *t = realloc(*image, len + 1);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return FUSEC_ERR_OUT_OF_MEMORY;
    }
    t[len] = '\0';
    *image = t;
    return FUSEC_OK;
}

/* The options a program keeps for building at a launch: the strings it needs copied. */
static int keep_env(rt_cuda_program *p, const rt_backend_request *req) {
    p->env = req_env(req);
    p->env.report = NULL;
    p->env.opt.dump_after = p->env.opt.cpu = p->env.opt.function = NULL;
    p->env.opt.cache_dir = req->opt->cache_dir ? strdup(req->opt->cache_dir) : NULL;
    p->env.opt.arch = req->opt->arch ? strdup(req->opt->arch) : NULL;
    p->env.group = strdup(p->env.group);
    return (!req->opt->cache_dir || p->env.opt.cache_dir) && (!req->opt->arch || p->env.opt.arch) &&
           p->env.group;
}

/* The image for device d (rt_cuda_image_fn): the one compile built, when built for --arch or
 * for d's architecture; else one built now for d's (once a program: a machine with two kinds
 * of GPU builds each once, through the cache that every process shares). */
static fusec_status program_image(void *ctx, const rt_cuda_device *d, const void **image,
                                  size_t *len, char *err, size_t errlen) {
    rt_cuda_program *p = ctx;
    *image = p->cubin;
    *len = p->cubin_len;
    if (!p->module->nnames || (p->env.opt.arch && *p->env.opt.arch) ||
        (d->major == p->major && d->minor == p->minor))
        return FUSEC_OK;
    fusec_status st = FUSEC_OK;
    pthread_mutex_lock(&p->mu);
    arch_image *a = NULL;
    for (int i = 0; i < p->nextra && !a; i++)
        if (p->extra[i].major == d->major && p->extra[i].minor == d->minor) a = &p->extra[i];
    if (!a && p->nextra < RT_CUDA_MAX_DEVICES) {
        char arch[32];
        int ptx = 0;
        arch_image n = {d->major, d->minor, NULL, 0};
        st = device_arch(d, arch, sizeof arch, &ptx, err, errlen);
        if (st == FUSEC_OK)
            st = build_cached(&p->env, p->module, arch, ptx, &n.image, &n.len, err, errlen);
        if (st == FUSEC_OK && ptx) st = nul_terminate(&n.image, n.len, err, errlen);
        if (st == FUSEC_OK) {
            p->extra[p->nextra] = n;
            a = &p->extra[p->nextra++];
        } else {
            free(n.image);
        }
    }
    if (a) {
        *image = a->image;
        *len = a->len;
    } else if (st == FUSEC_OK) {
        snprintf(err, errlen, "too many kinds of GPU");
        st = FUSEC_ERR_UNSUPPORTED;
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

static rt_cuda_program *program_new(const rt_backend_request *req, cuda_module *mod,
                                    const char *arch, char *err, size_t errlen) {
    rt_cuda_program *p = calloc(1, sizeof *p);
    if (p && pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        p = NULL;
    }
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->module = mod;
    p->funcs = req->funcs;
    p->device = req->opt->device >= 0 ? req->opt->device : -1;
    snprintf(p->arch, sizeof p->arch, "%s", arch);
    if (!keep_env(p, req)) {
        snprintf(err, errlen, "out of memory");
        rt_cuda_destroy(p);
        return NULL;
    }
    return p;
}

/* Loads the program on the device it was built for (the current one, or the options'), so
 * that a built module is ready to launch there. */
static fusec_status load_now(const rt_backend_request *req, rt_cuda_program *p, char *err,
                             size_t errlen) {
    if (rt_cuda_gpu_new(p->module, program_image, p, &p->gpu, err, errlen) != FUSEC_OK)
        return FUSEC_ERR_OUT_OF_MEMORY;
    if (!rt_cuda_probe(NULL, NULL, 0)) return FUSEC_OK;
    int dev = p->device >= 0 ? p->device : rt_cuda_current_device();
    rt_cuda_device d;
    if (!(req->opt->arch && *req->opt->arch) && rt_cuda_device_info(dev, &d, err, errlen) == 0) {
        p->major = d.major;
        p->minor = d.minor;
    }
    double t0 = rt_now_ms();
    rt_cuda_load_times t = {0};
    p->load_status = rt_cuda_gpu_load(p->gpu, dev, &t, p->load_err, sizeof p->load_err);
    if (req->opt->verbose)
        ir_buf_printf(req->report,
                      "cuda: loading the kernels on device %d %.3f ms (context %.3f ms, memory "
                      "pool %.3f ms, cuModuleLoadData %.3f ms, functions %.3f ms)%s%s\n",
                      dev, rt_now_ms() - t0, t.context_ms, t.pool_ms, t.module_ms, t.functions_ms,
                      p->load_status == FUSEC_OK ? "" : ": ", p->load_err);
    /* built for the GPU's own architecture, the kernels must load; built for an --arch of the
     * caller's, the failure waits for a launch (emitting needs no device) */
    if (p->load_status != FUSEC_OK && !(req->opt->arch && *req->opt->arch)) {
        snprintf(err, errlen, "%s", p->load_err);
        return p->load_status;
    }
    return FUSEC_OK;
}

static fusec_status rt_cuda_compile(const rt_backend_request *req, void **program, char *err,
                                    size_t errlen) {
    *program = NULL;
    char arch[32];
    int ptx = 0;
    fusec_status st = pick_arch(req, 0, arch, sizeof arch, &ptx, err, errlen);
    if (st != FUSEC_OK) return st;
    cuda_module *mod = NULL;
    st = generate(req, &mod, err, errlen);
    if (st != FUSEC_OK) return st;
    rt_cuda_program *p = program_new(req, mod, arch, err, errlen);
    if (!p) return FUSEC_ERR_OUT_OF_MEMORY;
    if (mod->nnames > 0) {
        build_env env = req_env(req);
        st = build_cached(&env, mod, arch, ptx, &p->cubin, &p->cubin_len, err, errlen);
        if (st == FUSEC_OK && ptx) st = nul_terminate(&p->cubin, p->cubin_len, err, errlen);
    }
    if (st == FUSEC_OK) st = load_now(req, p, err, errlen);
    if (st != FUSEC_OK) {
        rt_cuda_destroy(p);
        return st;
    }
    *program = p;
    return FUSEC_OK;
}

/* Why nothing can run: no device. */
static fusec_status no_launch(char *err, size_t errlen) {
    char why[1024];
    if (!rt_cuda_probe(NULL, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
        return FUSEC_ERR_NO_DEVICE;
    }
    snprintf(err, errlen, "the kernels are not loaded");
    return FUSEC_ERR_INTERNAL;
}

/* The device a call of function func runs on (runtime/cuda/cuda_device.h's rule), bound to
 * `pinned` by `pinned_by` (-1: unbound), messages naming func's parameters. */
static fusec_status call_device(const rt_cuda_program *p, int func, const ir_tensor *args,
                                void *stream, int pinned, const char *pinned_by, int *dev,
                                char *err, size_t errlen) {
    const ir_func *f = p->funcs[func];
    const char *names[IR_MAX_ARGS];
    for (int i = 0; i < f->nparams && i < IR_MAX_ARGS; i++)
        names[i] = f->params[i].name;
    return rt_cuda_call_device(args, f->nparams, f->nparams + f->noutputs, names, stream, pinned,
                               pinned_by, dev, err, errlen);
}

/* The device a call of the module's function runs on. */
static fusec_status launch_device(const rt_cuda_program *p, int func, const ir_tensor *args,
                                  void *stream, int *dev, char *err, size_t errlen) {
    return call_device(p, func, args, stream, p->device, "the module (fusec_options.device)", dev,
                       err, errlen);
}

static fusec_status rt_cuda_launch(void *program, int func, const ir_tensor *args,
                                   const int64_t *syms, void *stream, char *err, size_t errlen) {
    rt_cuda_program *p = program;
    if (!p->gpu) return no_launch(err, errlen);
    int dev = 0;
    fusec_status st = launch_device(p, func, args, stream, &dev, err, errlen);
    if (st != FUSEC_OK) return st;
    return rt_cuda_gpu_launch(p->gpu, dev, func, args, syms, stream, err, errlen);
}

static void rt_cuda_destroy(void *program) {
    rt_cuda_program *p = program;
    if (!p) return;
    rt_cuda_gpu_free(p->gpu);
    for (int i = 0; i < p->nextra; i++)
        free(p->extra[i].image);
    free(p->cubin);
    free((char *)p->env.opt.cache_dir);
    free((char *)p->env.opt.arch);
    free((char *)p->env.group);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* A plan, with what its messages name. */
typedef struct cuda_plan {
    rt_cuda_plan *plan;
    const rt_cuda_program *program;
    int func;
} cuda_plan;

static fusec_status rt_cuda_plan_create_(void *program, int func, const ir_tensor *args,
                                         const int64_t *syms, void *stream, void **plan, char *err,
                                         size_t errlen) {
    rt_cuda_program *p = program;
    *plan = NULL;
    if (!p->gpu) return no_launch(err, errlen);
    int dev = 0;
    fusec_status st = launch_device(p, func, args, stream, &dev, err, errlen);
    if (st != FUSEC_OK) return st;
    cuda_plan *cp = calloc(1, sizeof *cp);
    if (!cp) {
        snprintf(err, errlen, "out of memory");
        return FUSEC_ERR_OUT_OF_MEMORY;
    }
    cp->program = p;
    cp->func = func;
    st = rt_cuda_plan_create(p->gpu, dev, func, args, syms, stream, &cp->plan, err, errlen);
    if (st != FUSEC_OK) {
        free(cp);
        return st;
    }
    *plan = cp;
    return FUSEC_OK;
}

/* A replay on a stream of the plan's device only. */
static fusec_status rt_cuda_plan_launch_(void *plan, void *stream, char *err, size_t errlen) {
    cuda_plan *cp = plan;
    int dev = 0;
    fusec_status st = rt_cuda_call_device(NULL, 0, 0, NULL, stream, rt_cuda_plan_device(cp->plan),
                                          "the plan", &dev, err, errlen);
    return st == FUSEC_OK ? rt_cuda_plan_launch(cp->plan, stream, err, errlen) : st;
}

/* New tensors for a plan: of its device (launch_device's rule, the plan's device pinned). */
static fusec_status rt_cuda_plan_rebind_(void *plan, const ir_tensor *args, char *err,
                                         size_t errlen) {
    cuda_plan *cp = plan;
    int dev = 0;
    fusec_status st = call_device(cp->program, cp->func, args, NULL, rt_cuda_plan_device(cp->plan),
                                  "the plan", &dev, err, errlen);
    return st == FUSEC_OK ? rt_cuda_plan_rebind(cp->plan, args, err, errlen) : st;
}

static void rt_cuda_plan_destroy_(void *plan) {
    cuda_plan *cp = plan;
    if (cp) rt_cuda_plan_free(cp->plan);
    free(cp);
}

static fusec_status rt_cuda_time_launches_(void *program, void *plan, int func,
                                           const ir_tensor *args, const int64_t *syms, int reps,
                                           double *times_ms, char *err, size_t errlen) {
    rt_cuda_program *p = program;
    if (!p->gpu) return no_launch(err, errlen);
    int dev = 0;
    fusec_status st = launch_device(p, func, args, NULL, &dev, err, errlen);
    if (st != FUSEC_OK) return st;
    rt_cuda_plan *rp = plan ? ((cuda_plan *)plan)->plan : NULL;
    return rt_cuda_time_launches(p->gpu, dev, rp, func, args, syms, reps, times_ms, err, errlen);
}

/* The copy's time and memory on the module's device (fusec_options.device), else on the
 * calling thread's current device (where cudaMalloc allocates). */
static fusec_status rt_cuda_copy_time_(int device, size_t bytes, int reps, double *median_ms,
                                       char *err, size_t errlen) {
    return rt_cuda_copy_time(device >= 0 ? device : rt_cuda_current_device(), bytes, reps,
                             median_ms, err, errlen);
}

static fusec_status rt_cuda_mem_alloc_(int device, size_t bytes, void **ptr, char *err,
                                       size_t errlen) {
    return rt_cuda_mem_alloc(device >= 0 ? device : rt_cuda_current_device(), bytes, ptr, err,
                             errlen);
}

/* --arch names a CUDA architecture, whatever the target. */
static fusec_status cuda_resolve_options(const fusec_options *opt, const void **resolved, char *err,
                                         size_t errlen) {
    *resolved = NULL;
    if (opt->device < -1) {
        snprintf(err, errlen, "device %d is not a CUDA device ordinal (-1: any)", opt->device);
        return FUSEC_ERR_INVALID_ARGUMENT;
    }
    if (opt->arch && *opt->arch && !rt_nvrtc_arch_valid(opt->arch)) {
        snprintf(err, errlen, "arch '%s' is not a CUDA architecture (sm_XX, sm_XXa, compute_XX)",
                 opt->arch);
        return FUSEC_ERR_INVALID_ARGUMENT;
    }
    return FUSEC_OK;
}

const rt_backend rt_backend_cuda = {
    .name = "cuda",
    .target = FUSEC_TARGET_CUDA,
    .available = rt_cuda_available,
    .resolve_options = cuda_resolve_options,
    .emit = rt_cuda_emit,
    .library_image = rt_cuda_library_image,
    .compile = rt_cuda_compile,
    .launch = rt_cuda_launch,
    .destroy = rt_cuda_destroy,
    .copy_time = rt_cuda_copy_time_,
    .mem_alloc = rt_cuda_mem_alloc_,
    .mem_free = rt_cuda_mem_free,
    .mem_copy = rt_cuda_mem_copy,
    .synchronize = rt_cuda_synchronize,
    .plan_create = rt_cuda_plan_create_,
    .plan_launch = rt_cuda_plan_launch_,
    .plan_rebind = rt_cuda_plan_rebind_,
    .plan_destroy = rt_cuda_plan_destroy_,
    .time_launches = rt_cuda_time_launches_,
};
