/* driver/api.c: the public API of fusec.h: compiling modules, looking functions up,
 * signatures, emitting text, and launching on the available targets. */
#include "fusec.h"

#include <assert.h>
#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontend/frontend.h"
#include "ir/ir.h"
#include "runtime/aot/aot_image.h"
#include "driver/aot/aot_write.h"
#include "runtime/args.h"
#include "driver/backend.h"
#include "driver/pipeline.h"
#include "runtime/clock.h"
#include "runtime/dlpack.h"
#include "driver/module.h"

/* Source files larger than this are refused: a .fuse program is a few kilobytes. */
#define RT_MAX_SOURCE_BYTES (16u << 20)

struct fusec_function {
    fusec_module *module;
    ir_func *checked; /* the function as checked: its signature */
    ir_func *fused;   /* after the pass pipeline: the kernel partition every target runs */
    int index;        /* in the module's fused (the backends' numbering); -1: not built */
    ir_shape *shapes; /* the distinct shapes of fused's nodes, whose sizes a launch checks */
    int32_t nshapes;
};

/* Every backend, in the order of fusec_module.resolved. */
static const rt_backend *const BACKENDS[] = {&rt_backend_cuda, &rt_backend_cpu, &rt_backend_ref};
#define NBACKENDS ((int)(sizeof BACKENDS / sizeof BACKENDS[0]))

struct fusec_module {
    ir_arena arena;
    fusec_options opt;
    fusec_target target;
    char *path;
    char *diagnostics; /* "" when none */
    ir_buf report;
    ast_file *ast;
    ir_module *checked;
    fusec_function *funcs;
    int nfuncs;
    ir_func **fused;           /* the built functions' fused, as the backends take them */
    int nfused;                /* all nfuncs, or 1 with opt.function */
    const rt_backend *backend; /* NULL: the reference interpreter */
    /* by backend (BACKENDS): what its resolve_options made of the options (the CPU
     * backend's named CPU; NULL: the host) */
    const void *resolved[NBACKENDS];
    void *program;             /* the backend's built code; NULL until built */
    fusec_status build_status; /* of the one build attempt (FUSEC_OK before it) */
    /* set, with release order, once the build attempt is over and program and build_status
     * hold its outcome: a launch that reads it set (acquire) needs no lock */
    atomic_int built;
    pthread_mutex_t lock; /* guards message, the report, the arena after compiling, the build */
    char message[1024];
};

static_assert(FUSEC_MAX_RANK == IR_MAX_RANK, "public and IR ranks agree");
static_assert(FUSEC_MAX_ARGS == IR_MAX_ARGS, "public and IR argument limits agree");
/* ORDER IR_DTYPE: public dtypes mirror ir_dtype. */
static_assert((int)FUSEC_BOOL == (int)IR_BOOL && (int)FUSEC_F64 == (int)IR_F64 &&
                  (int)FUSEC_BF16 == (int)IR_BF16,
              "fusec_dtype follows ir_dtype");

unsigned fusec_version_number(void) {
    return FUSEC_VERSION_NUMBER;
}

const char *fusec_version_string(void) {
    return FUSEC_VERSION_STRING;
}

