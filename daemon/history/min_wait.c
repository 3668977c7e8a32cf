/* SPDX-License-Identifier: GPL-2.0-only */
#include "min_wait.h"

#include <stdlib.h>

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
                 bool tail_long, struct waits *w)
{
    uint64_t dropped_mid = 0, dropped_low = 0, kept = 0, dropped = 0, high;
    /* the bucket holding min_ns is kept if the longest wait reaches it */
    unsigned first = bucket_of(min_ns) + (rec->max_ns < min_ns);

    *w = (struct waits){rec->total_ns, rec->runq_ns, rec->count};
    if (!min_ns)
        return true;
    if (!hist) /* nothing to split it by */
        return rec->max_ns >= min_ns || tail_long;
    for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++) {
        uint64_t low = bucket_low_ns(b), n = hist->n[b];

        if (b >= first) {
            kept += n;
            continue;
        }
        dropped += n;
        dropped_low += n * low;
        /* the middle of [low, 2 low), or of [0, 1 us) */
        dropped_mid += n * (b ? low + low / 2 : NS_PER_US / 2);
    }
    if (!kept && !tail_long)
        return false;
    if (!dropped)
        return true;
    /* what the waits left out do not explain: the kept ones' time in this
     * interval, and the long wait going on at its end (waits span intervals:
     * a bucket's edges say nothing of the part of a wait in one of them) */
    w->count = kept;
    w->total_ns = rec->total_ns > dropped_mid ? rec->total_ns - dropped_mid : 0;
    high = rec->total_ns > dropped_low ? rec->total_ns - dropped_low : 0;
    if (w->total_ns > high)
        w->total_ns = high;
    w->runq_ns = rec->total_ns
                     ? (uint64_t)((unsigned __int128)rec->runq_ns * w->total_ns / rec->total_ns)
                     : 0;
    return w->total_ns || kept;
}

#define CMP(a, b)                                                                                  \
    do {                                                                                           \
        if ((a) != (b))                                                                            \
            return (a) < (b) ? -1 : 1;                                                             \
    } while (0)

/* A thread's records of one stack together, in time order. */
static int cmp_thread_stack(const void *a, const void *b)
{
    const struct min_wait_item *x = a, *y = b;

    CMP(x->rec->tid, y->rec->tid);
    CMP(x->rec->ustack, y->rec->ustack);
    CMP(x->rec->kstack, y->rec->kstack);
    CMP(x->rec->state, y->rec->state);
    CMP(x->snapshot, y->snapshot);
    return 0;
}

static bool same_wait_place(const struct record *x, const struct record *y)
{
    return x->tid == y->tid && x->ustack == y->ustack && x->kstack == y->kstack &&
           x->state == y->state;
}

/* Gives back to the kept record it up to *room of the time ns that it took
 * off for a wait left out but also counted in an earlier record. */
static void give_back(struct min_wait_item *it, uint64_t ns, uint64_t *room)
{
    uint64_t give = ns < *room ? ns : *room;

    *room -= give;
    it->w.total_ns += give;
    it->w.runq_ns =
        it->rec->total_ns
            ? (uint64_t)((unsigned __int128)it->rec->runq_ns * it->w.total_ns / it->rec->total_ns)
            : 0;
}

void min_wait_decide(struct min_wait_item *items, size_t n, const struct intern *in,
                     uint64_t min_ns)
{
    bool later_long = false; /* the wait going on at a record's end is long (or may be) */
    /* the record whose first wait to end may have begun in the records
     * before it, and what it took off for waits left out */
    struct min_wait_item *head = NULL;
    uint64_t head_room = 0;

    qsort(items, n, sizeof(*items), cmp_thread_stack);
    /* newest first: a wait is known once it ended, later */
    for (size_t i = n; i-- > 0;) {
        struct min_wait_item *it = &items[i];
        const struct record *rec = it->rec;
        struct histogram h = {{0}};

        if (i + 1 == n || !same_wait_place(rec, items[i + 1].rec)) {
            later_long = false;
            head = NULL;
        }
        if (!rec->count) {
            it->kept = later_long;
            it->w = (struct waits){rec->total_ns, rec->runq_ns, 0};
            /* a part of a short wait that ends later, where its whole
             * length, counted at its bucket's middle, was taken off:
             * that much too much, as far as this part goes */
            if (!it->kept && head && min_ns)
                give_back(head, rec->total_ns, &head_room);
            continue;
        }
        if (rec->hist)
            histogram_add_text(&h, intern_string_get(in, rec->hist));
        it->kept = min_wait_of(rec, rec->hist ? &h : NULL, min_ns, later_long, &it->w);
        head = it->kept ? it : NULL;
        head_room = it->kept ? rec->total_ns - it->w.total_ns : 0;
        /* the first wait ended here may have begun in an earlier interval */
        later_long = rec->max_ns >= min_ns;
    }
}
