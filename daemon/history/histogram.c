/* SPDX-License-Identifier: GPL-2.0-only */
#include "histogram.h"

#include <stdio.h>
#include <stdlib.h>

/* One "BUCKET:COUNT" pair at *s, and the text after it; false if there is none. */
static bool next_pair(const char **s, unsigned long *bucket, unsigned long long *count)
{
    char *end;

    if (**s < '0' || **s > '9')
        return false;
    *bucket = strtoul(*s, &end, 10);
    if (*end != ':' || end[1] < '0' || end[1] > '9')
        return false;
    *count = strtoull(end + 1, &end, 10);
    if (*end == ' ' && end[1])
        end++;
    *s = end;
    return true;
}

bool histogram_text_valid(const char *text)
{
    unsigned long bucket, last = 0;
    unsigned long long count;
    bool first = true;

    while (*text) {
        if (!next_pair(&text, &bucket, &count) || bucket >= HISTOGRAM_BUCKETS || !count ||
            (!first && bucket <= last))
            return false;
        last = bucket;
        first = false;
    }
    return !first;
}

void histogram_add_text(struct histogram *h, const char *text)
{
    unsigned long bucket;
    unsigned long long count;

    while (next_pair(&text, &bucket, &count))
        if (bucket < HISTOGRAM_BUCKETS)
            h->n[bucket] += count;
}

uint32_t histogram_intern(struct intern *in, const struct histogram *h)
{
    /* "23:18446744073709551615 " at most per bucket */
    char text[HISTOGRAM_BUCKETS * 25 + 1];
    size_t len = 0;

    for (size_t b = 0; b < HISTOGRAM_BUCKETS; b++)
        if (h->n[b])
            len += snprintf(text + len, sizeof(text) - len, "%s%zu:%llu", len ? " " : "", b,
                            (unsigned long long)h->n[b]);
    return len ? intern_string(in, text) : 0;
}

void histogram_from_counts(struct histogram *h, const uint32_t counts[HISTOGRAM_BUCKETS])
{
    for (size_t b = 0; b < HISTOGRAM_BUCKETS; b++)
        h->n[b] = counts[b];
}
