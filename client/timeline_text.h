/* SPDX-License-Identifier: GPL-2.0-only */
/* A timeline for the terminal: a sparkline per task state, then a table. */
#ifndef TIMELINE_TEXT_H
#define TIMELINE_TEXT_H

#include <stdio.h>

#include "timeline.h"

/* Writes title, the sparklines (one character per interval, all on the
 * scale of the busiest interval) and one line per interval. */
void timeline_text_write(FILE *f, const struct timeline *tl, const char *title);

#endif
