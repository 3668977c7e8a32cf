/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The unwind tables, kept on a thread of their own: a table is wanted while
 * the process that asked is blocked, and a drain (seconds, in a stack
 * explosion) must not hold it up. The thread reads the BPF side's requests
 * (an exec, an address space or address a table does not know) from their
 * own ring buffer and answers them; nothing else touches the tables.
 */
#ifndef UNWIND_WORKER_H
#define UNWIND_WORKER_H

#include "unwind_tables.h"

struct unwind_worker;

/* Serve the requests of the ring buffer asks_fd with t, which the worker
 * owns from now on (freed with it). */
int unwind_worker_start(struct unwind_tables *t, int asks_fd, struct unwind_worker **ret);
/* Stop and join the thread; free the tables. */
struct unwind_worker *unwind_worker_stop(struct unwind_worker *w);

/* An RCU grace period has ended (after a flip): rows freed long enough ago
 * can be reused, gone processes forgotten. Returns at once. */
void unwind_worker_grace_period(struct unwind_worker *w);

void unwind_worker_get_stats(struct unwind_worker *w, struct unwind_tables_stats *ret);

#endif
