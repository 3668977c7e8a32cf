/* SPDX-License-Identifier: GPL-2.0-only */
#include "snapshot.h"

#include <stdlib.h>

#include "histogram.h"

void record_unref(struct intern *in, const struct record *rec)
{
    intern_string_unref(in, rec->comm);
    intern_string_unref(in, rec->cgroup);
    intern_stack_unref(in, rec->ustack);
    intern_stack_unref(in, rec->uwhere);
    intern_stack_unref(in, rec->kstack);
    intern_string_unref(in, rec->hist);
}

void snapshot_free(struct intern *in, struct snapshot *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n; i++)
        record_unref(in, &s->records[i]);
    for (uint32_t i = 0; i < s->nwakes; i++) {
        record_unref(in, &s->wakes[i].woken);
        record_unref(in, &s->wakes[i].waker);
    }
    free(s->wakes);
    free(s);
}

void record_add_sums(struct intern *in, struct record *into, const struct record *from)
{
    struct histogram h = {{0}};
    uint32_t sum;

    into->total_ns += from->total_ns;
    into->runq_ns += from->runq_ns;
    into->count += from->count;
    if (from->max_ns > into->max_ns)
        into->max_ns = from->max_ns;
    if (!from->hist)
        return;
    if (into->hist)
        histogram_add_text(&h, intern_string_get(in, into->hist));
    histogram_add_text(&h, intern_string_get(in, from->hist));
    /* out of memory: into keeps its own histogram, short of from's periods */
    sum = histogram_intern(in, &h);
    if (!sum)
        return;
    intern_string_unref(in, into->hist);
    into->hist = sum;
}

size_t snapshot_bytes(const struct snapshot *s)
{
    return sizeof(*s) + (size_t)s->n * sizeof(s->records[0]) +
           (size_t)s->nwakes * sizeof(s->wakes[0]);
}
