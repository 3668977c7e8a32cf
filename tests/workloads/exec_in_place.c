/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Blocks 20 x 10 ms in a function named for it, then execs another program
 * in place (same pid): frames from before the exec must be named from this
 * image, those after from the new one.
 *
 *   exec_in_place PROGRAM [ARGS...]
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

NOINLINE static void sleep_10ms(void)
{
    struct timespec ts = {0, 10 * 1000 * 1000};

    nanosleep(&ts, NULL);
}

NOINLINE void block_before_exec_20x10ms(void)
{
    for (int i = 0; i < 20; i++)
        sleep_10ms();
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROGRAM [ARGS...]\n", argv[0]);
        return 2;
    }
    block_before_exec_20x10ms();
    execv(argv[1], argv + 1);
    perror(argv[1]);
    return 1;
}
