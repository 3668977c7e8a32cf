/* SPDX-License-Identifier: GPL-2.0-only */
#include "ring_budget.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* Rounds of coarsening in one call: each recounts who holds the most. */
#define ROUNDS_MAX 16

struct usage {
    size_t *bytes;   /* by cgroup string id: of records that still have stacks */
    size_t *held;    /* ... of all records */
    size_t *records; /* ... all records */
    uint32_t n;      /* string ids covered */
};

static size_t record_cost(const struct intern *in, const struct record *rec)
{
    return sizeof(*rec) + intern_stack_share(in, rec->ustack) +
           intern_stack_share(in, rec->kstack) + intern_stack_share(in, rec->uwhere);
}

static size_t wake_cost(const struct intern *in, const struct wake_record *w)
{
    return sizeof(*w) + record_cost(in, &w->woken) + record_cost(in, &w->waker) -
           2 * sizeof(w->woken);
}

static bool coarsened(const struct record *rec, uint32_t marker)
{
    return rec->ustack == marker && !rec->kstack;
}

static void usage_done(struct usage *u)
{
    free(u->bytes);
    free(u->held);
    free(u->records);
}

static int usage_count(const struct ring *r, uint32_t marker, struct usage *u)
{
    u->n = r->intern.strings.nslots;
    u->bytes = calloc(u->n, sizeof(*u->bytes));
    u->held = calloc(u->n, sizeof(*u->held));
    u->records = calloc(u->n, sizeof(*u->records));
    if (!u->bytes || !u->held || !u->records) {
        usage_done(u);
        return -1;
    }
    for (size_t i = 0; i < r->n; i++)
        for (uint32_t j = 0; j < r->snaps[i]->n; j++) {
            const struct record *rec = &r->snaps[i]->records[j];

            size_t cost = record_cost(&r->intern, rec);

            if (rec->cgroup >= u->n)
                continue;
            u->records[rec->cgroup]++;
            u->held[rec->cgroup] += cost;
            if (!coarsened(rec, marker))
                u->bytes[rec->cgroup] += cost;
        }
    /* A cgroup's waker pairs are held to its share as its aggregates are: the
     * pairs of the tasks it woke count as its own, and can always be taken. */
    for (size_t i = 0; i < r->n; i++)
        for (uint32_t j = 0; j < r->snaps[i]->nwakes; j++) {
            const struct wake_record *w = &r->snaps[i]->wakes[j];
            size_t cost = wake_cost(&r->intern, w);

            if (w->woken.cgroup >= u->n)
                continue;
            u->records[w->woken.cgroup]++;
            u->held[w->woken.cgroup] += cost;
            u->bytes[w->woken.cgroup] += cost;
        }
    return 0;
}

