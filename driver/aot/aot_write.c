/* driver/aot/aot_write.c: fusec_library_write (fusec --emit=lib): a static library and its
 * header from compiled modules. For each module, its target's backend builds its code for
 * every CPU or GPU architecture asked for (through the kernel cache) into one image
 * (runtime/aot/aot_image.h); the LLVM module writes the wrapper object holding the images and
 * the typed entry points (driver/aot/aot_wrappers.c); the archive gets that object and every
 * member of the runtime's own archive, libfusec_rt.a, found as the LLVM module is
 * (driver/locate.h), so that a program links the library with -lpthread -lm -ldl and nothing
 * of the compiler.
 */
#include "fusec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/aot/aot_image.h"
#include "driver/aot/aot_write.h"
#include "driver/cpu/cpu_jit.h"
#include "runtime/cpu/cpu_target.h"
#include "driver/cuda/nvrtc.h"
#include "driver/locate.h"
#include "driver/module.h"

#ifndef FUSEC_RT_ARCHIVE_BUILD_PATH
#define FUSEC_RT_ARCHIVE_BUILD_PATH ""
#endif
#ifndef FUSEC_RT_ARCHIVE_INSTALL_PATH
#define FUSEC_RT_ARCHIVE_INSTALL_PATH ""
#endif
#ifndef FUSEC_INSTALL_LIBDIR
#define FUSEC_INSTALL_LIBDIR "lib"
#endif

#define DEFAULT_CPUS "x86-64-v2,x86-64-v3,x86-64-v4"
#define MAX_ARCHS    24
/* The GPU architectures a CUDA library holds by default: those from sm_80 up that the
 * installed NVRTC builds for, and PTX for the newest of them. */
static const char *const default_gpus[] = {"sm_80",  "sm_86",  "sm_87",  "sm_89",  "sm_90",
                                           "sm_100", "sm_103", "sm_110", "sm_120", "sm_121"};

typedef struct lib_job {
    fusec_module *msg; /* where messages go */
    ir_arena arena;
    const char *dir, *name;
    const char *target; /* "cpu" or "cuda": every module's */
    const char *archs[MAX_ARCHS];
    int narchs;
    unsigned char **images;
    size_t *image_lens;
    int nimages;
    rt_aot_entry *entries;
    const ir_func **funcs; /* by entry */
    int32_t nentries, cap_entries, cap_funcs;
} lib_job;

static int c_identifier(const char *s) {
    if (!*s || (*s >= '0' && *s <= '9')) return 0;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

/* "DIR/NAME" into dir and name. */
static fusec_status split_path(lib_job *j, const char *path) {
    const char *slash = strrchr(path, '/');
    j->name = slash ? slash + 1 : path;
    j->dir = slash ? ir_arena_printf(&j->arena, "%.*s", (int)(slash - path), path) : ".";
    if (slash == path) j->dir = "/";
    if (!c_identifier(j->name))
        return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT,
                              "a library's name is a C identifier (it prefixes every function): "
                              "'%s' is not",
                              j->name);
    return FUSEC_OK;
}

/* One architecture the library holds: a CPU rt_cpu_target_find knows, or a GPU architecture
 * NVRTC builds for. */
static fusec_status add_arch(lib_job *j, const char *name) {
    int cuda = !strcmp(j->target, "cuda");
    if (!cuda && !rt_cpu_target_find(name))
        return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT,
                              "unknown CPU '%s' for a library (known: %s)", name,
                              rt_cpu_target_names());
    if (cuda && !rt_nvrtc_arch_valid(name))
        return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT,
                              "'%s' is not a CUDA architecture (sm_XX, sm_XXa, compute_XX)", name);
    if (cuda && rt_nvrtc_arch_supported(name) == 0)
        return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT,
                              "the installed NVRTC cannot build for %s", name);
    for (int i = 0; i < j->narchs; i++)
        if (!strcmp(j->archs[i], name)) return FUSEC_OK;
    if (j->narchs == MAX_ARCHS)
        return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT, "more than %d architectures",
                              MAX_ARCHS);
    j->archs[j->narchs++] = name;
    return FUSEC_OK;
}

/* The default GPU architectures: NVRTC's from sm_80 up, and PTX for the newest. */
static fusec_status default_archs(lib_job *j) {
    const char *newest = NULL;
    for (size_t i = 0; i < sizeof default_gpus / sizeof default_gpus[0]; i++) {
        int ok = rt_nvrtc_arch_supported(default_gpus[i]);
        if (ok < 0)
            return rt_module_fail(j->msg, FUSEC_ERR_COMPILER,
                                  "NVRTC cannot be loaded: a CUDA library needs it to be built");
        if (ok == 0) continue;
        fusec_status st = add_arch(j, default_gpus[i]);
        if (st != FUSEC_OK) return st;
        newest = default_gpus[i];
    }
    if (!newest)
        return rt_module_fail(j->msg, FUSEC_ERR_COMPILER, "NVRTC builds for no GPU from sm_80 up");
    return add_arch(j, ir_arena_printf(&j->arena, "compute_%s", newest + 3));
}

