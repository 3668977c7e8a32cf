/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The snapshot ring: one snapshot per drained generation, oldest first,
 * bounded by retention (age) and by memory. Names and stacks are interned
 * once and shared by all snapshots.
 */
#ifndef RING_H
#define RING_H

#include <stddef.h>
#include <stdint.h>

#include "intern.h"
#include "snapshot.h"

struct ring {
    struct intern intern;
    struct snapshot **snaps; /* oldest first */
    size_t n, cap;
    uint64_t retention_ns;
    size_t memory_limit;
    size_t records_bytes;
    uint64_t evicted_retention;
    uint64_t evicted_memory;
    uint64_t coarsened_records; /* records whose stacks were taken to make room */
};

void ring_init(struct ring *r, uint64_t retention_ns, size_t memory_limit);
void ring_done(struct ring *r);

/* Append s (the ring takes it and the references its records hold), then
 * evict what is past retention or over the memory limit. */
int ring_push(struct ring *r, struct snapshot *s, int64_t now_ns);

size_t ring_memory(const struct ring *r);

/* Evict what is past retention at now_ns, or over the memory limit. */
void ring_expire(struct ring *r, int64_t now_ns);

#endif
