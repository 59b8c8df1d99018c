/* tests/unit/test_api_threads.c: the C API used from many threads at once, as a careless
 * embedder would. Each round compiles two modules of one source for the CPU target with a
 * fresh cache directory (cold), then 8 threads released together launch their functions:
 * the first launches race to build the modules (exactly one build each, the others wait for
 * it and see its status, header: "a module and its functions may be used from several
 * threads at once"), then every thread goes on with random calls: launches, plans
 * (create, launch, re-bind, free) and fusec_module_build, on random valid descriptors at odd
 * sizes and on invalid ones (NULL or misaligned data, wrong dtype, rank or dims, sizes past
 * any memory, results overlapping inputs or each other, wrong counts). Every call must return the
 * status its descriptors call for; a refused call must leave its results as they were (poisoned);
 * a successful one must compute what the reference interpreter computes on the same inputs.
 * A last round does the same on the warm cache.
 *
 * Run in the plain build, under ASan+UBSan (the sanitizer build) and under ThreadSanitizer
 * (test_api_threads_tsan, a build of the library with -fsanitize=thread). Exits 77 without
 * the CPU backend. */
#include "fusec.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/cache.h"

static const char *SRC = "fn axpy(a: f32[], x: f32[N], y: f32[N]) -> f32[N] { return a * x + y; }\n"
                         "fn rows(x: f32[R, C], b: f32[C]) -> (f32[R, C], f32[R]) {\n"
                         "    let z = x + b;\n"
                         "    return z, sum(z, axis=1);\n"
                         "}\n"
                         "fn cols(x: f32[R, C]) -> f32[C] { return max(x, axis=0); }\n"
                         "fn norm(x: f32[R, C], w: f32[C]) -> f32[R, C] {\n"
                         "    let d = x - mean(x, axis=1);\n"
                         "    return d * rsqrt(mean(d * d, axis=1) + 1e-5) * w;\n"
                         "}\n"
                         "fn stats(x: f32[N]) -> (f32[], f32[]) { return sum(x), max(x); }\n";

#define THREADS   8
#define CALLS     14 /* per thread and round */
#define COLD      3  /* rounds on a fresh cache, then one on the warm one */
#define MAX_ARGS  4
#define MAX_ELEMS (37 * 131)

/* What a thread found wrong; read after it is joined. */
typedef struct finding {
    int failures;
    char first[600];
} finding;

static void fail(finding *fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(finding *fd, const char *fmt, ...) {
    if (fd->failures++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(fd->first, sizeof fd->first, fmt, ap);
        va_end(ap);
    }
}

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int pick(uint64_t *s, int n) {
    return (int)(next(s) % (uint64_t)n);
}

typedef struct round {
    fusec_module *mods[2]; /* the same source, compiled twice: two builds race in the cache */
    fusec_module *ref;     /* the oracle */
    pthread_barrier_t start;
    int round;
} round_t;

/* One call's tensors: inputs and results, each in a buffer of its own (results poisoned). */
typedef struct call {
    fusec_function *f, *rf;
    int nin, nout;
    fusec_tensor in[MAX_ARGS], out[MAX_ARGS], want[MAX_ARGS];
    float *buf[3 * MAX_ARGS];
    int nbuf;
    fusec_status ref_status; /* the reference's, on the unspoiled tensors */
    int spoiled;             /* how spoil() broke the descriptors */
} call_t;

static float *buffer(call_t *c, int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)(n ? n : 1));
    c->buf[c->nbuf++] = p;
    return p;
}

/* Elements of t; past 2^62 (where spoil() made dims huge), 2^62. */
static int64_t count(const fusec_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) {
        if (t->shape[d] == 0) return 0;
        n = n > (INT64_C(1) << 62) / t->shape[d] ? INT64_C(1) << 62 : n * t->shape[d];
    }
    return n;
}

static int poisoned(const fusec_tensor *t) {
    const uint32_t *u = t->data;
    for (int64_t i = 0; i < count(t); i++)
        if (u[i] != 0xffffffffu) return 0;
    return 1;
}

/* Fresh tensors for a random function of m at random odd sizes (some empty), and what the
 * reference computes from them. */
