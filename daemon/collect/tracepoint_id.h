/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The id of tracepoint category/name (what tracefs's events/CATEGORY/NAME/id
 * says) where tracefs is not mounted: read by a child from a tracefs it mounts
 * in a mount namespace of its own, so nothing is mounted where anyone sees it.
 * The id, or a negative errno. */
long tracepoint_id_unmounted(const char *category, const char *name);

/* A perf event on tracepoint id, for any task on any CPU, for a BPF program to
 * attach to (bpf_program__attach_perf_event): its fd, or a negative errno. */
int tracepoint_perf_event(long id);
