/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Blocks in poll(2) 20 ms at a time, from a function of its own, until its
 * stdin closes: off-CPU time that keeps coming, with a frame of this file
 * under it. Tests copy it and give the copy a symbol table of their own
 * (see tests/integration/many_symbols.py).
 */
#include <poll.h>
#include <stdio.h>

__attribute__((noinline)) static int wait_for_eof(void)
{
    struct pollfd p = {.fd = 0, .events = POLLIN};

    for (;;) {
        int r = poll(&p, 1, 20);

        if (r != 0)
            return r < 0 ? 1 : 0;
    }
}

int main(void)
{
    printf("ready\n");
    fflush(stdout);
    return wait_for_eof();
}