const char *fusec_status_string(fusec_status s) {
    switch (s) {
    case FUSEC_OK: return "ok";
    case FUSEC_ERR_INVALID_ARGUMENT: return "invalid argument";
    case FUSEC_ERR_SOURCE: return "source error";
    case FUSEC_ERR_IO: return "input/output error";
    case FUSEC_ERR_NOT_FOUND: return "not found";
    case FUSEC_ERR_SHAPE: return "shape mismatch";
    case FUSEC_ERR_DTYPE: return "dtype mismatch";
    case FUSEC_ERR_OUT_OF_MEMORY: return "out of memory";
    case FUSEC_ERR_UNSUPPORTED: return "unsupported";
    case FUSEC_ERR_NO_DEVICE: return "no CUDA driver or device";
    case FUSEC_ERR_COMPILER: return "backend compiler error";
    case FUSEC_ERR_DRIVER: return "CUDA driver error";
    case FUSEC_ERR_RUNTIME: return "run-time error";
    case FUSEC_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char *fusec_dtype_name(fusec_dtype t) {
    if ((int)t < 0 || (int)t >= IR_DTYPE_COUNT) return "?";
    return ir_dtypes[t].name;
}

size_t fusec_dtype_size(fusec_dtype t) {
    if ((int)t < 0 || (int)t >= IR_DTYPE_COUNT) return 0;
    return (size_t)ir_dtypes[t].bytes;
}

void fusec_options_init(fusec_options *opt) {
    if (!opt) return;
    memset(opt, 0, sizeof(*opt));
    opt->struct_size = sizeof(*opt);
    opt->target = FUSEC_TARGET_AUTO;
    opt->device = -1;
}

void fusec_free(void *p) {
    free(p);
}

static fusec_status set_message(const fusec_module *cm, fusec_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The message buffer is the only state launches write; it is behind the module's lock. */
static fusec_status vset_message(const fusec_module *cm, fusec_status s, const char *fmt,
                                 va_list ap) {
    fusec_module *m = (fusec_module *)cm;
    if (!m) return s;
    pthread_mutex_lock(&m->lock);
    vsnprintf(m->message, sizeof m->message, fmt, ap);
    pthread_mutex_unlock(&m->lock);
    return s;
}

static fusec_status set_message(const fusec_module *cm, fusec_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vset_message(cm, s, fmt, ap);
    va_end(ap);
    return s;
}

/* Numbers are read and printed (literals, diagnostics, the IR, generated code, cache keys)
 * as the SPEC writes them, whatever locale the embedding program chose: the entry points
 * that parse or print switch their thread to the "C" locale and back (uselocale touches
 * only the calling thread). The locale object is made once and kept. */
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale;

static void make_c_locale(void) {
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

/* The thread's locale before the switch, for leave_c_locale; 0 when nothing changed. */
static locale_t enter_c_locale(void) {
    pthread_once(&c_locale_once, make_c_locale);
    return c_locale ? uselocale(c_locale) : (locale_t)0;
}

static void leave_c_locale(locale_t old) {
    if (old) uselocale(old);
}

/* Checks the options that name things (a CUDA architecture, a CPU) whatever the target, so
 * that a misspelling is an error where it is made, not where a later target reads it. */
static fusec_status check_names(fusec_module *m) {
    for (int i = 0; i < NBACKENDS; i++) {
        char err[512] = "";
        m->resolved[i] = NULL;
        if (!BACKENDS[i]->resolve_options) continue;
        fusec_status st = BACKENDS[i]->resolve_options(&m->opt, &m->resolved[i], err, sizeof err);
        if (st != FUSEC_OK) return set_message(m, st, "%s", err);
    }
    return FUSEC_OK;
}

/* Resolves the target: AUTO takes CUDA when a GPU and its driver are there, else the CPU
 * backend, else (a build without LLVM) the reference interpreter. */
static fusec_status resolve_target(fusec_module *m) {
    char why[256] = "";
    fusec_status st = check_names(m);
    if (st != FUSEC_OK) return st;
    switch (m->opt.target) {
    case FUSEC_TARGET_REF:
        m->target = FUSEC_TARGET_REF;
        m->backend = &rt_backend_ref;
        return FUSEC_OK;
    case FUSEC_TARGET_CUDA:
        /* with --arch, CUDA code is built without a device: launches then fail cleanly */
        m->target = FUSEC_TARGET_CUDA;
        m->backend = &rt_backend_cuda;
        return FUSEC_OK;
    case FUSEC_TARGET_CPU:
        m->target = FUSEC_TARGET_CPU;
        if (!rt_backend_cpu.available(why, sizeof why))
            return set_message(m, FUSEC_ERR_UNSUPPORTED, "%s", why);
        m->backend = &rt_backend_cpu;
        return FUSEC_OK;
    case FUSEC_TARGET_AUTO:
        if (rt_backend_cuda.available(why, sizeof why)) {
            m->target = FUSEC_TARGET_CUDA;
            m->backend = &rt_backend_cuda;
        } else if (rt_backend_cpu.available(why, sizeof why)) {
            m->target = FUSEC_TARGET_CPU;
            m->backend = &rt_backend_cpu;
        } else {
            m->target = FUSEC_TARGET_REF;
            m->backend = &rt_backend_ref;
        }
        if (m->opt.verbose)
            ir_buf_printf(&m->report, "target: %s%s\n", m->backend->name,
                          m->target == FUSEC_TARGET_REF ? " (no backend available)" : "");
        return FUSEC_OK;
    }
    return set_message(m, FUSEC_ERR_INVALID_ARGUMENT, "unknown target %d", (int)m->opt.target);
}

static fusec_module *module_new(const fusec_options *opt) {
    fusec_module *m = calloc(1, sizeof(*m));
    if (!m) return NULL;
    ir_arena_init(&m->arena);
    pthread_mutex_init(&m->lock, NULL);
    fusec_options_init(&m->opt);
    if (opt) {
        /* copy only what the caller's (possibly older, smaller) struct holds */
        size_t n = opt->struct_size && opt->struct_size < sizeof(m->opt) ? opt->struct_size
                                                                         : sizeof(m->opt);
        memcpy(&m->opt, opt, n);
        /* a struct fusec_options_init never saw: zeros, whose device would be 0 */
        if (!opt->struct_size) m->opt.device = -1;
        m->opt.struct_size = sizeof(m->opt);
        /* the caller's strings may be gone by the time a launch builds the module (the arena
         * has no jump buffer yet: a failed copy is NULL) */
        const char **strs[] = {&m->opt.arch, &m->opt.cache_dir, &m->opt.dump_after, &m->opt.cpu,
                               &m->opt.function};
        for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
            if (*strs[i] && !(*strs[i] = ir_arena_strdup(&m->arena, *strs[i]))) {
                fusec_module_free(m);
                return NULL;
            }
    }
    m->diagnostics = "";
    return m;
}

/* Which functions are built (opt.function: one; else all) and their backend numbers. */
static fusec_status select_functions(fusec_module *m) {
    const char *only = m->opt.function;
    int found = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        int built = !only || strcmp(m->funcs[i].checked->name, only) == 0;
        m->funcs[i].index = built ? m->nfused++ : -1;
        found |= built;
    }
    if (only && !found)
        return set_message(m, FUSEC_ERR_INVALID_ARGUMENT, "%s has no function '%s' to build",
                           m->path, only);
    return FUSEC_OK;
}

static fusec_status compile_source_c(fusec_module *m, const char *path, char *src, size_t len) {
    jmp_buf oom;
    if (setjmp(oom)) {
        m->arena.oom = NULL;
        return set_message(m, FUSEC_ERR_OUT_OF_MEMORY, "out of memory while compiling %s", path);
    }
    m->arena.oom = &oom;
    ir_buf_init(&m->report, &m->arena);
    m->path = ir_arena_strdup(&m->arena, path);
    char *text = ir_arena_alloc(&m->arena, len + 1);
    memcpy(text, src, len);
    text[len] = 0;

    double t0 = rt_now_ms();
    diag_ctx d;
    diag_init(&d, &m->arena, m->path, text, len);
    parse_file(&d, &m->ast);
    double t1 = rt_now_ms();
    if (m->ast) check_file(&d, m->ast, &m->checked);
    double t2 = rt_now_ms();
    m->diagnostics = d.out.data ? d.out.data : "";
    if (d.nerrors > 0) {
        m->arena.oom = NULL;
        /* the checker's own bug, not the user's: a status of its own (the CLI's exit 3) */
        if (d.ninternal > 0)
            return set_message(m, FUSEC_ERR_INTERNAL, "%s: internal error in the front end",
                               m->path);
        return set_message(m, FUSEC_ERR_SOURCE, "%s: %d error%s", m->path, (int)d.nerrors,
                           d.nerrors == 1 ? "" : "s");
    }

    m->nfuncs = m->checked ? m->checked->nfuncs : 0;
    m->funcs = ir_arena_calloc(&m->arena, (size_t)(m->nfuncs ? m->nfuncs : 1), sizeof(*m->funcs));
    m->fused = ir_arena_calloc(&m->arena, (size_t)(m->nfuncs ? m->nfuncs : 1), sizeof(*m->fused));
    /* every function has its signature, whatever fails below: a caller may look them up */
    for (int i = 0; i < m->nfuncs; i++) {
        m->funcs[i].module = m;
        m->funcs[i].checked = m->checked->funcs[i];
    }
    fusec_status st = select_functions(m);
    if (st == FUSEC_OK) st = resolve_target(m);
    for (int i = 0; i < m->nfuncs && st == FUSEC_OK; i++) {
        fusec_function *fn = &m->funcs[i];
        if (fn->index < 0) continue; /* another than opt.function: not built */
        char err[512] = "";
        rt_pipeline_options po = {
            .no_fuse = m->opt.no_fuse,
            .dump_after = m->opt.dump_after,
            .verbose = m->opt.verbose,
            .report = &m->report,
        };
        if (rt_pipeline_run(fn->checked, &po, &fn->fused, err, sizeof err) != 0)
            st = set_message(m, po.usage_error ? FUSEC_ERR_INVALID_ARGUMENT : FUSEC_ERR_INTERNAL,
                             "%s", err);
        m->fused[fn->index] = fn->fused;
        if (fn->fused) fn->shapes = ir_unique_shapes(fn->fused, &m->arena, &fn->nshapes);
    }
    /* a module that failed has nothing to build: its launches fail as not compiled */
    if (st != FUSEC_OK) m->backend = NULL;
    double t3 = rt_now_ms();
    if (m->opt.verbose)
        ir_buf_printf(&m->report, "time: parse %.3f ms, check %.3f ms, passes %.3f ms\n", t1 - t0,
                      t2 - t1, t3 - t2);
    m->arena.oom = NULL;
    return st;
}

static fusec_status compile_source(fusec_module *m, const char *path, char *src, size_t len) {
    locale_t old = enter_c_locale();
    fusec_status st = compile_source_c(m, path, src, len);
    leave_c_locale(old);
    return st;
}

/* Reads a whole file into malloc'd memory. */
static fusec_status read_file(fusec_module *m, const char *path, char **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return set_message(m, FUSEC_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return set_message(m, FUSEC_ERR_OUT_OF_MEMORY, "out of memory reading '%s'", path);
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        if (cap >= RT_MAX_SOURCE_BYTES) {
            free(buf);
            fclose(f);
            return set_message(m, FUSEC_ERR_IO, "'%s' is larger than %u MiB", path,
                               RT_MAX_SOURCE_BYTES >> 20);
        }
        cap *= 2;
        char *nb = realloc(buf, cap);
        if (!nb) free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    int saved = errno;
    fclose(f);
    if (bad) {
        free(buf);
        return set_message(m, FUSEC_ERR_IO, "cannot read '%s': %s", path, strerror(saved));
    }
    *out = buf;
    *len = n;
    return FUSEC_OK;
}

fusec_status fusec_module_compile_file(const char *path, const fusec_options *opt,
                                       fusec_module **out) {
    if (!out) return FUSEC_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!path) return FUSEC_ERR_INVALID_ARGUMENT;
    fusec_module *m = module_new(opt);
    if (!m) return FUSEC_ERR_OUT_OF_MEMORY;
    *out = m;
    char *src = NULL;
    size_t len = 0;
    fusec_status st = read_file(m, path, &src, &len);
    if (st != FUSEC_OK) return st;
    st = compile_source(m, path, src, len);
    free(src);
    return st;
}

fusec_status fusec_module_compile_string(const char *name, const char *src, size_t len,
                                         const fusec_options *opt, fusec_module **out) {
    if (!out) return FUSEC_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!src) return FUSEC_ERR_INVALID_ARGUMENT;
    fusec_module *m = module_new(opt);
    if (!m) return FUSEC_ERR_OUT_OF_MEMORY;
    *out = m;
    if (len > RT_MAX_SOURCE_BYTES)
        return set_message(m, FUSEC_ERR_INVALID_ARGUMENT, "source larger than %u MiB",
                           RT_MAX_SOURCE_BYTES >> 20);
    return compile_source(m, name ? name : "<string>", (char *)src, len);
}

void fusec_module_free(fusec_module *m) {
    if (!m) return;
    if (m->backend) m->backend->destroy(m->program);
    ir_arena_free(&m->arena);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

const char *fusec_module_diagnostics(const fusec_module *m) {
    return m && m->diagnostics ? m->diagnostics : "";
}

const char *fusec_module_message(const fusec_module *m) {
    return m ? m->message : "";
}

const char *fusec_module_report(const fusec_module *m) {
    return m && m->report.data ? m->report.data : "";
}

fusec_target fusec_module_target(const fusec_module *m) {
    return m ? m->target : FUSEC_TARGET_AUTO;
}

int fusec_module_num_functions(const fusec_module *m) {
    return m ? m->nfuncs : 0;
}

fusec_status fusec_module_function(fusec_module *m, const char *name, fusec_function **out) {
    if (out) *out = NULL;
    if (!m || !name || !out) return FUSEC_ERR_INVALID_ARGUMENT;
    for (int i = 0; i < m->nfuncs; i++) {
        if (strcmp(m->funcs[i].checked->name, name) == 0) {
            *out = &m->funcs[i];
            return FUSEC_OK;
        }
    }
    return set_message(m, FUSEC_ERR_NOT_FOUND, "no function '%s' in %s", name,
                       m->path ? m->path : "the module");
}

fusec_function *fusec_module_function_at(fusec_module *m, int i) {
    if (!m || i < 0 || i >= m->nfuncs) return NULL;
    return &m->funcs[i];
}

/* ---- building ------------------------------------------------------------------------ */

/* A request to backend be (what its resolve_options made of the options with it). */
static rt_backend_request backend_request(fusec_module *m, const rt_backend *be) {
    rt_backend_request req = {
        .funcs = m->fused,
        .nfuncs = m->nfused,
        .opt = &m->opt,
        .arena = &m->arena,
        .report = &m->report,
    };
    for (int i = 0; i < NBACKENDS; i++)
        if (BACKENDS[i] == be) req.resolved = m->resolved[i];
    return req;
}

/* The one build attempt. The caller holds m->lock. */
static fusec_status build_now(fusec_module *m) {
    if (!m->backend) { /* the compilation failed before it chose one */
        snprintf(m->message, sizeof m->message, "the module has no target: it did not compile");
        return FUSEC_ERR_SOURCE;
    }
    jmp_buf oom;
    if (setjmp(oom)) {
        m->arena.oom = NULL;
        snprintf(m->message, sizeof m->message, "out of memory while building");
        return FUSEC_ERR_OUT_OF_MEMORY;
    }
    m->arena.oom = &oom;
    rt_backend_request req = backend_request(m, m->backend);
    char err[sizeof m->message];
    double t0 = rt_now_ms();
    fusec_status st = m->backend->compile(&req, &m->program, err, sizeof err);
    if (m->opt.verbose)
        ir_buf_printf(&m->report, "time: %s build %.3f ms\n", m->backend->name, rt_now_ms() - t0);
    m->arena.oom = NULL;
    if (st != FUSEC_OK) snprintf(m->message, sizeof m->message, "%s", err);
    return st;
}

/* Builds once; later calls return the first attempt's status. The caller holds m->lock, so
 * concurrent first launches wait here for the one that builds, then see its outcome. */
static fusec_status build_locked(fusec_module *m) {
    if (atomic_load_explicit(&m->built, memory_order_relaxed)) return m->build_status;
    m->build_status = build_now(m);
    atomic_store_explicit(&m->built, 1, memory_order_release);
    return m->build_status;
}

fusec_status fusec_module_build(fusec_module *m) {
    if (!m) return FUSEC_ERR_INVALID_ARGUMENT;
    if (!m->ast || !m->funcs) return set_message(m, FUSEC_ERR_SOURCE, "the module did not compile");
    locale_t old = enter_c_locale();
    pthread_mutex_lock(&m->lock);
    fusec_status st = build_locked(m);
    pthread_mutex_unlock(&m->lock);
    leave_c_locale(old);
    return st;
}

/* ---- emitting ------------------------------------------------------------------------ */

static fusec_status emit_text(ir_buf *b, char **data, size_t *size) {
    char *p = malloc((size_t)b->len + 1);
    if (!p) return FUSEC_ERR_OUT_OF_MEMORY;
    memcpy(p, b->data, (size_t)b->len + 1);
    *data = p;
    if (size) *size = (size_t)b->len;
    return FUSEC_OK;
}

/* The text of `kind` into b; FUSEC_OK, or a status with its message in msg. The caller holds
 * m->lock: the arena and the report are the module's, which a build on another thread also
 * writes. */
static fusec_status emit_locked(fusec_module *m, fusec_emit kind, ir_buf *b, char *msg,
                                size_t msglen) {
    switch (kind) {
    case FUSEC_EMIT_AST: parse_print_ast(b, m->ast); return FUSEC_OK;
    case FUSEC_EMIT_IR:
        for (int i = 0; i < m->nfuncs; i++) {
            if (i) ir_buf_puts(b, "\n");
            ir_print_func(b, m->funcs[i].fused ? m->funcs[i].fused : m->funcs[i].checked);
        }
        return FUSEC_OK;
    case FUSEC_EMIT_CUDA:
    case FUSEC_EMIT_PTX:
    case FUSEC_EMIT_CUBIN:
    case FUSEC_EMIT_LLVM:
    case FUSEC_EMIT_PLAN: {
        /* the plan is the module's target's (the CPU's for the reference, which has none) */
        int cpu =
            kind == FUSEC_EMIT_LLVM || (kind == FUSEC_EMIT_PLAN && m->target != FUSEC_TARGET_CUDA);
        const rt_backend *be = cpu ? &rt_backend_cpu : &rt_backend_cuda;
        rt_backend_request req = backend_request(m, be);
        return be->emit(&req, kind, b, msg, msglen);
    }
    }
    snprintf(msg, msglen, "unknown emit kind %d", (int)kind);
    return FUSEC_ERR_INVALID_ARGUMENT;
}

/* Writes into b what an entry point hands out (buffer_locked, under m's lock); FUSEC_OK, or a
 * status with its message in msg. */
typedef fusec_status (*fill_fn)(fusec_module *m, ir_buf *b, const void *ctx, char *msg,
                                size_t msglen);

/* fill's bytes into *data (malloc'd, NUL-terminated) of *size bytes: fill writes into a
 * buffer of m's arena, under m's lock (the arena and the report are the module's, which a build
 * on another thread also writes), with running out of memory caught. On failure, m's message
 * says why (fill's msg). */
static fusec_status buffer_locked(fusec_module *m, fill_fn fill, const void *ctx, char **data,
                                  size_t *size) {
    char msg[sizeof m->message] = "";
    fusec_status st;
    pthread_mutex_lock(&m->lock);
    jmp_buf oom;
    if (setjmp(oom)) {
        st = FUSEC_ERR_OUT_OF_MEMORY;
        snprintf(msg, sizeof msg, "out of memory");
    } else {
        m->arena.oom = &oom;
        ir_buf b;
        ir_buf_init(&b, &m->arena);
        st = fill(m, &b, ctx, msg, sizeof msg);
        if (st == FUSEC_OK) st = emit_text(&b, data, size);
    }
    m->arena.oom = NULL;
    pthread_mutex_unlock(&m->lock);
    if (st != FUSEC_OK && msg[0]) set_message(m, st, "%s", msg);
    return st;
}

static fusec_status fill_emit(fusec_module *m, ir_buf *b, const void *ctx, char *msg,
                              size_t msglen) {
    return emit_locked(m, *(const fusec_emit *)ctx, b, msg, msglen);
}

static fusec_status module_emit(fusec_module *m, fusec_emit kind, char **data, size_t *size) {
    if (data) *data = NULL;
    if (size) *size = 0;
    if (!m || !data) return FUSEC_ERR_INVALID_ARGUMENT;
    if (!m->ast) return set_message(m, FUSEC_ERR_SOURCE, "the module did not compile");
    return buffer_locked(m, fill_emit, &kind, data, size);
}

fusec_status fusec_module_emit(fusec_module *m, fusec_emit kind, char **data, size_t *size) {
    locale_t old = enter_c_locale();
    fusec_status st = module_emit(m, kind, data, size);
    leave_c_locale(old);
    return st;
}

/* ---- libraries built ahead of time (driver/aot/aot_write.c) ------------------------------ */

fusec_status rt_module_fail(fusec_module *m, fusec_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vset_message(m, st, fmt, ap);
    va_end(ap);
    return st;
}

const char *rt_module_path(const fusec_module *m) {
    return m && m->path ? m->path : "";
}

/* What rt_module_library_image asks of the module's backend, under m's lock (buffer_locked). */
typedef struct library_ask {
    const char *const *archs;
    int narchs;
} library_ask;

static fusec_status fill_library(fusec_module *m, ir_buf *b, const void *ctx, char *msg,
                                 size_t msglen) {
    const library_ask *ask = ctx;
    rt_image img;
    memset(&img, 0, sizeof img);
    rt_backend_request req = backend_request(m, m->backend);
    fusec_status st = m->backend->library_image(&req, ask->archs, ask->narchs, &img, msg, msglen);
    if (st != FUSEC_OK) return st;
    img.nfuncs = m->nfused;
    img.sigs = rt_aot_signatures(m->fused, m->nfused, &m->arena);
    unsigned char *bytes = NULL;
    size_t n = 0;
    if (rt_image_write(&img, &bytes, &n)) {
        snprintf(msg, msglen, "out of memory");
        return FUSEC_ERR_OUT_OF_MEMORY;
    }
    ir_buf_putn(b, (const char *)bytes, n);
    free(bytes);
    return FUSEC_OK;
}

fusec_status rt_module_library_image(fusec_module *m, const char *const *archs, int narchs,
                                     unsigned char **image, size_t *len, ir_func *const **funcs,
                                     int *nfuncs) {
    *image = NULL;
    *len = 0;
    if (!m->ast || !m->funcs) return set_message(m, FUSEC_ERR_SOURCE, "the module did not compile");
    if (!m->backend || !m->backend->library_image)
        return set_message(m, FUSEC_ERR_INVALID_ARGUMENT,
                           "a library is built for the CPU or CUDA target (--target=cpu or "
                           "cuda): %s was compiled for %s",
                           m->path ? m->path : "the module",
                           m->backend ? m->backend->name : "none");
    library_ask ask = {archs, narchs};
    char *data = NULL;
    fusec_status st = buffer_locked(m, fill_library, &ask, &data, len);
    if (st != FUSEC_OK) return st;
    *image = (unsigned char *)data;
    *funcs = m->fused;
    *nfuncs = m->nfused;
    return FUSEC_OK;
}

const char *rt_module_target(const fusec_module *m) {
    return m && m->backend ? m->backend->name : "none";
}

/* ---- signatures ------------------------------------------------------------------------ */

const char *fusec_function_name(const fusec_function *f) {
    return f ? f->checked->name : NULL;
}

const char *fusec_function_grad_of(const fusec_function *f) {
    return f ? f->checked->grad_of : NULL;
}

int fusec_function_grad_wrt(const fusec_function *f, int i) {
    if (!f || !f->checked->grad_of || i < 0 || i >= f->checked->noutputs) return -1;
    return f->checked->grad_wrt[i];
}

int fusec_function_num_params(const fusec_function *f) {
    return f ? f->checked->nparams : 0;
}

int fusec_function_num_results(const fusec_function *f) {
    return f ? f->checked->noutputs : 0;
}

static void fill_info(const ir_func *f, const char *name, ir_dtype t, const ir_shape *s,
                      fusec_param_info *out) {
    memset(out, 0, sizeof(*out));
    out->name = name;
    out->dtype = (fusec_dtype)t;
    out->rank = s->rank;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i].sym >= 0) {
            out->dims[i] = -1;
            out->dim_names[i] = f->syms[s->dims[i].sym];
        } else {
            out->dims[i] = s->dims[i].size;
        }
    }
}

