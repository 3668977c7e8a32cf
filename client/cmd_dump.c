/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl dump: the off-CPU stacks of a selection, folded or as JSON. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "daemon_call.h"
#include "folded_reply.h"
#include "idle_note.h"
#include "duration.h"
#include "macro.h"
#include "pprof.h"
#include "protocol.h"
#include "query_command.h"
#include "render.h"
#include "selection.h"
#include "selection_flamegraph.h"

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
/* --format's words, in the order of enum dump_format */
static const char *const formats[] = {"folded", "json", "svg", "pprof"};

struct dump_output {
    enum dump_format format;
    enum stack_time time;
    bool time_given;
};

/* The options of dump beyond the selection. */
static int dump_option(int c, const char *arg, struct query *q)
{
    struct dump_output *out = q->own;
    int r;

    switch (c) {
    case 'f':
        r = choice_parse(arg, formats, ARRAY_SIZE(formats));
        if (r < 0)
            return usage_error("invalid --format '%s' (folded, json, svg or pprof)", arg);
        out->format = (enum dump_format)r;
        return EXIT_OK;
    case 'T':
        if (stack_time_parse(arg, &out->time) < 0)
            return usage_error("invalid --time '%s' (total, blocked or runq)", arg);
        out->time_given = true;
        return EXIT_OK;
    case 'F':
        json_object_set_new(q->params, "frame_detail", json_true());
        return EXIT_OK;
    default:
        return -ENOENT;
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
        return selection_flamegraph(job->g, job->params, &req, f, &written);
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

/* The options that do not go together, each a usage error. */
static int check_options(const struct query *q, const struct dump_output *out)
{
    /* folded lines have nowhere to put it */
    if ((out->format == FORMAT_FOLDED || out->format == FORMAT_SVG) &&
        json_object_get(q->params, "frame_detail"))
        return usage_error("--frame-detail needs --json or --format json");
    /* a terminal would only show the binary as garbage */
    if (out->format == FORMAT_PPROF && !q->output && isatty(STDOUT_FILENO))
        return usage_error("pprof output is binary: give -o FILE or redirect it");
    if (out->format == FORMAT_SVG && json_object_get(q->params, "group_by"))
        return usage_error("--format svg does not take --group-by");
    /* json has every time of each stack; svg and pprof show the total */
    if (out->time_given && out->format != FORMAT_FOLDED)
        return usage_error("--time is for folded output (json has total_ns and runq_ns)");
    return EXIT_OK;
}

static int dump_run(struct query *q)
{
    const struct dump_output *out = q->own;
    json_auto_t *reply = NULL;
    struct dump_job job;
    long bytes;
    int r = check_options(q, out);

    if (r == EXIT_OK && out->format == FORMAT_PPROF)
        ask_for_pprof(q->params);
    if (r == EXIT_OK && out->format != FORMAT_SVG) {
        /* folded lines want the stacks as text: the daemon folds them */
        r = daemon_call(q->g,
                        out->format == FORMAT_FOLDED ? "io.offcpud.Folded" : "io.offcpud.Dump",
                        q->params, &reply);
        idle_note(q->g, reply, NULL);
        if (r == EXIT_OK && reply_stacks_count(reply) == 0)
            return selection_no_data(q->params, "that window");
    }
    if (r != EXIT_OK)
        return r;
    job = (struct dump_job){
        .g = q->g, .params = q->params, .reply = reply, .format = out->format, .time = out->time};
    return query_write(q, write_dump, &job, &bytes);
}

/* its own options: the selection, --help, -o and the stack filters are the
 * scaffold's */
static const struct option dump_options[] = {

    {"format", required_argument, NULL, 'f'},
    {"frame-detail", no_argument, NULL, 'F'},
    {"time", required_argument, NULL, 'T'},
    {0}};

QUERY_COMMAND(dump, .output = true, .stack_filters = true);

int cmd_dump(const struct globals *g, int argc, char **argv)
{
    struct dump_output out = {.format = g->json ? FORMAT_JSON : FORMAT_FOLDED};

    return query_command_run(&dump_command, &out, g, argc, argv);
}
