/* tools/run.c: `fusec run`: one function of a .fuse file on .npy inputs, its results written
 * as .npy files or printed. The steps (compile, inputs, launch, results) are apart so that
 * `--target=all` (tools/run_all.c) runs the same inputs on every target and compares. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fusec.h"
#include "npy.h"

void cli_run_free(cli_run_io *io) {
    for (int i = 0; i < io->nparams && i < MAX_BINDINGS; i++)
        free(io->ins[i].data);
    for (int i = 0; i < io->nresults && i < MAX_BINDINGS; i++)
        free(io->outs[i].data);
    memset(io, 0, sizeof *io);
}

int cli_run_compile(const cli *c, const fusec_options *base, fusec_module **out, fusec_function **f,
                    fusec_status *build) {
    fusec_options opt = *base;
    opt.function = c->function; /* the function run, alone through the passes and codegen */
    *out = NULL;
    fusec_module *m = NULL;
    fusec_status st = fusec_module_compile_file(c->files[0], &opt, &m);
    if (!m) {
        fprintf(stderr, "fusec: error: %s\n", fusec_status_string(st));
        return EXIT_INTERNAL;
    }
    int rc = cli_missing_function(c, m, st);
    /* build before reporting, so -v shows the backend's lines and a missing device is said
     * before any input is read */
    fusec_status bst = FUSEC_OK;
    if (rc == EXIT_OK && st == FUSEC_OK) st = bst = fusec_module_build(m);
    if (rc == EXIT_OK && build && bst != FUSEC_OK) { /* the caller reports it */
        *build = bst;
        *out = m;
        return cli_exit_code(bst);
    }
    if (rc == EXIT_OK) cli_print_module_messages(m, st);
    if (rc == EXIT_OK && st != FUSEC_OK) rc = cli_exit_code(st);
    int np, nr;
    if (rc == EXIT_OK) rc = cli_find_function(c, m, f, &np, &nr);
    if (rc != EXIT_OK) {
        fusec_module_free(m);
        return rc;
    }
    *out = m;
    return EXIT_OK;
}

/* Parameter p's input: its file read, converted to the parameter's dtype, and its view. */
static int load_input(const cli *c, const fusec_param_info *p, int i, cli_run_io *io) {
    char err[512];
    const char *path = NULL, *view = "";
    for (int b = 0; b < c->nins; b++)
        if (!strcmp(c->ins[b].name, p->name)) path = c->ins[b].path, view = c->ins[b].view;
    if (!path) {
        fprintf(stderr, "fusec: error: missing input for parameter '%s' (--in %s=FILE.npy)\n",
                p->name, p->name);
        return EXIT_INPUT;
    }
    npy_array a;
    if (npy_read(path, &a, err, sizeof err) != 0) {
        fprintf(stderr, "fusec: error: parameter '%s': %s\n", p->name, err);
        return EXIT_INPUT;
    }
    fusec_tensor *t = &io->ins[i];
    t->dtype = p->dtype;
    t->rank = a.rank;
    memcpy(t->shape, a.shape, sizeof a.shape);
    int cv = npy_convert(&a, p->dtype, &t->data, err, sizeof err);
    npy_free(&a);
    if (cv != 0) {
        fprintf(stderr, "fusec: error: parameter '%s': %s\n", p->name, err);
        return EXIT_INTERNAL;
    }
    cli_view *v = &io->views[i];
    if (cli_view_parse(view, t->rank, t->shape, a.fortran, v, err, sizeof err) != 0) {
        fprintf(stderr, "fusec: error: parameter '%s': %s\n", p->name, err);
        return EXIT_INPUT;
    }
    /* what the call sees: the view (its data pointer once in the target's memory); a
     * Fortran-order file is one too, read in place through its strides */
    io->call_ins[i] = *t;
    io->call_ins[i].rank = v->rank;
    memcpy(io->call_ins[i].shape, v->shape, sizeof v->shape);
    io->call_ins[i].strides = *view || a.fortran ? v->strides : NULL;
    return EXIT_OK;
}

int cli_run_inputs(const cli *c, fusec_module *m, fusec_function *f, cli_run_io *io) {
    memset(io, 0, sizeof *io);
    int nparams = fusec_function_num_params(f), nresults = fusec_function_num_results(f);
    for (int b = 0; b < c->nins; b++) {
        int found = 0;
        for (int i = 0; i < nparams; i++) {
            fusec_param_info p;
            fusec_function_param(f, i, &p);
            found |= !strcmp(p.name, c->ins[b].name);
        }
        if (!found) {
            fprintf(stderr, "fusec: error: '%s' has no parameter '%s'\n", c->function,
                    c->ins[b].name);
            return EXIT_INPUT;
        }
    }
    for (int i = 0; i < nparams; i++) {
        fusec_param_info p;
        fusec_function_param(f, i, &p);
        io->nparams = i + 1; /* (what cli_run_free frees) */
        int rc = load_input(c, &p, i, io);
        if (rc != EXIT_OK) return rc;
    }
    if (c->nouts != 0 && c->nouts != nresults) {
        fprintf(stderr, "fusec: error: '%s' has %d result%s but %d --out file%s given\n",
                c->function, nresults, nresults == 1 ? "" : "s", c->nouts,
                c->nouts == 1 ? " was" : "s were");
        return EXIT_INPUT;
    }
    fusec_status st = fusec_function_result_shapes(f, io->call_ins, nparams, io->outs, nresults);
    if (st != FUSEC_OK) {
        fprintf(stderr, "fusec: error: %s\n", fusec_module_message(m));
        return cli_exit_code(st);
    }
    io->nresults = nresults;
    return EXIT_OK;
}

