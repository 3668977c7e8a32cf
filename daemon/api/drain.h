/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's one periodic job: flip, drain, name, and keep a generation.
 * Naming a generation stops at a time budget: clients wait while it runs.
 * What is left is built first at the next drain, and no flip happens until
 * it is done (the kernel's maps go on collecting meanwhile), so that nothing
 * is lost, only later.
 */
#ifndef DRAIN_H
#define DRAIN_H

#include "daemon.h"

/* Finish the generation left unbuilt, then flip, drain, name and keep this
 * interval's, within budget_ns (0: whole); journal what was kept since the
 * last drain (a query's catch-up included). */
int drain_run(struct daemon *d, uint64_t budget_ns);

/* For a query whose window reaches now: the generation still being collected
 * too (after one left unbuilt), within the budget, into memory only; unless
 * a drain has just been made, or one was made for a query less than an
 * interval ago. */
void drain_catch_up(struct daemon *d);

#endif
