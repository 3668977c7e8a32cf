/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sleeps 20 x 10 ms three calls below main, built as some programs are:
 * without frame pointers and without unwind tables, so that its only call
 * frame information is .debug_frame (what -g writes then), in the file or,
 * for its stripped twin, in a separate debug file. A frame-pointer walk, or
 * one from .eh_frame alone, loses main and everything above the sleep.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* an empty asm after each call: no call becomes a jump, none is inlined */
__attribute__((noinline)) static void debug_frame_sleeps_20x10ms(void)
{
    for (int i = 0; i < 20; i++) {
        struct timespec ts = {.tv_nsec = 10 * 1000 * 1000};

        nanosleep(&ts, NULL);
        __asm__ volatile("");
    }
}

__attribute__((noinline)) static void debug_frame_middle(void)
{
    debug_frame_sleeps_20x10ms();
    __asm__ volatile("");
}

__attribute__((noinline)) static void debug_frame_outer(void)
{
    debug_frame_middle();
    __asm__ volatile("");
}

int main(void)
{
    debug_frame_outer();
    printf("{\"pid\":%d}\n", (int)getpid());
    return 0;
}
