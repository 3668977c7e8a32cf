/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl wakers: who woke the tasks of a selection, and from where. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "daemon_call.h"
#include "duration.h"
#include "flame_tree.h"
#include "macro.h"
#include "output_file.h"
#include "render.h"
#include "selection.h"
#include "svg_flamegraph.h"

static void wakers_usage(FILE *f)
{
    fprintf(
        f,
        "Usage: offcpuctl [--socket PATH] [--json] wakers [OPTIONS]\n"
        "Print blocked stacks with their wakers as folded lines, as offwaketime -f\n"
        "does: comm;user;-;kernel;--;waker kernel;-;waker user;waker comm, the\n"
        "waker's stack leaf first; value: microseconds blocked until woken.\n"
        "Interrupts wake as [hardirq], [softirq] or [nmi]. Needs wakers = yes.\n\n" SELECTION_HELP
        "  --min-total DURATION   drop stacks with less time than this\n"
        "  --group-by FIELDS      keep apart by pid,tid,state,cgroup (the waker's\n"
        "                         pid and tid too)\n"
        "  --format FORMAT        folded (default), json, svg (a flame graph, the\n"
        "                         waker's part in aqua)\n"
        "  -o, --output FILE      write to FILE instead of standard output\n");
}

enum wakers_format { WAKERS_FOLDED, WAKERS_JSON, WAKERS_SVG };

struct wakers_job {
    const json_t *params;
    const json_t *reply;
    enum wakers_format format;
};

/* The pairs as a flame graph: each blocked stack grows on into its waker's. */
static int write_svg(FILE *f, const struct wakers_job *job)
{
    int64_t start = json_integer_value(json_object_get(job->reply, "start_ns"));
    int64_t end = json_integer_value(json_object_get(job->reply, "end_ns"));
    char title[320], window[128];
    struct flame_tree t;
    int r;

    if (flame_tree_init(&t, false) < 0)
        return -ENOMEM;
    r = flame_tree_add(&t, job->reply, FLAME_NOW);
    if (r == 0) {
        struct svg_flamegraph o = {
            .title = title,
            .subtitle = window,
            .colors = SVG_COLOR_FRAMES,
            .min_px = SVG_MIN_PX,
            .max_frames = SVG_MAX_FRAMES,
            .max_bytes = SVG_MAX_BYTES,
        };

        selection_title(job->params, "Blocked time by waker", title, sizeof(title));
        render_window(start, end, window, sizeof(window));
        r = svg_flamegraph_write(f, &t, &o);
    }
    flame_tree_done(&t);
    return r;
}

static int write_wakers(FILE *f, void *ctx)
{
    const struct wakers_job *job = ctx;
    int n;

    switch (job->format) {
    case WAKERS_JSON:
        return json_dumpf(job->reply, f, JSON_INDENT(2)) < 0 || fputc('\n', f) == EOF ? -EIO : 0;
    case WAKERS_SVG:
        return write_svg(f, job);
    default:
        n = render_folded(f, job->reply, STACK_TIME_TOTAL);
        return n < 0 ? n : 0;
    }
}

static int wakers_option(int c, char **argv, json_t *params, const char **path,
                         enum wakers_format *format)
{
    uint64_t ns;

    switch (c) {
    case 'm':
        if (duration_parse(optarg, &ns) < 0)
            return usage_error("invalid duration '%s' for --min-total", optarg);
        json_object_set_new(params, "min_total_ns", json_integer((json_int_t)ns));
        return EXIT_OK;
    case 'g':
        return selection_group_by(optarg, params);
    case 'o':
        *path = optarg;
        return EXIT_OK;
    case 'f':
        if (strcmp(optarg, "folded") == 0)
            *format = WAKERS_FOLDED;
        else if (strcmp(optarg, "json") == 0)
            *format = WAKERS_JSON;
        else if (strcmp(optarg, "svg") == 0)
            *format = WAKERS_SVG;
        else
            return usage_error("invalid --format '%s' (folded, json or svg)", optarg);
        return EXIT_OK;
    default:
        return option_error(c, argv);
    }
}

int cmd_wakers(const struct globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        SELECTION_OPTIONS,
        {"min-total", required_argument, NULL, 'm'},
        {"group-by", required_argument, NULL, 'g'},
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_auto_t *params = json_object();
    json_auto_t *reply = NULL;
    struct wakers_job job = {.params = params, .format = g->json ? WAKERS_JSON : WAKERS_FOLDED};
    const char *path = NULL;
    long bytes;
    int c, r = EXIT_OK;

    optind = 1;
    opterr = 0;
    while (r == EXIT_OK && (c = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
        if (c == 'h') {
            wakers_usage(stdout);
            return EXIT_OK;
        }
        r = selection_option(c, optarg, params);
        if (r == -ENOENT)
            r = wakers_option(c, argv, params, &path, &job.format);
    }
    if (r == EXIT_OK && optind < argc)
        r = usage_error("unexpected argument '%s'", argv[optind]);
    if (r == EXIT_OK)
        r = daemon_call(g, "io.offcpud.Wakers", params, &reply);
    if (r != EXIT_OK)
        return r;
    if (json_array_size(json_object_get(reply, "stacks")) == 0)
        return selection_no_data(params, "that window (is offcpud running with wakers = yes?)");
    job.reply = reply;
    if (path)
        return output_file(path, write_wakers, &job, &bytes);
    r = write_wakers(stdout, &job);
    return finish_output(r < 0 ? fail("writing output: %s", strerror(-r)) : r);
}
