/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Waits of known lengths, for --min-wait: one thread sleeps 100 ms at a
 * time (wait_100ms), one 1.5 s at a time (wait_1500ms), and one alternates
 * both from one place (wait_mixed), so that one stack holds periods on both
 * sides of 1 s.
 *
 *   known_periods [--wait-stdin] [--long N]
 *
 * Each thread runs about N * 1.5 s. At exit one JSON line on stdout gives
 * the pid, each thread's tid, the number of long (1.5 s) and short
 * (100 ms) sleeps each made, and the long ones' time as measured.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "workload_start.h"

#define NOINLINE __attribute__((noinline))
#define SHORT_NS (100 * 1000 * 1000LL)
#define LONG_NS  (1500 * 1000 * 1000LL)
#define NS_PER_S 1000000000LL

struct sleeper {
    pthread_t id;
    int tid;
    int longs, shorts;
    long long long_ns; /* the long sleeps as measured: a loaded host oversleeps */
};

static int long_sleeps = 3;

static long long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* Returns how long it slept. */
static long long sleep_ns(long long ns)
{
    struct timespec ts = {ns / NS_PER_S, ns % NS_PER_S};
    long long start = now_ns();

    while (nanosleep(&ts, &ts) != 0)
        ;
    return now_ns() - start;
}

NOINLINE static void wait_100ms(void)
{
    sleep_ns(SHORT_NS);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
}

NOINLINE static long long wait_1500ms(void)
{
    long long slept = sleep_ns(LONG_NS);

    __asm__ volatile("" ::: "memory");
    return slept;
}

NOINLINE static long long wait_mixed(long long ns)
{
    long long slept = sleep_ns(ns);

    __asm__ volatile("" ::: "memory");
    return slept;
}

static void *short_main(void *arg)
{
    struct sleeper *s = arg;

    s->tid = (int)syscall(SYS_gettid);
    for (; s->shorts < long_sleeps * 15; s->shorts++)
        wait_100ms();
    return NULL;
}

static void *long_main(void *arg)
{
    struct sleeper *s = arg;

    s->tid = (int)syscall(SYS_gettid);
    for (; s->longs < long_sleeps; s->longs++)
        s->long_ns += wait_1500ms();
    return NULL;
}

/* 1.5 s then 100 ms: the run as long as the others' (near enough) */
static void *mixed_main(void *arg)
{
    struct sleeper *s = arg;

    s->tid = (int)syscall(SYS_gettid);
    for (; s->longs < long_sleeps; s->longs++) {
        s->long_ns += wait_mixed(LONG_NS);
        if (s->longs + 1 < long_sleeps) {
            wait_mixed(SHORT_NS);
            s->shorts++;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const struct int_option opts[] = {{"long", &long_sleeps}};
    struct sleeper s[3] = {{0}};
    void *(*mains[3])(void *) = {short_main, long_main, mixed_main};
    int r;

    r = workload_start(argc, argv, opts, N_OPTIONS(opts));
    if (r)
        return r;
    for (int i = 0; i < 3; i++)
        if (pthread_create(&s[i].id, NULL, mains[i], &s[i]) != 0)
            return 1;
    for (int i = 0; i < 3; i++)
        pthread_join(s[i].id, NULL);
    printf("{\"pid\": %d, \"short_tid\": %d, \"shorts\": %d, \"long_tid\": %d, \"longs\": %d, "
           "\"long_ns\": %lld, \"mixed_tid\": %d, \"mixed_longs\": %d, \"mixed_shorts\": %d, "
           "\"mixed_long_ns\": %lld}\n",
           (int)getpid(), s[0].tid, s[0].shorts, s[1].tid, s[1].longs, s[1].long_ns, s[2].tid,
           s[2].longs, s[2].shorts, s[2].long_ns);
    return 0;
}
