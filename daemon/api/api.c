/* SPDX-License-Identifier: GPL-2.0-only */
#include "api.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_unit.h"
#include "daemon.h"
#include "folded_rows.h"
#include "frame_detail.h"
#include "frame_rules.h"
#include "log.h"
#include "macro.h"
#include "name_escape.h"
#include "protocol.h"
#include "query.h"
#include "query_flame.h"
#include "query_timeline.h"
#include "reply_names.h"
#include "ring_budget.h"
#include "drain.h"
#include "stuck.h"
#include "tasks_unseen.h"
#include "units.h"
#include "verdict.h"
#include "varlink_service.h"
#include "varlink_frame.h"
#include "withheld.h"

static bool get_int(json_t *params, const char *name, json_int_t *ret)
{
    json_t *v = json_object_get(params, name);

    if (!json_is_integer(v))
        return false;
    *ret = json_integer_value(v);
    return true;
}

/* An optional pid or tid: *ret is -1 when absent; false when out of range. */
static bool get_id(json_t *params, const char *name, int64_t *ret)
{
    json_int_t v;

    *ret = -1;
    if (!get_int(params, name, &v))
        return true;
    *ret = v;
    return v > 0 && v <= INT_MAX;
}

static json_t *frames_json(struct reply_names *names, uint32_t stack)
{
    if (stack == QUERY_KERNEL_COLLAPSED)
        return json_pack("[s]", FRAME_MARK_KERNEL);
    return reply_names_stack(names, stack);
}

/* Counts by bucket, up to the last one used. */
static json_t *histogram_json(const struct histogram *h)
{
    json_t *a = json_array();
    size_t n = HISTOGRAM_BUCKETS;

    while (n > 0 && !h->n[n - 1])
        n--;
    for (size_t b = 0; b < n; b++)
        json_array_append_new(a, json_integer((json_int_t)h->n[b]));
    return a;
}

/* As the protocol names a waker's context. */
static const char *waker_kind_name(char kind)
{
    switch (kind) {
    case OFFCPU_WAKER_TASK:
        return "task";
    case OFFCPU_WAKER_HARDIRQ:
        return "hardirq";
    case OFFCPU_WAKER_SOFTIRQ:
        return "softirq";
    case OFFCPU_WAKER_NMI:
        return "nmi";
    default:
        return "unknown";
    }
}

static json_t *row_json(struct reply_names *names, const struct query_row *row, unsigned group_by)
{
    json_t *o =
        json_pack("{s:o, s:I, s:I, s:I, s:I}", "comm", reply_names_string(names, row->comm),
                  "total_ns", (json_int_t)row->total_ns, "runq_ns", (json_int_t)row->runq_ns,
                  "count", (json_int_t)row->count, "max_ns", (json_int_t)row->max_ns);

    if (row->sums)
        json_object_set_new(o, "hist", histogram_json(row->sums));

    if (!(group_by & QUERY_MERGE_STACKS)) {
        json_object_set_new(o, "user", frames_json(names, row->ustack));
        json_object_set_new(o, "kernel", frames_json(names, row->kstack));
    }

    if (group_by & GROUP_BY_PID)
        json_object_set_new(o, "pid", json_integer(row->pid));
    if (group_by & GROUP_BY_TID)
        json_object_set_new(o, "tid", json_integer(row->tid));
    if (group_by & GROUP_BY_STATE)
        json_object_set_new(o, "state", json_stringn(&row->state, 1));
    if (group_by & GROUP_BY_CGROUP)
        json_object_set_new(o, "cgroup", reply_names_string(names, row->cgroup));
    if (group_by & QUERY_GROUP_WHERE)
        json_object_set_new(o, "user_frames",
                            frame_detail_json(names->in, row->ustack, row->uwhere));
    if (group_by & QUERY_WAKERS) {
        json_object_set_new(o, "waker_comm", reply_names_string(names, row->waker_comm));
        json_object_set_new(o, "waker_kind", json_string(waker_kind_name(row->waker_kind)));
        json_object_set_new(o, "waker_user", frames_json(names, row->waker_ustack));
        json_object_set_new(o, "waker_kernel", frames_json(names, row->waker_kstack));
        if (group_by & GROUP_BY_PID)
            json_object_set_new(o, "waker_pid", json_integer(row->waker_pid));
        if (group_by & GROUP_BY_TID)
            json_object_set_new(o, "waker_tid", json_integer(row->waker_tid));
    }
    return o;
}

static json_t *parse_group_by(json_t *params, unsigned *ret)
{
    json_t *a = json_object_get(params, "group_by"), *e;
    size_t i;

    *ret = 0;
    json_array_foreach(a, i, e)
    {
        unsigned field = group_by_field(json_string_value(e));

        if (!field)
            return vl_invalid_parameter("group_by");
        *ret |= field;
    }
    return NULL;
}

