/* tools/fusec.c: the `fusec` command line, a client of fusec.h like any embedder.
 *
 *   fusec [OPTIONS] FILE.fuse...      compile every function (--emit to print a stage)
 *   fusec run FILE.fuse -f FN [--in NAME=IN.npy]... [--out OUT.npy]... [OPTIONS]
 *   fusec bench FILE.fuse -f FN --dim NAME=SIZE... [--reps K] [--format table|json]
 *   fusec cache stats | clear
 *
 * Exit codes (SPEC §2): 0 success; 1 an error in the user's input; 2 usage; 3 internal,
 * driver or device error; 4 `run --target=all` found runs that differ.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "fusec.h"
#include "npy.h"

static const char usage_text[] =
    "usage: fusec [OPTIONS] FILE.fuse...            compile every function\n"
    "       fusec run FILE.fuse -f FN [--in NAME=IN.npy]... [--out OUT.npy]... [OPTIONS]\n"
    "       fusec bench FILE.fuse -f FN --dim NAME=SIZE... [--reps K] [--format table|json]\n"
    "                   [--launch=stream|plan] [--no-cold-compile]\n"
    "       fusec cache stats | clear\n"
    "\n"
    "options:\n"
    "  --target=auto|cuda|cpu|ref  where to run (auto: CUDA with a GPU, else the CPU;\n"
    "                              ref: the float64 reference interpreter)\n"
    "  --target=all                run: on every target present, compared bit for bit\n"
    "                              (exit 4 when runs differ)\n"
    "  --arch=sm_XX                CUDA code for that architecture\n"
    "  --cpu=NAME                  CPU code for that CPU or level instead of this host's:\n"
    "                              x86-64-v2, x86-64-v3, x86-64-v4, znver3, znver4,\n"
    "                              skylake-avx512, icelake-server, sapphirerapids (built\n"
    "                              and cached anywhere; run only where the CPU has it)\n"
    "  --emit=ast|ir|plan|cuda|ptx|cubin|llvm\n"
    "                              print that stage of compilation (plan: the kernel\n"
    "                              plan of the target's code generator)\n"
    "  --emit=lib -o DIR/NAME      (with --target=cpu or cuda) a static library of every\n"
    "                              input file's functions, DIR/libNAME.a, and its C\n"
    "                              header DIR/NAME.h: no compiler at run time;\n"
    "                              --cpu=A,B,... the CPUs it holds code for (default\n"
    "                              x86-64-v2,x86-64-v3,x86-64-v4), --arch=sm_80,... the\n"
    "                              GPUs (default NVRTC's from sm_80 up, and PTX for the\n"
    "                              newest); the best the machine runs is run\n"
    "  -o FILE                     write --emit output to FILE (default: stdout)\n"
    "  --no-fuse                   every operation its own kernel (the unfused baseline)\n"
    "  --fast-math                 approximate transcendentals\n"
    "  --no-cache                  neither read nor write the kernel cache\n"
    "  --cache-dir=DIR             the kernel cache's directory\n"
    "  --dump-after=PASS           print the IR after a pass (to stderr)\n"
    "  -v                          phase timings and the fusion report (to stderr)\n"
    "  -f FN                       (run) the function to run\n"
    "  --in NAME=FILE.npy[VIEW]    (run) the input for parameter NAME; VIEW as numpy\n"
    "                              writes one, read in place by strides: [::2, 1:-1],\n"
    "                              [::-1], [3], [None], [..., 1], .T, .broadcast_to(4, 5)\n"
    "  --out FILE.npy              (run) where to write the next result\n"
    "  --dim NAME=SIZE             (bench) the size of a symbolic dim\n"
    "  --reps K                    (bench) timed runs, median reported (default 20)\n"
    "  --format table|json         (bench) output format\n"
    "  --launch=stream|plan        (bench) launch on a stream, or through a plan (a CUDA graph)\n"
    "  --no-cold-compile           (bench) skip the build without the cache that times a cold\n"
    "                              compile (compile_cold_ms null): a sweep of sizes then\n"
    "                              builds once, through the cache\n"
    "  --help                      this text\n"
    "  --version                   the version\n"
    "\n"
    "exit codes: 0 success, 1 error in the input, 2 usage, 3 internal/driver/device error\n";

int cli_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fusec: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(fusec --help for usage)\n");
    va_end(ap);
    return EXIT_USAGE;
}

int cli_exit_code(fusec_status s) {
    switch (s) {
    case FUSEC_OK: return EXIT_OK;
    case FUSEC_ERR_SOURCE:
    case FUSEC_ERR_IO:
    case FUSEC_ERR_NOT_FOUND:
    case FUSEC_ERR_SHAPE:
    case FUSEC_ERR_DTYPE:
    case FUSEC_ERR_RUNTIME: return EXIT_INPUT;
    case FUSEC_ERR_INVALID_ARGUMENT: return EXIT_USAGE;
    default: return EXIT_INTERNAL;
    }
}

/* "--name=value" or "--name value": the value, advancing *i; NULL if absent. For options
 * without an '=', the value is the next argument. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *matched) {
    size_t n = strlen(name);
    const char *a = argv[*i];
    *matched = 0;
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') {
        *matched = 1;
        return a + n + 1;
    }
    if (a[n] != 0) return NULL;
    *matched = 1;
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
}

static int parse_target(const char *v, fusec_target *t) {
    if (!strcmp(v, "auto"))
        *t = FUSEC_TARGET_AUTO;
    else if (!strcmp(v, "cuda"))
        *t = FUSEC_TARGET_CUDA;
    else if (!strcmp(v, "cpu"))
        *t = FUSEC_TARGET_CPU;
    else if (!strcmp(v, "ref"))
        *t = FUSEC_TARGET_REF;
    else
        return -1;
    return 0;
}

static int parse_emit(const char *v, fusec_emit *e) {
    static const char *names[] = {"ast", "ir", "cuda", "ptx", "cubin", "llvm", "plan"};
    for (int i = 0; i < 7; i++) {
        if (!strcmp(v, names[i])) {
            *e = (fusec_emit)i;
            return 0;
        }
    }
    return -1;
}

/* The index of the --in given for the parameter name[0, n) so far; -1 if none. */
static int find_in(const cli *c, const char *name, size_t n) {
    for (int i = 0; i < c->nins; i++)
        if (strlen(c->ins[i].name) == n && !strncmp(c->ins[i].name, name, n)) return i;
    return -1;
}

