/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl dump: the off-CPU stacks of a selection, folded or as JSON. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "daemon_call.h"
#include "duration.h"
#include "flamegraph_svg.h"
#include "macro.h"
#include "pprof.h"
#include "protocol.h"
#include "output_file.h"
#include "render.h"
#include "selection.h"

static void dump_usage(FILE *f)
{
    fprintf(f, "Usage: offcpuctl [--socket PATH] [--json] dump [OPTIONS]\n"
               "Print off-CPU stacks as folded lines (value: microseconds).\n\n" SELECTION_HELP
               "  --min-total DURATION   drop stacks with less time than this\n"
               "  --time TIME            folded: total (default), blocked (switch-out to\n"
               "                         wakeup) or runq (wakeup or preemption to\n"
               "                         switch-in: waiting for a CPU)\n"
               "  --group-by FIELDS      keep apart by pid,tid,state,cgroup\n"
               "  --format FORMAT        folded (default), json, svg (the flame graph of\n"
               "                         offcpuctl flamegraph) or pprof (gzipped profile.proto\n"
               "                         for go tool pprof; labels comm and the --group-by\n"
               "                         fields, by default pid, tid, state, cgroup)\n"
               "  --frame-detail         with json: each user frame's file, offset, build-id\n"
               "  -o, --output FILE      write to FILE instead of standard output\n");
}

enum dump_format { FORMAT_FOLDED, FORMAT_JSON, FORMAT_SVG, FORMAT_PPROF };

struct dump_output {
    enum dump_format format;
    enum stack_time time;
    bool time_given;
    const char *path; /* NULL: stdout */
};

/* The options of dump beyond the selection. */
static int dump_option(int c, char **argv, json_t *params, struct dump_output *out)
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
    case 'f':
        if (strcmp(optarg, "json") == 0)
            out->format = FORMAT_JSON;
        else if (strcmp(optarg, "folded") == 0)
            out->format = FORMAT_FOLDED;
        else if (strcmp(optarg, "svg") == 0)
            out->format = FORMAT_SVG;
        else if (strcmp(optarg, "pprof") == 0)
            out->format = FORMAT_PPROF;
        else
            return usage_error("invalid --format '%s' (folded, json, svg or pprof)", optarg);
        return EXIT_OK;
    case 'o':
        out->path = optarg;
        return EXIT_OK;
    case 'T':
        if (stack_time_parse(optarg, &out->time) < 0)
            return usage_error("invalid --time '%s' (total, blocked or runq)", optarg);
        out->time_given = true;
        return EXIT_OK;
    case 'F':
        json_object_set_new(params, "frame_detail", json_true());
        return EXIT_OK;
    default:
        return option_error(c, argv);
    }
}

/* pprof wants each frame's file, and labels: those of --group-by, or all
 * (fewer labels keep a whole machine's long window small). */
static void ask_for_pprof(json_t *params)
{
    _cleanup_free_ char *copy = strdup(PPROF_GROUP_BY);
    char *save = NULL;
    json_t *fields;

    json_object_set_new(params, "frame_detail", json_true());
    if (json_object_get(params, "group_by"))
        return;
    fields = json_array();
    for (char *f = copy ? strtok_r(copy, ",", &save) : NULL; f; f = strtok_r(NULL, ",", &save))
        json_array_append_new(fields, json_string(f));
    json_object_set_new(params, "group_by", fields);
}

struct dump_job {
    const struct globals *g;
    json_t *params;
    const json_t *reply; /* none for svg: the flame graph asks for its own */
    enum dump_format format;
    enum stack_time time;
};

/* An output_writer: the dump in its format, to f. */
static int write_dump(FILE *f, void *ctx)
{
    const struct dump_job *job = ctx;
    struct flamegraph_request req = {
        .colors = SVG_COLOR_FRAMES, .min_px = SVG_MIN_PX, .timeline = true};
    struct flamegraph_written written;
    int n;

    switch (job->format) {
    case FORMAT_SVG:
        return flamegraph_svg(job->g, job->params, &req, f, &written);
    case FORMAT_JSON:
        if (json_dumpf(job->reply, f, JSON_INDENT(2)) < 0 || fputc('\n', f) == EOF)
            return -EIO;
        return 0;
    case FORMAT_PPROF:
        if (fflush(f) != 0)
            return -errno;
        return pprof_write(fileno(f), job->reply);
    default:
        n = render_folded(f, job->reply, job->time);
        return n < 0 ? n : 0;
    }
}

int cmd_dump(const struct globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        SELECTION_OPTIONS,
        {"min-total", required_argument, NULL, 'm'},
        {"group-by", required_argument, NULL, 'g'},
        {"format", required_argument, NULL, 'f'},
        {"frame-detail", no_argument, NULL, 'F'},
        {"output", required_argument, NULL, 'o'},
        {"time", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_auto_t *params = json_object();
    json_auto_t *reply = NULL;
    struct dump_output out = {.format = g->json ? FORMAT_JSON : FORMAT_FOLDED};
    struct dump_job job;
    long bytes;
    int c, r = EXIT_OK;

    optind = 1;
    opterr = 0;
    while (r == EXIT_OK && (c = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
        if (c == 'h') {
            dump_usage(stdout);
            return EXIT_OK;
        }
        r = selection_option(c, optarg, params);
        if (r == -ENOENT)
            r = dump_option(c, argv, params, &out);
    }
    if (r == EXIT_OK && optind < argc)
        r = usage_error("unexpected argument '%s'", argv[optind]);
    /* folded lines have nowhere to put it */
    if (r == EXIT_OK && (out.format == FORMAT_FOLDED || out.format == FORMAT_SVG) &&
        json_object_get(params, "frame_detail"))
        r = usage_error("--frame-detail needs --json or --format json");
    /* a terminal would only show the binary as garbage */
    if (r == EXIT_OK && out.format == FORMAT_PPROF && !out.path && isatty(STDOUT_FILENO))
        r = usage_error("pprof output is binary: give -o FILE or redirect it");
    if (r == EXIT_OK && out.format == FORMAT_SVG && json_object_get(params, "group_by"))
        r = usage_error("--format svg does not take --group-by");
    /* json has every time of each stack; svg and pprof show the total */
    if (r == EXIT_OK && out.time_given && out.format != FORMAT_FOLDED)
        r = usage_error("--time is for folded output (json has total_ns and runq_ns)");
    if (r == EXIT_OK && out.format == FORMAT_PPROF)
        ask_for_pprof(params);
    if (r == EXIT_OK && out.format != FORMAT_SVG) {
        r = daemon_call(g, "io.offcpud.Dump", params, &reply);
        if (r == EXIT_OK && json_array_size(json_object_get(reply, "stacks")) == 0)
            return selection_no_data(params, "that window");
    }
    if (r != EXIT_OK)
        return r;
    job = (struct dump_job){
        .g = g, .params = params, .reply = reply, .format = out.format, .time = out.time};
    if (out.path)
        return output_file(out.path, write_dump, &job, &bytes);
    r = write_dump(stdout, &job);
    return finish_output(r < 0 ? fail("writing output: %s", strerror(-r)) : r);
}
