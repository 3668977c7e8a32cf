/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Blocks that look alike to the stack cache: from_left and from_right are
 * the same code at the same depth, and call the same sleep, so a thread
 * blocking from either has the same user registers and syscall at its
 * switch-out (its fingerprint), with other stacks. Only the cache's checks
 * (walks of a sample of hits) can tell them apart.
 *
 *   alike_callers [--wait-stdin] [--blocks N] [--callers 1|2] [--rename-at K]
 *
 * Sleeps 1 ms N times, from from_left and from_right in turn (--callers 2,
 * the default) or from from_left only. With --rename-at, after K sleeps it
 * names itself "alike-renamed": the same place, another identity. At exit
 * one JSON line on stdout gives the pid and the sleeps made from each.
 */
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "workload_start.h"

/* noipa: never folded into one function, nor called as anything but itself */
#define APART __attribute__((noinline, noipa))

APART static void sleep_1ms(void)
{
    struct timespec ts = {0, 1000 * 1000};

    nanosleep(&ts, NULL);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
}

APART static void from_left(void)
{
    sleep_1ms();
    __asm__ volatile("" ::: "memory");
}

APART static void from_right(void)
{
    sleep_1ms();
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    int blocks = 400, callers = 2, rename_at = -1, left = 0, right = 0, r;
    const struct int_option opts[] = {
        {"blocks", &blocks}, {"callers", &callers}, {"rename-at", &rename_at}};

    r = workload_start(argc, argv, opts, N_OPTIONS(opts));
    if (r)
        return r;
    for (int i = 0; i < blocks; i++) {
        if (i == rename_at)
            prctl(PR_SET_NAME, "alike-renamed");
        if (callers == 2 && i % 2) {
            from_right();
            right++;
        } else {
            from_left();
            left++;
        }
    }
    printf("{\"pid\": %d, \"left\": %d, \"right\": %d}\n", (int)getpid(), left, right);
    return 0;
}
