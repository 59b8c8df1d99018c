/* plan/plan_eval.c: what the plan's readers evaluate at launch time, with the symbolic dims'
 * values: a shape's element count and a split's pieces (see plan.h). Plain arithmetic on the
 * plan's types, no IR code: part of libfusec_rt as well as of the compiler. */
#include "plan/plan.h"

int64_t plan_shape_count(const ir_shape *s, const int64_t *sym_values) {
    int64_t n = 1;
    for (int32_t i = 0; i < s->rank; i++) {
        int64_t d = s->dims[i].sym >= 0 ? sym_values[s->dims[i].sym] : s->dims[i].size;
        if (d <= 0) return 0;
        n *= d; /* launch checks keep every tensor's element count far inside int64 */
    }
    return n;
}

int64_t plan_split_pieces(int64_t len, int64_t units, int64_t want_units, int64_t *rows) {
    *rows = len;
    if (len <= 0 || units <= 0 || units >= want_units) return 1;
    int64_t want = want_units / units + (want_units % units != 0);
    int64_t most = len / PLAN_SPLIT_MIN_ROWS; /* pieces of at least the minimum */
    int64_t pieces = want < most ? want : most;
    if (pieces > PLAN_SPLIT_MAX) pieces = PLAN_SPLIT_MAX;
    if (pieces <= 1) return 1;
    /* equal pieces, the last one shorter: the count that rows of ceil(len / pieces) give */
    int64_t r = len / pieces + (len % pieces != 0);
    *rows = r;
    return len / r + (len % r != 0);
}
