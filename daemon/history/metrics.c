/* SPDX-License-Identifier: GPL-2.0-only */
#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cgroup_unit.h"
#include "macro.h"
#include "protocol.h"
#include "sorted_search.h"

/* Recent time halves in a minute: what ranks cgroups for a series of their own. */
#define HALF_LIFE_NS (60 * NSEC_PER_SEC)
/* A folded cgroup takes the place of the least of those with a series only
 * once it has this much more recent time: no flapping at the edge. */
#define SWAP_MARGIN 1.5
/* Cgroups remembered besides those with a series (then the least are forgotten). */
#define REMEMBERED(max) (4 * (size_t)(max) + 64)

struct series {
    char *cgroup; /* path below the cgroup2 mount, "" when unknown */
    char unit[256];
    struct metrics_counters c;
    double recent;  /* ns, decayed */
    uint64_t fresh; /* ns in the snapshot being added */
    bool exported;  /* has a series of its own; else its time goes to "other" */
};

struct metrics {
    struct series **series; /* sorted by cgroup */
    size_t n, cap;
    struct metrics_counters other;
    uint32_t max_cgroups;
};

int metrics_new(uint32_t max_cgroups, struct metrics **ret)
{
    struct metrics *m = calloc(1, sizeof(*m));

    if (!m)
        return -ENOMEM;
    m->max_cgroups = max_cgroups;
    *ret = m;
    return 0;
}

static void series_free(struct series *s)
{
    free(s->cgroup);
    free(s);
}

void metrics_reset(struct metrics *m)
{
    for (size_t i = 0; i < m->n; i++)
        series_free(m->series[i]);
    m->n = 0;
    memset(&m->other, 0, sizeof(m->other));
}

struct metrics *metrics_free(struct metrics *m)
{
    if (!m)
        return NULL;
    metrics_reset(m);
    free(m->series);
    free(m);
    return NULL;
}

void metrics_set_max_cgroups(struct metrics *m, uint32_t max_cgroups)
{
    m->max_cgroups = max_cgroups;
}

/* Series are kept sorted by cgroup path. */
static int series_compare(const void *elem, const void *key)
{
    return strcmp((*(struct series *const *)elem)->cgroup, key);
}

static struct series *series_get(struct metrics *m, const char *path)
{
    bool found;
    size_t i = sorted_search(m->series, m->n, sizeof(*m->series), path, series_compare, &found);
    struct series *s;

    if (found)
        return m->series[i];
    if (array_reserve(&m->series, &m->cap, m->n + 1, sizeof(*m->series), 64) < 0)
        return NULL;
    s = calloc(1, sizeof(*s));
    if (!s || !(s->cgroup = strdup(path))) {
        free(s);
        return NULL;
    }
    cgroup_unit(path, s->unit, sizeof(s->unit));
    memmove(&m->series[i + 1], &m->series[i], (m->n - i) * sizeof(*m->series));
    m->series[i] = s;
    m->n++;
    return s;
}

/* The exported series with the least recent time, and the folded one with
 * the most; NULL when there is none. */
static void extremes(const struct metrics *m, struct series **least, struct series **most,
                     size_t *nexported)
{
    *least = *most = NULL;
    *nexported = 0;
    for (size_t i = 0; i < m->n; i++) {
        struct series *s = m->series[i];

        if (s->exported) {
            (*nexported)++;
            if (!*least || s->recent < (*least)->recent)
                *least = s;
        } else if (!*most || s->recent > (*most)->recent) {
            *most = s;
        }
    }
}

/* Give series to the cgroups with the most recent time, within the bound. */
static void rank(struct metrics *m)
{
    for (size_t steps = 0; steps <= m->n; steps++) {
        struct series *least, *most;
        size_t nexported;

        extremes(m, &least, &most, &nexported);
        if (nexported > m->max_cgroups && least) {
            least->exported = false; /* the bound was lowered */
        } else if (most && most->recent > 0 && nexported < m->max_cgroups) {
            most->exported = true;
        } else if (most && least && most->recent > SWAP_MARGIN * least->recent) {
            most->exported = true;
            least->exported = false;
        } else {
            return;
        }
    }
}

/* Forget the folded cgroups with the least recent time beyond what is
 * remembered: their time was charged to "other" already. */
static void forget(struct metrics *m)
{
    while (m->n > REMEMBERED(m->max_cgroups)) {
        size_t victim = m->n;

        for (size_t i = 0; i < m->n; i++)
            if (!m->series[i]->exported &&
                (victim == m->n || m->series[i]->recent < m->series[victim]->recent))
                victim = i;
        if (victim == m->n)
            return;
        series_free(m->series[victim]);
        memmove(&m->series[victim], &m->series[victim + 1],
                (m->n - victim - 1) * sizeof(*m->series));
        m->n--;
    }
}

