/* SPDX-License-Identifier: GPL-2.0-only */
/* Lives about 200 ms, blocked in a function with a telling name, then exits:
 * its stacks must still be named when asked for after it is gone. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "blocked_time.h"

#define NOINLINE __attribute__((noinline))

NOINLINE static void sleep_once_10ms(struct blocked_time *t)
{
    struct timespec ts = {0, 10 * 1000 * 1000};
    struct blocked_mark m = blocked_begin();

    nanosleep(&ts, NULL);
    blocked_end(t, m);
}

NOINLINE void short_lived_sleep_20x10ms(struct blocked_time *t)
{
    for (int i = 0; i < 20; i++)
        sleep_once_10ms(t);
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    struct blocked_time t = {0};

    short_lived_sleep_20x10ms(&t);
    printf(
        "{\"pid\":%d,\"nanosleep_calls\":%d,\"nanosleep_ns\":%lld,\"nanosleep_offcpu_ns\":%lld}\n",
        (int)getpid(), t.calls, t.wall_ns, t.offcpu_ns);
    return 0;
}
