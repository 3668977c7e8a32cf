/* SPDX-License-Identifier: GPL-2.0-only */
#include "top_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cgroup_unit.h"
#include "macro.h"
#include "name_escape.h"
#include "render.h"
#include "stack_label.h"

static const char *const by_names[] = {
    [TOP_BY_PROCESS] = "process", [TOP_BY_THREAD] = "thread", [TOP_BY_CGROUP] = "cgroup",
    [TOP_BY_UNIT] = "unit",       [TOP_BY_COMM] = "comm",     [TOP_BY_STACK] = "stack",
};

int top_by_parse(const char *s, enum top_by *ret)
{
    for (size_t i = 0; i < ARRAY_SIZE(by_names); i++)
        if (strcmp(s, by_names[i]) == 0) {
            *ret = (enum top_by)i;
            return 0;
        }
    return -EINVAL;
}

const char *top_by_names(void)
{
    return "process, thread, cgroup, unit, comm or stack";
}

const char *top_method(enum top_by by)
{
    /* Top merges stacks in the daemon: the rows are few even for a long window */
    return by == TOP_BY_STACK ? "io.offcpud.Dump" : "io.offcpud.Top";
}

json_t *top_group_by(enum top_by by)
{
    switch (by) {
    case TOP_BY_PROCESS:
        return json_pack("[s, s]", "pid", "state");
    case TOP_BY_THREAD:
        return json_pack("[s, s, s]", "pid", "tid", "state");
    case TOP_BY_CGROUP:
    case TOP_BY_UNIT:
        return json_pack("[s, s]", "cgroup", "state");
    default:
        return json_pack("[s]", "state");
    }
}

static char *number_text(const json_t *v)
{
    char *text;

    return asprintf(&text, "%lld", (long long)json_integer_value(v)) < 0 ? NULL : text;
}

/* The stack alone: a row's grouped fields (its state) are columns here. */
static char *stack_text(const json_t *row)
{
    json_auto_t *stack =
        json_pack("{s:O, s:O, s:O}", "comm", json_object_get(row, "comm"), "user",
                  json_object_get(row, "user"), "kernel", json_object_get(row, "kernel"));

    return stack ? render_folded_stack(stack) : NULL;
}

/* The text a row is found by; NULL when out of memory. */
static char *key_of(const json_t *row, enum top_by by)
{
    const char *cgroup = json_string_value(json_object_get(row, "cgroup")) ?: "";
    char unit[256];

    switch (by) {
    case TOP_BY_PROCESS:
        return number_text(json_object_get(row, "pid"));
    case TOP_BY_THREAD:
        return number_text(json_object_get(row, "tid"));
    case TOP_BY_CGROUP:
        return strdup(cgroup);
    case TOP_BY_UNIT:
        cgroup_unit(cgroup, unit, sizeof(unit));
        return strdup(unit[0] ? unit : "(no unit)");
    case TOP_BY_COMM:
        return strdup(json_string_value(json_object_get(row, "comm")) ?: "?");
    default:
        return stack_text(row);
    }
}

static struct top_row *row_for(struct top_table *t, const json_t *r)
{
    _cleanup_free_ char *key = key_of(r, t->by);
    json_int_t at;
    struct top_row *row;

    if (!key)
        return NULL;
    at = json_integer_value(json_object_get(t->index, key));
    if (at)
        return &t->rows[at - 1];
    if (array_reserve(&t->rows, &t->cap, t->n + 1, sizeof(*t->rows), 64) < 0 ||
        json_object_set_new(t->index, key, json_integer((json_int_t)t->n + 1)) < 0)
        return NULL;
    row = &t->rows[t->n++];
    *row = (struct top_row){
        .pid = json_integer_value(json_object_get(r, "pid")),
        .tid = json_integer_value(json_object_get(r, "tid")),
    };
    if (t->by != TOP_BY_PROCESS && t->by != TOP_BY_THREAD) {
        row->key = key;
        key = NULL;
    }
    if (t->by == TOP_BY_STACK && !(row->label = stack_label(r)))
        return NULL;
    return row;
}

static int add(struct top_table *t, const json_t *r)
{
    struct top_row *row = row_for(t, r);
    const char *state = json_string_value(json_object_get(r, "state")) ?: "?";
    const char *comm = json_string_value(json_object_get(r, "comm")) ?: "?";
    const char *column = strchr(TOP_STATES, state[0]);
    uint64_t ns = (uint64_t)json_integer_value(json_object_get(r, "total_ns"));

    if (!row)
        return -ENOMEM;
    /* strchr finds the terminating NUL too: "" goes to other */
    row->state_ns[column && state[0] ? (size_t)(column - TOP_STATES) : strlen(TOP_STATES)] += ns;
    row->total_ns += ns;
    row->runq_ns += (uint64_t)stack_time_ns(r, STACK_TIME_RUNQ);
    row->count += (uint64_t)json_integer_value(json_object_get(r, "count"));
    /* a process whose threads have other names is named by the busiest */
    if (t->by == TOP_BY_PROCESS || t->by == TOP_BY_THREAD) {
        if (!row->comm || ns > row->comm_ns) {
            char *copy = strdup(comm);

            if (!copy)
                return -ENOMEM;
            free(row->comm);
            row->comm = copy;
            row->comm_ns = ns;
        }
    }
    return 0;
}

static int by_total(const void *a, const void *b)
{
    const struct top_row *x = a, *y = b;

    if (x->total_ns != y->total_ns)
        return x->total_ns < y->total_ns ? 1 : -1;
    return strcmp(x->key ?: x->comm ?: "", y->key ?: y->comm ?: "");
}

