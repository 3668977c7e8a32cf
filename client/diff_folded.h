/* SPDX-License-Identifier: GPL-2.0-only */
/* Two Dump replies of the same selection side by side, stack by stack, in
 * the format of flamegraph's difffolded: "stack BEFORE AFTER", each value
 * microseconds of off-CPU time per second of its window, so that windows of
 * different lengths compare. */
#ifndef DIFF_FOLDED_H
#define DIFF_FOLDED_H

#include <jansson.h>
#include <stdio.h>

/* The length of a reply's window in seconds (what its snapshots cover). */
double diff_window_seconds(const json_t *reply);

/* One line per stack found in either reply, the largest change (grown or
 * shrunk) first, then by stack; a stack rounding to 0
 * in both is left out. Returns the number of lines, or -ENOMEM. */
int diff_folded_write(FILE *f, const json_t *before, const json_t *after);

/* The same as JSON: [{"stack": "comm;...;-;...", "before": US_PER_S (to 0.001),
 * "after": US_PER_S}], in the same order. NULL: no memory. */
json_t *diff_folded_json(const json_t *before, const json_t *after);

#endif