static int setup(call_t *c, round_t *r, fusec_module *m, uint64_t *s, finding *fd) {
    memset(c, 0, sizeof *c);
    int k = pick(s, fusec_module_num_functions(m));
    c->f = fusec_module_function_at(m, k);
    c->rf = fusec_module_function_at(r->ref, k);
    c->nin = fusec_function_num_params(c->f);
    c->nout = fusec_function_num_results(c->f);
    static const int64_t sizes[] = {1, 3, 7, 37, 131, 1001};
    int64_t dim[26];
    for (int i = 0; i < 26; i++)
        dim[i] = pick(s, 16) == 0 ? 0 : sizes[pick(s, 6)];
    for (int i = 0; i < c->nin; i++) {
        fusec_param_info pi;
        fusec_function_param(c->f, i, &pi);
        c->in[i].dtype = pi.dtype;
        c->in[i].rank = pi.rank;
        for (int d = 0; d < pi.rank; d++) /* symbolic dims are single capitals */
            c->in[i].shape[d] = pi.dims[d] >= 0 ? pi.dims[d] : dim[pi.dim_names[d][0] - 'A'];
        if (pi.rank == 2 && c->in[i].shape[0] * c->in[i].shape[1] > MAX_ELEMS)
            c->in[i].shape[0] = 3;
        for (int j = 0; j < i; j++) /* the clamp above applies to every parameter alike */
            if (c->in[j].rank == 2 && pi.rank == 2) c->in[i].shape[0] = c->in[j].shape[0];
        float *p = buffer(c, count(&c->in[i]));
        for (int64_t e = 0; e < count(&c->in[i]); e++)
            p[e] = (float)((int64_t)(next(s) % 4001) - 2000) / 1000.0f + 0.0005f;
        c->in[i].data = p;
    }
    if (fusec_function_result_shapes(c->f, c->in, c->nin, c->out, c->nout) != FUSEC_OK) {
        fail(fd, "result shapes: %s", fusec_module_message(m));
        return -1;
    }
    for (int i = 0; i < c->nout; i++) {
        c->want[i] = c->out[i];
        c->want[i].data = buffer(c, count(&c->out[i]));
        c->out[i].data = buffer(c, count(&c->out[i]));
        memset(c->out[i].data, 0xff, sizeof(float) * (size_t)count(&c->out[i]));
    }
    /* max and min over an empty axis are run-time errors, on every target */
    c->ref_status = fusec_launch(c->rf, c->in, c->nin, c->want, c->nout, NULL);
    if (c->ref_status != FUSEC_OK && c->ref_status != FUSEC_ERR_RUNTIME) {
        fail(fd, "the reference: %s", fusec_module_message(r->ref));
        return -1;
    }
    return 0;
}

static void cleanup(call_t *c) {
    for (int i = 0; i < c->nbuf; i++)
        free(c->buf[i]);
}

/* spoil()'s answer when FUSEC_OK and FUSEC_ERR_SHAPE are both right */
#define EITHER_OK_OR_SHAPE ((fusec_status)-1)