/* The architectures, comma-separated (NULL or "": the target's defaults). */
static fusec_status parse_archs(lib_job *j, const char *archs) {
    int cuda = !strcmp(j->target, "cuda");
    if (cuda && (!archs || !*archs)) return default_archs(j);
    const char *p = archs && *archs ? archs : DEFAULT_CPUS;
    while (*p) {
        size_t n = strcspn(p, ",");
        fusec_status st = add_arch(j, ir_arena_printf(&j->arena, "%.*s", (int)n, p));
        if (st != FUSEC_OK) return st;
        p += n + (p[n] == ',');
    }
    if (!j->narchs)
        return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT, "no architecture named");
    return FUSEC_OK;
}

rt_image_sig *rt_aot_signatures(ir_func *const *funcs, int nfuncs, ir_arena *a) {
    rt_image_sig *sigs = ir_arena_calloc(a, (size_t)(nfuncs ? nfuncs : 1), sizeof(*sigs));
    for (int i = 0; i < nfuncs; i++) {
        const ir_func *f = funcs[i];
        rt_image_sig *s = &sigs[i];
        s->name = f->name;
        s->nparams = f->nparams;
        s->noutputs = f->noutputs;
        s->nsyms = f->nsyms;
        s->args = ir_arena_calloc(a, (size_t)(f->nparams + f->noutputs), sizeof(rt_image_arg));
        for (int32_t p = 0; p < f->nparams; p++) {
            rt_image_arg x = {f->params[p].name, (int32_t)f->params[p].dtype, f->params[p].shape};
            s->args[p] = x;
        }
        for (int32_t o = 0; o < f->noutputs; o++) {
            rt_image_arg x = {"", (int32_t)f->outputs[o].dtype, f->outputs[o].shape};
            s->args[f->nparams + o] = x;
        }
        s->sym_names = f->syms;
        s->shapes = ir_unique_shapes(f, a, &s->nshapes);
    }
    return sigs;
}
/* Module i's image and entries. */
static fusec_status add_module(lib_job *j, fusec_module *m, int i) {
    ir_func *const *funcs;
    int nfuncs;
    if (strcmp(rt_module_target(m), j->target))
        return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT,
                              "%s was compiled for %s, the library's first file for %s",
                              rt_module_path(m), rt_module_target(m), j->target);
    fusec_status st = rt_module_library_image(m, j->archs, j->narchs, &j->images[i],
                                              &j->image_lens[i], &funcs, &nfuncs);
    if (st != FUSEC_OK) {
        if (m != j->msg)
            rt_module_fail(j->msg, st, "%s: %s", rt_module_path(m), fusec_module_message(m));
        return st;
    }
    j->nimages = i + 1;
    for (int f = 0; f < nfuncs; f++) {
        const char *sym = ir_arena_printf(&j->arena, "%s_%s", j->name, funcs[f]->name);
        for (int e = 0; e < j->nentries; e++)
            if (!strcmp(j->entries[e].symbol, sym))
                return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT,
                                      "two functions named '%s' in one library", funcs[f]->name);
        if (!strcmp(funcs[f]->name, "last_error") || !strcmp(funcs[f]->name, "target"))
            return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT,
                                  "a library's function may not be named '%s' (%s_%s is the "
                                  "library's own)",
                                  funcs[f]->name, j->name, funcs[f]->name);
        rt_aot_entry e = {sym, i, f, funcs[f]->nparams + funcs[f]->noutputs, funcs[f]->nsyms};
        int32_t n = j->nentries;
        IR_VEC_PUSH(&j->arena, j->funcs, n, j->cap_funcs, funcs[f]);
        IR_VEC_PUSH(&j->arena, j->entries, j->nentries, j->cap_entries, e);
    }
    return FUSEC_OK;
}

/* data to path, through a temporary beside it renamed over it. */
static fusec_status write_file(lib_job *j, const char *path, const void *data, size_t len) {
    char *tmp = ir_arena_printf(&j->arena, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, path) == 0) return FUSEC_OK;
    int e = errno;
    if (f) unlink(tmp);
    return rt_module_fail(j->msg, FUSEC_ERR_IO, "cannot write %s: %s", path, strerror(e ? e : EIO));
}

/* The runtime's archive (libfusec_rt.a), read whole: *data malloc'd. */
static fusec_status read_runtime(lib_job *j, unsigned char **data, size_t *len) {
    char paths[RT_LOCATE_MAX][4096];
    int n = rt_locate_candidates("FUSEC_RT_ARCHIVE", "libfusec_rt.a", FUSEC_INSTALL_LIBDIR,
                                 FUSEC_RT_ARCHIVE_BUILD_PATH, FUSEC_RT_ARCHIVE_INSTALL_PATH, paths);
    for (int i = 0; i < n; i++) {
        if (!rt_locate_exists(paths[i])) continue;
        FILE *f = fopen(paths[i], "rb");
        long size = -1;
        if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
        if (f && size > 0 && fseek(f, 0, SEEK_SET) == 0 && (*data = malloc((size_t)size)) &&
            fread(*data, 1, (size_t)size, f) == (size_t)size) {
            fclose(f);
            *len = (size_t)size;
            return FUSEC_OK;
        }
        if (f) fclose(f);
        free(*data);
        *data = NULL;
        return rt_module_fail(j->msg, FUSEC_ERR_IO, "cannot read %s", paths[i]);
    }
    return rt_module_fail(j->msg, FUSEC_ERR_IO,
                          "the runtime's archive (libfusec_rt.a) was not found beside fusec's "
                          "library, nor at $FUSEC_RT_ARCHIVE");
}

