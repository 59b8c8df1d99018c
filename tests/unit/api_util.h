/* tests/unit/api_util.h: what the tests that go through fusec.h share: compiling a source
 * string for a target, looking a function up, and a fixed stream of non-zero floats.
 * Failures are counted through check.h. */
#ifndef FUSEC_TESTS_API_UTIL_H
#define FUSEC_TESTS_API_UTIL_H

#include <stdint.h>
#include <string.h>

#include "check.h"
#include "fusec.h"

/* The module of `src` for target t (arch NULL: the GPU's own), built when `build` is set. */
static inline fusec_module *api_compile(const char *src, fusec_target t, int no_fuse,
                                        const char *arch, int build) {
    fusec_options o;
    fusec_options_init(&o);
    o.target = t;
    o.no_fuse = no_fuse;
    o.arch = arch;
    fusec_module *m = NULL;
    fusec_status st = fusec_module_compile_string("test.fuse", src, strlen(src), &o, &m);
    if (st == FUSEC_OK && build) st = fusec_module_build(m);
    CHECK_MSG(st == FUSEC_OK, "%s %s", fusec_module_message(m), fusec_module_diagnostics(m));
    return m;
}

static inline fusec_function *api_fn(fusec_module *m, const char *name) {
    fusec_function *f = NULL;
    CHECK_MSG(fusec_module_function(m, name, &f) == FUSEC_OK, "%s", name);
    return f;
}

/* Uniform in [-half, half), never 0 (a zero hides unwritten results and wrong indexing). */
static inline float api_frand(uint32_t *state, float half) {
    *state = *state * 1664525u + 1013904223u;
    float v = (float)(*state >> 8) * (2.0f * half / 16777216.0f) - half;
    return v == 0 ? half / 8 : v;
}

#endif
