/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A noisy neighbour: threads that recurse through a random chain of eight
 * functions, to a random depth, before each 1 ms sleep, so that nearly every
 * block has a stack never seen before (thousands of new stacks a second).
 * Each thread times its own blocking; at exit one JSON line on stdout gives
 * the total, to check that its time is still fully counted.
 *
 *   stack_explosion [--wait-stdin] [--threads N] [--seconds N] [--depth N]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "blocked_time.h"
#include "workload_start.h"

#define NOINLINE __attribute__((noinline))

static int nthreads = 20, seconds = 10, max_depth = 60;

struct thread_state {
    unsigned seed;
    struct blocked_time t;
};

typedef void (*step_fn)(struct thread_state *s, int depth);
static step_fn steps[8];

NOINLINE static void block_1ms(struct thread_state *s)
{
    struct timespec ts = {0, 1000000};
    struct blocked_mark m = blocked_begin();

    nanosleep(&ts, NULL);
    blocked_end(&s->t, m);
}

/* Eight copies of one step, each a function of its own: every call site
 * makes a different return address, and so a different stack. */
#define STEP(n)                                                                                    \
    NOINLINE static void step##n(struct thread_state *s, int depth)                                \
    {                                                                                              \
        volatile int keep_frame = depth;                                                           \
        if (depth <= 0)                                                                            \
            block_1ms(s);                                                                          \
        else                                                                                       \
            steps[rand_r(&s->seed) & 7](s, keep_frame - 1);                                        \
    }
STEP(0)
STEP(1)
STEP(2)
STEP(3)
STEP(4)
STEP(5)
STEP(6)
STEP(7)

static void *explode(void *arg)
{
    struct thread_state *s = arg;
    long long end = clock_read_ns(CLOCK_MONOTONIC) + seconds * 1000000000LL;

    while (clock_read_ns(CLOCK_MONOTONIC) < end)
        steps[0](s, 1 + rand_r(&s->seed) % max_depth);
    return NULL;
}

int main(int argc, char **argv)
{
    const struct int_option opts[] = {
        {"threads", &nthreads}, {"seconds", &seconds}, {"depth", &max_depth}};
    int status = workload_start(argc, argv, opts, N_OPTIONS(opts));
    struct thread_state *st;
    pthread_t *th;
    long long offcpu = 0;
    int calls = 0;

    if (status)
        return status;
    steps[0] = step0, steps[1] = step1, steps[2] = step2, steps[3] = step3;
    steps[4] = step4, steps[5] = step5, steps[6] = step6, steps[7] = step7;
    st = calloc(nthreads, sizeof(*st));
    th = calloc(nthreads, sizeof(*th));
    if (!st || !th)
        return 1;
    for (int i = 0; i < nthreads; i++) {
        st[i].seed = 12345 + i;
        pthread_create(&th[i], NULL, explode, &st[i]);
    }
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        offcpu += st[i].t.offcpu_ns;
        calls += st[i].t.calls;
    }
    printf("{\"pid\":%d,\"offcpu_ns\":%lld,\"calls\":%d}\n", (int)getpid(), offcpu, calls);
    return 0;
}
