/* SPDX-License-Identifier: GPL-2.0-only */
#include "selection.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_unit.h"
#include "cli.h"
#include "duration.h"
#include "macro.h"
#include "name_escape.h"
#include "protocol.h"

/* "1763860000.123456789" to ns, exactly: a double would be off by hundreds of
 * ns at today's times, enough to move a window's edge across a snapshot's. */
static int parse_unix_time(const char *s, int64_t *ret)
{
    int64_t secs = 0, frac = 0;
    int digits = 0;

    if (!isdigit((unsigned char)*s))
        return -EINVAL;
    for (; isdigit((unsigned char)*s); s++) {
        if (secs > (INT64_MAX / 1000000000 - 9) / 10)
            return -ERANGE;
        secs = secs * 10 + (*s - '0');
    }
    if (*s == '.')
        for (s++; isdigit((unsigned char)*s); s++, digits++)
            if (digits < 9)
                frac = frac * 10 + (*s - '0');
    if (*s)
        return -EINVAL;
    for (; digits < 9; digits++)
        frac *= 10;
    *ret = secs * 1000000000 + frac;
    return 0;
}

/* "60s" back from now, or "@1763860000.5", an absolute Unix time. */
static int parse_time(const char *opt, const char *arg, json_t *params, const char *rel_key,
                      const char *abs_key)
{
    uint64_t ns;

    if (arg[0] == '@') {
        int64_t abs_ns;

        if (parse_unix_time(arg + 1, &abs_ns) < 0)
            return usage_error("invalid time '%s' for %s (use @UNIXSECONDS[.FRACTION])", arg, opt);
        json_object_set_new(params, abs_key, json_integer(abs_ns));
        return EXIT_OK;
    }
    if (duration_parse(arg, &ns) < 0)
        return usage_error("invalid duration '%s' for %s (use e.g. 500ms, 60s, 5m, 1h)", arg, opt);
    json_object_set_new(params, rel_key, json_integer((json_int_t)ns));
    return EXIT_OK;
}

static int parse_id(const char *opt, const char *arg, json_t *params, const char *key)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(arg, &end, 10);
    if (errno || *end || end == arg || v <= 0 || v > 0x7fffffff)
        return usage_error("invalid %s '%s' (a positive number)", opt, arg);
    json_object_set_new(params, key, json_integer(v));
    return EXIT_OK;
}

/* "nginx" means nginx.service, as systemctl reads it. */
static int parse_unit(const char *arg, json_t *params)
{
    _cleanup_free_ char *unit = NULL;

    if (!unit_name_valid(arg) && !strchr(arg, '.') && asprintf(&unit, "%s.service", arg) < 0)
        return fail("out of memory");
    if (!unit_name_valid(unit ?: arg))
        return usage_error("invalid --unit '%s' (a unit's name, like nginx.service)", arg);
    json_object_set_new(params, "unit", json_string(unit ?: arg));
    return EXIT_OK;
}

/* A name as the outputs show it; bytes typed that are not UTF-8 escaped
 * (name_escape.h), as the daemon reads them back. */
static int parse_comm(const char *arg, json_t *params)
{
    _cleanup_free_ char *text = name_escape(arg, 0);

    if (!text || json_object_set_new(params, "comm", json_string(text)) < 0)
        return fail("out of memory");
    return EXIT_OK;
}

static int parse_min_wait(const char *arg, json_t *params)
{
    uint64_t ns;

    if (duration_parse(arg, &ns) < 0 || ns > INT64_MAX)
        return usage_error("invalid duration '%s' for --min-wait (use e.g. 100ms, 1s)", arg);
    json_object_set_new(params, "min_wait_ns", json_integer((json_int_t)ns));
    return EXIT_OK;
}

int selection_option(int c, const char *arg, json_t *params)
{
    switch (c) {
    case 'p':
        return parse_id("--pid", arg, params, "pid");
    case 't':
        return parse_id("--tid", arg, params, "tid");
    case 'c':
        /* a path: what is not UTF-8 could not be sent, and must not be dropped */
        if (json_object_set_new(params, "cgroup", json_string(arg)) < 0)
            return usage_error("invalid --cgroup (a path in UTF-8)");
        return EXIT_OK;
    case 'u':
        return parse_unit(arg, params);
    case 'n':
        return parse_comm(arg, params);
    case 's':
        if (!protocol_state_valid(arg))
            return usage_error("invalid --state '%s' (one of %s)", arg, PROTOCOL_STATES);
        json_object_set_new(params, "state", json_string(arg));
        return EXIT_OK;
    case 'S':
        return parse_time("--since", arg, params, "since_ns", "start_ns");
    case 'U':
        return parse_time("--until", arg, params, "until_ns", "end_ns");
    case 'W':
        return parse_min_wait(arg, params);
    case 'I':
        json_object_set_new(params, "no_idle", json_true());
        return EXIT_OK;
    default:
        return -ENOENT;
    }
}

void selection_title(const json_t *params, const char *what, char *buf, size_t size)
{
    char whose[256];

    selection_describe(params, whose, sizeof(whose));
    snprintf(buf, size, "%s%s", what, strcmp(whose, " at all") ? whose : " of every task");
}

int selection_no_data(const json_t *params, const char *where)
{
    char what[256];

    selection_describe(params, what, sizeof(what));
    /* a task never seen, or gone before the window, is the daemon's error:
     * one asked for here ran, or has data, and did not block as asked */
    if (json_object_get(params, "pid") || json_object_get(params, "tid"))
        return fail("no off-CPU data%s in %s: it exists, but was not off-CPU there as selected "
                    "(widen --since, or select less)",
                    what, where);
    return fail("no off-CPU data%s in %s", what, where);
}

void selection_describe(const json_t *params, char *buf, size_t size)
{
    static const char *const keys[] = {"pid", "tid", "cgroup", "unit", "comm", "state"};
    size_t len = 0;

    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        json_t *v = json_object_get(params, keys[i]);

        if (!v)
            continue;
        if (json_is_integer(v))
            len += snprintf(buf + len, size - len, " for %s %lld", keys[i],
                            (long long)json_integer_value(v));
        else
            len += snprintf(buf + len, size - len, " for %s %s", keys[i], json_string_value(v));
        if (len >= size)
            break;
    }
    if (len == 0)
        snprintf(buf, size, " at all");
}

int selection_min_total(const char *arg, json_t *params)
{
    uint64_t ns;

    if (duration_parse(arg, &ns) < 0)
        return usage_error("invalid duration '%s' for --min-total", arg);
    json_object_set_new(params, "min_total_ns", json_integer((json_int_t)ns));
    return EXIT_OK;
}

int selection_group_by(const char *arg, json_t *params)
{
    _cleanup_free_ char *copy = strdup(arg);
    json_t *a = json_array();
    char *save = NULL;

    json_object_set_new(params, "group_by", a);
    for (char *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        if (!group_by_field(f))
            return usage_error("invalid --group-by field '%s' (%s)", f, group_by_fields_text());
        json_array_append_new(a, json_string(f));
    }
    return EXIT_OK;
}
