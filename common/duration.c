/* SPDX-License-Identifier: GPL-2.0-only */
#include "duration.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    uint64_t ns;
} units[] = {
    /* longest names first, so that "ms" is not read as "m" */
    {"ns", 1ULL},
    {"us", 1000ULL},
    {"ms", 1000000ULL},
    {"s", 1000000000ULL},
    {"m", 60ULL * 1000000000ULL},
    {"h", 3600ULL * 1000000000ULL},
    {"d", 86400ULL * 1000000000ULL},
};

#define NUNITS (sizeof(units) / sizeof(units[0]))

int duration_parse(const char *s, uint64_t *ret_ns)
{
    uint64_t total = 0;

    if (!s || !*s)
        return -EINVAL;
    while (*s) {
        uint64_t v = 0;
        size_t best = NUNITS, best_len = 0;

        if (!isdigit((unsigned char)*s))
            return -EINVAL;
        for (; isdigit((unsigned char)*s); s++) {
            if (v > (UINT64_MAX - 9) / 10)
                return -ERANGE;
            v = v * 10 + (uint64_t)(*s - '0');
        }
        for (size_t i = 0; i < NUNITS; i++) {
            size_t len = strlen(units[i].name);

            if (strncmp(s, units[i].name, len) == 0 && len > best_len &&
                !isalpha((unsigned char)s[len])) {
                best = i;
                best_len = len;
            }
        }
        if (best == NUNITS)
            return -EINVAL; /* a bare number, or an unknown unit */
        if (v > (UINT64_MAX - total) / units[best].ns)
            return -ERANGE;
        total += v * units[best].ns;
        s += best_len;
    }
    *ret_ns = total;
    return 0;
}

const char *duration_format(uint64_t ns, char *buf, size_t size)
{
    /* the largest unit that divides ns exactly */
    for (size_t i = NUNITS; i-- > 0;)
        if (ns >= units[i].ns && ns % units[i].ns == 0) {
            snprintf(buf, size, "%llu%s", (unsigned long long)(ns / units[i].ns), units[i].name);
            return buf;
        }
    snprintf(buf, size, "%llu%s", (unsigned long long)ns, ns ? "ns" : "s");
    return buf;
}
