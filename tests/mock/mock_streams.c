/* tests/mock/mock_streams.c: the stand-in driver's model of when work happens. cuda_mock.c runs
 * every kernel at once on the calling thread; what a real device does later, or refuses, is
 * modelled here from the CUDA documentation, for the rules fusec must follow and that running
 * kernels cannot show:
 *   streams   the legacy stream (NULL) and blocking streams wait for each other's earlier
 *             work; a non-blocking stream waits for nothing it is not told to (an event)
 *   copies    cuMemcpyHtoD from pageable memory ("API synchronization behavior") returns once
 *             the bytes are staged: they land later, before the legacy stream's next work (or a
 *             blocking stream's), at a host synchronization that covers them, or for a stream
 *             that waits on an event recorded after them; a kernel on a non-blocking stream
 *             before that reads the old bytes
 *   queued    launched work counts as queued until a host synchronization covers it; a module
 *             unloaded with kernels queued is counted (mock_stats.unloads_queued)
 *   capture   on a capturing stream (cuStreamBeginCapture) work is recorded into a graph, not
 *             run. What the Programming Guide calls invalid during a capture fails, and
 *             invalidates it (mock_stats.invalidations; cuStreamEndCapture then fails):
 *             synchronizing a capturing stream or the context; any use of the legacy stream
 *             while a blocking stream captures; a wait that crosses the capture's boundary
 *             (an event recorded outside it; a legacy-stream wait on a captured event); and a
 *             potentially unsafe call (cuMemAlloc, cuMemFree, the synchronous copies,
 *             cuStreamSynchronize, cuEventSynchronize, cuModuleLoadData, cuModuleUnload) from
 *             a thread that a capture prohibits, by cuThreadExchangeStreamCaptureMode's rules;
 *             and a graph launched on a capturing stream (cuGraphLaunch: the H100's driver
 *             answers CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED).
 *             A stream that waits on an event of the capture joins it, and must be joined
 *             back (the origin waiting on an event recorded on it) before the capture ends.
 * One mutex guards it all (a driver is thread-safe); no kernel runs under it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mock/mock_internal.h"

enum { STREAM_LIVE = 0x5713EA3, STREAM_DEAD = 0xDEAD, MAX_STREAMS = 1 << 16 };
enum { MAX_CAPTURES = 1024, MAX_QUEUED = 4096 };
enum { MODE_GLOBAL = 0, MODE_THREAD_LOCAL = 1, MODE_RELAXED = 2 }; /* CUstreamCaptureMode */

typedef struct mock_capture mock_capture;

struct mock_stream {
    unsigned mark;     /* first: what a handle points at, checked at every use */
    unsigned flags;    /* RT_CU_STREAM_NON_BLOCKING, or 0: blocking (as the legacy stream) */
    mock_capture *cap; /* the capture it records into: its own, or one it joined */
    int rejoined;      /* joined: the capture's origin has waited for its work since */
    int device;        /* its context's (the legacy stream: whichever is current) */
};

struct mock_capture {
    int active, invalid, mode;
    int blocking; /* its blocking streams */
    pthread_t thread;
    mock_stream *origin;
    mock_graph *graph;
};

typedef struct mock_event {
    mock_stream *stream; /* where it was last recorded; NULL: never */
    unsigned long seq;   /* the work issued before it */
    mock_capture *cap;   /* last recorded in this capture (a captured event), else NULL */
} mock_event;

typedef struct pending_copy {
    mock_stream *s;
    unsigned long seq;
    void *dst, *data;
    size_t n;
    struct pending_copy *next;
} pending_copy;

typedef struct queued {
    mock_stream *s;
    const void *module;
    unsigned long seq; /* of its last launch there */
} queued;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* slots never reused, so that a destroyed stream stays marked dead and any later use of its
 * handle stops the test, naming the call; no allocation, so none is left over at exit */
static mock_stream streams[MAX_STREAMS];
static unsigned nstreams;
static mock_stream legacy = {STREAM_LIVE, 0, NULL, 0, -1};

