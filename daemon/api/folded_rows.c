/* SPDX-License-Identifier: GPL-2.0-only */
#include "folded_rows.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "folded.h"
#include "frame_rules.h"
#include "intern.h"
#include "macro.h"

/* One reply's tables, and where each name and path already is in them. */
struct folded_tables {
    const struct intern *in;
    json_t *names, *paths;
    uint32_t *name_of;  /* by string id: its index in names + 1 (0: not there yet) */
    uint32_t *path_of;  /* by stack id: its index in paths + 1 (0: not there yet) */
    uint32_t collapsed; /* QUERY_KERNEL_COLLAPSED's path index + 1 */
    /* room for one path's name indexes and text, kept for the next: an
     * allocation freed per path made glibc consolidate its free chunks
     * at each long one (a fifth of a whole window's reply) */
    int64_t *ids;
    char *text;
    uint32_t room; /* frames ids and text have room for */
    /* the rows' heads: by row (its index from rows), the index in heads */
    const struct query_row *rows;
    uint32_t *head_of;
};

/* Room for a path of n frames in t->ids and t->text. */
static int path_room(struct folded_tables *t, uint32_t n)
{
    int64_t *ids;
    char *text;

    if (n <= t->room)
        return 0;
    n = n > 2 * t->room ? n : 2 * t->room;
    ids = realloc(t->ids, (size_t)n * sizeof(*ids));
    if (ids)
        t->ids = ids;
    /* each index has at most 10 digits (names fit in uint32_t) and a space */
    text = ids ? realloc(t->text, (size_t)n * 11 + 1) : NULL;
    if (!text)
        return -ENOMEM;
    t->text = text;
    t->room = n;
    return 0;
}

static void tables_done(struct folded_tables *t)
{
    json_decref(t->names);
    json_decref(t->paths);
    free(t->name_of);
    free(t->path_of);
    free(t->ids);
    free(t->text);
    free(t->head_of);
}

static int tables_init(struct folded_tables *t, const struct intern *in)
{
    *t = (struct folded_tables){
        .in = in,
        .names = json_array(),
        .paths = json_array(),
        .name_of = calloc(in->strings.nslots ?: 1, sizeof(*t->name_of)),
        .path_of = calloc(in->stacks.nslots ?: 1, sizeof(*t->path_of)),
    };
    /* room from the start: a path of no frames is text too */
    if (!t->names || !t->paths || !t->name_of || !t->path_of || path_room(t, 64) < 0) {
        tables_done(t);
        return -ENOMEM;
    }
    return 0;
}

/* The index in names of a name given as text (escaped already), added. */
static int64_t add_name(struct folded_tables *t, json_t *text)
{
    if (!text || json_array_append_new(t->names, text) < 0)
        return -ENOMEM;
    return (int64_t)json_array_size(t->names) - 1;
}

/* String id's index in names. */
static int64_t name_index(struct folded_tables *t, uint32_t id)
{
    _cleanup_free_ char *text = NULL;
    int64_t i;

    if (id >= t->in->strings.nslots)
        return -EINVAL; /* the ring does not change during a method */
    if (t->name_of[id])
        return t->name_of[id] - 1;
    text = name_escape(intern_string_get(t->in, id), NAME_ESCAPE_RAW | FOLDED_ESCAPE);
    /* escaped, the name is valid UTF-8 */
    i = text ? add_name(t, json_string_nocheck(text)) : -ENOMEM;
    if (i >= 0)
        t->name_of[id] = (uint32_t)i + 1;
    return i;
}

/* A path of n name indexes as paths has it: "0 12 7", root first. Made by
 * hand: printf for each of millions of frames was most of the reply's time. */
static int64_t add_path(struct folded_tables *t, const int64_t *names, uint32_t n)
{
    char *end;

    if (path_room(t, n) < 0)
        return -ENOMEM;
    end = t->text;
    for (uint32_t i = 0; i < n; i++) {
        char digits[10];
        size_t k = 0;
        uint64_t v = (uint64_t)names[i];

        if (i)
            *end++ = ' ';
        do
            digits[k++] = (char)('0' + v % 10);
        while ((v /= 10) && k < sizeof(digits));
        while (k)
            *end++ = digits[--k];
    }
    if (json_array_append_new(t->paths, json_stringn_nocheck(t->text, (size_t)(end - t->text))) < 0)
        return -ENOMEM;
    return (int64_t)json_array_size(t->paths) - 1;
}

/* Stack id's index in paths (QUERY_KERNEL_COLLAPSED: "[kernel]"). */
static int64_t path_index(struct folded_tables *t, uint32_t id)
{
    const uint32_t *frames;
    uint32_t n;
    int64_t i;

    if (id == QUERY_KERNEL_COLLAPSED) {
        if (!t->collapsed) {
            int64_t name = add_name(t, json_string(FRAME_MARK_KERNEL));

            i = name < 0 ? name : add_path(t, &name, 1);
            if (i < 0)
                return i;
            t->collapsed = (uint32_t)i + 1;
        }
        return t->collapsed - 1;
    }
    if (id >= t->in->stacks.nslots)
        return -EINVAL;
    if (t->path_of[id])
        return t->path_of[id] - 1;
    frames = intern_stack_get(t->in, id, &n);
    if (path_room(t, n) < 0)
        return -ENOMEM;
    for (uint32_t k = 0; k < n; k++)
        if ((t->ids[k] = name_index(t, frames[k])) < 0)
            return t->ids[k];
    i = add_path(t, t->ids, n);
    if (i >= 0)
        t->path_of[id] = (uint32_t)i + 1;
    return i;
}

