/* SPDX-License-Identifier: GPL-2.0-only */
/* Off-CPU counters for Prometheus: sums per cgroup and state, units named,
 * cardinality bounded, and no series ever going back. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cgroup_unit.h"
#include "metrics.h"
#include "persist.h"

#define SEC 1000000000LL
#define MS  1000000ULL

static struct intern in;

/* One second with, per cgroup i, ms[i] milliseconds in state S (one switch). */
static struct snapshot *second(int64_t t, const char *const *cgroups, const uint64_t *ms, int n)
{
    struct snapshot *s = calloc(1, sizeof(*s) + n * sizeof(struct record));

    s->start_ns = t;
    s->end_ns = t + SEC;
    s->n = n;
    for (int i = 0; i < n; i++)
        s->records[i] = (struct record){.total_ns = ms[i] * MS,
                                        .count = 1,
                                        .cgroup = intern_string(&in, cgroups[i]),
                                        .state = 'S'};
    return s;
}

static void drop(struct snapshot *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        intern_string_unref(&in, s->records[i].cgroup);
    free(s);
}

static char *page(const struct metrics *m)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    metrics_write(m, f);
    fclose(f);
    return text;
}

/* The seconds of cgroup's S series in text, or -1 when it has none. */
static double seconds_of(const char *text, const char *cgroup)
{
    char needle[256];
    const char *p;

    snprintf(needle, sizeof(needle), "offcpud_off_cpu_seconds_total{unit=\"");
    for (p = strstr(text, needle); p; p = strstr(p + 1, needle)) {
        char want[256];
        const char *line_end = strchr(p, '\n');

        snprintf(want, sizeof(want), "cgroup=\"%s\",state=\"S\"} ", cgroup);
        const char *at = strstr(p, want);
        if (at && at < line_end)
            return atof(at + strlen(want));
    }
    return -1;
}

static void check_units(void)
{
    char buf[64];

    CHECK(strcmp(cgroup_unit("/system.slice/nginx.service/worker", buf, sizeof(buf)),
                 "nginx.service") == 0,
          "a service's sub-cgroup belongs to the service");
    CHECK(strcmp(cgroup_unit("/user.slice/user-1000.slice/session-3.scope", buf, sizeof(buf)),
                 "session-3.scope") == 0,
          "a session scope");
    CHECK(strcmp(cgroup_unit("/system.slice", buf, sizeof(buf)), "system.slice") == 0,
          "a slice");
    CHECK(strcmp(cgroup_unit("/", buf, sizeof(buf)), "") == 0, "the root: no unit");
    CHECK(strcmp(cgroup_unit("/job/x.service.d", buf, sizeof(buf)), "") == 0,
          "a name that only contains a suffix is no unit");
}