int mock_stream_device(const mock_stream *s) {
    return s == &legacy ? mock_current_device() : s->device;
}

MOCK_API rt_cu_result cuStreamGetCtx(rt_cu_stream s, rt_cu_context *c) {
    int d = mock_stream_device(mock_stream_of(s, "cuStreamGetCtx"));
    if (d < 0) return MOCK_INVALID_CONTEXT;
    *c = mock_ctx_handle(d);
    OK;
}
static mock_capture captures[MAX_CAPTURES]; /* never reused: events point at them */
static int ncaptures;
static pending_copy *copies;
static queued queue[MAX_QUEUED];
static int nqueued;
static unsigned long seq; /* orders everything issued */
static _Thread_local int thread_mode = MODE_GLOBAL;

mock_stream *mock_stream_of(rt_cu_stream s, const char *call) {
    if (!s) return &legacy;
    mock_stream *ms = (mock_stream *)(void *)s;
    if (ms->mark != STREAM_LIVE) {
        fprintf(stderr, "cuda_mock: %s on a destroyed stream\n", call);
        abort();
    }
    return ms;
}

/* ---- order ------------------------------------------------------------------------------- */

static int blocking(const mock_stream *s) {
    return !(s->flags & RT_CU_STREAM_NON_BLOCKING);
}

/* Whether work on a comes after work issued earlier on b; a NULL a: everything does. */
static int ordered_after(const mock_stream *a, const mock_stream *b) {
    return !a || a == b || ((a == &legacy || b == &legacy) && blocking(a) && blocking(b));
}

/* The copies issued before `upto` that work on s (NULL: all work) comes after land. */
static void land(const mock_stream *s, unsigned long upto) {
    for (pending_copy **pp = &copies; *pp;) {
        pending_copy *c = *pp;
        if (c->seq < upto && ordered_after(s, c->s)) {
            memcpy(c->dst, c->data, c->n);
            *pp = c->next;
            free(c->data);
            free(c);
        } else {
            pp = &c->next;
        }
    }
}

/* The host waits for s (NULL: the whole context) up to `upto`: its copies land, its launches
 * are done. */
static void host_sync(const mock_stream *s, unsigned long upto) {
    land(s, upto);
    int k = 0;
    for (int i = 0; i < nqueued; i++)
        if (!(queue[i].seq < upto && ordered_after(s, queue[i].s))) queue[k++] = queue[i];
    nqueued = k;
}

static void invalidate(mock_capture *c) {
    if (!c->active || c->invalid) return;
    c->invalid = 1;
    COUNT(mock_st.invalidations, 1);
}

/* The legacy stream used while blocking streams capture: those captures are invalid. */
static rt_cu_result legacy_conflict(void) {
    int found = 0;
    for (int i = 0; i < ncaptures; i++)
        if (captures[i].active && captures[i].blocking) {
            invalidate(&captures[i]);
            found = 1;
        }
    return found ? MOCK_CAPTURE_IMPLICIT : RT_CU_SUCCESS;
}

static rt_cu_result unsafe_locked(const char *call) {
    int found = 0;
    pthread_t self = pthread_self();
    for (int i = 0; i < ncaptures && thread_mode != MODE_RELAXED; i++) {
        mock_capture *c = &captures[i];
        int own = pthread_equal(c->thread, self) && c->mode != MODE_RELAXED;
        if (c->active && (own || (thread_mode == MODE_GLOBAL && c->mode == MODE_GLOBAL))) {
            invalidate(c);
            found = 1;
        }
    }
    if (found) fprintf(stderr, "cuda_mock: %s during a stream capture that forbids it\n", call);
    return found ? MOCK_CAPTURE_UNSUPPORTED : RT_CU_SUCCESS;
}

rt_cu_result mock_unsafe(const char *call) {
    pthread_mutex_lock(&mu);
    rt_cu_result r = unsafe_locked(call);
    pthread_mutex_unlock(&mu);
    return r;
}

