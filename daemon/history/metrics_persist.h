/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The metrics' totals in the ring file, so that a restart that restores the
 * ring does not send offcpud_off_cpu_seconds_total back to zero (Prometheus
 * reads a drop as a counter reset and would count the whole total again).
 *
 *   u32 nstates, the state letters (PROTOCOL_STATES of the writer)
 *   u32 nseries, then each: u32 flags (1 exported, 2 "other"), u32 len,
 *   cgroup bytes, f64 recent, u64 ns[nstates], u64 switches[nstates],
 *   (codec version 4 on) u64 runq_ns[nstates]
 *
 * States are matched by letter, so that a daemon knowing other states reads
 * it too (what it does not know counts as '?').
 */
#ifndef METRICS_PERSIST_H
#define METRICS_PERSIST_H

#include "metrics.h"
#include "snapshot_codec.h"

/* The section for m; with no m (metrics off), an empty one. */
void metrics_put(struct codec_writer *w, const struct metrics *m);

/* Read the section into m (a fresh one), or only check it without m.
 * -EBADMSG when it does not read. */
int metrics_take(struct codec_reader *rd, struct metrics *m);

#endif
