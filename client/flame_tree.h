/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stacks of Dump replies merged into one tree of frames, the shape a flame
 * graph draws: a root, then each thread name, its user frames root first,
 * the "-" between user and kernel, and the kernel frames. A Wakers reply's
 * stacks go on past the kernel's leaf, as offwaketime folds them: "--", the
 * waker's kernel frames and "-" and user frames, leaf first, and its name;
 * a stack's "chain", frames drawn on past that as the waker's (offcpuctl
 * why: the later hops of a chain of wakers).
 * A node's time is the sum of the stacks through it. A tree holds two sets
 * of times, so that a diff can compare two windows frame by frame, and the
 * width a graph draws it at.
 */
#ifndef FLAME_TREE_H
#define FLAME_TREE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum flame_kind {
    FLAME_ROOT,
    FLAME_COMM,
    FLAME_USER,
    FLAME_SEPARATOR,
    FLAME_KERNEL,
    FLAME_WAKER,  /* the waker's part of a Wakers stack: "--" on */
    FLAME_PYTHON, /* a user frame of Python's: told by its name, for colour only */
};

/* Which of a node's two times: the window drawn, and a diff's earlier one. */
enum flame_window { FLAME_NOW, FLAME_BEFORE, FLAME_WINDOWS };

/* The task states a node's time is split by (flame_tree_init's by_state),
 * in this order; any other state counts as the last, "other". */
#define FLAME_STATES      "SDRI"
#define FLAME_STATE_COUNT 5

#define FLAME_NONE UINT32_MAX

struct flame_node {
    const char *name; /* borrowed from the replies added */
    uint32_t parent, first_child, next_sibling;
    enum flame_kind kind;
    uint64_t ns[FLAME_WINDOWS];
    /* what a graph draws: ns[FLAME_NOW], or after flame_tree_diff_widths the
     * larger window's time stack by stack */
    uint64_t width;
    /* > 0: not a frame but that many narrow frames, merged by the daemon
     * (a Flame reply): always drawn merged */
    uint32_t merged;
};

struct flame_tree {
    struct flame_node *nodes; /* nodes[0] is the root */
    size_t n, cap;
    uint64_t (*state_ns)[FLAME_STATE_COUNT]; /* per node (window FLAME_NOW), or NULL */
    size_t state_cap;
    /* open addressing: the child of a parent by name, and names by text */
    uint32_t *children;
    size_t children_size;
    const char **names;
    size_t names_size, names_n;
};

/* by_state: keep each node's time split by the stacks' "state" (a Dump
 * grouped by state). Returns 0 or -ENOMEM. */
int flame_tree_init(struct flame_tree *t, bool by_state);
void flame_tree_done(struct flame_tree *t);

/* Adds the stacks of a Dump reply to window w. The reply's strings are
 * borrowed: it must outlive the tree. Returns 0, -ENOMEM, or -EINVAL for a
 * stack without frames' arrays or time. */
int flame_tree_add(struct flame_tree *t, const json_t *reply, enum flame_window w);

/* Adds the frames of a Flame reply (the daemon's tree, narrow frames merged)
 * to window FLAME_NOW of t, a tree just initialised. The reply's strings are
 * borrowed: it must outlive the tree. Returns 0, -ENOMEM, or -EINVAL for a
 * frame without a parent before it, a name or time. */
int flame_tree_add_frames(struct flame_tree *t, const json_t *reply);

/* Sets each node's width to the sum, over the stacks through it, of the
 * larger of its two times, FLAME_BEFORE's times before_scale (the ratio of
 * the windows' lengths, so that both count per second of the later one): a
 * diff's graph then draws what grew, what shrank and what vanished, each at
 * its larger size. Sums over stacks, not the larger of a frame's two sums:
 * children must fit in their parent. */
void flame_tree_diff_widths(struct flame_tree *t, double before_scale);

/* The index in FLAME_STATES of a state letter (FLAME_STATE_COUNT - 1: other). */
unsigned flame_state_index(const char *state);

#endif
