/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl flamegraph: an interactive SVG flame graph of a selection. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "macro.h"
#include "query_command.h"
#include "selection.h"
#include "selection_flamegraph.h"

static void flamegraph_usage(FILE *f)
{
    fprintf(f,
            "Usage: offcpuctl [--socket PATH] [--json] flamegraph [OPTIONS] [-o FILE]\n"
            "Draw off-CPU time as an interactive flame graph: one SVG file, open it in a\n"
            "browser (click zooms, Search highlights).\n\n" SELECTION_HELP
            "  -o, --output FILE      write the SVG there (default: standard output)\n"
            "  --color frames|state   colour frames by kind (user blue, kernel orange) or by\n"
            "                         the state they blocked in (S blue, D red, R yellow)\n"
            "  --min-width PX         merge frames narrower than this (default %.1f)\n"
            "  --no-timeline          no strip of off-CPU time per interval above the graph\n",
            SVG_MIN_PX);
}

/* The options of flamegraph beyond the selection and -o. */
static int flamegraph_option(int c, const char *arg, struct query *q)
{
    struct flamegraph_request *req = q->own;
    char *end;

    switch (c) {
    case 'C':
        if (strcmp(arg, "frames") == 0)
            req->colors = SVG_COLOR_FRAMES;
        else if (strcmp(arg, "state") == 0)
            req->colors = SVG_COLOR_STATES;
        else
            return usage_error("invalid --color '%s' (frames or state)", arg);
        return EXIT_OK;
    case 'w':
        req->min_px = strtod(arg, &end);
        if (*end || end == arg || !(req->min_px >= 0 && req->min_px <= 1000))
            return usage_error("invalid --min-width '%s' (pixels, 0 to 1000)", arg);
        return EXIT_OK;
    case 'T':
        req->timeline = false;
        return EXIT_OK;
    default:
        return -ENOENT;
    }
}

static int report(const struct globals *g, const char *output, long bytes,
                  const struct flamegraph_written *w)
{
    json_auto_t *summary = NULL;

    if (!g->json) {
        printf("wrote %s: %zu stacks, %.3f s off-CPU, %ld KiB\n", output, w->stacks,
               w->total_ns / 1e9, (bytes + 1023) / 1024);
        return EXIT_OK;
    }
    summary = json_pack("{s:s, s:I, s:I, s:I}", "output", output, "stacks", (json_int_t)w->stacks,
                        "total_ns", (json_int_t)w->total_ns, "bytes", (json_int_t)bytes);
    return print_json(summary);
}

struct graph_job {
    const struct globals *g;
    json_t *params;
    const struct flamegraph_request *req;
    struct flamegraph_written written;
};

static int write_graph(FILE *f, void *ctx)
{
    struct graph_job *job = ctx;

    return selection_flamegraph(job->g, job->params, job->req, f, &job->written);
}

static int flamegraph_run(struct query *q)
{
    struct graph_job job = {.g = q->g, .params = q->params, .req = q->own};
    long bytes;
    int r;

    if (q->g->json && !q->output)
        return usage_error("--json needs -o FILE: the SVG goes there, the summary to stdout");
    r = query_write(q, write_graph, &job, &bytes);
    if (r != EXIT_OK || !q->output)
        return r;
    return finish_output(report(q->g, q->output, bytes, &job.written));
}

/* its own options: the selection, --help, -o and the stack filters are the
 * scaffold's */
static const struct option flamegraph_options[] = {{"color", required_argument, NULL, 'C'},
                                                   {"min-width", required_argument, NULL, 'w'},
                                                   {"no-timeline", no_argument, NULL, 'T'},
                                                   {0}};

QUERY_COMMAND(flamegraph, .output = true);

int cmd_flamegraph(const struct globals *g, int argc, char **argv)
{
    struct flamegraph_request req = {
        .colors = SVG_COLOR_FRAMES, .min_px = SVG_MIN_PX, .timeline = true};

    return query_command_run(&flamegraph_command, &req, g, argc, argv);
}
