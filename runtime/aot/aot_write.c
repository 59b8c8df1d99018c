/* runtime/aot/aot_write.c: fusec_library_write (fusec --emit=lib): a static library and its
 * header from compiled modules. For each module, the CPU backend builds its code for every
 * CPU asked for (through the kernel cache) into one image (runtime/cpu/cpu_image.h); the LLVM
 * module writes the wrapper object holding the images and the typed entry points
 * (runtime/aot/aot_wrappers.c); the archive gets that object and every member of the runtime's
 * own archive, libfusec_rt.a, found as the LLVM module is (runtime/locate.h), so that a program
 * links the library with -lpthread -lm -ldl and nothing of the compiler.
 */
#include "fusec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/aot/aot_write.h"
#include "runtime/cpu/cpu_jit.h"
#include "runtime/cpu/cpu_target.h"
#include "runtime/locate.h"
#include "runtime/module.h"

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
#define MAX_CPUS     16

typedef struct lib_job {
    fusec_module *msg; /* where messages go */
    ir_arena arena;
    const char *dir, *name;
    const void *targets[MAX_CPUS];
    int ntargets;
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

/* The CPUs, comma-separated, each a name rt_cpu_target_find knows. */
static fusec_status parse_cpus(lib_job *j, const char *cpus) {
    const char *p = cpus && *cpus ? cpus : DEFAULT_CPUS;
    while (*p) {
        size_t n = strcspn(p, ",");
        char *name = ir_arena_printf(&j->arena, "%.*s", (int)n, p);
        const rt_cpu_target *t = rt_cpu_target_find(name);
        if (!t)
            return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT,
                                  "unknown CPU '%s' for a library (known: %s)", name,
                                  rt_cpu_target_names());
        for (int i = 0; i < j->ntargets; i++)
            if (j->targets[i] == t) t = NULL;
        if (t && j->ntargets == MAX_CPUS)
            return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT, "more than %d CPUs",
                                  MAX_CPUS);
        if (t) j->targets[j->ntargets++] = t;
        p += n + (p[n] == ',');
    }
    if (!j->ntargets) return rt_module_fail(j->msg, FUSEC_ERR_INVALID_ARGUMENT, "no CPU named");
    return FUSEC_OK;
}

/* Module i's image and entries. */
static fusec_status add_module(lib_job *j, fusec_module *m, int i) {
    ir_func *const *funcs;
    int nfuncs;
    fusec_status st = rt_module_library_image(m, j->targets, j->ntargets, &j->images[i],
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
                                  const char *path, const char *cpus) {
    fusec_status st = split_path(j, path);
    if (st == FUSEC_OK) st = parse_cpus(j, cpus);
    j->images = calloc((size_t)nmods, sizeof(*j->images));
    j->image_lens = calloc((size_t)nmods, sizeof(*j->image_lens));
    if (st == FUSEC_OK && (!j->images || !j->image_lens))
        st = rt_module_fail(j->msg, FUSEC_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < nmods && st == FUSEC_OK; i++)
        st = add_module(j, mods[i], i);
    if (st != FUSEC_OK) return st;
    ir_buf h;
    ir_buf_init(&h, &j->arena);
    rt_aot_header(&h, j->name, j->funcs, j->entries, j->nentries, "cpu");
    st = write_archive(j);
    if (st == FUSEC_OK)
        st = write_file(j, ir_arena_printf(&j->arena, "%s/%s.h", j->dir, j->name), h.data,
                        (size_t)h.len);
    return st;
}

fusec_status fusec_library_write(fusec_module *const *mods, int nmods, const char *path,
                                 const char *cpus) {
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
        st = write_library(&j, mods, nmods, path, cpus);
    }
    for (int i = 0; i < j.nimages; i++)
        free(j.images[i]);
    free(j.images);
    free(j.image_lens);
    ir_arena_free(&j.arena);
    return st;
}
