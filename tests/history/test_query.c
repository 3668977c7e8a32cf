/* SPDX-License-Identifier: GPL-2.0-only */
/* The ring and queries over it: windows, filters, merging, eviction. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "query.h"
#include "query_timeline.h"
#include "ring.h"
#include "stacks.h"

#define SEC 1000000000LL

/* Snapshot [t, t+1s) with: pid 10 tid 10 and 11 in "/job" blocked in
 * nanosleep (100ms each), pid 20 blocked in read (t ms), state S or D. */
static struct snapshot *make_snapshot(struct intern *in, int64_t t)
{
    struct snapshot *s = calloc(1, sizeof(*s) + 3 * sizeof(struct record));

    s->start_ns = t;
    s->end_ns = t + SEC;
    s->n = 3;
    s->records[0] = (struct record){.total_ns = 100000000,
                                    .count = 10,
                                    .tgid = 10,
                                    .tid = 10,
                                    .comm = intern_string(in, "app"),
                                    .cgroup = intern_string(in, "/job"),
                                    .ustack = stack_of(in, "main", "sleepy"),
                                    .kstack = stack_of(in, "do_nanosleep", "schedule"),
                                    .uid = 1000,
                                    .state = 'S'};
    s->records[1] = s->records[0];
    s->records[1].tid = 11;
    intern_string_ref(in, s->records[1].comm);
    intern_string_ref(in, s->records[1].cgroup);
    intern_stack_ref(in, s->records[1].ustack);
    intern_stack_ref(in, s->records[1].kstack);
    s->records[2] = (struct record){.total_ns = (uint64_t)(t / SEC) * 1000000,
                                    .count = 1,
                                    .tgid = 20,
                                    .tid = 20,
                                    .comm = intern_string(in, "db"),
                                    .cgroup = intern_string(in, "/job/child"),
                                    .ustack = stack_of(in, "main", "reader"),
                                    .kstack = stack_of(in, "pipe_read", "schedule"),
                                    .uid = 0,
                                    .state = 'D'};
    return s;
}

static uint64_t total(const struct query_result *res)
{
    uint64_t t = 0;

    for (size_t i = 0; i < res->n; i++)
        t += res->rows[i].total_ns;
    return t;
}

static struct query any(int64_t start, int64_t end)
{
    return (struct query){.start_ns = start, .end_ns = end, .pid = -1, .tid = -1, .uid = -1};
}

/* Snapshots of [100 s, 102 s) and [105 s, 107 s): the daemon stopped for 3 s. */
static void check_timeline_gaps(void)
{
    struct query q = any(INT64_MIN, INT64_MAX);
    struct timeline_result res;
    struct ring r;

    ring_init(&r, 3600 * SEC, 1ULL << 30);
    for (int64_t t = 100; t < 107; t++)
        if (t < 102 || t >= 105)
            ring_push(&r, make_snapshot(&r.intern, t * SEC), 107 * SEC);
    CHECK(timeline_run(&r, &q, 7, &res) == 0 && res.n == 7 && res.bucket_ns == SEC,
          "seven 1 s buckets");
    CHECK(res.n_gaps == 1 && res.gaps[0].start_ns == 102 * SEC && res.gaps[0].end_ns == 105 * SEC,
          "the 3 s without snapshots is a gap (%zu)", res.n_gaps);
    CHECK(res.ns[2][0] == 0 && res.ns[4][0] == 0 && res.ns[5][0] > 0, "and its buckets empty");
    timeline_result_done(&res);

    q = any(104 * SEC, INT64_MAX);
    CHECK(timeline_run(&r, &q, 7, &res) == 0 && res.n_gaps == 0,
          "none where the window starts after it");
    timeline_result_done(&res);
    ring_done(&r);
}