fusec_status fusec_function_param(const fusec_function *f, int i, fusec_param_info *out) {
    if (!f || !out || i < 0 || i >= f->checked->nparams) return FUSEC_ERR_INVALID_ARGUMENT;
    const ir_param *p = &f->checked->params[i];
    fill_info(f->checked, p->name, p->dtype, &p->shape, out);
    return FUSEC_OK;
}

fusec_status fusec_function_result(const fusec_function *f, int i, fusec_param_info *out) {
    if (!f || !out || i < 0 || i >= f->checked->noutputs) return FUSEC_ERR_INVALID_ARGUMENT;
    const ir_output *o = &f->checked->outputs[i];
    fill_info(f->checked, NULL, o->dtype, &o->shape, out);
    return FUSEC_OK;
}

/* ---- launching ------------------------------------------------------------------------- */

/* Checks the input descriptors and binds the symbolic dims into syms. */
static fusec_status bind_inputs(fusec_function *f, const fusec_tensor *inputs, int ninputs,
                                int check_dtype, int64_t *syms) {
    const ir_func *fn = f->checked;
    if (ninputs != fn->nparams)
        return set_message(f->module, FUSEC_ERR_INVALID_ARGUMENT, "'%s' takes %d input%s, got %d",
                           fn->name, (int)fn->nparams, fn->nparams == 1 ? "" : "s", ninputs);
    if (ninputs && !inputs) return FUSEC_ERR_INVALID_ARGUMENT;
    ir_tensor ts[64];
    ir_tensor *t = ninputs <= 64 ? ts : calloc((size_t)ninputs, sizeof(*t));
    if (!t) return FUSEC_ERR_OUT_OF_MEMORY;
    fusec_status st = FUSEC_OK;
    for (int i = 0; i < ninputs && st == FUSEC_OK; i++) {
        const ir_param *p = &fn->params[i];
        if (inputs[i].rank < 0 || inputs[i].rank > FUSEC_MAX_RANK)
            st = set_message(f->module, FUSEC_ERR_SHAPE, "parameter '%s': rank %d is invalid",
                             p->name, inputs[i].rank);
        else if (check_dtype && (int)inputs[i].dtype != (int)p->dtype)
            st = set_message(f->module, FUSEC_ERR_DTYPE, "parameter '%s': expected %s, got %s",
                             p->name, ir_dtypes[p->dtype].name, fusec_dtype_name(inputs[i].dtype));
        t[i].dtype = p->dtype;
        t[i].rank = inputs[i].rank;
        for (int d = 0; d < t[i].rank && d < IR_MAX_RANK; d++)
            t[i].dims[d] = inputs[i].shape[d];
        t[i].data = inputs[i].data;
        t[i].strides = NULL; /* (shapes only) */
    }
    if (st == FUSEC_OK) {
        char err[512];
        if (ir_bind_shapes(fn, t, syms, err, sizeof err) != 0)
            st = set_message(f->module, FUSEC_ERR_SHAPE, "%s", err);
    }
    if (t != ts) free(t);
    return st;
}