/* The window asked for, as [start, end) in CLOCK_REALTIME ns. */
static json_t *parse_window(json_t *params, int64_t now, struct query *q)
{
    json_int_t since, until, start, end;
    bool has_since = get_int(params, "since_ns", &since);
    bool has_until = get_int(params, "until_ns", &until);
    bool has_start = get_int(params, "start_ns", &start);
    bool has_end = get_int(params, "end_ns", &end);

    if ((has_since && (has_start || since < 0)))
        return vl_invalid_parameter("since_ns");
    if ((has_until && (has_end || until < 0)))
        return vl_invalid_parameter("until_ns");
    q->start_ns = has_since ? now - since : has_start ? start : INT64_MIN;
    q->end_ns = has_until ? now - until : has_end ? end : INT64_MAX;
    if (q->end_ns < q->start_ns)
        return vl_invalid_parameter(has_until ? "until_ns" : "end_ns");
    return NULL;
}

/* A comm as replies show it (name_escape.h) to its bytes, kept in params:
 * the name "\xNN" stands for may not be UTF-8. */
static json_t *parse_comm(json_t *params, struct query *q)
{
    json_t *v = json_object_get(params, "comm");
    _cleanup_free_ char *bytes = NULL;
    size_t len;

    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_string(v))
        return vl_invalid_parameter("comm");
    bytes = strdup(json_string_value(v));
    if (!bytes)
        return vl_error_new("io.offcpud.InvalidRequest",
                            json_pack("{s:s}", "reason", "out of memory"));
    len = name_unescape(bytes);
    if (json_string_setn_nocheck(v, bytes, len) < 0)
        return vl_invalid_parameter("comm");
    q->comm = json_string_value(v);
    return NULL;
}

/* The one place the CgroupNotFound error is built: path as the peer gave it. */
static json_t *cgroup_not_found(json_t *params)
{
    return vl_error_new(
        "io.offcpud.CgroupNotFound",
        json_pack("{s:s}", "path", json_string_value(json_object_get(params, "cgroup"))));
}

static json_t *parse_filters(struct daemon *d, json_t *params, struct query *q, char *cgroup,
                             size_t cgroup_size)
{
    json_int_t v;
    const char *s;
    json_t *err;

    if (!get_id(params, "pid", &q->pid))
        return vl_invalid_parameter("pid");
    if (!get_id(params, "tid", &q->tid))
        return vl_invalid_parameter("tid");
    q->min_total_ns = get_int(params, "min_total_ns", &v) && v > 0 ? (uint64_t)v : 0;
    if (get_int(params, "min_wait_ns", &v)) {
        if (v < 0)
            return vl_invalid_parameter("min_wait_ns");
        q->min_wait_ns = (uint64_t)v;
    }
    q->no_idle = json_is_true(json_object_get(params, "no_idle"));
    q->histograms = json_is_true(json_object_get(params, "histograms"));
    if (get_int(params, "limit", &v)) {
        if (v <= 0)
            return vl_invalid_parameter("limit");
        q->limit = (size_t)v;
    }
    if ((err = parse_comm(params, q)))
        return err;
    s = json_string_value(json_object_get(params, "state"));
    if (s) {
        if (!protocol_state_valid(s))
            return vl_invalid_parameter("state");
        q->state = s[0];
    }
    s = json_string_value(json_object_get(params, "unit"));
    if (s) {
        if (!unit_name_valid(s))
            return vl_invalid_parameter("unit");
        q->unit = s;
    }
    s = json_string_value(json_object_get(params, "cgroup"));
    if (s) {
        /* without a cgroup2 mount no cgroup can be named */
        if (!d->cgroups || cgroups_normalize(d->cgroups, s, cgroup, cgroup_size) < 0)
            return cgroup_not_found(params);
        q->cgroup = cgroup;
    }
    return parse_group_by(params, &q->group_by);
}

