/* runtime/cpu/threadpool.h: the CPU backend's persistent thread pool.
 *
 * One pool per process, created on first use: as many threads as the process may run on
 * (sched_getaffinity), or FUSEC_NUM_THREADS when it holds a count from 1 to
 * RT_POOL_MAX_THREADS (any other value is ignored), the calling thread counting as one.
 * Work is a range [0, n) cut into contiguous, nearly equal parts, one per thread; the caller
 * runs part 0, then every part whose thread has not started it yet (a thread the scheduler
 * has not run costs no waiting), and returns when every part is done. Idle threads sleep on a
 * condition variable (after spinning at most RT_POOL_SPIN_US, so that back-to-back kernels do
 * not pay a wake-up each). Thread safety: any thread may call rt_pool_run; runs from several
 * threads take turns. A process that forks keeps no pool in the child (do not run kernels there).
 */
#ifndef FUSEC_RUNTIME_THREADPOOL_H
#define FUSEC_RUNTIME_THREADPOOL_H

#include <stdint.h>

#define RT_POOL_MAX_THREADS 256
#define RT_POOL_SPIN_US     100

/* Runs part [begin, end) of the work on thread `worker` (0 .. rt_pool_size()-1; 0 is the
 * caller, which may run other threads' parts too). A thread runs one part at a time. */
typedef void (*rt_pool_fn)(void *ctx, int64_t begin, int64_t end, int worker);

/* The number of threads the pool runs work on (the caller included); creates the pool. */
int rt_pool_size(void);

/* Runs fn over [0, n) in min(n, max_parts, rt_pool_size()) contiguous parts (max_parts <= 0:
 * no limit of its own) and returns when all are done. n <= 0 runs nothing. */
void rt_pool_run(int64_t n, int max_parts, rt_pool_fn fn, void *ctx);

/* The part of [0, n) that worker i of `parts` runs. */
void rt_pool_part(int64_t n, int parts, int i, int64_t *begin, int64_t *end);

#endif
