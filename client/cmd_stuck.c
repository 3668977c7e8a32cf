/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl stuck: tasks off-CPU right now for longer than a threshold. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "daemon_call.h"
#include "duration.h"
#include "macro.h"
#include "render_stuck.h"
#include "selection.h"

static void stuck_usage(FILE *f)
{
    fprintf(f, "Usage: offcpuctl [--socket PATH] [--json] stuck [OPTIONS]\n"
               "Show tasks off-CPU right now for longer than a threshold: since when, in which\n"
               "state, and the stacks they blocked with (read live from the kernel).\n\n"
               "  --min DURATION         blocked at least this long (default 1s)\n" SELECTION_HELP
               "  (--since and --until do not apply: stuck is about now)\n");
}

int cmd_stuck(const struct globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        SELECTION_OPTIONS,
        {"min", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_auto_t *params = json_object();
    json_auto_t *reply = NULL;
    char what[256], min[32];
    uint64_t ns = NSEC_PER_SEC;
    int c, r = EXIT_OK;

    optind = 1;
    opterr = 0;
    while (r == EXIT_OK && (c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        if (c == 'h') {
            stuck_usage(stdout);
            return EXIT_OK;
        }
        if (c == 'm') {
            if (duration_parse(optarg, &ns) < 0)
                return usage_error("invalid duration '%s' for --min (use e.g. 500ms, 1s, 1m)",
                                   optarg);
            continue;
        }
        if (c == 'S' || c == 'U')
            return usage_error("%s does not apply to stuck, which is about now (use --min)",
                               c == 'S' ? "--since" : "--until");
        r = selection_option(c, optarg, params);
        if (r == -ENOENT)
            r = option_error(c, argv);
    }
    if (r == EXIT_OK && optind < argc)
        r = usage_error("unexpected argument '%s'", argv[optind]);
    json_object_set_new(params, "min_ns", json_integer((json_int_t)ns));
    if (r == EXIT_OK)
        r = daemon_call(g, "io.offcpud.Stuck", params, &reply);
    if (r != EXIT_OK)
        return r;
    if (g->json)
        return finish_output(print_json(reply));
    if (render_stuck(stdout, reply) == 0) {
        selection_describe(params, what, sizeof(what));
        printf("no task%s has been off-CPU for %s or longer\n", strcmp(what, " at all") ? what : "",
               duration_format(ns, min, sizeof(min)));
    }
    return finish_output(EXIT_OK);
}