/* A cgroup asked for must exist now, or have been seen: it may be gone. */
static bool cgroup_exists(struct daemon *d, const char *rel)
{
    char path[PATH_MAX];
    struct stat st;

    snprintf(path, sizeof(path), "%s%s", cgroups_mount(d->cgroups), rel);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool cgroup_known(struct daemon *d, const char *rel, size_t found)
{
    return found > 0 || cgroup_exists(d, rel);
}

/* Whose records a peer reads, and how: the same rules for every method. */
static void query_access(struct daemon *d, const struct peer *peer, struct query *q)
{
    if (access_of(&d->access, peer) == ACCESS_OWN)
        q->uid = peer->uid;
    q->collapse_kernel = access_kernel_frames_hidden(peer);
}

/* The query a Dump or a Timeline asks for: window, filters, and what the
 * peer may see. */
static json_t *prepare_query(struct daemon *d, const struct peer *peer, json_t *params,
                             struct query *q, char *cgroup, size_t cgroup_size)
{
    int64_t now = clock_ns(CLOCK_REALTIME);
    json_t *err;

    *q = (struct query){.uid = -1};
    err = parse_window(params, now, q);
    if (!err)
        err = parse_filters(d, params, q, cgroup, cgroup_size);
    if (err)
        return err;
    query_access(d, peer, q);

    /* a window reaching now includes the generation still being collected:
     * the last milliseconds before a query are what an incident is about */
    if (q->end_ns >= now)
        drain_catch_up(d);
    return NULL;
}

/* The window asked for holds no snapshot: it ends before the oldest, or
 * starts after now. */
static bool window_not_retained(const struct ring *r, const struct query *q, size_t snapshots)
{
    /* a snapshot is in the window when its end is: none can be before the oldest's */
    return !snapshots && r->n &&
           (q->end_ns < r->snaps[0]->end_ns || q->start_ns > clock_ns(CLOCK_REALTIME));
}

/* Why an answer with found records, withheld records of other users, from
 * that many snapshots, is not given: nothing the peer may see, a cgroup that
 * never was, a unit never seen, a window before the oldest data (or after
 * now), a task never seen or gone before the window; NULL if it is. */
static json_t *refusal(struct daemon *d, const struct peer *peer, json_t *params,
                       const struct query *q, size_t found, size_t withheld, size_t snapshots)
{
    const struct ring *r = &d->ring;
    json_t *err;

    if (withheld) {
        log_notice("uid %u (pid %d) asked for pid %" PRId64 " tid %" PRId64
                   " cgroup %s: %zu records of other users withheld",
                   peer->uid, peer->pid, q->pid, q->tid, q->cgroup ?: "any", withheld);
        if (!found)
            return withheld_error(d, q, withheld_owner(r, q));
    }
    if (q->cgroup && !cgroup_known(d, q->cgroup, found))
        return cgroup_not_found(params);
    if (q->unit && !found && (err = unit_unseen_error(d, q->unit)))
        return err;
    if (window_not_retained(r, q, snapshots))
        return vl_error_new("io.offcpud.WindowNotRetained",
                            json_pack("{s:I, s:I}", "oldest_ns", (json_int_t)r->snaps[0]->start_ns,
                                      "newest_ns", (json_int_t)r->snaps[r->n - 1]->end_ns));
    if (!found && (err = task_unseen_error(d, q)))
        return err;
    return NULL;
}

/* What an answer leaves out that its reader should be told: the part of
 * the window before the history kept (history_start_ns), the processes of
 * other users (withheld: their records). */
static json_t *answer_notes(struct daemon *d, const struct query *q, size_t withheld)
{
    const struct ring *r = &d->ring;
    json_t *o = json_pack("{s:I}", "hidden_processes",
                          (json_int_t)(withheld ? withheld_processes(r, q) : 0));

    /* within an interval of the oldest snapshot is retention's own edge */
    if (q->start_ns != INT64_MIN && r->n &&
        q->start_ns < r->snaps[0]->start_ns - (int64_t)d->cfg.interval_ns)
        json_object_set_new(o, "history_start_ns", json_integer(r->snaps[0]->start_ns));
    return o;
}

/* What --no-idle left out, in a reply that asked for it. */
static void add_idle_ns(json_t *reply, const struct query *q, uint64_t idle_ns)
{
    if (q->no_idle)
        json_object_set_new(reply, "idle_ns", json_integer((json_int_t)idle_ns));
}

static json_t *out_of_memory(void)
{
    return vl_error_new("io.offcpud.InvalidRequest",
                        json_pack("{s:s}", "reason", "out of memory running the query"));
}

/* Runs the query params ask for, with extra_group_by added to its group_by:
 * NULL and its rows in *res, or the error to answer instead. q->cgroup points
 * into cgroup. */
static json_t *run_query(struct daemon *d, const struct peer *peer, json_t *params,
                         unsigned extra_group_by, struct query *q, struct query_result *res,
                         char *cgroup, size_t cgroup_size)
{
    json_t *err = prepare_query(d, peer, params, q, cgroup, cgroup_size);

    if (err)
        return err;
    q->group_by |= extra_group_by;
    if (query_run(&d->ring, q, res) < 0)
        return out_of_memory();
    err = refusal(d, peer, params, q, res->n, res->withheld, res->snapshots);
    if (err)
        query_result_done(res);
    return err;
}

/* What every answer to a query says besides its rows: its window and notes. */
static json_t *query_answer(struct daemon *d, const struct query *q, const struct query_result *res)
{
    json_t *reply = json_pack("{s:I, s:I, s:I}", "start_ns", (json_int_t)res->start_ns, "end_ns",
                              (json_int_t)res->end_ns, "snapshots", (json_int_t)res->snapshots);

    json_object_update_new(reply, answer_notes(d, q, res->withheld));
    add_idle_ns(reply, q, res->idle_ns);
    return reply;
}

/* Dump, Wakers and Top: the query's rows under name. extra_group_by: what
 * the method adds to the query's group_by. */
static json_t *query_reply(struct daemon *d, const struct peer *peer, json_t *params,
                           unsigned extra_group_by, const char *name)
{
    struct query q;
    struct query_result res;
    struct reply_names names;
    char cgroup[PATH_MAX];
    json_t *err, *rows, *reply;

    err = run_query(d, peer, params, extra_group_by, &q, &res, cgroup, sizeof(cgroup));
    if (err)
        return err;
    if (reply_names_init(&names, &d->ring.intern) < 0) {
        query_result_done(&res);
        return out_of_memory();
    }
    rows = json_array();
    for (size_t i = 0; i < res.n; i++)
        json_array_append_new(rows, row_json(&names, &res.rows[i], q.group_by));
    reply_names_done(&names);
    reply = query_answer(d, &q, &res);
    json_object_set_new(reply, name, rows);
    if (q.limit)
        json_object_set_new(reply, "stacks_total", json_integer((json_int_t)res.stacks));
    err = vl_reply_new(reply, false);
    query_result_done(&res);
    return err;
}

static const char *const flame_kind_names[] = {
    [FLAME_FRAME_ROOT] = "root",     [FLAME_FRAME_COMM] = "comm",
    [FLAME_FRAME_USER] = "user",     [FLAME_FRAME_SEPARATOR] = "separator",
    [FLAME_FRAME_KERNEL] = "kernel", [FLAME_FRAME_NARROW] = "narrow",
};

static json_t *flame_name_json(const struct intern *in, const struct flame_frame *f)
{
    switch (f->kind) {
    case FLAME_FRAME_ROOT:
        return json_string("all");
    case FLAME_FRAME_SEPARATOR:
        return json_string("-");
    case FLAME_FRAME_NARROW:
        return json_string("");
    default:
        return f->name == FLAME_NAME_KERNEL_COLLAPSED ? json_string(FRAME_MARK_KERNEL)
                                                      : name_json(intern_string_get(in, f->name));
    }
}

static json_t *flame_frame_json(const struct intern *in, const struct flame_result *res, size_t i)
{
    const struct flame_frame *f = &res->frames[i];
    json_t *o = json_pack("{s:I, s:o, s:s, s:I}", "parent", i ? (json_int_t)f->parent : -1, "name",
                          flame_name_json(in, f), "kind", flame_kind_names[f->kind], "total_ns",
                          (json_int_t)f->ns);

    if (f->kind == FLAME_FRAME_NARROW)
        json_object_set_new(o, "merged", json_integer(f->merged));
    if (res->state_ns) {
        json_t *states = json_object();

        for (size_t s = 0; s < TIMELINE_STATES; s++)
            if (res->state_ns[i][s])
                json_object_set_new(states, (char[]){PROTOCOL_STATES[s], '\0'},
                                    json_integer((json_int_t)res->state_ns[i][s]));
        json_object_set_new(o, "state_ns", states);
    }
    return o;
}

/* Dump's stacks merged into the tree a flame graph draws: offcpuctl
 * flamegraph. */
static json_t *method_flame(void *userdata, const struct peer *peer, json_t *params)
{
    struct daemon *d = userdata;
    json_int_t min_ppb = 0, max_frames = 0;
    struct flame_result flame;
    struct query q;
    struct query_result res;
    char cgroup[PATH_MAX];
    json_t *err, *frames, *reply;

    if (get_int(params, "min_width_ppb", &min_ppb) &&
        (min_ppb < 0 || (uint64_t)min_ppb > FLAME_PPB))
        return vl_invalid_parameter("min_width_ppb");
    if (get_int(params, "max_frames", &max_frames) && max_frames < 0)
        return vl_invalid_parameter("max_frames");
    err = run_query(d, peer, params, 0, &q, &res, cgroup, sizeof(cgroup));
    if (err)
        return err;
    if (query_flame(&res, &d->ring.intern, q.group_by & GROUP_BY_STATE, (uint64_t)min_ppb,
                    (size_t)max_frames, &flame) < 0) {
        query_result_done(&res);
        return out_of_memory();
    }
    frames = json_array();
    for (size_t i = 0; i < flame.n; i++)
        json_array_append_new(frames, flame_frame_json(&d->ring.intern, &flame, i));
    reply = query_answer(d, &q, &res);
    json_object_set_new(reply, "stacks", json_integer((json_int_t)res.n));
    json_object_set_new(reply, "frames", frames);
    flame_result_done(&flame);
    query_result_done(&res);
    return vl_reply_new(reply, false);
}

static json_t *method_dump(void *userdata, const struct peer *peer, json_t *params)
{
    bool detail = json_is_true(json_object_get(params, "frame_detail"));

    return query_reply(userdata, peer, params, detail ? QUERY_GROUP_WHERE : 0, "stacks");
}

/* Dump's stacks as folded text: offcpuctl dump and diff's lines. */
static json_t *method_folded(void *userdata, const struct peer *peer, json_t *params)
{
    struct daemon *d = userdata;
    struct query q;
    struct query_result res;
    char cgroup[PATH_MAX];
    json_t *err, *reply;

    err = run_query(d, peer, params, 0, &q, &res, cgroup, sizeof(cgroup));
    if (err)
        return err;
    reply = query_answer(d, &q, &res);
    if (q.limit)
        json_object_set_new(reply, "stacks_total", json_integer((json_int_t)res.stacks));
    if (folded_rows_set(reply, &d->ring.intern, &res, q.group_by) < 0) {
        json_decref(reply);
        reply = NULL;
    }
    query_result_done(&res);
    return reply ? vl_reply_new(reply, false) : out_of_memory();
}

/* Who woke the tasks Dump would select: offcpuctl wakers. */
static json_t *method_wakers(void *userdata, const struct peer *peer, json_t *params)
{
    return query_reply(userdata, peer, params, QUERY_WAKERS, "stacks");
}

/* Dump without stacks: who was off-CPU, for offcpuctl top. */
static json_t *method_top(void *userdata, const struct peer *peer, json_t *params)
{
    return query_reply(userdata, peer, params, QUERY_MERGE_STACKS, "rows");
}

static json_t *method_stuck(void *userdata, const struct peer *peer, json_t *params)
{
    struct daemon *d = userdata;
    struct query q = {.uid = -1};
    char cgroup[PATH_MAX];
    json_int_t min_ns = NSEC_PER_SEC;
    json_t *err = parse_filters(d, params, &q, cgroup, sizeof(cgroup));

    if (err)
        return err;
    if (get_int(params, "min_ns", &min_ns) && min_ns < 0)
        return vl_invalid_parameter("min_ns");
    /* stuck is about now: a cgroup gone has no tasks to be stuck */
    if (q.cgroup && !cgroup_exists(d, q.cgroup))
        return cgroup_not_found(params);
    if (q.unit && (err = unit_unseen_error(d, q.unit)))
        return err;
    query_access(d, peer, &q);
    return stuck_reply(d, &q, (uint64_t)min_ns);
}

static json_t *bucket_json(const struct timeline_result *res, size_t b)
{
    json_t *states = json_object();

    for (size_t s = 0; s < TIMELINE_STATES; s++) {
        char state[2] = {PROTOCOL_STATES[s], '\0'};

        if (res->ns[b][s])
            json_object_set_new(states, state, json_integer((json_int_t)res->ns[b][s]));
    }
    return json_pack("{s:I, s:o}", "start_ns", (json_int_t)(res->start_ns + b * res->bucket_ns),
                     "states", states);
}

static json_t *gaps_json(const struct timeline_result *res)
{
    json_t *a = json_array();

    for (size_t i = 0; i < res->n_gaps; i++)
        json_array_append_new(a,
                              json_pack("{s:I, s:I}", "start_ns", (json_int_t)res->gaps[i].start_ns,
                                        "end_ns", (json_int_t)res->gaps[i].end_ns));
    return a;
}

static json_t *method_timeline(void *userdata, const struct peer *peer, json_t *params)
{
    struct daemon *d = userdata;
    struct query q;
    struct timeline_result res;
    char cgroup[PATH_MAX];
    json_int_t buckets = 60;
    json_t *err, *a, *reply;

    if (json_object_get(params, "buckets") &&
        (!get_int(params, "buckets", &buckets) || buckets < 1 || buckets > TIMELINE_MAX_BUCKETS))
        return vl_invalid_parameter("buckets");
    err = prepare_query(d, peer, params, &q, cgroup, sizeof(cgroup));
    if (err)
        return err;
    if (timeline_run(&d->ring, &q, (size_t)buckets, &res) < 0) {
        timeline_result_done(&res);
        return out_of_memory();
    }
    err = refusal(d, peer, params, &q, res.records, res.withheld, res.snapshots);
    if (err) {
        timeline_result_done(&res);
        return err;
    }
    a = json_array();
    for (size_t b = 0; b < res.n; b++)
        json_array_append_new(a, bucket_json(&res, b));
    reply =
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:o}", "start_ns", (json_int_t)res.start_ns, "end_ns",
                  (json_int_t)res.end_ns, "bucket_ns", (json_int_t)res.bucket_ns, "snapshots",
                  (json_int_t)res.snapshots, "records", (json_int_t)res.records, "buckets", a);
    json_object_update_new(reply, answer_notes(d, &q, res.withheld));
    add_idle_ns(reply, &q, res.idle_ns);
    json_object_set_new(reply, "gaps", gaps_json(&res));
    err = vl_reply_new(reply, false);
    timeline_result_done(&res);
    return err;
}

