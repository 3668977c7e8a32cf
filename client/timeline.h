/* SPDX-License-Identifier: GPL-2.0-only */
/* A Timeline reply read into numbers: off-CPU ns per interval and state. */
#ifndef TIMELINE_H
#define TIMELINE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "flame_tree.h"

struct timeline_bucket {
    int64_t start_ns;
    uint64_t total_ns;
    uint64_t state_ns[FLAME_STATE_COUNT]; /* by flame_state_index */
};

struct timeline {
    struct timeline_bucket *buckets;
    size_t n;
    int64_t bucket_ns;
    uint64_t peak_ns; /* the largest bucket's total */
    size_t peak;      /* and its index */
};

/* Returns 0, -ENOMEM, or -EINVAL for a reply without buckets. */
int timeline_read(const json_t *reply, struct timeline *tl);
void timeline_done(struct timeline *tl);

#endif
