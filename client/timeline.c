/* SPDX-License-Identifier: GPL-2.0-only */
#include "timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int read_gaps(const json_t *reply, struct timeline *tl)
{
    const json_t *gaps = json_object_get(reply, "gaps"), *g;
    size_t i;

    tl->gaps = calloc(json_array_size(gaps) ?: 1, sizeof(*tl->gaps));
    if (!tl->gaps)
        return -ENOMEM;
    json_array_foreach(gaps, i, g)
    {
        int64_t start = json_integer_value(json_object_get(g, "start_ns")),
                end = json_integer_value(json_object_get(g, "end_ns"));

        if (end > start)
            tl->gaps[tl->n_gaps++] = (struct timeline_gap){.start_ns = start, .end_ns = end};
    }
    return 0;
}

/* How much of [start, end) the gaps hold: they do not overlap. */
static int64_t missing(const struct timeline *tl, int64_t start, int64_t end)
{
    int64_t sum = 0;

    for (size_t i = 0; i < tl->n_gaps; i++) {
        int64_t from = tl->gaps[i].start_ns > start ? tl->gaps[i].start_ns : start;
        int64_t to = tl->gaps[i].end_ns < end ? tl->gaps[i].end_ns : end;

        if (to > from)
            sum += to - from;
    }
    return sum;
}

int timeline_read(const json_t *reply, struct timeline *tl)
{
    int64_t end_ns = json_integer_value(json_object_get(reply, "end_ns"));
    const json_t *buckets = json_object_get(reply, "buckets"), *b;
    size_t i;

    memset(tl, 0, sizeof(*tl));
    if (!json_is_array(buckets) || !json_is_integer(json_object_get(reply, "bucket_ns")))
        return -EINVAL;
    tl->bucket_ns = json_integer_value(json_object_get(reply, "bucket_ns"));
    tl->buckets = calloc(json_array_size(buckets) ?: 1, sizeof(*tl->buckets));
    if (!tl->buckets || read_gaps(reply, tl) < 0) {
        timeline_done(tl);
        return -ENOMEM;
    }
    json_array_foreach(buckets, i, b)
    {
        struct timeline_bucket *out = &tl->buckets[tl->n++];
        const char *state;
        json_t *ns;
        int64_t end;

        out->start_ns = json_integer_value(json_object_get(b, "start_ns"));
        json_object_foreach((json_t *)json_object_get(b, "states"), state, ns)
        {
            uint64_t v = json_integer_value(ns) > 0 ? (uint64_t)json_integer_value(ns) : 0;

            out->state_ns[flame_state_index(state)] += v;
            out->total_ns += v;
        }
        for (unsigned s = 0; s < FLAME_STATE_COUNT; s++)
            if (out->state_ns[s] > tl->state_peak_ns[s])
                tl->state_peak_ns[s] = out->state_ns[s];
        /* the last bucket may end past the window */
        end = out->start_ns + tl->bucket_ns < end_ns ? out->start_ns + tl->bucket_ns : end_ns;
        out->missing_ns = missing(tl, out->start_ns, end);
        out->no_data = end > out->start_ns && out->missing_ns >= end - out->start_ns;
        if (out->total_ns > tl->peak_ns) {
            tl->peak_ns = out->total_ns;
            tl->peak = i;
        }
    }
    return 0;
}

void timeline_done(struct timeline *tl)
{
    free(tl->buckets);
    free(tl->gaps);
    memset(tl, 0, sizeof(*tl));
}
