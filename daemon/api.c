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

#include "daemon.h"
#include "frame_detail.h"
#include "log.h"
#include "macro.h"
#include "query.h"
#include "server.h"
#include "varlink_frame.h"

extern const char offcpud_interface_description[];

static const char varlink_service_description[] =
    "# The Varlink Service Interface is provided by every varlink service. It\n"
    "# describes the service and the interfaces it implements.\n"
    "interface org.varlink.service\n\n"
    "method GetInfo() -> (\n  vendor: string,\n  product: string,\n  version: string,\n"
    "  url: string,\n  interfaces: []string\n)\n\n"
    "method GetInterfaceDescription(interface: string) -> (description: string)\n\n"
    "error InterfaceNotFound (interface: string)\n\n"
    "error MethodNotFound (method: string)\n\n"
    "error MethodNotImplemented (method: string)\n\n"
    "error InvalidParameter (parameter: string)\n\n"
    "error PermissionDenied ()\n\n"
    "error ExpectedMore ()\n";

enum param_type { P_INT, P_STRING, P_STRING_ARRAY, P_BOOL };

struct param {
    const char *name;
    enum param_type type;
    bool required;
};

/* What a caller may read, from its credentials (SO_PEERCRED, SO_PEERGROUPS). */
enum access {
    ACCESS_NONE, /* introspection only */
    ACCESS_OWN,  /* the stacks of processes running as its own uid */
    ACCESS_ALL,
};

struct method {
    const char *name;
    const struct param *params; /* NULL-name terminated */
    enum access needs;
    json_t *(*call)(struct daemon *d, const struct peer *peer, json_t *params);
};

static json_t *invalid_parameter(const char *name)
{
    return vl_error_new("org.varlink.service.InvalidParameter",
                        json_pack("{s:s}", "parameter", name));
}

static bool type_ok(const json_t *v, enum param_type t)
{
    size_t i;
    json_t *e;

    switch (t) {
    case P_INT:
        return json_is_integer(v);
    case P_STRING:
        return json_is_string(v);
    case P_BOOL:
        return json_is_boolean(v);
    case P_STRING_ARRAY:
        if (!json_is_array(v))
            return false;
        json_array_foreach(v, i, e) if (!json_is_string(e)) return false;
        return true;
    }
    return false;
}

/* Every parameter known, of its type, and the required ones there. A null
 * value is the same as an absent one (Varlink's optional fields). */
static json_t *check_params(const struct param *spec, json_t *params)
{
    const char *key;
    json_t *v;

    json_object_foreach(params, key, v)
    {
        const struct param *p = spec;

        while (p->name && strcmp(p->name, key) != 0)
            p++;
        if (!p->name || (!json_is_null(v) && !type_ok(v, p->type)))
            return invalid_parameter(key);
    }
    for (const struct param *p = spec; p->name; p++)
        if (p->required && json_is_null(json_object_get(params, p->name) ?: json_null()))
            return invalid_parameter(p->name);
    return NULL;
}

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

static json_t *frames_json(const struct intern *in, uint32_t stack)
{
    json_t *a = json_array();
    const uint32_t *frames;
    uint32_t n;

    if (stack == QUERY_KERNEL_COLLAPSED) {
        json_array_append_new(a, json_string("[kernel]"));
        return a;
    }
    frames = intern_stack_get(in, stack, &n);
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(intern_string_get(in, frames[i])));
    return a;
}

static json_t *row_json(const struct intern *in, const struct query_row *row, unsigned group_by)
{
    json_t *o =
        json_pack("{s:s, s:o, s:o, s:I, s:I}", "comm", intern_string_get(in, row->comm), "user",
                  frames_json(in, row->ustack), "kernel", frames_json(in, row->kstack), "total_ns",
                  (json_int_t)row->total_ns, "count", (json_int_t)row->count);

    if (group_by & QUERY_GROUP_PID)
        json_object_set_new(o, "pid", json_integer(row->pid));
    if (group_by & QUERY_GROUP_TID)
        json_object_set_new(o, "tid", json_integer(row->tid));
    if (group_by & QUERY_GROUP_STATE)
        json_object_set_new(o, "state", json_stringn(&row->state, 1));
    if (group_by & QUERY_GROUP_CGROUP)
        json_object_set_new(o, "cgroup", json_string(intern_string_get(in, row->cgroup)));
    if (group_by & QUERY_GROUP_WHERE)
        json_object_set_new(o, "user_frames", frame_detail_json(in, row->ustack, row->uwhere));
    return o;
}

