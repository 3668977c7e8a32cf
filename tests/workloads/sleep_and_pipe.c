/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A workload whose blocking is known. One thread sleeps 100 x 10 ms, another
 * blocks reading a pipe that a third feeds every 20 ms; each times its own
 * blocking calls (wall time, and off-CPU time: see blocked_time.h). At exit
 * one JSON line on stdout gives the truth to compare offcpud's figures with.
 *
 *   sleep_and_pipe [--wait-stdin] [--sleeps N] [--writes N]
 *
 * --wait-stdin prints "ready PID" and waits for a line on stdin before
 * starting, so that a test can first move it into a cgroup.
 *
 * glibc has no frame pointers: a frame-pointer walk loses the direct caller of
 * a libc wrapper (offcpud recovers it from libc's call frame information once
 * it has learnt the place). The names one level up are there either way.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "blocked_time.h"
#include "workload_start.h"

#define NOINLINE __attribute__((noinline))

static int sleeps = 100, writes = 100;
static int pipefd[2];

struct thread_result {
    pid_t tid;
    struct blocked_time t;
};

static struct thread_result sleeper_result, reader_result;

NOINLINE static void nanosleep_once_10ms(struct thread_result *r)
{
    struct timespec ts = {0, 10 * 1000 * 1000};
    struct blocked_mark m = blocked_begin();

    nanosleep(&ts, NULL);
    blocked_end(&r->t, m);
}

NOINLINE void block_in_nanosleep_100x10ms(struct thread_result *r)
{
    for (int i = 0; i < sleeps; i++)
        nanosleep_once_10ms(r);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
}

NOINLINE static int read_one_byte(struct thread_result *r)
{
    struct blocked_mark m = blocked_begin();
    char c;
    ssize_t n = read(pipefd[0], &c, 1);

    blocked_end(&r->t, m);
    return n == 1;
}

NOINLINE void block_in_pipe_read(struct thread_result *r)
{
    while (read_one_byte(r))
        ;
    __asm__ volatile("" ::: "memory");
}

NOINLINE void feed_pipe_every_20ms(void)
{
    struct timespec ts = {0, 20 * 1000 * 1000};

    for (int i = 0; i < writes; i++) {
        nanosleep(&ts, NULL);
        if (write(pipefd[1], "x", 1) != 1)
            break;
    }
    close(pipefd[1]);
}

NOINLINE static void *sleeper_main(void *arg)
{
    sleeper_result.tid = syscall(SYS_gettid);
    block_in_nanosleep_100x10ms(&sleeper_result);
    return NULL;
}

NOINLINE static void *reader_main(void *arg)
{
    reader_result.tid = syscall(SYS_gettid);
    block_in_pipe_read(&reader_result);
    return NULL;
}

NOINLINE static void *feeder_main(void *arg)
{
    feed_pipe_every_20ms();
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t sleeper, reader, feeder;
    const struct int_option opts[] = {{"sleeps", &sleeps}, {"writes", &writes}};
    int status = workload_start(argc, argv, opts, N_OPTIONS(opts));

    if (status)
        return status;
    if (pipe(pipefd) < 0)
        return 1;
    pthread_create(&sleeper, NULL, sleeper_main, NULL);
    pthread_create(&reader, NULL, reader_main, NULL);
    pthread_create(&feeder, NULL, feeder_main, NULL);
    pthread_join(sleeper, NULL);
    pthread_join(feeder, NULL);
    pthread_join(reader, NULL);
    printf("{\"pid\":%d,\"nanosleep_tid\":%d,\"nanosleep_ns\":%lld,\"nanosleep_offcpu_ns\":%lld,"
           "\"nanosleep_calls\":%d,\"pipe_tid\":%d,\"pipe_ns\":%lld,\"pipe_offcpu_ns\":%lld,"
           "\"pipe_calls\":%d}\n",
           (int)getpid(), (int)sleeper_result.tid, sleeper_result.t.wall_ns,
           sleeper_result.t.offcpu_ns, sleeper_result.t.calls, (int)reader_result.tid,
           reader_result.t.wall_ns, reader_result.t.offcpu_ns, reader_result.t.calls);
    return 0;
}
