/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl diff: what changed between two windows of the same selection,
 * as difffolded lines or as a differential flame graph. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "commands.h"
#include "daemon_call.h"
#include "idle_note.h"
#include "diff_folded.h"
#include "flame_tree.h"
#include "svg_flamegraph.h"
#include "macro.h"
#include "output_file.h"
#include "render.h"
#include "query_command.h"
#include "selection.h"

static void diff_usage(FILE *f)
{
    fprintf(f,
            "Usage: offcpuctl [--socket PATH] [--json] diff --before-since T [OPTIONS] [-o FILE]\n"
            "Compare two windows of the same selection: one line per stack, \"stack BEFORE\n"
            "AFTER\" (flamegraph's difffolded format), each value microseconds off-CPU per\n"
            "second of its window; with -o, a flame graph of both windows, each stack as\n"
            "wide as in the window where it was larger: coloured by change (red grew,\n"
            "blue shrank), hatched where time was lost (shrunk, vanished).\n\n" SELECTION_HELP
            "  --before-since T       start of the earlier window (DURATION back, or @UNIXTIME)\n"
            "  --before-until T       its end (default: the later window's start, --since)\n"
            "  -o, --output FILE      write the differential SVG there\n"
            "The later window is --since/--until (default: from --before-until to now).\n");
}

/* The earlier window's --before-since and --before-until, as since_ns/start_ns
 * and until_ns/end_ns. */
static int diff_option(int c, const char *arg, struct query *q)
{
    json_t *before = q->own;

    switch (c) {
    case 'B':
        return selection_option('S', arg, before);
    case 'E':
        return selection_option('U', arg, before);
    default:
        return -ENOENT;
    }
}

/* The earlier window's request: the selection of params, its own window. */
static int before_params(const json_t *params, const json_t *window, json_t **ret)
{
    static const char *const time_keys[] = {"since_ns", "until_ns", "start_ns", "end_ns"};
    json_t *p = json_deep_copy(params);

    for (size_t i = 0; i < ARRAY_SIZE(time_keys); i++)
        json_object_del(p, time_keys[i]);
    json_object_update(p, (json_t *)window);
    /* by default it ends where the later window starts */
    if (!json_object_get(window, "until_ns") && !json_object_get(window, "end_ns")) {
        if (json_object_get(params, "since_ns"))
            json_object_set(p, "until_ns", json_object_get(params, "since_ns"));
        else if (json_object_get(params, "start_ns"))
            json_object_set(p, "end_ns", json_object_get(params, "start_ns"));
    }
    *ret = p;
    if (!json_object_get(p, "since_ns") && !json_object_get(p, "start_ns"))
        return usage_error("diff needs --before-since: the start of the window to compare with");
    if (!json_object_get(p, "until_ns") && !json_object_get(p, "end_ns"))
        return usage_error("diff needs --since or --before-until: where the earlier window ends");
    return EXIT_OK;
}

/* After: the later window from where the earlier one ends, unless given. */
static void after_params(json_t *params, const json_t *before)
{
    if (json_object_get(params, "since_ns") || json_object_get(params, "start_ns"))
        return;
    if (json_object_get(before, "until_ns"))
        json_object_set(params, "since_ns", json_object_get(before, "until_ns"));
    else
        json_object_set(params, "start_ns", json_object_get(before, "end_ns"));
}

/* Times back from now as Unix times, from one now for both windows: asked
 * apart, each would count back from its own, and where they meet a snapshot
 * could fall in both or in neither. */
static void fix_window(json_t *params, int64_t now)
{
    static const char *const relative[] = {"since_ns", "until_ns"};
    static const char *const absolute[] = {"start_ns", "end_ns"};

    for (size_t i = 0; i < ARRAY_SIZE(relative); i++) {
        json_t *back = json_object_get(params, relative[i]);

        if (!back)
            continue;
        json_object_set_new(params, absolute[i], json_integer(now - json_integer_value(back)));
        json_object_del(params, relative[i]);
    }
}

/* A window's stacks: as frames for the flame graph (graph), else folded. */
static int ask(const struct globals *g, json_t *params, const char *which, bool graph, json_t **ret)
{
    int r = daemon_call(g, graph ? "io.offcpud.Dump" : "io.offcpud.Folded", params, ret);

    if (r != EXIT_OK)
        return r;
    idle_note(g, *ret, which);
    if (reply_stacks_count(*ret) == 0)
        return selection_no_data(params, which);
    return EXIT_OK;
}

