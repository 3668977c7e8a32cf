/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Blocks at one place, again and again, under a frame pointer that leads
 * out of all code: the walk from there meets a return address in no
 * mapping of the process, as in code built without frame pointers (most of
 * Debian). Each block waits for a timerfd's next 2 ms tick.
 *
 *   stray_frame_pointer [--wait-stdin] [--blocks N]
 *
 * The last line is the process's own measure, as JSON.
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "workload_start.h"

/* in stray_frame_pointer_block.S */
ssize_t stray_frame_pointer_block(int fd, void *buf, size_t len, const uint64_t *frame);

/* what rbp points at: the caller's rbp, then a return address in no code */
static const uint64_t stray_frame[2] = {0, 0x1000};

int main(int argc, char **argv)
{
    int blocks = 500, fd, r;
    struct int_option opts[] = {{"blocks", &blocks}};
    struct itimerspec every_2ms = {.it_interval = {0, 2000000}, .it_value = {0, 2000000}};
    uint64_t ticks;

    r = workload_start(argc, argv, opts, N_OPTIONS(opts));
    if (r)
        return r;
    fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (fd < 0 || timerfd_settime(fd, 0, &every_2ms, NULL) < 0) {
        perror("timerfd");
        return 1;
    }
    for (int i = 0; i < blocks; i++)
        if (stray_frame_pointer_block(fd, &ticks, sizeof(ticks), stray_frame) != sizeof(ticks)) {
            perror("read");
            return 1;
        }
    printf("{\"pid\": %d, \"blocks\": %d}\n", (int)getpid(), blocks);
    return 0;
}
