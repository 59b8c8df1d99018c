/* tests/emu/emu_run.c: runs a host-built kernel (tests/emu/cuda_emu.h) over a grid, a block at
 * a time, each CUDA thread a fiber (Boost.Context's fcontext: a switch is a few instructions,
 * where ucontext's makes a system call for the signal mask) that runs until it waits at
 * __syncthreads or a warp shuffle. Which ready thread runs next is pseudo-random (a fixed
 * sequence, so a failure reproduces), so that a missing barrier shows as a wrong result rather
 * than hiding behind one lucky order. Collectives are checked as a GPU would need them: every
 * thread of the block at __syncthreads (none exited), every lane of a full warp at a
 * shuffle with the full mask; anything else fails the launch with a message, as does a
 * deadlock. One launch at a time (the stand-in driver runs launches synchronously).
 *
 * Kernels built with AddressSanitizer (tests/emu/nvrtc_emu.c) are told of each stack switch,
 * and a report names the kernel, block and thread it came from. */
#include "tests/emu/emu_run.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* Boost.Context's C entry points (boost/context/detail/fcontext.hpp), from its run-time
 * library alone: the headers come only with all of Boost's. */
typedef void *fcontext_t;
typedef struct transfer_t {
    fcontext_t fctx;
    void *data;
} transfer_t;
transfer_t jump_fcontext(fcontext_t const to, void *vp);
fcontext_t make_fcontext(void *sp, size_t size, void (*fn)(transfer_t));

/* AddressSanitizer's, where it is loaded (weak: absent otherwise) */
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size)
    __attribute__((weak));
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old) __attribute__((weak));
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* ThreadSanitizer's (weak too): each CUDA thread is a TSan fiber of its own, and switches
 * between them carry no ordering (TSAN_NO_SYNC), so that only what orders CUDA threads on a
 * GPU orders them here: __syncthreads and a warp's shuffles. A kernel built with TSan then has
 * every race between the threads of a block that a run meets reported, in shared and in
 * global memory, much as compute-sanitizer's racecheck would. Blocks are ordered one after
 * another (their __shared__ arrays are one static array here), so races between blocks go
 * unseen. */
void *__tsan_get_current_fiber(void) __attribute__((weak));
void *__tsan_create_fiber(unsigned flags) __attribute__((weak));
void __tsan_switch_to_fiber(void *fiber, unsigned flags) __attribute__((weak));
void __tsan_set_fiber_name(void *fiber, const char *name) __attribute__((weak));
void __tsan_acquire(void *addr) __attribute__((weak));
void __tsan_release(void *addr) __attribute__((weak));
enum { TSAN_NO_SYNC = 1 };

enum { READY, AT_SYNC, AT_SHFL, DONE };
/* each thread's stack is STACK bytes, the lowest GUARD of them inaccessible: a kernel (at -O0,
 * with ASan's redzones) that outgrew it faults instead of writing into the next thread's */
enum { MAX_THREADS = 1024, STACK = 256 * 1024, GUARD = 4096, SLOT = 8 };

typedef struct fiber {
    fcontext_t ctx;
    emu_coords c;
    int state;
    unsigned seq;   /* shuffles done */
    unsigned syncs; /* __syncthreads passed */
    void *tsan;     /* its ThreadSanitizer fiber */
} fiber;

static struct {
    fiber f[MAX_THREADS];
    char *stacks;
    fcontext_t sched;
    const void *sched_stack; /* the scheduler's stack, for AddressSanitizer */
    size_t sched_stack_size;
    const char *kernel; /* the one running, or NULL */
    void *sched_tsan;   /* the scheduler's ThreadSanitizer fiber */
    /* what TSan orders by: the arrivals at a barrier or a warp's shuffle before the
     * departures from it (two of each, by parity: a thread arriving at the next one must not
     * order a slow one leaving this one), what came before a block before its threads, and
     * its threads before what follows it */
    char tsan_barrier[2], tsan_shfl[MAX_THREADS / 32][2], tsan_start, tsan_done;
    fiber *cur;
    emu_coords *cur_coords;
    emu_kernel_fn fn;
    void **args;
    unsigned nthreads;
    int failed;
    char msg[256];
    unsigned ready[MAX_THREADS / 32][32], nready[MAX_THREADS / 32]; /* by warp: can run */
    unsigned char shfl[MAX_THREADS / 32][2][32][SLOT];
    uint64_t rng;
} E;

static void set_failure(const char *msg) {
    if (!E.failed) snprintf(E.msg, sizeof E.msg, "%s", msg);
    E.failed = 1;
}

/* From a thread to the scheduler, back when the scheduler runs this thread again (never,
 * where the thread is DONE: its stack is dropped) */
