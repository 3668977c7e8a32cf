/* SPDX-License-Identifier: GPL-2.0-only */
/* Clocks in nanoseconds: CLOCK_MONOTONIC for intervals and deadlines,
 * CLOCK_REALTIME for the times snapshots and queries are stated in. */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_ns(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
