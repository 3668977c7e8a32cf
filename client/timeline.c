/* SPDX-License-Identifier: GPL-2.0-only */
#include "timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int timeline_read(const json_t *reply, struct timeline *tl)
{
    const json_t *buckets = json_object_get(reply, "buckets"), *b;
    size_t i;

    memset(tl, 0, sizeof(*tl));
    if (!json_is_array(buckets) || !json_is_integer(json_object_get(reply, "bucket_ns")))
        return -EINVAL;
    tl->bucket_ns = json_integer_value(json_object_get(reply, "bucket_ns"));
    tl->buckets = calloc(json_array_size(buckets) ?: 1, sizeof(*tl->buckets));
    if (!tl->buckets)
        return -ENOMEM;
    json_array_foreach(buckets, i, b)
    {
        struct timeline_bucket *out = &tl->buckets[tl->n++];
        const char *state;
        json_t *ns;

        out->start_ns = json_integer_value(json_object_get(b, "start_ns"));
        json_object_foreach((json_t *)json_object_get(b, "states"), state, ns)
        {
            uint64_t v = json_integer_value(ns) > 0 ? (uint64_t)json_integer_value(ns) : 0;

            out->state_ns[flame_state_index(state)] += v;
            out->total_ns += v;
        }
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
    memset(tl, 0, sizeof(*tl));
}
