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
};

static void tables_done(struct folded_tables *t)
{
    json_decref(t->names);
    json_decref(t->paths);
    free(t->name_of);
    free(t->path_of);
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
    if (!t->names || !t->paths || !t->name_of || !t->path_of) {
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
    /* each index has at most 10 digits (names fit in uint32_t) and a space */
    _cleanup_free_ char *text = malloc((size_t)n * 11 + 1);
    char *end = text;

    if (!text)
        return -ENOMEM;
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
    if (json_array_append_new(t->paths, json_stringn_nocheck(text, (size_t)(end - text))) < 0)
        return -ENOMEM;
    return (int64_t)json_array_size(t->paths) - 1;
}

/* Stack id's index in paths (QUERY_KERNEL_COLLAPSED: "[kernel]"). */
static int64_t path_index(struct folded_tables *t, uint32_t id)
{
    _cleanup_free_ int64_t *names = NULL;
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
    names = calloc(n ?: 1, sizeof(*names));
    if (!names)
        return -ENOMEM;
    for (uint32_t k = 0; k < n; k++)
        if ((names[k] = name_index(t, frames[k])) < 0)
            return names[k];
    i = add_path(t, names, n);
    if (i >= 0)
        t->path_of[id] = (uint32_t)i + 1;
    return i;
}

/* The head of row's stack: its comm and the labels of group_by. */
static json_t *head_json(const struct intern *in, const struct query_row *row, unsigned group_by)
{
    struct folded_labels labels = {
        .has_pid = group_by & GROUP_BY_PID,
        .has_tid = group_by & GROUP_BY_TID,
        .pid = row->pid,
        .tid = row->tid,
        .state = group_by & GROUP_BY_STATE ? row->state : 0,
        .cgroup = group_by & GROUP_BY_CGROUP ? intern_string_get(in, row->cgroup) : NULL,
    };
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    json_t *head = NULL;

    if (!f)
        return NULL;
    folded_put_head(f, intern_string_get(in, row->comm), &labels, NAME_ESCAPE_RAW);
    if (fclose(f) == 0)
        head = json_stringn_nocheck(text, size);
    free(text);
    return head;
}

static json_t *stack_json(struct folded_tables *t, const struct query_row *row, unsigned group_by)
{
    int64_t user = path_index(t, row->ustack), kernel = path_index(t, row->kstack);

    if (user < 0 || kernel < 0)
        return NULL;
    return json_pack("{s:o, s:I, s:I, s:I, s:I}", "head", head_json(t->in, row, group_by), "user",
                     (json_int_t)user, "kernel", (json_int_t)kernel, "total_ns",
                     (json_int_t)row->total_ns, "runq_ns", (json_int_t)row->runq_ns);
}

int folded_rows_set(json_t *reply, const struct intern *in, const struct query_result *res,
                    unsigned group_by)
{
    struct folded_tables t;
    json_t *stacks;
    int r = tables_init(&t, in);

    if (r < 0)
        return r;
    stacks = json_array();
    r = stacks ? 0 : -ENOMEM;
    for (size_t i = 0; r == 0 && i < res->n; i++) {
        json_t *s = stack_json(&t, &res->rows[i], group_by);

        if (!s || json_array_append_new(stacks, s) < 0)
            r = -ENOMEM;
    }
    if (r == 0 && (json_object_set(reply, "names", t.names) < 0 ||
                   json_object_set(reply, "paths", t.paths) < 0 ||
                   json_object_set(reply, "stacks", stacks) < 0))
        r = -ENOMEM;
    json_decref(stacks);
    tables_done(&t);
    return r;
}