/* The same for the --dim of name[0, n). */
static int find_dim(const cli *c, const char *name, size_t n) {
    for (int i = 0; i < c->ndims; i++)
        if (strlen(c->dims[i].name) == n && !strncmp(c->dims[i].name, name, n)) return i;
    return -1;
}

/* Keeps the first option only bench takes that the command line gives (*seen), for the usage
 * error when the command is not bench. */
static void note_bench_opt(const char **seen, const char *name) {
    if (!*seen) *seen = name;
}

static int parse_args(int argc, char **argv, cli *c) {
    memset(c, 0, sizeof(*c));
    fusec_options_init(&c->opt);
    int first = 1;
    c->reps = 20;
    c->format = "table";
    const char *bench_opt = NULL; /* the first option only bench takes, for the error */
    if (argc > 1 &&
        (!strcmp(argv[1], "run") || !strcmp(argv[1], "bench") || !strcmp(argv[1], "cache"))) {
        c->command = argv[1];
        first = 2;
    }
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const char *v;
        int m;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return -1;
        }
        if (!strcmp(a, "--version")) {
            printf("fusec %s\n", fusec_version_string());
            return -1;
        }
        if (!strcmp(a, "--no-fuse"))
            c->opt.no_fuse = 1;
        else if (!strcmp(a, "--fast-math"))
            c->opt.fast_math = 1;
        else if (!strcmp(a, "--no-cache"))
            c->opt.no_cache = 1;
        else if (!strcmp(a, "-v"))
            c->opt.verbose = 1;
        else if ((v = option_value(argc, argv, &i, "--target", &m)) || m) {
            if (!v) return cli_usage_error("%s needs a value", "--target");
            c->all = !strcmp(v, "all");
            if (!c->all && parse_target(v, &c->opt.target))
                return cli_usage_error("unknown target '%s' (auto, cuda, cpu, ref or all)", v);
        } else if ((v = option_value(argc, argv, &i, "--arch", &m)) || m) {
            if (!v || (strncmp(v, "sm_", 3) != 0 && strncmp(v, "compute_", 8) != 0))
                return cli_usage_error("--arch needs a value like sm_90, got '%s'", v ? v : "");
            c->opt.arch = v;
        } else if ((v = option_value(argc, argv, &i, "--cpu", &m)) || m) {
            if (!v || !*v) return cli_usage_error("--cpu needs a value like x86-64-v3");
            c->opt.cpu = v; /* the library checks the name */
        } else if ((v = option_value(argc, argv, &i, "--emit", &m)) || m) {
            fusec_emit e;
            if (!v) return cli_usage_error("%s needs a value", "--emit");
            if (strcmp(v, "lib") && parse_emit(v, &e))
                return cli_usage_error(
                    "unknown --emit kind '%s' (ast, ir, plan, cuda, ptx, cubin, llvm, lib)", v);
            c->emit = v;
        } else if ((v = option_value(argc, argv, &i, "--cache-dir", &m)) || m) {
            if (!v) return cli_usage_error("%s needs a value", "--cache-dir");
            c->opt.cache_dir = v;
        } else if ((v = option_value(argc, argv, &i, "--dump-after", &m)) || m) {
            if (!v) return cli_usage_error("%s needs a value", "--dump-after");
            c->opt.dump_after = v;
        } else if ((v = option_value(argc, argv, &i, "-o", &m)) || m) {
            if (!v) return cli_usage_error("%s needs a file name", "-o");
            c->output = v;
        } else if ((v = option_value(argc, argv, &i, "-f", &m)) || m) {
            if (!v) return cli_usage_error("%s needs a function name", "-f");
            if (c->function)
                return cli_usage_error("-f given twice ('%s' and '%s'): one function at a time",
                                       c->function, v);
            c->function = v;
        } else if ((v = option_value(argc, argv, &i, "--in", &m)) || m) {
            const char *eq = v ? strchr(v, '=') : NULL;
            if (!eq || eq == v || !eq[1])
                return cli_usage_error("--in needs NAME=FILE.npy, got '%s'", v ? v : "");
            if (c->nins == MAX_BINDINGS) return cli_usage_error("too many %s options", "--in");
            if (find_in(c, v, (size_t)(eq - v)) >= 0)
                return cli_usage_error("--in %.*s given twice: one file a parameter", (int)(eq - v),
                                       v);
            size_t plen;
            c->ins[c->nins].view = cli_view_split(eq + 1, &plen);
            c->ins[c->nins].name = strndup(v, (size_t)(eq - v));
            c->ins[c->nins++].path = strndup(eq + 1, plen);
            if (!c->ins[c->nins - 1].name || !c->ins[c->nins - 1].path)
                return cli_usage_error("%s", "out of memory");
        } else if ((v = option_value(argc, argv, &i, "--out", &m)) || m) {
            if (!v) return cli_usage_error("%s needs a file name", "--out");
            if (c->nouts == MAX_BINDINGS) return cli_usage_error("too many %s options", "--out");
            c->outs[c->nouts++] = v;
        } else if ((v = option_value(argc, argv, &i, "--dim", &m)) || m) {
            note_bench_opt(&bench_opt, "--dim");
            const char *eq = v ? strchr(v, '=') : NULL;
            char *end = NULL;
            long long n = eq ? strtoll(eq + 1, &end, 10) : -1;
            if (!eq || eq == v || !eq[1] || *end || n < 0)
                return cli_usage_error("--dim needs NAME=SIZE with SIZE >= 0, got '%s'",
                                       v ? v : "");
            if (c->ndims == MAX_BINDINGS) return cli_usage_error("too many %s options", "--dim");
            if (find_dim(c, v, (size_t)(eq - v)) >= 0)
                return cli_usage_error("--dim %.*s given twice", (int)(eq - v), v);
            c->dims[c->ndims].name = strndup(v, (size_t)(eq - v));
            c->dims[c->ndims++].size = n;
        } else if ((v = option_value(argc, argv, &i, "--reps", &m)) || m) {
            note_bench_opt(&bench_opt, "--reps");
            char *end = NULL;
            long n = v ? strtol(v, &end, 10) : 0;
            if (!v || *end || n < 1 || n > 1000000)
                return cli_usage_error("--reps needs a count from 1 to 1000000, got '%s'",
                                       v ? v : "");
            c->reps = (int)n;
        } else if ((v = option_value(argc, argv, &i, "--format", &m)) || m) {
            note_bench_opt(&bench_opt, "--format");
            if (!v || (strcmp(v, "table") && strcmp(v, "json")))
                return cli_usage_error("--format is table or json, got '%s'", v ? v : "");
            c->format = v;
        } else if ((v = option_value(argc, argv, &i, "--launch", &m)) || m) {
            note_bench_opt(&bench_opt, "--launch");
            if (!v || (strcmp(v, "stream") && strcmp(v, "plan")))
                return cli_usage_error("--launch is stream or plan, got '%s'", v ? v : "");
            c->plan = !strcmp(v, "plan");
        } else if (!strcmp(a, "--no-cold-compile")) {
            note_bench_opt(&bench_opt, "--no-cold-compile");
            c->no_cold = 1;
        } else if (a[0] == '-' && a[1] != 0) {
            return cli_usage_error("unknown option '%s'", a);
        } else {
            if (c->nfiles == MAX_FILES) return cli_usage_error("too many files (%s)", a);
            c->files[c->nfiles++] = a;
        }
    }
    if (c->all && !(c->command && !strcmp(c->command, "run")))
        return cli_usage_error("%s", "--target=all goes with run");
    if (c->all && (c->opt.no_fuse || c->opt.cpu || c->opt.arch))
        return cli_usage_error("%s", "--target=all runs fused and --no-fuse, at each CPU level "
                                     "the host has, itself: no --no-fuse, --cpu or --arch");
    int bench = c->command && !strcmp(c->command, "bench");
    if (bench_opt && !bench) return cli_usage_error("%s goes with bench", bench_opt);
    return 0;
}

