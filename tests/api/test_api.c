/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The io.offcpud methods as a client reaches them: requests through the
 * generic server's method table, parameter checks and access rules, over a
 * ring of snapshots, on a daemon with no collector and no socket (the seam:
 * everything else is the daemon's own code).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "check.h"
#include "daemon.h"
#include "stacks.h"
#include "varlink_frame.h"
#include "varlink_server.h"

#define SEC      1000000000LL
#define GROUP    4242
#define MEMBER   1000
#define STRANGER 1001

static struct daemon d;

static const struct peer root = {.pid = 1, .uid = 0, .gid = 0};
static const struct peer member = {.pid = 2, .uid = MEMBER, .gid = GROUP};
static const struct peer stranger = {.pid = 3, .uid = STRANGER, .gid = STRANGER};

/* Ten one-second snapshots ending now: "db" (pid 100, root, D, 2 ms a
 * second) and "app" (pid 200 with threads 200 and 201, the member, S, 1 ms
 * each a second). */
static void fill_ring(int64_t now)
{
    for (int s = 0; s < 10; s++) {
        struct snapshot *snap = calloc(1, sizeof(*snap) + 3 * sizeof(struct record));

        snap->start_ns = now - (10 - s) * SEC;
        snap->end_ns = snap->start_ns + SEC;
        snap->n = 3;
        for (uint32_t i = 0; i < 3; i++) {
            bool app = i > 0;

            snap->records[i] = (struct record){
                .total_ns = app ? 1000000 : 2000000,
                .count = 1,
                .tgid = app ? 200 : 100,
                .tid = app ? 199 + i : 100,
                .uid = app ? MEMBER : 0,
                .comm = intern_string(&d.ring.intern, app ? "app" : "db"),
                .cgroup = intern_string(&d.ring.intern, "/svc"),
                .ustack = stack_of(&d.ring.intern, "main", app ? "wait_app" : "wait_db"),
                .kstack = stack_of(&d.ring.intern, "do_syscall_64", "schedule"),
                .state = app ? 'S' : 'D',
            };
        }
        ring_push(&d.ring, snap, now);
    }
}

/* Call method with params (a JSON text) as peer; returns the message. */
static json_t *call(const struct peer *peer, const char *method, const char *params)
{
    json_t *msg = json_pack("{s:s, s:o}", "method", method, "parameters",
                            json_loads(params, 0, NULL) ?: json_object());
    bool oneway;
    json_t *reply = vl_server_call(d.server, peer, msg, &oneway);

    json_decref(msg);
    return reply;
}

static const char *error_of(const json_t *reply)
{
    return json_string_value(json_object_get(reply, "error"));
}

static bool is_error(const json_t *reply, const char *name)
{
    return error_of(reply) && strcmp(error_of(reply), name) == 0;
}

/* Is reply the io.offcpud error name, declared in io.offcpud.varlink with
 * every parameter it carries? The client words it from those alone. */
static bool is_declared_error(const json_t *reply, const char *name)
{
    const char *decl, *end, *key;
    char head[96];
    json_t *v;

    if (!is_error(reply, name))
        return false;
    snprintf(head, sizeof(head), "\nerror %s (", name + strlen("io.offcpud."));
    decl = strstr(offcpud_interface_description, head);
    end = decl ? strchr(decl, ')') : NULL;
    if (!end)
        return false;
    json_object_foreach(json_object_get(reply, "parameters"), key, v)
    {
        char field[64];
        const char *at;

        snprintf(field, sizeof(field), "%s: ", key);
        at = strstr(decl, field);
        if (!at || at > end)
            return false;
    }
    return true;
}

static const char *bad_parameter(const json_t *reply)
{
    if (!is_error(reply, "org.varlink.service.InvalidParameter"))
        return "";
    return json_string_value(json_object_get(json_object_get(reply, "parameters"), "parameter"));
}

/* An integer of a reply's or an error's parameters; -1 when absent. */
static long long param_of(const json_t *reply, const char *name)
{
    json_t *v = json_object_get(json_object_get(reply, "parameters"), name);

    return json_is_integer(v) ? json_integer_value(v) : -1;
}

static json_t *stacks_of(const json_t *reply)
{
    return json_object_get(json_object_get(reply, "parameters"), "stacks");
}

static long long total_us(const json_t *reply)
{
    json_t *stacks = stacks_of(reply), *s;
    long long sum = 0;
    size_t i;

    json_array_foreach(stacks, i, s) sum += json_integer_value(json_object_get(s, "total_ns"));
    return sum / 1000;
}

static void check_dump(void)
{
    json_t *r;

    r = call(&root, "io.offcpud.Dump", "{}");
    CHECK(!error_of(r) && json_array_size(stacks_of(r)) == 2 && total_us(r) == 40000,
          "root sees both processes, 40 ms in 2 merged stacks (%lld us)", total_us(r));
    json_decref(r);

    r = call(&root, "io.offcpud.Dump", "{\"pid\": 200, \"group_by\": [\"tid\", \"state\"]}");
    CHECK(json_array_size(stacks_of(r)) == 2 &&
              json_integer_value(json_object_get(json_array_get(stacks_of(r), 0), "tid")) >= 200 &&
              strcmp(json_string_value(json_object_get(json_array_get(stacks_of(r), 0), "state")),
                     "S") == 0,
          "pid filter, kept apart by tid, with the state");
    json_decref(r);

    r = call(&root, "io.offcpud.Dump", "{\"state\": \"D\", \"since_ns\": 3000000000}");
    CHECK(total_us(r) == 6000, "state and a 3 s window: %lld us", total_us(r));
    json_decref(r);

    r = call(&member, "io.offcpud.Dump", "{}");
    CHECK(!error_of(r) && json_array_size(stacks_of(r)) == 1 && total_us(r) == 20000,
          "a group member sees only its own processes (%lld us)", total_us(r));
    json_decref(r);

    r = call(&member, "io.offcpud.Dump", "{\"pid\": 100}");
    CHECK(is_declared_error(r, "io.offcpud.OtherUsersTasks") && param_of(r, "uid") == 0 &&
              param_of(r, "pid") == 100,
          "a member asking for root's process is refused, told whose it is");
    json_decref(r);

    d.access.group_all = true;
    r = call(&member, "io.offcpud.Dump", "{\"pid\": 100}");
    CHECK(!error_of(r) && total_us(r) == 20000, "group-access = all: it may");
    json_decref(r);
    d.access.group_all = false;

    r = call(&stranger, "io.offcpud.Dump", "{}");
    CHECK(is_error(r, "org.varlink.service.PermissionDenied"), "a stranger may not dump");
    json_decref(r);
}

/* The ns of state in a Timeline reply's buckets, summed; *n their count. */
static long long timeline_ns(const json_t *reply, const char *state, size_t *n)
{
    json_t *buckets = json_object_get(json_object_get(reply, "parameters"), "buckets"), *b;
    long long sum = 0;
    size_t i;

    *n = json_array_size(buckets);
    json_array_foreach(buckets, i, b) sum +=
        json_integer_value(json_object_get(json_object_get(b, "states"), state));
    return sum;
}

static long long first_bucket_ns(const json_t *reply, const char *state)
{
    json_t *b = json_array_get(json_object_get(json_object_get(reply, "parameters"), "buckets"), 0);

    return json_integer_value(json_object_get(json_object_get(b, "states"), state));
}

static void check_timeline(void)
{
    json_t *r;
    size_t n;

    r = call(&root, "io.offcpud.Timeline", "{\"buckets\": 10}");
    CHECK(!error_of(r) && timeline_ns(r, "D", &n) == 20000000 && n == 10 &&
              timeline_ns(r, "S", &n) == 20000000 && first_bucket_ns(r, "S") == 2000000,
          "ten 1 s buckets: 2 ms of D and 2 ms of S in each");
    json_decref(r);

    r = call(&root, "io.offcpud.Timeline", "{\"buckets\": 3, \"state\": \"D\"}");
    CHECK(!error_of(r) && timeline_ns(r, "D", &n) == 20000000 && n == 3 &&
              !timeline_ns(r, "S", &n) && first_bucket_ns(r, "D") == 6666666,
          "three buckets of 3.33 s: a snapshot across two is split, none of it lost (%lld)",
          first_bucket_ns(r, "D"));
    json_decref(r);

    r = call(&root, "io.offcpud.Timeline", "{\"buckets\": 1000, \"since_ns\": 4000000000}");
    CHECK(!error_of(r) && timeline_ns(r, "S", &n) == 8000000 && n == 4,
          "never finer than a snapshot: 4 buckets for 4 snapshots (%zu)", n);
    json_decref(r);

    r = call(&member, "io.offcpud.Timeline", "{}");
    CHECK(!error_of(r) && timeline_ns(r, "S", &n) == 20000000 && !timeline_ns(r, "D", &n),
          "a member's timeline holds only its own processes");
    json_decref(r);

    r = call(&member, "io.offcpud.Timeline", "{\"pid\": 100}");
    CHECK(is_error(r, "io.offcpud.OtherUsersTasks"),
          "a member asking for root's process is refused");
    json_decref(r);

    r = call(&stranger, "io.offcpud.Timeline", "{}");
    CHECK(is_error(r, "org.varlink.service.PermissionDenied"), "a stranger may not ask");
    json_decref(r);

    r = call(&root, "io.offcpud.Timeline", "{\"buckets\": 0}");
    CHECK(strcmp(bad_parameter(r), "buckets") == 0, "0 buckets refused");
    json_decref(r);
    r = call(&root, "io.offcpud.Timeline", "{\"buckets\": 1001}");
    CHECK(strcmp(bad_parameter(r), "buckets") == 0, "more than 1000 buckets refused");
    json_decref(r);
    r = call(&root, "io.offcpud.Timeline", "{\"group_by\": [\"pid\"]}");
    CHECK(strcmp(bad_parameter(r), "group_by") == 0, "no stack options");
    json_decref(r);
}

static void check_bad_requests(void)
{
    static const struct {
        const char *params, *parameter;
    } cases[] = {
        {"{\"state\": \"X\"}", "state"},
        {"{\"group_by\": [\"bogus\"]}", "group_by"},
        {"{\"since_ns\": 1000000000, \"until_ns\": 5000000000}", "until_ns"},
        {"{\"pid\": 0}", "pid"},
        {"{\"tid\": -4}", "tid"},
        {"{\"pid\": \"12\"}", "pid"},
        {"{\"colour\": \"red\"}", "colour"},
        {"{\"since_ns\": 1, \"start_ns\": 1}", "since_ns"},
    };
    json_t *r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        r = call(&root, "io.offcpud.Dump", cases[i].params);
        CHECK(strcmp(bad_parameter(r), cases[i].parameter) == 0, "%s: InvalidParameter %s",
              cases[i].params, cases[i].parameter);
        json_decref(r);
    }
    r = call(&root, "io.offcpud.Dump", "{\"cgroup\": \"/svc\"}");
    CHECK(is_error(r, "io.offcpud.CgroupNotFound"), "a cgroup without a cgroup2 mount");
    json_decref(r);
    r = call(&root, "io.offcpud.Frobnicate", "{}");
    CHECK(is_error(r, "org.varlink.service.MethodNotFound"), "unknown method of io.offcpud");
    json_decref(r);
    r = call(&root, "com.example.Dump", "{}");
    CHECK(is_error(r, "org.varlink.service.InterfaceNotFound"), "unknown interface");
    json_decref(r);
}

