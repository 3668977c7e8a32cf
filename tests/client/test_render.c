/* SPDX-License-Identifier: GPL-2.0-only */
/* Folded lines from Dump replies: order, separators, rounding, grouping. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "folded_reply.h"

static char *folded_time(const char *reply_json, enum stack_time which)
{
    json_t *reply = json_loads(reply_json, 0, NULL);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);

    render_folded(f, reply, which);
    fclose(f);
    json_decref(reply);
    return text;
}

static char *folded(const char *reply_json)
{
    return folded_time(reply_json, STACK_TIME_TOTAL);
}

static void expect(const char *what, const char *reply, const char *want)
{
    char *got = folded(reply);

    CHECK(strcmp(got, want) == 0, "%s:\n%s", what, got);
    free(got);
}

int main(void)
{
    expect("user and kernel frames around '-', value in us, lines sorted",
           "{\"stacks\":["
           "{\"comm\":\"web\",\"user\":[\"main\",\"serve\"],\"kernel\":[\"do_syscall_64\","
           "\"schedule\"],"
           "\"total_ns\":2500,\"count\":1},"
           "{\"comm\":\"app\",\"user\":[\"main\",\"wait\"],\"kernel\":[\"schedule\"],"
           "\"total_ns\":1000000,\"count\":3}]}",
           "app;main;wait;-;schedule 1000\n"
           "web;main;serve;-;do_syscall_64;schedule 3\n");
    expect("rounding to the nearest microsecond",
           "{\"stacks\":[{\"comm\":\"a\",\"user\":[\"f\"],\"kernel\":[\"k\"],\"total_ns\":1499,"
           "\"count\":1},{\"comm\":\"b\",\"user\":[\"f\"],\"kernel\":[\"k\"],\"total_ns\":1500,"
           "\"count\":1}]}",
           "a;f;-;k 1\nb;f;-;k 2\n");
    expect("kernel thread: no user frames, '-' still there",
           "{\"stacks\":[{\"comm\":\"kworker/0:1\",\"user\":[],\"kernel\":[\"worker_thread\","
           "\"schedule\"],\"total_ns\":5000,\"count\":1}]}",
           "kworker/0:1;-;worker_thread;schedule 5\n");
    expect("missed stacks as the daemon names them",
           "{\"stacks\":[{\"comm\":\"x\",\"user\":[\"[Missed User Stack]\"],\"kernel\":["
           "\"[Missed Kernel Stack]\"],\"total_ns\":1000,\"count\":1}]}",
           "x;[Missed User Stack];-;[Missed Kernel Stack] 1\n");
    expect("';' and newlines in names cannot split frames or lines",
           "{\"stacks\":[{\"comm\":\"a;b\",\"user\":[\"f;g\",\"h\\ni\"],\"kernel\":[],"
           "\"total_ns\":1000,\"count\":1}]}",
           "a\\x3bb;f\\x3bg;h\\x0ai;- 1\n");
    expect("a frame named '-' or '--' is no separator, ESC reaches no terminal",
           "{\"stacks\":[{\"comm\":\"\\u001b[31mred\",\"user\":[\"-\",\"--\"],"
           "\"kernel\":[\"-\"],\"total_ns\":1000,\"count\":1}]}",
           "\\x1b[31mred;\\x2d;\\x2d-;-;\\x2d 1\n");
    expect("grouped fields follow comm",
           "{\"stacks\":[{\"comm\":\"a\",\"pid\":10,\"tid\":11,\"state\":\"D\",\"cgroup\":\"/job\","
           "\"user\":[\"f\"],\"kernel\":[\"k\"],\"total_ns\":1000,\"count\":1}]}",
           "a;[pid 10];[tid 11];[state D];[cgroup /job];f;-;k 1\n");
    expect("no stacks, no lines", "{\"stacks\":[]}", "");

    /* a sleep (blocked 7 ms, then 3 ms waiting for a CPU) and a preemption */
    const char *split = "{\"stacks\":[{\"comm\":\"a\",\"user\":[\"f\"],\"kernel\":[\"k\"],"
                        "\"total_ns\":10000000,\"runq_ns\":3000000,\"count\":1},"
                        "{\"comm\":\"a\",\"user\":[\"g\"],\"kernel\":[\"k\"],"
                        "\"total_ns\":2000000,\"runq_ns\":2000000,\"count\":1}]}";
    char *text = folded_time(split, STACK_TIME_BLOCKED);

    CHECK(strcmp(text, "a;f;-;k 7000\n") == 0,
          "blocked: total less runq, without all-runq stacks:\n%s", text);
    free(text);
    text = folded_time(split, STACK_TIME_RUNQ);
    CHECK(strcmp(text, "a;f;-;k 3000\na;g;-;k 2000\n") == 0, "runq time:\n%s", text);
    free(text);
    expect("total by default", split, "a;f;-;k 10000\na;g;-;k 2000\n");

    /* Folded: names, paths and heads once, stacks by column; the names come escaped */
    expect("a Folded reply's stacks from its tables",
           "{\"names\":[\"main\",\"serve\",\"schedule\",\"f\\\\x3bg\"],"
           "\"paths\":[\"0 1\",\"2\",\"\",\"3 0\"],\"heads\":[\"web;[pid 10]\",\"kworker\","
           "\"app\"],\"stacks\":{\"head\":[0,1,2],\"user\":[0,2,3],\"kernel\":[1,1,1],"
           "\"total_ns\":[3000,1000,2000],\"runq_ns\":[0,0,0]}}",
           "app;f\\x3bg;main;-;schedule 2\nkworker;-;schedule 1\nweb;[pid "
           "10];main;serve;-;schedule 3\n");
    {
        const char *times = "{\"names\":[\"f\",\"k\"],\"paths\":[\"0\",\"1\"],\"heads\":[\"a\"],"
                            "\"stacks\":{\"head\":[0,0],\"user\":[0,1],\"kernel\":[1,1],"
                            "\"total_ns\":[10000000,2000000],\"runq_ns\":[3000000,2000000]}}";
        char *got = folded_time(times, STACK_TIME_BLOCKED);

        CHECK(strcmp(got, "a;f;-;k 7000\n") == 0, "a Folded reply's blocked time:\n%s", got);
        free(got);
    }
    {
        static const char *const bad[] = {
            /* a path index past paths */
            "{\"names\":[\"a\"],\"paths\":[\"0\"],\"heads\":[\"x\"],\"stacks\":{\"head\":[0],"
            "\"user\":[1],\"kernel\":[0],\"total_ns\":[1],\"runq_ns\":[0]}}",
            /* a name index past names */
            "{\"names\":[\"a\"],\"paths\":[\"0 1\"],\"heads\":[\"x\"],\"stacks\":{\"head\":[0],"
            "\"user\":[0],\"kernel\":[0],\"total_ns\":[1],\"runq_ns\":[0]}}",
            /* a path that is not indexes */
            "{\"names\":[\"a\"],\"paths\":[\"0x\"],\"heads\":[\"x\"],\"stacks\":{\"head\":[0],"
            "\"user\":[0],\"kernel\":[0],\"total_ns\":[1],\"runq_ns\":[0]}}",
            /* a head index past heads */
            "{\"names\":[\"a\"],\"paths\":[\"0\"],\"heads\":[\"x\"],\"stacks\":{\"head\":[1],"
            "\"user\":[0],\"kernel\":[0],\"total_ns\":[1],\"runq_ns\":[0]}}",
            /* columns of other lengths */
            "{\"names\":[\"a\"],\"paths\":[\"0\"],\"heads\":[\"x\"],\"stacks\":{\"head\":[0,0],"
            "\"user\":[0],\"kernel\":[0,0],\"total_ns\":[1,1],\"runq_ns\":[0,0]}}",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            json_t *reply = json_loads(bad[i], 0, NULL);
            FILE *f = fopen("/dev/null", "w");

            CHECK(reply && render_folded(f, reply, STACK_TIME_TOTAL) == -EBADMSG,
                  "indexes out of the tables, or columns apart, are a bad message: %s", bad[i]);
            fclose(f);
            json_decref(reply);
        }
    }
    return CHECK_EXIT();
}
