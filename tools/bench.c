/* tools/bench.c: `fusec bench`: draws random inputs (fixed seed) for the given dims, times
 * the function, and sets it against the target's own copy bandwidth measured in the same
 * run, with the compile times (cold, unless --no-cold-compile, and again from the cache). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "fusec.h"

typedef struct bench_result {
    const char *target;
    double median_ms, copy_ms;
    double host_us; /* host time of one launch call */
    double bytes;
    int kernels;
    double compile_cold_ms, compile_cached_ms;
} bench_result;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* xorshift64*: a fixed, portable stream, so every run and machine sees the same inputs */
static uint64_t next_random(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

/* Fills n elements of dtype t with non-zero values: floats in [-2, 2), integers in
 * [-100, 100], bools both ways. */
static void fill_random(void *data, fusec_dtype t, int64_t n, uint64_t *seed) {
    enum { CHUNK = 4096 };
    double f[CHUNK];
    int64_t iv[CHUNK];
    size_t size = fusec_dtype_size(t);
    for (int64_t done = 0; done < n; done += CHUNK) {
        int64_t k = n - done < CHUNK ? n - done : CHUNK;
        char *dst = (char *)data + (size_t)done * size;
        if (t == FUSEC_BOOL || t == FUSEC_I32 || t == FUSEC_I64) {
            for (int64_t i = 0; i < k; i++) {
                int64_t v = (int64_t)(next_random(seed) % 201) - 100;
                iv[i] = v ? v : 1;
            }
            fusec_convert(FUSEC_I64, iv, t, dst, (size_t)k);
        } else {
            for (int64_t i = 0; i < k; i++) {
                double v = (double)(next_random(seed) >> 11) * 0x1p-53 * 4.0 - 2.0;
                f[i] = v != 0 ? v : 0.5;
            }
            fusec_convert(FUSEC_F64, f, t, dst, (size_t)k);
        }
    }
}

/* Compiles and builds; *ms is the time both took. */
static fusec_status compile_timed(const char *path, const fusec_options *opt, fusec_module **m,
                                  double *ms) {
    double t0 = now_ms();
    fusec_status st = fusec_module_compile_file(path, opt, m);
    if (st == FUSEC_OK) st = fusec_module_build(*m);
    *ms = now_ms() - t0;
    if (*m && opt->verbose) fputs(fusec_module_report(*m), stderr); /* -v: each compile's */
    return st;
}

static const char *target_name(fusec_target t) {
    switch (t) {
    case FUSEC_TARGET_CUDA: return "cuda";
    case FUSEC_TARGET_CPU: return "cpu";
    case FUSEC_TARGET_REF: return "ref";
    default: return "auto";
    }
}

/* Whether a parameter of f has a symbolic dim called name. */
static int has_symbolic_dim(fusec_function *f, int np, const char *name) {
    for (int i = 0; i < np; i++) {
        fusec_param_info p;
        fusec_function_param(f, i, &p);
        for (int d = 0; d < p.rank; d++)
            if (p.dims[d] < 0 && !strcmp(p.dim_names[d], name)) return 1;
    }
    return 0;
}

/* A --dim naming no symbolic dim of the function is a mistake (a typo, or the dims of
 * another function), not something to ignore; EXIT_OK or the usage error's code. */
static int check_dims(const cli *c, fusec_function *f, int np) {
    for (int b = 0; b < c->ndims; b++) {
        if (has_symbolic_dim(f, np, c->dims[b].name)) continue;
        return cli_usage_error("--dim %s: no parameter of '%s' has a symbolic dim '%s'",
                               c->dims[b].name, c->function, c->dims[b].name);
    }
    return EXIT_OK;
}

/* The shape of parameter p: its literal dims, and its symbolic ones from --dim; EXIT_OK or
 * the exit code of the error reported. */
static int param_shape(const cli *c, const fusec_param_info *p, fusec_tensor *t) {
    t->dtype = p->dtype;
    t->rank = p->rank;
    for (int d = 0; d < p->rank; d++) {
        int64_t size = p->dims[d];
        for (int b = 0; b < c->ndims && size < 0; b++)
            if (!strcmp(c->dims[b].name, p->dim_names[d])) size = c->dims[b].size;
        if (size < 0) {
            fprintf(stderr, "fusec: error: give the size of dim '%s' (--dim %s=SIZE)\n",
                    p->dim_names[d], p->dim_names[d]);
            return EXIT_INPUT;
        }
        t->shape[d] = size;
    }
    return EXIT_OK;
}

static void print_result(const cli *c, const bench_result *r) {
    double gbs = r->bytes / (r->median_ms * 1e6);
    double copy_gbs = r->bytes / (r->copy_ms * 1e6);
    double pct = 100.0 * r->copy_ms / r->median_ms;
    char cold[32] = "null"; /* not measured: --no-cold-compile */
    if (r->compile_cold_ms >= 0) snprintf(cold, sizeof cold, "%.3f", r->compile_cold_ms);
    if (!strcmp(c->format, "json")) {
        printf("{\"file\": \"%s\", \"function\": \"%s\", \"target\": \"%s\", \"fused\": %s, "
               "\"reps\": %d, \"median_ms\": %.6f, \"bytes\": %.0f, \"gbps\": %.3f, "
               "\"copy_ms\": %.6f, \"copy_gbps\": %.3f, \"pct_of_copy\": %.2f, "
               "\"kernels\": %d, \"compile_cold_ms\": %s, \"compile_cached_ms\": %.3f, "
               "\"launch\": \"%s\", \"host_us_per_launch\": %.3f, \"host_us_per_kernel\": %.3f}\n",
               c->files[0], c->function, r->target, c->opt.no_fuse ? "false" : "true", c->reps,
               r->median_ms, r->bytes, gbs, r->copy_ms, copy_gbs, pct, r->kernels, cold,
               r->compile_cached_ms, c->plan ? "plan" : "stream", r->host_us,
               r->host_us / (r->kernels > 0 ? r->kernels : 1));
        return;
    }
    printf("%s %s on %s (%s), median of %d runs\n", c->files[0], c->function, r->target,
           c->opt.no_fuse ? "--no-fuse" : "fused", c->reps);
    printf("  time            %12.4f ms\n", r->median_ms);
    printf("  bytes moved     %12.0f (each input read once, each output written once)\n", r->bytes);
    printf("  achieved        %12.2f GB/s\n", gbs);
    printf("  copy bandwidth  %12.2f GB/s (same bytes, measured in this run)\n", copy_gbs);
    printf("  of copy         %12.1f %%\n", pct);
    printf("  kernels         %12d\n", r->kernels);
    printf("  host per launch %12.3f us (%s; %.3f us a kernel)\n", r->host_us,
           c->plan ? "plan" : "stream", r->host_us / (r->kernels > 0 ? r->kernels : 1));
    if (r->compile_cold_ms >= 0)
        printf("  compile cold    %12.3f ms (no cache)\n", r->compile_cold_ms);
    else
        printf("  compile cold    %12s (--no-cold-compile)\n", "not measured");
    printf("  compile cached  %12.3f ms\n", r->compile_cached_ms);
}

int cli_bench(cli *c) {
    if (c->nfiles != 1) return cli_usage_error("%s", "bench takes one FILE.fuse");
    if (!c->function) return cli_usage_error("%s", "bench needs -f FUNCTION");
    bench_result r = {0};
    /* the function benchmarked, alone through the passes and the code generator: the compile
     * times are its own */
    fusec_options opt = c->opt;
    opt.function = c->function;
    fusec_options cold = opt;
    cold.no_cache = 1;
    fusec_module *m = NULL;
    /* --no-cold-compile: the first build goes through the cache as the options say (a hit
     * after the first size of a sweep), and no cold time is reported */
    double unused;
    fusec_status st = compile_timed(c->files[0], c->no_cold ? &opt : &cold, &m,
                                    c->no_cold ? &unused : &r.compile_cold_ms);
    if (c->no_cold) r.compile_cold_ms = -1;
    int rc = m ? cli_missing_function(c, m, st) : EXIT_OK;
    if (rc != EXIT_OK) {
        fusec_module_free(m);
        return rc;
    }
    if (st != FUSEC_OK) {
        cli_print_module_messages(m, st);
        fusec_module_free(m);
        return cli_exit_code(st);
    }
    fusec_module_free(m);
    m = NULL;
    /* fill the cache (--no-cold-compile's first build did), then time a compile that finds it */
    if (!c->opt.no_cache && !c->no_cold) {
        st = compile_timed(c->files[0], &opt, &m, &r.compile_cached_ms);
        fusec_module_free(m);
        m = NULL;
    }
    if (st == FUSEC_OK) st = compile_timed(c->files[0], &opt, &m, &r.compile_cached_ms);
    if (st != FUSEC_OK) {
        cli_print_module_messages(m, st);
        fusec_module_free(m);
        return cli_exit_code(st);
    }
    fputs(fusec_module_diagnostics(m), stderr);
    r.target = target_name(fusec_module_target(m));

    rc = EXIT_OK;
    fusec_function *f = NULL;
    fusec_tensor ins[MAX_BINDINGS], outs[MAX_BINDINGS], dev_ins[MAX_BINDINGS],
        dev_outs[MAX_BINDINGS];
    memset(ins, 0, sizeof ins);
    memset(outs, 0, sizeof outs);
    memset(dev_ins, 0, sizeof dev_ins);
    memset(dev_outs, 0, sizeof dev_outs);
    int np = 0, nr = 0;
    uint64_t seed = 0x5eed5eed5eedULL;
    rc = cli_find_function(c, m, &f, &np, &nr);
    if (rc == EXIT_OK) rc = check_dims(c, f, np);
    if (rc != EXIT_OK) goto done;
    for (int i = 0; i < np; i++) {
        fusec_param_info p;
        fusec_function_param(f, i, &p);
        char what[256];
        snprintf(what, sizeof what, "parameter '%s'", p.name);
        int64_t n;
        size_t bytes;
        rc = param_shape(c, &p, &ins[i]);
        if (rc == EXIT_OK) rc = cli_alloc_tensor(&ins[i], what, &n, &bytes);
        if (rc != EXIT_OK) goto done;
        fill_random(ins[i].data, p.dtype, n, &seed);
        r.bytes += (double)bytes;
    }
    st = fusec_function_result_shapes(f, ins, np, outs, nr);
    if (st != FUSEC_OK) {
        fprintf(stderr, "fusec: error: %s\n", fusec_module_message(m));
        rc = cli_exit_code(st);
        goto done;
    }
    for (int i = 0; i < nr; i++) {
        char what[32];
        snprintf(what, sizeof what, "result %d", i);
        int64_t n;
        size_t bytes;
        rc = cli_alloc_tensor(&outs[i], what, &n, &bytes);
        if (rc != EXIT_OK) goto done;
        r.bytes += (double)bytes;
    }
    r.kernels = fusec_function_num_kernels(f);
    rc = cli_to_target(m, ins, np, 1, dev_ins);
    if (rc == EXIT_OK) rc = cli_to_target(m, outs, nr, 0, dev_outs);
    if (rc != EXIT_OK) goto done;
    fusec_bench_result br;
    st = fusec_bench_run(f, dev_ins, np, dev_outs, nr, c->reps, c->plan, &br);
    r.median_ms = br.median_ms;
    r.host_us = br.host_us;
    if (st == FUSEC_OK) st = fusec_bench_copy(m, (size_t)r.bytes, c->reps, &r.copy_ms);
    if (st != FUSEC_OK) {
        fprintf(stderr, "fusec: error: %s\n", fusec_module_message(m));
        rc = cli_exit_code(st);
        goto done;
    }
    print_result(c, &r);
done:
    cli_free_target(m, dev_ins, np);
    cli_free_target(m, dev_outs, nr);
    for (int i = 0; i < np && i < MAX_BINDINGS; i++)
        free(ins[i].data);
    for (int i = 0; i < nr && i < MAX_BINDINGS; i++)
        free(outs[i].data);
    fusec_module_free(m);
    return rc;
}
