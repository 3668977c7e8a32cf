/* SPDX-License-Identifier: GPL-2.0-only */
/* A timeline as a strip, for the top of a flame graph: when in the window
 * the time went. A row per task state, each on its own scale (its largest
 * interval said on it), a bar per interval; hatched where the daemon was not
 * running. */
#ifndef SVG_TIMELINE_H
#define SVG_TIMELINE_H

#include <stdio.h>

#include "timeline.h"

/* Draws into the box (x, y, w, h), in px, with a line of legend above it. */
void svg_timeline_write(FILE *f, const struct timeline *tl, double x, double y, double w, double h);

#endif