static void check_status_and_introspection(void)
{
    json_t *r, *p;

    r = call(&member, "io.offcpud.Status", "{}");
    p = json_object_get(r, "parameters");
    CHECK(!error_of(r) && json_integer_value(json_object_get(p, "snapshots")) == 10 &&
              json_integer_value(json_object_get(p, "memory_used")) > 0 &&
              strcmp(json_string_value(json_object_get(p, "attach")), "none") == 0 &&
              json_is_object(json_object_get(p, "collector")),
          "Status: the ring's snapshots and memory, no collector attached");
    json_decref(r);

    r = call(&stranger, "io.offcpud.Status", "{}");
    CHECK(is_error(r, "org.varlink.service.PermissionDenied"), "a stranger may not see Status");
    json_decref(r);

    r = call(&stranger, "org.varlink.service.GetInfo", "{}");
    p = json_object_get(json_object_get(r, "parameters"), "interfaces");
    CHECK(json_array_size(p) == 2 &&
              strcmp(json_string_value(json_array_get(p, 1)), "io.offcpud") == 0,
          "anyone may ask which interfaces there are");
    json_decref(r);

    r = call(&stranger, "org.varlink.service.GetInterfaceDescription",
             "{\"interface\": \"io.offcpud\"}");
    p = json_object_get(json_object_get(r, "parameters"), "description");
    CHECK(json_is_string(p) && strstr(json_string_value(p), "method Dump("),
          "and how io.offcpud is described");
    json_decref(r);

    r = call(&root, "org.varlink.service.GetInterfaceDescription", "{}");
    CHECK(strcmp(bad_parameter(r), "interface") == 0, "a required parameter missing");
    json_decref(r);
}

