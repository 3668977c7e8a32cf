/* SPDX-License-Identifier: GPL-2.0-only */
#include "ring.h"
#include "array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ring_init(struct ring *r, uint64_t retention_ns, size_t memory_limit)
{
    memset(r, 0, sizeof(*r));
    intern_init(&r->intern);
    r->retention_ns = retention_ns;
    r->memory_limit = memory_limit;
}

void ring_done(struct ring *r)
{
    for (size_t i = 0; i < r->n; i++)
        snapshot_free(&r->intern, r->snaps[i]);
    free(r->snaps);
    intern_done(&r->intern);
    memset(r, 0, sizeof(*r));
}

size_t ring_memory(const struct ring *r)
{
    return r->records_bytes + r->cap * sizeof(*r->snaps) + intern_bytes(&r->intern);
}

static void evict_oldest(struct ring *r)
{
    struct snapshot *s = r->snaps[0];

    r->records_bytes -= snapshot_bytes(s);
    snapshot_free(&r->intern, s);
    memmove(r->snaps, r->snaps + 1, (r->n - 1) * sizeof(*r->snaps));
    r->n--;
}

void ring_expire(struct ring *r, int64_t now_ns)
{
    /* the newest snapshot always stays: an answer about the last interval
     * beats none, even over the limit */
    while (r->n > 1 && r->snaps[0]->end_ns + (int64_t)r->retention_ns <= now_ns) {
        evict_oldest(r);
        r->evicted_retention++;
    }
    while (r->n > 1 && ring_memory(r) > r->memory_limit) {
        evict_oldest(r);
        r->evicted_memory++;
    }
}

int ring_push(struct ring *r, struct snapshot *s, int64_t now_ns)
{
    if (array_reserve(&r->snaps, &r->cap, r->n + 1, sizeof(*r->snaps), 64) < 0)
        return -ENOMEM;
    r->snaps[r->n++] = s;
    r->records_bytes += snapshot_bytes(s);
    ring_expire(r, now_ns);
    return 0;
}