int metrics_add(struct metrics *m, const struct snapshot *snap, const struct intern *in)
{
    double decay = exp2(-(double)(snap->end_ns - snap->start_ns) / (double)HALF_LIFE_NS);
    struct series **of = calloc(snap->n ? snap->n : 1, sizeof(*of));

    if (!of)
        return -ENOMEM;
    /* first what each cgroup had this time, to rank them; then charge */
    for (uint32_t i = 0; i < snap->n; i++) {
        const struct record *r = &snap->records[i];
        const char *path = r->cgroup ? intern_string_get(in, r->cgroup) : "";

        of[i] = series_get(m, path ? path : "");
        if (of[i])
            of[i]->fresh += r->total_ns;
    }
    for (size_t i = 0; i < m->n; i++) {
        m->series[i]->recent = m->series[i]->recent * decay + (double)m->series[i]->fresh;
        m->series[i]->fresh = 0;
    }
    rank(m);
    for (uint32_t i = 0; i < snap->n; i++) {
        const struct record *r = &snap->records[i];
        struct metrics_counters *c = of[i] && of[i]->exported ? &of[i]->c : &m->other;
        int st = (int)protocol_state_index(r->state);

        c->ns[st] += r->total_ns;
        c->runq_ns[st] += r->runq_ns;
        c->switches[st] += r->count;
    }
    free(of);
    forget(m);
    return 0;
}

size_t metrics_series_count(const struct metrics *m)
{
    return m->n + 1;
}

void metrics_series_at(const struct metrics *m, size_t i, struct metrics_series_state *ret)
{
    if (i == m->n) {
        *ret = (struct metrics_series_state){.c = m->other};
        return;
    }
    *ret = (struct metrics_series_state){.cgroup = m->series[i]->cgroup,
                                         .c = m->series[i]->c,
                                         .recent = m->series[i]->recent,
                                         .exported = m->series[i]->exported};
}

int metrics_series_restore(struct metrics *m, const struct metrics_series_state *st)
{
    struct series *s;

    if (!st->cgroup) {
        m->other = st->c;
        return 0;
    }
    s = series_get(m, st->cgroup);
    if (!s)
        return -ENOMEM;
    s->c = st->c;
    s->recent = st->recent;
    s->exported = st->exported;
    return 0;
}

uint32_t metrics_folded(const struct metrics *m)
{
    uint32_t n = 0;

    for (size_t i = 0; i < m->n; i++)
        n += !m->series[i]->exported;
    return n;
}

void metrics_write_seconds(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%09" PRIu64 "\n", ns / (uint64_t)NSEC_PER_SEC,
            ns % (uint64_t)NSEC_PER_SEC);
}

void metrics_write_label(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = *s;

        if (ch == '"' || ch == '\\')
            fputc('\\', f);
        fputc(ch >= 0x20 && ch < 0x7f ? ch : '?', f);
    }
}

/* Which counter of a series a metric writes. */
enum counter { COUNTER_SECONDS, COUNTER_RUNQ_SECONDS, COUNTER_SWITCHES };

static void write_series(FILE *f, const char *metric, const char *unit, const char *cgroup,
                         const struct metrics_counters *c, enum counter which)
{
    for (size_t st = 0; st < METRICS_NSTATES; st++) {
        /* a state has all its series or none */
        if (!c->switches[st] && !c->ns[st])
            continue;
        fprintf(f, "%s{unit=\"", metric);
        metrics_write_label(f, unit);
        fputs("\",cgroup=\"", f);
        metrics_write_label(f, cgroup);
        fprintf(f, "\",state=\"%c\"} ", PROTOCOL_STATES[st]);
        if (which == COUNTER_SWITCHES)
            fprintf(f, "%" PRIu64 "\n", c->switches[st]);
        else
            metrics_write_seconds(f, which == COUNTER_RUNQ_SECONDS ? c->runq_ns[st] : c->ns[st]);
    }
}

static void write_metric(const struct metrics *m, FILE *f, const char *metric, const char *help,
                         enum counter which)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", metric, help, metric);
    for (size_t i = 0; i < m->n; i++)
        if (m->series[i]->exported)
            write_series(f, metric, m->series[i]->unit,
                         *m->series[i]->cgroup ? m->series[i]->cgroup : "unknown", &m->series[i]->c,
                         which);
    write_series(f, metric, "", "other", &m->other, which);
}

int metrics_write(const struct metrics *m, FILE *f)
{
    write_metric(m, f, "offcpud_off_cpu_seconds_total",
                 "Time tasks spent off-CPU, by cgroup and task state at switch-out "
                 "(S sleeping, D uninterruptible, R preempted, I idle wait).",
                 COUNTER_SECONDS);
    write_metric(m, f, "offcpud_runq_seconds_total",
                 "Of the off-CPU time, the time tasks were runnable, waiting for a CPU "
                 "(from their wakeup or preemption: run-queue latency), by cgroup and task state.",
                 COUNTER_RUNQ_SECONDS);
    write_metric(m, f, "offcpud_switches_total",
                 "Times tasks went off-CPU and back, by cgroup and task state.", COUNTER_SWITCHES);
    fprintf(f,
            "# HELP offcpud_metrics_folded_cgroups Cgroups whose time is counted in "
            "cgroup=\"other\" (metrics-max-cgroups).\n"
            "# TYPE offcpud_metrics_folded_cgroups gauge\n"
            "offcpud_metrics_folded_cgroups %" PRIu32 "\n",
            metrics_folded(m));
    return ferror(f) ? -EIO : 0;
}
