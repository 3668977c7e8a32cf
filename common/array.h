/* SPDX-License-Identifier: GPL-2.0-only */
/* Growing arrays: room is doubled, so that appending costs O(1) on average. */
#ifndef ARRAY_H
#define ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Make *array (of *cap elements of elem_size bytes) hold at least need
 * elements; a first allocation holds at least min. -ENOMEM leaves it as it was. */
static inline int array_reserve(void *array, size_t *cap, size_t need, size_t elem_size, size_t min)
{
    void **p = array;
    size_t n = *cap ? *cap : min;
    void *grown;

    if (need <= *cap)
        return 0;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return -ENOMEM;
        n *= 2;
    }
    grown = reallocarray(*p, n, elem_size);
    if (!grown)
        return -ENOMEM;
    *p = grown;
    *cap = n;
    return 0;
}

#endif