/* Breaks the call's descriptors one random way (or none): the status the call must give. */
static fusec_status spoil(call_t *c, fusec_tensor *in, fusec_tensor *out, int *nin, uint64_t *s) {
    static float spare[4];
    int i = pick(s, c->nin), o = pick(s, c->nout);
    switch ((c->spoiled = pick(s, 15))) {
    case 0:
        if (count(&in[i]) == 0) return FUSEC_OK;
        in[i].data = NULL;
        return FUSEC_ERR_INVALID_ARGUMENT;
    case 1:
        if (count(&out[o]) == 0) return FUSEC_OK;
        out[o].data = NULL;
        return FUSEC_ERR_INVALID_ARGUMENT;
    case 2: in[i].dtype = pick(s, 2) ? FUSEC_F64 : FUSEC_I32; return FUSEC_ERR_DTYPE;
    case 3: out[o].dtype = FUSEC_BF16; return FUSEC_ERR_DTYPE;
    case 4: in[i].rank = pick(s, 2) ? in[i].rank + 1 : 9; return FUSEC_ERR_SHAPE;
    case 5: in[i].rank = -1; return FUSEC_ERR_SHAPE;
    case 6:
        if (out[o].rank == 0) return FUSEC_OK;
        out[o].shape[0] += 1;
        return FUSEC_ERR_SHAPE;
    case 7:
        if (in[i].rank == 0) return FUSEC_OK;
        in[i].shape[0] = -5;
        return FUSEC_ERR_SHAPE;
    case 8: { /* every dim above 1 past any memory, everywhere alike, on tiny buffers: too
                 large where a tensor has no dim 0 (one with 0 elements is fine, however long
                 its other dims) */
        int big = 0, grew_any = 0;
        for (int k = 0; k < c->nin + c->nout; k++) {
            fusec_tensor *t = k < c->nin ? &in[k] : &out[k - c->nin];
            int grew = 0;
            for (int d = 0; d < t->rank; d++)
                if (t->shape[d] > 1) t->shape[d] = INT64_C(1) << 60, grew = 1;
            big |= grew && count(t) != 0;
            grew_any |= grew;
        }
        for (int k = 0; k < c->nin + c->nout && big; k++)
            (k < c->nin ? &in[k] : &out[k - c->nin])->data = spare;
        /* where every argument is empty, a value in between may still be too large (a
         * row's mean over an empty axis, for 2^60 rows): either answer is right */
        return big ? FUSEC_ERR_SHAPE : grew_any ? EITHER_OK_OR_SHAPE : FUSEC_OK;
    }
    case 9: /* a result one element into an input */
        if (count(&in[i]) < 2 || count(&out[o]) == 0) return FUSEC_OK;
        out[o].data = (float *)in[i].data + 1;
        return FUSEC_ERR_INVALID_ARGUMENT;
    case 10: /* two results in one buffer */
        if (c->nout < 2 || count(&out[0]) == 0 || count(&out[1]) == 0) return FUSEC_OK;
        out[1].data = out[0].data;
        return FUSEC_ERR_INVALID_ARGUMENT;
    case 11: *nin -= 1; return FUSEC_ERR_INVALID_ARGUMENT;
    case 12: /* half way into an element */
        if (count(&in[i]) == 0) return FUSEC_OK;
        in[i].data = (char *)in[i].data + 2;
        return FUSEC_ERR_INVALID_ARGUMENT;
    default: return FUSEC_OK;
    }
}

/* Whether results match the reference's: SPEC §5's tolerance, widened for sums of up to a
 * thousand terms. */
static void compare(call_t *c, finding *fd, const char *how) {
    for (int k = 0; k < c->nout; k++) {
        const float *g = c->out[k].data, *w = c->want[k].data;
        for (int64_t e = 0; e < count(&c->out[k]); e++) {
            double tol = 1e-4 * (1 + fabs(w[e])) + 2e-3;
            if (!(fabs((double)g[e] - w[e]) <= tol)) {
                fail(fd, "%s %s: result %d [%lld] is %.9g, the reference %.9g", how,
                     fusec_function_name(c->f), k, (long long)e, g[e], w[e]);
                return;
            }
        }
    }
}

/* One random call: a launch, a plan, or a build and a launch. */
static void one_call(round_t *r, uint64_t *s, finding *fd) {
    fusec_module *m = r->mods[pick(s, 2)];
    call_t c;
    if (setup(&c, r, m, s, fd)) {
        cleanup(&c);
        return;
    }
    fusec_tensor in[MAX_ARGS], out[MAX_ARGS];
    memcpy(in, c.in, sizeof in);
    memcpy(out, c.out, sizeof out);
    int nin = c.nin;
    fusec_status want = spoil(&c, in, out, &nin, s);
    if (want == FUSEC_OK) want = c.ref_status;
    int how = pick(s, 8);
    fusec_status st;
    const char *what = how < 5 ? "launch" : how < 7 ? "plan" : "build+launch";
    if (how < 5) {
        st = fusec_launch(c.f, in, nin, out, c.nout, NULL);
    } else if (how < 7) {
        fusec_plan *p = NULL;
        st = fusec_plan_create(c.f, in, nin, out, c.nout, NULL, &p);
        if ((st == FUSEC_OK) != (p != NULL)) fail(fd, "plan_create: status and plan disagree");
        if (st == FUSEC_OK) st = fusec_plan_launch(p, NULL);
        if (st == FUSEC_OK) st = fusec_plan_rebind(p, in, nin, out, c.nout);
        if (st == FUSEC_OK) st = fusec_plan_launch(p, NULL);
        fusec_plan_free(p);
    } else {
        st = fusec_module_build(m);
        if (st != FUSEC_OK) fail(fd, "build: %s", fusec_module_message(m));
        st = fusec_launch(c.f, in, nin, out, c.nout, NULL);
    }
    if (want == EITHER_OK_OR_SHAPE && (st == FUSEC_OK || st == FUSEC_ERR_SHAPE)) want = st;
    if (st != want) { /* (the message is the module's: another thread's call may have set it) */
        fail(fd, "%s %s (spoiled by case %d): status %d (%s), want %d", what,
             fusec_function_name(c.f), c.spoiled, (int)st, fusec_module_message(m), (int)want);
    } else if (st == FUSEC_OK) {
        compare(&c, fd, what);
    } else {
        for (int k = 0; k < c.nout; k++)
            if (!poisoned(&c.out[k])) {
                fail(fd, "%s %s: refused (%d) but wrote result %d", what, fusec_function_name(c.f),
                     (int)st, k);
                break;
            }
    }
    cleanup(&c);
}

