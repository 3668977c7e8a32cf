/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A thread that sleeps 10 ms at a time on a CPU kept busy: its off-CPU time
 * is the sleep plus the wait for the CPU after each wakeup (run-queue
 * latency). Spinner threads pinned to the same CPU keep it busy.
 *
 *   runq_sleeper [--wait-stdin] [--sleeps N] [--spinners N] [--nice N]
 *
 * The sleeper runs at nice 19 (--nice) so that its wakeups do not preempt
 * the spinners at once: it waits for the CPU, as a low-priority thread on a
 * busy machine does.
 *
 * The sleeper sleeps to an absolute deadline 10 ms ahead with a timer slack
 * of 1 ns, so it knows when it became runnable: at the deadline. Per call,
 * the time from the call to the deadline is its sleep (blocked); its off-CPU
 * time is wall minus CPU time (blocked_time.h); the rest of that is the wait
 * for the CPU. That rest also holds the timer's own lateness, which a loaded
 * host makes longer and the kernel counts as sleep: so the sleeper also reads
 * the kernel's own wait for the CPU (run_delay, /proc/thread-self/schedstat)
 * around each call. At exit one JSON line on stdout gives these sums.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "blocked_time.h"
#include "busy_cpu.h"
#include "workload_start.h"

#define NOINLINE __attribute__((noinline))
#define SLEEP_NS (10 * 1000 * 1000LL)

static int sleeps = 100, spinners = 3, nice_sleeper = 19;
static struct busy_cpu busy; /* the one CPU every thread here runs on */

struct sleeper_result {
    pid_t tid;
    struct blocked_time t;
    long long sleep_ns;     /* of t.offcpu_ns: from each call to its deadline */
    long long run_delay_ns; /* the kernel's wait for the CPU around the calls */
    int schedstat;          /* the thread's /proc/thread-self/schedstat */
};

static struct sleeper_result result;

/* schedstat's second field: the time the thread waited on a run queue */
static long long run_delay_ns(int fd)
{
    char line[96];
    long long on_cpu, waited;
    ssize_t n = pread(fd, line, sizeof(line) - 1, 0);

    if (n <= 0)
        return 0;
    line[n] = '\0';
    return sscanf(line, "%lld %lld", &on_cpu, &waited) == 2 ? waited : 0;
}

NOINLINE static void sleep_10ms_on_busy_cpu(struct sleeper_result *r)
{
    long long waited = run_delay_ns(r->schedstat);
    struct blocked_mark m = blocked_begin();
    long long deadline = m.wall + SLEEP_NS;
    struct timespec ts = {deadline / 1000000000LL, deadline % 1000000000LL};

    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    blocked_end(&r->t, m);
    r->sleep_ns += SLEEP_NS;
    r->run_delay_ns += run_delay_ns(r->schedstat) - waited;
}

NOINLINE void sleep_in_a_loop(struct sleeper_result *r)
{
    for (int i = 0; i < sleeps; i++)
        sleep_10ms_on_busy_cpu(r);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
}

NOINLINE static void *sleeper_main(void *arg)
{
    busy_cpu_pin(&busy);
    /* woken at the deadline, not up to 50 us after it */
    prctl(PR_SET_TIMERSLACK, 1UL);
    setpriority(PRIO_PROCESS, 0, nice_sleeper);
    result.tid = syscall(SYS_gettid);
    result.schedstat = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    sleep_in_a_loop(&result);
    return NULL;
}

int main(int argc, char **argv)
{
    const struct int_option opts[] = {
        {"sleeps", &sleeps}, {"spinners", &spinners}, {"nice", &nice_sleeper}};
    int status = workload_start(argc, argv, opts, N_OPTIONS(opts));
    pthread_t sleeper;

    if (status)
        return status;
    if (busy_cpu_start(&busy, spinners) < 0) {
        fprintf(stderr, "--spinners: 0 to %d\n", BUSY_CPU_SPINNERS_MAX);
        return 2;
    }
    pthread_create(&sleeper, NULL, sleeper_main, NULL);
    pthread_join(sleeper, NULL);
    busy_cpu_stop(&busy);
    printf("{\"pid\":%d,\"tid\":%d,\"cpu\":%d,\"calls\":%d,\"wall_ns\":%lld,\"offcpu_ns\":%lld,"
           "\"sleep_ns\":%lld,\"runq_ns\":%lld,\"run_delay_ns\":%lld}\n",
           (int)getpid(), (int)result.tid, busy.cpu, result.t.calls, result.t.wall_ns,
           result.t.offcpu_ns, result.sleep_ns, result.t.offcpu_ns - result.sleep_ns,
           result.run_delay_ns);
    return 0;
}
