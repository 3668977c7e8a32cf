/* SPDX-License-Identifier: GPL-2.0-only */
#include "daemon_errors.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "duration.h"
#include "macro.h"
#include "notes.h"
#include "render.h"
#include "selection.h"

static int64_t param_int(const json_t *params, const char *key, int64_t absent)
{
    json_t *v = json_object_get(params, key);

    return json_is_integer(v) ? json_integer_value(v) : absent;
}

/* "04:31:02" today, else with the date: the history is hours, a window minutes. */
static const char *clock_text(int64_t ns, char *buf, size_t size)
{
    char today[16];
    time_t now = time(NULL);
    struct tm tm;

    render_time(ns, buf, size);
    strftime(today, sizeof(today), "%Y-%m-%d", localtime_r(&now, &tm));
    if (strncmp(buf, today, strlen(today)) == 0)
        memmove(buf, buf + strlen(today) + 1, strlen(buf + strlen(today) + 1) + 1);
    return buf;
}

/* A duration in whole seconds as --since reads it: "10m12s", "1h". */
static const char *span_text(int64_t ns, char *buf, size_t size)
{
    uint64_t s = ns > 0 ? ((uint64_t)ns + NSEC_PER_SEC - 1) / NSEC_PER_SEC : 0;
    size_t len = 0;

    buf[0] = '\0';
    if (s >= 3600)
        len += snprintf(buf + len, size - len, "%" PRIu64 "h", s / 3600);
    if (s % 3600 >= 60 && len < size)
        len += snprintf(buf + len, size - len, "%" PRIu64 "m", s % 3600 / 60);
    if ((s % 60 || !s) && len < size)
        snprintf(buf + len, size - len, "%" PRIu64 "s", s % 60);
    return buf;
}

/* The group that owns the socket: its members may read. */
static const char *socket_group(const char *path, char *buf, size_t size)
{
    struct stat st;
    struct group *gr;

    if (stat(path, &st) < 0 || st.st_gid == 0 || !(gr = getgrgid(st.st_gid)))
        return NULL;
    snprintf(buf, size, "%s", gr->gr_name);
    return buf;
}

static const char *user_name(void)
{
    struct passwd *pw = getpwuid(getuid());

    return pw ? pw->pw_name : "USER";
}

/* "; add yourself to group offcpu (...) and log in again", or why nobody can. */
static void join_advice(const char *socket, char *buf, size_t size)
{
    char group[64];

    if (socket_group(socket, group, sizeof(group)))
        snprintf(buf, size, "; add yourself to group %s (usermod -aG %s %s) and log in again",
                 group, group, user_name());
    else
        snprintf(buf, size,
                 "; only root may read: offcpud has no socket group (socket-group, "
                 "see offcpud.conf(5))");
}

int socket_error(const char *path, int err)
{
    char advice[256] = "";

    if (err == -EACCES || err == -EPERM)
        join_advice(path, advice, sizeof(advice));
    else if (err == -ENOENT || err == -ECONNREFUSED)
        snprintf(advice, sizeof(advice), " (is offcpud running?)");
    return fail("cannot connect to %s: %s%s", path, strerror(-err), advice);
}

/* "pid 42", "thread 43", or "what was asked for". */
static void task_text(const json_t *params, char *buf, size_t size)
{
    int64_t pid = param_int(params, "pid", -1), tid = param_int(params, "tid", -1);

    if (tid >= 0)
        snprintf(buf, size, "thread %" PRId64, tid);
    else if (pid >= 0)
        snprintf(buf, size, "pid %" PRId64, pid);
    else
        snprintf(buf, size, "what was asked for");
}

static int other_users(const json_t *params)
{
    const char *group = json_string_value(json_object_get(params, "group")) ?: "?";
    int64_t uid = param_int(params, "uid", -1);
    char task[64], owner[96] = "is not yours as ptrace judges it (setuid, or not dumpable)";

    task_text(params, task, sizeof(task));
    if (uid >= 0)
        snprintf(owner, sizeof(owner), "belongs to uid %" PRId64, uid);
    return fail("permission denied: %s %s; members of group %s see only their own processes "
                "unless group-access = all (see offcpud.conf(5))",
                task, owner, group);
}

/* "no off-CPU data for pid 42 in that window: " and why: never seen. */
static int task_not_seen(const json_t *request, const json_t *params)
{
    json_t *oldest = json_object_get(params, "oldest_ns");
    char what[256], from[32], to[32];

    selection_describe(request, what, sizeof(what));
    if (!json_is_integer(oldest))
        return fail("no off-CPU data%s in that window: offcpud has no history yet, and that task "
                    "does not run now",
                    what);
    return fail("no off-CPU data%s in that window: offcpud never saw it, and it does not run now "
                "(the history kept runs from %s to %s); check the number (ps -e)",
                what, clock_text(json_integer_value(oldest), from, sizeof(from)),
                clock_text(param_int(params, "newest_ns", 0), to, sizeof(to)));
}

