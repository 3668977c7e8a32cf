/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Histograms of single off-CPU periods (log2 buckets of microseconds, see
 * OFFCPU_HIST_BUCKETS), as records keep them: interned text, "BUCKET:COUNT"
 * pairs for the buckets used, by bucket, separated by spaces. Few buckets are
 * ever used, and a periodic wait has the same histogram interval after
 * interval: as a string it costs a record 4 bytes, is stored once, and goes
 * through the ring file and the journal as every string does.
 */
#ifndef HISTOGRAM_H
#define HISTOGRAM_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h> /* for offcpu.h */

#include "intern.h"
#include "offcpu.h"

#define HISTOGRAM_BUCKETS OFFCPU_HIST_BUCKETS

struct histogram {
    uint64_t n[HISTOGRAM_BUCKETS];
};

/* Whether text is a histogram's text (what a state file holds is checked). */
bool histogram_text_valid(const char *text);

/* Add the histogram of text (valid) to h. */
void histogram_add_text(struct histogram *h, const char *text);

/* The interned text of h, with a reference of its own; 0 for an empty h,
 * or when out of memory (the histogram is then not kept). */
uint32_t histogram_intern(struct intern *in, const struct histogram *h);

/* Of counts as the kernel keeps them. */
void histogram_from_counts(struct histogram *h, const uint32_t counts[HISTOGRAM_BUCKETS]);

#endif