static int record_cmp(const void *pa, const void *pb)
{
    const struct record *a = pa, *b = pb;
    const uint32_t ka[] = {a->tgid,   a->tid,    a->cgroup, a->comm, a->uid, (uint32_t)a->state,
                           a->ustack, a->kstack, a->uwhere};
    const uint32_t kb[] = {b->tgid,   b->tid,    b->cgroup, b->comm, b->uid, (uint32_t)b->state,
                           b->ustack, b->kstack, b->uwhere};

    for (size_t i = 0; i < ARRAY_SIZE(ka); i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* Records equal but for their time become one. */
static uint32_t merge_equal(struct intern *in, struct record *recs, uint32_t n)
{
    uint32_t out = 0;

    qsort(recs, n, sizeof(*recs), record_cmp);
    for (uint32_t i = 0; i < n; i++) {
        if (out && record_cmp(&recs[out - 1], &recs[i]) == 0) {
            record_add_sums(in, &recs[out - 1], &recs[i]);
            intern_string_unref(in, recs[i].hist);
            intern_string_unref(in, recs[i].comm);
            intern_string_unref(in, recs[i].cgroup);
            intern_stack_unref(in, recs[i].ustack);
            intern_stack_unref(in, recs[i].kstack);
            intern_stack_unref(in, recs[i].uwhere);
            continue;
        }
        recs[out++] = recs[i];
    }
    return out;
}

/* Drop the waker pairs of cgroup's tasks in s: a wakeup's who, not its time,
 * which the aggregates keep. Returns how many. */
static size_t drop_wakes(struct ring *r, struct snapshot *s, uint32_t cgroup)
{
    uint32_t out = 0;

    for (uint32_t j = 0; j < s->nwakes; j++) {
        struct wake_record *w = &s->wakes[j];

        if (w->woken.cgroup != cgroup) {
            s->wakes[out++] = *w;
            continue;
        }
        record_unref(&r->intern, &w->woken);
        record_unref(&r->intern, &w->waker);
    }
    size_t dropped = s->nwakes - out;

    r->records_bytes -= dropped * sizeof(s->wakes[0]);
    s->nwakes = out;
    if (!out) {
        free(s->wakes);
        s->wakes = NULL;
    } else if (dropped) {
        struct wake_record *smaller = realloc(s->wakes, out * sizeof(*smaller));

        if (smaller)
            s->wakes = smaller;
    }
    return dropped;
}

/* Take the stacks of cgroup's records in snapshot i, and its waker pairs.
 * Returns how many. */
static size_t coarsen_snapshot(struct ring *r, size_t i, uint32_t cgroup, uint32_t marker)
{
    struct snapshot *s = r->snaps[i], *smaller;
    size_t taken = drop_wakes(r, s, cgroup);
    uint32_t n;

    for (uint32_t j = 0; j < s->n; j++) {
        struct record *rec = &s->records[j];

        if (rec->cgroup != cgroup || coarsened(rec, marker))
            continue;
        intern_stack_unref(&r->intern, rec->ustack);
        intern_stack_unref(&r->intern, rec->kstack);
        intern_stack_unref(&r->intern, rec->uwhere);
        intern_stack_ref(&r->intern, marker);
        rec->ustack = marker;
        rec->kstack = rec->uwhere = 0;
        taken++;
    }
    if (!taken)
        return 0;
    n = merge_equal(&r->intern, s->records, s->n);
    r->records_bytes -= (size_t)(s->n - n) * sizeof(s->records[0]);
    s->n = n;
    smaller = realloc(s, sizeof(*s) + (size_t)(n ? n : 1) * sizeof(s->records[0]));
    if (smaller)
        r->snaps[i] = smaller;
    return taken;
}

/* The cgroup holding the most in stacks that can still be taken; 0: none. */
static uint32_t biggest(const struct usage *u)
{
    uint32_t best = 0;

    for (uint32_t id = 1; id < u->n; id++)
        if (u->bytes[id] > u->bytes[best])
            best = id;
    return u->bytes[best] ? best : 0;
}

void ring_budget_make_room(struct ring *r, size_t incoming)
{
    uint32_t frame = intern_string(&r->intern, SNAPSHOT_OVER_BUDGET);
    uint32_t marker = frame ? intern_stack(&r->intern, &frame, 1) : 0;
    size_t taken = 0;

    intern_string_unref(&r->intern, frame);
    if (!marker)
        return;
    for (int round = 0; round < ROUNDS_MAX && ring_memory(r) + incoming > r->memory_limit;
         round++) {
        struct usage u;
        uint32_t cgroup;
        size_t want, freed = 0;

        if (usage_count(r, marker, &u) < 0)
            break;
        cgroup = biggest(&u);
        /* what would bring it down to the next biggest, or the excess */
        want = ring_memory(r) + incoming - r->memory_limit;
        usage_done(&u);
        if (!cgroup)
            break;
        /* oldest first: the last minutes keep their detail longest */
        for (size_t i = 0; i < r->n && freed < want; i++) {
            size_t before = ring_memory(r);

            taken += coarsen_snapshot(r, i, cgroup, marker);
            freed += before > ring_memory(r) ? before - ring_memory(r) : 0;
        }
    }
    intern_stack_unref(&r->intern, marker);
    r->coarsened_records += taken;
}

static int consumer_cmp(const void *pa, const void *pb)
{
    const struct ring_consumer *a = pa, *b = pb;

    return a->bytes < b->bytes ? 1 : a->bytes > b->bytes ? -1 : 0;
}

size_t ring_budget_top(const struct ring *r, struct ring_consumer *ret, size_t n)
{
    struct ring_consumer *all;
    struct usage u;
    size_t count = 0;

    if (usage_count(r, UINT32_MAX, &u) < 0)
        return 0;
    all = calloc(u.n, sizeof(*all));
    if (all) {
        for (uint32_t id = 0; id < u.n; id++)
            if (u.records[id])
                all[count++] = (struct ring_consumer){
                    .cgroup = id, .bytes = u.held[id], .records = u.records[id]};
        qsort(all, count, sizeof(*all), consumer_cmp);
        count = count < n ? count : n;
        memcpy(ret, all, count * sizeof(*all));
        free(all);
    }
    usage_done(&u);
    return count;
}
