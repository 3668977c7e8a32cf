/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A reader blocked at one place, woken by two feeders in turns of two
 * reads (a, a, b, b, a, ...): feeder_a and feeder_b (their own names, their
 * own functions) each write one byte to the reader's pipe when it is their
 * turn, 5 ms after it, so that the reader is blocked in read() by then.
 * After read reads/2 (between the two reads of a turn), the reader renames
 * itself from reader_one to reader_two. Each
 * block's waker pair is its reader's name and its feeder: the pair of the
 * block before at the same place half of the time, another the other half.
 *
 *   two_wakers [--wait-stdin] [--reads N]
 *
 * Prints {"pid", "reader_tid", "reads"} as one JSON line at exit.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload_start.h"

#define NOINLINE __attribute__((noinline))

static int reads = 40;
static int pipe_fds[2];
static sem_t turn[2]; /* posted by the reader: the feeder whose turn it is */

NOINLINE static void write_after_5ms(void)
{
    struct timespec ts = {0, 5 * 1000 * 1000};
    char c = 'x';

    nanosleep(&ts, NULL);
    if (write(pipe_fds[1], &c, 1) != 1)
        perror("two_wakers: write");
    __asm__ volatile("" ::: "memory");
}

NOINLINE static void feed_a(void)
{
    for (int i = 0; i < reads / 2; i++) {
        sem_wait(&turn[0]);
        write_after_5ms();
    }
    __asm__ volatile("" ::: "memory");
}

NOINLINE static void feed_b(void)
{
    for (int i = 0; i < reads / 2; i++) {
        sem_wait(&turn[1]);
        write_after_5ms();
    }
    __asm__ volatile("" ::: "memory");
}

static void *feeder(void *arg)
{
    int b = arg != NULL;

    prctl(PR_SET_NAME, b ? "feeder_b" : "feeder_a");
    if (b)
        feed_b();
    else
        feed_a();
    return NULL;
}

NOINLINE static void read_one_byte(void)
{
    char c;

    if (read(pipe_fds[0], &c, 1) != 1)
        perror("two_wakers: read");
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    const struct int_option opts[] = {{"reads", &reads}};
    pthread_t a, b;
    int r = workload_start(argc, argv, opts, N_OPTIONS(opts));

    if (r)
        return r;
    reads &= ~1;
    if (pipe(pipe_fds) < 0 || sem_init(&turn[0], 0, 0) < 0 || sem_init(&turn[1], 0, 0) < 0) {
        perror("two_wakers");
        return 1;
    }
    prctl(PR_SET_NAME, "reader_one");
    pthread_create(&a, NULL, feeder, NULL);
    pthread_create(&b, NULL, feeder, (void *)1);
    for (int i = 0; i < reads; i++) {
        if (i == reads / 2 + 1)
            prctl(PR_SET_NAME, "reader_two");
        sem_post(&turn[(i >> 1) & 1]);
        read_one_byte();
    }
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("{\"pid\":%d,\"reader_tid\":%ld,\"reads\":%d}\n", (int)getpid(),
           (long)syscall(SYS_gettid), reads);
    return 0;
}
