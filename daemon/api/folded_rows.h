/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A query's rows as folded stacks (folded.h), for the Folded method, in few
 * bytes and few JSON values: each name once (names), each path of frames
 * once as the indexes of its names (paths), each head once (heads), and the
 * stacks by column: head, user and kernel path indexes, times. A whole
 * window's Dump repeats every frame's name in every stack: 75 MB of JSON for
 * 100k stacks, most of the time of both ends; parsing an object a stack was
 * most of what was left.
 */
#ifndef FOLDED_ROWS_H
#define FOLDED_ROWS_H

#include <jansson.h>

#include "intern.h"
#include "query.h"

/* Sets names, paths, heads and stacks of reply from res's rows, grouped by
 * group_by. -ENOMEM when out of memory. */
int folded_rows_set(json_t *reply, const struct intern *in, const struct query_result *res,
                    unsigned group_by);

#endif
