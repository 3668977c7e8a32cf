/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A workload's own measure of its blocked time. Wall time around a blocking
 * call also holds the call's own CPU time (syscall entry, timer setup, the
 * return), so the thread's CPU clock is read too: wall minus CPU is the time
 * the scheduler had the thread off-CPU, which is what offcpud measures.
 */
#ifndef BLOCKED_TIME_H
#define BLOCKED_TIME_H

#include <time.h>

struct blocked_time {
    long long wall_ns;   /* wall time inside the blocking calls */
    long long offcpu_ns; /* of which off-CPU */
    int calls;
};

struct blocked_mark {
    long long wall, cpu;
};

static inline long long clock_read_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline struct blocked_mark blocked_begin(void)
{
    return (struct blocked_mark){clock_read_ns(CLOCK_MONOTONIC),
                                 clock_read_ns(CLOCK_THREAD_CPUTIME_ID)};
}

static inline void blocked_end(struct blocked_time *t, struct blocked_mark m)
{
    long long cpu = clock_read_ns(CLOCK_THREAD_CPUTIME_ID) - m.cpu;
    long long wall = clock_read_ns(CLOCK_MONOTONIC) - m.wall;

    t->wall_ns += wall;
    t->offcpu_ns += wall - cpu;
    t->calls++;
}

#endif