static json_t *parse_group_by(json_t *params, unsigned *ret)
{
    static const struct {
        const char *name;
        unsigned bit;
    } fields[] = {{"pid", QUERY_GROUP_PID},
                  {"tid", QUERY_GROUP_TID},
                  {"state", QUERY_GROUP_STATE},
                  {"cgroup", QUERY_GROUP_CGROUP}};
    json_t *a = json_object_get(params, "group_by"), *e;
    size_t i;

    *ret = 0;
    json_array_foreach(a, i, e)
    {
        size_t f = 0;

        while (f < ARRAY_SIZE(fields) && strcmp(fields[f].name, json_string_value(e)) != 0)
            f++;
        if (f == ARRAY_SIZE(fields))
            return invalid_parameter("group_by");
        *ret |= fields[f].bit;
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
        return invalid_parameter("since_ns");
    if ((has_until && (has_end || until < 0)))
        return invalid_parameter("until_ns");
    q->start_ns = has_since ? now - since : has_start ? start : INT64_MIN;
    q->end_ns = has_until ? now - until : has_end ? end : INT64_MAX;
    if (q->end_ns < q->start_ns)
        return invalid_parameter(has_until ? "until_ns" : "end_ns");
    return NULL;
}

static json_t *parse_filters(struct daemon *d, json_t *params, struct query *q, char *cgroup,
                             size_t cgroup_size)
{
    json_int_t v;
    const char *s;

    if (!get_id(params, "pid", &q->pid))
        return invalid_parameter("pid");
    if (!get_id(params, "tid", &q->tid))
        return invalid_parameter("tid");
    q->min_total_ns = get_int(params, "min_total_ns", &v) && v > 0 ? (uint64_t)v : 0;
    q->comm = json_string_value(json_object_get(params, "comm"));
    s = json_string_value(json_object_get(params, "state"));
    if (s) {
        if (strlen(s) != 1 || !strchr("RSDITt?", s[0]))
            return invalid_parameter("state");
        q->state = s[0];
    }
    s = json_string_value(json_object_get(params, "cgroup"));
    if (s) {
        if (!d->cgroups)
            return vl_error_new("io.offcpud.CgroupNotFound", json_pack("{s:s}", "path", s));
        if (cgroups_normalize(d->cgroups, s, cgroup, cgroup_size) < 0)
            return vl_error_new("io.offcpud.CgroupNotFound", json_pack("{s:s}", "path", s));
        q->cgroup = cgroup;
    }
    return parse_group_by(params, &q->group_by);
}

/* A cgroup asked for must exist now, or have been seen: it may be gone. */
static bool cgroup_known(struct daemon *d, const char *rel, const struct query_result *res)
{
    char path[PATH_MAX];
    struct stat st;

    if (res->n > 0)
        return true;
    snprintf(path, sizeof(path), "%s%s", cgroups_mount(d->cgroups), rel);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static enum access access_of(const struct daemon *d, const struct peer *p)
{
    if (p->uid == 0)
        return ACCESS_ALL;
    if (d->access_gid != (gid_t)-1 && peer_in_group(p, d->access_gid))
        return d->cfg.group_access_all ? ACCESS_ALL : ACCESS_OWN;
    return ACCESS_NONE;
}

/* Kernel frames go to non-root callers only where the kernel would let them
 * profile the kernel themselves: perf_event_paranoid <= 1. */
static bool kernel_frames_hidden(const struct peer *p)
{
    _cleanup_fclose_ FILE *f = NULL;
    int level;

    if (p->uid == 0)
        return false;
    f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
    return !f || fscanf(f, "%d", &level) != 1 || level > 1;
}

static json_t *method_dump(struct daemon *d, const struct peer *peer, json_t *params)
{
    struct query q = {.uid = -1};
    struct query_result res;
    char cgroup[PATH_MAX];
    int64_t now = clock_ns(CLOCK_REALTIME);
    json_t *err, *stacks;
    int r;

    err = parse_window(params, now, &q);
    if (!err)
        err = parse_filters(d, params, &q, cgroup, sizeof(cgroup));
    if (err)
        return err;
    if (json_is_true(json_object_get(params, "frame_detail")))
        q.group_by |= QUERY_GROUP_WHERE;
    if (access_of(d, peer) == ACCESS_OWN)
        q.uid = peer->uid;
    q.collapse_kernel = kernel_frames_hidden(peer);

    /* a window reaching now includes the generation still being collected:
     * the last milliseconds before a query are what an incident is about */
    if (q.end_ns >= now && d->collector &&
        clock_ns(CLOCK_MONOTONIC) - d->last_drain_mono_ns > (int64_t)NSEC_PER_MSEC)
        daemon_drain(d);

    r = query_run(&d->ring, &q, &res);
    if (r < 0)
        return vl_error_new("io.offcpud.InvalidRequest",
                            json_pack("{s:s}", "reason", "out of memory running the query"));
    if (res.withheld) {
        log_notice("uid %u (pid %d) asked for pid %" PRId64 " tid %" PRId64
                   " cgroup %s: %zu records of other users withheld",
                   peer->uid, peer->pid, q.pid, q.tid, q.cgroup ?: "any", res.withheld);
        if (!res.n) {
            query_result_done(&res);
            return vl_error_new("org.varlink.service.PermissionDenied", NULL);
        }
    }
    if (q.cgroup && !cgroup_known(d, q.cgroup, &res)) {
        query_result_done(&res);
        return vl_error_new(
            "io.offcpud.CgroupNotFound",
            json_pack("{s:s}", "path", json_string_value(json_object_get(params, "cgroup"))));
    }
    stacks = json_array();
    for (size_t i = 0; i < res.n; i++)
        json_array_append_new(stacks, row_json(&d->ring.intern, &res.rows[i], q.group_by));
    err = vl_reply_new(json_pack("{s:I, s:I, s:I, s:o}", "start_ns", (json_int_t)res.start_ns,
                                 "end_ns", (json_int_t)res.end_ns, "snapshots",
                                 (json_int_t)res.snapshots, "stacks", stacks),
                       false);
    query_result_done(&res);
    return err;
}

static json_t *collector_json(struct daemon *d)
{
    static const char *const names[OFFCPU_STAT__MAX] = {
        [OFFCPU_STAT_SWITCHES] = "switches",
        [OFFCPU_STAT_ACCOUNTED] = "accounted",
        [OFFCPU_STAT_USER_STACK_EFAULT] = "user_stack_efault",
        [OFFCPU_STAT_USER_STACK_ERROR] = "user_stack_error",
        [OFFCPU_STAT_KERNEL_STACK_ERROR] = "kernel_stack_error",
        [OFFCPU_STAT_STACK_MAP_FULL] = "stack_map_full",
        [OFFCPU_STAT_STACK_COLLISION] = "stack_collision",
        [OFFCPU_STAT_AGG_MAP_FULL] = "agg_map_full",
        [OFFCPU_STAT_AGG_LOST_NS] = "agg_lost_ns",
        [OFFCPU_STAT_NO_SWITCH_OUT] = "no_switch_out",
        [OFFCPU_STAT_STORAGE_FAIL] = "storage_fail",
        [OFFCPU_STAT_ANNOUNCE_LOST] = "announce_lost",
        [OFFCPU_STAT_WALKS] = "stack_walks",
        [OFFCPU_STAT_CACHE_HITS] = "stack_cache_hits",
        [OFFCPU_STAT_CACHE_CHECKS] = "stack_cache_checks",
        [OFFCPU_STAT_CACHE_MISMATCH] = "stack_cache_mismatches",
    };
    const uint64_t *v = d->stats.collector;
    json_t *o = json_object();

    for (int i = 0; i < OFFCPU_STAT__MAX; i++)
        json_object_set_new(o, names[i], json_integer((json_int_t)v[i]));
    return o;
}

static double ratio(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0.0;
}

static json_t *stack_cache_json(struct daemon *d)
{
    const uint64_t *v = d->stats.collector;
    uint64_t hits = v[OFFCPU_STAT_CACHE_HITS], checks = v[OFFCPU_STAT_CACHE_CHECKS];

    return json_pack(
        "{s:b, s:f, s:o}", "stack_cache", d->cfg.collector.stack_cache, "stack_cache_hit_rate",
        ratio(hits, v[OFFCPU_STAT_SWITCHES]), "stack_cache_mismatch_rate",
        checks ? json_real(ratio(v[OFFCPU_STAT_CACHE_MISMATCH], checks)) : json_null());
}

static json_t *server_json(struct daemon *d)
{
    struct server_stats st;

    memset(&st, 0, sizeof(st));
    if (d->server)
        server_get_stats(d->server, &st);
    return json_pack("{s:I, s:I, s:I, s:I}", "refused_max_clients",
                     (json_int_t)st.refused_max_clients, "refused_max_clients_per_uid",
                     (json_int_t)st.refused_max_clients_per_uid, "idle_closed",
                     (json_int_t)st.idle_closed, "reply_too_large", (json_int_t)st.reply_too_large);
}

static json_t *method_status(struct daemon *d, const struct peer *peer, json_t *params)
{
    const struct ring *r = &d->ring;
    struct symbolizer_stats ss;
    json_t *o;

    /* (the fuzzers run the methods on a daemon without these) */
    memset(&ss, 0, sizeof(ss));
    if (d->sym)
        symbolizer_get_stats(d->sym, &ss);
    if (d->collector)
        collector_read_stats(d->collector, d->stats.collector);
    o = json_pack("{s:s, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I}", "version", OFFCPUD_VERSION,
                  "pid", (json_int_t)getpid(), "uptime_ns",
                  (json_int_t)(clock_ns(CLOCK_MONOTONIC) - d->started_mono_ns), "attach",
                  d->collector ? collector_attach_name(d->collector) : "none", "interval_ns",
                  (json_int_t)d->cfg.interval_ns, "retention_ns", (json_int_t)d->cfg.retention_ns,
                  "memory_limit", (json_int_t)d->cfg.memory_limit, "memory_used",
                  (json_int_t)ring_memory(r), "snapshots", (json_int_t)r->n);
    if (r->n) {
        json_object_set_new(o, "oldest_ns", json_integer(r->snaps[0]->start_ns));
        json_object_set_new(o, "newest_ns", json_integer(r->snaps[r->n - 1]->end_ns));
    }
    json_object_update_new(
        o, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                     "evicted_retention", (json_int_t)r->evicted_retention, "evicted_memory",
                     (json_int_t)r->evicted_memory, "drains", (json_int_t)d->stats.drains,
                     "drain_last_ns", (json_int_t)d->stats.drain_last_ns, "drain_max_ns",
                     (json_int_t)d->stats.drain_max_ns, "drained_records",
                     (json_int_t)d->stats.snap.records, "stacks_interned",
                     (json_int_t)r->intern.stacks.count, "strings_interned",
                     (json_int_t)r->intern.strings.count, "symbol_files", (json_int_t)ss.elf_files,
                     "clients", (json_int_t)(d->server ? server_clients(d->server) : 0), "requests",
                     (json_int_t)d->stats.requests, "request_errors",
                     (json_int_t)d->stats.request_errors, "collector", collector_json(d)));
    json_object_update_new(o, stack_cache_json(d));
    json_object_update_new(o, server_json(d));
    return vl_reply_new(o, false);
}

static json_t *method_get_info(struct daemon *d, const struct peer *peer, json_t *params)
{
    return vl_reply_new(json_pack("{s:s, s:s, s:s, s:s, s:[s, s]}", "vendor", "offcpud", "product",
                                  "offcpud", "version", OFFCPUD_VERSION, "url",
                                  "https://varlink.org", "interfaces", "org.varlink.service",
                                  "io.offcpud"),
                        false);
}

static json_t *method_get_interface_description(struct daemon *d, const struct peer *peer,
                                                json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "interface"));
    const char *text = NULL;

    if (strcmp(name, "io.offcpud") == 0)
        text = offcpud_interface_description;
    else if (strcmp(name, "org.varlink.service") == 0)
        text = varlink_service_description;
    if (!text)
        return vl_error_new("org.varlink.service.InterfaceNotFound",
                            json_pack("{s:s}", "interface", name));
    return vl_reply_new(json_pack("{s:s}", "description", text), false);
}

