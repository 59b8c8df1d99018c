/* tests/unit/test_threadpool.c: FUSEC_NUM_THREADS as the thread pool reads it: decimal digits
 * from 1 to RT_POOL_MAX_THREADS set the pool's size; any other value is ignored (the default
 * size, never an exit or an abort, as a library must not fail over its environment). The pool
 * is made once a process, so each value is tried in a child process of its own. */
#include "runtime/cpu/threadpool.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* rt_pool_size() in a child whose FUSEC_NUM_THREADS is value (NULL: unset); -1 when the child
 * did not report one (it crashed or exited). */
static int pool_size_with(const char *value) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        if (value)
            setenv("FUSEC_NUM_THREADS", value, 1);
        else
            unsetenv("FUSEC_NUM_THREADS");
        int n = rt_pool_size();
        _exit(write(fds[1], &n, sizeof n) == (ssize_t)sizeof n ? 0 : 1);
    }
    close(fds[1]);
    int n = -1;
    if (pid < 0 || read(fds[0], &n, sizeof n) != (ssize_t)sizeof n) n = -1;
    close(fds[0]);
    int status;
    if (pid > 0) waitpid(pid, &status, 0);
    return n;
}

int main(void) {
    int dflt = pool_size_with(NULL);
    CHECK(dflt >= 1 && dflt <= RT_POOL_MAX_THREADS);
    CHECK(pool_size_with("3") == 3);
    CHECK(pool_size_with("007") == 7);
    CHECK(pool_size_with("1") == 1);
    CHECK(pool_size_with("256") == RT_POOL_MAX_THREADS);
    /* the values of a typo or a misunderstanding: the default, not a clamp or a guess */
    const char *bad[] = {"",
                         "abc",
                         "0",
                         "-3",
                         "99999999999",
                         "4x",
                         "+5",
                         " 5",
                         "5 ",
                         "257",
                         "99999999999999999999999",
                         "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int n = pool_size_with(bad[i]);
        CHECK_MSG(n == dflt, "FUSEC_NUM_THREADS='%s': %d threads, want the default %d", bad[i], n,
                  dflt);
    }
    return check_exit("test_threadpool");
}
