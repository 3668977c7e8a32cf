/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Off-CPU time as Prometheus counters: seconds and switches per cgroup (with
 * the systemd unit owning it) and task state, summed over every snapshot
 * drained. No pids, no stacks, no command lines: nothing a member of the
 * socket's group could not read already.
 *
 * Cardinality is bounded: at most max_cgroups cgroups have series of their
 * own, those with the most recent off-CPU time; the time of the others is
 * charged to cgroup="other". Every series only grows: time is charged to the
 * series a cgroup has when it is drained, so a cgroup that loses its series
 * (its time goes to "other" from then on) or gains one (starting from what
 * it had) never makes a counter go back.
 */
#ifndef METRICS_H
#define METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "intern.h"
#include "ring.h"

struct metrics;

int metrics_new(uint32_t max_cgroups, struct metrics **ret);
struct metrics *metrics_free(struct metrics *m);

void metrics_set_max_cgroups(struct metrics *m, uint32_t max_cgroups);

/* Count what a drained snapshot holds (its strings from in). */
int metrics_add(struct metrics *m, const struct snapshot *s, const struct intern *in);

/* The cgroups whose time goes to "other" now. */
uint32_t metrics_folded(const struct metrics *m);

/* The series in Prometheus's text format. */
int metrics_write(const struct metrics *m, FILE *f);

/* Write ns as seconds, exactly (nine decimals). */
void metrics_write_seconds(FILE *f, uint64_t ns);

/* Write s as a label value: quotes and backslashes escaped, and what is not
 * printable ASCII as '?' (a cgroup's name may be any bytes). */
void metrics_write_label(FILE *f, const char *s);

#endif