/* Diagnostics, then the -v report collected so far, then the failure's message. */
void cli_print_module_messages(const fusec_module *m, fusec_status st) {
    fputs(fusec_module_diagnostics(m), stderr);
    fputs(fusec_module_report(m), stderr);
    if (st != FUSEC_OK && st != FUSEC_ERR_SOURCE) {
        const char *msg = fusec_module_message(m);
        fprintf(stderr, "fusec: error: %s\n", *msg ? msg : fusec_status_string(st));
    }
}

/* Set once a failed write of stdout has been reported, so that closing it does not say so
 * again. */
static int stdout_reported;

static int write_output(const char *path, const char *data, size_t size) {
    FILE *f = path ? fopen(path, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "fusec: error: cannot write '%s': %s\n", path, strerror(errno));
        return EXIT_INPUT;
    }
    size_t n = fwrite(data, 1, size, f);
    int bad = n != size || ferror(f);
    if (path)
        bad |= fclose(f) != 0;
    else
        bad |= fflush(f) != 0;
    if (bad) {
        fprintf(stderr, "fusec: error: cannot write '%s'\n", path ? path : "stdout");
        stdout_reported |= !path;
        return EXIT_INPUT;
    }
    return EXIT_OK;
}

/* stdout is buffered, so a write that fails (a full disk, /dev/full, a closed pipe) may
 * show only when it is flushed or closed: every command's output is checked here, once, at
 * the end. The result is rc, or EXIT_INPUT for a failed write when rc is a success. */
