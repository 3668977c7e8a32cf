/* SPDX-License-Identifier: GPL-2.0-only */
#include "unwind_budget.h"

#include <errno.h>
#include <time.h>

#include "clock.h"

/* Reading a clock is a system call for the thread's CPU time: a few hundred
 * entries or rows take microseconds, far below any budget. */
#define CALLS_PER_CLOCK 256

struct unwind_budget unwind_budget_for_file(const atomic_bool *stop, int64_t stop_at)
{
    return (struct unwind_budget){
        .cpu_until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + UNWIND_FILE_CPU_NS,
        .stop_at = stop_at,
        .stop = stop,
    };
}

int unwind_budget_check(struct unwind_budget *b)
{
    if (!b)
        return 0;
    if (b->stop && atomic_load_explicit(b->stop, memory_order_relaxed))
        return -ECANCELED;
    if (++b->calls % CALLS_PER_CLOCK)
        return 0;
    if (b->stop_at && clock_ns(CLOCK_MONOTONIC) >= b->stop_at)
        return -ECANCELED;
    return clock_ns(CLOCK_THREAD_CPUTIME_ID) >= b->cpu_until ? -ETIME : 0;
}
