/* SPDX-License-Identifier: GPL-2.0-only */
#include "duration.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

/* Ascending, so that formatting can walk it from the largest unit down. */
static const struct {
    const char *name;
    uint64_t ns;
} units[] = {
    {"ns", 1},
    {"us", NSEC_PER_USEC},
    {"ms", NSEC_PER_MSEC},
    {"s", NSEC_PER_SEC},
    {"m", 60 * NSEC_PER_SEC},
    {"h", 3600 * NSEC_PER_SEC},
    {"d", 86400 * NSEC_PER_SEC},
};

/* Every user of a duration keeps it in a signed 64-bit field (JSON integers,
 * time arithmetic): anything larger is an overflow for them. */
#define DURATION_MAX ((uint64_t)INT64_MAX)

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The unit at *s: the whole run of letters must name one, so that "5sec" or
 * "5mss" is refused rather than read as "5s" followed by junk. */
static int unit_at(const char *s, size_t *ret_len)
{
    size_t len = 0;

    while (is_letter(s[len]))
        len++;
    for (size_t i = 0; i < ARRAY_SIZE(units); i++)
        if (strlen(units[i].name) == len && strncmp(s, units[i].name, len) == 0) {
            *ret_len = len;
            return (int)i;
        }
    return -EINVAL;
}

int duration_parse(const char *s, uint64_t *ret_ns)
{
    uint64_t total = 0;

    if (!s || !*s)
        return -EINVAL;
    while (*s) {
        uint64_t v = 0, scale;
        size_t len;
        int u;

        /* digits first: no sign, no space, no fraction, no bare unit */
        if (!is_digit(*s))
            return -EINVAL;
        for (; is_digit(*s); s++) {
            unsigned digit = (unsigned)(*s - '0');

            if (v > (DURATION_MAX - digit) / 10)
                return -ERANGE;
            v = v * 10 + digit;
        }
        u = unit_at(s, &len);
        if (u < 0)
            return u; /* a bare number, or an unknown unit */
        scale = units[u].ns;
        if (v > (DURATION_MAX - total) / scale)
            return -ERANGE;
        total += v * scale;
        s += len;
    }
    *ret_ns = total;
    return 0;
}

const char *duration_format(uint64_t ns, char *buf, size_t size)
{
    size_t i = ARRAY_SIZE(units) - 1;

    if (ns == 0) {
        snprintf(buf, size, "0s");
        return buf;
    }
    /* the largest unit that divides ns exactly; "ns" always does */
    while (ns % units[i].ns != 0)
        i--;
    snprintf(buf, size, "%llu%s", (unsigned long long)(ns / units[i].ns), units[i].name);
    return buf;
}