static const struct param dump_params[] = {
    {"pid", P_INT, false},
    {"tid", P_INT, false},
    {"cgroup", P_STRING, false},
    {"comm", P_STRING, false},
    {"state", P_STRING, false},
    {"since_ns", P_INT, false},
    {"until_ns", P_INT, false},
    {"start_ns", P_INT, false},
    {"end_ns", P_INT, false},
    {"min_total_ns", P_INT, false},
    {"group_by", P_STRING_ARRAY, false},
    {"frame_detail", P_BOOL, false},
    {NULL, 0, false},
};
static const struct param no_params[] = {{NULL, 0, false}};
static const struct param describe_params[] = {{"interface", P_STRING, true}, {NULL, 0, false}};

static const struct method methods[] = {
    {"org.varlink.service.GetInfo", no_params, ACCESS_NONE, method_get_info},
    {"org.varlink.service.GetInterfaceDescription", describe_params, ACCESS_NONE,
     method_get_interface_description},
    {"io.offcpud.Dump", dump_params, ACCESS_OWN, method_dump},
    {"io.offcpud.Status", no_params, ACCESS_OWN, method_status},
};

static json_t *not_found(const char *method)
{
    const char *dot = strrchr(method, '.');
    size_t len = dot ? (size_t)(dot - method) : 0;

    for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
        if (len && strncmp(methods[i].name, method, len) == 0 && methods[i].name[len] == '.')
            return vl_error_new("org.varlink.service.MethodNotFound",
                                json_pack("{s:s}", "method", method));
    return vl_error_new("org.varlink.service.InterfaceNotFound",
                        json_pack("{s:s%}", "interface", method, len));
}

