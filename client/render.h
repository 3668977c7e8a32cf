/* SPDX-License-Identifier: GPL-2.0-only */
/* What offcpuctl prints: folded stacks and the human form of status. */
#ifndef RENDER_H
#define RENDER_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* One line per stack of a Dump reply, sorted, in the folded format:
 * "comm;user-root;...;user-leaf;-;kernel-root;...;kernel-leaf VALUE_US".
 * Fields the stacks were grouped by follow comm as "[pid N]", "[tid N]",
 * "[state S]", "[cgroup PATH]". Returns the number of lines, or -errno. */
int render_folded(FILE *f, const json_t *reply);

/* The stack of a folded line, without its value (malloc'd; NULL: no memory). */
char *render_folded_stack(const json_t *stack);

/* Status as aligned "name: value" lines. */
int render_status(FILE *f, const json_t *status);

/* ns in the unit that suits it: "812.0us", "12.5ms", "3.2s". Returns buf. */
const char *render_ns(int64_t ns, char *buf, size_t size);

/* A CLOCK_REALTIME time in ns as local "YYYY-MM-DD HH:MM:SS". Returns buf. */
const char *render_time(int64_t ns, char *buf, size_t size);

/* A window as "2026-11-24 18:00:00 to 18:01:00 (60.0s)". Returns buf. */
const char *render_window(int64_t start_ns, int64_t end_ns, char *buf, size_t size);

#endif