static void check_bound_and_monotonic(void)
{
    static const char *const cg[] = {"/a.service", "/b.service", "/c.service"};
    static const uint64_t first[] = {500, 300, 100}, later[] = {500, 10, 900};
    struct metrics *m;
    char *p1, *p2, *p3;
    struct snapshot *s;

    CHECK(metrics_new(2, &m) == 0, "metrics for at most 2 cgroups");
    s = second(100 * SEC, cg, first, 3);
    metrics_add(m, s, &in);
    drop(s);
    p1 = page(m);
    CHECK(seconds_of(p1, "/a.service") == 0.5 && seconds_of(p1, "/b.service") == 0.3 &&
              seconds_of(p1, "/c.service") < 0 && seconds_of(p1, "other") == 0.1,
          "the two largest have series, the third is in other");
    CHECK(metrics_folded(m) == 1 && strstr(p1, "offcpud_metrics_folded_cgroups 1\n"),
          "one cgroup folded, and said so");
    CHECK(strstr(p1, "{unit=\"a.service\",cgroup=\"/a.service\",state=\"S\"} 0.500000000\n") &&
              strstr(p1, "offcpud_switches_total{unit=\"a.service\",cgroup=\"/a.service\","
                         "state=\"S\"} 1\n"),
          "exact seconds and switches, with the unit");

    /* c grows past b: they swap, and nothing goes back */
    for (int t = 101; t < 104; t++) {
        s = second(t * SEC, cg, later, 3);
        metrics_add(m, s, &in);
        drop(s);
    }
    p2 = page(m);
    CHECK(seconds_of(p2, "/c.service") > 0 && seconds_of(p2, "/b.service") < 0,
          "c, now busier than b, has b's place (c %.3f)", seconds_of(p2, "/c.service"));
    CHECK(seconds_of(p2, "/a.service") >= seconds_of(p1, "/a.service") &&
              seconds_of(p2, "other") >= seconds_of(p1, "other"),
          "a and other only grew (other %.3f -> %.3f)", seconds_of(p1, "other"),
          seconds_of(p2, "other"));
    CHECK(seconds_of(p2, "/a.service") + seconds_of(p2, "/c.service") + seconds_of(p2, "other") <=
              5.6 + 1e-9,
          "no time counted twice");

    metrics_set_max_cgroups(m, 1);
    s = second(104 * SEC, cg, later, 3);
    metrics_add(m, s, &in);
    drop(s);
    p3 = page(m);
    CHECK(metrics_folded(m) == 2 && seconds_of(p3, "other") >= seconds_of(p2, "other"),
          "a lower bound folds more, and other still only grows");
    free(p1);
    free(p2);
    free(p3);
    metrics_free(m);
}

static void check_labels(void)
{
    static const char *const cg[] = {"/evil\"\\\n\xff.service"};
    static const uint64_t ms[] = {1};
    struct metrics *m;
    struct snapshot *s;
    char *p;

    metrics_new(10, &m);
    s = second(0, cg, ms, 1);
    metrics_add(m, s, &in);
    drop(s);
    p = page(m);
    CHECK(strstr(p, "cgroup=\"/evil\\\"\\\\??.service\"") != NULL,
          "quotes and backslashes escaped, other bytes replaced: one line per series");
    free(p);
    metrics_free(m);
}

/* The totals outlive the process in the ring file: a restart that restores
 * the ring serves the same counters, and the same cgroups have series. */
static void check_kept_in_the_ring_file(void)
{
    static const char *const cg[] = {"/a.service", "/b.service", "/c.service"};
    static const uint64_t ms[] = {700, 300, 100};
    struct metrics *m, *back;
    struct ring empty, restored;
    char *file = NULL, *p1, *p2;
    size_t len = 0;
    uint64_t generation;
    struct snapshot *s;
    FILE *f = open_memstream(&file, &len);

    metrics_new(2, &m);
    metrics_new(2, &back);
    s = second(100 * SEC, cg, ms, 3);
    metrics_add(m, s, &in);
    drop(s);
    ring_init(&empty, 3600 * SEC, 1 << 20);
    ring_init(&restored, 3600 * SEC, 1 << 20);
    CHECK(ring_save(&empty, m, 5, f) == 0, "saved");
    fclose(f);
    CHECK(ring_load(&restored, back, (unsigned char *)file, len, &generation) == 0 &&
              generation == 5,
          "read back, with the journal generation it holds");
    p1 = page(m);
    p2 = page(back);
    CHECK(strcmp(p1, p2) == 0, "the same counters after the restart:\n%s", p2);
    /* one more second counts on top, ranked as before */
    s = second(101 * SEC, cg, ms, 3);
    metrics_add(back, s, &in);
    drop(s);
    free(p2);
    p2 = page(back);
    CHECK(seconds_of(p2, "/a.service") == 1.4 && seconds_of(p2, "other") == 0.2,
          "and grow from there (a %.3f)", seconds_of(p2, "/a.service"));
    free(p1);
    free(p2);
    free(file);
    ring_done(&empty);
    ring_done(&restored);
    metrics_free(m);
    metrics_free(back);
}

int main(void)
{
    intern_init(&in);
    check_units();
    check_bound_and_monotonic();
    check_labels();
    check_kept_in_the_ring_file();
    intern_done(&in);
    return CHECK_EXIT();
}