static json_t *collector_json(struct daemon *d)
{
    json_t *o = json_object();
    double hit_rate, mismatch_rate;

    for (int i = 0; i < COLLECTOR_COUNTERS; i++)
        if (d->stats.collector[i].name)
            json_object_set_new(o, d->stats.collector[i].name,
                                json_integer((json_int_t)d->stats.collector[i].value));
    collector_stack_cache_rates(d->stats.collector, &hit_rate, &mismatch_rate);
    return json_pack("{s:o, s:b, s:f, s:o}", "collector", o, "stack_cache",
                     d->cfg.collector.stack_cache, "stack_cache_hit_rate", hit_rate,
                     "stack_cache_mismatch_rate",
                     mismatch_rate >= 0 ? json_real(mismatch_rate) : json_null());
}

/* The parts that run without what they need from this host, each in a line. */
static json_t *missing_json(struct daemon *d)
{
    json_t *a = json_array();
    const char *m;

    for (uint32_t i = 0; d->collector && (m = collector_missing(d->collector, i)); i++)
        json_array_append_new(a, json_string(m));
    return a;
}

/* The unwind tables: what they hold, what did not fit. */
static json_t *unwind_json(struct daemon *d)
{
    struct unwind_tables_stats u = {0};
    size_t row = sizeof(struct offcpu_unwind_row);

    if (d->collector)
        collector_get_unwind_stats(d->collector, &u);
    return json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
        "unwind", d->cfg.collector.unwind_dwarf ? "dwarf" : "frame-pointer", "unwind_files",
        (json_int_t)u.files, "unwind_rows", (json_int_t)u.rows, "unwind_memory_used",
        (json_int_t)(u.rows * row), "unwind_memory_limit", (json_int_t)(u.rows_max * row),
        "unwind_files_without_cfi", (json_int_t)u.files_without_cfi, "unwind_files_over_budget",
        (json_int_t)u.files_over_budget, "unwind_processes", (json_int_t)u.processes,
        "unwind_table_reads", (json_int_t)u.table_reads, "unwind_tables_inherited",
        (json_int_t)u.tables_inherited, "unwind_asks_superseded", (json_int_t)u.asks_superseded,
        "unwind_files_held_known", (json_int_t)u.files_held_known, "unwind_tables_cut",
        (json_int_t)u.tables_cut, "unwind_files_read", (json_int_t)u.files_read,
        "unwind_files_debug_frame", (json_int_t)u.files_debug_frame, "unwind_files_shared",
        (json_int_t)u.files_shared, "unwind_build_ns", (json_int_t)u.build_ns,
        "unwind_files_lingering", (json_int_t)u.files_lingering, "unwind_rows_lingering",
        (json_int_t)u.rows_lingering, "unwind_linger_reuses", (json_int_t)u.linger_reuses,
        "python_processes", (json_int_t)u.python_processes, "python_unknown_version",
        (json_int_t)u.python_unknown_version);
}

