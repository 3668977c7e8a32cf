/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Turning a drained generation into a snapshot: every frame is named now,
 * while its process still runs, and names and stacks are interned. The
 * build can stop at a deadline and go on later (the drain's budget), as long
 * as the drained generation stays as it is.
 */
#ifndef SNAPSHOT_BUILD_H
#define SNAPSHOT_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "cgroups.h"
#include "collector.h"
#include "ring.h"
#include "symbolizer.h"

struct snapshot_stats {
    uint64_t records;
    uint64_t orphan_stacks; /* a key named a stack the drain did not hold */
    uint64_t python_stacks;  /* CPython threads' stacks named, with their Python frames */
    uint64_t python_unwoven; /* ... whose Python frames did not pair with the interpreter's */
};

struct snapshot_builder;

/* Begin the snapshot of d: nothing is built yet. */
int snapshot_build_begin(const struct drained *d, struct symbolizer *sym, struct cgroups *cg,
                         struct intern *in, struct snapshot_stats *stats,
                         struct snapshot_builder **ret);

/* Build on until deadline_ns (CLOCK_MONOTONIC; 0: none). True when done. */
bool snapshot_build_step(struct snapshot_builder *b, int64_t deadline_ns);

/* Records (and wakers' pairs, each side) not built yet. */
size_t snapshot_build_left(const struct snapshot_builder *b);

/* The snapshot, once snapshot_build_step said done; frees b. */
struct snapshot *snapshot_build_end(struct snapshot_builder *b);

/* Frees b and what it built; returns NULL. */
struct snapshot_builder *snapshot_build_abandon(struct snapshot_builder *b);

/* The whole build at once. */
int snapshot_build(const struct drained *d, struct symbolizer *sym, struct cgroups *cg,
                   struct intern *in, struct snapshot **ret, struct snapshot_stats *stats);

#endif
