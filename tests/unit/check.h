/* tests/unit/check.h: the assertions of the C unit tests, and reading test files. A failed check
 * prints where and what, counts, and lets the test go on; check_exit() reports and gives the exit
 * code. */
#ifndef FUSEC_TESTS_CHECK_H
#define FUSEC_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* CHECK with a printf-style explanation of the failure. */
#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Two strings equal, byte for byte; both are shown when not. */
#define CHECK_STR(got, want)                                                                       \
    do {                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                      \
        if (strcmp(g_, w_) != 0) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK_STR failed\n--- got:\n%s\n--- want:\n%s\n", __FILE__,    \
                    __LINE__, g_, w_);                                                             \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* A file of the source tree ($FUSEC_SRC, else the working directory) as a malloc'd,
 * NUL-terminated string; NULL when it cannot be read. */
static inline char *read_text(const char *path) {
    char full[1024];
    const char *src = getenv("FUSEC_SRC");
    snprintf(full, sizeof full, "%s/%s", src ? src : ".", path);
    FILE *fp = fopen(full, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = 0;
    fclose(fp);
    return buf;
}

/* Whether case k belongs to this run, by FUSEC_TEST_SHARD="i/n" (ctest runs a long test as n
 * tests, the i-th taking every n-th case from the i-th; tests/cli_py/fusectest.py reads it too):
 * every case when it is unset. */
static inline int check_in_shard(int k) {
    const char *v = getenv("FUSEC_TEST_SHARD");
    int i = 0, n = 1;
    if (v && sscanf(v, "%d/%d", &i, &n) == 2 && n > 0 && i >= 0 && i < n) return k % n == i;
    return 1;
}

/* The test's last words: "NAME: ok" or the count of failures; the exit code. */
static inline int check_exit(const char *name) {
    if (failures)
        fprintf(stderr, "%s: %d failure(s)\n", name, failures);
    else
        printf("%s: ok\n", name);
    return failures ? 1 : 0;
}

#endif
