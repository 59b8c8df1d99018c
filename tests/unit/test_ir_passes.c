/* tests/unit/test_ir_passes.c: the pass tests of tests/ir/, QBE-style: IR text in, IR text
 * out. Each NAME.ir file holds
 *
 *   # run: PASS...            the passes to run, in order (names as in passes/pipeline.c), or
 *                             `pipeline` (every pass, as fusec runs them) and, after it,
 *                             `--no-fuse`
 *   func ...                  the input: IR as the printer writes it (ir/read.h), one or more
 *                             functions, with or without a partition
 *   # >>> output              the expected output: the module printed after the passes, each
 *   # func ...                line behind "# " ("#" alone for a blank line)
 *   # <<<
 *
 * and every other '#' line is a comment. Each function of the input is read, run through the
 * passes (ir_verify after each, as in the pipeline) and the module printed; a difference from
 * the expectation fails with a unified diff. The expectation must itself be IR that reads
 * back and prints the same (so a hand edit cannot make it something no pass could print).
 * With FUSEC_IR_UPDATE=1 the expectations are rewritten from what the passes print instead:
 * read the diff before committing it. Arguments: the files to run (default: all of tests/ir/,
 * in name order). Paths are under $FUSEC_SRC. */
#include "ir/read.h"
#include "passes/passes.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "line_diff.h"

#define OUTPUT_START "# >>> output"
#define OUTPUT_END   "# <<<"

/* One test file: its text, its run line's words, and where its expectation block is. */
typedef struct ir_test {
    const char *path;
    char *text;
    char run[256];                 /* the words after "# run:" */
    const char *block, *block_end; /* the "# >>> output" line, the end of "# <<<"; NULL: none */
} ir_test;

