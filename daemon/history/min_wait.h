/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --min-wait: of a record, only its waits (off-CPU periods) of at least T,
 * told from the histogram of its periods the kernel keeps (histogram.h).
 * Bucket b >= 1 holds periods of [2^(b-1), 2^b) us, bucket 0 those under
 * 1 us, the last one all longer. The rule, as the man page says it:
 *  - the buckets above the one that holds T are kept, those below left out;
 *  - the bucket that holds T is kept when the record's longest period (known
 *    exactly) is at least T, else left out: a record whose every wait is
 *    shorter than T is left out whole, and no wait of at least T is lost;
 *  - the time kept is the record's total less the buckets left out, each
 *    counted at its middle (exact when they all lie on one side), never
 *    less than the kept buckets' lower edges allow.
 */
#ifndef MIN_WAIT_H
#define MIN_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include "histogram.h"
#include "snapshot.h"

struct waits {
    uint64_t total_ns, runq_ns, count;
};

/* The waits of rec (whose histogram is hist, NULL if it has none) of at
 * least min_ns in *w; false when it has none. min_ns 0 keeps all. */
bool min_wait_of(const struct record *rec, const struct histogram *hist, uint64_t min_ns,
                 struct waits *w);

/* Clears the buckets of h that min_wait_of leaves out of a record it keeps. */
void min_wait_histogram(struct histogram *h, uint64_t min_ns);

#endif
