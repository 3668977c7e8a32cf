/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl timeline: off-CPU time per interval and task state over a window,
 * to see when a stall began. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "daemon_call.h"
#include "idle_note.h"
#include "render.h"
#include "query_command.h"
#include "selection.h"
#include "timeline_text.h"

/* the Varlink interface's bounds on buckets */
#define MAX_BUCKETS 1000

static void timeline_usage(FILE *f)
{
    fprintf(f,
            "Usage: offcpuctl [--socket PATH] [--json] timeline [OPTIONS]\n"
            "Show off-CPU time per interval and task state: when a stall began.\n\n" SELECTION_HELP
            "  --buckets N            intervals to split the window into (1-1000, default 60;\n"
            "                         never shorter than the daemon's interval)\n");
}

static int timeline_option(int c, const char *arg, struct query *q)
{
    char *end;
    long n;

    if (c != 'b')
        return -ENOENT;
    errno = 0;
    n = strtol(arg, &end, 10);
    if (errno || *end || end == arg || n < 1 || n > MAX_BUCKETS)
        return usage_error("invalid --buckets '%s' (1 to %d)", arg, MAX_BUCKETS);
    json_object_set_new(q->params, "buckets", json_integer(n));
    return EXIT_OK;
}

static int print_timeline(const json_t *params, const json_t *reply, bool json_out)
{
    struct timeline tl;
    char title[512], window[128];
    int r = timeline_read(reply, &tl);

    if (r < 0)
        return fail("reading the daemon's timeline: %s", strerror(-r));
    if (!tl.peak_ns) {
        timeline_done(&tl);
        return selection_no_data(params, "that window");
    }
    if (json_out) {
        r = print_json(reply);
    } else {
        selection_title(params, "Off-CPU time", title, sizeof(title));
        render_window(json_integer_value(json_object_get(reply, "start_ns")),
                      json_integer_value(json_object_get(reply, "end_ns")), window, sizeof(window));
        snprintf(title + strlen(title), sizeof(title) - strlen(title), ", %s", window);
        timeline_text_write(stdout, &tl, title);
        r = EXIT_OK;
    }
    timeline_done(&tl);
    return r;
}

static int timeline_run(struct query *q)
{
    json_auto_t *reply = NULL;
    int r = daemon_call(q->g, "io.offcpud.Timeline", q->params, &reply);

    if (r != EXIT_OK)
        return r;
    idle_note(q->g, reply, NULL);
    return finish_output(print_timeline(q->params, reply, q->g->json));
}

/* its own options: the selection, --help, -o and the stack filters are the
 * scaffold's */
static const struct option timeline_options[] = {{"buckets", required_argument, NULL, 'b'}, {0}};

QUERY_COMMAND(timeline);

int cmd_timeline(const struct globals *g, int argc, char **argv)
{
    return query_command_run(&timeline_command, NULL, g, argc, argv);
}
