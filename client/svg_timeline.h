/* SPDX-License-Identifier: GPL-2.0-only */
/* A timeline as a strip of stacked bars (one per interval, coloured by task
 * state), for the top of a flame graph: when in the window the time went. */
#ifndef SVG_TIMELINE_H
#define SVG_TIMELINE_H

#include <stdio.h>

#include "timeline.h"

/* Draws into the box (x, y, w, h), in px, with a line of legend above it. */
void svg_timeline_write(FILE *f, const struct timeline *tl, double x, double y, double w, double h);

#endif
