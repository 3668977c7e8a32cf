/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Turning a drained generation into a snapshot: every frame is named now,
 * while its process still runs, and names and stacks are interned.
 */
#ifndef SNAPSHOT_BUILD_H
#define SNAPSHOT_BUILD_H

#include <stdint.h>

#include "cgroups.h"
#include "collector.h"
#include "ring.h"
#include "symbolizer.h"

struct snapshot_stats {
    uint64_t records;
    uint64_t orphan_stacks; /* a key named a stack the drain did not hold */
};

int snapshot_build(const struct drained *d, struct symbolizer *sym, struct cgroups *cg,
                   struct intern *in, struct snapshot **ret, struct snapshot_stats *stats);

#endif
