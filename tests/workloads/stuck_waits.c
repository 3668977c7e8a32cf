/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stays blocked for seconds at two known places at once, for offcpuctl
 * stuck: a thread sleeps (state S) in one nanosleep, and the main thread
 * waits uninterruptibly (state D) as a vfork parent until its child, which
 * sleeps as long, exits.
 *
 *   stuck_waits [--wait-stdin] [--seconds N]     (default 3)
 *
 * Each first blocks briefly a few times at the same place: the daemon learns
 * how to unwind it there, so that the long block's stack is walked whole.
 * Prints "blocking PID SLEEPER_TID" just before both block for long; exits
 * when both are done.
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
/* brief blocks first, of 50 ms each */
#define WARMUPS   10
#define WARMUP_NS (50 * 1000 * 1000)
static sem_t started;
static pid_t sleeper_tid;

NOINLINE static void sleep_in_s(int brief)
{
    struct timespec ts = {brief ? 0 : seconds, brief ? WARMUP_NS : 0};

    nanosleep(&ts, NULL);
    __asm__ volatile("" ::: "memory");
}

static void *sleeper_main(void *arg)
{
    sleeper_tid = (pid_t)syscall(SYS_gettid);
    for (int i = 0; i < WARMUPS; i++)
        sleep_in_s(1);
    sem_post(&started);
    sleep_in_s(0);
    return NULL;
}

NOINLINE static void wait_in_d_for_vfork_child(int brief)
{
    pid_t child = vfork();

    if (child == 0) {
        /* only raw system calls in a vfork child: it runs on our stack */
        struct timespec ts = {brief ? 0 : seconds, brief ? WARMUP_NS : 0};

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
    for (int i = 0; i < WARMUPS; i++)
        wait_in_d_for_vfork_child(1);
    sem_wait(&started);
    printf("blocking %d %d\n", (int)getpid(), (int)sleeper_tid);
    fflush(stdout);
    wait_in_d_for_vfork_child(0);
    pthread_join(sleeper, NULL);
    return 0;
}
