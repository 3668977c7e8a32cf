/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Many threads, each sleeping 5 ms at a time in a loop: every drain then
 * holds a record for each thread (tens of thousands of distinct threads).
 *
 *   many_sleepers [--wait-stdin] [--threads N] [--seconds N]
 *
 * Small stacks keep the memory modest (20,000 threads in ~100 MiB). Every
 * thread sleeps until the same deadline; at exit one JSON line on stdout
 * gives the pid, the threads started and their summed off-CPU time inside
 * the sleeps (blocked_time.h), the workload's own measure.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "blocked_time.h"
#include "workload_start.h"

#define NOINLINE   __attribute__((noinline))
#define STACK_SIZE (64 * 1024)

static int threads = 5000, seconds = 5;
static long long deadline_ns;

NOINLINE static void sleep_5ms(struct blocked_time *t)
{
    struct timespec ts = {0, 5 * 1000 * 1000};
    struct blocked_mark m = blocked_begin();

    nanosleep(&ts, NULL);
    blocked_end(t, m);
}

NOINLINE static void *sleeper_main(void *arg)
{
    struct blocked_time *t = arg;

    while (clock_read_ns(CLOCK_MONOTONIC) < deadline_ns)
        sleep_5ms(t);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
    return NULL;
}

int main(int argc, char **argv)
{
    const struct int_option opts[] = {{"threads", &threads}, {"seconds", &seconds}};
    struct blocked_time *times;
    long long offcpu_ns = 0, calls = 0;
    pthread_attr_t attr;
    pthread_t *ids;
    int r, started;

    r = workload_start(argc, argv, opts, N_OPTIONS(opts));
    if (r)
        return r;
    times = calloc(threads, sizeof(*times));
    ids = calloc(threads, sizeof(*ids));
    if (threads < 1 || !times || !ids || pthread_attr_init(&attr) != 0 ||
        pthread_attr_setstacksize(&attr, STACK_SIZE) != 0) {
        fprintf(stderr, "%s: cannot start %d threads\n", argv[0], threads);
        return 1;
    }
    deadline_ns = clock_read_ns(CLOCK_MONOTONIC) + seconds * 1000000000LL;
    for (started = 0; started < threads; started++) {
        r = pthread_create(&ids[started], &attr, sleeper_main, &times[started]);
        if (r != 0) {
            fprintf(stderr, "pthread_create: %s\n", strerror(r));
            break;
        }
    }
    for (int i = 0; i < started; i++) {
        pthread_join(ids[i], NULL);
        offcpu_ns += times[i].offcpu_ns;
        calls += times[i].calls;
    }
    printf("{\"pid\": %d, \"threads\": %d, \"offcpu_ns\": %lld, \"calls\": %lld}\n", (int)getpid(),
           started, offcpu_ns, calls);
    return started == threads ? 0 : 1;
}