int top_table_build(const json_t *reply, enum top_by by, struct top_table *t)
{
    const json_t *rows = json_object_get(reply, by == TOP_BY_STACK ? "stacks" : "rows");
    size_t i;
    json_t *r;

    *t = (struct top_table){
        .by = by,
        .start_ns = json_integer_value(json_object_get(reply, "start_ns")),
        .end_ns = json_integer_value(json_object_get(reply, "end_ns")),
        .index = json_object(),
    };
    if (!t->index)
        return -ENOMEM;
    json_array_foreach(rows, i, r)
    {
        int ret = add(t, r);

        if (ret < 0) {
            top_table_done(t);
            return ret;
        }
    }
    /* a Dump with a limit says how many stacks it left out */
    t->total = (size_t)json_integer_value(json_object_get(reply, "stacks_total"));
    if (t->total < t->n)
        t->total = t->n;
    /* merging states and threads changed the order */
    if (t->n)
        qsort(t->rows, t->n, sizeof(*t->rows), by_total);
    /* keys index rows by position: the order is final, the index is done with */
    json_decref(t->index);
    t->index = NULL;
    return 0;
}

void top_table_done(struct top_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->rows[i].key);
        free(t->rows[i].label);
        free(t->rows[i].comm);
    }
    free(t->rows);
    json_decref(t->index);
    memset(t, 0, sizeof(*t));
}

/* The share of the window the row was off-CPU: over 1 for many threads. */
static double share(const struct top_table *t, const struct top_row *row)
{
    int64_t window = t->end_ns - t->start_ns;

    return window > 0 ? (double)row->total_ns / (double)window : 0;
}

static const char *cell(uint64_t ns, char *buf, size_t size)
{
    if (!ns)
        return "-";
    return render_ns((json_int_t)ns, buf, size);
}

void top_table_print(FILE *f, const struct top_table *t, size_t limit)
{
    static const char *const key_titles[] = {[TOP_BY_PROCESS] = "    PID COMM           ",
                                             [TOP_BY_THREAD] = "    TID     PID COMM   ",
                                             [TOP_BY_CGROUP] = "CGROUP",
                                             [TOP_BY_UNIT] = "UNIT",
                                             [TOP_BY_COMM] = "COMM",
                                             [TOP_BY_STACK] = "STACK"};
    size_t n = limit && limit < t->n ? limit : t->n;
    /* the columns before a stack: TOTAL (9), the states' and RUNQ (10 each), %WIN (10) */
    size_t width = stack_label_width(9 + (ARRAY_SIZE(t->rows->state_ns) + 1) * 10 + 10);
    char window[96], buf[32];

    fprintf(f, "off-CPU time by %s, %s\n", by_names[t->by],
            render_window(t->start_ns, t->end_ns, window, sizeof(window)));
    fprintf(f, "%9s %9s %9s %9s %9s %9s %9s %7s  %s\n", "TOTAL", "S", "D", "R", "I", "OTHER",
            "RUNQ", "%WIN", key_titles[t->by]);
    for (size_t i = 0; i < n; i++) {
        const struct top_row *row = &t->rows[i];

        fprintf(f, "%9s", cell(row->total_ns, buf, sizeof(buf)));
        for (size_t s = 0; s < ARRAY_SIZE(row->state_ns); s++)
            fprintf(f, " %9s", cell(row->state_ns[s], buf, sizeof(buf)));
        fprintf(f, " %9s", cell(row->runq_ns, buf, sizeof(buf)));
        fprintf(f, " %6.1f%%  ", 100 * share(t, row));
        if (t->by == TOP_BY_PROCESS)
            fprintf(f, "%7lld ", (long long)row->pid);
        else if (t->by == TOP_BY_THREAD)
            fprintf(f, "%7lld %7lld ", (long long)row->tid, (long long)row->pid);
        if (row->label) /* the wait first, cut from the root end to the line */
            stack_label_put(f, row->label, width);
        else /* a name, for a terminal */
            name_escape_put(f, row->key ?: row->comm ?: "?", NAME_ESCAPE_CONTROL);
        fputc('\n', f);
    }
    if (n < t->total)
        fprintf(f, "(%zu more; --limit 0 shows all)\n", t->total - n);
}

json_t *top_table_json(const struct top_table *t, size_t limit)
{
    size_t n = limit && limit < t->n ? limit : t->n;
    json_t *rows = json_array();

    for (size_t i = 0; i < n; i++) {
        const struct top_row *row = &t->rows[i];
        json_t *states = json_object(), *o;

        for (size_t s = 0; s < strlen(TOP_STATES); s++)
            json_object_set_new(states, (char[]){TOP_STATES[s], '\0'},
                                json_integer((json_int_t)row->state_ns[s]));
        json_object_set_new(states, "other",
                            json_integer((json_int_t)row->state_ns[strlen(TOP_STATES)]));
        o = json_pack("{s:I, s:I, s:I, s:o, s:f}", "total_ns", (json_int_t)row->total_ns, "runq_ns",
                      (json_int_t)row->runq_ns, "count", (json_int_t)row->count, "states", states,
                      "share", share(t, row));
        if (t->by == TOP_BY_PROCESS || t->by == TOP_BY_THREAD) {
            json_object_set_new(o, "pid", json_integer(row->pid));
            json_object_set_new(o, "comm", json_string(row->comm));
        }
        if (t->by == TOP_BY_THREAD)
            json_object_set_new(o, "tid", json_integer(row->tid));
        if (row->key)
            json_object_set_new(o, by_names[t->by], json_string(row->key));
        json_array_append_new(rows, o);
    }
    return json_pack("{s:s, s:I, s:I, s:I, s:o}", "by", by_names[t->by], "start_ns",
                     (json_int_t)t->start_ns, "end_ns", (json_int_t)t->end_ns, "rows_total",
                     (json_int_t)t->total, "rows", rows);
}