rt_cu_result mock_not_capturable(mock_stream *s) {
    pthread_mutex_lock(&mu);
    rt_cu_result r = RT_CU_SUCCESS;
    if (s->cap) {
        invalidate(s->cap);
        r = MOCK_CAPTURE_UNSUPPORTED;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

rt_cu_result mock_issue(mock_stream *s, const mock_node *nodes, int n, int *captured) {
    *captured = 0;
    pthread_mutex_lock(&mu);
    rt_cu_result r = RT_CU_SUCCESS;
    mock_capture *c = s->cap;
    if (c && c->invalid) {
        r = MOCK_CAPTURE_INVALIDATED;
    } else if (c) {
        mock_graph *g = c->graph;
        if (g->nnodes + n > MOCK_MAX_NODES) {
            r = MOCK_OUT_OF_MEMORY;
        } else {
            memcpy(&g->nodes[g->nnodes], nodes, sizeof *nodes * (size_t)n);
            g->nnodes += n;
            *captured = 1;
        }
    } else if (s != &legacy || (r = legacy_conflict()) == RT_CU_SUCCESS) {
        land(s, ++seq);
    }
    pthread_mutex_unlock(&mu);
    return r;
}

void mock_queued(mock_stream *s, const mock_node *nodes, int n) {
    pthread_mutex_lock(&mu);
    unsigned long at = ++seq;
    for (int i = 0; i < n; i++) {
        if (nodes[i].kind != MOCK_NODE_KERNEL) continue;
        const void *m = mock_function_module(nodes[i].p.func);
        int k = 0;
        while (k < nqueued && !(queue[k].s == s && queue[k].module == m))
            k++;
        if (k == MAX_QUEUED) {
            fprintf(stderr, "cuda_mock: more than %d streams with queued work\n", MAX_QUEUED);
            abort();
        }
        queue[k] = (queued){s, m, at};
        if (k == nqueued) nqueued++;
    }
    pthread_mutex_unlock(&mu);
}

void mock_module_unloading(const void *module) {
    pthread_mutex_lock(&mu);
    int k = 0, found = 0;
    for (int i = 0; i < nqueued; i++) {
        if (queue[i].module == module)
            found = 1;
        else
            queue[k++] = queue[i];
    }
    nqueued = k;
    pthread_mutex_unlock(&mu);
    if (!found) return;
    COUNT(mock_st.unloads_queued, 1);
    fprintf(stderr, "cuda_mock: cuModuleUnload while kernels of the module are queued (launched "
                    "and not synchronized since)\n");
}

/* ---- memory a capture allocates ----------------------------------------------------------- */

void mock_gmem_release(mock_gmem *m) {
    if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    for (int i = 0; i < m->n; i++) {
        mock_mem_remove(m->ptrs[i]);
        free(m->ptrs[i]);
    }
    free(m->ptrs);
    free(m);
}

static int gmem_add(mock_graph *g, void *p) {
    if (!g->mem && !(g->mem = calloc(1, sizeof *g->mem))) return -1;
    mock_gmem *m = g->mem;
    m->refs = m->refs ? m->refs : 1;
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 8;
        void **ptrs = realloc(m->ptrs, sizeof *ptrs * (size_t)cap);
        if (!ptrs) return -1;
        m->ptrs = ptrs;
        m->cap = cap;
    }
    m->ptrs[m->n++] = p;
    return 0;
}

rt_cu_result mock_capture_alloc(mock_stream *s, size_t n, void **out, int *captured) {
    *captured = 0;
    pthread_mutex_lock(&mu);
    rt_cu_result r = RT_CU_SUCCESS;
    mock_capture *c = s->cap;
    if (c) {
        *captured = 1;
        void *p = NULL;
        if (c->invalid)
            r = MOCK_CAPTURE_INVALIDATED;
        else if (posix_memalign(&p, 256, n ? n : 1) != 0 || gmem_add(c->graph, p) != 0)
            r = MOCK_OUT_OF_MEMORY;
        if (r != RT_CU_SUCCESS) free(p);
        *out = p;
    } else if (s == &legacy) {
        r = legacy_conflict();
    }
    pthread_mutex_unlock(&mu);
    return r;
}

rt_cu_result mock_capture_free(mock_stream *s, void *p, int *captured) {
    *captured = 0;
    pthread_mutex_lock(&mu);
    rt_cu_result r = RT_CU_SUCCESS;
    mock_capture *c = s->cap;
    if (c) {
        /* a captured free node frees only what the same capture allocated */
        *captured = 1;
        const mock_gmem *m = c->graph->mem;
        int mine = 0;
        for (int i = 0; m && i < m->n; i++)
            mine |= m->ptrs[i] == p;
        if (!mine) {
            invalidate(c);
            r = MOCK_INVALID_VALUE;
        }
    } else if (s == &legacy) {
        r = legacy_conflict();
    }
    /* a capture's memory freed outside it is the caller's to free now, no longer the graph's */
    for (int i = 0; r == RT_CU_SUCCESS && !*captured && i < ncaptures; i++) {
        mock_gmem *m = captures[i].active ? captures[i].graph->mem : NULL;
        for (int k = 0; m && k < m->n; k++)
            if (m->ptrs[k] == p) m->ptrs[k--] = m->ptrs[--m->n];
    }
    pthread_mutex_unlock(&mu);
    return r;
}

/* ---- streams ------------------------------------------------------------------------------- */

MOCK_API rt_cu_result cuStreamCreate(rt_cu_stream *s, unsigned f) {
    unsigned i = __atomic_fetch_add(&nstreams, 1, __ATOMIC_RELAXED);
    if (i >= MAX_STREAMS) return MOCK_OUT_OF_MEMORY;
    if (mock_current_device() < 0) return MOCK_INVALID_CONTEXT;
    streams[i] = (mock_stream){STREAM_LIVE, f, NULL, 0, mock_current_device()};
    *s = (rt_cu_stream)(void *)&streams[i];
    COUNT(mock_st.streams, 1);
    OK;
}

MOCK_API rt_cu_result cuStreamDestroy_v2(rt_cu_stream s) {
    mock_stream *ms = mock_stream_of(s, "cuStreamDestroy");
    ms->mark = STREAM_DEAD; /* its slot is never reused: a later use is caught */
    COUNT(mock_st.streams, -1);
    OK;
}

MOCK_API rt_cu_result cuStreamSynchronize(rt_cu_stream s) {
    mock_stream *ms = mock_stream_of(s, "cuStreamSynchronize");
    pthread_mutex_lock(&mu);
    rt_cu_result r = RT_CU_SUCCESS;
    if (ms->cap) {
        invalidate(ms->cap);
        r = MOCK_CAPTURE_UNSUPPORTED;
    } else if (ms == &legacy) {
        r = legacy_conflict();
    }
    if (r == RT_CU_SUCCESS) r = unsafe_locked("cuStreamSynchronize");
    if (r == RT_CU_SUCCESS) host_sync(ms, ++seq);
    pthread_mutex_unlock(&mu);
    return r;
}

MOCK_API rt_cu_result cuCtxSynchronize(void) {
    pthread_mutex_lock(&mu);
    rt_cu_result r = RT_CU_SUCCESS;
    for (int i = 0; i < ncaptures; i++)
        if (captures[i].active) {
            invalidate(&captures[i]);
            r = MOCK_CAPTURE_UNSUPPORTED;
        }
    if (r == RT_CU_SUCCESS) host_sync(NULL, ++seq);
    pthread_mutex_unlock(&mu);
    return r;
}

/* ---- events -------------------------------------------------------------------------------- */

MOCK_API rt_cu_result cuEventCreate(rt_cu_event *e, unsigned f) {
    (void)f;
    mock_event *ev = calloc(1, sizeof *ev);
    if (!ev) return MOCK_OUT_OF_MEMORY;
    *e = (rt_cu_event)(void *)ev;
    COUNT(mock_st.events, 1);
    OK;
}

MOCK_API rt_cu_result cuEventDestroy_v2(rt_cu_event e) {
    free(e);
    COUNT(mock_st.events, -1);
    OK;
}

MOCK_API rt_cu_result cuEventRecord(rt_cu_event e, rt_cu_stream s) {
    mock_stream *ms = mock_stream_of(s, "cuEventRecord");
    mock_event *ev = (mock_event *)(void *)e;
    pthread_mutex_lock(&mu);
    rt_cu_result r = RT_CU_SUCCESS;
    if (ms->cap && ms->cap->invalid) r = MOCK_CAPTURE_INVALIDATED;
    if (!ms->cap && ms == &legacy) r = legacy_conflict();
    if (r == RT_CU_SUCCESS) *ev = (mock_event){ms, ++seq, ms->cap};
    pthread_mutex_unlock(&mu);
    return r;
}

MOCK_API rt_cu_result cuEventSynchronize(rt_cu_event e) {
    mock_event *ev = (mock_event *)(void *)e;
    pthread_mutex_lock(&mu);
    rt_cu_result r = ev->cap ? MOCK_CAPTURED_EVENT : unsafe_locked("cuEventSynchronize");
    if (r == RT_CU_SUCCESS && ev->stream) host_sync(ev->stream, ev->seq);
    pthread_mutex_unlock(&mu);
    return r;
}

/* s waits for e inside a capture: only for an event of the same capture (which joins e's
 * stream back when it is another); anything else crosses the capture's boundary. */
static rt_cu_result wait_captured(mock_stream *s, const mock_event *ev) {
    if (ev->cap == s->cap) {
        if (ev->stream != s) ev->stream->rejoined = 1;
        return RT_CU_SUCCESS;
    }
    invalidate(s->cap);
    return ev->cap ? MOCK_CAPTURED_EVENT : MOCK_CAPTURE_ISOLATION;
}

MOCK_API rt_cu_result cuStreamWaitEvent(rt_cu_stream s, rt_cu_event e, unsigned f) {
    mock_stream *ms = mock_stream_of(s, "cuStreamWaitEvent");
    const mock_event *ev = (const mock_event *)(void *)e;
    if (f != 0) return MOCK_INVALID_VALUE; /* fusec passes no flags */
    pthread_mutex_lock(&mu);
    rt_cu_result r = RT_CU_SUCCESS;
    mock_capture *ec = ev->cap;
    if (ms->cap) {
        r = wait_captured(ms, ev);
    } else if (ec && !ec->active) {
        r = MOCK_CAPTURED_EVENT;
    } else if (ec && ms == &legacy) {
        invalidate(ec);
        r = MOCK_CAPTURE_IMPLICIT;
    } else if (ec) {
        /* s joins the capture: its work from now on is recorded there */
        ms->cap = ec;
        ms->rejoined = 0;
        ec->blocking += blocking(ms);
    } else if (ms == &legacy && (r = legacy_conflict()) != RT_CU_SUCCESS) {
    } else if (ev->stream) {
        land(ev->stream, ev->seq); /* what came before e comes before s's next work */
    }
    pthread_mutex_unlock(&mu);
    return r;
}

/* ---- copies between the host and the device (synchronous, on the legacy stream) ------------ */

MOCK_API rt_cu_result cuMemcpyHtoD_v2(rt_cu_deviceptr d, const void *src, size_t n) {
    pthread_mutex_lock(&mu);
    rt_cu_result r = legacy_conflict();
    if (r == RT_CU_SUCCESS) r = unsafe_locked("cuMemcpyHtoD");
    pending_copy *c = NULL;
    if (r == RT_CU_SUCCESS && (!(c = calloc(1, sizeof *c)) || !(c->data = malloc(n ? n : 1)))) {
        free(c);
        r = MOCK_OUT_OF_MEMORY;
    }
    if (r == RT_CU_SUCCESS) {
        /* the stream sync before the copy; then the bytes are staged, and land later */
        host_sync(&legacy, ++seq);
        memcpy(c->data, src, n);
        *c = (pending_copy){&legacy, ++seq, (void *)(uintptr_t)d, c->data, n, copies};
        copies = c;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

MOCK_API rt_cu_result cuMemcpyDtoH_v2(void *d, rt_cu_deviceptr s, size_t n) {
    pthread_mutex_lock(&mu);
    rt_cu_result r = legacy_conflict();
    if (r == RT_CU_SUCCESS) r = unsafe_locked("cuMemcpyDtoH");
    if (r == RT_CU_SUCCESS) {
        host_sync(&legacy, ++seq); /* returns once the copy is done */
        memcpy(d, (const void *)(uintptr_t)s, n);
    }
    pthread_mutex_unlock(&mu);
    return r;
}

/* ---- capture ------------------------------------------------------------------------------ */

MOCK_API rt_cu_result cuStreamBeginCapture_v2(rt_cu_stream s, int mode) {
    mock_stream *ms = mock_stream_of(s, "cuStreamBeginCapture");
    if (ms == &legacy || mode < MODE_GLOBAL || mode > MODE_RELAXED) return MOCK_INVALID_VALUE;
    mock_graph *g = calloc(1, sizeof *g);
    if (!g) return MOCK_OUT_OF_MEMORY;
    pthread_mutex_lock(&mu);
    rt_cu_result r = RT_CU_SUCCESS;
    if (ms->cap || ncaptures == MAX_CAPTURES) {
        r = MOCK_INVALID_VALUE;
    } else {
        captures[ncaptures++] = (mock_capture){1, 0, mode, blocking(ms), pthread_self(), ms, g};
        ms->cap = &captures[ncaptures - 1];
        ms->rejoined = 1;
        g = NULL;
    }
    pthread_mutex_unlock(&mu);
    free(g);
    return r;
}

/* The capture c ends: its streams leave it; 1 when one that joined it was never joined back. */
static int release_streams(mock_capture *c) {
    int unjoined = 0;
    for (unsigned i = 0; i < nstreams && i < MAX_STREAMS; i++)
        if (streams[i].cap == c) {
            unjoined |= !streams[i].rejoined;
            streams[i].cap = NULL;
        }
    return unjoined;
}

MOCK_API rt_cu_result cuStreamEndCapture(rt_cu_stream s, rt_cu_graph *graph) {
    mock_stream *ms = mock_stream_of(s, "cuStreamEndCapture");
    *graph = NULL;
    pthread_mutex_lock(&mu);
    rt_cu_result r = RT_CU_SUCCESS;
    mock_capture *c = ms->cap;
    if (!c || c->origin != ms) {
        r = MOCK_CAPTURE_UNMATCHED;
    } else if (c->mode != MODE_RELAXED && !pthread_equal(c->thread, pthread_self())) {
        r = MOCK_CAPTURE_WRONG_THREAD;
    } else {
        if (release_streams(c)) {
            invalidate(c);
            r = MOCK_CAPTURE_UNJOINED;
        } else if (c->invalid) {
            r = MOCK_CAPTURE_INVALIDATED;
        }
        c->active = 0;
        if (r == RT_CU_SUCCESS) {
            *graph = (rt_cu_graph)(void *)c->graph;
            COUNT(mock_st.graphs, 1);
        } else {
            mock_gmem_release(c->graph->mem);
            free(c->graph);
        }
        c->graph = NULL;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

MOCK_API rt_cu_result cuStreamIsCapturing(rt_cu_stream s, int *status) {
    mock_stream *ms = mock_stream_of(s, "cuStreamIsCapturing");
    pthread_mutex_lock(&mu);
    rt_cu_result r = RT_CU_SUCCESS;
    /* the legacy stream while a blocking stream captures: an error, which invalidates nothing */
    for (int i = 0; i < ncaptures && ms == &legacy; i++)
        if (captures[i].active && captures[i].blocking) r = MOCK_CAPTURE_IMPLICIT;
    if (r == RT_CU_SUCCESS) *status = !ms->cap ? 0 : ms->cap->invalid ? 2 : 1;
    pthread_mutex_unlock(&mu);
    return r;
}

MOCK_API rt_cu_result cuThreadExchangeStreamCaptureMode(int *mode) {
    if (*mode < MODE_GLOBAL || *mode > MODE_RELAXED) return MOCK_INVALID_VALUE;
    int old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    OK;
}
