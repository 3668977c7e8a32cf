/* SPDX-License-Identifier: GPL-2.0-only */
/* Off-CPU time of a selection per interval and task state over a window:
 * when a stall began. Computed from the ring's snapshots, no stacks. */
#ifndef QUERY_TIMELINE_H
#define QUERY_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"
#include "query.h"
#include "ring.h"

#define TIMELINE_STATES      (sizeof(PROTOCOL_STATES) - 1)
#define TIMELINE_MAX_BUCKETS 1000

/* Where the daemon was not running: no snapshot covers it. */
struct timeline_gap {
    int64_t start_ns, end_ns;
};

struct timeline_result {
    int64_t start_ns, end_ns; /* what the chosen snapshots cover */
    int64_t bucket_ns;        /* buckets split it evenly; the last may end past end_ns */
    size_t n;
    uint64_t (*ns)[TIMELINE_STATES]; /* per bucket, by the index in PROTOCOL_STATES */
    struct timeline_gap *gaps;       /* between the chosen snapshots, oldest first */
    size_t n_gaps;
    size_t snapshots;
    size_t records;   /* that matched and were counted */
    size_t withheld;  /* that matched but belong to other users (q->uid) */
    uint64_t idle_ns; /* time of the idle waits q->no_idle left out */
};

/* Splits q's window into buckets (1..TIMELINE_MAX_BUCKETS: the caller checks) intervals and
 * sums the time of the records q selects into them; a snapshot's time is
 * spread over the buckets it overlaps; the time between snapshots (the
 * daemon stopped) is listed in gaps, so that it is not read as quiet time.
 * q's stack options are not used.
 * Returns 0 or -ENOMEM. */
int timeline_run(const struct ring *r, const struct query *q, size_t buckets,
                 struct timeline_result *res);
void timeline_result_done(struct timeline_result *res);

#endif