static void to_scheduler(void) {
    int done = E.cur->state == DONE;
    void *fake = NULL;
    if (__sanitizer_start_switch_fiber)
        __sanitizer_start_switch_fiber(done ? NULL : &fake, E.sched_stack, E.sched_stack_size);
    if (__tsan_switch_to_fiber) __tsan_switch_to_fiber(E.sched_tsan, TSAN_NO_SYNC);
    E.sched = jump_fcontext(E.sched, NULL).fctx;
    if (__sanitizer_finish_switch_fiber) __sanitizer_finish_switch_fiber(fake, NULL, NULL);
}

/* from a thread: the launch fails, and this thread never runs again */
static void fail_now(const char *msg) {
    set_failure(msg);
    E.cur->state = DONE;
    to_scheduler();
}

static void emu_syncthreads(void) {
    fiber *f = E.cur;
    f->state = AT_SYNC;
    if (__tsan_release) __tsan_release(&E.tsan_barrier[f->syncs & 1]);
    to_scheduler();
    if (__tsan_acquire) __tsan_acquire(&E.tsan_barrier[f->syncs & 1]);
    f->syncs++;
}

static void emu_shfl_xor(unsigned mask, void *v, int o, size_t size) {
    fiber *f = E.cur;
    unsigned lane = f->c.tid.x & 31, warp = f->c.tid.x >> 5;
    if (mask != 0xffffffffu) fail_now("a warp shuffle with a partial mask");
    if ((warp + 1) * 32 > E.nthreads) fail_now("a warp shuffle in a partial warp");
    if (size > SLOT || o < 0 || o > 31) fail_now("a warp shuffle of an unexpected kind");
    memcpy(E.shfl[warp][f->seq & 1][lane], v, size);
    f->state = AT_SHFL;
    if (__tsan_release) __tsan_release(&E.tsan_shfl[warp][f->seq & 1]);
    to_scheduler();
    if (__tsan_acquire) __tsan_acquire(&E.tsan_shfl[warp][f->seq & 1]);
    memcpy(v, E.shfl[warp][f->seq & 1][lane ^ (unsigned)o], size);
    f->seq++;
}

static void emu_fail(const char *msg) {
    fail_now(msg);
}

static const emu_api api = {&E.cur_coords, emu_syncthreads, emu_shfl_xor, emu_fail};

const emu_api *emu_get_api(void) {
    return &api;
}

/* a thread's first frame: fcontext returns here from the scheduler's first jump */
static void thread_main(transfer_t from) {
    E.sched = from.fctx;
    if (__sanitizer_finish_switch_fiber)
        __sanitizer_finish_switch_fiber(NULL, &E.sched_stack, &E.sched_stack_size);
    if (__tsan_acquire) __tsan_acquire(&E.tsan_start);
    E.fn(E.args);
    if (__tsan_release) __tsan_release(&E.tsan_done);
    E.cur->state = DONE;
    to_scheduler();
}

static unsigned next_random(void) {
    E.rng = E.rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(E.rng >> 33);
}

/* thread i of block b, ready to start */
static void init_fiber(unsigned i, unsigned b, unsigned gx) {
    fiber *f = &E.f[i];
    memset(&f->c, 0, sizeof f->c);
    f->c.tid.x = i;
    f->c.bid.x = b;
    f->c.bdim = (emu_dim3){E.nthreads, 1, 1};
    f->c.gdim = (emu_dim3){gx, 1, 1};
    f->state = READY;
    f->seq = f->syncs = 0;
    if (__tsan_create_fiber && !f->tsan) { /* one per slot: blocks are in order anyway */
        f->tsan = __tsan_create_fiber(0);
        char name[32];
        snprintf(name, sizeof name, "CUDA thread %u", i);
        __tsan_set_fiber_name(f->tsan, name);
    }
    f->ctx = make_fcontext(E.stacks + (size_t)(i + 1) * STACK, STACK - GUARD, thread_main);
}

/* The next thread to run, taken out of the ready lists: in three blocks of four, a lane of the
 * warp first in this block's random order that has one ready (so that warp runs ahead of the
 * others as far as the collectives let it), else of a warp picked at random. */
static unsigned pick(unsigned nwarps, const unsigned *order, int ahead) {
    unsigned w = 0, r = next_random();
    for (unsigned k = 0; k < nwarps; k++) {
        w = ahead ? order[k] : (r + k) % nwarps;
        if (E.nready[w]) break;
    }
    unsigned j = next_random() % E.nready[w], i = E.ready[w][j];
    E.ready[w][j] = E.ready[w][--E.nready[w]];
    return i;
}

/* From the scheduler to thread i, back when it waits or ends */
static void to_thread(unsigned i) {
    fiber *f = &E.f[i];
    void *fake = NULL;
    if (__sanitizer_start_switch_fiber)
        __sanitizer_start_switch_fiber(&fake, E.stacks + (size_t)i * STACK + GUARD, STACK - GUARD);
    if (__tsan_switch_to_fiber) __tsan_switch_to_fiber(f->tsan, TSAN_NO_SYNC);
    f->ctx = jump_fcontext(f->ctx, NULL).fctx;
    if (__sanitizer_finish_switch_fiber) __sanitizer_finish_switch_fiber(fake, NULL, NULL);
}