fusec_status fusec_function_result_shapes(fusec_function *f, const fusec_tensor *inputs,
                                          int ninputs, fusec_tensor *results, int nresults) {
    if (!f || (nresults && !results)) return FUSEC_ERR_INVALID_ARGUMENT;
    const ir_func *fn = f->checked;
    if (nresults != fn->noutputs)
        return set_message(f->module, FUSEC_ERR_INVALID_ARGUMENT, "'%s' has %d result%s, got %d",
                           fn->name, (int)fn->noutputs, fn->noutputs == 1 ? "" : "s", nresults);
    int64_t syms[IR_MAX_RANK * 64 + 1];
    if (fn->nsyms > (int32_t)(sizeof syms / sizeof syms[0]))
        return set_message(f->module, FUSEC_ERR_UNSUPPORTED, "too many symbolic dims");
    fusec_status st = bind_inputs(f, inputs, ninputs, 0, syms);
    if (st != FUSEC_OK) return st;
    for (int i = 0; i < nresults; i++) {
        const ir_output *o = &fn->outputs[i];
        results[i].dtype = (fusec_dtype)o->dtype;
        results[i].rank = o->shape.rank;
        results[i].strides = NULL; /* dense, as results are */
        ir_shape_concrete(&o->shape, syms, results[i].shape);
    }
    return FUSEC_OK;
}

