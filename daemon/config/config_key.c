/* SPDX-License-Identifier: GPL-2.0-only */
#include "config_key.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector_options.h"
#include "duration.h"
#include "inet_address.h"
#include "macro.h"

/* "256M", "1GiB", "4096" (bytes); binary units. */
static int parse_size(const char *s, uint64_t *ret)
{
    static const struct {
        const char *suffix;
        unsigned shift;
    } units[] = {{"", 0}, {"K", 10}, {"KiB", 10}, {"M", 20}, {"MiB", 20}, {"G", 30}, {"GiB", 30}};
    char *end;
    unsigned long long v;

    if (!isdigit((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return -ERANGE;
    for (size_t i = 0; i < ARRAY_SIZE(units); i++)
        if (strcmp(end, units[i].suffix) == 0) {
            if (v > (UINT64_MAX >> units[i].shift))
                return -ERANGE;
            *ret = v << units[i].shift;
            return 0;
        }
    return -EINVAL;
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *ret)
{
    char *end;
    unsigned long v;

    if (!isdigit((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -EINVAL;
    *ret = v;
    return 0;
}

static int parse_bool(const char *s, bool *ret)
{
    if (strcmp(s, "yes") == 0 || strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
        *ret = true;
    else if (strcmp(s, "no") == 0 || strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
        *ret = false;
    else
        return -EINVAL;
    return 0;
}

/* v, which reading the text returned r for, into a uint64_t field within
 * the key's bounds */
static int store_u64(const struct config_key *k, int r, uint64_t v, void *field)
{
    if (r < 0 || v < k->min || v > k->max)
        return -EINVAL;
    memcpy(field, &v, sizeof(v));
    return 0;
}

int config_parse_duration(const struct config_key *k, const char *value, void *field)
{
    uint64_t v = 0;
    int r = duration_parse(value, &v);

    return store_u64(k, r, v, field);
}

int config_parse_size(const struct config_key *k, const char *value, void *field)
{
    uint64_t v = 0;
    int r = parse_size(value, &v);

    return store_u64(k, r, v, field);
}

int config_parse_u32(const struct config_key *k, const char *value, void *field)
{
    return parse_u32(value, k->min, k->max, field);
}

/* A power of two N, kept as its log2: one cache hit in N is checked. */
int config_parse_pow2(const struct config_key *k, const char *value, void *field)
{
    uint32_t n;

    if (parse_u32(value, k->min, k->max, &n) < 0 || (n & (n - 1)))
        return -EINVAL;
    *(uint32_t *)field = __builtin_ctz(n);
    return 0;
}

int config_parse_bool(const struct config_key *k, const char *value, void *field)
{
    return parse_bool(value, field);
}

/* The index of the choice, into an enum or (two choices) a bool. */
int config_parse_choice(const struct config_key *k, const char *value, void *field)
{
    for (int i = 0; k->choices[i]; i++)
        if (strcmp(value, k->choices[i]) == 0) {
            if (k->size == sizeof(bool))
                *(bool *)field = i;
            else
                *(int *)field = i;
            return 0;
        }
    return -EINVAL;
}

int config_parse_string(const struct config_key *k, const char *value, void *field)
{
    size_t len = strlen(value);

    if (len < k->min || len > k->max || len >= k->size)
        return -EINVAL;
    memcpy(field, value, len + 1);
    return 0;
}

int config_parse_path(const struct config_key *k, const char *value, void *field)
{
    return value[0] == '/' ? config_parse_string(k, value, field) : -EINVAL;
}

int config_parse_listen(const struct config_key *k, const char *value, void *field)
{
    struct sockaddr_storage sa;
    socklen_t len;

    if (*value && inet_address_parse(value, &sa, &len) < 0)
        return -EINVAL;
    return config_parse_string(k, value, field);
}

/* Up to COLLECTOR_TRACE_CGROUPS_MAX absolute paths, separated by spaces. */
int config_parse_cgroups(const struct config_key *k, const char *value, void *field)
{
    _cleanup_free_ char *copy = strdup(value);
    char *save = NULL;
    unsigned n = 0;

    if (!copy)
        return -ENOMEM;
    for (char *p = strtok_r(copy, " \t", &save); p; p = strtok_r(NULL, " \t", &save)) {
        if (p[0] != '/')
            return -EINVAL;
        n++;
    }
    return n > COLLECTOR_TRACE_CGROUPS_MAX ? -EINVAL : config_parse_string(k, value, field);
}
