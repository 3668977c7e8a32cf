/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A snapshot: what one drained generation held, [start_ns, end_ns), as
 * records of interned names and stacks. What the ring keeps, the queries
 * read and the state directory saves.
 */
#ifndef SNAPSHOT_H
#define SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "intern.h"

struct record {
    uint64_t total_ns;
    uint64_t runq_ns; /* of total_ns, runnable: waiting for a CPU, not blocked */
    uint64_t count;
    uint64_t max_ns; /* the longest single period */
    uint32_t tgid;
    uint32_t tid;
    uint32_t comm;   /* string id */
    uint32_t cgroup; /* string id of the cgroup path, 0 when unknown */
    uint32_t ustack; /* stack id, root first; 0 for kernel threads */
    uint32_t kstack; /* stack id, root first */
    /* stack id: where each user frame lies, two strings per frame (see
     * frame_where.h); 0 when not known */
    uint32_t uwhere;
    uint32_t uid;  /* whose process; UID_UNKNOWN if not known */
    uint32_t hist; /* string id: the periods' histogram (histogram.h); 0: none */
    char state;    /* enum offcpu_state */
};

#define UID_UNKNOWN UINT32_MAX

/* The one frame of a stack its cgroup had no room for: over its share of the
 * kernel's maps at the time, or coarsened in the ring under the memory limit.
 * The time is counted all the same. */
#define SNAPSHOT_OVER_BUDGET "[stacks over budget]"

/*
 * Who woke the tasks (wakers = yes): a blocked task and where it blocked,
 * paired with its waker and where that woke it from.
 */
struct wake_record {
    /* the woken task as it blocked; total_ns: the time it was blocked until
     * these wakeups (charged whole at the wakeup), count: the wakeups;
     * runq_ns, max_ns and hist are 0 */
    struct record woken;
    /* the waker: tgid, tid (0 for interrupts), comm ("[hardirq]", ...),
     * ustack, uwhere, kstack and uid; state is its enum offcpu_waker_kind;
     * its sums and cgroup are 0 */
    struct record waker;
};

struct snapshot {
    int64_t start_ns; /* CLOCK_REALTIME: [start_ns, end_ns) */
    int64_t end_ns;
    uint32_t nwakes;
    struct wake_record *wakes; /* malloc'ed; NULL when nwakes is 0 */
    uint32_t n;
    struct record records[];
};

/* Add the sums of from, a record of the same identity, to into (which then
 * holds a reference to its new histogram; from's it leaves alone). */
void record_add_sums(struct intern *in, struct record *into, const struct record *from);

/* The memory s holds besides its strings and stacks. */
size_t snapshot_bytes(const struct snapshot *s);

/* Drop the references rec holds. */
void record_unref(struct intern *in, const struct record *rec);

/* Drop references held by s and free it. */
void snapshot_free(struct intern *in, struct snapshot *s);

#endif
