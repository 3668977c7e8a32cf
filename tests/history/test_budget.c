/* SPDX-License-Identifier: GPL-2.0-only */
/* Fair room in the ring: over its limit, the biggest consumer's stacks go
 * first, time kept; a small consumer's history is untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "query.h"
#include "ring.h"
#include "ring_budget.h"
#include "stacks.h"

#define SEC 1000000000LL

/* One second: "/noisy" with 500 stacks never seen before (1 ms each), "/calm"
 * with its one stack (10 ms). */
static struct snapshot *second(struct intern *in, int64_t t)
{
    struct snapshot *s = calloc(1, sizeof(*s) + 501 * sizeof(struct record));
    char leaf[64];

    s->start_ns = t;
    s->end_ns = t + SEC;
    s->n = 501;
    for (int i = 0; i < 500; i++) {
        snprintf(leaf, sizeof(leaf), "f_%lld_%d", (long long)(t / SEC), i);
        s->records[i] = (struct record){.total_ns = 1000000,
                                        .count = 1,
                                        .tgid = 10,
                                        .tid = 10 + i % 4,
                                        .comm = intern_string(in, "noisy"),
                                        .cgroup = intern_string(in, "/noisy"),
                                        .ustack = stack_of(in, "main", leaf),
                                        .kstack = stack_of(in, "do_nanosleep", "schedule"),
                                        .state = 'S'};
    }
    s->records[500] = (struct record){.total_ns = 10000000,
                                      .count = 1,
                                      .tgid = 20,
                                      .tid = 20,
                                      .comm = intern_string(in, "calm"),
                                      .cgroup = intern_string(in, "/calm"),
                                      .ustack = stack_of(in, "main", "wait_calmly"),
                                      .kstack = stack_of(in, "do_nanosleep", "schedule"),
                                      .state = 'S'};
    return s;
}

static uint64_t total_of(struct ring *r, const char *cgroup, uint32_t *rows)
{
    struct query q = {.start_ns = INT64_MIN,
                      .end_ns = INT64_MAX,
                      .pid = -1,
                      .tid = -1,
                      .uid = -1,
                      .cgroup = cgroup};
    struct query_result res;
    uint64_t t = 0;

    query_run(r, &q, &res);
    for (size_t i = 0; i < res.n; i++)
        t += res.rows[i].total_ns;
    *rows = res.n;
    query_result_done(&res);
    return t;
}

int main(void)
{
    struct ring_consumer top[2];
    struct ring r;
    uint32_t rows;

    ring_init(&r, 3600 * SEC, 2 << 20);
    for (int64_t t = 100; t < 160; t++) {
        struct snapshot *s = second(&r.intern, t * SEC);

        ring_budget_make_room(&r, snapshot_bytes(s));
        ring_push(&r, s, 160 * SEC);
    }
    CHECK(ring_memory(&r) <= r.memory_limit, "within the limit: %zu", ring_memory(&r));
    CHECK(r.evicted_memory == 0 && r.n == 60, "no snapshot dropped (%zu kept)", r.n);
    CHECK(r.coarsened_records > 0, "the noisy cgroup's stacks were taken (%llu)",
          (unsigned long long)r.coarsened_records);
    CHECK(total_of(&r, "/noisy", &rows) == 60 * 500 * 1000000ULL,
          "all the noisy cgroup's time is kept");
    CHECK(total_of(&r, "/calm", &rows) == 60 * 10000000ULL && rows == 1,
          "the calm cgroup's history is whole, its stack named");
    CHECK(ring_budget_top(&r, top, 2) == 2 &&
              strcmp(intern_string_get(&r.intern, top[0].cgroup), "/noisy") == 0,
          "the noisy cgroup holds the most");
    ring_done(&r);
    return CHECK_EXIT();
}