static int close_stdout(int rc) {
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    if (fclose(stdout) != 0) {
        bad = 1;
        if (!err) err = errno;
    }
    if (!bad) return rc;
    if (!stdout_reported)
        fprintf(stderr, "fusec: error: cannot write 'stdout'%s%s\n", err ? ": " : "",
                err ? strerror(err) : "");
    return rc == EXIT_OK ? EXIT_INPUT : rc;
}

/* Whether paths a and b name one file: by identity where both exist (a link, or another
 * spelling of the path, is the same file), else by name. */
static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return !strcmp(a, b);
}

/* An output (opt names its option) that is also an input, the source or an --in file,
 * would be destroyed: a usage error, said before anything is compiled or written. */
int cli_check_not_input(const cli *c, const char *opt, const char *out) {
    for (int i = 0; i < c->nfiles; i++)
        if (same_file(out, c->files[i]))
            return cli_usage_error("%s '%s' is the source file '%s': refusing to overwrite it", opt,
                                   out, c->files[i]);
    for (int i = 0; i < c->nins; i++)
        if (same_file(out, c->ins[i].path))
            return cli_usage_error("%s '%s' is the input file '%s' (--in %s): refusing to "
                                   "overwrite it",
                                   opt, out, c->ins[i].path, c->ins[i].name);
    return EXIT_OK;
}

/* FUSEC_NUM_THREADS as runtime/cpu/threadpool.c reads it: decimal digits, 1 to 256
 * (RT_POOL_MAX_THREADS there). The library ignores any other value, as a library must not
 * fail for it; the command line says so rather than run with a count nobody asked for. */
#define CLI_MAX_THREADS 256

