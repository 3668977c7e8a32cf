/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Blocks uninterruptibly (state D) at one place, again and again: a vfork
 * parent waits in the kernel, killable but not interruptible, until its
 * child exits. The child sleeps 5 ms first.
 *
 *   vfork_waits [--wait-stdin] [--forks N]
 *
 * --wait-stdin prints "ready PID" and waits for a line on stdin before
 * blocking, so that a test can move the process into a cgroup first. The
 * last line is the parent's own measure, as JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blocked_time.h"
#include "workload_start.h"

#define NOINLINE __attribute__((noinline))

NOINLINE static void wait_for_vfork_child_5ms(struct blocked_time *t)
{
    struct blocked_mark m = blocked_begin();
    pid_t child = vfork();

    if (child == 0) {
        /* only raw system calls in a vfork child: it runs on our stack */
        struct timespec ts = {0, 5 * 1000 * 1000};

        syscall(SYS_nanosleep, &ts, NULL);
        _exit(0);
    }
    blocked_end(t, m);
    if (child < 0 || waitpid(child, NULL, 0) != child) {
        perror("vfork");
        exit(1);
    }
}

NOINLINE static void vfork_in_a_loop(struct blocked_time *t, int forks)
{
    for (int i = 0; i < forks; i++)
        wait_for_vfork_child_5ms(t);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    struct blocked_time t = {0};
    int forks = 50;
    const struct int_option opts[] = {{"forks", &forks}};
    int status = workload_start(argc, argv, opts, N_OPTIONS(opts));

    if (status)
        return status;
    vfork_in_a_loop(&t, forks);
    printf("{\"pid\":%d,\"vforks\":%d,\"vfork_ns\":%lld,\"vfork_offcpu_ns\":%lld}\n", (int)getpid(),
           t.calls, t.wall_ns, t.offcpu_ns);
    return 0;
}
