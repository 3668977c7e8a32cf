/* SPDX-License-Identifier: GPL-2.0-only */
/* A Timeline reply read into numbers: off-CPU ns per interval and state,
 * each state's peak (a row each, on its own scale), and where the daemon
 * was not running. */
#ifndef TIMELINE_H
#define TIMELINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flame_tree.h"

struct timeline_bucket {
    int64_t start_ns;
    uint64_t total_ns;
    uint64_t state_ns[FLAME_STATE_COUNT]; /* by flame_state_index */
    int64_t missing_ns;                   /* of it no snapshot covers (the daemon was stopped) */
    bool no_data;                         /* all of it */
};

/* Time the daemon was not running, from the reply's gaps. */
struct timeline_gap {
    int64_t start_ns, end_ns;
};

struct timeline {
    struct timeline_bucket *buckets;
    size_t n;
    int64_t bucket_ns;
    uint64_t peak_ns; /* the largest bucket's total */
    size_t peak;      /* and its index */
    uint64_t state_peak_ns[FLAME_STATE_COUNT];
    struct timeline_gap *gaps;
    size_t n_gaps;
};

/* Returns 0, -ENOMEM, or -EINVAL for a reply without buckets. A reply
 * without gaps (an older daemon) has none. */
int timeline_read(const json_t *reply, struct timeline *tl);
void timeline_done(struct timeline *tl);

#endif