static int check_num_threads(void) {
    const char *v = getenv("FUSEC_NUM_THREADS");
    if (!v || !*v) return EXIT_OK;
    long n = 0;
    const char *p = v;
    for (; *p >= '0' && *p <= '9' && n <= CLI_MAX_THREADS; p++)
        n = n * 10 + (*p - '0');
    if (*p || n < 1 || n > CLI_MAX_THREADS)
        return cli_usage_error("FUSEC_NUM_THREADS='%s' is not a thread count from 1 to %d", v,
                               CLI_MAX_THREADS);
    return EXIT_OK;
}

/* fusec --emit=lib -o DIR/NAME: one library of every input file's functions. --cpu names the
 * CPUs it holds code for (a list), not the one the modules compile for. */
static int cmd_library(cli *c) {
    if (!c->output)
        return cli_usage_error("%s", "--emit=lib needs -o DIR/NAME (it writes DIR/NAME.h and "
                                     "DIR/libNAME.a)");
    if (c->opt.target != FUSEC_TARGET_CPU && c->opt.target != FUSEC_TARGET_CUDA)
        return cli_usage_error("%s", "--emit=lib needs --target=cpu or --target=cuda (a library "
                                     "is built for a target it names)");
    /* --cpu (CPU) or --arch (CUDA): the list the library holds, not what the modules compile
     * for */
    int cuda = c->opt.target == FUSEC_TARGET_CUDA;
    const char *archs = cuda ? c->opt.arch : c->opt.cpu;
    if (cuda ? c->opt.cpu != NULL : c->opt.arch != NULL)
        return cli_usage_error("--emit=lib --target=%s takes %s, not %s", cuda ? "cuda" : "cpu",
                               cuda ? "--arch" : "--cpu", cuda ? "--cpu" : "--arch");
    c->opt.cpu = NULL;
    c->opt.arch = NULL;
    fusec_module **mods = calloc((size_t)c->nfiles, sizeof(*mods));
    if (!mods) {
        fprintf(stderr, "fusec: error: out of memory\n");
        return EXIT_INTERNAL;
    }
    int rc = EXIT_OK, n = 0;
    for (int i = 0; i < c->nfiles && rc == EXIT_OK; i++) {
        fusec_status st = fusec_module_compile_file(c->files[i], &c->opt, &mods[n]);
        if (!mods[n]) {
            fprintf(stderr, "fusec: error: %s\n", fusec_status_string(st));
            rc = EXIT_INTERNAL;
            break;
        }
        cli_print_module_messages(mods[n++], st);
        if (st != FUSEC_OK) rc = cli_exit_code(st);
    }
    if (rc == EXIT_OK) {
        fusec_status st = fusec_library_write(mods, n, c->output, archs);
        fputs(fusec_module_report(mods[0]), stderr);
        if (st != FUSEC_OK) {
            fprintf(stderr, "fusec: error: %s\n", fusec_module_message(mods[0]));
            rc = cli_exit_code(st);
        }
    }
    for (int i = 0; i < n; i++)
        fusec_module_free(mods[i]);
    free(mods);
    return rc;
}

static int cmd_compile(cli *c) {
    if (c->nfiles == 0) return cli_usage_error("%s", "no input file");
    if (c->emit && !strcmp(c->emit, "lib")) return cmd_library(c);
    if (c->output && !c->emit) return cli_usage_error("%s", "-o goes with --emit");
    if (c->output && c->nfiles > 1) return cli_usage_error("%s", "-o takes one input file");
    if (c->output && cli_check_not_input(c, "-o", c->output)) return EXIT_USAGE;
    int rc = EXIT_OK;
    for (int i = 0; i < c->nfiles; i++) {
        fusec_module *m = NULL;
        fusec_status st = fusec_module_compile_file(c->files[i], &c->opt, &m);
        if (!m) {
            fprintf(stderr, "fusec: error: %s\n", fusec_status_string(st));
            return EXIT_INTERNAL;
        }
        if (st == FUSEC_OK && !c->emit) st = fusec_module_build(m);
        /* the report is printed after the emit, which may add to it */
        if (st == FUSEC_OK && c->emit)
            fputs(fusec_module_diagnostics(m), stderr);
        else
            cli_print_module_messages(m, st);
        if (st == FUSEC_OK && c->emit) {
            fusec_emit e;
            parse_emit(c->emit, &e);
            char *data = NULL;
            size_t size = 0;
            st = fusec_module_emit(m, e, &data, &size);
            fputs(fusec_module_report(m), stderr);
            if (st != FUSEC_OK) {
                fprintf(stderr, "fusec: error: %s\n", fusec_module_message(m));
            } else {
                int w = write_output(c->output, data, size);
                if (w && !rc) rc = w;
            }
            fusec_free(data);
        }
        if (st != FUSEC_OK && !rc) rc = cli_exit_code(st);
        fusec_module_free(m);
    }
    return rc;
}