/* Why a file's call frame information was refused (unwind_rows_derive). */
static const char *refused_reason(int error)
{
    switch (error) {
    case -E2BIG:
        return "too large: more CIEs, FDEs, instructions or rows than a file may have";
    case -ETIME:
        return "took more CPU time than a file may take";
    case -EBADMSG:
        return "malformed call frame information";
    default:
        return strerror(-error);
    }
}

/* Files whose call frame information was refused: how many, and the last
 * (to a peer who reads only their own processes' stacks, those of their
 * processes: a path says what another user runs). */
static json_t *unwind_refused_json(struct daemon *d, const struct peer *peer)
{
    struct unwind_tables_stats u = {0};
    bool own = access_of(&d->access, peer) == ACCESS_OWN;
    json_t *a = json_array();

    if (d->collector)
        collector_get_unwind_stats(d->collector, &u);
    for (size_t i = 0; i < u.nrefused; i++) {
        const struct unwind_refused *e = &u.refused[i];

        if (own && e->uid != peer->uid)
            continue;
        json_array_append_new(a, json_pack("{s:o, s:I, s:s}", "path", name_json(e->path), "pid",
                                           (json_int_t)e->pid, "reason", refused_reason(e->error)));
    }
    return json_pack("{s:I, s:o}", "unwind_files_refused", (json_int_t)u.files_refused,
                     "unwind_refused", a);
}

