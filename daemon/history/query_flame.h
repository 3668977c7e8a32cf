/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A query's stacks merged into the tree a flame graph draws, in the daemon:
 * a whole window of a busy machine holds 100,000 distinct stacks, and sending
 * them all to have them merged by the client took seconds. The tree is the
 * one offcpuctl builds from a Dump (client/flame_tree.h): a root, each thread
 * name, its user frames root first, "-", then the kernel frames. Frames
 * narrower than a minimum are not kept one by one: the narrow children of a
 * frame are summed into one summary frame that says how many they were, which
 * is all a graph drawing such frames merged needs of them.
 */
#ifndef QUERY_FLAME_H
#define QUERY_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intern.h"
#include "query.h"
#include "query_timeline.h"

enum flame_frame_kind {
    FLAME_FRAME_ROOT,
    FLAME_FRAME_COMM,
    FLAME_FRAME_USER,
    FLAME_FRAME_SEPARATOR, /* "-", between the user and the kernel frames */
    FLAME_FRAME_KERNEL,
    FLAME_FRAME_NARROW, /* the summary of a frame's narrow children */
};

/* The name of a frame that is no interned string: a kernel stack collapsed
 * for a caller who may not see kernel frames ("[kernel]"), and the rest. */
#define FLAME_NAME_NONE             0
#define FLAME_NAME_KERNEL_COLLAPSED UINT32_MAX

struct flame_frame {
    uint32_t parent; /* an earlier frame's index; the root's is UINT32_MAX */
    uint32_t name;   /* an interned string id, or FLAME_NAME_* */
    uint32_t kind;   /* enum flame_frame_kind */
    uint32_t merged; /* FLAME_FRAME_NARROW: how many frames it sums */
    uint64_t ns;     /* the time of the stacks through it */
};

struct flame_result {
    struct flame_frame *frames; /* frames[0] is the root; parents before children */
    size_t n;
    /* with by_state: per frame, its time by the index in PROTOCOL_STATES */
    uint64_t (*state_ns)[TIMELINE_STATES];
};

/* A share of the whole, in parts per billion. */
#define FLAME_PPB 1000000000ULL

/* Merges rows (of a query_run) into res: frames at least min_ppb of the
 * whole wide kept one by one, the others summed per parent. max_frames (0:
 * any): if more would be kept, only those wider than the (max_frames + 1)-th
 * widest are, as a graph drawing at most that many frames apart would.
 * by_state: keep each frame's time by the rows' state. Returns 0 or -ENOMEM. */
int query_flame(const struct query_result *rows, const struct intern *in, bool by_state,
                uint64_t min_ppb, size_t max_frames, struct flame_result *res);
void flame_result_done(struct flame_result *res);

#endif
