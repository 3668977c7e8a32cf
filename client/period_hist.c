/* SPDX-License-Identifier: GPL-2.0-only */
#include "period_hist.h"

#include <inttypes.h>

#include "render.h"

#define BAR_WIDTH 40

void period_hist_add(struct period_hist *h, const json_t *row)
{
    const json_t *hist = json_object_get(row, "hist");
    uint64_t max = (uint64_t)json_integer_value(json_object_get(row, "max_ns"));
    size_t b;
    json_t *v;

    json_array_foreach(hist, b, v)
    {
        if (b < PERIOD_HIST_BUCKETS)
            h->n[b] += (uint64_t)json_integer_value(v);
    }
    h->count += (uint64_t)json_integer_value(json_object_get(row, "count"));
    h->total_ns += (uint64_t)json_integer_value(json_object_get(row, "total_ns"));
    if (max > h->max_ns)
        h->max_ns = max;
}

/* Bucket b holds periods from low to high microseconds (0 -> 0: under 1 us). */
static uint64_t bucket_low(size_t b)
{
    return b ? UINT64_C(1) << (b - 1) : 0;
}

static uint64_t bucket_high(size_t b)
{
    return b ? (UINT64_C(1) << b) - 1 : 0;
}

void period_hist_print(FILE *f, const struct period_hist *h)
{
    size_t first = PERIOD_HIST_BUCKETS, last = 0;
    uint64_t most = 0;
    char total[32], longest[32];

    for (size_t b = 0; b < PERIOD_HIST_BUCKETS; b++)
        if (h->n[b]) {
            first = first < b ? first : b;
            last = b;
            most = h->n[b] > most ? h->n[b] : most;
        }
    fprintf(f, "%15s%9s : %-8s %s\n", "usecs", "", "count", "distribution");
    for (size_t b = first; b <= last && first < PERIOD_HIST_BUCKETS; b++) {
        int stars = (int)(h->n[b] * BAR_WIDTH / most);

        fprintf(f, "%10" PRIu64 " -> %-10" PRIu64 " : %-8" PRIu64 " |%-*.*s|\n", bucket_low(b),
                bucket_high(b), h->n[b], BAR_WIDTH, stars,
                "****************************************");
    }
    fprintf(f, "%" PRIu64 " periods, %s off-CPU, the longest %s\n", h->count,
            render_ns((int64_t)h->total_ns, total, sizeof(total)),
            render_ns((int64_t)h->max_ns, longest, sizeof(longest)));
}

json_t *period_hist_json(const struct period_hist *h)
{
    json_t *a = json_array();
    size_t n = PERIOD_HIST_BUCKETS;

    while (n > 0 && !h->n[n - 1])
        n--;
    for (size_t b = 0; b < n; b++)
        json_array_append_new(a, json_integer((json_int_t)h->n[b]));
    return json_pack("{s:o, s:I, s:I, s:I}", "hist", a, "count", (json_int_t)h->count, "total_ns",
                     (json_int_t)h->total_ns, "max_ns", (json_int_t)h->max_ns);
}
