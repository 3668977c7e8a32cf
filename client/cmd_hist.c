/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl hist: how long single off-CPU periods were, in log2 buckets:
 * 1000 waits of 2 ms and one stall of 2 s have the same total, not the same
 * shape. Of the whole selection, or per stack with --by stack. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "daemon_call.h"
#include "idle_note.h"
#include "macro.h"
#include "period_hist.h"
#include "render.h"
#include "query_command.h"
#include "selection.h"
#include "stack_label.h"

#define DEFAULT_LIMIT 10

struct hist_options {
    bool by_stack;
    size_t limit;
};

static void hist_usage(FILE *f)
{
    fprintf(f, "Usage: offcpuctl [--socket PATH] [--json] hist [OPTIONS]\n"
               "Show how long single off-CPU periods were (log2 buckets of microseconds).\n\n"
               "  --by stack             one histogram per stack, most time first\n"
               "  --limit N              with --by stack: the N first stacks (default 10; 0: all)\n"
               "" SELECTION_HELP);
}

static int hist_option(int c, const char *arg, struct query *q)
{
    struct hist_options *o = q->own;

    switch (c) {
    case 'b':
        if (strcmp(arg, "stack") != 0)
            return usage_error("invalid --by '%s' (stack)", arg);
        o->by_stack = true;
        return EXIT_OK;
    case 'l':
        return limit_parse(arg, &o->limit);
    default:
        return -ENOENT;
    }
}

/* The stacks there were: more than rows when the daemon kept the largest. */
static size_t stacks_total(const json_t *reply, const json_t *rows)
{
    size_t total = (size_t)json_integer_value(json_object_get(reply, "stacks_total"));

    return total > json_array_size(rows) ? total : json_array_size(rows);
}

/* The histograms of a reply's rows: one of them all, or one per stack. */
static int show(const struct globals *g, const struct hist_options *o, const json_t *reply)
{
    const json_t *rows = json_object_get(reply, o->by_stack ? "stacks" : "rows");
    size_t n = o->by_stack && o->limit && o->limit < json_array_size(rows) ? o->limit
                                                                           : json_array_size(rows);
    json_auto_t *out = json_array();
    struct period_hist all = {0};
    char window[96];
    int r = EXIT_OK;

    render_window(json_integer_value(json_object_get(reply, "start_ns")),
                  json_integer_value(json_object_get(reply, "end_ns")), window, sizeof(window));
    if (!g->json)
        printf("off-CPU periods by length, %s\n", window);
    for (size_t i = 0; i < json_array_size(rows); i++)
        period_hist_add(&all, json_array_get(rows, i));
    for (size_t i = 0; o->by_stack && i < n; i++) {
        const json_t *row = json_array_get(rows, i);
        /* JSON keeps the folded stack; a person reads the wait first */
        _cleanup_free_ char *stack = g->json ? render_folded_stack(row) : stack_label(row);
        struct period_hist h = {0};
        json_t *one;

        if (!stack)
            return fail("out of memory");
        period_hist_add(&h, row);
        if (g->json) {
            one = period_hist_json(&h);
            json_object_set_new(one, "stack", json_string(stack));
            json_array_append_new(out, one);
            continue;
        }
        putchar('\n');
        stack_label_put(stdout, stack, stack_label_width(0));
        putchar('\n');
        period_hist_print(stdout, &h);
    }
    if (!o->by_stack) {
        if (g->json)
            json_array_append_new(out, period_hist_json(&all));
        else
            period_hist_print(stdout, &all);
    } else if (!g->json && n < stacks_total(reply, rows)) {
        printf("\n(%zu more stacks; --limit 0 shows all)\n", stacks_total(reply, rows) - n);
    }
    if (g->json) {
        json_auto_t *doc =
            json_pack("{s:O, s:O, s:O}", "start_ns", json_object_get(reply, "start_ns"), "end_ns",
                      json_object_get(reply, "end_ns"), "histograms", out);

        idle_note_json(doc, reply);
        r = print_json(doc);
    }
    return finish_output(r);
}

static int hist_run(struct query *q)
{
    const struct hist_options *o = q->own;
    json_auto_t *reply = NULL;
    int r;

    json_object_set_new(q->params, "histograms", json_true());
    /* of 100,000 stacks in a long window, the daemon keeps those shown */
    if (o->by_stack && o->limit)
        json_object_set_new(q->params, "limit", json_integer((json_int_t)o->limit));
    /* the whole selection: Top merges the stacks in the daemon */
    r = daemon_call(q->g, o->by_stack ? "io.offcpud.Dump" : "io.offcpud.Top", q->params, &reply);
    if (r != EXIT_OK)
        return r;
    idle_note(q->g, reply, NULL);
    if (!json_array_size(json_object_get(reply, o->by_stack ? "stacks" : "rows")))
        return selection_no_data(q->params, "that window");
    return show(q->g, o, reply);
}

/* its own options: the selection, --help, -o and the stack filters are the
 * scaffold's */
static const struct option hist_options[] = {
    {"by", required_argument, NULL, 'b'}, {"limit", required_argument, NULL, 'l'}, {0}};

QUERY_COMMAND(hist);

int cmd_hist(const struct globals *g, int argc, char **argv)
{
    struct hist_options o = {.limit = DEFAULT_LIMIT};

    return query_command_run(&hist_command, &o, g, argc, argv);
}
