/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl why: who woke whom, from a thread's longest waits on. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "macro.h"
#include "query_command.h"
#include "render.h"
#include "render_why.h"
#include "selection.h"
#include "waker_flamegraph.h"
#include "why_chain.h"

static void why_usage(FILE *f)
{
    fprintf(f, "Usage: offcpuctl [--socket PATH] [--json] why --pid PID|--tid TID [OPTIONS]\n"
               "For the longest waits of a process or thread, the chain of who woke whom:\n"
               "each hop's thread, where it woke the one before, and what it was itself\n"
               "blocked on in the window, followed across processes until a hop ran on\n"
               "CPU, was an interrupt, left the window or is not yours to see (withheld);\n"
               "with the share of the off-CPU time each cause explains. Needs wakers = "
               "yes.\n\n" SELECTION_HELP
               "  --format FORMAT        text (default), json, svg (a flame graph, each wait\n"
               "                         growing on into its chain, the wakers' part in aqua)\n"
               "  -o, --output FILE      write to FILE instead of standard output\n");
}

enum why_format { WHY_TEXT, WHY_JSON, WHY_SVG };
/* --format's words, in the order of enum why_format */
static const char *const formats[] = {"text", "json", "svg"};

struct why_job {
    const json_t *params;
    const json_t *why;
    enum why_format format;
};

/* Each chain as one stack: the wait, growing on into its hops. */
static int write_svg(FILE *f, const struct why_job *job)
{
    json_auto_t *stacks = why_flame_stacks(job->why);

    if (!stacks)
        return -ENOMEM;
    return waker_flamegraph_write(f, job->params, "Why it waited: chains of wakers", stacks,
                                  json_integer_value(json_object_get(job->why, "start_ns")),
                                  json_integer_value(json_object_get(job->why, "end_ns")));
}

static int write_why(FILE *f, void *ctx)
{
    const struct why_job *job = ctx;

    switch (job->format) {
    case WHY_JSON:
        return json_dumpf(job->why, f, JSON_INDENT(2)) < 0 || fputc('\n', f) == EOF ? -EIO : 0;
    case WHY_SVG:
        return write_svg(f, job);
    default:
        return render_why(f, job->why);
    }
}

static int why_option(int c, const char *arg, struct query *q)
{
    return query_format_option(c, arg, formats, ARRAY_SIZE(formats), q->own);
}

static int why_run(struct query *q)
{
    json_auto_t *why = NULL;
    struct why_job job = {.params = q->params, .format = *(const enum why_format *)q->own};
    long bytes;
    int r;

    if (!json_object_get(q->params, "pid") && !json_object_get(q->params, "tid"))
        return usage_error("why needs --pid PID or --tid TID");
    r = why_chains(q->g, q->params, &why);
    if (r != EXIT_OK)
        return r;
    if (!why)
        return selection_no_data(
            q->params, "that window with a known waker (is offcpud running with wakers = yes?)");
    job.why = why;
    return query_write(q, write_why, &job, &bytes);
}

/* its own options: the selection, --help and -o are the scaffold's */
static const struct option why_options[] = {{"format", required_argument, NULL, 'f'}, {0}};

QUERY_COMMAND(why, .output = true);

int cmd_why(const struct globals *g, int argc, char **argv)
{
    enum why_format format = g->json ? WHY_JSON : WHY_TEXT;

    return query_command_run(&why_command, &format, g, argc, argv);
}
