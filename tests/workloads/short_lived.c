/* SPDX-License-Identifier: GPL-2.0-only */
/* Lives about 200 ms, blocked in a function with a telling name, then exits:
 * its stacks must still be named when asked for after it is gone. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static long long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

NOINLINE static long long sleep_once_10ms(void)
{
    struct timespec ts = {0, 10 * 1000 * 1000};
    long long t0 = now_ns();

    nanosleep(&ts, NULL);
    return now_ns() - t0;
}

NOINLINE long long short_lived_sleep_20x10ms(void)
{
    long long total = 0;

    for (int i = 0; i < 20; i++)
        total += sleep_once_10ms();
    __asm__ volatile("" ::: "memory");
    return total;
}

int main(void)
{
    long long ns = short_lived_sleep_20x10ms();

    printf("{\"pid\":%d,\"nanosleep_ns\":%lld}\n", (int)getpid(), ns);
    return 0;
}
