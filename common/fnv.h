/* SPDX-License-Identifier: GPL-2.0-only */
/* FNV-1a, 64 bits: a fast hash of bytes, fed in pieces. Not for adversaries:
 * every user confirms with a full compare or uses it only as a checksum. */
#ifndef FNV_H
#define FNV_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A_INIT 0xcbf29ce484222325ULL

static inline uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

#endif
