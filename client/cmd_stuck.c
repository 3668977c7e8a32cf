/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl stuck: tasks off-CPU right now for longer than a threshold. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "daemon_call.h"
#include "duration.h"
#include "macro.h"
#include "render_stuck.h"
#include "query_command.h"
#include "selection.h"

static void stuck_usage(FILE *f)
{
    fprintf(f, "Usage: offcpuctl [--socket PATH] [--json] stuck [OPTIONS]\n"
               "Show tasks off-CPU right now for longer than a threshold: since when, in which\n"
               "state, and the stacks they blocked with (read live from the kernel).\n\n"
               "  --min DURATION         blocked at least this long (default 1s)\n" SELECTION_HELP
               "  (--since and --until do not apply: stuck is about now)\n");
}

/* The threshold, and no window: stuck is about now. */
static int stuck_option(int c, const char *arg, struct query *q)
{
    uint64_t *min_ns = q->own;

    switch (c) {
    case 'm':
        if (duration_parse(arg, min_ns) < 0)
            return usage_error("invalid duration '%s' for --min (use e.g. 500ms, 1s, 1m)", arg);
        return EXIT_OK;
    case 'S':
    case 'U':
    case 'W':
    case 'I':
        return usage_error("%s does not apply to stuck, which is about now (use --min)",
                           c == 'S'   ? "--since"
                           : c == 'U' ? "--until"
                           : c == 'W' ? "--min-wait"
                                      : "--no-idle");
    default:
        return -ENOENT;
    }
}

static int stuck_run(struct query *q)
{
    const uint64_t *min_ns = q->own;
    json_auto_t *reply = NULL;
    char what[256], min[32];
    int r;

    json_object_set_new(q->params, "min_ns", json_integer((json_int_t)*min_ns));
    r = daemon_call(q->g, "io.offcpud.Stuck", q->params, &reply);
    if (r != EXIT_OK)
        return r;
    if (q->g->json)
        return finish_output(print_json(reply));
    if (render_stuck(stdout, reply) == 0) {
        selection_describe(q->params, what, sizeof(what));
        printf("no task%s has been off-CPU for %s or longer\n", strcmp(what, " at all") ? what : "",
               duration_format(*min_ns, min, sizeof(min)));
    }
    return finish_output(EXIT_OK);
}

/* its own options: the selection, --help, -o and the stack filters are the
 * scaffold's */
static const struct option stuck_options[] = {{"min", required_argument, NULL, 'm'}, {0}};

QUERY_COMMAND(stuck);

int cmd_stuck(const struct globals *g, int argc, char **argv)
{
    uint64_t min_ns = NSEC_PER_SEC;

    return query_command_run(&stuck_command, &min_ns, g, argc, argv);
}
