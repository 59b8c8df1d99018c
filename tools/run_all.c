/* tools/run_all.c: `fusec run --target=all`: the function on the same inputs on every target
 * this machine has (the CPU fused and --no-fuse, at the host's CPU and at each x86-64 level
 * it runs; CUDA fused and --no-fuse where there is a GPU), each run's results compared bit
 * for bit with the first run's: the check of SPEC §5's one answer a user runs on their own
 * program and inputs. NaN against NaN counts as the same (SPEC §5: payloads may differ). A
 * --no-fuse run that differs from the fused ones is compared with the first --no-fuse run as
 * well: a program with f16 or bf16 values may differ fused and unfused (SPEC §1), each then
 * one answer of its own. The first run's results are written (--out) or printed as `fusec run`
 * does. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fusec.h"

typedef struct run_config {
    const char *name;
    fusec_target target;
    const char *cpu; /* NULL: the host's own */
    int no_fuse;
} run_config;

/* x86-64-v2 is not among them: without FMA instructions, the written-out fused multiply-adds
 * of the math are two roundings there (docs/reproducibility.md) */
static const run_config configs[] = {
    {"cpu", FUSEC_TARGET_CPU, NULL, 0},
    {"cpu --no-fuse", FUSEC_TARGET_CPU, NULL, 1},
#if defined(__x86_64__)
    {"cpu --cpu=x86-64-v3", FUSEC_TARGET_CPU, "x86-64-v3", 0},
    {"cpu --cpu=x86-64-v4", FUSEC_TARGET_CPU, "x86-64-v4", 0},
#endif
    {"cuda", FUSEC_TARGET_CUDA, NULL, 0},
    {"cuda --no-fuse", FUSEC_TARGET_CUDA, NULL, 1},
};
enum { NCONFIGS = sizeof configs / sizeof configs[0] };

static int is_nan(fusec_dtype t, const unsigned char *p) {
    if (t == FUSEC_BOOL || t == FUSEC_I32 || t == FUSEC_I64) return 0;
    double v;
    fusec_convert(t, p, FUSEC_F64, &v, 1);
    return v != v;
}

/* Element k of t: its value and its bits in hex. */
static void print_element(const fusec_tensor *t, int64_t k) {
    size_t size = fusec_dtype_size(t->dtype);
    const unsigned char *p = (const unsigned char *)t->data + (size_t)k * size;
    uint64_t bits = 0;
    for (size_t i = 0; i < size; i++)
        bits |= (uint64_t)p[i] << (8 * i); /* (little-endian hosts, as the .npy files) */
    double v = 0;
    fusec_convert(t->dtype, p, FUSEC_F64, &v, 1);
    printf("%.17g (0x%0*" PRIx64 ")", v, (int)size * 2, bits);
}

static void print_index(const fusec_tensor *t, int64_t k) {
    int64_t idx[FUSEC_MAX_RANK];
    for (int d = t->rank - 1; d >= 0; d--) {
        idx[d] = t->shape[d] ? k % t->shape[d] : 0;
        k = t->shape[d] ? k / t->shape[d] : 0;
    }
    printf("[");
    for (int d = 0; d < t->rank; d++)
        printf("%s%" PRId64, d ? ", " : "", idx[d]);
    printf("]");
}

/* Compares b's results with a's: 1 when they are the same bits (NaN as NaN), else (unless
 * quiet) reports the first element that differs and how many do. */
static int same_results(const cli_run_io *a, const cli_run_io *b, int quiet) {
    int same = 1;
    for (int i = 0; i < a->nresults; i++) {
        const fusec_tensor *x = &a->outs[i], *y = &b->outs[i];
        size_t size = fusec_dtype_size(x->dtype);
        int64_t n = (int64_t)(cli_tensor_bytes(x) / size), first = -1, count = 0;
        const unsigned char *p = x->data, *q = y->data;
        for (int64_t k = 0; k < n; k++, p += size, q += size) {
            if (!memcmp(p, q, size) || (is_nan(x->dtype, p) && is_nan(x->dtype, q))) continue;
            if (first < 0) first = k;
            count++;
        }
        if (first < 0) continue;
        if (quiet) return 0;
        if (same) printf("differs:");
        same = 0;
        printf(" result %d at ", i);
        print_index(x, first);
        printf(": ");
        print_element(y, first);
        printf(" against ");
        print_element(x, first);
        printf("; %" PRId64 " of %" PRId64 " elements differ", count, n);
    }
    if (!same) printf("\n");
    return same;
}

/* One configuration: 1 when it ran (io filled), 0 when this machine cannot run it (said
 * why), -1 on an error the user must see (reported; *rc its exit code). */