/* A row's head as far as group_by tells heads apart: its comm and the
 * fields grouped by (the others 0). */
struct head_key {
    uint32_t comm, cgroup, pid, tid;
    char state;
    size_t row;
};

static int by_head(const void *a, const void *b)
{
    const struct head_key *x = a, *y = b;

    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->state != y->state)
        return x->state < y->state ? -1 : 1;
    return x->cgroup < y->cgroup ? -1 : x->cgroup > y->cgroup;
}

/* The head's text: its comm and the labels of group_by. */
static json_t *head_json(const struct intern *in, const struct head_key *k, unsigned group_by)
{
    struct folded_labels labels = {
        .has_pid = group_by & GROUP_BY_PID,
        .has_tid = group_by & GROUP_BY_TID,
        .pid = k->pid,
        .tid = k->tid,
        .state = k->state,
        .cgroup = group_by & GROUP_BY_CGROUP ? intern_string_get(in, k->cgroup) : NULL,
    };
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    json_t *head = NULL;

    if (!f)
        return NULL;
    folded_put_head(f, intern_string_get(in, k->comm), &labels, NAME_ESCAPE_RAW);
    if (fclose(f) == 0)
        head = json_stringn_nocheck(text, size);
    free(text);
    return head;
}

/* Each distinct head's text once, in heads; head_of[i]: row i's index in
 * it. Told apart by sorting (a table keyed by hashes of names that any
 * user may choose could be made slow). */
static int heads_set(json_t *heads, uint32_t *head_of, const struct intern *in,
                     const struct query_result *res, unsigned group_by)
{
    _cleanup_free_ struct head_key *keys = calloc(res->n ?: 1, sizeof(*keys));

    if (!keys)
        return -ENOMEM;
    for (size_t i = 0; i < res->n; i++) {
        const struct query_row *row = &res->rows[i];

        keys[i] = (struct head_key){
            .comm = row->comm,
            .cgroup = group_by & GROUP_BY_CGROUP ? row->cgroup : 0,
            .pid = group_by & GROUP_BY_PID ? row->pid : 0,
            .tid = group_by & GROUP_BY_TID ? row->tid : 0,
            .state = group_by & GROUP_BY_STATE ? row->state : 0,
            .row = i,
        };
    }
    qsort(keys, res->n, sizeof(*keys), by_head);
    for (size_t i = 0; i < res->n; i++) {
        if ((i == 0 || by_head(&keys[i - 1], &keys[i]) != 0) &&
            json_array_append_new(heads, head_json(in, &keys[i], group_by)) < 0)
            return -ENOMEM;
        head_of[keys[i].row] = (uint32_t)json_array_size(heads) - 1;
    }
    return 0;
}

/* Column name of res's rows, each an integer of get. */
static int column_set(json_t *stacks, const char *name, const struct query_result *res,
                      int64_t (*get)(struct folded_tables *t, const struct query_row *row),
                      struct folded_tables *t)
{
    json_t *column = json_array();

    if (!column || json_object_set_new(stacks, name, column) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < res->n; i++) {
        int64_t v = get(t, &res->rows[i]);

        if (v < 0)
            return (int)v;
        if (json_array_append_new(column, json_integer(v)) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int64_t head_of(struct folded_tables *t, const struct query_row *row)
{
    return t->head_of[row - t->rows];
}

static int64_t user_of(struct folded_tables *t, const struct query_row *row)
{
    return path_index(t, row->ustack);
}

static int64_t kernel_of(struct folded_tables *t, const struct query_row *row)
{
    return path_index(t, row->kstack);
}

static int64_t total_of(struct folded_tables *t, const struct query_row *row)
{
    (void)t;
    return (int64_t)row->total_ns;
}

static int64_t runq_of(struct folded_tables *t, const struct query_row *row)
{
    (void)t;
    return (int64_t)row->runq_ns;
}

int folded_rows_set(json_t *reply, const struct intern *in, const struct query_result *res,
                    unsigned group_by)
{
    struct folded_tables t;
    json_t *stacks, *heads;
    int r = tables_init(&t, in);

    if (r < 0)
        return r;
    t.rows = res->rows;
    t.head_of = calloc(res->n ?: 1, sizeof(*t.head_of));
    stacks = json_object();
    heads = json_array();
    r = t.head_of && stacks && heads ? heads_set(heads, t.head_of, in, res, group_by) : -ENOMEM;
    if (r == 0)
        r = column_set(stacks, "head", res, head_of, &t);
    if (r == 0)
        r = column_set(stacks, "user", res, user_of, &t);
    if (r == 0)
        r = column_set(stacks, "kernel", res, kernel_of, &t);
    if (r == 0)
        r = column_set(stacks, "total_ns", res, total_of, &t);
    if (r == 0)
        r = column_set(stacks, "runq_ns", res, runq_of, &t);
    if (r == 0 && (json_object_set(reply, "names", t.names) < 0 ||
                   json_object_set(reply, "paths", t.paths) < 0 ||
                   json_object_set(reply, "heads", heads) < 0 ||
                   json_object_set(reply, "stacks", stacks) < 0))
        r = -ENOMEM;
    json_decref(stacks);
    json_decref(heads);
    tables_done(&t);
    return r;
}
