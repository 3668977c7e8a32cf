/* SPDX-License-Identifier: GPL-2.0-only */
/* Binary search in the address-sorted tables of the symbolizer. */
#ifndef SORTED_SEARCH_H
#define SORTED_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* In base[0..n) (elements of elem_size bytes) sorted by the uint64_t at
 * key_offset, how many have a key <= key: the index past the last element
 * starting at or below key. */
static inline size_t sorted_count_at_or_below(const void *base, size_t n, size_t elem_size,
                                              size_t key_offset, uint64_t key)
{
    const char *p = base;
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t v;

        memcpy(&v, p + mid * elem_size + key_offset, sizeof(v));
        if (v <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
