/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Blocks uninterruptibly (state D) at one place, again and again: a vfork
 * parent waits in the kernel, killable but not interruptible, until its
 * child exits. The child sleeps 5 ms first.
 *
 *   vfork_waits [--wait-stdin] [--forks N] [--exec-ms MS]
 *
 * --exec-ms: each child then execs Debian's sleep for MS milliseconds, as a
 * posix_spawn child execs its program, and the parent waits for them all
 * at the end (it waits in vfork until the exec only).
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

/* exec: the program the child execs after its sleep (NULL: it exits). */
NOINLINE static pid_t wait_for_vfork_child_5ms(struct blocked_time *t, char *const *exec)
{
    struct blocked_mark m = blocked_begin();
    pid_t child = vfork();

    if (child == 0) {
        /* only raw system calls in a vfork child: it runs on our stack */
        struct timespec ts = {0, 5 * 1000 * 1000};

        syscall(SYS_nanosleep, &ts, NULL);
        if (exec)
            syscall(SYS_execve, exec[0], exec, environ);
        _exit(0);
    }
    blocked_end(t, m);
    if (child < 0 || (!exec && waitpid(child, NULL, 0) != child)) {
        perror("vfork");
        exit(1);
    }
    return child;
}

NOINLINE static void vfork_in_a_loop(struct blocked_time *t, int forks, char *const *exec)
{
    int status;

    for (int i = 0; i < forks; i++)
        wait_for_vfork_child_5ms(t, exec);
    while (exec && wait(&status) > 0)
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "vfork_waits: a child did not exec %s\n", exec[0]);
            exit(1);
        }
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    struct blocked_time t = {0};
    int forks = 50, exec_ms = 0;
    const struct int_option opts[] = {{"forks", &forks}, {"exec-ms", &exec_ms}};
    int status = workload_start(argc, argv, opts, N_OPTIONS(opts));
    char seconds[32], *exec[] = {"/usr/bin/sleep", seconds, NULL};

    if (status)
        return status;
    snprintf(seconds, sizeof(seconds), "%d.%03d", exec_ms / 1000, exec_ms % 1000);
    vfork_in_a_loop(&t, forks, exec_ms > 0 ? exec : NULL);
    printf("{\"pid\":%d,\"vforks\":%d,\"vfork_ns\":%lld,\"vfork_offcpu_ns\":%lld}\n", (int)getpid(),
           t.calls, t.wall_ns, t.offcpu_ns);
    return 0;
}
