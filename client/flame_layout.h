/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where each frame of a flame tree goes: boxes in rows by depth, each as wide
 * as its width (its time, or a diff's larger time), children left to right
 * in name order (as flamegraph.pl and inferno do: the same stacks give the
 * same picture). Children narrower than a minimum are merged into one box
 * after their wider siblings, so that the picture stays legible and its size
 * bounded whatever the number of stacks.
 */
#ifndef FLAME_LAYOUT_H
#define FLAME_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "flame_tree.h"

struct flame_box {
    uint32_t node;   /* the frame drawn; for a merged box, the parent of those merged */
    uint32_t merged; /* how many frames this box stands for; 0: the frame node itself */
    uint32_t depth;  /* 0: the root */
    uint64_t x;      /* the width (flame_node.width) left of it */
    uint64_t width;
    uint64_t ns[FLAME_WINDOWS];
};

struct flame_layout {
    struct flame_box *boxes; /* parents before their children */
    size_t n, cap;
    unsigned max_depth;
    uint64_t min_ns; /* the narrowest frame drawn on its own */
};

/* Lays out t by its nodes' widths: a frame narrower than min_ns is merged;
 * if more than max_boxes would be drawn, the minimum is raised until they
 * fit (roughly: merged boxes may add up to one per drawn frame). Returns 0
 * or -ENOMEM. */
int flame_layout_make(struct flame_layout *l, const struct flame_tree *t, uint64_t min_ns,
                      size_t max_boxes);
void flame_layout_done(struct flame_layout *l);

/* Of max_boxes, how many frames are drawn apart at most: only frames wider
 * than the widest beyond that many are (ties merge too). */
size_t flame_layout_apart(size_t max_boxes);

#endif
