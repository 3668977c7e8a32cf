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

struct record {
    uint64_t total_ns;
    uint64_t count;
    uint32_t tgid;
    uint32_t tid;
    uint32_t comm;   /* string id */
    uint32_t cgroup; /* string id of the cgroup path, 0 when unknown */
    uint32_t ustack; /* stack id, root first; 0 for kernel threads */
    uint32_t kstack; /* stack id, root first */
    /* stack id: where each user frame lies, two strings per frame, "0xOFFSET"
     * and "BUILD_ID PATH" (see symbolizer_user_frame), both "" outside
     * files; 0 when not known */
    uint32_t uwhere;
    uint32_t uid; /* whose process; UID_UNKNOWN if not known */
    char state;   /* enum offcpu_state */
};

#define UID_UNKNOWN UINT32_MAX

struct snapshot {
    int64_t start_ns; /* CLOCK_REALTIME: [start_ns, end_ns) */
    int64_t end_ns;
    uint32_t n;
    struct record records[];
};

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

/* The memory s holds in the ring besides its strings and stacks. */
size_t snapshot_bytes(const struct snapshot *s);

/* Drop references held by s and free it. */
void snapshot_free(struct intern *in, struct snapshot *s);

size_t ring_memory(const struct ring *r);

/* Evict what is past retention at now_ns, or over the memory limit. */
void ring_expire(struct ring *r, int64_t now_ns);

#endif
