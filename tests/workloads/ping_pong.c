/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Two threads pass a byte back and forth through two pipes, each on a CPU
 * of its own where there are two: every block is a few microseconds, begun
 * on one CPU and ended by a wakeup from the other. Each thread times its
 * reads (wall and off-CPU time: blocked_time.h), and the time from each
 * read's start to its partner's write of the ball (CLOCK_MONOTONIC, read
 * just before the write): how long it waited to be woken. At exit one JSON
 * line on stdout gives them.
 *
 *   ping_pong [--wait-stdin] [--rounds N]
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "blocked_time.h"
#include "workload_start.h"

#define NOINLINE __attribute__((noinline))

static int rounds = 20000;

struct player {
    int cpu;
    int in, out; /* pipe ends: the ball comes in, goes out */
    int serves;  /* the first to send */
    pid_t tid;
    struct blocked_time t;
    struct player *partner;
    long long sent_ns;       /* when the partner last sent the ball, before its write */
    long long until_sent_ns; /* of the reads, the time from their start to that */
};

static int send_ball(struct player *p)
{
    __atomic_store_n(&p->partner->sent_ns, clock_read_ns(CLOCK_MONOTONIC), __ATOMIC_RELEASE);
    return write(p->out, "x", 1) == 1;
}

NOINLINE static int wait_for_ball(struct player *p)
{
    struct blocked_mark m = blocked_begin();
    char c;
    ssize_t n = read(p->in, &c, 1);
    long long sent = __atomic_load_n(&p->sent_ns, __ATOMIC_ACQUIRE);

    blocked_end(&p->t, m);
    if (sent > m.wall)
        p->until_sent_ns += sent - m.wall;
    return n == 1;
}

static void *play(void *arg)
{
    struct player *p = arg;
    cpu_set_t one;

    p->tid = syscall(SYS_gettid);
    CPU_ZERO(&one);
    CPU_SET(p->cpu, &one);
    sched_setaffinity(0, sizeof(one), &one); /* one CPU only: stays where it is */
    for (int i = 0; i < rounds; i++) {
        if (p->serves && !send_ball(p))
            break;
        if (!wait_for_ball(p))
            break;
        if (!p->serves && !send_ball(p))
            break;
    }
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
    return NULL;
}

int main(int argc, char **argv)
{
    const struct int_option opts[] = {{"rounds", &rounds}};
    int status = workload_start(argc, argv, opts, N_OPTIONS(opts)), there[2], back[2];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    struct player a = {0}, b = {0};
    pthread_t ta, tb;

    if (status)
        return status;
    if (pipe(there) < 0 || pipe(back) < 0)
        return 1;
    a = (struct player){.cpu = 0, .in = back[0], .out = there[1], .serves = 1, .partner = &b};
    b = (struct player){.cpu = cpus > 1 ? 1 : 0, .in = there[0], .out = back[1], .partner = &a};
    pthread_create(&ta, NULL, play, &a);
    pthread_create(&tb, NULL, play, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    printf("{\"pid\":%d,\"tids\":[%d,%d],\"offcpu_ns\":[%lld,%lld],\"until_sent_ns\":[%lld,%lld],"
           "\"calls\":[%d,%d]}\n",
           (int)getpid(), (int)a.tid, (int)b.tid, a.t.offcpu_ns, b.t.offcpu_ns, a.until_sent_ns,
           b.until_sent_ns, a.t.calls, b.t.calls);
    return 0;
}
