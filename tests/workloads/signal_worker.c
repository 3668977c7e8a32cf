/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Work done from a signal handler, as postgres' postmaster starts its
 * background processes: main waits in server_loop (select), a timer's
 * SIGALRM runs on_alarm, which forks a worker that sleeps (the child's
 * stack runs through the handler and libc's __restore_rt into server_loop)
 * and then sleeps in the handler itself (20 x 10 ms each: a call that never
 * switches out, which a VM's steal time makes, is 5%). Built as Debian builds, without
 * frame pointers: only call frame information crosses the signal frame.
 *
 * Prints two JSON lines: the worker's ({"pid", "nanosleep_calls",
 * "nanosleep_offcpu_ns"}), then the handler's (the same, for main's pid).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blocked_time.h"

#define NOINLINE __attribute__((noinline))

static volatile sig_atomic_t handled;
static struct blocked_time handler_time;

NOINLINE static void sleep_10ms_times(int n, struct blocked_time *t)
{
    for (int i = 0; i < n; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        struct blocked_mark m = blocked_begin();

        nanosleep(&ts, NULL);
        blocked_end(t, m);
    }
    __asm__ volatile("" ::: "memory");
}

static void print_truth(const struct blocked_time *t)
{
    printf("{\"pid\":%d,\"nanosleep_calls\":%d,\"nanosleep_offcpu_ns\":%lld}\n", (int)getpid(),
           t->calls, t->offcpu_ns);
    fflush(stdout);
}

NOINLINE static void worker_main(void)
{
    struct blocked_time t = {0};

    sleep_10ms_times(20, &t);
    print_truth(&t);
    _exit(0);
}

NOINLINE static void on_alarm(int sig)
{
    (void)sig;
    if (fork() == 0)
        worker_main();
    sleep_10ms_times(20, &handler_time);
    handled = 1;
}

NOINLINE static void server_loop(void)
{
    while (!handled) {
        struct timeval tv = {1, 0};

        select(0, NULL, NULL, NULL, &tv);
    }
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    struct sigaction sa = {.sa_handler = on_alarm};
    struct itimerval in_30ms = {.it_value = {0, 30 * 1000}};
    int status;

    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) < 0 || setitimer(ITIMER_REAL, &in_30ms, NULL) < 0) {
        perror("signal_worker");
        return 1;
    }
    server_loop();
    wait(&status);
    print_truth(&handler_time);
    return 0;
}
