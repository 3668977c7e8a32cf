/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The stall of offcpuctl why's first example: a "checkpoint" thread takes a
 * lock for writing, writes and fsyncs --mb MB (into lock_holder.data in the
 * current directory), sleeps --sleep-ms holding it, and lets go; --requests
 * "request" threads take it for reading, again and again, with a 20 ms pause
 * between: each waits on the lock for as long as the checkpoint holds it.
 * A reader-writer lock, so that the checkpoint's unlock wakes every waiting
 * request itself (a mutex would have each request wake the next).
 *
 *   lock_holder [--wait-stdin] [--cycles N] [--mb N] [--sleep-ms N] [--requests N]
 *
 * At exit one JSON line: pid, the holder's tid, the requests' tids and the
 * off-CPU time each waited on the lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "blocked_time.h"
#include "workload_start.h"
#include "write_and_fsync.h"

#define NOINLINE    __attribute__((noinline))
#define MAX_REQUEST 8

static int cycles = 2, mb = 48, sleep_ms = 1500, requests = 2;
static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static volatile int done;
static pid_t holder_tid;

struct request {
    pthread_t thread;
    pid_t tid;
    struct blocked_time waited;
};

static struct request req[MAX_REQUEST];

static void sleep_ms_for(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

NOINLINE static void sleep_holding_lock(void)
{
    sleep_ms_for(sleep_ms);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
}

NOINLINE static void *checkpoint_loop(void *arg)
{
    (void)arg;
    holder_tid = (pid_t)syscall(SYS_gettid);
    pthread_setname_np(pthread_self(), "checkpoint");
    for (int i = 0; i < cycles; i++) {
        pthread_rwlock_wrlock(&lock);
        write_and_fsync("lock_holder.data", mb);
        sleep_holding_lock();
        pthread_rwlock_unlock(&lock);
        sleep_ms_for(50); /* the requests go through */
    }
    unlink("lock_holder.data");
    return NULL;
}

NOINLINE static void *request_waits_on_lock(void *arg)
{
    struct request *r = arg;

    r->tid = (pid_t)syscall(SYS_gettid);
    pthread_setname_np(pthread_self(), "request");
    while (!done) {
        struct blocked_mark m = blocked_begin();

        pthread_rwlock_rdlock(&lock);
        blocked_end(&r->waited, m);
        pthread_rwlock_unlock(&lock);
        sleep_ms_for(20);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const struct int_option opts[] = {
        {"cycles", &cycles}, {"mb", &mb}, {"sleep-ms", &sleep_ms}, {"requests", &requests}};
    pthread_t holder;
    int r = workload_start(argc, argv, opts, N_OPTIONS(opts));

    if (r)
        return r;
    if (requests < 1 || requests > MAX_REQUEST)
        return fprintf(stderr, "--requests: 1 to %d\n", MAX_REQUEST), 2;
    pthread_create(&holder, NULL, checkpoint_loop, NULL);
    sleep_ms_for(10); /* the checkpoint holds the lock first */
    for (int i = 0; i < requests; i++)
        pthread_create(&req[i].thread, NULL, request_waits_on_lock, &req[i]);
    pthread_join(holder, NULL);
    done = 1;
    printf("{\"pid\": %d, \"holder_tid\": %d, \"requests\": [", getpid(), holder_tid);
    for (int i = 0; i < requests; i++) {
        pthread_join(req[i].thread, NULL);
        printf("%s{\"tid\": %d, \"lock_offcpu_ns\": %lld}", i ? ", " : "", req[i].tid,
               req[i].waited.offcpu_ns);
    }
    printf("]}\n");
    return 0;
}
