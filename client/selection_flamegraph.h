/* SPDX-License-Identifier: GPL-2.0-only */
/* The flame graph of a selection, as offcpuctl flamegraph and dump --format
 * svg write it: the tree of frames (Flame) and the timeline asked of the
 * daemon, the graph drawn here (the daemon never builds SVGs). */
#ifndef SELECTION_FLAMEGRAPH_H
#define SELECTION_FLAMEGRAPH_H

#include <jansson.h>
#include <stdio.h>

#include "cli.h"
#include "svg_flamegraph.h"

struct flamegraph_request {
    enum svg_colors colors; /* SVG_COLOR_FRAMES or SVG_COLOR_STATES */
    double min_px;
    bool timeline; /* draw the timeline strip above */
};

/* What was written, for a summary. */
struct flamegraph_written {
    size_t stacks;
    uint64_t total_ns;
};

/* Asks for params' tree of frames (params gains group_by state for SVG_COLOR_STATES)
 * and writes the SVG to out. Returns an exit code after a one-line message. */
int selection_flamegraph(const struct globals *g, json_t *params,
                         const struct flamegraph_request *req, FILE *out,
                         struct flamegraph_written *written);

#endif
