/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A flame tree as one self-contained, interactive SVG file: frames as wide as
 * their off-CPU time, the root at the bottom, a title saying what was asked,
 * and the script of flamegraph.js (zoom, search, details) inside the file.
 */
#ifndef SVG_FLAMEGRAPH_H
#define SVG_FLAMEGRAPH_H

#include <stdio.h>

#include "flame_tree.h"
#include "timeline.h"

enum svg_colors {
    SVG_COLOR_FRAMES, /* by kind: user, "-", kernel */
    SVG_COLOR_STATES, /* by the state most of a frame's time was spent in (a tree by_state) */
    SVG_COLOR_DIFF,   /* by change from window FLAME_BEFORE to FLAME_NOW, per second */
};

struct svg_flamegraph {
    const char *title;    /* what was asked */
    const char *subtitle; /* the window, or both windows of a diff */
    enum svg_colors colors;
    double now_s, before_s;          /* SVG_COLOR_DIFF: the length of each window */
    double min_px;                   /* frames narrower than this are merged */
    size_t max_frames;               /* and more, until no more than this many are drawn */
    size_t max_bytes;                /* and the frames' text is no larger than this */
    const struct timeline *timeline; /* drawn as a strip above; or NULL */
};

#define SVG_MIN_PX     0.1
#define SVG_MAX_FRAMES 40000
/* the frames of the whole machine in under 10 MB, with room for the rest */
#define SVG_MAX_BYTES (9u << 20)

/* The share of the whole time a frame px pixels wide stands for. */
double svg_flamegraph_share(double px);

/* Returns 0, or -errno (-ENOMEM; -EIO when f could not be written). */
int svg_flamegraph_write(FILE *f, const struct flame_tree *t, const struct svg_flamegraph *o);

#endif
