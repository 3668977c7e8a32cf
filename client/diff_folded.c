/* SPDX-License-Identifier: GPL-2.0-only */
#include "diff_folded.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "folded_reply.h"
#include "macro.h"

struct side_stack {
    char *stack;
    double us_per_s[2]; /* before, after */
};

struct diff {
    struct side_stack *rows;
    size_t n;
};

double diff_window_seconds(const json_t *reply)
{
    return (json_integer_value(json_object_get(reply, "end_ns")) -
            json_integer_value(json_object_get(reply, "start_ns"))) /
           1e9;
}

static int by_stack(const void *a, const void *b)
{
    return strcmp(((const struct side_stack *)a)->stack, ((const struct side_stack *)b)->stack);
}

/* Largest change first, grown or shrunk: what moved is what a diff is read for. */
static int by_change(const void *a, const void *b)
{
    const struct side_stack *x = a, *y = b;
    double cx = fabs(x->us_per_s[1] - x->us_per_s[0]), cy = fabs(y->us_per_s[1] - y->us_per_s[0]);

    return cx < cy ? 1 : cx > cy ? -1 : by_stack(a, b);
}

static void diff_done(struct diff *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->rows[i].stack);
    free(d->rows);
}

/* Every stack of both replies, equal stacks merged, sorted by text. */
static int diff_make(struct diff *d, const json_t *before, const json_t *after)
{
    const json_t *replies[2] = {before, after};
    struct folded_reply fr[2];
    size_t out = 0;
    int r = folded_reply_init(&fr[0], before);

    d->n = 0;
    d->rows = NULL;
    if (r < 0)
        return r;
    r = folded_reply_init(&fr[1], after);
    if (r < 0) {
        folded_reply_done(&fr[0]);
        return r;
    }
    d->rows = calloc(fr[0].n + fr[1].n ?: 1, sizeof(*d->rows));
    r = d->rows ? 0 : -ENOMEM;
    for (int side = 0; side < 2; side++) {
        double seconds = diff_window_seconds(replies[side]);

        for (size_t i = 0; r == 0 && i < fr[side].n; i++) {
            struct side_stack *row = &d->rows[d->n];

            row->stack = folded_reply_stack(&fr[side], i, "");
            if (!row->stack) {
                r = errno == EBADMSG ? -EBADMSG : -ENOMEM;
                break;
            }
            row->us_per_s[side] =
                seconds > 0 ? folded_reply_time(&fr[side], i, STACK_TIME_TOTAL) / 1e3 / seconds : 0;
            d->n++;
        }
        folded_reply_done(&fr[side]);
    }
    if (r < 0)
        return r;
    qsort(d->rows, d->n, sizeof(*d->rows), by_stack);
    for (size_t i = 0; i < d->n; i++) {
        if (out > 0 && strcmp(d->rows[out - 1].stack, d->rows[i].stack) == 0) {
            d->rows[out - 1].us_per_s[0] += d->rows[i].us_per_s[0];
            d->rows[out - 1].us_per_s[1] += d->rows[i].us_per_s[1];
            free(d->rows[i].stack);
        } else {
            d->rows[out++] = d->rows[i];
        }
    }
    d->n = out;
    return 0;
}

int diff_folded_write(FILE *f, const json_t *before, const json_t *after)
{
    struct diff d;
    int r = diff_make(&d, before, after), lines = 0;

    if (r == 0)
        qsort(d.rows, d.n, sizeof(*d.rows), by_change);
    for (size_t i = 0; r == 0 && i < d.n; i++) {
        long long b = llround(d.rows[i].us_per_s[0]), a = llround(d.rows[i].us_per_s[1]);

        if (!a && !b)
            continue;
        fprintf(f, "%s %lld %lld\n", d.rows[i].stack, b, a);
        lines++;
    }
    diff_done(&d);
    return r < 0 ? r : lines;
}

json_t *diff_folded_json(const json_t *before, const json_t *after)
{
    struct diff d;
    json_t *a = NULL;

    if (diff_make(&d, before, after) == 0) {
        qsort(d.rows, d.n, sizeof(*d.rows), by_change);
        a = json_array();
        for (size_t i = 0; i < d.n; i++)
            json_array_append_new(a, json_pack("{s:s, s:f, s:f}", "stack", d.rows[i].stack,
                                               "before", round(d.rows[i].us_per_s[0] * 1e3) / 1e3,
                                               "after", round(d.rows[i].us_per_s[1] * 1e3) / 1e3));
    }
    diff_done(&d);
    return a;
}
