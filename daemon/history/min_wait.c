/* SPDX-License-Identifier: GPL-2.0-only */
#include "min_wait.h"

#define NS_PER_US 1000ULL

/* The bucket a period of ns falls in, as the kernel counts it. */
static unsigned bucket_of(uint64_t ns)
{
    uint64_t us = ns / NS_PER_US;
    unsigned b = 0;

    while (us) {
        b++;
        us >>= 1;
    }
    return b < HISTOGRAM_BUCKETS ? b : HISTOGRAM_BUCKETS - 1;
}

static uint64_t bucket_low_ns(unsigned b)
{
    return b ? (1ULL << (b - 1)) * NS_PER_US : 0;
}

void min_wait_histogram(struct histogram *h, uint64_t min_ns)
{
    for (unsigned b = 0; b < bucket_of(min_ns); b++)
        h->n[b] = 0;
}

bool min_wait_of(const struct record *rec, const struct histogram *hist, uint64_t min_ns,
                 struct waits *w)
{
    uint64_t dropped_mid = 0, dropped_low = 0, kept_low = 0, kept = 0, dropped = 0, high;
    unsigned first;

    *w = (struct waits){rec->total_ns, rec->runq_ns, rec->count};
    if (!min_ns)
        return true;
    /* none as long: the bucket holding min_ns is left out with the others */
    if (rec->max_ns < min_ns)
        return false;
    if (!hist) /* nothing to split it by: its longest wait is long enough */
        return true;
    first = bucket_of(min_ns);
    for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++) {
        uint64_t low = bucket_low_ns(b), n = hist->n[b];

        if (b >= first) {
            kept += n;
            kept_low += n * low;
            continue;
        }
        dropped += n;
        dropped_low += n * low;
        /* the middle of [low, 2 low), or of [0, 1 us) */
        dropped_mid += n * (b ? low + low / 2 : NS_PER_US / 2);
    }
    if (!kept)
        return false;
    if (!dropped)
        return true;
    w->count = kept;
    w->total_ns = rec->total_ns > dropped_mid ? rec->total_ns - dropped_mid : 0;
    if (w->total_ns < kept_low)
        w->total_ns = kept_low;
    high = rec->total_ns > dropped_low ? rec->total_ns - dropped_low : 0;
    if (w->total_ns > high)
        w->total_ns = high;
    w->runq_ns = rec->total_ns
                     ? (uint64_t)((unsigned __int128)rec->runq_ns * w->total_ns / rec->total_ns)
                     : 0;
    return true;
}
