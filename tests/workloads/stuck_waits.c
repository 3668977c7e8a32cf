/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stays blocked for seconds at two known places at once, for offcpuctl
 * stuck: a thread sleeps (state S) in one nanosleep, and the main thread
 * waits uninterruptibly (state D) as a vfork parent until its child, which
 * sleeps as long, exits.
 *
 *   stuck_waits [--wait-stdin] [--seconds N]     (default 3)
 *
 * Prints "blocking PID SLEEPER_TID" just before both block; exits when both
 * are done.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload_start.h"

#define NOINLINE __attribute__((noinline))

static int seconds = 3;
static sem_t started;
static pid_t sleeper_tid;

NOINLINE static void sleep_in_s_for_seconds(void)
{
    struct timespec ts = {seconds, 0};

    nanosleep(&ts, NULL);
    __asm__ volatile("" ::: "memory");
}

static void *sleeper_main(void *arg)
{
    sleeper_tid = (pid_t)syscall(SYS_gettid);
    sem_post(&started);
    sleep_in_s_for_seconds();
    return NULL;
}

NOINLINE static void wait_in_d_for_vfork_child(void)
{
    pid_t child = vfork();

    if (child == 0) {
        /* only raw system calls in a vfork child: it runs on our stack */
        struct timespec ts = {seconds, 0};

        syscall(SYS_nanosleep, &ts, NULL);
        _exit(0);
    }
    if (child < 0 || waitpid(child, NULL, 0) != child) {
        perror("vfork");
        exit(1);
    }
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    const struct int_option opts[] = {{"seconds", &seconds}};
    int status = workload_start(argc, argv, opts, N_OPTIONS(opts));
    pthread_t sleeper;

    if (status)
        return status;
    sem_init(&started, 0, 0);
    if (pthread_create(&sleeper, NULL, sleeper_main, NULL) != 0)
        return 1;
    sem_wait(&started);
    printf("blocking %d %d\n", (int)getpid(), (int)sleeper_tid);
    fflush(stdout);
    wait_in_d_for_vfork_child();
    pthread_join(sleeper, NULL);
    return 0;
}
