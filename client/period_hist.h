/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Histograms of single off-CPU periods, as the daemon gives them (hist: counts
 * by log2 bucket of microseconds, see io.offcpud.varlink): summed over rows
 * and drawn as bcc's cpudist -O and offcputime draw theirs.
 */
#ifndef PERIOD_HIST_H
#define PERIOD_HIST_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* As many buckets as the daemon has (it never sends more). */
#define PERIOD_HIST_BUCKETS 64

struct period_hist {
    uint64_t n[PERIOD_HIST_BUCKETS];
    uint64_t count, total_ns, max_ns;
};

/* Add a Stack's or Row's hist, count, total_ns and max_ns to h. */
void period_hist_add(struct period_hist *h, const json_t *row);

/* "     usecs : count  distribution" lines, from the first bucket used to the
 * last, then the number of periods, their total and the longest. */
void period_hist_print(FILE *f, const struct period_hist *h);

/* {"hist": [...], "count", "total_ns", "max_ns"}. */
json_t *period_hist_json(const struct period_hist *h);

#endif