/* ... or gone before the window. */
static int task_exited(const json_t *request, const json_t *params)
{
    int64_t first = param_int(params, "first_ns", 0), last = param_int(params, "last_ns", 0);
    int64_t retention = param_int(params, "retention_ns", 0);
    int64_t now = (int64_t)time(NULL) * (int64_t)NSEC_PER_SEC;
    char what[256], exited[32], since[32], kept[32], until[32];

    selection_describe(request, what, sizeof(what));
    return fail("no off-CPU data%s in that window: it exited at about %s; its data is kept for "
                "the history's length (%s, until %s): ask for a window that reaches it, "
                "e.g. --since %s",
                what, clock_text(last, exited, sizeof(exited)),
                span_text(retention, kept, sizeof(kept)),
                clock_text(last + retention, until, sizeof(until)),
                /* with room: the time this line takes to be read, and the
                 * span written in whole units */
                span_text(now - first + 2 * (int64_t)NSEC_PER_SEC, since, sizeof(since)));
}

static int window_not_retained(const json_t *request, const json_t *params)
{
    int64_t oldest = param_int(params, "oldest_ns", 0), newest = param_int(params, "newest_ns", 0);
    char from[32], to[32];

    clock_text(oldest, from, sizeof(from));
    clock_text(newest, to, sizeof(to));
    /* a window after the newest data starts at a time given as @T */
    if (param_int(request, "start_ns", INT64_MIN) > newest)
        return fail("that window starts after the newest data offcpud has (it keeps from %s to "
                    "now, %s): ask for a time before now",
                    from, to);
    return fail("that window ends before the oldest data offcpud keeps (it keeps from %s to %s; "
                "see retention in offcpuctl status): ask for a later window",
                from, to);
}

int daemon_error_explain(const char *socket, const char *method, const json_t *request,
                         const char *error, const json_t *params)
{
    const char *param = json_string_value(json_object_get(params, "parameter"));
    const char *unit = json_string_value(json_object_get(params, "unit"));
    const char *path = json_string_value(json_object_get(params, "path"));
    const char *reason = json_string_value(json_object_get(params, "reason"));
    char advice[256];

    if (strcmp(error, "org.varlink.service.PermissionDenied") == 0) {
        join_advice(socket, advice, sizeof(advice));
        return fail("permission denied by offcpud for %s%s", method, advice);
    }
    if (strcmp(error, "io.offcpud.OtherUsersTasks") == 0)
        return other_users(params);
    if (strcmp(error, "org.varlink.service.InvalidParameter") == 0 && param &&
        (strcmp(param, "until_ns") == 0 || strcmp(param, "end_ns") == 0))
        return fail("the window ends before it starts: --until must be later than --since "
                    "(durations count back from now: --since 60s --until 10s)");
    if (strcmp(error, "io.offcpud.CgroupNotFound") == 0)
        return fail("no cgroup %s: not a cgroup v2 directory now, nor seen in offcpud's data",
                    path ?: "?");
    if (strcmp(error, "io.offcpud.UnitNotFound") == 0)
        return fail("unknown unit %s: no unit file, and no cgroup of it seen", unit ?: "?");
    if (strcmp(error, "io.offcpud.UnitWithoutCgroup") == 0)
        return fail("unit %s has no cgroup: it is not running, and offcpud has not seen it run",
                    unit ?: "?");
    if (strcmp(error, "io.offcpud.WindowNotRetained") == 0)
        return window_not_retained(request, params);
    if (strcmp(error, "io.offcpud.TaskNotSeen") == 0)
        return task_not_seen(request, params);
    if (strcmp(error, "io.offcpud.TaskExited") == 0)
        return task_exited(request, params);
    if (strcmp(error, "io.offcpud.NotSupported") == 0)
        return fail("not supported by this offcpud: %s", reason ?: "?");
    return -ENOENT;
}

/* Has the answer anything in it? */
static bool answer_has_data(const json_t *reply)
{
    return reply_stacks_count(reply) || json_array_size(json_object_get(reply, "rows")) ||
           param_int(reply, "records", 0) > 0;
}

void answer_notes_print(const json_t *request, const json_t *reply)
{
    int64_t history = param_int(reply, "history_start_ns", INT64_MIN);
    int64_t hidden = param_int(reply, "hidden_processes", 0);
    int64_t since = param_int(request, "since_ns", -1);
    char shown[32], asked[48] = "", at[32];

    if (!answer_has_data(reply))
        return;
    if (history != INT64_MIN) {
        if (since >= 0) {
            char span[32];

            snprintf(asked, sizeof(asked), " of the %s asked",
                     span_text(since, span, sizeof(span)));
        }
        note_set("clipped", "showing %s%s: history starts at %s",
                 span_text(param_int(reply, "end_ns", history) - history, shown, sizeof(shown)),
                 asked, clock_text(history, at, sizeof(at)));
    }
    if (hidden > 0)
        note_set("hidden",
                 "%" PRId64 " process%s of other users hidden (see group-access in "
                 "offcpud.conf(5))",
                 hidden, hidden == 1 ? "" : "es");
}
