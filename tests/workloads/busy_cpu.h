/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One CPU kept busy by spinner threads, for the workloads that wait for a
 * CPU (run-queue latency): busy_cpu_start() pins spinners on the last CPU
 * this process may run on, busy_cpu_pin() pins the calling thread there too,
 * busy_cpu_stop() lets the spinners go.
 */
#ifndef BUSY_CPU_H
#define BUSY_CPU_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#define BUSY_CPU_SPINNERS_MAX 16

struct busy_cpu {
    int cpu;
    int spinners;
    atomic_int done;
    pthread_t spinner[BUSY_CPU_SPINNERS_MAX];
};

static inline void busy_cpu_pin(const struct busy_cpu *b)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(b->cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

__attribute__((noinline)) static void *busy_cpu_spin(void *arg)
{
    struct busy_cpu *b = arg;

    busy_cpu_pin(b);
    while (!atomic_load_explicit(&b->done, memory_order_relaxed))
        ;
    return NULL;
}

/* Returns -1 for a number of spinners out of range. */
static inline int busy_cpu_start(struct busy_cpu *b, int spinners)
{
    struct timespec warm = {0, 20 * 1000 * 1000};
    cpu_set_t set;

    if (spinners < 0 || spinners > BUSY_CPU_SPINNERS_MAX)
        return -1;
    b->cpu = 0;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &set))
                b->cpu = i;
    b->spinners = spinners;
    atomic_store(&b->done, 0);
    for (int i = 0; i < spinners; i++)
        pthread_create(&b->spinner[i], NULL, busy_cpu_spin, b);
    nanosleep(&warm, NULL); /* the spinners are on their CPU */
    return 0;
}

static inline void busy_cpu_stop(struct busy_cpu *b)
{
    atomic_store(&b->done, 1);
    for (int i = 0; i < b->spinners; i++)
        pthread_join(b->spinner[i], NULL);
}

#endif
