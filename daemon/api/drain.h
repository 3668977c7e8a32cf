/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's one periodic job: flip, drain, name, and keep a generation. */
#ifndef DRAIN_H
#define DRAIN_H

#include "daemon.h"

/* Flip, drain, name and keep one generation. */
int drain_run(struct daemon *d);

/* For a query whose window reaches now: the generation still being collected
 * too, unless a drain has just been made, or one was made for a query less
 * than an interval ago. */
void drain_catch_up(struct daemon *d);

#endif
