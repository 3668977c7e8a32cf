/* SPDX-License-Identifier: GPL-2.0-only */
/* The k-th largest of a set of widths: how a flame graph keeps to a number
 * of frames drawn apart, in offcpuctl (flame_layout.c) and, for the frames
 * it sends, in the daemon (query_flame.c), alike. */
#ifndef KTH_LARGEST_H
#define KTH_LARGEST_H

#include <stddef.h>
#include <stdint.h>

/* The k-th largest of v[0..n) (k < n), counting from 0, reordering v:
 * Hoare's selection with a three-way split, so that equal values end it. */
static inline uint64_t kth_largest(uint64_t *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n;

    while (hi - lo > 1) {
        uint64_t pivot = v[lo + (hi - lo) / 2], tmp;
        size_t lt = lo, i = lo, gt = hi;

        /* [lo, lt) > pivot, [lt, i) == pivot, [gt, hi) < pivot */
        while (i < gt) {
            if (v[i] > pivot) {
                tmp = v[lt], v[lt++] = v[i], v[i++] = tmp;
            } else if (v[i] < pivot) {
                tmp = v[--gt], v[gt] = v[i], v[i] = tmp;
            } else {
                i++;
            }
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return pivot;
    }
    return v[lo];
}

#endif
