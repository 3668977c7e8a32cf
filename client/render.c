/* SPDX-License-Identifier: GPL-2.0-only */
#include "render.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "duration.h"
#include "folded.h"
#include "macro.h"
#include "name_escape.h"

/* Text that names something (a cgroup, a file) as a line for a terminal. */
static void put_line(FILE *f, const char *s)
{
    name_escape_put(f, s ?: "?", NAME_ESCAPE_CONTROL);
    fputc('\n', f);
}

static void put_frames(FILE *f, const json_t *frames)
{
    size_t i;
    json_t *v;

    json_array_foreach(frames, i, v) folded_put_frame(f, json_string_value(v) ?: "?", 0);
}

static void put_frames_reversed(FILE *f, const json_t *frames)
{
    for (size_t i = json_array_size(frames); i-- > 0;)
        folded_put_frame(f, json_string_value(json_array_get(frames, i)) ?: "?", 0);
}

/* The waker of a Wakers stack, as offwaketime -f folds it: after "--", its
 * stack leaf first (its leaf meets the woken task's leaf, where the wakeup
 * happened), kernel then user, its comm last. */
static void put_waker(FILE *f, const json_t *stack)
{
    json_t *v;

    fputs(";--", f);
    put_frames_reversed(f, json_object_get(stack, "waker_kernel"));
    fputs(FOLDED_KERNEL_SEPARATOR, f);
    put_frames_reversed(f, json_object_get(stack, "waker_user"));
    if ((v = json_object_get(stack, "waker_tid")) && json_is_integer(v))
        fprintf(f, ";[tid %lld]", (long long)json_integer_value(v));
    if ((v = json_object_get(stack, "waker_pid")) && json_is_integer(v))
        fprintf(f, ";[pid %lld]", (long long)json_integer_value(v));
    folded_put_frame(f, json_string_value(json_object_get(stack, "waker_comm")) ?: "?", 0);
}

/* The fields a Dump stack was grouped by, as it has them. */
static struct folded_labels labels_of(const json_t *stack)
{
    const json_t *pid = json_object_get(stack, "pid"), *tid = json_object_get(stack, "tid");
    const char *state = json_string_value(json_object_get(stack, "state"));

    return (struct folded_labels){
        .has_pid = json_is_integer(pid),
        .has_tid = json_is_integer(tid),
        .pid = (long long)json_integer_value(pid),
        .tid = (long long)json_integer_value(tid),
        .state = state ? state[0] : 0,
        .cgroup = json_string_value(json_object_get(stack, "cgroup")),
    };
}

char *render_folded_stack(const json_t *stack)
{
    struct folded_labels labels = labels_of(stack);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);

    if (!f)
        return NULL;
    folded_put_head(f, json_string_value(json_object_get(stack, "comm")) ?: "?", &labels, 0);
    put_frames(f, json_object_get(stack, "user"));
    fputs(FOLDED_KERNEL_SEPARATOR, f);
    put_frames(f, json_object_get(stack, "kernel"));
    if (json_object_get(stack, "waker_comm"))
        put_waker(f, stack);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

int stack_time_parse(const char *s, enum stack_time *ret)
{
    static const char *const names[] = {
        [STACK_TIME_TOTAL] = "total", [STACK_TIME_BLOCKED] = "blocked", [STACK_TIME_RUNQ] = "runq"};

    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        if (strcmp(s, names[i]) == 0) {
            *ret = (enum stack_time)i;
            return 0;
        }
    return -EINVAL;
}

size_t reply_stacks_count(const json_t *reply)
{
    const json_t *stacks = json_object_get(reply, "stacks");

    return json_is_object(stacks) ? json_array_size(json_object_get(stacks, "head"))
                                  : json_array_size(stacks);
}

int64_t stack_time_of(int64_t total_ns, int64_t runq_ns, enum stack_time which)
{
    switch (which) {
    case STACK_TIME_BLOCKED:
        return total_ns - runq_ns;
    case STACK_TIME_RUNQ:
        return runq_ns;
    default:
        return total_ns;
    }
}

