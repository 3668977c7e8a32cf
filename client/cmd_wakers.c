/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl wakers: who woke the tasks of a selection, and from where. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "daemon_call.h"
#include "duration.h"
#include "macro.h"
#include "output_file.h"
#include "render.h"
#include "selection.h"

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
        "  -o, --output FILE      write to FILE instead of standard output\n");
}

struct wakers_job {
    const json_t *reply;
    bool json;
};

static int write_wakers(FILE *f, void *ctx)
{
    const struct wakers_job *job = ctx;
    int n;

    if (job->json)
        return json_dumpf(job->reply, f, JSON_INDENT(2)) < 0 || fputc('\n', f) == EOF ? -EIO : 0;
    n = render_folded(f, job->reply, STACK_TIME_TOTAL);
    return n < 0 ? n : 0;
}

static int wakers_option(int c, char **argv, json_t *params, const char **path)
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
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_auto_t *params = json_object();
    json_auto_t *reply = NULL;
    struct wakers_job job = {.json = g->json};
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
            r = wakers_option(c, argv, params, &path);
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
