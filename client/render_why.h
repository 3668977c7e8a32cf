/* SPDX-License-Identifier: GPL-2.0-only */
/* What offcpuctl why prints: its chains as text, and as the stacks of a
 * flame graph, each wait growing on into its chain of wakers. */
#ifndef RENDER_WHY_H
#define RENDER_WHY_H

#include <jansson.h>
#include <stdio.h>

/* The answer of why_chains() for a terminal. Returns 0 or -errno. */
int render_why(FILE *f, const json_t *why);

/* The chains as a Wakers reply's stacks: each the chain's wait, its first
 * hop as the waker, and the later hops in "chain" (frames to draw on past
 * the waker's name, see flame_tree.h). Returns a new reply or NULL. */
json_t *why_flame_stacks(const json_t *why);

#endif
