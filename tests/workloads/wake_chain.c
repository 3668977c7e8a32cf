/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A chain of three waits, for offcpuctl why: a "reader" thread blocks
 * reading a pipe that a "feeder" thread writes a byte into each time it gets
 * a mutex; an "io_owner" thread holds that mutex while it writes and fsyncs
 * --mb MB (wake_chain.data in the current directory), --cycles times, with
 * a 2 ms pause between. So the reader is woken by the feeder, the feeder by
 * the io_owner, and the io_owner waits in D on its I/O.
 *
 *   wake_chain [--wait-stdin] [--cycles N] [--mb N]
 *
 * At exit one JSON line: pid and the three threads' tids.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload_start.h"
#include "write_and_fsync.h"

#define NOINLINE __attribute__((noinline))

static int cycles = 6, mb = 16;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int pipefd[2];
static volatile int done;
static pid_t reader_tid, feeder_tid, owner_tid;

static pid_t gettid_now(void)
{
    return (pid_t)syscall(SYS_gettid);
}

NOINLINE static void *io_owner_loop(void *arg)
{
    struct timespec pause = {0, 2 * 1000 * 1000};

    (void)arg;
    owner_tid = gettid_now();
    pthread_setname_np(pthread_self(), "io_owner");
    for (int i = 0; i < cycles; i++) {
        pthread_mutex_lock(&lock);
        write_and_fsync("wake_chain.data", mb);
        pthread_mutex_unlock(&lock);
        nanosleep(&pause, NULL); /* the feeder gets the lock */
    }
    done = 1;
    unlink("wake_chain.data");
    return NULL;
}

NOINLINE static void *feed_after_lock(void *arg)
{
    (void)arg;
    feeder_tid = gettid_now();
    pthread_setname_np(pthread_self(), "feeder");
    while (!done) {
        pthread_mutex_lock(&lock);
        pthread_mutex_unlock(&lock);
        if (write(pipefd[1], "x", 1) != 1)
            break;
    }
    close(pipefd[1]);
    return NULL;
}

NOINLINE static void *read_fed_pipe(void *arg)
{
    char c[64];

    (void)arg;
    reader_tid = gettid_now();
    pthread_setname_np(pthread_self(), "reader");
    while (read(pipefd[0], c, sizeof(c)) > 0)
        ;
    return NULL;
}

int main(int argc, char **argv)
{
    const struct int_option opts[] = {{"cycles", &cycles}, {"mb", &mb}};
    pthread_t owner, feeder, reader;
    struct timespec first = {0, 10 * 1000 * 1000};
    int r = workload_start(argc, argv, opts, N_OPTIONS(opts));

    if (r)
        return r;
    if (pipe(pipefd) < 0)
        return perror("pipe"), 1;
    pthread_create(&reader, NULL, read_fed_pipe, NULL);
    pthread_create(&owner, NULL, io_owner_loop, NULL);
    nanosleep(&first, NULL); /* the io_owner holds the lock first */
    pthread_create(&feeder, NULL, feed_after_lock, NULL);
    pthread_join(owner, NULL);
    pthread_join(feeder, NULL);
    pthread_join(reader, NULL);
    printf("{\"pid\": %d, \"reader_tid\": %d, \"feeder_tid\": %d, \"io_owner_tid\": %d}\n",
           getpid(), reader_tid, feeder_tid, owner_tid);
    return 0;
}