static int write_svg(FILE *f, const json_t *params, const json_t *before, const json_t *after)
{
    char title[320], subtitle[320], w0[128], w1[128];
    struct svg_flamegraph o = {
        .title = title,
        .subtitle = subtitle,
        .colors = SVG_COLOR_DIFF,
        .now_s = diff_window_seconds(after),
        .before_s = diff_window_seconds(before),
        .min_px = SVG_MIN_PX,
        .max_frames = SVG_MAX_FRAMES,
        .max_bytes = SVG_MAX_BYTES,
    };
    struct flame_tree t;
    int r;

    if (flame_tree_init(&t, false) < 0)
        return -ENOMEM;
    r = flame_tree_add(&t, after, FLAME_NOW);
    if (r == 0)
        r = flame_tree_add(&t, before, FLAME_BEFORE);
    if (r == 0) {
        flame_tree_diff_widths(&t, o.before_s > 0 ? o.now_s / o.before_s : 0);
        selection_title(params, "Change in off-CPU time per second", title, sizeof(title));
        snprintf(
            subtitle, sizeof(subtitle), "before %s; after %s; hatched: time lost since before",
            render_window(json_integer_value(json_object_get(before, "start_ns")),
                          json_integer_value(json_object_get(before, "end_ns")), w0, sizeof(w0)),
            render_window(json_integer_value(json_object_get(after, "start_ns")),
                          json_integer_value(json_object_get(after, "end_ns")), w1, sizeof(w1)));
        r = svg_flamegraph_write(f, &t, &o);
    }
    flame_tree_done(&t);
    return r;
}

struct diff_job {
    const json_t *params, *before, *after;
};

static int write_graph(FILE *f, void *ctx)
{
    const struct diff_job *job = ctx;

    return write_svg(f, job->params, job->before, job->after);
}

static int write_output(const struct globals *g, const char *path, const json_t *params,
                        const json_t *before, const json_t *after)
{
    struct diff_job job = {.params = params, .before = before, .after = after};
    json_auto_t *summary = NULL;
    long bytes;
    int r = output_file(path, write_graph, &job, &bytes);

    if (r != EXIT_OK)
        return r;
    if (!g->json) {
        printf("wrote %s: %ld KiB\n", path, (bytes + 1023) / 1024);
        return EXIT_OK;
    }
    summary = json_pack("{s:s, s:I}", "output", path, "bytes", (json_int_t)bytes);
    return print_json(summary);
}

static int print_diff(const struct globals *g, const json_t *before, const json_t *after)
{
    json_auto_t *o = NULL;
    json_t *stacks;
    int n;

    if (!g->json) {
        n = diff_folded_write(stdout, before, after);
        return n < 0 ? fail("rendering: %s", strerror(-n)) : EXIT_OK;
    }
    stacks = diff_folded_json(before, after);
    if (!stacks)
        return fail("out of memory");
    o = json_pack("{s:{s:O, s:O}, s:{s:O, s:O}, s:s, s:o}", "before", "start_ns",
                  json_object_get(before, "start_ns"), "end_ns", json_object_get(before, "end_ns"),
                  "after", "start_ns", json_object_get(after, "start_ns"), "end_ns",
                  json_object_get(after, "end_ns"), "unit", "us/s", "stacks", stacks);
    return print_json(o);
}

static int diff_run(struct query *q)
{
    json_auto_t *earlier = NULL, *before = NULL, *after = NULL;
    int64_t now;
    int r = before_params(q->params, q->own, &earlier);

    if (r != EXIT_OK)
        return r;
    after_params(q->params, earlier);
    now = clock_ns(CLOCK_REALTIME);
    fix_window(earlier, now);
    fix_window(q->params, now);
    r = ask(q->g, earlier, "the earlier window", q->output, &before);
    if (r == EXIT_OK)
        r = ask(q->g, q->params, "the later window", q->output, &after);
    if (r != EXIT_OK)
        return r;
    if (q->output)
        return finish_output(write_output(q->g, q->output, q->params, before, after));
    return finish_output(print_diff(q->g, before, after));
}

/* its own options: the selection, --help, -o and the stack filters are the
 * scaffold's */
static const struct option diff_options[] = {{"before-since", required_argument, NULL, 'B'},
                                             {"before-until", required_argument, NULL, 'E'},
                                             {0}};

QUERY_COMMAND(diff, .output = true);

int cmd_diff(const struct globals *g, int argc, char **argv)
{
    json_auto_t *window = json_object();

    if (!window)
        return fail("out of memory");
    return query_command_run(&diff_command, window, g, argc, argv);
}