int64_t stack_time_ns(const json_t *stack, enum stack_time which)
{
    return stack_time_of(json_integer_value(json_object_get(stack, "total_ns")),
                         json_integer_value(json_object_get(stack, "runq_ns")), which);
}

static const char *bytes_text(json_int_t v, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = (double)v;
    size_t u = 0;

    while (x >= 1024 && u + 1 < ARRAY_SIZE(units)) {
        x /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", x, units[u]);
    return buf;
}

const char *render_ns(int64_t v, char *buf, size_t size)
{
    if (v < 1000000)
        snprintf(buf, size, "%.1fus", v / 1e3);
    else if (v < 1000000000)
        snprintf(buf, size, "%.1fms", v / 1e6);
    else
        snprintf(buf, size, "%.1fs", v / 1e9);
    return buf;
}

const char *render_time(int64_t ns, char *buf, size_t size)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;

    strftime(buf, size, "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
    return buf;
}

const char *render_window(int64_t start_ns, int64_t end_ns, char *buf, size_t size)
{
    char start[32], end[32], length[32];

    render_time(start_ns, start, sizeof(start));
    render_time(end_ns, end, sizeof(end));
    render_ns(end_ns - start_ns, length, sizeof(length));
    /* the day once: windows are minutes long */
    snprintf(buf, size, "%s to %s (%s)", start, strncmp(start, end, 11) == 0 ? end + 11 : end,
             length);
    return buf;
}

enum kind { K_PLAIN, K_BYTES, K_NS, K_DURATION, K_TIME, K_BOOL, K_PERCENT };

/* "34 snapshots, 14m to 2m old at start, written on another host (0.0.9)":
 * history this start did not collect, and whose it was. */
static void print_restored(FILE *f, const json_t *r)
{
    int64_t at = json_integer_value(json_object_get(r, "at_ns"));
    int64_t oldest = json_integer_value(json_object_get(r, "oldest_ns"));
    int64_t newest = json_integer_value(json_object_get(r, "newest_ns"));
    const char *origin = json_string_value(json_object_get(r, "origin")) ?: "unknown";
    const char *version = json_string_value(json_object_get(r, "version")) ?: "";
    char from[32], to[32];

    if (!r)
        return;
    render_ns(at - oldest, from, sizeof(from));
    render_ns(at - newest, to, sizeof(to));
    fprintf(f, "%-22s %lld snapshots, %s to %s old at start, written %s%s%s%s\n", "restored",
            (long long)json_integer_value(json_object_get(r, "snapshots")), from, to,
            strcmp(origin, "unknown") == 0        ? "by an unknown writer"
            : strcmp(origin, "another host") == 0 ? "on another host"
            : strcmp(origin, "this boot") == 0    ? "in this boot"
                                                  : "in an earlier boot",
            *version ? " (offcpud " : "", version, *version ? ")" : "");
}

int render_status(FILE *f, const json_t *st)
{
    static const struct {
        const char *key, *label;
        enum kind kind;
    } rows[] = {
        {"verdict", "verdict", K_PLAIN},
        {"version", "version", K_PLAIN},
        {"pid", "pid", K_PLAIN},
        {"uptime_ns", "uptime", K_NS},
        {"attach", "attached with", K_PLAIN},
        {"code_mapped_at", "code mapped seen at", K_PLAIN},
        {"interval_ns", "interval", K_DURATION},
        {"retention_ns", "retention", K_DURATION},
        {"snapshots", "snapshots", K_PLAIN},
        {"oldest_ns", "oldest", K_TIME},
        {"newest_ns", "newest", K_TIME},
        {"memory_used", "memory used", K_BYTES},
        {"rss", "daemon resident", K_BYTES},
        {"memory_limit", "memory limit", K_BYTES},
        {"evicted_retention", "evicted (retention)", K_PLAIN},
        {"evicted_memory", "evicted (memory)", K_PLAIN},
        {"coarsened_records", "stacks taken (memory)", K_PLAIN},
        {"drains", "drains", K_PLAIN},
        {"drain_last_ns", "last drain took", K_NS},
        {"drain_max_ns", "longest drain", K_NS},
        {"drain_max_cpu_ns", "longest drain, CPU", K_NS},
        {"drain_startup_ns", "first drain took", K_NS},
        {"drain_budget_ns", "drain budget", K_DURATION},
        {"drain_budget_stops", "drains over budget", K_PLAIN},
        {"drain_records_carried", "records carried", K_PLAIN},
        {"drain_records_pending", "records pending", K_PLAIN},
        {"drained_records", "records drained", K_PLAIN},
        {"stacks_interned", "stacks kept", K_PLAIN},
        {"strings_interned", "names kept", K_PLAIN},
        {"symbol_files", "ELF files cached", K_PLAIN},
        {"symbol_memory_used", "symbol memory", K_BYTES},
        {"symbol_memory_limit", "symbol memory limit", K_BYTES},
        {"symbol_files_refused", "symbol files refused", K_PLAIN},
        {"symbol_files_evicted", "symbol files evicted", K_PLAIN},
        {"process_maps_reads", "process maps read", K_PLAIN},
        {"process_maps_inherited", "process maps inherited", K_PLAIN},
        {"python_stacks", "python stacks", K_PLAIN},
        {"python_unwoven", "python stacks not woven", K_PLAIN},
        {"python_frames_named", "python frames named", K_PLAIN},
        {"python_frames_unreadable", "python frames unreadable", K_PLAIN},
        {"python_code_objects", "python code objects kept", K_PLAIN},
        {"python_code_memory", "python code memory", K_BYTES},
        {"python_code_evicted", "python code objects evicted", K_PLAIN},
        {"clients", "clients", K_PLAIN},
        {"requests", "requests", K_PLAIN},
        {"request_errors", "request errors", K_PLAIN},
        {"refused_max_clients", "refused (max-clients)", K_PLAIN},
        {"refused_max_clients_per_uid", "refused (per uid)", K_PLAIN},
        {"connections_shed", "closed for another's", K_PLAIN},
        {"request_timeouts", "requests timed out", K_PLAIN},
        {"idle_closed", "closed when idle", K_PLAIN},
        {"reply_too_large", "replies too large", K_PLAIN},
        {"metrics_clients", "metrics clients", K_PLAIN},
        {"metrics_scrapes", "metrics scrapes", K_PLAIN},
        {"metrics_bad_requests", "metrics bad requests", K_PLAIN},
        {"metrics_refused_max_clients", "metrics refused (max)", K_PLAIN},
        {"metrics_refused_per_address", "metrics refused (addr)", K_PLAIN},
        {"metrics_connections_shed", "metrics closed (other)", K_PLAIN},
        {"metrics_request_timeouts", "metrics timed out", K_PLAIN},
        {"metrics_idle_closed", "metrics closed (idle)", K_PLAIN},
        {"journal_bytes", "journal size", K_BYTES},
        {"journal_records", "journal records", K_PLAIN},
        {"journal_cut_tails", "journal tails cut", K_PLAIN},
        {"journal_errors", "state file errors", K_PLAIN},
        {"journal_compactions", "journal compactions", K_PLAIN},
        {"state_written_bytes", "written to state dir", K_BYTES},
        {"stack_cache", "stack cache", K_BOOL},
        {"stack_cache_hit_rate", "stack cache hits", K_PERCENT},
        {"stack_cache_mismatch_rate", "stack cache mismatches", K_PERCENT},
        {"unwind", "unwinding", K_PLAIN},
        {"unwind_files", "unwind files", K_PLAIN},
        {"unwind_rows", "unwind rows", K_PLAIN},
        {"unwind_memory_used", "unwind memory", K_BYTES},
        {"unwind_memory_limit", "unwind memory limit", K_BYTES},
        {"unwind_files_without_cfi", "files without CFI", K_PLAIN},
        {"unwind_files_over_budget", "files over budget", K_PLAIN},
        {"unwind_processes", "unwind tables", K_PLAIN},
        {"unwind_table_reads", "unwind table reads", K_PLAIN},
        {"unwind_tables_inherited", "unwind tables inherited", K_PLAIN},
        {"unwind_asks_superseded", "unwind asks superseded", K_PLAIN},
        {"unwind_files_held_known", "unwind files known held", K_PLAIN},
        {"unwind_tables_cut", "unwind tables cut", K_PLAIN},
        {"unwind_files_read", "unwind files read", K_PLAIN},
        {"unwind_files_debug_frame", "from .debug_frame", K_PLAIN},
        {"unwind_files_shared", "unwind files shared", K_PLAIN},
        {"unwind_build_ns", "unwind rows built in", K_NS},
        {"unwind_files_lingering", "unwind files lingering", K_PLAIN},
        {"unwind_linger_reuses", "unwind linger reuses", K_PLAIN},
        {"unwind_files_refused", "unwind files refused", K_PLAIN},
        {"python_processes", "python processes", K_PLAIN},
        {"python_unknown_version", "python unknown version", K_PLAIN},
    };
    const json_t *collector = json_object_get(st, "collector");
    const char *key;
    json_t *v;
    char buf[64];

    for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
        const char *text = buf;

        v = json_object_get(st, rows[i].key);
        if (!v || json_is_null(v))
            continue;
        if (json_is_string(v))
            text = json_string_value(v);
        else if (rows[i].kind == K_BYTES)
            bytes_text(json_integer_value(v), buf, sizeof(buf));
        else if (rows[i].kind == K_NS)
            render_ns(json_integer_value(v), buf, sizeof(buf));
        else if (rows[i].kind == K_DURATION)
            duration_format((uint64_t)json_integer_value(v), buf, sizeof(buf));
        else if (rows[i].kind == K_TIME)
            render_time(json_integer_value(v), buf, sizeof(buf));
        else if (rows[i].kind == K_BOOL)
            text = json_is_true(v) ? "on" : "off";
        else if (rows[i].kind == K_PERCENT)
            snprintf(buf, sizeof(buf), "%.3f%%", 100.0 * json_number_value(v));
        else
            snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        fprintf(f, "%-22s ", rows[i].label);
        put_line(f, text);
    }
    print_restored(f, json_object_get(st, "restored"));
    /* first after the figures of what runs: what does not */
    v = json_object_get(st, "missing");
    for (size_t i = 0; i < json_array_size(v); i++) {
        fprintf(f, "%-22s ", "missing");
        put_line(f, json_string_value(json_array_get(v, i)));
    }
    v = json_object_get(st, "unwind_refused");
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *e = json_array_get(v, i);

        fprintf(f, "%-22s ", "unwind refused");
        name_escape_put(f, json_string_value(json_object_get(e, "path")) ?: "?",
                        NAME_ESCAPE_CONTROL);
        fprintf(f, " (pid %lld): ", (long long)json_integer_value(json_object_get(e, "pid")));
        put_line(f, json_string_value(json_object_get(e, "reason")));
    }
    v = json_object_get(st, "top_cgroups");
    if (json_array_size(v))
        fprintf(f, "memory by cgroup:\n");
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *c = json_array_get(v, i);
        _cleanup_free_ char *cgroup = name_escape(
            json_string_value(json_object_get(c, "cgroup")) ?: "?", NAME_ESCAPE_CONTROL);

        bytes_text(json_integer_value(json_object_get(c, "bytes")), buf, sizeof(buf));
        fprintf(f, "  %-20s %s in %lld records\n", cgroup ?: "?", buf,
                (long long)json_integer_value(json_object_get(c, "records")));
    }
    fprintf(f, "collector:\n");
    json_object_foreach((json_t *)collector, key, v)
        fprintf(f, "  %-20s %lld\n", key, (long long)json_integer_value(v));
    return 0;
}