json_t *api_call(struct daemon *d, const struct peer *peer, json_t *msg, bool *oneway)
{
    json_t *method = json_object_get(msg, "method");
    json_t *params = json_object_get(msg, "parameters");
    json_t *empty = NULL, *reply;
    const struct method *m = NULL;

    *oneway = json_is_true(json_object_get(msg, "oneway"));
    if (!json_is_string(method))
        return vl_error_new("io.offcpud.InvalidRequest",
                            json_pack("{s:s}", "reason", "'method' must be a string"));
    if (params && !json_is_object(params) && !json_is_null(params))
        return vl_error_new("io.offcpud.InvalidRequest",
                            json_pack("{s:s}", "reason", "'parameters' must be an object"));
    for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
        if (strcmp(methods[i].name, json_string_value(method)) == 0)
            m = &methods[i];
    if (!m)
        return not_found(json_string_value(method));
    if (access_of(d, peer) < m->needs) {
        log_notice("denied %s to uid %u (pid %d): neither root nor in the socket group", m->name,
                   peer->uid, peer->pid);
        return vl_error_new("org.varlink.service.PermissionDenied", NULL);
    }
    if (!json_is_object(params))
        params = empty = json_object();
    reply = check_params(m->params, params);
    if (!reply)
        reply = m->call(d, peer, params);
    json_decref(empty);
    return reply;
}
