/* runtime/threadpool.c: the persistent thread pool of the CPU backend (see threadpool.h).
 *
 * A run publishes its job and bumps a generation counter; every worker that sees the new
 * generation runs its part (if it has one) and counts down `pending`; the last one wakes
 * the caller, which only then may publish the next job. The
 * generation and the count are atomics so that a worker that is still spinning after the
 * previous run picks the job up without taking the lock; sleeping workers are woken through
 * the condition variable, under the mutex, so no wake-up is lost.
 */
#include "runtime/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct pool_job {
    rt_pool_fn fn;
    void *ctx;
    int64_t n;
    int parts;
} pool_job;

static struct {
    pthread_once_t once;
    int size;                 /* threads, the caller included */
    int started;              /* worker threads actually running */
    pthread_mutex_t run_lock; /* one run at a time */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_uint_fast64_t gen;
    atomic_int pending;
    pool_job job;
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
        pool_job job = pool.job; /* published before the generation moved (release) */
        if (id < job.parts) {
            int64_t b, e;
            rt_pool_part(job.n, job.parts, id, &b, &e);
            if (b < e) job.fn(job.ctx, b, e, id);
        }
        /* every worker reports, part or not: the next run may then reuse pool.job */
        if (atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool.mu);
            pthread_cond_broadcast(&pool.done);
            pthread_mutex_unlock(&pool.mu);
        }
    }
    return NULL;
}

static int threads_wanted(void) {
    const char *env = getenv("FUSEC_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == 0 && v > 0) return v > RT_POOL_MAX_THREADS ? RT_POOL_MAX_THREADS : (int)v;
    }
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
    atomic_init(&pool.pending, 0);
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
    pool.job.fn = fn;
    pool.job.ctx = ctx;
    pool.job.n = n;
    pool.job.parts = parts;
    atomic_store_explicit(&pool.pending, pool.started, memory_order_relaxed);
    pthread_mutex_lock(&pool.mu);
    atomic_fetch_add_explicit(&pool.gen, 1, memory_order_release);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);

    int64_t b, e;
    rt_pool_part(n, parts, 0, &b, &e);
    if (b < e) fn(ctx, b, e, 0);

    double t0 = now_us();
    for (int spin = 1; atomic_load_explicit(&pool.pending, memory_order_acquire) != 0; spin++) {
        cpu_relax();
        if ((spin & 255) == 0 && now_us() - t0 > RT_POOL_SPIN_US) break;
    }
    pthread_mutex_lock(&pool.mu);
    while (atomic_load_explicit(&pool.pending, memory_order_acquire) != 0)
        pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.run_lock);
}
