/* SPDX-License-Identifier: GPL-2.0-only */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "inet_address.h"
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
    /* a big C++ program's full .symtab (1M symbols) takes 60-100 MiB */
    c->symbol_memory = 256ULL << 20;
    c->journal_size = 64ULL << 20;
    /* field by field: the reload compares these bytes, padding included */
    c->collector.attach = COLLECTOR_ATTACH_AUTO;
    c->collector.agg_entries = 65536;
    c->collector.stack_entries = 16384;
    c->collector.task_entries = 32768;
    c->collector.stack_cache = true;
    c->collector.cache_check_shift = 6;
    c->collector.trace_kernel_threads = true;
    c->collector.unwind_dwarf = true;
    /* 2M rows: every file of a busy host (libc has 28k rows, python3 65k) */
    c->collector.unwind_memory = 32ULL << 20;
    c->collector.unwind_linger_ns = 30 * NSEC_PER_SEC;
    c->collector.cgroup_share = 25;
    snprintf(c->socket_group, sizeof(c->socket_group), "offcpu");
    c->max_clients = 128;
    c->max_clients_per_uid = 16;
    c->max_clients_per_address = 16;
    c->request_timeout_ns = 5 * NSEC_PER_SEC;
    c->idle_timeout_ns = 60 * NSEC_PER_SEC;
    c->request_limit = 64 * 1024;
    c->output_limit = 256ULL << 20;
    c->metrics_max_cgroups = 200;
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

/* One setting: its name, how its text is read, where it goes, its bounds. */
struct key {
    const char *name;
    int (*parse)(const struct key *k, const char *value, void *field);
    size_t offset, size;        /* of its field in struct config */
    uint64_t min, max;          /* for numbers, durations, sizes; for strings the length */
    const char *why;            /* what a valid value is, for the error */
    const char *const *choices; /* for parse_choice: NULL-terminated, stored as their index */
};

static int parse_duration_key(const struct key *k, const char *value, void *field)
{
    uint64_t v;

    if (duration_parse(value, &v) < 0 || v < k->min || v > k->max)
        return -EINVAL;
    memcpy(field, &v, sizeof(v));
    return 0;
}

static int parse_size_key(const struct key *k, const char *value, void *field)
{
    uint64_t v;

    if (parse_size(value, &v) < 0 || v < k->min || v > k->max)
        return -EINVAL;
    memcpy(field, &v, sizeof(v));
    return 0;
}

static int parse_u32_key(const struct key *k, const char *value, void *field)
{
    return parse_u32(value, k->min, k->max, field);
}

/* A power of two N, kept as its log2: one cache hit in N is checked. */
static int parse_pow2_key(const struct key *k, const char *value, void *field)
{
    uint32_t n;

    if (parse_u32(value, k->min, k->max, &n) < 0 || (n & (n - 1)))
        return -EINVAL;
    *(uint32_t *)field = __builtin_ctz(n);
    return 0;
}

static int parse_bool_key(const struct key *k, const char *value, void *field)
{
    return parse_bool(value, field);
}

/* The index of the choice, into an enum or (two choices) a bool. */
static int parse_choice(const struct key *k, const char *value, void *field)
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

static int parse_string_key(const struct key *k, const char *value, void *field)
{
    size_t len = strlen(value);

    if (len < k->min || len > k->max || len >= k->size)
        return -EINVAL;
    memcpy(field, value, len + 1);
    return 0;
}

static int parse_path_key(const struct key *k, const char *value, void *field)
{
    return value[0] == '/' ? parse_string_key(k, value, field) : -EINVAL;
}

static int parse_listen_key(const struct key *k, const char *value, void *field)
{
    struct sockaddr_storage sa;
    socklen_t len;

    if (*value && inet_address_parse(value, &sa, &len) < 0)
        return -EINVAL;
    return parse_string_key(k, value, field);
}

/* Up to COLLECTOR_TRACE_CGROUPS_MAX absolute paths, separated by spaces. */
static int parse_cgroups_key(const struct key *k, const char *value, void *field)
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
    return n > COLLECTOR_TRACE_CGROUPS_MAX ? -EINVAL : parse_string_key(k, value, field);
}

#define FIELD(f) offsetof(struct config, f), sizeof(((struct config *)0)->f)

static const char *const attach_choices[] = {[COLLECTOR_ATTACH_AUTO] = "auto",
                                             [COLLECTOR_ATTACH_TP_BTF] = "tp_btf",
                                             [COLLECTOR_ATTACH_RAW_TP] = "raw_tp",
                                             NULL};
static const char *const unwind_choices[] = {"frame-pointer", "dwarf", NULL}; /* unwind_dwarf */
static const char *const group_access_choices[] = {"own", "all", NULL};       /* group_access_all */