/* The ELF files' symbols: what they hold, what did not fit. */
static json_t *symbols_json(const struct symbolizer_stats *ss)
{
    return json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I}", "symbol_memory_used", (json_int_t)ss->symbol_bytes,
        "symbol_memory_limit", (json_int_t)ss->symbol_memory, "symbol_files_refused",
        (json_int_t)ss->symbol_files_refused, "symbol_files_evicted",
        (json_int_t)ss->symbol_files_evicted, "process_maps_reads", (json_int_t)ss->maps_reads,
        "process_maps_inherited", (json_int_t)ss->maps_inherited);
}

/* CPython frames as the drains named them. */
static json_t *python_naming_json(const struct symbolizer_stats *ss,
                                  const struct snapshot_stats *snap)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "python_stacks",
                     (json_int_t)snap->python_stacks, "python_unwoven",
                     (json_int_t)snap->python_unwoven, "python_frames_named",
                     (json_int_t)(ss->python_frames - ss->python_unreadable),
                     "python_frames_unreadable", (json_int_t)ss->python_unreadable,
                     "python_code_objects", (json_int_t)ss->python_code_objects,
                     "python_code_memory", (json_int_t)ss->python_code_memory,
                     "python_code_evicted", (json_int_t)ss->python_code_evicted);
}

static json_t *server_json(struct daemon *d)
{
    struct vl_server_stats st;

    memset(&st, 0, sizeof(st));
    if (d->server)
        vl_server_get_stats(d->server, &st);
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "clients",
                     (json_int_t)(d->server ? vl_server_clients(d->server) : 0), "requests",
                     (json_int_t)st.requests, "request_errors", (json_int_t)st.request_errors,
                     "refused_max_clients", (json_int_t)st.conns.refused_max_clients,
                     "refused_max_clients_per_uid", (json_int_t)st.conns.refused_max_per_peer,
                     "connections_shed", (json_int_t)st.conns.shed, "request_timeouts",
                     (json_int_t)st.conns.request_timeouts, "idle_closed",
                     (json_int_t)st.conns.idle_closed, "reply_too_large",
                     (json_int_t)st.reply_too_large);
}

