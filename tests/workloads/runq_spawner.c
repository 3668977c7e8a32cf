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
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "blocked_time.h"
#include "workload_start.h"

#define NOINLINE     __attribute__((noinline))
#define SPINNERS_MAX 16
#define THREADS_MAX  1000

static int threads = 30, spinners = 3, nice_spawner = 10;
static atomic_int done;
static int cpu;

struct child {
    long long created, started; /* CLOCK_MONOTONIC */
    pid_t tid;
};

static struct child children[THREADS_MAX];

static void pin_to_cpu(void)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static int chosen_cpu(void)
{
    cpu_set_t set;
    int last = 0;

    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &set))
                last = i;
    return last;
}

NOINLINE static void *spinner_main(void *arg)
{
    pin_to_cpu();
    while (!atomic_load_explicit(&done, memory_order_relaxed))
        ;
    return NULL;
}

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
    pthread_t spinner[SPINNERS_MAX];
    struct timespec warm = {0, 20 * 1000 * 1000};

    if (status)
        return status;
    if (spinners < 0 || spinners > SPINNERS_MAX || threads < 1 || threads > THREADS_MAX) {
        fprintf(stderr, "--spinners: 0 to %d, --threads: 1 to %d\n", SPINNERS_MAX, THREADS_MAX);
        return 2;
    }
    cpu = chosen_cpu();
    for (int i = 0; i < spinners; i++)
        pthread_create(&spinner[i], NULL, spinner_main, NULL);
    nanosleep(&warm, NULL); /* the spinners are on their CPU */
    pin_to_cpu();           /* inherited by every thread made from here on */
    nice_spawner += getpriority(PRIO_PROCESS, 0);
    setpriority(PRIO_PROCESS, syscall(SYS_gettid), nice_spawner < 19 ? nice_spawner : 19);
    spawn_on_busy_cpu();
    atomic_store(&done, 1);
    for (int i = 0; i < spinners; i++)
        pthread_join(spinner[i], NULL);
    printf("{\"pid\":%d,\"cpu\":%d,\"children\":[", (int)getpid(), cpu);
    for (int i = 0; i < threads; i++)
        printf("%s{\"tid\":%d,\"wait_ns\":%lld}", i ? "," : "", (int)children[i].tid,
               children[i].started - children[i].created);
    printf("]}\n");
    return 0;
}