static const struct key keys[] = {
    {"socket", parse_path_key, FIELD(socket_path), 1, 107,
     "must be an absolute path shorter than 108 bytes", NULL},
    {"state-directory", parse_path_key, FIELD(state_dir), 1, PATH_MAX - 33,
     "must be an absolute path", NULL},
    {"journal-size", parse_size_key, FIELD(journal_size), 1ULL << 20, 1ULL << 40,
     "must be a size from 1M to 1T, e.g. 64M", NULL},
    {"journal-sync", parse_bool_key, FIELD(journal_sync), 0, 0, "must be yes or no", NULL},
    {"interval", parse_duration_key, FIELD(interval_ns), 10 * NSEC_PER_MSEC, 3600 * NSEC_PER_SEC,
     "must be a duration from 10ms to 1h, e.g. 1s", NULL},
    {"retention", parse_duration_key, FIELD(retention_ns), NSEC_PER_SEC, UINT64_MAX,
     "must be a duration of at least 1s, e.g. 15m", NULL},
    {"memory-limit", parse_size_key, FIELD(memory_limit), 1ULL << 20, UINT64_MAX,
     "must be a size of at least 1M, e.g. 256M", NULL},
    {"symbol-memory", parse_size_key, FIELD(symbol_memory), 1ULL << 20, 64ULL << 30,
     "must be a size from 1M to 64G, e.g. 256M", NULL},
    {"attach", parse_choice, FIELD(collector.attach), 0, 0, "must be auto, tp_btf or raw_tp",
     attach_choices},
    {"aggregate-entries", parse_u32_key, FIELD(collector.agg_entries), 1024, 1U << 24,
     "must be a number from 1024 to 16777216", NULL},
    {"stack-entries", parse_u32_key, FIELD(collector.stack_entries), 1024, 1U << 22,
     "must be a number from 1024 to 4194304", NULL},
    {"cgroup-share", parse_u32_key, FIELD(collector.cgroup_share), 1, 100,
     "must be a percentage from 1 to 100", NULL},
    {"stack-cache", parse_bool_key, FIELD(collector.stack_cache), 0, 0, "must be yes or no", NULL},
    {"wakers", parse_bool_key, FIELD(collector.wakers), 0, 0, "must be yes or no", NULL},
    {"stack-cache-check", parse_pow2_key, FIELD(collector.cache_check_shift), 1, 1U << 16,
     "must be a power of two from 1 to 65536 (one cache hit in N is checked)", NULL},
    {"unwind", parse_choice, FIELD(collector.unwind_dwarf), 0, 0, "must be dwarf or frame-pointer",
     unwind_choices},
    {"unwind-memory", parse_size_key, FIELD(collector.unwind_memory), 1ULL << 20, 4ULL << 30,
     "must be a size from 1M to 4G, e.g. 32M", NULL},
    {"unwind-linger", parse_duration_key, FIELD(collector.unwind_linger_ns), 0, 3600 * NSEC_PER_SEC,
     "must be a duration from 0s (off) to 1h, e.g. 30s", NULL},
    {"trace-kernel-threads", parse_bool_key, FIELD(collector.trace_kernel_threads), 0, 0,
     "must be yes or no", NULL},
    {"trace-cgroups", parse_cgroups_key, FIELD(trace_cgroups), 0, SIZE_MAX,
     "must be up to 16 absolute cgroup paths separated by spaces", NULL},
    {"socket-group", parse_string_key, FIELD(socket_group), 1, SIZE_MAX, "must be a group name",
     NULL},
    {"group-access", parse_choice, FIELD(group_access_all), 0, 0, "must be own or all",
     group_access_choices},
    {"max-clients", parse_u32_key, FIELD(max_clients), 1, 65536, "must be a number from 1 to 65536",
     NULL},
    {"max-clients-per-uid", parse_u32_key, FIELD(max_clients_per_uid), 1, 65536,
     "must be a number from 1 to 65536", NULL},
    {"max-clients-per-address", parse_u32_key, FIELD(max_clients_per_address), 1, 65536,
     "must be a number from 1 to 65536", NULL},
    {"metrics-listen", parse_listen_key, FIELD(metrics_listen), 0, SIZE_MAX,
     "must be ADDRESS:PORT, e.g. 127.0.0.1:9572, [::1]:9572 or *:9572 (empty: off)", NULL},
    {"metrics-max-cgroups", parse_u32_key, FIELD(metrics_max_cgroups), 1, 100000,
     "must be a number from 1 to 100000", NULL},
    {"idle-timeout", parse_duration_key, FIELD(idle_timeout_ns), 100 * NSEC_PER_MSEC,
     3600 * NSEC_PER_SEC, "must be a duration from 100ms to 1h, e.g. 60s", NULL},
    {"request-timeout", parse_duration_key, FIELD(request_timeout_ns), 100 * NSEC_PER_MSEC,
     3600 * NSEC_PER_SEC, "must be a duration from 100ms to 1h, e.g. 5s", NULL},
};

int config_set(struct config *c, const char *key, const char *value, const char **why)
{
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        const struct key *k = &keys[i];
        int r;

        if (strcmp(k->name, key) != 0)
            continue;
        r = k->parse(k, value, (char *)c + k->offset);
        if (r == -EINVAL)
            *why = k->why;
        return r;
    }
    return -ENOENT;
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
