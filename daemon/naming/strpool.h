/* SPDX-License-Identifier: GPL-2.0-only */
/* Symbol tables keep their names in one buffer, named by 32-bit offsets:
 * half the size of pointers, and one allocation instead of thousands. */
#ifndef STRPOOL_H
#define STRPOOL_H

#include <stdint.h>
#include <string.h>

#include "array.h"

struct strpool {
    char *data;
    size_t len, cap;
};

/* Append s[0..len) and a NUL; *ret is its offset. */
static inline int strpool_add(struct strpool *p, const char *s, size_t len, uint32_t *ret)
{
    int r;

    if (p->len + len + 1 > UINT32_MAX)
        return -E2BIG;
    r = array_reserve(&p->data, &p->cap, p->len + len + 1, 1, 4096);
    if (r < 0)
        return r;
    memcpy(p->data + p->len, s, len);
    p->data[p->len + len] = '\0';
    *ret = (uint32_t)p->len;
    p->len += len + 1;
    return 0;
}

#endif
