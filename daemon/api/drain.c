/* SPDX-License-Identifier: GPL-2.0-only */
#include "drain.h"

#include <malloc.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "process_memory.h"
#include "ring_budget.h"
#include "state_dir.h"

int drain_run(struct daemon *d)
{
    int64_t t0 = clock_ns(CLOCK_MONOTONIC), took;
    struct snapshot *snap;
    struct drained *dr;
    size_t incoming, before;
    int r;

    /* execs announced but not yet seen would name old images' frames from
     * the new image's mappings */
    collector_take_announcements(d->collector);
    r = collector_flip_and_drain(d->collector, &dr);
    if (r < 0)
        return r;
    r = snapshot_build(dr, d->sym, d->cgroups, &d->ring.intern, &snap, &d->stats.snap);
    if (r < 0)
        return log_error_errno(r, "keeping a snapshot of %zu records: %s", dr->n, strerror(-r));
    /* before the ring takes it: a snapshot over the memory limit goes at once */
    if (d->metrics && metrics_add(d->metrics, snap, &d->ring.intern) < 0)
        log_warning("metrics: out of memory counting a snapshot");
    incoming = snapshot_bytes(snap);
    before = ring_memory(&d->ring) + incoming;
    ring_budget_make_room(&d->ring, incoming);
    r = ring_push(&d->ring, snap, clock_ns(CLOCK_REALTIME));
    if (r < 0) {
        snapshot_free(&d->ring.intern, snap);
        return log_error_errno(r, "keeping a snapshot: %s", strerror(-r));
    }
    /* the newest stays in the ring, whatever the push evicted */
    state_dir_journal(d, snap);
    /* what was given up goes back to the system: the allocator would keep it */
    if (ring_memory(&d->ring) < before)
        malloc_trim(0);
    if (process_rss(&d->stats.rss) < 0)
        d->stats.rss = 0;
    /* when the generation now collecting began: a drain can take long (the
     * first reads kallsyms), and all that time belongs to the next one */
    d->last_drain_mono_ns = t0;
    took = clock_ns(CLOCK_MONOTONIC) - t0;
    d->stats.drains++;
    d->stats.drain_last_ns = took;
    d->stats.drain_total_ns += took;
    if ((uint64_t)took > d->stats.drain_max_ns)
        d->stats.drain_max_ns = took;
    return 0;
}

void drain_catch_up(struct daemon *d)
{
    int64_t now = clock_ns(CLOCK_MONOTONIC);

    /* The last milliseconds before a query are what an incident is about;
     * but one such drain per interval, shared by every query that wants
     * now: a flood of queries must neither flood the ring with snapshots
     * nor make every other client wait for drains. */
    if (!d->collector || now - d->last_drain_mono_ns <= (int64_t)NSEC_PER_MSEC ||
        now - d->last_catch_up_mono_ns < (int64_t)d->cfg.interval_ns)
        return;
    d->last_catch_up_mono_ns = now;
    drain_run(d);
}
