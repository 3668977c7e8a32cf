/* SPDX-License-Identifier: GPL-2.0-only */
/* The human form of a Stuck reply: per task, who, in which state since when
 * and where, then its stack, leaf first as the kernel reports hung tasks. */
#ifndef RENDER_STUCK_H
#define RENDER_STUCK_H

#include <jansson.h>
#include <stdio.h>

/* Returns the number of tasks written. */
int render_stuck(FILE *f, const json_t *reply);

#endif
