/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl top: who was off-CPU most in a window, per state; --watch
 * refreshes like top(1), with plain terminal escape codes. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "daemon_call.h"
#include "idle_note.h"
#include "duration.h"
#include "macro.h"
#include "query_command.h"
#include "selection.h"
#include "top_table.h"

/* One-shot: the last ten seconds unless --since says otherwise. */
#define DEFAULT_WINDOW_NS  (10 * NSEC_PER_SEC)
#define DEFAULT_REFRESH_NS (2 * NSEC_PER_SEC)
#define DEFAULT_LIMIT      20

struct top_options {
    enum top_by by;
    size_t limit;
    bool watch;
    uint64_t refresh_ns;
};

static void top_usage(FILE *f)
{
    fprintf(
        f,
        "Usage: offcpuctl [--socket PATH] [--json] top [OPTIONS]\n"
        "Show who was off-CPU most in a window, with the time per task state\n"
        "(S sleeping, D uninterruptible, R preempted, I idle, OTHER stopped/traced)\n"
        "and %%WIN, the share of the window (over 100%% for several threads).\n\n"
        "  --by WHAT              process (default), thread, cgroup, unit, comm, stack\n"
        "  --limit N              show the N first rows (default 20; 0: all)\n"
        "  --watch                refresh every --interval, like top(1); Ctrl-C ends\n"
        "  --interval DURATION    the refresh interval with --watch (default 2s)\n" SELECTION_HELP
        "  Without --since: the last 10s, or with --watch the last interval.\n");
}

static int top_option(int c, const char *arg, struct query *q)
{
    struct top_options *o = q->own;

    switch (c) {
    case 'b':
        if (top_by_parse(arg, &o->by) < 0)
            return usage_error("invalid --by '%s' (%s)", arg, top_by_names());
        return EXIT_OK;
    case 'l':
        return limit_parse(arg, &o->limit);
    case 'w':
        o->watch = true;
        return EXIT_OK;
    case 'i':
        if (duration_parse(arg, &o->refresh_ns) < 0 || o->refresh_ns < 100 * NSEC_PER_MSEC)
            return usage_error("invalid --interval '%s' (a duration of 100ms or more)", arg);
        return EXIT_OK;
    default:
        return -ENOENT;
    }
}

/* One table: asked, built, written. quiet_empty: an empty window is shown
 * as such instead of failing (a refresh must go on). */
static int show(const struct globals *g, const struct top_options *o, json_t *params,
                bool quiet_empty)
{
    json_auto_t *reply = NULL;
    json_auto_t *out = NULL;
    struct top_table t;
    int r = daemon_call(g, top_method(o->by), params, &reply);

    if (r != EXIT_OK)
        return r;
    idle_note(g, reply, NULL);
    r = top_table_build(reply, o->by, &t);
    if (r < 0)
        return fail("building the table: %s", strerror(-r));
    if (!t.n && !quiet_empty) {
        top_table_done(&t);
        return selection_no_data(params, "that window");
    }
    if (g->json) {
        out = top_table_json(&t, o->limit);
        /* what the answer leaves out, as the daemon said it */
        json_object_set(out, "hidden_processes", json_object_get(reply, "hidden_processes"));
        if (json_object_get(reply, "history_start_ns"))
            json_object_set(out, "history_start_ns", json_object_get(reply, "history_start_ns"));
        idle_note_json(out, reply);
        /* with --watch, one document per line: a stream a program can follow */
        if (o->watch) {
            json_dumpf(out, stdout, JSON_COMPACT);
            putchar('\n');
        } else {
            r = print_json(out);
        }
    } else {
        top_table_print(stdout, &t, o->limit);
    }
    top_table_done(&t);
    return finish_output(r);
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Until Ctrl-C (or SIGTERM): a handler of our own, since a shell that
 * started us in the background had SIGINT ignored, and we would not stop. */
static int watch(const struct globals *g, const struct top_options *o, json_t *params)
{
    struct timespec pause = {(time_t)(o->refresh_ns / NSEC_PER_SEC),
                             (long)(o->refresh_ns % NSEC_PER_SEC)};
    struct sigaction sa = {.sa_handler = on_interrupt};

    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    while (!interrupted) {
        int r;

        /* home and clear: understood by every terminal and by tmux */
        if (!g->json)
            fputs("\033[H\033[2J", stdout);
        r = show(g, o, params, true);
        if (r != EXIT_OK)
            return interrupted ? EXIT_OK : r;
        nanosleep(&pause, NULL);
    }
    return EXIT_OK;
}

static int top_run(struct query *q)
{
    const struct top_options *o = q->own;

    if (!json_object_get(q->params, "since_ns") && !json_object_get(q->params, "start_ns"))
        json_object_set_new(
            q->params, "since_ns",
            json_integer((json_int_t)(o->watch ? o->refresh_ns : DEFAULT_WINDOW_NS)));
    json_object_set_new(q->params, "group_by", top_group_by(o->by));
    /* a stack is a row here: the daemon keeps those shown, of 100,000 in a long window */
    if (o->by == TOP_BY_STACK && o->limit)
        json_object_set_new(q->params, "limit", json_integer((json_int_t)o->limit));
    return o->watch ? watch(q->g, o, q->params) : show(q->g, o, q->params, false);
}

/* its own options: the selection, --help, -o and the stack filters are the
 * scaffold's */
static const struct option top_options[] = {{"by", required_argument, NULL, 'b'},
                                            {"limit", required_argument, NULL, 'l'},
                                            {"watch", no_argument, NULL, 'w'},
                                            {"interval", required_argument, NULL, 'i'},
                                            {0}};

QUERY_COMMAND(top);

int cmd_top(const struct globals *g, int argc, char **argv)
{
    struct top_options o = {
        .by = TOP_BY_PROCESS, .limit = DEFAULT_LIMIT, .refresh_ns = DEFAULT_REFRESH_NS};

    return query_command_run(&top_command, &o, g, argc, argv);
}
