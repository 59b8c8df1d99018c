/* passes/pipeline.c: the pass manager. The order of the passes is written once, in
 * `pipeline` below; after each pass the verifier checks the function (and its partition),
 * and --dump-after=NAME prints the IR after the pass NAME. */
#include "passes/passes.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef enum pass_mode {
    RUN_ALWAYS, /* clean-up, and the report */
    RUN_FUSE,   /* the fusion passes */
    RUN_NOFUSE, /* --no-fuse instead of them */
} pass_mode;

typedef struct pass_entry {
    const char *name;
    int (*run)(ir_func *f, pass_ctx *c);
    pass_mode mode;
} pass_entry;

/* ORDER PASSES: the pipeline, in order. */
static const pass_entry pipeline[] = {
    {"grad", pass_grad, RUN_ALWAYS},
    {"fold", pass_fold, RUN_ALWAYS},
    {"simplify", pass_simplify, RUN_ALWAYS},
    {"cse", pass_cse, RUN_ALWAYS},
    {"dce", pass_dce, RUN_ALWAYS},
    {"nofuse", pass_nofuse, RUN_NOFUSE},
    {"fuse_pointwise", pass_fuse_pointwise, RUN_FUSE},
    {"fuse_reduction", pass_fuse_reduction, RUN_FUSE},
    {"fuse_horizontal", pass_fuse_horizontal, RUN_FUSE},
    {"report", pass_report, RUN_ALWAYS},
};

#define NPASSES ((int)(sizeof pipeline / sizeof pipeline[0]))

/* The pipeline's names, in order, joined by ", " (the table is constant: built once). */
static char names[NPASSES * 24];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_init(void) {
    size_t n = 0;
    for (int i = 0; i < NPASSES; i++)
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", pipeline[i].name);
}

const char *pass_names(void) {
    pthread_once(&names_once, names_init);
    return names;
}

pass_fn pass_find(const char *name) {
    for (int i = 0; i < NPASSES; i++)
        if (!strcmp(name, pipeline[i].name)) return pipeline[i].run;
    return NULL;
}

static int runs(const pass_entry *p, const pass_options *o) {
    return p->mode == RUN_ALWAYS || (p->mode == RUN_NOFUSE) == (o->no_fuse != 0);
}

int pass_run_pipeline(ir_func *f, const pass_options *o, char *err, size_t errlen) {
    static const pass_options none;
    if (!o) o = &none;
    if (err && errlen) err[0] = 0;
    int dump = -1;
    if (o->dump_after) {
        for (int i = 0; i < NPASSES; i++)
            if (!strcmp(o->dump_after, pipeline[i].name)) dump = i;
        if (dump < 0) {
            snprintf(err, errlen, "unknown pass '%s' for --dump-after (passes: %s)", o->dump_after,
                     pass_names());
            return PASS_ERR_USAGE;
        }
        if (!runs(&pipeline[dump], o)) {
            snprintf(err, errlen, "pass '%s' does not run %s", o->dump_after,
                     o->no_fuse ? "with --no-fuse" : "without --no-fuse");
            return PASS_ERR_USAGE;
        }
    }
    pass_ctx c = {o, err, errlen, NULL};
    char verr[512];
    for (int i = 0; i < NPASSES; i++) {
        const pass_entry *p = &pipeline[i];
        if (!runs(p, o)) continue;
        /* the report's baseline: the function as the partitioning passes get it */
        if (p->mode != RUN_ALWAYS && !c.cleaned && o->verbose && o->report) {
            c.cleaned = ir_func_clone(f->arena, f);
            if (!c.cleaned) {
                snprintf(err, errlen, "out of memory");
                return PASS_ERR_INTERNAL;
            }
        }
        if (p->run(f, &c)) {
            if (err && errlen && !err[0]) snprintf(err, errlen, "pass %s failed", p->name);
            return PASS_ERR_INTERNAL;
        }
        if (ir_verify(f, verr, sizeof verr)) {
            snprintf(err, errlen, "internal error: the IR of '%s' after pass %s is invalid: %s",
                     f->name, p->name, verr);
            return PASS_ERR_INTERNAL;
        }
        if (i == dump) {
            ir_buf *b = o->dump ? o->dump : o->report;
            if (b) ir_print_func(b, f);
        }
    }
    if (!f->partition) {
        snprintf(err, errlen, "internal error: no pass partitioned '%s'", f->name);
        return PASS_ERR_INTERNAL;
    }
    return PASS_OK;
}
