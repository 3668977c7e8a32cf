/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl top's table: off-CPU time per process, thread, cgroup, unit,
 * comm or stack, in columns per task state, with the time of it spent
 * waiting for a CPU (run-queue latency) and the share of the window. */
#ifndef TOP_TABLE_H
#define TOP_TABLE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

enum top_by {
    TOP_BY_PROCESS,
    TOP_BY_THREAD,
    TOP_BY_CGROUP,
    TOP_BY_UNIT,
    TOP_BY_COMM,
    TOP_BY_STACK
};

/* The states with a column of their own; the rest (T, t, ?) go to "other". */
#define TOP_STATES "SDRI"

struct top_row {
    char *key;        /* the cgroup, unit, comm or stack; NULL by process or thread */
    char *label;      /* by stack: the stack wait first (stack_label.h), for a terminal */
    char *comm;       /* its comm with the most time (process, thread) */
    int64_t pid, tid; /* by process, thread */
    uint64_t comm_ns; /* the time of that comm */
    uint64_t state_ns[sizeof(TOP_STATES)]; /* per TOP_STATES letter, then other */
    uint64_t total_ns, count;
    uint64_t runq_ns; /* of total_ns, waiting for a CPU */
};

struct top_table {
    enum top_by by;
    struct top_row *rows; /* most time first */
    size_t n, cap;
    size_t total; /* rows there were: more than n when the daemon kept the largest */
    int64_t start_ns, end_ns;
    json_t *index; /* key text -> row index + 1 */
};

/* "process", ... to enum top_by; -EINVAL for another word. */
int top_by_parse(const char *s, enum top_by *ret);
/* "process|thread|cgroup|unit|comm|stack" */
const char *top_by_names(void);

/* What to ask the daemon for that table: the method, and the fields to group by. */
const char *top_method(enum top_by by);
json_t *top_group_by(enum top_by by);

/* The table of a reply (Top's rows or, by stack, Dump's stacks).
 * Returns 0 or -errno. */
int top_table_build(const json_t *reply, enum top_by by, struct top_table *t);
void top_table_done(struct top_table *t);

/* At most limit rows (0: all), under a header saying the window. */
void top_table_print(FILE *f, const struct top_table *t, size_t limit);
json_t *top_table_json(const struct top_table *t, size_t limit);

#endif