/* Host memory for the results, their sizes checked first: they are shaped by the inputs,
 * and may broadcast them into more than fits. EXIT_OK or the exit code of the error. */
static int alloc_results(fusec_tensor *outs, int n) {
    for (int i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "result %d", i);
        int64_t count;
        size_t bytes;
        free(outs[i].data);
        outs[i].data = NULL;
        int rc = cli_alloc_tensor(&outs[i], what, &count, &bytes);
        if (rc != EXIT_OK) return rc;
        memset(outs[i].data, 0xff, bytes); /* poison: a result never written shows as NaN/-1 */
    }
    return EXIT_OK;
}

int cli_run_launch(fusec_module *m, fusec_function *f, cli_run_io *io, fusec_status *status) {
    fusec_tensor dev_ins[MAX_BINDINGS], dev_outs[MAX_BINDINGS], call[MAX_BINDINGS];
    memset(dev_ins, 0, sizeof dev_ins);
    memset(dev_outs, 0, sizeof dev_outs);
    *status = FUSEC_OK;
    int np = io->nparams, nr = io->nresults;
    /* in the target's memory (the GPU's on CUDA), results poisoned there too */
    int rc = alloc_results(io->outs, nr);
    if (rc == EXIT_OK) rc = cli_to_target(m, io->ins, np, 1, dev_ins);
    if (rc == EXIT_OK) rc = cli_to_target(m, io->outs, nr, 1, dev_outs);
    if (rc == EXIT_OK) {
        for (int i = 0; i < np; i++) {
            call[i] = io->call_ins[i];
            call[i].data = (char *)dev_ins[i].data +
                           io->views[i].offset * (int64_t)fusec_dtype_size(io->ins[i].dtype);
        }
        *status = fusec_launch(f, call, np, dev_outs, nr, NULL);
        if (*status != FUSEC_OK) rc = cli_exit_code(*status);
    }
    if (rc == EXIT_OK) rc = cli_from_target(m, io->outs, dev_outs, nr);
    cli_free_target(m, dev_ins, np);
    cli_free_target(m, dev_outs, nr);
    return rc;
}

static void print_element(const fusec_tensor *t, int64_t i) {
    const char *p = (const char *)t->data + (size_t)i * fusec_dtype_size(t->dtype);
    switch (t->dtype) {
    case FUSEC_BOOL: printf(" %d", *p != 0); break;
    case FUSEC_I32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        printf(" %" PRId32, v);
    } break;
    case FUSEC_I64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        printf(" %" PRId64, v);
    } break;
    default: {
        double v = 0;
        fusec_convert(t->dtype, p, FUSEC_F64, &v, 1);
        printf(" %.9g", v);
    } break;
    }
}

/* A result without --out: its dtype, shape and first elements, on one line. */
static void print_values(int index, const fusec_tensor *t) {
    int64_t n = 1;
    printf("result %d: %s[", index, fusec_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++) {
        printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
        n *= t->shape[d];
    }
    printf("] =");
    int64_t shown = n < 8 ? n : 8;
    for (int64_t i = 0; i < shown; i++)
        print_element(t, i);
    printf("%s\n", n > shown ? " ..." : "");
}

int cli_run_results(const cli *c, const cli_run_io *io) {
    char err[512];
    for (int i = 0; i < io->nresults; i++) {
        const fusec_tensor *t = &io->outs[i];
        if (c->nouts == 0) {
            print_values(i, t);
            continue;
        }
        if (npy_write(c->outs[i], t->dtype, t->rank, t->shape, t->data, err, sizeof err) != 0) {
            fprintf(stderr, "fusec: error: %s\n", err);
            return EXIT_INPUT;
        }
    }
    return EXIT_OK;
}

int cli_run(cli *c) {
    if (c->nfiles != 1) return cli_usage_error("%s", "run takes one FILE.fuse");
    if (!c->function) return cli_usage_error("%s", "run needs -f FUNCTION");
    for (int i = 0; i < c->nouts; i++)
        if (cli_check_not_input(c, "--out", c->outs[i])) return EXIT_USAGE;
    if (c->all) return cli_run_all(c);
    fusec_module *m = NULL;
    fusec_function *f = NULL;
    int rc = cli_run_compile(c, &c->opt, &m, &f, NULL);
    if (rc != EXIT_OK) return rc;
    cli_run_io io;
    fusec_status st = FUSEC_OK;
    rc = cli_run_inputs(c, m, f, &io);
    if (rc == EXIT_OK) rc = cli_run_launch(m, f, &io, &st);
    if (rc == EXIT_OK) {
        rc = cli_run_results(c, &io);
    } else if (st != FUSEC_OK) {
        fprintf(stderr, "fusec: error: %s\n", fusec_module_message(m));
    }
    cli_run_free(&io);
    fusec_module_free(m);
    return rc;
}
