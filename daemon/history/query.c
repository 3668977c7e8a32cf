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

/* Rows being merged: each identity once, found by its hash (of ids the
 * daemon assigned and the kernel's pids and tids: nothing a client picks). A
 * window of 15 minutes holds millions of records and some 100,000 identities:
 * merged as they come, never all kept and sorted. */
struct merging {
    const struct ring *r;
    const struct query *q;
    struct query_result *res;
    size_t cap;      /* of res->rows */
    uint32_t *slots; /* a row's index + 1; 0: empty */
    size_t nslots;   /* a power of two, more than twice res->n */
};

static uint64_t hash_step(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ h >> 32;
}

static uint64_t row_hash(const struct query_row *x)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL;

    h = hash_step(h, (uint64_t)x->comm << 32 | x->ustack);
    h = hash_step(h, (uint64_t)x->kstack << 32 | x->pid);
    h = hash_step(h, (uint64_t)x->tid << 32 | x->cgroup);
    h = hash_step(h, (uint64_t)x->uwhere << 32 | (uint64_t)(uint8_t)x->state << 8 |
                         (uint8_t)x->waker_kind);
    h = hash_step(h, (uint64_t)x->waker_comm << 32 | x->waker_ustack);
    h = hash_step(h, (uint64_t)x->waker_kstack << 32 | x->waker_pid);
    return hash_step(h, x->waker_tid);
}

static size_t slot_of(const struct merging *m, const struct query_row *row)
{
    size_t mask = m->nslots - 1, i = row_hash(row) & mask;

    while (m->slots[i] && cmp_identity(&m->res->rows[m->slots[i] - 1], row) != 0)
        i = (i + 1) & mask;
    return i;
}