/* The name of argument i of f in messages: "parameter 'x'" or "result 0". */
static const char *arg_name(const fusec_function *f, int i, char *buf, size_t len) {
    int np = f->checked->nparams;
    return rt_arg_name(i < np ? f->checked->params[i].name : NULL, np, i, buf, len);
}

/* Every tensor a launch touches, its arguments and every value its kernels compute or keep,
 * has a size that memory could hold: the backends compute offsets and sizes from these
 * counts unchecked. */
static fusec_status check_sizes(fusec_function *f, const ir_tensor *args, const int64_t *syms,
                                const char *const *names) {
    char err[512];
    int np = f->checked->nparams;
    fusec_status st = rt_check_counts(args, np, np + f->checked->noutputs, names, err, sizeof err);
    if (st != FUSEC_OK) return set_message(f->module, st, "%s", err);
    for (int32_t i = 0; i < f->nshapes; i++) {
        int64_t dims[IR_MAX_RANK];
        ir_shape_concrete(&f->shapes[i], syms, dims);
        if (ir_dims_count(dims, f->shapes[i].rank) < 0)
            return set_message(f->module, FUSEC_ERR_SHAPE,
                               "'%s' would compute a value too large for memory at these shapes",
                               f->checked->name);
    }
    return FUSEC_OK;
}

