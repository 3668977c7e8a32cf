/* SPDX-License-Identifier: GPL-2.0-only */
#include "query.h"
#include "array.h"
#include "cgroup_unit.h"
#include "idle_wait.h"
#include "macro.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool query_in_cgroup(const char *path, const char *want)
{
    size_t n = strlen(want);

    if (strcmp(want, "/") == 0)
        return true;
    return strncmp(path, want, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool query_record_matches(const struct ring *r, const struct query *q, const struct record *rec)
{
    if (q->pid >= 0 && rec->tgid != q->pid)
        return false;
    if (q->tid >= 0 && rec->tid != q->tid)
        return false;
    if (q->state && rec->state != q->state)
        return false;
    if (q->comm && strcmp(intern_string_get(&r->intern, rec->comm), q->comm) != 0)
        return false;
    if (q->cgroup &&
        (!rec->cgroup || !query_in_cgroup(intern_string_get(&r->intern, rec->cgroup), q->cgroup)))
        return false;
    if (q->unit &&
        (!rec->cgroup || !cgroup_in_unit(intern_string_get(&r->intern, rec->cgroup), q->unit)))
        return false;
    return true;
}

bool query_record_waits(const struct ring *r, const struct query *q, const struct record *rec,
                        struct waits *w)
{
    struct histogram h = {{0}};

    if (q->min_wait_ns && rec->hist)
        histogram_add_text(&h, intern_string_get(&r->intern, rec->hist));
    return min_wait_of(rec, rec->hist ? &h : NULL, q->min_wait_ns, false, w);
}

bool query_snapshot_in_window(const struct query *q, const struct snapshot *s)
{
    return s->end_ns > q->start_ns && s->end_ns <= q->end_ns;
}

void query_cover(int64_t *start_ns, int64_t *end_ns, size_t *n, const struct snapshot *s)
{
    if (!*n || s->start_ns < *start_ns)
        *start_ns = s->start_ns;
    if (!*n || s->end_ns > *end_ns)
        *end_ns = s->end_ns;
    ++*n;
}

static void row_from_record(struct query_row *row, const struct record *rec, const struct query *q,
                            const struct waits *w)
{
    unsigned group_by = q->group_by;

    *row = (struct query_row){
        .comm = rec->comm,
        .ustack = group_by & QUERY_MERGE_STACKS ? 0 : rec->ustack,
        .kstack = group_by & QUERY_MERGE_STACKS       ? 0
                  : q->collapse_kernel && rec->kstack ? QUERY_KERNEL_COLLAPSED
                                                      : rec->kstack,
        .cgroup = group_by & GROUP_BY_CGROUP ? rec->cgroup : 0,
        .uwhere = group_by & QUERY_GROUP_WHERE ? rec->uwhere : 0,
        .pid = group_by & GROUP_BY_PID ? rec->tgid : 0,
        .tid = group_by & GROUP_BY_TID ? rec->tid : 0,
        .state = group_by & GROUP_BY_STATE ? rec->state : 0,
        .total_ns = w->total_ns,
        .runq_ns = w->runq_ns,
        .count = w->count,
        .max_ns = rec->max_ns,
        .hist = rec->hist,
    };
}

#define CMP(a, b)                                                                                  \
    do {                                                                                           \
        if ((a) != (b))                                                                            \
            return (a) < (b) ? -1 : 1;                                                             \
    } while (0)

static int cmp_identity(const void *a, const void *b)
{
    const struct query_row *x = a, *y = b;

    CMP(x->comm, y->comm);
    CMP(x->ustack, y->ustack);
    CMP(x->kstack, y->kstack);
    CMP(x->pid, y->pid);
    CMP(x->tid, y->tid);
    CMP(x->state, y->state);
    CMP(x->cgroup, y->cgroup);
    CMP(x->uwhere, y->uwhere);
    CMP(x->waker_kind, y->waker_kind);
    CMP(x->waker_comm, y->waker_comm);
    CMP(x->waker_ustack, y->waker_ustack);
    CMP(x->waker_kstack, y->waker_kstack);
    CMP(x->waker_pid, y->waker_pid);
    CMP(x->waker_tid, y->waker_tid);
    return 0;
}

static int cmp_total(const void *a, const void *b)
{
    const struct query_row *x = a, *y = b;

    CMP(y->total_ns, x->total_ns);
    return cmp_identity(a, b);
}

/* The row of a waker pair: the woken's, with the waker's fields. */
static void row_from_wake(struct query_row *row, const struct wake_record *w, const struct query *q,
                          const struct waits *waits)
{
    const struct record *waker = &w->waker;

    row_from_record(row, &w->woken, q, waits);
    row->waker_kind = waker->state;
    row->waker_comm = waker->comm;
    /* a member sees its own processes' user stacks only; whose waker ran is
     * no secret (ps shows it), where in its code it was is */
    row->waker_ustack = q->group_by & QUERY_MERGE_STACKS || (q->uid >= 0 && waker->uid != q->uid)
                            ? 0
                            : waker->ustack;
    row->waker_kstack = q->group_by & QUERY_MERGE_STACKS      ? 0
                        : q->collapse_kernel && waker->kstack ? QUERY_KERNEL_COLLAPSED
                                                              : waker->kstack;
    row->waker_pid = q->group_by & GROUP_BY_PID ? waker->tgid : 0;
    row->waker_tid = q->group_by & GROUP_BY_TID ? waker->tid : 0;
}

static int collect_wakes(const struct ring *r, const struct query *q, struct query_result *res,
                         const struct snapshot *snap, size_t *cap)
{
    for (uint32_t i = 0; i < snap->nwakes; i++) {
        const struct wake_record *w = &snap->wakes[i];
        struct waits waits;

        if (!query_record_matches(r, q, &w->woken))
            continue;
        if (q->uid >= 0 && w->woken.uid != q->uid) {
            res->withheld++;
            continue;
        }
        if (q->no_idle && idle_wait(&r->intern, &w->woken)) {
            res->idle_ns += w->woken.total_ns;
            continue;
        }
        if (!query_record_waits(r, q, &w->woken, &waits))
            continue;
        if (array_reserve(&res->rows, cap, res->n + 1, sizeof(*res->rows), 1024) < 0)
            return -ENOMEM;
        row_from_wake(&res->rows[res->n++], w, q, &waits);
    }
    return 0;
}

int query_records(const struct ring *r, const struct query *q, struct min_wait_item **items,
                  size_t *n, size_t *withheld, uint64_t *idle_ns)
{
    size_t cap = 0;

    *items = NULL;
    *n = 0;
    for (size_t s = 0; s < r->n; s++) {
        const struct snapshot *snap = r->snaps[s];

        if (!query_snapshot_in_window(q, snap))
            continue;
        for (uint32_t i = 0; i < snap->n; i++) {
            const struct record *rec = &snap->records[i];

            if (!query_record_matches(r, q, rec))
                continue;
            if (q->uid >= 0 && rec->uid != q->uid) {
                ++*withheld;
                continue;
            }
            if (q->no_idle && idle_wait(&r->intern, rec)) {
                *idle_ns += rec->total_ns;
                continue;
            }
            if (array_reserve(items, &cap, *n + 1, sizeof(**items), 1024) < 0)
                return -ENOMEM;
            (*items)[(*n)++] = (struct min_wait_item){
                .rec = rec,
                .snapshot = s,
                .w = {rec->total_ns, rec->runq_ns, rec->count},
                .kept = true,
            };
        }
    }
    if (q->min_wait_ns)
        min_wait_decide(*items, *n, &r->intern, q->min_wait_ns);
    return 0;
}

static int collect(const struct ring *r, const struct query *q, struct query_result *res)
{
    _cleanup_free_ struct min_wait_item *items = NULL;
    size_t cap = 0, n = 0;

    for (size_t s = 0; s < r->n; s++) {
        const struct snapshot *snap = r->snaps[s];

        if (!query_snapshot_in_window(q, snap))
            continue;
        query_cover(&res->start_ns, &res->end_ns, &res->snapshots, snap);
        if (q->group_by & QUERY_WAKERS && collect_wakes(r, q, res, snap, &cap) < 0)
            return -ENOMEM;
    }
    if (q->group_by & QUERY_WAKERS)
        return 0;
    if (query_records(r, q, &items, &n, &res->withheld, &res->idle_ns) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (!items[i].kept)
            continue;
        if (array_reserve(&res->rows, &cap, res->n + 1, sizeof(*res->rows), 1024) < 0)
            return -ENOMEM;
        row_from_record(&res->rows[res->n++], items[i].rec, q, &items[i].w);
    }
    return 0;
}

/* Add row's histogram to into's sums, made if need be. */
static int add_histogram(const struct ring *r, const struct query *q, struct query_row *into,
                         const struct query_row *row)
{
    struct histogram h = {{0}};

    if (!into->sums && !(into->sums = calloc(1, sizeof(*into->sums))))
        return -ENOMEM;
    if (!row->hist)
        return 0;
    histogram_add_text(&h, intern_string_get(&r->intern, row->hist));
    min_wait_histogram(&h, q->min_wait_ns);
    for (size_t b = 0; b < HISTOGRAM_BUCKETS; b++)
        into->sums->n[b] += h.n[b];
    return 0;
}

/* Sum rows of equal identity; they are adjacent once sorted by identity. */
static int merge(const struct ring *r, const struct query *q, struct query_result *res)
{
    size_t out = 0;

    if (!res->n)
        return 0;
    qsort(res->rows, res->n, sizeof(*res->rows), cmp_identity);
    for (size_t i = 0; i < res->n; i++) {
        struct query_row *row = &res->rows[i], *into = out ? &res->rows[out - 1] : NULL;

        if (into && cmp_identity(into, row) == 0) {
            into->total_ns += row->total_ns;
            into->runq_ns += row->runq_ns;
            into->count += row->count;
            if (row->max_ns > into->max_ns)
                into->max_ns = row->max_ns;
        } else {
            into = &res->rows[out++];
            *into = *row;
        }
        if (q->histograms && add_histogram(r, q, into, row) < 0) {
            res->n = out;
            return -ENOMEM;
        }
    }
    res->n = 0;
    for (size_t i = 0; i < out; i++) {
        if (res->rows[i].total_ns >= q->min_total_ns)
            res->rows[res->n++] = res->rows[i];
        else
            free(res->rows[i].sums);
    }
    qsort(res->rows, res->n, sizeof(*res->rows), cmp_total);
    return 0;
}

int query_run(const struct ring *r, const struct query *q, struct query_result *res)
{
    int ret;

    memset(res, 0, sizeof(*res));
    ret = collect(r, q, res);
    if (ret < 0) {
        query_result_done(res);
        return ret;
    }
    if (!res->snapshots) {
        res->start_ns = q->start_ns;
        res->end_ns = q->end_ns;
    }
    ret = merge(r, q, res);
    if (ret < 0)
        query_result_done(res);
    return ret;
}

void query_result_done(struct query_result *res)
{
    for (size_t i = 0; i < res->n; i++)
        free(res->rows[i].sums);
    free(res->rows);
    memset(res, 0, sizeof(*res));
}
