/* SPDX-License-Identifier: GPL-2.0-only */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "log.h"
#include "macro.h"
#include "protocol.h"

void config_defaults(struct config *c)
{
    const char *env = getenv("STATE_DIRECTORY");

    memset(c, 0, sizeof(*c));
    snprintf(c->socket_path, sizeof(c->socket_path), "%s", protocol_socket_path());
    /* systemd's StateDirectory= says where */
    snprintf(c->state_dir, sizeof(c->state_dir), "%s", env && *env ? env : "/var/lib/offcpud");
    c->interval_ns = 1 * NSEC_PER_SEC;
    c->retention_ns = 15 * 60 * NSEC_PER_SEC;
    c->memory_limit = 256ULL << 20;
    /* field by field: the reload compares these bytes, padding included */
    c->collector.attach = COLLECTOR_ATTACH_AUTO;
    c->collector.agg_entries = 65536;
    c->collector.stack_entries = 16384;
    c->collector.task_entries = 32768;
    c->collector.stack_cache = true;
    c->collector.cache_check_shift = 6;
    c->collector.trace_kernel_threads = true;
    c->collector.unwind_callers = true;
    snprintf(c->socket_group, sizeof(c->socket_group), "offcpu");
    c->max_clients = 128;
    c->max_clients_per_uid = 16;
    c->idle_timeout_ns = 60 * NSEC_PER_SEC;
    c->request_limit = 64 * 1024;
    c->output_limit = 256ULL << 20;
}

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