/* An empty answer told apart: a task never seen, one gone before the
 * window, a window outside the history; and what an answer leaves out. */
static void check_no_data(int64_t now)
{
    struct snapshot *snap = calloc(1, sizeof(*snap) + sizeof(struct record));
    char params[128];
    json_t *r;

    r = call(&member, "io.offcpud.Dump", "{}");
    CHECK(param_of(r, "hidden_processes") == 1, "a member is told of root's process hidden");
    json_decref(r);
    r = call(&root, "io.offcpud.Top", "{}");
    CHECK(param_of(r, "hidden_processes") == 0 && param_of(r, "history_start_ns") == -1,
          "root is hidden nothing; a window not asked for is not clipped");
    json_decref(r);
    r = call(&root, "io.offcpud.Top", "{\"since_ns\": 3600000000000}");
    CHECK(param_of(r, "history_start_ns") == now - 10 * SEC,
          "an hour asked, ten seconds kept: where the history starts");
    json_decref(r);

    /* above any pid_max (2^22): no such task can run here */
    r = call(&root, "io.offcpud.Dump", "{\"pid\": 4194400}");
    CHECK(is_declared_error(r, "io.offcpud.TaskNotSeen") &&
              param_of(r, "oldest_ns") == now - 10 * SEC,
          "a pid never seen, with the history kept");
    json_decref(r);
    snap->start_ns = now;
    snap->end_ns = now + SEC;
    snap->n = 1;
    snap->records[0] = (struct record){
        .total_ns = 1000, .count = 1, .tgid = 4194400, .tid = 4194400, .uid = 0, .state = 'S'};
    ring_push(&d.ring, snap, now);
    snprintf(params, sizeof(params), "{\"pid\": 4194400, \"end_ns\": %lld}", (long long)now);
    r = call(&root, "io.offcpud.Dump", params);
    CHECK(is_declared_error(r, "io.offcpud.TaskExited") && param_of(r, "first_ns") == now &&
              param_of(r, "last_ns") == now + SEC && param_of(r, "retention_ns") > 0,
          "a task gone before the window: when it was seen last");
    json_decref(r);
    snprintf(params, sizeof(params), "{\"start_ns\": %lld}", (long long)(now + 60 * SEC));
    r = call(&root, "io.offcpud.Dump", params);
    CHECK(is_declared_error(r, "io.offcpud.WindowNotRetained") &&
              param_of(r, "newest_ns") == now + SEC,
          "a window in the future: what is kept");
    json_decref(r);
}

int main(void)
{
    int64_t now = clock_ns(CLOCK_REALTIME);

    config_defaults(&d.cfg);
    d.access = (struct access_policy){.gid = GROUP};
    d.limits = (struct vl_server_limits){.request_limit = 4096, .output_limit = 1 << 20};
    ring_init(&d.ring, 3600 * SEC, 64 << 20);
    fill_ring(now);
    CHECK(vl_server_new(-1, -1, &d.limits, &d.access, &d.server) == 0 &&
              api_bind(d.server, &d) == 0,
          "a server with the daemon's methods bound");

    check_dump();
    check_timeline();
    check_bad_requests();
    check_status_and_introspection();
    check_no_data(now);

    d.server = vl_server_free(d.server);
    ring_done(&d.ring);
    return CHECK_EXIT();
}
