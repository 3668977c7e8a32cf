/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The time of a context switch on the kernel's clock (bpf_ktime_get_ns, the
 * CLOCK_MONOTONIC every other time here is on), mostly without reading that
 * clock: __schedule has just read the CPU's scheduler clock into its run
 * queue (update_rq_clock), and both clocks count the same cycle counter, so
 * they drift apart only by what NTP steers the kernel clock by (parts per
 * million). Each CPU keeps their difference, measured anew once a
 * millisecond of its run-queue clock has passed since the last began: the drift leaves an error
 * of nanoseconds. Reading the kernel clock was some 55 of the 295 ns a switch
 * cost on these machines (docs/benchmarks.md).
 *
 * The run-queue clock is read before the switch's program runs, a little
 * before, or, at a switch from idle, at the wakeup that made the CPU leave
 * idle (the kernel skips the update after a wakeup preemption): tens of
 * microseconds on a VM. A sample of the difference holds that lag, so the
 * difference is the least of SWITCH_CLOCK_SAMPLES samples, and a new one is
 * used once all are in (one sample made pairs of ping_pong's wakeups 25%
 * short, once 90%: test_switch_clock.py). Each CPU's differs from the
 * others' by what their least lags differ (340 ns seen between the two CPUs
 * here): a block switched out on one CPU and in on another is off by that.
 * A block's pieces (switch-out, flips, switch-in) still add up to its whole:
 * each piece starts where the last ended.
 */
#ifndef SWITCH_CLOCK_BPF_H
#define SWITCH_CLOCK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define SWITCH_CLOCK_RECHECK_NS (1000 * 1000)
#define SWITCH_CLOCK_SAMPLES    8

struct switch_clock {
    __u64 offset;   /* kernel clock minus run-queue clock, modulo 2^64; in use */
    __u64 least;    /* of the samples taken since rq_clock: the least */
    __u64 rq_clock; /* the run-queue clock when sampling began; 0: never */
    __u32 samples;  /* taken since */
    __u32 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct switch_clock);
} switch_clocks SEC(".maps");

/* cur: the task switching out, which is current (a trusted BTF pointer when
 * btf). Its run queue is this CPU's, whatever its class (wakers.bpf.h). The
 * raw_tp fallback reads the kernel clock: the run queue is three reads away
 * through helpers there, no cheaper. */
static __always_inline __u64 switch_time(struct task_struct *cur, const bool btf)
{
    struct switch_clock *c;
    struct rq *rq;
    __u32 zero = 0;
    __u64 clock;

    if (!btf || !bpf_core_field_exists(cur->se.cfs_rq) || !bpf_core_field_exists(struct cfs_rq, rq))
        return bpf_ktime_get_ns();
    rq = cur->se.cfs_rq->rq;
    c = bpf_map_lookup_elem(&switch_clocks, &zero);
    if (!rq || !c)
        return bpf_ktime_get_ns();
    clock = rq->clock;
    /* a set is taken whole, however long an idle CPU takes to switch 8 times
     * (a set begun anew at each millisecond's end would stay at its first,
     * maybe late, sample there) */
    if (!c->rq_clock ||
        (c->samples >= SWITCH_CLOCK_SAMPLES && clock - c->rq_clock >= SWITCH_CLOCK_RECHECK_NS)) {
        c->rq_clock = clock;
        c->samples = 0;
    }
    if (c->samples < SWITCH_CLOCK_SAMPLES) {
        __u64 offset = bpf_ktime_get_ns() - clock;

        if (!c->samples || (__s64)(offset - c->least) < 0)
            c->least = offset;
        /* the first ever is used at once, then each set whole */
        if (++c->samples == SWITCH_CLOCK_SAMPLES || !c->offset)
            c->offset = c->least;
    }
    return clock + c->offset;
}

/* The time on the kernel clock of a run queue's clock just read by the
 * kernel (a new task's enqueue: wake_up_new_task updates it first), by this
 * CPU's difference as the last switch here measured it: a new task's wait
 * then starts on the clock its switch-in ends it on, and is the kernel's
 * own (sched_info), where the kernel clock read here would start it some
 * of the difference's error later or earlier. */
static __always_inline __u64 rq_time(struct rq *rq)
{
    struct switch_clock *c;
    __u32 zero = 0;

    c = bpf_map_lookup_elem(&switch_clocks, &zero);
    if (!rq || !c || !c->offset)
        return bpf_ktime_get_ns();
    return rq->clock + c->offset;
}

/* How long ago t was, on the kernel clock: 0 for a switch's time a little
 * ahead of it (a calibration's error, the other way). */
static __always_inline __u64 ns_since(__u64 t)
{
    __u64 now = bpf_ktime_get_ns();

    return now > t ? now - t : 0;
}

#endif
