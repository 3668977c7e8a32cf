/* SPDX-License-Identifier: GPL-2.0-only */
/* What offcpuctl prints: folded stacks and the human form of status. */
#ifndef RENDER_H
#define RENDER_H

#include <jansson.h>
#include <stdio.h>

/* One line per stack of a Dump reply, sorted, in the folded format:
 * "comm;user-root;...;user-leaf;-;kernel-root;...;kernel-leaf VALUE_US".
 * Fields the stacks were grouped by follow comm as "[pid N]", "[tid N]",
 * "[state S]", "[cgroup PATH]". Returns the number of lines, or -errno. */
int render_folded(FILE *f, const json_t *reply);

/* A duration as people read it, to a tenth of its unit: "2.5ms", "47.2s". */
const char *render_ns(json_int_t ns, char *buf, size_t size);

/* A CLOCK_REALTIME time in ns as the local "YYYY-MM-DD HH:MM:SS". */
const char *render_time(json_int_t ns, char *buf, size_t size);

/* A stack of a reply as "comm;user-root;...;-;...;kernel-leaf" (malloc'd;
 * NULL when out of memory): what tells stacks apart, for people. */
char *render_stack(const json_t *stack);

/* Status as aligned "name: value" lines. */
int render_status(FILE *f, const json_t *status);

#endif
