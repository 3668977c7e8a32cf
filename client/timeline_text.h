/* SPDX-License-Identifier: GPL-2.0-only */
/* A timeline for the terminal: a sparkline per task state, then a table. */
#ifndef TIMELINE_TEXT_H
#define TIMELINE_TEXT_H

#include <stdio.h>

#include "timeline.h"

/* Writes title, the sparklines (one character per interval, each row on
 * the scale of its own busiest interval, said at its end; "░" where the
 * daemon was not running), the intervals it was not running, and one line
 * per interval ("no data" for those). */
void timeline_text_write(FILE *f, const struct timeline *tl, const char *title);

#endif
