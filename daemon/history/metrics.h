/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Off-CPU time as Prometheus counters: seconds (all, and of them those
 * waiting for a CPU) and switches per cgroup (with
 * the systemd unit owning it) and task state, summed over every snapshot
 * drained. No pids, no stacks, no command lines: nothing a member of the
 * socket's group could not read already.
 *
 * Cardinality is bounded: at most max_cgroups cgroups have series of their
 * own, those with the most recent off-CPU time; the time of the others is
 * charged to cgroup="other". Every series only grows: time is charged to the
 * series a cgroup has when it is drained, so a cgroup that loses its series
 * (its time goes to "other" from then on) or gains one (starting from what
 * it had) never makes a counter go back.
 */
#ifndef METRICS_H
#define METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "intern.h"
#include "protocol.h"
#include "ring.h"

struct metrics;

#define METRICS_NSTATES (sizeof(PROTOCOL_STATES) - 1)

/* A series' totals, by task state in PROTOCOL_STATES order. */
struct metrics_counters {
    uint64_t ns[METRICS_NSTATES];
    uint64_t switches[METRICS_NSTATES];
    uint64_t runq_ns[METRICS_NSTATES]; /* of ns, waiting for a CPU */
};

int metrics_new(uint32_t max_cgroups, struct metrics **ret);
struct metrics *metrics_free(struct metrics *m);

/* Back to no series at all, as if new. */
void metrics_reset(struct metrics *m);

void metrics_set_max_cgroups(struct metrics *m, uint32_t max_cgroups);

/* Count what a drained snapshot holds (its strings from in). */
int metrics_add(struct metrics *m, const struct snapshot *s, const struct intern *in);

/* What a series holds, for the state files: the counters stay monotonic
 * across a restart only if they outlive the process. */
struct metrics_series_state {
    const char *cgroup; /* NULL for cgroup="other" */
    struct metrics_counters c;
    double recent; /* ns, decayed: what ranks it */
    bool exported;
};

/* Every series, "other" last. */
size_t metrics_series_count(const struct metrics *m);
void metrics_series_at(const struct metrics *m, size_t i, struct metrics_series_state *ret);

/* Give a series (of a fresh m) what a previous instance counted. */
int metrics_series_restore(struct metrics *m, const struct metrics_series_state *s);

/* The cgroups whose time goes to "other" now. */
uint32_t metrics_folded(const struct metrics *m);

/* The series in Prometheus's text format. */
int metrics_write(const struct metrics *m, FILE *f);

/* Write ns as seconds, exactly (nine decimals). */
void metrics_write_seconds(FILE *f, uint64_t ns);

/* Write s as a label value: quotes and backslashes escaped, and what is not
 * printable ASCII as '?' (a cgroup's name may be any bytes). */
void metrics_write_label(FILE *f, const char *s);

#endif