/* Every non-empty tensor has data, aligned, inside the address space, and results overlap
 * nothing but (in place) their very input (runtime/args.c). */
static fusec_status check_buffers(fusec_function *f, const ir_tensor *args,
                                  const char *const *names) {
    int np = f->checked->nparams;
    char err[512];
    fusec_status st = rt_check_buffers(args, np, np + f->checked->noutputs, names, err, sizeof err);
    return st == FUSEC_OK ? st : set_message(f->module, st, "%s", err);
}

/* Checks a call's tensors against f's signature: args (inputs, then results) and the values
 * of f's symbolic dims. */
static fusec_status prepare_call(fusec_function *f, const fusec_tensor *inputs, int ninputs,
                                 const fusec_tensor *results, int nresults, ir_tensor *args,
                                 int64_t *syms) {
    if (!f || (nresults && !results)) return FUSEC_ERR_INVALID_ARGUMENT;
    const ir_func *fn = f->checked;
    fusec_module *m = f->module;
    if (nresults != fn->noutputs)
        return set_message(m, FUSEC_ERR_INVALID_ARGUMENT, "'%s' has %d result%s, got %d", fn->name,
                           (int)fn->noutputs, fn->noutputs == 1 ? "" : "s", nresults);
    if (fn->nsyms > RT_MAX_SYMS)
        return set_message(m, FUSEC_ERR_UNSUPPORTED, "too many symbolic dims");
    if (f->index < 0)
        return set_message(m, FUSEC_ERR_INVALID_ARGUMENT,
                           "'%s' was not built: the module was compiled for '%s' alone "
                           "(fusec_options.function)",
                           fn->name, m->opt.function);
    fusec_status st = bind_inputs(f, inputs, ninputs, 1, syms);
    if (st != FUSEC_OK) return st;
    if (ninputs + nresults > RT_MAX_ARGS)
        return set_message(m, FUSEC_ERR_UNSUPPORTED, "more than %d parameters and results",
                           RT_MAX_ARGS);
    for (int i = 0; i < ninputs; i++) {
        args[i].dtype = fn->params[i].dtype;
        args[i].rank = inputs[i].rank;
        memcpy(args[i].dims, inputs[i].shape, sizeof(int64_t) * (size_t)inputs[i].rank);
        args[i].data = inputs[i].data;
        /* strides that are the dense ones are none: the fast path */
        args[i].strides = inputs[i].strides && !rt_dense_strides(inputs[i].strides, inputs[i].rank,
                                                                 inputs[i].shape)
                              ? inputs[i].strides
                              : NULL;
    }
    for (int i = 0; i < nresults; i++) {
        const ir_output *o = &fn->outputs[i];
        int64_t want[IR_MAX_RANK];
        ir_shape_concrete(&o->shape, syms, want);
        if ((int)results[i].dtype != (int)o->dtype)
            return set_message(m, FUSEC_ERR_DTYPE, "result %d: expected %s, got %s", i,
                               ir_dtypes[o->dtype].name, fusec_dtype_name(results[i].dtype));
        int same = results[i].rank == o->shape.rank;
        for (int d = 0; same && d < o->shape.rank; d++)
            same = results[i].shape[d] == want[d];
        if (!same)
            return set_message(m, FUSEC_ERR_SHAPE,
                               "result %d: shape does not match the one the inputs give", i);
        if (results[i].strides && !rt_dense_strides(results[i].strides, results[i].rank, want))
            return set_message(m, FUSEC_ERR_INVALID_ARGUMENT,
                               "result %d: results must be dense (row-major strides)", i);
        ir_tensor *t = &args[ninputs + i];
        t->dtype = o->dtype;
        t->rank = o->shape.rank;
        memcpy(t->dims, want, sizeof want);
        t->data = results[i].data;
        t->strides = NULL;
    }
    const char *names[RT_MAX_ARGS]; /* the parameters', for the checks' messages */
    for (int i = 0; i < fn->nparams; i++)
        names[i] = fn->params[i].name;
    st = check_sizes(f, args, syms, names);
    if (st == FUSEC_OK) st = check_buffers(f, args, names);
    return st;
}

/* Builds the module on first use; the build's status. */
static fusec_status ensure_built(fusec_module *m) {
    if (atomic_load_explicit(&m->built, memory_order_acquire)) return m->build_status;
    return fusec_module_build(m);
}

/* Runs a prepared call on the module's target. */
static fusec_status run_call(fusec_function *f, ir_tensor *args, const int64_t *syms,
                             void *stream) {
    fusec_module *m = f->module;
    char err[512];
    fusec_status st = m->backend->launch(m->program, f->index, args, syms, stream, err, sizeof err);
    if (st != FUSEC_OK) return set_message(m, st, "%s", err);
    return FUSEC_OK;
}

fusec_status fusec_launch(fusec_function *f, const fusec_tensor *inputs, int ninputs,
                          const fusec_tensor *results, int nresults, void *stream) {
    ir_tensor args[RT_MAX_ARGS];
    int64_t syms[RT_MAX_SYMS];
    fusec_status st = prepare_call(f, inputs, ninputs, results, nresults, args, syms);
    if (st == FUSEC_OK) st = ensure_built(f->module);
    if (st != FUSEC_OK) return st;
    return run_call(f, args, syms, stream);
}

/* The descriptors of DLPack tensors (runtime/dlpack.c), as many as f has parameters and
 * results, checked for what only DLPack says (dtype codes, device); fusec_launch checks the
 * rest. */