static void make_ready(unsigned i) {
    E.f[i].state = READY;
    E.ready[i >> 5][E.nready[i >> 5]++] = i;
}

/* Runs block b: each step one ready thread runs until it waits or ends; a collective releases
 * its waiters as soon as the last one arrives. */
static int run_block(unsigned b, unsigned gx) {
    unsigned n = E.nthreads, nwarps = (n + 31) / 32, waiting = 0, done = 0, at_sync = 0;
    unsigned at_shfl[MAX_THREADS / 32] = {0}, order[MAX_THREADS / 32];
    for (unsigned w = 0; w < nwarps; w++) {
        E.nready[w] = 0;
        order[w] = w;
    }
    for (unsigned w = nwarps; w > 1; w--) { /* Fisher-Yates */
        unsigned j = next_random() % w, t = order[w - 1];
        order[w - 1] = order[j];
        order[j] = t;
    }
    int ahead = next_random() % 4 != 0;
    for (unsigned i = 0; i < n; i++) {
        init_fiber(i, b, gx);
        make_ready(i);
    }
    if (__tsan_release) __tsan_release(&E.tsan_start);
    while (done < n) {
        if (waiting + done == n) {
            set_failure(at_sync ? "__syncthreads that not every thread of the block reaches"
                                : "deadlock: a warp shuffle that not every lane reaches");
            return -1;
        }
        unsigned i = pick(nwarps, order, ahead);
        fiber *f = &E.f[i];
        E.cur = f;
        E.cur_coords = &f->c;
        to_thread(i);
        if (E.failed) return -1;
        if (f->state == DONE) {
            done++;
        } else if (f->state == AT_SYNC) {
            waiting++;
            if (++at_sync == n) {
                for (unsigned j = 0; j < n; j++)
                    make_ready(j);
                at_sync = waiting = 0;
            }
        } else if (f->state == AT_SHFL) {
            unsigned w = i >> 5;
            waiting++;
            if (++at_shfl[w] == 32) {
                for (unsigned j = w * 32; j < w * 32 + 32; j++) {
                    if (E.f[j].seq != f->seq) {
                        set_failure("a warp's lanes at different shuffles");
                        return -1;
                    }
                    make_ready(j);
                }
                at_shfl[w] = 0;
                waiting -= 32;
            }
        }
        if (at_sync && at_sync + done == n) {
            set_failure("__syncthreads with some of the block's threads exited");
            return -1;
        }
    }
    return 0;
}

/* a sanitizer's report ends with this, before the process dies */
static void report_thread(void) {
    if (E.kernel && E.cur)
        fprintf(stderr, "(in emulated kernel %s, block %u, thread %u)\n", E.kernel, E.cur->c.bid.x,
                E.cur->c.tid.x);
}

int emu_launch(const char *kernel, emu_kernel_fn fn, unsigned gx, unsigned bx, void **args,
               char *err, size_t errlen) {
    if (bx == 0 || bx > MAX_THREADS || gx == 0) {
        snprintf(err, errlen, "a launch of %u blocks of %u threads", gx, bx);
        return -1;
    }
    if (!E.stacks) {
        void *m = mmap(NULL, (size_t)MAX_THREADS * STACK, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            snprintf(err, errlen, "no memory for the threads' stacks");
            return -1;
        }
        for (size_t i = 0; i < MAX_THREADS; i++)
            if (mprotect((char *)m + i * STACK, GUARD, PROT_NONE) != 0) {
                munmap(m, (size_t)MAX_THREADS * STACK);
                snprintf(err, errlen, "cannot guard the threads' stacks");
                return -1;
            }
        E.stacks = m;
        E.rng = 0x5eed;
        if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(report_thread);
        /* UBSan's run time is a library of its own, with its own callback */
        void *ubsan = dlopen("libubsan.so.1", RTLD_NOW | RTLD_NOLOAD);
        void *set = ubsan ? dlsym(ubsan, "__sanitizer_set_death_callback") : NULL;
        if (set) {
            void (*set_callback)(void (*)(void));
            memcpy(&set_callback, &set, sizeof set);
            set_callback(report_thread);
        }
    }
    E.kernel = kernel;
    if (__tsan_get_current_fiber) E.sched_tsan = __tsan_get_current_fiber();
    E.fn = fn;
    E.args = args;
    E.nthreads = bx;
    E.failed = 0;
    int rc = 0;
    for (unsigned b = 0; b < gx && rc == 0; b++) {
        if ((rc = run_block(b, gx)) != 0) snprintf(err, errlen, "block %u: %s", b, E.msg);
        /* the next block's threads start after this one's: its __shared__ arrays are the
         * same memory here, where a GPU gives each block its own */
        if (__tsan_acquire) __tsan_acquire(&E.tsan_done);
    }
    E.kernel = NULL;
    return rc;
}
