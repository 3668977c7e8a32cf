/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A library whose threads block at once, as a plugin's or a JVM's do after
 * a dlopen: loaded by dlopen_threads from a copy no process has mapped
 * before, so that its threads block before the daemon has its rows.
 */
#include <pthread.h>
#include <time.h>

#include "blocked_time.h"

#define NOINLINE __attribute__((noinline, visibility("default")))

struct sleeper {
    pthread_t thread;
    long seconds;
    struct blocked_time t;
};

NOINLINE void library_block_for(struct blocked_time *t, long seconds)
{
    struct timespec ts = {seconds, 0};
    struct blocked_mark m = blocked_begin();

    while (nanosleep(&ts, &ts) != 0)
        ;
    blocked_end(t, m);
    __asm__ volatile("" ::: "memory");
}

NOINLINE void *library_thread_main(void *arg)
{
    struct sleeper *s = arg;

    library_block_for(&s->t, s->seconds);
    return NULL;
}

/* n threads (at most 8), each asleep for seconds from its start; their
 * blocked time summed into *t. Returns 0, or -1 if a thread could not start. */
NOINLINE int library_start_and_join(int n, long seconds, struct blocked_time *t)
{
    struct sleeper s[8] = {0};
    int started = 0, r = 0;

    for (; started < n && started < 8; started++) {
        s[started].seconds = seconds;
        if (pthread_create(&s[started].thread, NULL, library_thread_main, &s[started]) != 0) {
            r = -1;
            break;
        }
    }
    for (int i = 0; i < started; i++) {
        pthread_join(s[i].thread, NULL);
        t->wall_ns += s[i].t.wall_ns;
        t->offcpu_ns += s[i].t.offcpu_ns;
        t->calls += s[i].t.calls;
    }
    return r;
}
