/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl wakers: who woke the tasks of a selection, and from where. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "daemon_call.h"
#include "folded_reply.h"
#include "idle_note.h"
#include "duration.h"
#include "macro.h"
#include "render.h"
#include "query_command.h"
#include "selection.h"
#include "waker_flamegraph.h"

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
/* --format's words, in the order of enum wakers_format */
static const char *const formats[] = {"folded", "json", "svg"};

struct wakers_job {
    const json_t *params;
    const json_t *reply;
    enum wakers_format format;
};

/* The pairs as a flame graph: each blocked stack grows on into its waker's. */
static int write_svg(FILE *f, const struct wakers_job *job)
{
    return waker_flamegraph_write(f, job->params, "Blocked time by waker", job->reply,
                                  json_integer_value(json_object_get(job->reply, "start_ns")),
                                  json_integer_value(json_object_get(job->reply, "end_ns")));
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

/* --format; --min-total and --group-by are the scaffold's stack filters */
static int wakers_option(int c, const char *arg, struct query *q)
{
    return query_format_option(c, arg, formats, ARRAY_SIZE(formats), q->own);
}

static int wakers_run(struct query *q)
{
    json_auto_t *reply = NULL;
    int r = daemon_call(q->g, "io.offcpud.Wakers", q->params, &reply);
    struct wakers_job job = {
        .params = q->params, .reply = reply, .format = *(const enum wakers_format *)q->own};
    long bytes;

    if (r != EXIT_OK)
        return r;
    idle_note(q->g, reply, NULL);
    if (json_array_size(json_object_get(reply, "stacks")) == 0)
        return selection_no_data(q->params, "that window (is offcpud running with wakers = yes?)");
    return query_write(q, write_wakers, &job, &bytes);
}

/* its own options: the selection, --help, -o and the stack filters are the
 * scaffold's */
static const struct option wakers_options[] = {{"format", required_argument, NULL, 'f'}, {0}};

QUERY_COMMAND(wakers, .output = true, .stack_filters = true);

int cmd_wakers(const struct globals *g, int argc, char **argv)
{
    enum wakers_format format = g->json ? WAKERS_JSON : WAKERS_FOLDED;

    return query_command_run(&wakers_command, &format, g, argc, argv);
}