/* The first line of s that starts with prefix; NULL if none. */
static const char *find_line(const char *s, const char *prefix) {
    size_t n = strlen(prefix);
    for (const char *p = s; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n'))
        if (!strncmp(p, prefix, n)) return p;
    return NULL;
}

/* Past the end of the line at p (its newline included). */
static const char *line_end(const char *p) {
    size_t n = strcspn(p, "\n");
    return p + n + (p[n] == '\n');
}

/* The expectation: the block's lines without their "# "; NULL (and a failure) when a line
 * of the block is not a comment. */
static char *expectation(const ir_test *t) {
    const char *p = line_end(t->block);
    const char *end = find_line(p, OUTPUT_END);
    char *out = calloc(strlen(t->text) + 1, 1), *o = out;
    while (out && p < end) {
        size_t n = strcspn(p, "\n");
        int bad = p[0] != '#' || (n > 1 && p[1] != ' ');
        CHECK_MSG(!bad, "%s: a line of the expected output that is not '# ...': %.*s", t->path,
                  (int)n, p);
        if (bad) {
            free(out);
            return NULL;
        }
        size_t skip = n > 1 ? 2 : n;
        memcpy(o, p + skip, n - skip);
        o += n - skip;
        *o++ = '\n';
        p = line_end(p);
    }
    return out;
}

/* The file's text, run line and block; -1 (and a failure) when it has no run line. */
static int load(ir_test *t, const char *path) {
    memset(t, 0, sizeof *t);
    t->path = path;
    t->text = read_text(path);
    CHECK_MSG(t->text != NULL, "cannot read %s", path);
    if (!t->text) return -1;
    const char *run = find_line(t->text, "# run:");
    CHECK_MSG(run != NULL, "%s: no '# run:' line", path);
    if (!run) return -1;
    run += 6;
    size_t n = strcspn(run, "\n");
    snprintf(t->run, sizeof t->run, "%.*s", (int)n, run);
    t->block = find_line(t->text, OUTPUT_START);
    const char *end = t->block ? find_line(t->block, OUTPUT_END) : NULL;
    CHECK_MSG(!t->block || end, "%s: '%s' without '%s'", path, OUTPUT_START, OUTPUT_END);
    if (!end) return t->block ? -1 : 0;
    t->block_end = line_end(end);
    return 0;
}

/* f through the passes the run line names; 0, or -1 with a message in err. */
static int run_passes(ir_func *f, const char *run, char *err, size_t errlen) {
    char words[256];
    snprintf(words, sizeof words, "%s", run);
    int no_fuse = strstr(words, "--no-fuse") != NULL, n = 0;
    for (char *save = NULL, *w = strtok_r(words, " \t", &save); w;
         w = strtok_r(NULL, " \t", &save)) {
        if (!strcmp(w, "--no-fuse")) continue;
        n++;
        if (!strcmp(w, "pipeline")) {
            pass_options o = {0};
            o.no_fuse = no_fuse;
            if (pass_run_pipeline(f, &o, err, errlen) != PASS_OK) return -1;
            continue;
        }
        pass_fn pass = pass_find(w);
        if (!pass)
            return ir_fail(err, errlen, "unknown pass '%s' (passes: %s, or pipeline)", w,
                           pass_names());
        pass_options o = {0};
        pass_ctx c = {&o, err, errlen, NULL};
        char verr[512];
        if (pass(f, &c)) return -1;
        if (ir_verify(f, verr, sizeof verr))
            return ir_fail(err, errlen, "after %s: invalid IR: %s", w, verr);
    }
    return n ? 0 : ir_fail(err, errlen, "'# run:' names no pass");
}

/* The file's input read, every function through the passes, the module printed; NULL (and
 * a failure) when reading or a pass fails. */
static const char *run_file(ir_arena *a, const ir_test *t) {
    ir_module *m = NULL;
    char err[1024];
    if (ir_read_module(a, t->text, strlen(t->text), &m, err, sizeof err)) {
        CHECK_MSG(0, "%s:%s", t->path, err);
        return NULL;
    }
    CHECK_MSG(m->nfuncs > 0, "%s: no function to run the passes on", t->path);
    for (int32_t i = 0; i < m->nfuncs; i++)
        if (run_passes(m->funcs[i], t->run, err, sizeof err)) {
            CHECK_MSG(0, "%s: %s: %s", t->path, m->funcs[i]->name, err);
            return NULL;
        }
    ir_buf b;
    ir_buf_init(&b, a);
    ir_print_module(&b, m);
    return b.data;
}

/* The file with its block replaced by (or, without one, followed by) the output of got. */
static void update(const ir_test *t, const char *got) {
    char full[1024];
    const char *src = getenv("FUSEC_SRC");
    snprintf(full, sizeof full, "%s/%s", src ? src : ".", t->path);
    FILE *fp = fopen(full, "wb");
    CHECK_MSG(fp != NULL, "cannot write %s", full);
    if (!fp) return;
    const char *head_end = t->block ? t->block : t->text + strlen(t->text);
    while (!t->block && head_end > t->text && (head_end[-1] == '\n' || head_end[-1] == ' '))
        head_end--; /* a new block goes after one blank line */
    fwrite(t->text, 1, (size_t)(head_end - t->text), fp);
    if (!t->block) fputs("\n\n", fp);
    fprintf(fp, "%s\n", OUTPUT_START);
    for (const char *p = got; *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(fp, n ? "# %.*s\n" : "#\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
    fprintf(fp, "%s\n", OUTPUT_END);
    if (t->block) fputs(t->block_end, fp);
    CHECK_MSG(fclose(fp) == 0, "cannot write %s", full);
    printf("updated %s\n", t->path);
}

/* The expectation reads back as IR and prints as itself. */
static void check_canonical(ir_arena *a, const ir_test *t, const char *want) {
    ir_module *m = NULL;
    char err[1024];
    int rc = ir_read_module(a, want, strlen(want), &m, err, sizeof err);
    /* a message's place in the file: the block starts after its first line, each line behind
     * "# " */
    int line = 0, col = 0, skip = 0, first = 2;
    for (const char *p = t->text; p < t->block; p++)
        first += *p == '\n';
    if (rc && sscanf(err, "%d:%d: %n", &line, &col, &skip) == 2 && skip)
        CHECK_MSG(0, "%s:%d:%d: the expected output is not IR: %s", t->path, line + first - 1,
                  col + 2, err + skip);
    else
        CHECK_MSG(rc == 0, "%s: the expected output is not IR: %s", t->path, err);
    if (rc) return;
    ir_buf b;
    ir_buf_init(&b, a);
    ir_print_module(&b, m);
    if (strcmp(b.data, want)) {
        fprintf(stderr, "%s: the expected output does not print as itself:\n", t->path);
        line_diff(stderr, "expected", want, "read and printed", b.data);
        failures++;
    }
}

static void test_file(const char *path) {
    ir_test t;
    if (load(&t, path)) {
        free(t.text);
        return;
    }
    ir_arena a;
    ir_arena_init(&a);
    const char *got = run_file(&a, &t);
    const char *up = getenv("FUSEC_IR_UPDATE");
    char *want = t.block ? expectation(&t) : NULL;
    if (got && up && *up && strcmp(up, "0")) {
        if (!want || strcmp(want, got)) update(&t, got);
    } else if (got) {
        CHECK_MSG(t.block != NULL, "%s: no '%s' block (FUSEC_IR_UPDATE=1 writes one)", path,
                  OUTPUT_START);
        if (want && strcmp(want, got)) {
            fprintf(stderr,
                    "%s: the output differs from the expectation "
                    "(FUSEC_IR_UPDATE=1 rewrites it):\n",
                    path);
            line_diff(stderr, "expected", want, "got", got);
            failures++;
        }
        if (want) check_canonical(&a, &t, want);
    }
    free(want);
    free(t.text);
    ir_arena_free(&a);
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every .ir file of tests/ir/, in name order; the number of them. */
static int test_all(void) {
    char full[1024], rel[300], *names[512];
    const char *src = getenv("FUSEC_SRC");
    snprintf(full, sizeof full, "%s/tests/ir", src ? src : ".");
    DIR *d = opendir(full);
    CHECK_MSG(d != NULL, "cannot list %s", full);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 512;) {
        size_t len = strlen(e->d_name);
        if (len > 3 && !strcmp(e->d_name + len - 3, ".ir")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        snprintf(rel, sizeof rel, "tests/ir/%.200s", names[i]);
        test_file(rel);
        free(names[i]);
    }
    return n;
}

int main(int argc, char **argv) {
    int n = argc - 1;
    for (int i = 1; i < argc; i++)
        test_file(argv[i]);
    if (argc == 1) {
        n = test_all();
        CHECK_MSG(n >= 8, "only %d files in tests/ir", n);
    }
    printf("test_ir_passes: %d files\n", n);
    return check_exit("test_ir_passes");
}
