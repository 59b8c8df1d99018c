/* tests/unit/check.h: the assertions of the C unit tests. A failed check prints where and
 * what, counts, and lets the test go on; check_exit() reports and gives the exit code. */
#ifndef FUSEC_TESTS_CHECK_H
#define FUSEC_TESTS_CHECK_H

#include <stdio.h>
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

/* The test's last words: "NAME: ok" or the count of failures; the exit code. */
static inline int check_exit(const char *name) {
    if (failures)
        fprintf(stderr, "%s: %d failure(s)\n", name, failures);
    else
        printf("%s: ok\n", name);
    return failures ? 1 : 0;
}

#endif
