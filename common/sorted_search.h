/* SPDX-License-Identifier: GPL-2.0-only */
/* The one binary search of the daemon's sorted tables: symbols by address,
 * mappings by start, cached files by identity, processes by (pid, exec_id),
 * stacks by hash. */
#ifndef SORTED_SEARCH_H
#define SORTED_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Compares an element of the table with the key searched for, as qsort's
 * comparators do: < 0 when the element sorts before the key. */
typedef int (*sorted_compare_fn)(const void *elem, const void *key);

/* In base[0..n) (elements of elem_size bytes) sorted by compare, the index
 * of the first element that does not sort before key: where key is, or where
 * it would go. *found (if non-NULL) tells whether that element equals key. */
static inline size_t sorted_search(const void *base, size_t n, size_t elem_size, const void *key,
                                   sorted_compare_fn compare, bool *found)
{
    const char *p = base;
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (compare(p + mid * elem_size, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (found)
        *found = lo < n && compare(p + lo * elem_size, key) == 0;
    return lo;
}

/* A uint64_t key at an offset in each element. */
struct sorted_u64_key {
    size_t offset;
    uint64_t value;
};

/* Every element at or below the key sorts before it: the search stops past
 * the last of them. */
static inline int sorted_u64_at_or_below(const void *elem, const void *key)
{
    const struct sorted_u64_key *k = key;
    uint64_t v;

    memcpy(&v, (const char *)elem + k->offset, sizeof(v));
    return v <= k->value ? -1 : 1;
}

/* In base[0..n) sorted by the uint64_t at key_offset, how many have a key
 * <= key: the index past the last element starting at or below key. */
static inline size_t sorted_count_at_or_below(const void *base, size_t n, size_t elem_size,
                                              size_t key_offset, uint64_t key)
{
    struct sorted_u64_key k = {.offset = key_offset, .value = key};

    return sorted_search(base, n, elem_size, &k, sorted_u64_at_or_below, NULL);
}

#endif
