/* SPDX-License-Identifier: GPL-2.0-only */
#include "query_timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "macro.h"

/* Time between the snapshots, oldest first: each snapshot starts where the
 * one before ended while the daemon runs, so a hole is time it was stopped.
 * As many as the snapshots at most, which the ring bounds. */
static int add_gap(struct timeline_result *res, size_t *cap, int64_t start, int64_t end)
{
    if (array_reserve(&res->gaps, cap, res->n_gaps + 1, sizeof(*res->gaps), 16) < 0)
        return -ENOMEM;
    res->gaps[res->n_gaps++] = (struct timeline_gap){.start_ns = start, .end_ns = end};
    return 0;
}

/* What the snapshots in the window cover, the holes between them, and the
 * shortest of them. */
static int cover(const struct ring *r, const struct query *q, struct timeline_result *res,
                 int64_t *shortest)
{
    size_t cap = 0;

    for (size_t s = 0; s < r->n; s++) {
        const struct snapshot *snap = r->snaps[s];

        if (!query_snapshot_in_window(q, snap))
            continue;
        if (!res->snapshots || snap->end_ns - snap->start_ns < *shortest)
            *shortest = snap->end_ns - snap->start_ns;
        /* the ring is in time order: what it covers so far ends at end_ns */
        if (res->snapshots && snap->start_ns > res->end_ns &&
            add_gap(res, &cap, res->end_ns, snap->start_ns) < 0)
            return -ENOMEM;
        query_cover(&res->start_ns, &res->end_ns, &res->snapshots, snap);
    }
    return 0;
}

/* Spreads ns over the buckets [start, end) overlaps, in proportion, exactly:
 * each bucket gets the difference of the shares up to its end and its start. */
static void spread(struct timeline_result *res, int64_t start, int64_t end, size_t state,
                   uint64_t ns)
{
    int64_t len = end - start, done = 0;
    uint64_t given = 0;
    size_t b = (size_t)((start - res->start_ns) / res->bucket_ns);

    if (len <= 0) {
        res->ns[b < res->n ? b : res->n - 1][state] += ns;
        return;
    }
    for (; b < res->n && done < len; b++) {
        int64_t bucket_end = res->start_ns + (int64_t)(b + 1) * res->bucket_ns;
        int64_t upto = (bucket_end < end ? bucket_end : end) - start;
        uint64_t share = (uint64_t)((unsigned __int128)ns * (uint64_t)upto / (uint64_t)len);

        res->ns[b][state] += share - given;
        given = share;
        done = upto;
    }
}

/* The kept time of items, each over its snapshot's time. */
static void add_records(const struct ring *r, const struct min_wait_item *items, size_t n,
                        struct timeline_result *res)
{
    for (size_t i = 0; i < n; i++) {
        const struct snapshot *snap = r->snaps[items[i].snapshot];

        if (!items[i].kept)
            continue;
        res->records++;
        if (items[i].w.total_ns)
            spread(res, snap->start_ns, snap->end_ns, protocol_state_index(items[i].rec->state),
                   items[i].w.total_ns);
    }
}

int timeline_run(const struct ring *r, const struct query *q, size_t buckets,
                 struct timeline_result *res)
{
    _cleanup_free_ struct min_wait_item *items = NULL;
    int64_t shortest = 0;
    size_t n = 0;
    int ret;

    memset(res, 0, sizeof(*res));
    if (cover(r, q, res, &shortest) < 0)
        return -ENOMEM;
    if (!res->snapshots)
        return 0;
    /* never shorter than a snapshot (the daemon's interval), nor than 1 ms:
     * finer would only spread the same time evenly */
    res->bucket_ns = (res->end_ns - res->start_ns + (int64_t)buckets - 1) / (int64_t)buckets;
    if (res->bucket_ns < shortest)
        res->bucket_ns = shortest;
    if (res->bucket_ns < 1000000)
        res->bucket_ns = 1000000;
    res->n = (size_t)((res->end_ns - res->start_ns + res->bucket_ns - 1) / res->bucket_ns);
    if (res->n < 1)
        res->n = 1;
    res->ns = calloc(res->n, sizeof(*res->ns));
    if (!res->ns)
        return -ENOMEM;
    ret = query_records(r, q, &items, &n, &res->withheld, &res->idle_ns);
    if (ret < 0)
        return ret;
    add_records(r, items, n, res);
    return 0;
}

void timeline_result_done(struct timeline_result *res)
{
    free(res->ns);
    free(res->gaps);
    memset(res, 0, sizeof(*res));
}