/* The wrapper object and the runtime's members into DIR/libNAME.a. */
static fusec_status write_archive(lib_job *j) {
    char err[1024];
    const rt_llvm_api *api = rt_llvm_open(err, sizeof err);
    if (!api || api->init(err, sizeof err))
        return rt_module_fail(j->msg, FUSEC_ERR_UNSUPPORTED, "%s", err);
    rt_aot_wrappers w = {j->name,       j->nimages,  (const unsigned char *const *)j->images,
                         j->image_lens, j->nentries, j->entries};
    void *obj = NULL;
    size_t objlen = 0;
    unsigned char *rt = NULL;
    size_t rtlen = 0;
    rt_ar_member *members = NULL;
    int n = 0;
    fusec_status st = FUSEC_OK;
    if (api->wrappers(&w, &obj, &objlen, err, sizeof err))
        st = rt_module_fail(j->msg, FUSEC_ERR_COMPILER, "%s", err);
    if (st == FUSEC_OK) st = read_runtime(j, &rt, &rtlen);
    if (st == FUSEC_OK && rt_ar_read(rt, rtlen, &members, &n, err, sizeof err))
        st = rt_module_fail(j->msg, FUSEC_ERR_IO, "libfusec_rt.a: %s", err);
    rt_ar_member *all = st == FUSEC_OK ? calloc((size_t)n + 1, sizeof(*all)) : NULL;
    if (st == FUSEC_OK && !all)
        st = rt_module_fail(j->msg, FUSEC_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == FUSEC_OK) {
        all[0].name = ir_arena_printf(&j->arena, "%s.o", j->name);
        all[0].data = obj;
        all[0].len = objlen;
        memcpy(all + 1, members, (size_t)n * sizeof(*all));
        const char *path = ir_arena_printf(&j->arena, "%s/lib%s.a", j->dir, j->name);
        if (rt_ar_write(path, all, n + 1, err, sizeof err))
            st = rt_module_fail(j->msg, FUSEC_ERR_IO, "%s", err);
    }
    free(all);
    rt_ar_members_free(members, n);
    free(rt);
    free(obj);
    return st;
}

static fusec_status write_library(lib_job *j, fusec_module *const *mods, int nmods,
                                  const char *path, const char *archs) {
    j->target = rt_module_target(mods[0]);
    if (strcmp(j->target, "cpu") && strcmp(j->target, "cuda"))
        return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT,
                              "a library is built for the CPU or CUDA target, not %s", j->target);
    fusec_status st = split_path(j, path);
    if (st == FUSEC_OK) st = parse_archs(j, archs);
    j->images = calloc((size_t)nmods, sizeof(*j->images));
    j->image_lens = calloc((size_t)nmods, sizeof(*j->image_lens));
    if (st == FUSEC_OK && (!j->images || !j->image_lens))
        st = rt_module_fail(j->msg, FUSEC_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < nmods && st == FUSEC_OK; i++)
        st = add_module(j, mods[i], i);
    if (st != FUSEC_OK) return st;
    ir_buf h;
    ir_buf_init(&h, &j->arena);
    rt_aot_header(&h, j->name, j->funcs, j->entries, j->nentries, j->target);
    st = write_archive(j);
    if (st == FUSEC_OK)
        st = write_file(j, ir_arena_printf(&j->arena, "%s/%s.h", j->dir, j->name), h.data,
                        (size_t)h.len);
    return st;
}

fusec_status fusec_library_write(fusec_module *const *mods, int nmods, const char *path,
                                 const char *archs) {
    if (!mods || nmods < 1 || !mods[0] || !path) return FUSEC_ERR_INVALID_ARGUMENT;
    for (int i = 0; i < nmods; i++)
        if (!mods[i]) return FUSEC_ERR_INVALID_ARGUMENT;
    lib_job j;
    memset(&j, 0, sizeof j);
    j.msg = mods[0];
    ir_arena_init(&j.arena);
    jmp_buf oom;
    fusec_status st;
    if (setjmp(oom)) {
        st = rt_module_fail(j.msg, FUSEC_ERR_OUT_OF_MEMORY, "out of memory");
    } else {
        j.arena.oom = &oom;
        st = write_library(&j, mods, nmods, path, archs);
    }
    for (int i = 0; i < j.nimages; i++)
        free(j.images[i]);
    free(j.images);
    free(j.image_lens);
    ir_arena_free(&j.arena);
    return st;
}
