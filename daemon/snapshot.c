/* SPDX-License-Identifier: GPL-2.0-only */
#include "snapshot.h"

#include <stdlib.h>

void snapshot_free(struct intern *in, struct snapshot *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n; i++) {
        const struct record *rec = &s->records[i];

        intern_string_unref(in, rec->comm);
        intern_string_unref(in, rec->cgroup);
        intern_stack_unref(in, rec->ustack);
        intern_stack_unref(in, rec->uwhere);
        intern_stack_unref(in, rec->kstack);
    }
    free(s);
}

void record_add_sums(struct record *into, const struct record *from)
{
    into->total_ns += from->total_ns;
    into->runq_ns += from->runq_ns;
    into->count += from->count;
}

size_t snapshot_bytes(const struct snapshot *s)
{
    return sizeof(*s) + (size_t)s->n * sizeof(s->records[0]);
}