static fusec_status read_dlpack(fusec_function *f, const void *const *tensors, fusec_tensor *out) {
    fusec_module *m = f->module;
    int n = f->checked->nparams + f->checked->noutputs;
    if (n && !tensors)
        return set_message(m, FUSEC_ERR_INVALID_ARGUMENT, "'%s': no tensors (NULL)",
                           f->checked->name);
    int on_host = m->target != FUSEC_TARGET_CUDA;
    for (int i = 0; i < n; i++) {
        char why[256], name[160];
        fusec_status st = rt_dlpack_read(tensors[i], on_host, &out[i], why, sizeof why);
        if (st != FUSEC_OK)
            return set_message(m, st, "%s: %s", arg_name(f, i, name, sizeof name), why);
    }
    return FUSEC_OK;
}

fusec_status fusec_launch_dlpack(fusec_function *f, const void *const *tensors, int ninputs,
                                 int nresults, void *stream) {
    if (!f) return FUSEC_ERR_INVALID_ARGUMENT;
    fusec_tensor ts[RT_MAX_ARGS];
    if (ninputs != f->checked->nparams || nresults != f->checked->noutputs) {
        /* fusec_launch says which count is wrong before it reads a descriptor */
        memset(ts, 0, sizeof ts);
        return fusec_launch(f, ts, ninputs, ts, nresults, stream);
    }
    fusec_status st = read_dlpack(f, tensors, ts);
    if (st != FUSEC_OK) return st;
    return fusec_launch(f, ts, ninputs, ts + ninputs, nresults, stream);
}

/* ---- plans ------------------------------------------------------------------------------ */

struct fusec_plan {
    fusec_function *f;
    void *backend_plan; /* the backend's (a CUDA graph); NULL on host targets */
    int nargs;
    ir_tensor args[RT_MAX_ARGS];
    int64_t strides[RT_MAX_ARGS][IR_MAX_RANK]; /* args' own: the caller's live for a call */
    int64_t syms[RT_MAX_SYMS];
};

/* p's args (as prepared for a call), the strides copied into the plan. */
static void plan_keep_args(fusec_plan *p, const ir_tensor *args) {
    memcpy(p->args, args, sizeof(ir_tensor) * (size_t)p->nargs);
    for (int i = 0; i < p->nargs; i++)
        if (args[i].strides) {
            memcpy(p->strides[i], args[i].strides, sizeof(int64_t) * (size_t)args[i].rank);
            p->args[i].strides = p->strides[i];
        }
}

fusec_status fusec_plan_create(fusec_function *f, const fusec_tensor *inputs, int ninputs,
                               const fusec_tensor *results, int nresults, void *stream,
                               fusec_plan **out) {
    if (out) *out = NULL;
    if (!f || !out) return FUSEC_ERR_INVALID_ARGUMENT;
    fusec_module *m = f->module;
    fusec_plan *p = calloc(1, sizeof *p);
    if (!p) return set_message(m, FUSEC_ERR_OUT_OF_MEMORY, "out of memory for a plan");
    p->f = f;
    p->nargs = ninputs + nresults;
    ir_tensor args[RT_MAX_ARGS];
    fusec_status st = prepare_call(f, inputs, ninputs, results, nresults, args, p->syms);
    if (st == FUSEC_OK) plan_keep_args(p, args);
    if (st == FUSEC_OK) st = ensure_built(m);
    if (st == FUSEC_OK && m->backend && m->backend->plan_create) {
        char err[512];
        st = m->backend->plan_create(m->program, f->index, p->args, p->syms, stream,
                                     &p->backend_plan, err, sizeof err);
        if (st != FUSEC_OK) set_message(m, st, "%s", err);
    }
    if (st != FUSEC_OK) {
        free(p);
        return st;
    }
    *out = p;
    return FUSEC_OK;
}

fusec_status fusec_plan_launch(fusec_plan *p, void *stream) {
    if (!p) return FUSEC_ERR_INVALID_ARGUMENT;
    fusec_module *m = p->f->module;
    if (!p->backend_plan) {
        ir_tensor args[RT_MAX_ARGS]; /* a launch may not write the plan: it is shared */
        memcpy(args, p->args, sizeof(ir_tensor) * (size_t)p->nargs);
        return run_call(p->f, args, p->syms, stream);
    }
    char err[512];
    fusec_status st = m->backend->plan_launch(p->backend_plan, stream, err, sizeof err);
    if (st != FUSEC_OK) return set_message(m, st, "%s", err);
    return FUSEC_OK;
}

fusec_status fusec_plan_rebind(fusec_plan *p, const fusec_tensor *inputs, int ninputs,
                               const fusec_tensor *results, int nresults) {
    if (!p) return FUSEC_ERR_INVALID_ARGUMENT;
    fusec_function *f = p->f;
    fusec_module *m = f->module;
    ir_tensor args[RT_MAX_ARGS];
    int64_t syms[RT_MAX_SYMS];
    fusec_status st = prepare_call(f, inputs, ninputs, results, nresults, args, syms);
    if (st != FUSEC_OK) return st;
    for (int i = 0; i < p->nargs; i++) {
        int same = args[i].rank == p->args[i].rank;
        for (int d = 0; same && d < args[i].rank; d++)
            same = args[i].dims[d] == p->args[i].dims[d];
        if (!same)
            return set_message(m, FUSEC_ERR_SHAPE,
                               "%s %d: a plan is re-bound to tensors of the shapes it was made "
                               "for; make a new plan for new shapes",
                               i < ninputs ? "input" : "result", i < ninputs ? i : i - ninputs);
        /* a CUDA plan's graph reads each strided input through its own node */
        if (!args[i].strides != !p->args[i].strides ||
            (args[i].strides &&
             memcmp(args[i].strides, p->args[i].strides, sizeof(int64_t) * (size_t)args[i].rank)))
            return set_message(m, FUSEC_ERR_SHAPE,
                               "input %d: a plan is re-bound to tensors of the strides it was "
                               "made for; make a new plan for new strides",
                               i);
    }
    if (p->backend_plan) {
        char err[512];
        st = m->backend->plan_rebind(p->backend_plan, args, err, sizeof err);
        if (st != FUSEC_OK) return set_message(m, st, "%s", err);
    }
    plan_keep_args(p, args);
    return FUSEC_OK;
}

void fusec_plan_free(fusec_plan *p) {
    if (!p) return;
    if (p->backend_plan) p->f->module->backend->plan_destroy(p->backend_plan);
    free(p);
}

/* ---- memory ------------------------------------------------------------------------------ */

/* The target's memory functions; a module whose compilation failed before it chose a target
 * still frees and copies host memory. */
static const rt_backend *memory_backend(const fusec_module *m) {
    return m->backend ? m->backend : &rt_backend_ref;
}

