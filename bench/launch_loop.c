/* bench/launch_loop.c: the time of one fusec_launch (and one fusec_plan_launch) called from C
 * in a loop, the baseline bench/py_overhead.py sets the Python call against. Built by that
 * script with the system compiler against the library it measures.
 *
 *   launch_loop FILE.fuse FN REPS ROUNDS NAME=SIZE...
 *
 * Inputs are zero-filled buffers of the parameters' shapes (each symbolic dim bound by a
 * NAME=SIZE argument); prints one JSON object: the nanoseconds of one call in each round,
 * through fusec_launch and through a plan.
 */
#include <fusec.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The size of a declared dim: its literal, or the NAME=SIZE argument naming it. */
static int64_t dim_size(const fusec_param_info *p, int d, int nargs, char **args) {
    if (p->dims[d] >= 0) return p->dims[d];
    size_t len = strlen(p->dim_names[d]);
    for (int i = 0; i < nargs; i++)
        if (!strncmp(args[i], p->dim_names[d], len) && args[i][len] == '=')
            return atoll(args[i] + len + 1);
    fprintf(stderr, "launch_loop: no size for dim %s\n", p->dim_names[d]);
    exit(2);
}

/* A zero-filled host tensor; aligned for the kernels' vector loads. */
static void alloc_tensor(fusec_tensor *t) {
    size_t n = fusec_dtype_size(t->dtype);
    for (int d = 0; d < t->rank; d++)
        n *= (size_t)t->shape[d];
    t->data = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
    memset(t->data, 0, (n + 63) / 64 * 64 + 64);
}

/* Times ROUNDS rounds of REPS calls (plan: of p, else of fusec_launch); prints them. */
static int time_rounds(fusec_function *f, fusec_plan *p, const fusec_tensor *in, int ni,
                       const fusec_tensor *out, int no, int reps, int rounds) {
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (int k = 0; k < reps; k++) {
            fusec_status st =
                p ? fusec_plan_launch(p, NULL) : fusec_launch(f, in, ni, out, no, NULL);
            if (st != FUSEC_OK) return 1;
        }
        printf("%s%.1f", r ? ", " : "", (now_ns() - t0) / reps);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: launch_loop FILE.fuse FN REPS ROUNDS NAME=SIZE...\n");
        return 2;
    }
    int reps = atoi(argv[3]), rounds = atoi(argv[4]);
    fusec_options opt;
    fusec_options_init(&opt);
    opt.target = FUSEC_TARGET_CPU;
    fusec_module *m = NULL;
    fusec_function *f = NULL;
    if (fusec_module_compile_file(argv[1], &opt, &m) != FUSEC_OK ||
        fusec_module_function(m, argv[2], &f) != FUSEC_OK) {
        fprintf(stderr, "%s%s\n", fusec_module_diagnostics(m), fusec_module_message(m));
        return 1;
    }
    int ni = fusec_function_num_params(f), no = fusec_function_num_results(f);
    fusec_tensor in[FUSEC_MAX_ARGS], out[FUSEC_MAX_ARGS];
    for (int i = 0; i < ni; i++) {
        fusec_param_info p;
        fusec_function_param(f, i, &p);
        in[i].dtype = p.dtype;
        in[i].rank = p.rank;
        for (int d = 0; d < p.rank; d++)
            in[i].shape[d] = dim_size(&p, d, argc - 5, argv + 5);
        alloc_tensor(&in[i]);
    }
    fusec_plan *plan = NULL;
    if (fusec_function_result_shapes(f, in, ni, out, no) != FUSEC_OK) return 1;
    for (int i = 0; i < no; i++)
        alloc_tensor(&out[i]);
    if (fusec_plan_create(f, in, ni, out, no, NULL, &plan) != FUSEC_OK) {
        fprintf(stderr, "%s\n", fusec_module_message(m));
        return 1;
    }
    int bad = 0;
    printf("{\"launch_ns\": [");
    bad |= time_rounds(f, NULL, in, ni, out, no, reps, rounds);
    printf("], \"plan_ns\": [");
    bad |= time_rounds(f, plan, in, ni, out, no, reps, rounds);
    printf("]}\n");
    if (bad) fprintf(stderr, "launch_loop: %s\n", fusec_module_message(m));
    fusec_plan_free(plan);
    for (int i = 0; i < ni; i++)
        free(in[i].data);
    for (int i = 0; i < no; i++)
        free(out[i].data);
    fusec_module_free(m);
    return bad;
}
