/* SPDX-License-Identifier: GPL-2.0-only */
#include "row_space.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

void row_space_init(struct row_space *s, uint32_t size)
{
    *s = (struct row_space){.size = size};
    /* one free run of everything; if that allocation fails, nothing is free */
    if (size && array_reserve(&s->free, &s->cap, 1, sizeof(*s->free), 16) == 0)
        s->free[s->n++] = (struct row_run){.first = 0, .count = size};
}

void row_space_done(struct row_space *s)
{
    free(s->free);
    *s = (struct row_space){0};
}

int64_t row_space_take(struct row_space *s, uint32_t count)
{
    for (size_t i = 0; i < s->n; i++) {
        struct row_run *run = &s->free[i];
        uint32_t first = run->first;

        if (run->count < count)
            continue;
        run->first += count;
        run->count -= count;
        if (!run->count) {
            memmove(run, run + 1, (s->n - i - 1) * sizeof(*run));
            s->n--;
        }
        s->used += count;
        return first;
    }
    return -ENOSPC;
}

int row_space_give(struct row_space *s, uint32_t first, uint32_t count)
{
    size_t i = 0;

    if (!count)
        return 0;
    while (i < s->n && s->free[i].first < first)
        i++;
    /* merge with the run before, the run after, or both */
    if (i > 0 && s->free[i - 1].first + s->free[i - 1].count == first) {
        s->free[i - 1].count += count;
        if (i < s->n && first + count == s->free[i].first) {
            s->free[i - 1].count += s->free[i].count;
            memmove(&s->free[i], &s->free[i + 1], (s->n - i - 1) * sizeof(*s->free));
            s->n--;
        }
    } else if (i < s->n && first + count == s->free[i].first) {
        s->free[i].first = first;
        s->free[i].count += count;
    } else {
        if (array_reserve(&s->free, &s->cap, s->n + 1, sizeof(*s->free), 16) < 0)
            return -ENOMEM; /* those slots stay taken: lost room, never a double use */
        memmove(&s->free[i + 1], &s->free[i], (s->n - i) * sizeof(*s->free));
        s->free[i] = (struct row_run){.first = first, .count = count};
        s->n++;
    }
    s->used -= count;
    return 0;
}