static int run_config_once(cli *c, const run_config *rc_, cli_run_io *io, int have_inputs,
                           int *rc) {
    fusec_options opt = c->opt;
    opt.target = rc_->target;
    opt.cpu = rc_->cpu;
    opt.no_fuse = rc_->no_fuse;
    fusec_module *m = NULL;
    fusec_function *f = NULL;
    fusec_status build = FUSEC_OK, st = FUSEC_OK;
    *rc = cli_run_compile(c, &opt, &m, &f, &build);
    if (*rc != EXIT_OK && build != FUSEC_OK) {
        /* no GPU, a target not built in, a CPU level the compiler does not know here */
        printf("skipped: %s\n",
               *fusec_module_message(m) ? fusec_module_message(m) : fusec_status_string(build));
        fusec_module_free(m);
        *rc = EXIT_OK;
        return 0;
    }
    if (*rc != EXIT_OK) return -1;
    if (!have_inputs) *rc = cli_run_inputs(c, m, f, io);
    if (*rc == EXIT_OK) *rc = cli_run_launch(m, f, io, &st);
    int ran = *rc == EXIT_OK ? 1 : -1;
    if (st == FUSEC_ERR_UNSUPPORTED) { /* code for a CPU the host lacks */
        printf("skipped: %s\n", fusec_module_message(m));
        *rc = EXIT_OK;
        ran = 0;
    } else if (st != FUSEC_OK) {
        fprintf(stderr, "fusec: error: %s: %s\n", rc_->name, fusec_module_message(m));
    }
    fusec_module_free(m);
    return ran;
}

/* Whether the function has an f16 or bf16 parameter or result: its fused and --no-fuse
 * results may then differ by the rounding of stored intermediates (SPEC §1). */
static int has_half(const cli_run_io *io) {
    for (int i = 0; i < io->nparams; i++)
        if (io->ins[i].dtype == FUSEC_F16 || io->ins[i].dtype == FUSEC_BF16) return 1;
    for (int i = 0; i < io->nresults; i++)
        if (io->outs[i].dtype == FUSEC_F16 || io->outs[i].dtype == FUSEC_BF16) return 1;
    return 0;
}

/* A run compared: with the first (fused) run's results, and a --no-fuse run that differs from
 * those with the first such run's (kept in *nf, its name in *nf_name, the first time). The
 * count of runs that differ from their own kind's first in *ndiffer; *mode set when the
 * --no-fuse runs differ from the fused ones. */
static void compare_run(const run_config *cfg, const cli_run_io *first, cli_run_io *io,
                        cli_run_io *nf, const char **nf_name, int *ndiffer, int *mode) {
    if (same_results(first, io, 1)) {
        printf("the same bits\n");
        return;
    }
    if (cfg->no_fuse && *nf_name && same_results(nf, io, 1)) {
        printf("the same bits as %s (not as the fused runs)\n", *nf_name);
        return;
    }
    same_results(first, io, 0);
    if (cfg->no_fuse && !*nf_name) { /* the --no-fuse runs' first: kept */
        *nf = *io;
        for (int r = 0; r < io->nresults; r++)
            io->outs[r].data = NULL;
        *nf_name = cfg->name;
        *mode = 1;
        return;
    }
    (*ndiffer)++;
}

int cli_run_all(cli *c) {
    cli_run_io first, io, nf;
    memset(&first, 0, sizeof first);
    memset(&io, 0, sizeof io);
    memset(&nf, 0, sizeof nf);
    const char *nf_name = NULL;
    int rc = EXIT_OK, nran = 0, ndiffer = 0, mode = 0;
    for (int i = 0; i < NCONFIGS && rc == EXIT_OK; i++) {
        printf("%-22s ", configs[i].name);
        fflush(stdout);
        cli_run_io *into = nran ? &io : &first;
        if (nran) { /* the same inputs, read once */
            for (int r = 0; r < io.nresults; r++)
                free(io.outs[r].data);
            memcpy(io.ins, first.ins, sizeof io.ins);
            memcpy(io.call_ins, first.call_ins, sizeof io.call_ins);
            memcpy(io.views, first.views, sizeof io.views);
            memcpy(io.outs, first.outs, sizeof io.outs);
            for (int r = 0; r < first.nresults; r++)
                io.outs[r].data = NULL;
            io.nparams = first.nparams;
            io.nresults = first.nresults;
        }
        int ran = run_config_once(c, &configs[i], into, nran > 0, &rc);
        if (ran < 0 && !nran) printf("failed\n");
        if (ran <= 0) continue;
        if (nran++ == 0) {
            printf("ran: the others are compared with its results\n");
            continue;
        }
        compare_run(&configs[i], &first, &io, &nf, &nf_name, &ndiffer, &mode);
    }
    if (mode && has_half(&first)) {
        printf("fused and --no-fuse differ, as SPEC §1 allows where f16 or bf16 intermediates are "
               "stored (--no-fuse rounds each)\n");
        mode = 0;
    }
    ndiffer += mode;
    if (rc == EXIT_OK) {
        if (nran == 0)
            printf("no target ran\n");
        else if (ndiffer)
            printf("%d of %d runs differ from the first of their kind\n", ndiffer, nran);
        else if (nf_name)
            printf("%d runs, one answer fused and one --no-fuse: each the same bits on every "
                   "target\n",
                   nran);
        else
            printf("%d run%s, one answer: the same bits%s\n", nran, nran == 1 ? "" : "s",
                   nran == 1 ? " (nothing to compare)" : " on every one");
        rc = cli_run_results(c, &first);
        if (rc == EXIT_OK && nran == 0) rc = EXIT_INTERNAL;
        if (rc == EXIT_OK && ndiffer) rc = EXIT_DIFFERS;
    }
    for (int r = 0; r < io.nresults; r++)
        free(io.outs[r].data);
    for (int r = 0; r < nf.nresults; r++)
        free(nf.outs[r].data);
    cli_run_free(&first);
    return rc;
}