typedef struct worker {
    round_t *r;
    int id;
    finding fd;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1) + (uint64_t)w->r->round * 7919;
    pthread_barrier_wait(&w->r->start);
    for (int i = 0; i < CALLS; i++)
        one_call(w->r, &s, &w->fd);
    return NULL;
}

static fusec_module *compile(fusec_target t, const char *dir, int *failures) {
    fusec_options o;
    fusec_options_init(&o);
    o.target = t;
    o.cache_dir = dir;
    o.verbose = 1; /* the report counts the builds */
    fusec_module *m = NULL;
    fusec_status st = fusec_module_compile_string("threads.fuse", SRC, strlen(SRC), &o, &m);
    if (st != FUSEC_OK) {
        fprintf(stderr, "compile: %s%s\n", fusec_module_message(m), fusec_module_diagnostics(m));
        ++*failures;
    }
    return m;
}

/* The times a module's report says it was built. */
static int builds(const fusec_module *m) {
    int n = 0;
    for (const char *p = fusec_module_report(m); (p = strstr(p, "cpu build")); p++)
        n++;
    return n;
}

static int run_round(int round, const char *dir) {
    int failures = 0;
    round_t r = {.round = round};
    r.ref = compile(FUSEC_TARGET_REF, dir, &failures);
    for (int i = 0; i < 2; i++)
        r.mods[i] = compile(FUSEC_TARGET_CPU, dir, &failures);
    if (failures) return failures;
    pthread_barrier_init(&r.start, NULL, THREADS);
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){&r, i, {0, ""}};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        if (w[i].fd.failures)
            fprintf(stderr, "round %d thread %d: %d failure(s); the first: %s\n", round, i,
                    w[i].fd.failures, w[i].fd.first);
        failures += w[i].fd.failures;
    }
    for (int i = 0; i < 2; i++) {
        int n = builds(r.mods[i]);
        if (n != 1) {
            fprintf(stderr, "round %d: module %d was built %d times\n", round, i, n);
            failures++;
        }
        fusec_module_free(r.mods[i]);
    }
    fusec_module_free(r.ref);
    pthread_barrier_destroy(&r.start);
    return failures;
}

int main(void) {
    fusec_options o;
    fusec_options_init(&o);
    o.target = FUSEC_TARGET_CPU;
    fusec_module *probe = NULL;
    if (fusec_module_compile_string("p.fuse", SRC, strlen(SRC), &o, &probe) ==
        FUSEC_ERR_UNSUPPORTED) {
        printf("test_api_threads: no CPU backend in this build\n");
        fusec_module_free(probe);
        return 77;
    }
    fusec_module_free(probe);
    const char *tmp = getenv("TMPDIR");
    char dirs[COLD][512];
    int failures = 0;
    for (int round = 0; round <= COLD; round++) {
        char *dir = dirs[round < COLD ? round : COLD - 1]; /* the last round: warm */
        if (round < COLD) {
            snprintf(dir, 512, "%s/fusec-threads-XXXXXX", tmp && *tmp ? tmp : "/tmp");
            if (!mkdtemp(dir)) {
                perror("mkdtemp");
                return 1;
            }
        }
        rt_cache_memory_clear(); /* the process's memory of entries would make it warm */
        failures += run_round(round, dir);
    }
    for (int i = 0; i < COLD; i++) {
        fusec_cache_clear(dirs[i], NULL);
        rmdir(dirs[i]);
    }
    if (failures)
        fprintf(stderr, "test_api_threads: %d failure(s)\n", failures);
    else
        printf("test_api_threads: ok (%d rounds of %d threads, %d calls each)\n", COLD + 1, THREADS,
               CALLS);
    return failures ? 1 : 0;
}
