/* driver/pipeline.c: runs the pass pipeline on a copy of a checked function, so the
 * checked function stays the reference interpreter's unfused input. */
#include "driver/pipeline.h"

#include <stdio.h>

#include "passes/passes.h"

int rt_pipeline_run(const ir_func *f, rt_pipeline_options *o, ir_func **out, char *err,
                    size_t errlen) {
    o->usage_error = 0;
    *out = NULL;
    ir_func *copy = ir_func_clone(f->arena, f);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pass_options po = {
        .no_fuse = o->no_fuse,
        .dump_after = o->dump_after,
        .dump = o->report,
        .report = o->report,
        .verbose = o->verbose,
    };
    int rc = pass_run_pipeline(copy, &po, err, errlen);
    if (rc == PASS_ERR_USAGE) o->usage_error = 1;
    if (rc != PASS_OK) return -1;
    *out = copy;
    return 0;
}
