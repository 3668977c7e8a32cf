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

/* Flip and drain the generation being collected, and begin its snapshot. */
static int drain_begin(struct daemon *d)
{
    struct drained *dr;
    int r;

    /* execs announced but not yet seen would name old images' frames from
     * the new image's mappings */
    collector_take_announcements(d->collector);
    r = collector_flip_and_drain(d->collector, &dr);
    if (r < 0)
        return r;
    /* when the generation now collecting began: a drain can take long (the
     * first reads kallsyms), and all that time belongs to the next one */
    d->last_drain_mono_ns = clock_ns(CLOCK_MONOTONIC);
    r = snapshot_build_begin(dr, d->sym, d->cgroups, &d->ring.intern, &d->stats.snap, &d->building);
    if (r < 0)
        return log_error_errno(r, "keeping a snapshot of %zu records: %s", dr->n, strerror(-r));
    return 0;
}

/* The built snapshot into the ring (in memory: persistence is the caller's). */
static int drain_keep(struct daemon *d)
{
    struct snapshot *snap = snapshot_build_end(d->building);
    size_t incoming, before;
    int r;

    d->building = NULL;
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
    d->state.unjournaled++;
    /* what was given up goes back to the system: the allocator would keep it */
    if (ring_memory(&d->ring) < before)
        malloc_trim(0);
    if (process_rss(&d->stats.rss) < 0)
        d->stats.rss = 0;
    d->stats.drains++;
    return 0;
}

/* Build on until the deadline (0: none); keep the snapshot once built.
 * Returns 1 when built, 0 when carried to the next drain. */
static int drain_build(struct daemon *d, int64_t deadline_ns)
{
    int r;

    if (!snapshot_build_step(d->building, deadline_ns)) {
        d->stats.drain_budget_stops++;
        d->stats.drain_records_carried += snapshot_build_left(d->building);
        return 0;
    }
    r = drain_keep(d);
    return r < 0 ? r : 1;
}

/* When a drain began: on the wall, and in the CPU time of this thread. */
struct drain_start {
    int64_t wall_ns, cpu_ns;
};

static struct drain_start drain_start(void)
{
    return (struct drain_start){clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_THREAD_CPUTIME_ID)};
}

/* The first drain is start-up's (whole: see drain_take), and counted as
 * such: a figure of drains held to the budget that took it in would show
 * start-up, not how long the load makes a drain hold the daemon. The CPU
 * time is what the budget bounds; on a loaded host the wall time is also
 * the waits for a CPU (and the flip's for an RCU grace period), which no
 * budget can bound. */
static void count_time(struct daemon *d, const struct drain_start *t0, bool startup)
{
    int64_t took = clock_ns(CLOCK_MONOTONIC) - t0->wall_ns;
    int64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0->cpu_ns;

    d->stats.drain_total_ns += took;
    if (startup) {
        d->stats.drain_startup_ns += took;
        return;
    }
    d->stats.drain_last_ns = took;
    if ((uint64_t)took > d->stats.drain_max_ns)
        d->stats.drain_max_ns = took;
    if ((uint64_t)cpu > d->stats.drain_max_cpu_ns)
        d->stats.drain_max_cpu_ns = cpu;
}

/* The generation a drain left unbuilt first, then this interval's, within
 * budget_ns (0: whole). */
static int drain_take(struct daemon *d, uint64_t budget_ns)
{
    struct drain_start t0 = drain_start();
    int64_t deadline = budget_ns ? t0.wall_ns + (int64_t)budget_ns : 0;
    bool startup = !d->stats.drains;
    int r = 1;

    /* the first drain reads kallsyms and the symbols of every program
     * running: whole, as start-up's, or the first snapshot would span the
     * seconds that takes (and a query's first catch-up would see nothing) */
    if (startup)
        deadline = 0;

    if (d->building)
        r = drain_build(d, deadline);
    /* not done: the kernel's maps keep collecting this interval meanwhile,
     * and the next flip takes it with the rest */
    if (r > 0) {
        r = drain_begin(d);
        if (r == 0)
            r = drain_build(d, deadline);
    }
    count_time(d, &t0, startup);
    return r < 0 ? r : 0;
}

/* What a drain left unbuilt, built whole (a query's window has it). */
static void drain_finish(struct daemon *d)
{
    struct drain_start t0 = drain_start();

    (void)drain_build(d, 0);
    count_time(d, &t0, false);
}

int drain_run(struct daemon *d, uint64_t budget_ns)
{
    int r = drain_take(d, budget_ns);

    /* what queries kept since the last drain too */
    state_dir_journal(&d->state);
    return r;
}

void drain_catch_up(struct daemon *d)
{
    int64_t now = clock_ns(CLOCK_MONOTONIC);

    /* The last milliseconds before a query are what an incident is about;
     * but one such drain per interval, shared by every query that wants
     * now: a flood of queries must neither flood the ring with snapshots
     * nor make every other client wait for drains. The query waits for it
     * whole, past drain-budget: an answer never leaves out what was
     * collected (a generation a timer's drain left unbuilt is built first,
     * even where no flip is due). Nothing is written here: the next timer's
     * drain journals what this one kept. */
    if (!d->collector)
        return;
    if (now - d->last_drain_mono_ns <= (int64_t)NSEC_PER_MSEC ||
        now - d->last_catch_up_mono_ns < (int64_t)d->cfg.interval_ns) {
        if (d->building)
            drain_finish(d);
        return;
    }
    d->last_catch_up_mono_ns = now;
    drain_take(d, 0);
}
