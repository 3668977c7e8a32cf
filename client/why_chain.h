/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The chains of offcpuctl why: for a selection's longest waits, who woke
 * whom, from offcpud's waker pairs (Wakers) of one window.
 *
 * A pair is (the woken thread's blocked stacks and state, its waker's
 * thread and stacks, the time blocked). A chain starts at one of the
 * selection's waits; its first hop is that wait's waker. A task waker is
 * asked for its own waits in the same window, each with its waker, and the
 * longest of them is followed to the next hop, until a hop was not blocked
 * in the window (it ran on CPU), was an interrupt (a timer, an I/O
 * completion), was not seen in the window at all, is one the caller may not
 * see (withheld: named, no stacks), or came round again. The join is by
 * thread over the window, not by instant: the kernel keeps sums, not
 * events, so "itself blocked" means blocked during the window.
 */
#ifndef WHY_CHAIN_H
#define WHY_CHAIN_H

#include <jansson.h>

#include "cli.h"

/* Bounds on the calls one why makes: chains followed, hops per chain,
 * waits listed per hop. */
#define WHY_MAX_CHAINS 8
#define WHY_MAX_HOPS   6
#define WHY_HOP_WAITS  3

/* The answer for the selection in params (a Wakers request): the object
 * offcpuctl why --json prints (see offcpuctl(1)), into *ret (owned), or
 * NULL with EXIT_OK when the selection has no waker pairs. Returns the exit
 * code; failures print their message. */
int why_chains(const struct globals *g, const json_t *params, json_t **ret);

#endif