/* The metrics endpoint's connections (zero without one). */
static json_t *metrics_http_json(struct daemon *d)
{
    struct http_stats st;

    memset(&st, 0, sizeof(st));
    if (d->metrics_http)
        http_listener_get_stats(d->metrics_http, &st);
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "metrics_clients",
                     (json_int_t)(d->metrics_http ? http_listener_clients(d->metrics_http) : 0),
                     "metrics_scrapes", (json_int_t)st.requests, "metrics_bad_requests",
                     (json_int_t)st.refused, "metrics_refused_max_clients",
                     (json_int_t)st.conns.refused_max_clients, "metrics_refused_per_address",
                     (json_int_t)st.conns.refused_max_per_peer, "metrics_connections_shed",
                     (json_int_t)st.conns.shed, "metrics_request_timeouts",
                     (json_int_t)st.conns.request_timeouts, "metrics_idle_closed",
                     (json_int_t)st.conns.idle_closed);
}

/* The history on disk: what a crash would find. */
static json_t *journal_json(const struct state_dir *st)
{
    bool open = st->journal_fd >= 0;

    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "journal_bytes",
                     (json_int_t)(open ? st->journal.bytes : 0), "journal_records",
                     (json_int_t)(open ? st->journal.records : 0), "journal_cut_tails",
                     (json_int_t)st->stats.cut_tails, "journal_errors",
                     (json_int_t)st->stats.errors, "journal_compactions",
                     (json_int_t)st->stats.compactions, "state_written_bytes",
                     (json_int_t)st->stats.written_bytes);
}

/* What the start restored, and whose it was. */
static json_t *restored_json(const struct state_restored *rs)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:s, s:s}", "snapshots", (json_int_t)rs->snapshots,
                     "oldest_ns", (json_int_t)rs->oldest_ns, "newest_ns", (json_int_t)rs->newest_ns,
                     "at_ns", (json_int_t)rs->at_ns, "origin",
                     state_origin_relation_name(rs->origin), "version", rs->version);
}

/* Who holds the ring's memory: the first to give it up when it is short. */
static json_t *top_cgroups_json(const struct ring *r)
{
    struct ring_consumer top[5];
    size_t n = ring_budget_top(r, top, ARRAY_SIZE(top));
    json_t *a = json_array();

    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:o, s:I, s:I}", "cgroup",
                                           name_json(intern_string_get(&r->intern, top[i].cgroup)),
                                           "bytes", (json_int_t)top[i].bytes, "records",
                                           (json_int_t)top[i].records));
    return a;
}

static json_t *method_status(void *userdata, const struct peer *peer, json_t *params)
{
    struct daemon *d = userdata;
    const struct ring *r = &d->ring;
    struct symbolizer_stats ss;
    json_t *o;

    /* (the fuzzers run the methods on a daemon without these) */
    memset(&ss, 0, sizeof(ss));
    if (d->sym)
        symbolizer_get_stats(d->sym, &ss);
    if (d->collector)
        collector_read_counters(d->collector, d->stats.collector);
    /* the verdict first, as read; set once the counters it reads are in */
    o = json_pack("{s:n, s:s, s:I, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "verdict", "version",
                  OFFCPUD_VERSION, "pid", (json_int_t)getpid(), "uptime_ns",
                  (json_int_t)(clock_ns(CLOCK_MONOTONIC) - d->started_mono_ns), "attach",
                  d->collector ? collector_attach_name(d->collector) : "none", "code_mapped_at",
                  d->collector ? collector_code_mapped_at(d->collector) : "none", "interval_ns",
                  (json_int_t)d->cfg.interval_ns, "retention_ns", (json_int_t)d->cfg.retention_ns,
                  "memory_limit", (json_int_t)d->cfg.memory_limit, "memory_used",
                  (json_int_t)ring_memory(r), "snapshots", (json_int_t)r->n);
    if (r->n) {
        json_object_set_new(o, "oldest_ns", json_integer(r->snaps[0]->start_ns));
        json_object_set_new(o, "newest_ns", json_integer(r->snaps[r->n - 1]->end_ns));
    }
    json_object_update_new(o, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                                        "evicted_retention", (json_int_t)r->evicted_retention,
                                        "evicted_memory", (json_int_t)r->evicted_memory, "drains",
                                        (json_int_t)d->stats.drains, "drain_last_ns",
                                        (json_int_t)d->stats.drain_last_ns, "drain_max_ns",
                                        (json_int_t)d->stats.drain_max_ns, "drained_records",
                                        (json_int_t)d->stats.snap.records, "stacks_interned",
                                        (json_int_t)r->intern.stacks.count, "strings_interned",
                                        (json_int_t)r->intern.strings.count, "symbol_files",
                                        (json_int_t)ss.elf_files));
    json_object_update_new(o, symbols_json(&ss));
    json_object_update_new(o, python_naming_json(&ss, &d->stats.snap));
    json_object_update_new(o, collector_json(d));
    json_object_set_new(o, "missing", missing_json(d));
    json_object_update_new(o, unwind_json(d));
    json_object_update_new(o, unwind_refused_json(d, peer));
    json_object_set_new(o, "coarsened_records", json_integer((json_int_t)r->coarsened_records));
    json_object_update_new(
        o, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "drain_budget_ns",
                     (json_int_t)d->cfg.drain_budget_ns, "drain_startup_ns",
                     (json_int_t)d->stats.drain_startup_ns, "drain_max_cpu_ns",
                     (json_int_t)d->stats.drain_max_cpu_ns, "drain_budget_stops",
                     (json_int_t)d->stats.drain_budget_stops, "drain_records_carried",
                     (json_int_t)d->stats.drain_records_carried, "drain_records_pending",
                     (json_int_t)(d->building ? snapshot_build_left(d->building) : 0)));
    json_object_set_new(o, "rss", json_integer((json_int_t)d->stats.rss));
    json_object_set_new(o, "top_cgroups", top_cgroups_json(r));
    json_object_update_new(o, server_json(d));
    json_object_update_new(o, metrics_http_json(d));
    json_object_update_new(o, journal_json(&d->state));
    if (d->state.restored.snapshots)
        json_object_set_new(o, "restored", restored_json(&d->state.restored));
    json_object_set_new(o, "verdict", status_verdict(o));
    return vl_reply_new(o, false);
}

