/* tests/unit/fused_util.h: a .fuse file through the front end and the pass pipeline, for
 * the tests of the code generators (which take fused functions, not sources). */
#ifndef FUSEC_TESTS_FUSED_UTIL_H
#define FUSEC_TESTS_FUSED_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frontend/frontend.h"
#include "passes/passes.h"

/* The checked (unfused) module of source `text`, named `name` in diagnostics, in arena a;
 * NULL (and a failed check with the diagnostics) when it does not compile. */
static inline ir_module *checked_module(ir_arena *a, const char *name, const char *text) {
    size_t len = strlen(text);
    char *copy = ir_arena_alloc(a, len + 1);
    memcpy(copy, text, len + 1);
    diag_ctx d;
    diag_init(&d, a, name, copy, len);
    ast_file *file = NULL;
    ir_module *m = NULL;
    if (parse_file(&d, &file) || check_file(&d, file, &m) || d.nerrors || !m) {
        CHECK_MSG(0, "%s does not compile:\n%s", name, d.out.data ? d.out.data : "");
        return NULL;
    }
    return m;
}

/* The checked module of a source file, in arena a; NULL (and a failed check) on errors. */
static inline ir_module *checked_file(ir_arena *a, const char *path) {
    char *text = read_text(path);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    if (!text) return NULL;
    ir_module *m = checked_module(a, path, text);
    free(text);
    return m;
}

/* The fused functions of a source file, in arena a; n set. NULL on errors. */
static inline ir_func **fused_funcs(ir_arena *a, const char *path, int no_fuse, int *n) {
    *n = 0;
    ir_module *m = checked_file(a, path);
    if (!m) return NULL;
    ir_func **fs = ir_arena_calloc(a, (size_t)(m->nfuncs + 1), sizeof(ir_func *));
    for (int i = 0; i < m->nfuncs; i++) {
        ir_func *g = ir_func_clone(a, m->funcs[i]);
        char err[512];
        pass_options o = {0};
        o.no_fuse = no_fuse;
        int rc = pass_run_pipeline(g, &o, err, sizeof err);
        CHECK_MSG(rc == PASS_OK, "%s %s: %s", path, m->funcs[i]->name, err);
        if (rc != PASS_OK) return NULL;
        fs[i] = g;
    }
    *n = m->nfuncs;
    return fs;
}

/* Calls visit for every .fuse file of examples/ and tests/programs/ (under $FUSEC_SRC to
 * list them, named relative to it, where the tests run); `example` is set for examples/.
 * Returns how many files were visited. */
static inline int for_each_program(void (*visit)(const char *path, int example, void *ctx),
                                   void *ctx) {
    static const char *const dirs[] = {"examples", "tests/programs"};
    int files = 0;
    for (int d = 0; d < 2; d++) {
        char full[1024];
        const char *src = getenv("FUSEC_SRC");
        snprintf(full, sizeof full, "%s/%s", src ? src : ".", dirs[d]);
        DIR *dir = opendir(full);
        CHECK_MSG(dir != NULL, "cannot list %s", full);
        if (!dir) continue;
        struct dirent *e;
        while ((e = readdir(dir))) {
            size_t n = strlen(e->d_name);
            if (n < 6 || strcmp(e->d_name + n - 5, ".fuse") != 0) continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
            visit(path, d == 0, ctx);
            files++;
        }
        closedir(dir);
    }
    return files;
}

#endif
