/* runtime/cpu/threadpool.c: the persistent thread pool of the CPU backend (see threadpool.h).
 *
 * A run publishes its job (function, context, size, parts: atomics, read by workers that may
 * be late), opens one claim slot per part for its generation, and bumps the generation.
 * Part i belongs to thread i, which claims it by moving its slot from open to taken for that
 * generation; the caller, once its own part is done, claims and runs every part still open,
 * so a worker the scheduler has not run yet (the other core busy with another process) costs
 * nothing but its share of the work, not a scheduler's time slice, which is what waiting for
 * it cost a small kernel (bench/RESULTS.md, "The measurements behind the code's constants"). The
 * caller returns when every part has run; a worker that wakes after that finds its slot taken or
 * reopened for a later generation, and leaves the job alone (the job's fields may then be the next
 * run's, which is why nothing is read from them but after a successful claim). Idle workers spin
 * for a while, then sleep on a condition variable, woken under the mutex so that no wake-up is
 * lost.
 */
#include "runtime/cpu/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
    pthread_once_t once;
    int size;                 /* threads, the caller included */
    int started;              /* worker threads actually running */
    pthread_mutex_t run_lock; /* one run at a time */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_uint_fast64_t gen;
    /* the current job */
    _Atomic(rt_pool_fn) fn;
    _Atomic(void *) ctx;
    _Atomic int64_t n;
    atomic_int parts;
    atomic_int finished; /* parts run */
    /* by part: 2 * generation, + 1 once taken */
    atomic_uint_fast64_t slot[RT_POOL_MAX_THREADS];
} pool = {.once = PTHREAD_ONCE_INIT,
          .run_lock = PTHREAD_MUTEX_INITIALIZER,
          .mu = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

void rt_pool_part(int64_t n, int parts, int i, int64_t *begin, int64_t *end) {
    int64_t q = n / parts, r = n % parts;
    /* the first r parts get one more */
    *begin = (int64_t)i * q + (i < r ? i : r);
    *end = *begin + q + (i < r ? 1 : 0);
}

/* Claims part i of generation g and runs it on thread `worker`; 0 when it was not open. */
static int run_claimed(uint_fast64_t g, int i, int worker) {
    uint_fast64_t open = 2 * g;
    if (!atomic_compare_exchange_strong_explicit(&pool.slot[i], &open, 2 * g + 1,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return 0;
    /* the job is g's until its last part has run, which cannot be before this one */
    int parts = atomic_load_explicit(&pool.parts, memory_order_relaxed);
    int64_t b, e;
    rt_pool_part(atomic_load_explicit(&pool.n, memory_order_relaxed), parts, i, &b, &e);
    if (b < e)
        atomic_load_explicit(&pool.fn, memory_order_relaxed)(
            atomic_load_explicit(&pool.ctx, memory_order_relaxed), b, e, worker);
    if (atomic_fetch_add_explicit(&pool.finished, 1, memory_order_acq_rel) + 1 == parts) {
        pthread_mutex_lock(&pool.mu);
        pthread_cond_broadcast(&pool.done);
        pthread_mutex_unlock(&pool.mu);
    }
    return 1;
}

static void *worker_main(void *arg) {
    int id = (int)(intptr_t)arg;
    /* signals go to the application's own threads */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    uint_fast64_t seen = 0;
    for (;;) {
        uint_fast64_t g = atomic_load_explicit(&pool.gen, memory_order_acquire);
        if (g == seen) {
            double t0 = now_us();
            for (int spin = 1; g == seen; spin++) {
                cpu_relax();
                g = atomic_load_explicit(&pool.gen, memory_order_acquire);
                if ((spin & 255) == 0 && now_us() - t0 > RT_POOL_SPIN_US) break;
            }
        }
        if (g == seen) {
            pthread_mutex_lock(&pool.mu);
            while ((g = atomic_load_explicit(&pool.gen, memory_order_acquire)) == seen)
                pthread_cond_wait(&pool.wake, &pool.mu);
            pthread_mutex_unlock(&pool.mu);
        }
        seen = g;
        run_claimed(g, id, id); /* a slot past the job's parts is never open for g */
    }
    return NULL;
}

/* FUSEC_NUM_THREADS: decimal digits only, 1 to RT_POOL_MAX_THREADS; 0 for anything else
 * (unset, empty, signs, spaces, trailing letters, out of range). A library must not exit
 * over its environment, so a bad value falls back to the default; `fusec` refuses it. */
static int threads_from_env(void) {
    const char *v = getenv("FUSEC_NUM_THREADS");
    if (!v) return 0;
    int n = 0;
    const char *p = v;
    for (; *p >= '0' && *p <= '9' && n <= RT_POOL_MAX_THREADS; p++)
        n = n * 10 + (*p - '0');
    return p != v && *p == 0 && n >= 1 && n <= RT_POOL_MAX_THREADS ? n : 0;
}

static int threads_wanted(void) {
    int env = threads_from_env();
    if (env) return env;
    cpu_set_t set;
    CPU_ZERO(&set);
    int n = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n < 1) n = 1;
    return n > RT_POOL_MAX_THREADS ? RT_POOL_MAX_THREADS : n;
}

static void pool_init(void) {
    int want = threads_wanted();
    atomic_init(&pool.gen, 0);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started = 0;
    for (int i = 1; i < want; i++) {
        pthread_t t;
        /* a thread that cannot be created only makes the pool smaller */
        if (pthread_create(&t, &attr, worker_main, (void *)(intptr_t)i) != 0) break;
        started++;
    }
    pthread_attr_destroy(&attr);
    pool.started = started;
    pool.size = started + 1;
}

int rt_pool_size(void) {
    pthread_once(&pool.once, pool_init);
    return pool.size;
}

void rt_pool_run(int64_t n, int max_parts, rt_pool_fn fn, void *ctx) {
    if (n <= 0) return;
    /* work for one thread never creates the pool (a short-lived process that only runs
     * small kernels starts no threads) */
    if (n == 1 || max_parts == 1) {
        fn(ctx, 0, n, 0);
        return;
    }
    int parts = rt_pool_size();
    if (max_parts > 0 && max_parts < parts) parts = max_parts;
    if ((int64_t)parts > n) parts = (int)n;
    if (parts <= 1) {
        fn(ctx, 0, n, 0);
        return;
    }
    pthread_mutex_lock(&pool.run_lock);
    uint_fast64_t g = atomic_load_explicit(&pool.gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&pool.fn, fn, memory_order_relaxed);
    atomic_store_explicit(&pool.ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&pool.n, n, memory_order_relaxed);
    atomic_store_explicit(&pool.parts, parts, memory_order_relaxed);
    atomic_store_explicit(&pool.finished, 0, memory_order_relaxed);
    for (int i = 0; i < parts; i++)
        atomic_store_explicit(&pool.slot[i], 2 * g, memory_order_relaxed);
    pthread_mutex_lock(&pool.mu);
    atomic_store_explicit(&pool.gen, g, memory_order_release);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);

    /* part 0, then whatever part no worker has taken yet */
    for (int i = 0; i < parts; i++)
        run_claimed(g, i, 0);

    double t0 = now_us();
    for (int spin = 1; atomic_load_explicit(&pool.finished, memory_order_acquire) != parts;
         spin++) {
        cpu_relax();
        if ((spin & 255) == 0 && now_us() - t0 > RT_POOL_SPIN_US) break;
    }
    pthread_mutex_lock(&pool.mu);
    while (atomic_load_explicit(&pool.finished, memory_order_acquire) != parts)
        pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.run_lock);
}
