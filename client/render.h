/* SPDX-License-Identifier: GPL-2.0-only */
/* What offcpuctl prints: folded stacks and the human form of status. */
#ifndef RENDER_H
#define RENDER_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* Which time of a stack to show: all its off-CPU time; the part it was
 * blocked (switch-out to wakeup); or the part it waited, runnable, for a CPU
 * (wakeup or preemption to switch-in: run-queue latency). */
enum stack_time { STACK_TIME_TOTAL, STACK_TIME_BLOCKED, STACK_TIME_RUNQ };

/* "total", "blocked", "runq" to enum stack_time; -EINVAL for another word. */
int stack_time_parse(const char *s, enum stack_time *ret);

/* That time of a stack (or row) of a reply, in ns. */
int64_t stack_time_ns(const json_t *stack, enum stack_time which);

/* How many stacks a reply has: a Dump's or Wakers' (an array of them) or
 * a Folded's (by column, io.offcpud.varlink: FoldedStacks). */
size_t reply_stacks_count(const json_t *reply);

/* That time of a stack that had total_ns, runq_ns of it waiting for a CPU. */
int64_t stack_time_of(int64_t total_ns, int64_t runq_ns, enum stack_time which);

/* The stack of a folded line, without its value (malloc'd; NULL: no memory).
 * A Wakers stack has its waker after "--" (see put_waker). */
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
