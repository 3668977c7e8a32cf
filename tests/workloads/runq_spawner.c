/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * New threads on a CPU kept busy: each one's first wait, from its creation
 * to its first run, is run-queue time (fork to first run). Spinner threads
 * pinned to the same CPU keep it busy, and the creator runs 10 (--nice) nicer
 * than they do (at most 19), which its threads inherit, so that each waits
 * for the CPU: relative, for a test run under nice itself.
 *
 *   runq_spawner [--wait-stdin] [--threads N] [--spinners N] [--nice N]
 *
 * Each thread reads the clock first thing: its wait is at most that minus
 * the time just before pthread_create (which also holds clone's own work
 * before the thread is made runnable). At exit one JSON line on stdout gives
 * the threads' tids and waits.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "blocked_time.h"
#include "busy_cpu.h"
#include "workload_start.h"

#define NOINLINE     __attribute__((noinline))
#define THREADS_MAX  1000

static int threads = 30, spinners = 3, nice_spawner = 10;
static struct busy_cpu busy;

struct child {
    long long created, started; /* CLOCK_MONOTONIC */
    pid_t tid;
};

static struct child children[THREADS_MAX];

NOINLINE static void *child_main(void *arg)
{
    struct child *c = arg;

    c->started = clock_read_ns(CLOCK_MONOTONIC);
    c->tid = syscall(SYS_gettid);
    return NULL;
}

/* One at a time: each thread's wait is its own, not a queue of siblings. */
NOINLINE static void spawn_on_busy_cpu(void)
{
    for (int i = 0; i < threads; i++) {
        pthread_t t;

        children[i].created = clock_read_ns(CLOCK_MONOTONIC);
        if (pthread_create(&t, NULL, child_main, &children[i]) != 0) {
            perror("pthread_create");
            _exit(1);
        }
        pthread_join(t, NULL);
    }
}

int main(int argc, char **argv)
{
    const struct int_option opts[] = {
        {"threads", &threads}, {"spinners", &spinners}, {"nice", &nice_spawner}};
    int status = workload_start(argc, argv, opts, N_OPTIONS(opts));

    if (status)
        return status;
    if (threads < 1 || threads > THREADS_MAX || busy_cpu_start(&busy, spinners) < 0) {
        fprintf(stderr, "--spinners: 0 to %d, --threads: 1 to %d\n", BUSY_CPU_SPINNERS_MAX,
                THREADS_MAX);
        return 2;
    }
    busy_cpu_pin(&busy); /* inherited by every thread made from here on */
    nice_spawner += getpriority(PRIO_PROCESS, 0);
    setpriority(PRIO_PROCESS, syscall(SYS_gettid), nice_spawner < 19 ? nice_spawner : 19);
    spawn_on_busy_cpu();
    busy_cpu_stop(&busy);
    printf("{\"pid\":%d,\"cpu\":%d,\"children\":[", (int)getpid(), busy.cpu);
    for (int i = 0; i < threads; i++)
        printf("%s{\"tid\":%d,\"wait_ns\":%lld}", i ? "," : "", (int)children[i].tid,
               children[i].started - children[i].created);
    printf("]}\n");
    return 0;
}
