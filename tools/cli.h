/* tools/cli.h: what the parts of the fusec command line share: the parsed arguments, exit
 * codes and the helpers that report errors. */
#ifndef FUSEC_TOOLS_CLI_H
#define FUSEC_TOOLS_CLI_H

#include <stdint.h>

#include "fusec.h"

/* EXIT_DIFFERS: `fusec run --target=all` ran, and two targets gave other bits */
enum { EXIT_OK = 0, EXIT_INPUT = 1, EXIT_USAGE = 2, EXIT_INTERNAL = 3, EXIT_DIFFERS = 4 };

#define MAX_FILES    256
#define MAX_BINDINGS FUSEC_MAX_ARGS /* --in, --out, --dim: one a parameter or result at most */

typedef struct binding {
    const char *name; /* NULL for a positional --out */
    const char *path;
    const char *view; /* --in: what follows the file (tools/view.c), "" for none */
} binding;

typedef struct dim_binding {
    const char *name;
    int64_t size;
} dim_binding;

typedef struct cli {
    const char *command; /* NULL (compile), "run", "bench", "cache" */
    const char *files[MAX_FILES];
    int nfiles;
    fusec_options opt;
    const char *emit;
    const char *output;
    const char *function;
    binding ins[MAX_BINDINGS];
    int nins;
    const char *outs[MAX_BINDINGS];
    int nouts;
    dim_binding dims[MAX_BINDINGS]; /* bench --dim NAME=SIZE */
    int ndims;
    int reps;           /* bench --reps */
    const char *format; /* bench --format table|json */
    int plan;           /* bench --launch=plan: through a plan (a CUDA graph) */
    int no_cold;        /* bench --no-cold-compile: no build without the cache, no cold time */
    int all;            /* run --target=all: on every target, compared bit for bit */
} cli;

/* Reports a usage error (printf-style) with a pointer to --help; returns EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_exit_code(fusec_status s);
void cli_print_module_messages(const fusec_module *m, fusec_status st);
/* After compiling for c->function alone (fusec_options.function): EXIT_OK, or where the
 * compilation failed for want of that function, its report and exit code. */
int cli_missing_function(const cli *c, fusec_module *m, fusec_status st);
/* Looks up c->function in m (a missing one is reported with the file's functions) and
 * gets its parameter and result counts; EXIT_OK or the exit code to return. */
int cli_find_function(const cli *c, fusec_module *m, fusec_function **f, int *nparams,
                      int *nresults);
int cli_bench(cli *c); /* tools/bench.c */
/* An output (opt names its option) that is also an input, the source or an --in file,
 * would be destroyed: a usage error (EXIT_USAGE), said before anything is compiled. */
int cli_check_not_input(const cli *c, const char *opt, const char *out);

/* tools/view.c: a view of an input array: where its element (0, ...) is (elements from the
 * array's first) and its shape and strides in elements. */
typedef struct cli_view {
    int64_t offset;
    int rank;
    int64_t shape[FUSEC_MAX_RANK];
    int64_t strides[FUSEC_MAX_RANK];
} cli_view;

/* Where the file of an --in value ends (*path_len bytes) and its view begins: right after
 * the last ".npy" when '[' or '.' follows. */
const char *cli_view_split(const char *arg, size_t *path_len);
/* The view `expr` of a dense array of this rank and shape, in C order or (fortran set) in
 * Fortran order, into *v; 0, or -1 with a message. */
int cli_view_parse(const char *expr, int rank, const int64_t *shape, int fortran, cli_view *v,
                   char *err, size_t errlen);

/* tools/target.c: the elements and bytes a tensor's dtype and shape take; -1 when either
 * overflows (int64 elements, bytes past PTRDIFF_MAX: C's largest object). cli_tensor_bytes is
 * for tensors already checked (SIZE_MAX if not, which no allocation gets). */
int cli_tensor_size(fusec_dtype t, int rank, const int64_t *shape, int64_t *count, size_t *bytes);
size_t cli_tensor_bytes(const fusec_tensor *t);
/* Host memory for t (64-byte aligned, for free()), of *count elements and *bytes bytes. Sizes
 * come from the user (--dim, .npy headers, results broadcast from them), so before anything
 * is allocated a size that overflows, or that is more than this machine's memory, is an error
 * in the input ("WHAT is too large", exit 1), never an absurd malloc; EXIT_OK or the exit
 * code of the error reported. */
int cli_alloc_tensor(fusec_tensor *t, const char *what, int64_t *count, size_t *bytes);

/* Tensors in the module's target memory: dev[i] gets host[i]'s dtype and shape and its own
 * memory on a GPU (with host[i]'s data when upload is set), host[i]'s memory on the CPU;
 * results back into host tensors after the default stream's work; freeing. Failures are
 * reported, and their exit code returned. */
int cli_to_target(fusec_module *m, const fusec_tensor *host, int n, int upload, fusec_tensor *dev);
int cli_from_target(fusec_module *m, fusec_tensor *host, const fusec_tensor *dev, int n);
void cli_free_target(fusec_module *m, fusec_tensor *dev, int n);

/* tools/run.c: `fusec run` in steps. The host side of one run: the inputs as read (ins),
 * what the call sees (call_ins: their views), and the results. */
typedef struct cli_run_io {
    int nparams, nresults;
    fusec_tensor ins[MAX_BINDINGS], call_ins[MAX_BINDINGS], outs[MAX_BINDINGS];
    cli_view views[MAX_BINDINGS];
} cli_run_io;
int cli_run(cli *c);
/* Compiles c->function of c's file with opt and builds it: EXIT_OK with *m and *f, else the
 * failure reported and its exit code. A failed build is left to the caller where build is
 * given: *build gets its status and *m the module (its message), which the caller frees. */
int cli_run_compile(const cli *c, const fusec_options *opt, fusec_module **m, fusec_function **f,
                    fusec_status *build);
/* The inputs of c's --in files for f, and its results' shapes. */
int cli_run_inputs(const cli *c, fusec_module *m, fusec_function *f, cli_run_io *io);
/* One launch on m's target: the results (host memory, poisoned first) into io->outs; a failed
 * launch's status in *status (its message is the module's, not yet reported). */
int cli_run_launch(fusec_module *m, fusec_function *f, cli_run_io *io, fusec_status *status);
/* The results to the --out files, or printed. */
int cli_run_results(const cli *c, const cli_run_io *io);
void cli_run_free(cli_run_io *io);
/* tools/run_all.c: --target=all */
int cli_run_all(cli *c);

#endif