/* Which tasks: the parameters Dump, Top, Timeline, Wakers and Stuck share. */
/* clang-format off */
#define WHO_PARAMS                                                                                 \
    {"pid", VL_INT, false}, {"tid", VL_INT, false}, {"cgroup", VL_STRING, false},                  \
    {"unit", VL_STRING, false}, {"comm", VL_STRING, false}, {"state", VL_STRING, false}
/* And which window: all but Stuck, which is about now. */
#define SELECTION_PARAMS                                                                           \
    WHO_PARAMS, {"since_ns", VL_INT, false}, {"until_ns", VL_INT, false},                          \
    {"start_ns", VL_INT, false}, {"end_ns", VL_INT, false}, {"min_wait_ns", VL_INT, false},   \
    {"no_idle", VL_BOOL, false}
/* clang-format on */

static const struct vl_param dump_params[] = {
    SELECTION_PARAMS,
    {"min_total_ns", VL_INT, false},
    {"limit", VL_INT, false},
    {"group_by", VL_STRING_ARRAY, false},
    {"frame_detail", VL_BOOL, false},
    {"histograms", VL_BOOL, false},
    {NULL, 0, false},
};
static const struct vl_param folded_params[] = {
    SELECTION_PARAMS,         {"min_total_ns", VL_INT, false},
    {"limit", VL_INT, false}, {"group_by", VL_STRING_ARRAY, false},
    {NULL, 0, false},
};
static const struct vl_param flame_params[] = {
    SELECTION_PARAMS,
    {"min_total_ns", VL_INT, false},
    {"group_by", VL_STRING_ARRAY, false},
    {"min_width_ppb", VL_INT, false},
    {"max_frames", VL_INT, false},
    {NULL, 0, false},
};
static const struct vl_param top_params[] = {
    SELECTION_PARAMS,
    {"group_by", VL_STRING_ARRAY, false},
    {"histograms", VL_BOOL, false},
    {NULL, 0, false},
};
static const struct vl_param wakers_params[] = {
    SELECTION_PARAMS,
    {"min_total_ns", VL_INT, false},
    {"group_by", VL_STRING_ARRAY, false},
    {NULL, 0, false},
};
static const struct vl_param timeline_params[] = {
    SELECTION_PARAMS,
    {"buckets", VL_INT, false},
    {NULL, 0, false},
};
/* right now: no window */
static const struct vl_param stuck_params[] = {
    WHO_PARAMS,
    {"min_ns", VL_INT, false},
    {NULL, 0, false},
};
static const struct vl_param no_params[] = {{NULL, 0, false}};

const struct vl_method api_methods[] = {
    {"io.offcpud.Dump", dump_params, ACCESS_OWN, method_dump},
    {"io.offcpud.Flame", flame_params, ACCESS_OWN, method_flame},
    {"io.offcpud.Folded", folded_params, ACCESS_OWN, method_folded},
    {"io.offcpud.Timeline", timeline_params, ACCESS_OWN, method_timeline},
    {"io.offcpud.Status", no_params, ACCESS_OWN, method_status},
    {"io.offcpud.Stuck", stuck_params, ACCESS_OWN, method_stuck},
    {"io.offcpud.Top", top_params, ACCESS_OWN, method_top},
    {"io.offcpud.Wakers", wakers_params, ACCESS_OWN, method_wakers},
};

static const struct vl_interface interfaces[] = {
    {"io.offcpud", offcpud_interface_description},
};

int api_bind(struct vl_server *s, struct daemon *d)
{
    int r = varlink_service_bind(s, interfaces, ARRAY_SIZE(interfaces));

    return r < 0 ? r : vl_server_bind(s, api_methods, API_METHODS, d);
}