static int grow_slots(struct merging *m)
{
    size_t nslots = m->nslots ? m->nslots * 2 : 1024;
    uint32_t *old = m->slots;

    if (m->res->n >= UINT32_MAX / 2)
        return -ENOMEM;
    m->slots = calloc(nslots, sizeof(*m->slots));
    if (!m->slots) {
        m->slots = old;
        return -ENOMEM;
    }
    m->nslots = nslots;
    for (size_t i = 0; i < m->res->n; i++)
        m->slots[slot_of(m, &m->res->rows[i])] = (uint32_t)i + 1;
    free(old);
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

/* Sums row into the row of its identity, made if need be. */
static int merge_row(struct merging *m, const struct query_row *row)
{
    struct query_result *res = m->res;
    struct query_row *into;
    size_t slot;

    if (2 * (res->n + 1) > m->nslots && grow_slots(m) < 0)
        return -ENOMEM;
    slot = slot_of(m, row);
    if (m->slots[slot]) {
        into = &res->rows[m->slots[slot] - 1];
        into->total_ns += row->total_ns;
        into->runq_ns += row->runq_ns;
        into->count += row->count;
        if (row->max_ns > into->max_ns)
            into->max_ns = row->max_ns;
    } else {
        if (array_reserve(&res->rows, &m->cap, res->n + 1, sizeof(*res->rows), 1024) < 0)
            return -ENOMEM;
        into = &res->rows[res->n];
        *into = *row;
        into->sums = NULL;
        m->slots[slot] = (uint32_t)++res->n;
    }
    return m->q->histograms ? add_histogram(m->r, m->q, into, row) : 0;
}

static int collect_wakes(struct merging *m, const struct snapshot *snap)
{
    for (uint32_t i = 0; i < snap->nwakes; i++) {
        const struct wake_record *w = &snap->wakes[i];
        struct query_row row;
        struct waits waits;

        if (!query_record_matches(m->r, m->q, &w->woken))
            continue;
        if (m->q->uid >= 0 && w->woken.uid != m->q->uid) {
            m->res->withheld++;
            continue;
        }
        if (m->q->no_idle && idle_wait(&m->r->intern, &w->woken)) {
            m->res->idle_ns += w->woken.total_ns;
            continue;
        }
        if (!query_record_waits(m->r, m->q, &w->woken, &waits))
            continue;
        row_from_wake(&row, w, m->q, &waits);
        if (merge_row(m, &row) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Calls visit for each record of q's window it selects and the peer may see,
 * its waits all of the record's; counts the withheld ones, and adds the time
 * of the idle waits q->no_idle leaves out to *idle_ns. */
static int each_record(const struct ring *r, const struct query *q, size_t *withheld,
                       uint64_t *idle_ns, int (*visit)(void *ctx, const struct min_wait_item *item),
                       void *ctx)
{
    for (size_t s = 0; s < r->n; s++) {
        const struct snapshot *snap = r->snaps[s];

        if (!query_snapshot_in_window(q, snap))
            continue;
        for (uint32_t i = 0; i < snap->n; i++) {
            const struct record *rec = &snap->records[i];
            int ret;

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
            ret = visit(ctx, &(struct min_wait_item){
                                 .rec = rec,
                                 .snapshot = s,
                                 .w = {rec->total_ns, rec->runq_ns, rec->count},
                                 .kept = true,
                             });
            if (ret < 0)
                return ret;
        }
    }
    return 0;
}

struct item_list {
    struct min_wait_item *items;
    size_t n, cap;
};

static int append_item(void *ctx, const struct min_wait_item *item)
{
    struct item_list *l = ctx;

    if (array_reserve(&l->items, &l->cap, l->n + 1, sizeof(*l->items), 1024) < 0)
        return -ENOMEM;
    l->items[l->n++] = *item;
    return 0;
}

int query_records(const struct ring *r, const struct query *q, struct min_wait_item **items,
                  size_t *n, size_t *withheld, uint64_t *idle_ns)
{
    struct item_list l = {0};
    int ret = each_record(r, q, withheld, idle_ns, append_item, &l);

    *items = NULL;
    *n = 0;
    if (ret < 0) {
        free(l.items);
        return ret;
    }
    if (q->min_wait_ns)
        min_wait_decide(l.items, l.n, &r->intern, q->min_wait_ns);
    *items = l.items;
    *n = l.n;
    return 0;
}

static int merge_record(void *ctx, const struct min_wait_item *item)
{
    struct merging *m = ctx;
    struct query_row row;

    row_from_record(&row, item->rec, m->q, &item->w);
    return merge_row(m, &row);
}

static int collect(struct merging *m)
{
    const struct ring *r = m->r;
    const struct query *q = m->q;
    _cleanup_free_ struct min_wait_item *items = NULL;
    size_t n = 0;

    for (size_t s = 0; s < r->n; s++) {
        const struct snapshot *snap = r->snaps[s];

        if (!query_snapshot_in_window(q, snap))
            continue;
        query_cover(&m->res->start_ns, &m->res->end_ns, &m->res->snapshots, snap);
        if (q->group_by & QUERY_WAKERS && collect_wakes(m, snap) < 0)
            return -ENOMEM;
    }
    if (q->group_by & QUERY_WAKERS)
        return 0;
    /* a record's waits of at least min_wait_ns are decided with the other
     * intervals' records of its task at hand (min_wait.h) */
    if (!q->min_wait_ns)
        return each_record(r, q, &m->res->withheld, &m->res->idle_ns, merge_record, m);
    if (query_records(r, q, &items, &n, &m->res->withheld, &m->res->idle_ns) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (items[i].kept && merge_record(m, &items[i]) < 0)
            return -ENOMEM;
    return 0;
}

/* A row's stack: the row with its state left out. */
static struct query_row stack_of(const struct query_row *row)
{
    struct query_row s = *row;

    s.state = 0;
    s.sums = NULL;
    s.hist = 0;
    return s;
}

/* The stacks of res's rows, summed over their states, in *stacks. */
static int merge_stacks(const struct query_result *res, struct merging *stacks)
{
    for (size_t i = 0; i < res->n; i++) {
        struct query_row s = stack_of(&res->rows[i]);

        if (merge_row(stacks, &s) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Keeps the rows of the q->limit largest stacks; counts the stacks. A top
 * of a 15-minute window wants 20 of 100,000 stacks: the others are never
 * named nor sent. */
static int keep_largest_stacks(const struct query *q, struct query_result *res)
{
    struct query by_stack = {.limit = 0};
    struct query_result all = {0}, kept = {0};
    struct merging m = {.q = &by_stack, .res = &all}, k = {.q = &by_stack, .res = &kept};
    size_t out = 0;
    int ret;

    ret = merge_stacks(res, &m);
    res->stacks = all.n;
    if (ret < 0 || all.n <= q->limit)
        goto done;
    qsort(all.rows, all.n, sizeof(*all.rows), cmp_total);
    all.n = q->limit;
    ret = merge_stacks(&all, &k);
    if (ret < 0)
        goto done;
    for (size_t i = 0; i < res->n; i++) {
        struct query_row s = stack_of(&res->rows[i]);

        if (k.slots[slot_of(&k, &s)])
            res->rows[out++] = res->rows[i];
        else
            free(res->rows[i].sums);
    }
    res->n = out;
done:
    free(m.slots);
    free(k.slots);
    query_result_done(&all);
    query_result_done(&kept);
    return ret;
}

/* Leaves out the rows below min_total_ns, and past limit; the largest first. */
static int finish(const struct query *q, struct query_result *res)
{
    size_t out = 0;

    for (size_t i = 0; i < res->n; i++) {
        if (res->rows[i].total_ns >= q->min_total_ns)
            res->rows[out++] = res->rows[i];
        else
            free(res->rows[i].sums);
    }
    res->n = out;
    if (q->limit && keep_largest_stacks(q, res) < 0)
        return -ENOMEM;
    if (res->n)
        qsort(res->rows, res->n, sizeof(*res->rows), cmp_total);
    return 0;
}

int query_run(const struct ring *r, const struct query *q, struct query_result *res)
{
    int ret;

    struct merging m = {.r = r, .q = q, .res = res};

    memset(res, 0, sizeof(*res));
    ret = collect(&m);
    free(m.slots);
    if (ret < 0) {
        query_result_done(res);
        return ret;
    }
    if (!res->snapshots) {
        res->start_ns = q->start_ns;
        res->end_ns = q->end_ns;
    }
    ret = finish(q, res);
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
