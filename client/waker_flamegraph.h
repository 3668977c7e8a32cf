/* SPDX-License-Identifier: GPL-2.0-only */
/* The flame graph of stacks with their wakers (offcpuctl wakers, why): each
 * blocked stack growing on into its waker's, the wakers' frames in aqua. */
#ifndef WAKER_FLAMEGRAPH_H
#define WAKER_FLAMEGRAPH_H

#include <jansson.h>
#include <stdio.h>

/* Writes the SVG of reply's stacks (a Wakers reply's shape) to f, titled
 * what of the selection in params, over the window [start_ns, end_ns).
 * Returns 0 or -errno. */
int waker_flamegraph_write(FILE *f, const json_t *params, const char *what, const json_t *reply,
                           int64_t start_ns, int64_t end_ns);

#endif