int config_set(struct config *c, const char *key, const char *value, const char **why)
{
    uint64_t v;

    if (strcmp(key, "socket") == 0) {
        if (value[0] != '/' || strlen(value) >= 108) {
            *why = "must be an absolute path shorter than 108 bytes";
            return -EINVAL;
        }
        snprintf(c->socket_path, sizeof(c->socket_path), "%s", value);
    } else if (strcmp(key, "state-directory") == 0) {
        if (value[0] != '/' || strlen(value) >= sizeof(c->state_dir) - 32) {
            *why = "must be an absolute path";
            return -EINVAL;
        }
        snprintf(c->state_dir, sizeof(c->state_dir), "%s", value);
    } else if (strcmp(key, "interval") == 0) {
        if (duration_parse(value, &v) < 0 || v < 10 * NSEC_PER_MSEC || v > 3600 * NSEC_PER_SEC) {
            *why = "must be a duration from 10ms to 1h, e.g. 1s";
            return -EINVAL;
        }
        c->interval_ns = v;
    } else if (strcmp(key, "retention") == 0) {
        if (duration_parse(value, &v) < 0 || v < NSEC_PER_SEC) {
            *why = "must be a duration of at least 1s, e.g. 15m";
            return -EINVAL;
        }
        c->retention_ns = v;
    } else if (strcmp(key, "memory-limit") == 0) {
        if (parse_size(value, &v) < 0 || v < (1ULL << 20)) {
            *why = "must be a size of at least 1M, e.g. 256M";
            return -EINVAL;
        }
        c->memory_limit = v;
    } else if (strcmp(key, "attach") == 0) {
        if (strcmp(value, "auto") == 0)
            c->collector.attach = COLLECTOR_ATTACH_AUTO;
        else if (strcmp(value, "tp_btf") == 0)
            c->collector.attach = COLLECTOR_ATTACH_TP_BTF;
        else if (strcmp(value, "raw_tp") == 0)
            c->collector.attach = COLLECTOR_ATTACH_RAW_TP;
        else {
            *why = "must be auto, tp_btf or raw_tp";
            return -EINVAL;
        }
    } else if (strcmp(key, "aggregate-entries") == 0) {
        if (parse_u32(value, 1024, 1U << 24, &c->collector.agg_entries) < 0) {
            *why = "must be a number from 1024 to 16777216";
            return -EINVAL;
        }
    } else if (strcmp(key, "stack-entries") == 0) {
        if (parse_u32(value, 1024, 1U << 22, &c->collector.stack_entries) < 0) {
            *why = "must be a number from 1024 to 4194304";
            return -EINVAL;
        }
    } else if (strcmp(key, "stack-cache") == 0) {
        if (parse_bool(value, &c->collector.stack_cache) < 0) {
            *why = "must be yes or no";
            return -EINVAL;
        }
    } else if (strcmp(key, "stack-cache-check") == 0) {
        uint32_t n;

        if (parse_u32(value, 1, 1U << 16, &n) < 0 || (n & (n - 1))) {
            *why = "must be a power of two from 1 to 65536 (one cache hit in N is checked)";
            return -EINVAL;
        }
        c->collector.cache_check_shift = __builtin_ctz(n);
    } else if (strcmp(key, "unwind-callers") == 0) {
        if (parse_bool(value, &c->collector.unwind_callers) < 0) {
            *why = "must be yes or no";
            return -EINVAL;
        }
    } else if (strcmp(key, "trace-kernel-threads") == 0) {
        if (parse_bool(value, &c->collector.trace_kernel_threads) < 0) {
            *why = "must be yes or no";
            return -EINVAL;
        }
    } else if (strcmp(key, "trace-cgroups") == 0) {
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL;
        unsigned n = 0;
        bool relative = false;

        if (!copy)
            return -ENOMEM;
        for (char *p = strtok_r(copy, " \t", &save); p; p = strtok_r(NULL, " \t", &save)) {
            relative |= p[0] != '/';
            n++;
        }
        if (relative || n > COLLECTOR_TRACE_CGROUPS_MAX ||
            strlen(value) >= sizeof(c->trace_cgroups)) {
            *why = "must be up to 16 absolute cgroup paths separated by spaces";
            return -EINVAL;
        }
        snprintf(c->trace_cgroups, sizeof(c->trace_cgroups), "%s", value);
    } else if (strcmp(key, "socket-group") == 0) {
        if (!*value || strlen(value) >= sizeof(c->socket_group)) {
            *why = "must be a group name";
            return -EINVAL;
        }
        snprintf(c->socket_group, sizeof(c->socket_group), "%s", value);
    } else if (strcmp(key, "group-access") == 0) {
        if (strcmp(value, "own") == 0)
            c->group_access_all = false;
        else if (strcmp(value, "all") == 0)
            c->group_access_all = true;
        else {
            *why = "must be own or all";
            return -EINVAL;
        }
    } else if (strcmp(key, "max-clients-per-uid") == 0) {
        if (parse_u32(value, 1, 65536, &c->max_clients_per_uid) < 0) {
            *why = "must be a number from 1 to 65536";
            return -EINVAL;
        }
    } else if (strcmp(key, "idle-timeout") == 0) {
        if (duration_parse(value, &v) < 0 || v < 100 * NSEC_PER_MSEC || v > 3600 * NSEC_PER_SEC) {
            *why = "must be a duration from 100ms to 1h, e.g. 60s";
            return -EINVAL;
        }
        c->idle_timeout_ns = v;
    } else if (strcmp(key, "max-clients") == 0) {
        if (parse_u32(value, 1, 65536, &c->max_clients) < 0) {
            *why = "must be a number from 1 to 65536";
            return -EINVAL;
        }
    } else {
        return -ENOENT;
    }
    return 0;
}

static char *strip(char *s)
{
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

int config_load_file(struct config *c, const char *path)
{
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    _cleanup_free_ char *line = NULL;
    size_t size = 0;
    unsigned lineno = 0;

    if (!f)
        return log_error_errno(errno, "%s: %s", path, strerror(errno));
    while (getline(&line, &size, f) >= 0) {
        char *eq, *key, *value, *hash = strchr(line, '#');
        const char *why = "invalid value";
        int r;

        lineno++;
        if (hash)
            *hash = '\0';
        key = strip(line);
        if (!*key)
            continue;
        eq = strchr(key, '=');
        if (!eq)
            return log_error_errno(EINVAL, "%s:%u: expected 'key = value'", path, lineno);
        *eq = '\0';
        key = strip(key);
        value = strip(eq + 1);
        r = config_set(c, key, value, &why);
        if (r == -ENOENT)
            return log_error_errno(EINVAL, "%s:%u: unknown key '%s'", path, lineno, key);
        if (r < 0)
            return log_error_errno(EINVAL, "%s:%u: %s %s", path, lineno, key, why);
    }
    return 0;
}
