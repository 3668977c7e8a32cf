/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Fair room in the ring. Over the memory limit, the cgroup that holds the
 * most gives first: its oldest snapshots lose their stacks (each record's
 * time is kept, charged to a "[stacks over budget]" stack of the same
 * thread and state, and records that then agree are merged), before anyone's
 * snapshot is dropped whole. One cgroup's stack explosion thus costs its own
 * detail, not the others' history.
 */
#ifndef RING_BUDGET_H
#define RING_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/* Coarsen the biggest consumers' oldest snapshots until the ring, with
 * incoming bytes more (a snapshot about to be pushed), is within its limit,
 * or nothing is left to coarsen; only then does ring_push drop snapshots
 * whole. Counts the records that lost their stacks in r->coarsened_records. */
void ring_budget_make_room(struct ring *r, size_t incoming);

struct ring_consumer {
    uint32_t cgroup; /* string id */
    size_t bytes;    /* records and their share of the stacks */
    size_t records;
};

/* The n cgroups holding the most, largest first; returns how many there are
 * (at most n). */
size_t ring_budget_top(const struct ring *r, struct ring_consumer *ret, size_t n);

#endif
