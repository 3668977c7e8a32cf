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
 *    counted at its middle (exact when they all lie on one side), less no
 *    more than what of them lies in this record: a short wait that began in
 *    earlier records, whose parts there are left out, is taken off this
 *    one less those parts;
 *  - a wait is counted when it ends, its time in each interval it spans: a
 *    record's time after its last wait ended is part of a wait that ends
 *    in the thread's next record of that stack, and goes with it (kept
 *    when that record's longest wait reaches T).
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
 * least min_ns in *w, with the wait still going on at its end when
 * tail_long (it ends, long, in a later record); false when it has none.
 * min_ns 0 keeps all. */
bool min_wait_of(const struct record *rec, const struct histogram *hist, uint64_t min_ns,
                 bool tail_long, struct waits *w);

/* A record matched by a query, and what min_wait_decide() made of it. */
struct min_wait_item {
    const struct record *rec;
    size_t snapshot; /* its snapshot's place in time, oldest first */
    struct waits w;  /* set when kept */
    bool kept;
};

/* Decides which of items (n, any order) keep waits of at least min_ns, and
 * their waits; hist texts read from in. Sorts items. */
void min_wait_decide(struct min_wait_item *items, size_t n, const struct intern *in,
                     uint64_t min_ns);

/* Clears the buckets of h that min_wait_of leaves out of a record it keeps. */
void min_wait_histogram(struct histogram *h, uint64_t min_ns);

#endif