fusec_status fusec_memory_alloc(fusec_module *m, size_t bytes, void **ptr) {
    if (ptr) *ptr = NULL;
    if (!m || !ptr) return FUSEC_ERR_INVALID_ARGUMENT;
    char err[512];
    fusec_status st = memory_backend(m)->mem_alloc(m->opt.device, bytes, ptr, err, sizeof err);
    if (st != FUSEC_OK) return set_message(m, st, "%s", err);
    return FUSEC_OK;
}

fusec_status fusec_memory_free(fusec_module *m, void *ptr) {
    if (!m) return FUSEC_ERR_INVALID_ARGUMENT;
    if (!ptr) return FUSEC_OK;
    char err[512];
    fusec_status st = memory_backend(m)->mem_free(ptr, err, sizeof err);
    if (st != FUSEC_OK) return set_message(m, st, "%s", err);
    return FUSEC_OK;
}

static fusec_status memory_copy(fusec_module *m, void *dst, const void *src, size_t bytes,
                                int to_device) {
    if (!m || (bytes && (!dst || !src))) return FUSEC_ERR_INVALID_ARGUMENT;
    char err[512];
    fusec_status st = memory_backend(m)->mem_copy(dst, src, bytes, to_device, err, sizeof err);
    if (st != FUSEC_OK) return set_message(m, st, "%s", err);
    return FUSEC_OK;
}

fusec_status fusec_memory_upload(fusec_module *m, void *dst, const void *host_src, size_t bytes) {
    return memory_copy(m, dst, host_src, bytes, 1);
}

fusec_status fusec_memory_download(fusec_module *m, void *host_dst, const void *src, size_t bytes) {
    return memory_copy(m, host_dst, src, bytes, 0);
}

fusec_status fusec_synchronize(fusec_module *m, void *stream) {
    if (!m) return FUSEC_ERR_INVALID_ARGUMENT;
    char err[512];
    fusec_status st = memory_backend(m)->synchronize(stream, err, sizeof err);
    if (st != FUSEC_OK) return set_message(m, st, "%s", err);
    return FUSEC_OK;
}

/* ---- measuring ------------------------------------------------------------------------- */

int fusec_function_num_kernels(const fusec_function *f) {
    if (!f || !f->fused || !f->fused->partition) return 0;
    return f->fused->partition->nkernels;
}

/* Launches of a prepared call, through a plan when there is one. */
static fusec_status launch_prepared(fusec_function *f, fusec_plan *plan, const ir_tensor *args,
                                    const int64_t *syms) {
    if (plan) return fusec_plan_launch(plan, NULL);
    ir_tensor copy[RT_MAX_ARGS];
    int n = f->checked->nparams + f->checked->noutputs;
    memcpy(copy, args, sizeof(ir_tensor) * (size_t)n);
    return run_call(f, copy, syms, NULL);
}

/* Host time of one launch call: batches of launches issued without waiting, the device
 * drained between batches so its queue never fills (a full queue blocks the host). */
static fusec_status host_time(fusec_function *f, fusec_plan *plan, const ir_tensor *args,
                              const int64_t *syms, int reps, double *host_us) {
    enum { BATCH = 10 };
    int batches = reps / BATCH > 5 ? reps / BATCH : 5;
    double *t = malloc(sizeof(double) * (size_t)batches);
    if (!t) return FUSEC_ERR_OUT_OF_MEMORY;
    fusec_status st = FUSEC_OK;
    for (int b = 0; b < batches && st == FUSEC_OK; b++) {
        double t0 = rt_now_ms();
        for (int k = 0; k < BATCH && st == FUSEC_OK; k++)
            st = launch_prepared(f, plan, args, syms);
        t[b] = (rt_now_ms() - t0) * 1e3 / BATCH;
        if (st == FUSEC_OK) st = fusec_synchronize(f->module, NULL);
    }
    if (st == FUSEC_OK) *host_us = rt_median(t, batches);
    free(t);
    return st;
}

fusec_status fusec_bench_run(fusec_function *f, const fusec_tensor *inputs, int ninputs,
                             const fusec_tensor *results, int nresults, int reps, int use_plan,
                             fusec_bench_result *out) {
    if (!f || !out || reps < 1) return FUSEC_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    fusec_module *m = f->module;
    ir_tensor args[RT_MAX_ARGS];
    int64_t syms[RT_MAX_SYMS];
    fusec_status st = prepare_call(f, inputs, ninputs, results, nresults, args, syms);
    if (st == FUSEC_OK) st = ensure_built(m);
    if (st != FUSEC_OK) return st;
    fusec_plan *plan = NULL;
    if (use_plan) {
        st = fusec_plan_create(f, inputs, ninputs, results, nresults, NULL, &plan);
        if (st != FUSEC_OK) return st;
    }
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!t) st = set_message(m, FUSEC_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == FUSEC_OK && m->backend && m->backend->time_launches) {
        char err[512];
        st = m->backend->time_launches(m->program, plan ? plan->backend_plan : NULL, f->index, args,
                                       syms, reps, t, err, sizeof err);
        if (st != FUSEC_OK) set_message(m, st, "%s", err);
        if (st == FUSEC_OK) st = host_time(f, plan, args, syms, reps, &out->host_us);
    } else if (st == FUSEC_OK) {
        /* the CPU and reference targets return when done: the wall clock is their clock */
        st = launch_prepared(f, plan, args, syms);
        for (int r = 0; r < reps && st == FUSEC_OK; r++) {
            double t0 = rt_now_ms();
            st = launch_prepared(f, plan, args, syms);
            t[r] = rt_now_ms() - t0;
        }
    }
    if (st == FUSEC_OK) {
        out->median_ms = rt_median(t, reps);
        out->min_ms = t[0];
        if (!out->host_us) out->host_us = out->median_ms * 1e3;
    }
    free(t);
    fusec_plan_free(plan);
    return st;
}

fusec_status fusec_bench_launch(fusec_function *f, const fusec_tensor *inputs, int ninputs,
                                const fusec_tensor *results, int nresults, int reps,
                                double *median_ms) {
    if (!median_ms) return FUSEC_ERR_INVALID_ARGUMENT;
    *median_ms = 0;
    fusec_bench_result r;
    fusec_status st = fusec_bench_run(f, inputs, ninputs, results, nresults, reps, 0, &r);
    if (st == FUSEC_OK) *median_ms = r.median_ms;
    return st;
}

fusec_status fusec_bench_copy(fusec_module *m, size_t bytes, int reps, double *median_ms) {
    if (!m || !median_ms || reps < 1) return FUSEC_ERR_INVALID_ARGUMENT;
    *median_ms = 0;
    char err[512];
    fusec_status st =
        memory_backend(m)->copy_time(m->opt.device, bytes, reps, median_ms, err, sizeof err);
    if (st != FUSEC_OK) return set_message(m, st, "%s", err);
    return FUSEC_OK;
}
