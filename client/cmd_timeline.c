/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl timeline: off-CPU time per interval and task state over a window,
 * to see when a stall began. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "daemon_call.h"
#include "render.h"
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

static int parse_buckets(const char *arg, json_t *params)
{
    char *end;
    long n;

    errno = 0;
    n = strtol(arg, &end, 10);
    if (errno || *end || end == arg || n < 1 || n > MAX_BUCKETS)
        return usage_error("invalid --buckets '%s' (1 to %d)", arg, MAX_BUCKETS);
    json_object_set_new(params, "buckets", json_integer(n));
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

int cmd_timeline(const struct globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        SELECTION_OPTIONS,
        {"buckets", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_auto_t *params = json_object();
    json_auto_t *reply = NULL;
    int c, r = EXIT_OK;

    optind = 1;
    opterr = 0;
    while (r == EXIT_OK && (c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        if (c == 'h') {
            timeline_usage(stdout);
            return EXIT_OK;
        }
        r = selection_option(c, optarg, params);
        if (r == -ENOENT)
            r = c == 'b' ? parse_buckets(optarg, params) : option_error(c, argv);
    }
    if (r == EXIT_OK && optind < argc)
        r = usage_error("unexpected argument '%s'", argv[optind]);
    if (r == EXIT_OK)
        r = daemon_call(g, "io.offcpud.Timeline", params, &reply);
    if (r != EXIT_OK)
        return r;
    return finish_output(print_timeline(params, reply, g->json));
}
