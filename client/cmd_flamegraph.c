/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl flamegraph: an interactive SVG flame graph of a selection. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "flamegraph_svg.h"
#include "macro.h"
#include "output_file.h"
#include "selection.h"

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

/* The options of flamegraph beyond the selection. */
static int flamegraph_option(int c, char **argv, struct flamegraph_request *req,
                             const char **output)
{
    char *end;

    switch (c) {
    case 'o':
        *output = optarg;
        return EXIT_OK;
    case 'C':
        if (strcmp(optarg, "frames") == 0)
            req->colors = SVG_COLOR_FRAMES;
        else if (strcmp(optarg, "state") == 0)
            req->colors = SVG_COLOR_STATES;
        else
            return usage_error("invalid --color '%s' (frames or state)", optarg);
        return EXIT_OK;
    case 'w':
        req->min_px = strtod(optarg, &end);
        if (*end || end == optarg || !(req->min_px >= 0 && req->min_px <= 1000))
            return usage_error("invalid --min-width '%s' (pixels, 0 to 1000)", optarg);
        return EXIT_OK;
    case 'T':
        req->timeline = false;
        return EXIT_OK;
    default:
        return option_error(c, argv);
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

    return flamegraph_svg(job->g, job->params, job->req, f, &job->written);
}

static int write_file(const struct globals *g, json_t *params, const struct flamegraph_request *req,
                      const char *output)
{
    struct graph_job job = {.g = g, .params = params, .req = req};
    long bytes;
    int r = output_file(output, write_graph, &job, &bytes);

    return r != EXIT_OK ? r : report(g, output, bytes, &job.written);
}

int cmd_flamegraph(const struct globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        SELECTION_OPTIONS,
        {"output", required_argument, NULL, 'o'},
        {"color", required_argument, NULL, 'C'},
        {"min-width", required_argument, NULL, 'w'},
        {"no-timeline", no_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct flamegraph_request req = {
        .colors = SVG_COLOR_FRAMES, .min_px = SVG_MIN_PX, .timeline = true};
    struct flamegraph_written written;
    json_auto_t *params = json_object();
    const char *output = NULL;
    int c, r = EXIT_OK;

    optind = 1;
    opterr = 0;
    while (r == EXIT_OK && (c = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
        if (c == 'h') {
            flamegraph_usage(stdout);
            return EXIT_OK;
        }
        r = selection_option(c, optarg, params);
        if (r == -ENOENT)
            r = flamegraph_option(c, argv, &req, &output);
    }
    if (r == EXIT_OK && optind < argc)
        r = usage_error("unexpected argument '%s'", argv[optind]);
    if (r == EXIT_OK && g->json && !output)
        r = usage_error("--json needs -o FILE: the SVG goes there, the summary to stdout");
    if (r != EXIT_OK)
        return r;
    if (output)
        return finish_output(write_file(g, params, &req, output));
    return finish_output(flamegraph_svg(g, params, &req, stdout, &written));
}
