/* driver/pipeline.h: from a checked IR function to the one a backend compiles: a copy of
 * the function run through the pass pipeline (clean-up and fusion). */
#ifndef FUSEC_RUNTIME_PIPELINE_H
#define FUSEC_RUNTIME_PIPELINE_H

#include "ir/ir.h"

typedef struct rt_pipeline_options {
    int no_fuse;            /* every operation its own kernel */
    const char *dump_after; /* pass name, or NULL */
    int verbose;            /* per-kernel report */
    ir_buf *report;         /* where dumps and reports go */
    int usage_error;        /* out: the failure was a bad option (an unknown pass name) */
} rt_pipeline_options;

/* *out = a copy of f after the pipeline; f is left as it was. 0, or -1 with err. */
int rt_pipeline_run(const ir_func *f, rt_pipeline_options *o, ir_func **out, char *err,
                    size_t errlen);

#endif
