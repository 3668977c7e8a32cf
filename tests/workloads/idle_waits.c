/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Idle waits beside real ones, for --no-idle. For --seconds N:
 *  - "event_loop" waits in epoll_wait (100 ms timeout) on an eventfd no one
 *    writes: an event loop with no work;
 *  - "timer_loop" sleeps 50 ms at a time: a timer loop;
 *  - "pool_worker" waits on a condition variable (100 ms timeout) for a
 *    queue that stays empty: a worker pool with nothing queued;
 *  - "checkpoint" takes a mutex, writes and fsyncs --mb MB (idle_waits.data
 *    in the current directory: a real disk) and lets go, again and again;
 *  - "request" takes the same mutex and lets go at once, again and again:
 *    it waits on the lock while the checkpoint fsyncs.
 *
 *   idle_waits [--wait-stdin] [--seconds N] [--mb N]
 *
 * At exit one JSON line: pid and each thread's tid by its name.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload_start.h"
#include "write_and_fsync.h"

#define NOINLINE  __attribute__((noinline))
#define NS_PER_MS 1000000LL
#define NS_PER_S  1000000000LL

enum { EVENT_LOOP, TIMER_LOOP, POOL_WORKER, CHECKPOINT, REQUEST, THREADS };

static const char *const names[THREADS] = {"event_loop", "timer_loop", "pool_worker", "checkpoint",
                                           "request"};
static int seconds = 3, mb = 8;
static long long end_ns;
static pid_t tids[THREADS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_ready = PTHREAD_COND_INITIALIZER;

static long long now_ns(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static int running(void)
{
    return now_ns(CLOCK_MONOTONIC) < end_ns;
}

NOINLINE static void event_loop(void)
{
    int ep = epoll_create1(0), ev = eventfd(0, 0);
    struct epoll_event e = {.events = EPOLLIN}, out;

    epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e);
    while (running())
        epoll_wait(ep, &out, 1, 100);
    close(ev);
    close(ep);
}

NOINLINE static void timer_loop(void)
{
    struct timespec ts = {0, 50 * NS_PER_MS};

    while (running())
        nanosleep(&ts, NULL);
}

NOINLINE static void pool_worker(void)
{
    pthread_mutex_lock(&queue_lock);
    while (running()) {
        long long at = now_ns(CLOCK_REALTIME) + 100 * NS_PER_MS;
        struct timespec ts = {at / NS_PER_S, at % NS_PER_S};

        pthread_cond_timedwait(&queue_ready, &queue_lock, &ts);
    }
    pthread_mutex_unlock(&queue_lock);
}

NOINLINE static void checkpoint(void)
{
    while (running()) {
        pthread_mutex_lock(&lock);
        write_and_fsync("idle_waits.data", mb);
        pthread_mutex_unlock(&lock);
        sched_yield(); /* the request takes its turn */
    }
    unlink("idle_waits.data");
}

NOINLINE static void request(void)
{
    while (running()) {
        pthread_mutex_lock(&lock);
        pthread_mutex_unlock(&lock);
        sched_yield();
    }
}

static void *thread_main(void *arg)
{
    static void (*const mains[THREADS])(void) = {event_loop, timer_loop, pool_worker, checkpoint,
                                                 request};
    long i = (long)arg;

    tids[i] = (pid_t)syscall(SYS_gettid);
    pthread_setname_np(pthread_self(), names[i]);
    mains[i]();
    return NULL;
}

int main(int argc, char **argv)
{
    const struct int_option opts[] = {{"seconds", &seconds}, {"mb", &mb}};
    pthread_t threads[THREADS];
    int r = workload_start(argc, argv, opts, N_OPTIONS(opts));

    if (r)
        return r;
    end_ns = now_ns(CLOCK_MONOTONIC) + seconds * NS_PER_S;
    for (long i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, thread_main, (void *)i);
    printf("{\"pid\": %d", getpid());
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        printf(", \"%s\": %d", names[i], tids[i]);
    }
    printf("}\n");
    return 0;
}
