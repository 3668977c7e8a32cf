/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl top's table from replies: rows merged per process, thread,
 * unit and stack, states in their columns, order, share of the window. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "top_table.h"

/* 10 s window; pid 42 in S, D and R under two names and two cgroups of one
 * unit, pid 7 in S, and a stopped task (T) whose time goes to "other". */
static const char top_reply[] =
    "{\"start_ns\":0,\"end_ns\":10000000000,\"rows\":["
    "{\"comm\":\"web\",\"pid\":42,\"tid\":42,\"state\":\"S\",\"cgroup\":\"/system.slice/"
    "web.service\",\"total_ns\":3000000000,\"count\":3},"
    "{\"comm\":\"web-io\",\"pid\":42,\"tid\":43,\"state\":\"D\",\"cgroup\":\"/system.slice/"
    "web.service/io\",\"total_ns\":5000000000,\"count\":5},"
    "{\"comm\":\"web\",\"pid\":42,\"tid\":42,\"state\":\"R\",\"cgroup\":\"/system.slice/"
    "web.service\",\"total_ns\":1000000000,\"count\":10},"
    "{\"comm\":\"db\",\"pid\":7,\"tid\":7,\"state\":\"S\",\"cgroup\":\"/system.slice/"
    "db.service\",\"total_ns\":6000000000,\"count\":1},"
    "{\"comm\":\"gdb-me\",\"pid\":9,\"tid\":9,\"state\":\"T\",\"cgroup\":\"/\","
    "\"total_ns\":1000,\"count\":1}]}";

static const char stack_reply[] =
    "{\"start_ns\":0,\"end_ns\":1000,\"stacks\":["
    "{\"comm\":\"a\",\"state\":\"S\",\"user\":[\"main\"],\"kernel\":[\"schedule\"],"
    "\"total_ns\":100,\"count\":1},"
    "{\"comm\":\"a\",\"state\":\"R\",\"user\":[\"main\"],\"kernel\":[\"schedule\"],"
    "\"total_ns\":50,\"count\":1},"
    "{\"comm\":\"a\",\"state\":\"S\",\"user\":[\"other\"],\"kernel\":[\"schedule\"],"
    "\"total_ns\":120,\"count\":1}]}";

static void build(const char *text, enum top_by by, struct top_table *t)
{
    json_t *reply = json_loads(text, 0, NULL);

    CHECK(top_table_build(reply, by, t) == 0, "built by %d", by);
    json_decref(reply);
}

int main(void)
{
    struct top_table t;
    enum top_by by;
    json_t *j;

    build(top_reply, TOP_BY_PROCESS, &t);
    CHECK(t.n == 3, "three processes: %zu", t.n);
    CHECK(t.rows[0].pid == 42 && t.rows[0].total_ns == 9000000000 &&
              t.rows[0].state_ns[0] == 3000000000 && t.rows[0].state_ns[1] == 5000000000 &&
              t.rows[0].state_ns[2] == 1000000000 && t.rows[0].state_ns[3] == 0 &&
              t.rows[0].count == 18,
          "pid 42 first, its states in columns S, D, R");
    CHECK(strcmp(t.rows[0].comm, "web-io") == 0, "named by its busiest row: %s", t.rows[0].comm);
    CHECK(t.rows[1].pid == 7 && t.rows[2].pid == 9 && t.rows[2].state_ns[4] == 1000,
          "then 7, then 9 with T under other");
    j = top_table_json(&t, 1);
    CHECK(json_array_size(json_object_get(j, "rows")) == 1 &&
              json_integer_value(json_object_get(j, "rows_total")) == 3,
          "--limit 1 keeps one row, says how many there were");
    CHECK(json_real_value(
              json_object_get(json_array_get(json_object_get(j, "rows"), 0), "share")) == 0.9,
          "share of the window: 9 s of 10");
    json_decref(j);
    top_table_done(&t);

    build(top_reply, TOP_BY_THREAD, &t);
    CHECK(t.n == 4 && t.rows[0].tid == 7 && t.rows[1].tid == 43 && t.rows[2].tid == 42 &&
              t.rows[2].total_ns == 4000000000,
          "by thread: 7 (6 s), 43 (5 s), 42 (4 s)");
    top_table_done(&t);

    build(top_reply, TOP_BY_UNIT, &t);
    CHECK(t.n == 3 && strcmp(t.rows[0].key, "web.service") == 0 &&
              t.rows[0].total_ns == 9000000000 && strcmp(t.rows[1].key, "db.service") == 0 &&
              strcmp(t.rows[2].key, "(no unit)") == 0,
          "by unit: a unit's sub-cgroups are the unit");
    top_table_done(&t);

    build(top_reply, TOP_BY_CGROUP, &t);
    CHECK(t.n == 4, "by cgroup: four cgroups: %zu", t.n);
    top_table_done(&t);

    build(top_reply, TOP_BY_COMM, &t);
    CHECK(t.n == 4 && strcmp(t.rows[0].key, "db") == 0 && strcmp(t.rows[2].key, "web") == 0 &&
              t.rows[2].total_ns == 4000000000,
          "by comm");
    top_table_done(&t);

    build(stack_reply, TOP_BY_STACK, &t);
    CHECK(t.n == 2 && strcmp(t.rows[0].key, "a;main;-;schedule") == 0 &&
              t.rows[0].total_ns == 150 && t.rows[0].state_ns[2] == 50,
          "by stack: one stack in two states is one row: %s", t.n ? t.rows[0].key : "");
    top_table_done(&t);

    CHECK(top_by_parse("unit", &by) == 0 && by == TOP_BY_UNIT, "--by unit");
    CHECK(top_by_parse("pid", &by) < 0, "--by pid refused");
    return CHECK_EXIT();
}