/* Element i of t: integers exactly, bool as 0 or 1, floats to 9 significant digits (enough
 * to tell any two f32 apart). */
/* EXIT_OK, or (when a compilation for c->function alone failed because the module has no
 * such function) cli_find_function's message and exit code. */
int cli_missing_function(const cli *c, fusec_module *m, fusec_status st) {
    fusec_function *f = NULL;
    int np, nr;
    /* cli_find_function returns EXIT_OK where the function is there (another argument failed) */
    if (st != FUSEC_ERR_INVALID_ARGUMENT || fusec_module_num_functions(m) == 0) return EXIT_OK;
    return cli_find_function(c, m, &f, &np, &nr);
}

int cli_find_function(const cli *c, fusec_module *m, fusec_function **f, int *nparams,
                      int *nresults) {
    if (fusec_module_function(m, c->function, f) != FUSEC_OK) {
        fprintf(stderr, "fusec: error: no function '%s' in %s", c->function, c->files[0]);
        int nf = fusec_module_num_functions(m);
        for (int i = 0; i < nf; i++)
            fprintf(stderr, "%s%s", i ? ", " : " (functions: ",
                    fusec_function_name(fusec_module_function_at(m, i)));
        fprintf(stderr, "%s\n", nf ? ")" : "");
        return EXIT_INPUT;
    }
    *nparams = fusec_function_num_params(*f);
    *nresults = fusec_function_num_results(*f);
    if (*nparams > MAX_BINDINGS || *nresults > MAX_BINDINGS) {
        fprintf(stderr, "fusec: error: '%s' has more than %d parameters or results\n", c->function,
                MAX_BINDINGS);
        *nparams = *nresults = 0;
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}

static int cmd_cache(cli *c) {
    if (c->nfiles != 1 || (strcmp(c->files[0], "stats") && strcmp(c->files[0], "clear")))
        return cli_usage_error("%s", "cache takes 'stats' or 'clear'");
    if (!strcmp(c->files[0], "clear")) {
        uint64_t removed = 0;
        if (fusec_cache_clear(c->opt.cache_dir, &removed) != FUSEC_OK) {
            fprintf(stderr, "fusec: error: cannot clear the cache\n");
            return EXIT_INPUT;
        }
        printf("removed %llu file%s\n", (unsigned long long)removed, removed == 1 ? "" : "s");
        return EXIT_OK;
    }
    fusec_cache_info info;
    if (fusec_cache_stats(c->opt.cache_dir, &info) != FUSEC_OK) {
        fprintf(stderr, "fusec: error: %s\n", info.dir);
        return EXIT_INPUT;
    }
    printf("directory: %s\nentries:   %llu (%.1f MiB)\ntotal:     %.1f MiB of %.0f MiB\n", info.dir,
           (unsigned long long)info.entries, (double)info.entry_bytes / 1048576.0,
           (double)info.total_bytes / 1048576.0, (double)info.max_bytes / 1048576.0);
    return EXIT_OK;
}

int main(int argc, char **argv) {
    if (fusec_version_number() != FUSEC_VERSION_NUMBER) {
        fprintf(stderr, "fusec: error: library version %s does not match the header's %s\n",
                fusec_version_string(), FUSEC_VERSION_STRING);
        return EXIT_INTERNAL;
    }
    cli c;
    int rc = parse_args(argc, argv, &c);
    if (rc == 0) rc = check_num_threads();
    if (rc == 0) {
        if (!c.command)
            rc = cmd_compile(&c);
        else if (!strcmp(c.command, "run"))
            rc = cli_run(&c);
        else if (!strcmp(c.command, "bench"))
            rc = cli_bench(&c);
        else
            rc = cmd_cache(&c);
    } else if (rc < 0) {
        rc = EXIT_OK; /* --help, --version */
    }
    for (int i = 0; i < c.nins; i++) {
        free((void *)c.ins[i].name);
        free((void *)c.ins[i].path);
    }
    for (int i = 0; i < c.ndims; i++)
        free((void *)c.dims[i].name);
    return close_stdout(rc);
}
