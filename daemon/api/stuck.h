/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Stuck method: tasks off-CPU right now for longer than a threshold,
 * read live from the kernel (each task's switch-out record, walked by the
 * list_blocked iterator), not from the ring, with their stacks named now.
 */
#ifndef STUCK_H
#define STUCK_H

#include <jansson.h>
#include <stdint.h>

#include "daemon.h"
#include "query.h"

/* Replies are bounded: past this many tasks, the longest blocked are kept. */
#define STUCK_MAX_TASKS 2000

/* The Stuck reply for the tasks blocked for at least min_ns that q selects
 * (its pid, tid, comm, state, cgroup, uid and collapse_kernel; not its
 * window), longest blocked first; or a Varlink error. */
json_t *stuck_reply(struct daemon *d, const struct query *q, uint64_t min_ns);

#endif
