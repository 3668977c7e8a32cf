/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* What every part of the collector uses: its counters, and the channel that
 * asks the daemon to read a process while it lives. */
#ifndef COMMON_BPF_H
#define COMMON_BPF_H

#include "offcpu.h"

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct offcpu_stats);
} stats SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 256 * 1024);
} announcements SEC(".maps");

/* Equal, 8 bytes at a time: n, a multiple of 8, known when compiled (keys
 * with no padding, compared where a map lookup would hash them). */
static __always_inline bool words_equal(const void *a, const void *b, const __u32 n)
{
    const __u64 *x = a, *y = b;

    for (__u32 i = 0; i < n / sizeof(__u64); i++)
        if (x[i] != y[i])
            return false;
    return true;
}

static __always_inline void stat_add(enum offcpu_stat s, __u64 n)
{
    __u32 zero = 0;
    struct offcpu_stats *st = bpf_map_lookup_elem(&stats, &zero);

    /* atomic: a preempted iterator and sched_switch may share a CPU */
    if (st && s < OFFCPU_STAT__MAX)
        __sync_fetch_and_add(&st->v[s], n);
}

static __always_inline void announce(__u32 tgid, __u32 exec_id, enum offcpu_announce_kind kind,
                                     __u64 mm)
{
    struct offcpu_announce a = {.tgid = tgid, .exec_id = exec_id, .kind = kind, .mm = mm};

    if (bpf_ringbuf_output(&announcements, &a, sizeof(a), 0) < 0)
        stat_add(OFFCPU_STAT_ANNOUNCE_LOST, 1);
}

#endif