int main(void)
{
    struct query_result res, a, b;
    struct ring r;
    struct query q;

    ring_init(&r, 3600 * SEC, 1ULL << 30);
    for (int64_t t = 100; t < 110; t++)
        ring_push(&r, make_snapshot(&r.intern, t * SEC), 110 * SEC);
    CHECK(r.n == 10, "ten snapshots kept");

    q = any(INT64_MIN, INT64_MAX);
    query_run(&r, &q, &res);
    CHECK(res.snapshots == 10 && res.n == 2, "all: %zu snapshots, %zu merged rows", res.snapshots,
          res.n);
    CHECK(res.rows[0].total_ns == 2000000000ULL, "sleepy merged over threads and snapshots: %llu",
          (unsigned long long)res.rows[0].total_ns);
    CHECK(res.start_ns == 100 * SEC && res.end_ns == 110 * SEC, "covered window reported");
    query_result_done(&res);

    /* a snapshot belongs to the window its end falls in */
    q = any(103 * SEC, 106 * SEC);
    query_run(&r, &q, &res);
    CHECK(res.snapshots == 3 && res.start_ns == 103 * SEC && res.end_ns == 106 * SEC,
          "window (103s, 106s] holds the snapshots ending at 104, 105, 106 (%zu)", res.snapshots);
    query_result_done(&res);

    q = any(100 * SEC, 110 * SEC);
    query_run(&r, &q, &res);
    q.end_ns = 104 * SEC + 1;
    query_run(&r, &q, &a);
    q.start_ns = q.end_ns;
    q.end_ns = 110 * SEC;
    query_run(&r, &q, &b);
    CHECK(total(&a) + total(&b) == total(&res) && a.snapshots + b.snapshots == res.snapshots,
          "consecutive windows add up to the whole: %llu + %llu == %llu",
          (unsigned long long)total(&a), (unsigned long long)total(&b),
          (unsigned long long)total(&res));
    query_result_done(&res);
    query_result_done(&a);
    query_result_done(&b);

    q = any(INT64_MIN, INT64_MAX);
    q.tid = 11;
    query_run(&r, &q, &res);
    CHECK(res.n == 1 && res.rows[0].total_ns == 1000000000ULL, "tid filter");
    query_result_done(&res);

    q = any(INT64_MIN, INT64_MAX);
    q.pid = 10;
    q.group_by = GROUP_BY_TID;
    query_run(&r, &q, &res);
    CHECK(res.n == 2 && res.rows[0].tid != res.rows[1].tid, "pid filter, grouped by tid");
    query_result_done(&res);

    /* a caller who may see only its own uid: the rest is withheld, counted */
    q = any(INT64_MIN, INT64_MAX);
    q.uid = 1000;
    query_run(&r, &q, &res);
    CHECK(res.n == 1 && res.rows[0].total_ns == 2000000000ULL && res.withheld == 10,
          "uid filter: %zu rows, %zu withheld", res.n, res.withheld);
    query_result_done(&res);

    /* collapsed kernel stacks merge what differed only in the kernel */
    q = any(INT64_MIN, INT64_MAX);
    q.collapse_kernel = true;
    q.group_by = GROUP_BY_PID;
    query_run(&r, &q, &res);
    CHECK(res.n == 2 && res.rows[0].kstack == QUERY_KERNEL_COLLAPSED &&
              res.rows[1].kstack == QUERY_KERNEL_COLLAPSED,
          "kernel stacks collapsed");
    query_result_done(&res);

    q = any(INT64_MIN, INT64_MAX);
    q.cgroup = "/job/child";
    query_run(&r, &q, &res);
    CHECK(res.n == 1 && res.rows[0].kstack != 0, "cgroup filter: exact path");
    query_result_done(&res);
    q.cgroup = "/job";
    query_run(&r, &q, &res);
    CHECK(res.n == 2, "cgroup filter takes the subtree");
    query_result_done(&res);
    q.cgroup = "/jo";
    query_run(&r, &q, &res);
    CHECK(res.n == 0, "cgroup filter matches whole path components");
    query_result_done(&res);

    q = any(INT64_MIN, INT64_MAX);
    q.state = 'D';
    q.comm = "db";
    query_run(&r, &q, &res);
    CHECK(res.n == 1 && res.rows[0].pid == 0, "state and comm filters");
    query_result_done(&res);

    q = any(INT64_MIN, INT64_MAX);
    q.min_total_ns = 1500000000ULL;
    query_run(&r, &q, &res);
    CHECK(res.n == 1, "min total drops small stacks");
    query_result_done(&res);

    /* retention 10 s at 116 s: what ended at 106 s or before goes */
    r.retention_ns = 10 * SEC;
    ring_push(&r, make_snapshot(&r.intern, 110 * SEC), 116 * SEC);
    CHECK(r.n == 5 && r.evicted_retention == 6, "retention evicts the oldest (%zu left)", r.n);
    r.retention_ns = 3600 * SEC;
    r.memory_limit = 1;
    ring_push(&r, make_snapshot(&r.intern, 111 * SEC), 112 * SEC);
    CHECK(r.n == 1 && r.evicted_memory == 5, "memory limit keeps only the newest");
    ring_done(&r);
    CHECK(r.intern.strings.count == 0, "everything freed");
    check_timeline_gaps();
    return CHECK_EXIT();
}
