/* SPDX-License-Identifier: GPL-2.0-only */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "protocol.h"

#define FIELD(f) .offset = offsetof(struct config, f), .size = sizeof(((struct config *)0)->f)

static const char *const attach_choices[] = {[COLLECTOR_ATTACH_AUTO] = "auto",
                                             [COLLECTOR_ATTACH_TP_BTF] = "tp_btf",
                                             [COLLECTOR_ATTACH_RAW_TP] = "raw_tp",
                                             NULL};
static const char *const unwind_choices[] = {"frame-pointer", "dwarf", NULL}; /* unwind_dwarf */
static const char *const group_access_choices[] = {"own", "all", NULL};       /* group_access_all */

/* Every key of the file and the command line, with its default: the one home
 * of each, which etc/offcpud.conf and the man pages are tested against
 * (tests/config/check_docs.py). */
const struct config_key config_keys[] = {
    {.name = "socket",
     .short_option = 's',
     .arg = "PATH",
     .def = PROTOCOL_SOCKET_PATH,
     .help = "listen on PATH ($OFFCPUD_SOCKET sets the default)",
     .parse = config_parse_path,
     FIELD(socket_path),
     .min = 1,
     .max = 107,
     .why = "must be an absolute path shorter than 108 bytes"},
    {.name = "state-directory",
     .arg = "DIR",
     .def = "/var/lib/offcpud",
     .help = "keep the ring here ($STATE_DIRECTORY sets the default)",
     .parse = config_parse_path,
     FIELD(state_dir),
     .min = 1,
     .max = PATH_MAX - 33,
     .why = "must be an absolute path"},
    {.name = "journal-size",
     .arg = "SIZE",
     .def = "64M",
     .help = "compact the journal of snapshots at this size",
     .parse = config_parse_size,
     FIELD(journal_size),
     .min = 1ULL << 20,
     .max = 1ULL << 40,
     .why = "must be a size from 1M to 1T, e.g. 64M"},
    {.name = "journal-sync",
     .arg = "yes|no",
     .def = "no",
     .help = "flush each snapshot journaled to the disk",
     .parse = config_parse_bool,
     FIELD(journal_sync),
     .why = "must be yes or no"},
    {.name = "interval",
     .short_option = 'i',
     .arg = "DURATION",
     .def = "1s",
     .help = "snapshot interval",
     .parse = config_parse_duration,
     FIELD(interval_ns),
     .min = 10 * NSEC_PER_MSEC,
     .max = 3600 * NSEC_PER_SEC,
     .why = "must be a duration from 10ms to 1h, e.g. 1s"},
    {.name = "drain-budget",
     .arg = "DURATION",
     .def = "200ms",
     .help = "what one drain may hold the daemon; the rest goes on later",
     .parse = config_parse_duration,
     FIELD(drain_budget_ns),
     .min = 10 * NSEC_PER_MSEC,
     .max = 3600 * NSEC_PER_SEC,
     .why = "must be a duration from 10ms to 1h, e.g. 200ms"},
    {.name = "retention",
     .short_option = 'r',
     .arg = "DURATION",
     .def = "15m",
     .help = "keep snapshots this long",
     .parse = config_parse_duration,
     FIELD(retention_ns),
     .min = NSEC_PER_SEC,
     .max = UINT64_MAX,
     .why = "must be a duration of at least 1s, e.g. 15m"},
    {.name = "memory-limit",
     .short_option = 'm',
     .arg = "SIZE",
     .def = "256M",
     .help = "memory for snapshots",
     .parse = config_parse_size,
     FIELD(memory_limit),
     .min = 1ULL << 20,
     .max = UINT64_MAX,
     .why = "must be a size of at least 1M, e.g. 256M"},
    /* a big C++ program's full .symtab (1M symbols) takes 60-100 MiB */
    {.name = "symbol-memory",
     .arg = "SIZE",
     .def = "256M",
     .help = "memory for the symbols of ELF files",
     .parse = config_parse_size,
     FIELD(symbol_memory),
     .min = 1ULL << 20,
     .max = 64ULL << 30,
     .why = "must be a size from 1M to 64G, e.g. 256M"},
    {.name = "attach",
     .arg = "MODE",
     .def = "auto",
     .help = "auto, tp_btf or raw_tp",
     .parse = config_parse_choice,
     FIELD(collector.attach),
     .why = "must be auto, tp_btf or raw_tp",
     .choices = attach_choices},
    {.name = "aggregate-entries",
     .arg = "NUMBER",
     .def = "65536",
     .help = "distinct entries per interval",
     .parse = config_parse_u32,
     FIELD(collector.agg_entries),
     .min = 1024,
     .max = 1U << 24,
     .why = "must be a number from 1024 to 16777216"},
    {.name = "stack-entries",
     .arg = "NUMBER",
     .def = "16384",
     .help = "distinct stacks per interval",
     .parse = config_parse_u32,
     FIELD(collector.stack_entries),
     .min = 1024,
     .max = 1U << 22,
     .why = "must be a number from 1024 to 4194304"},
    {.name = "cgroup-share",
     .arg = "PERCENT",
     .def = "25",
     .help = "of the entries one cgroup may fill",
     .parse = config_parse_u32,
     FIELD(collector.cgroup_share),
     .min = 1,
     .max = 100,
     .why = "must be a percentage from 1 to 100"},
    {.name = "stack-cache",
     .arg = "yes|no",
     .def = "yes",
     .help = "reuse a thread's stacks where it blocked before",
     .parse = config_parse_bool,
     FIELD(collector.stack_cache),
     .why = "must be yes or no"},
    {.name = "wakers",
     .arg = "yes|no",
     .def = "yes",
     .help = "walk wakers' stacks, for offcpuctl wakers and why",
     .parse = config_parse_bool,
     FIELD(collector.wakers),
     .why = "must be yes or no"},
    {.name = "python-frames",
     .arg = "yes|no",
     .def = "yes",
     .help = "walk CPython threads' Python frames (with unwind = dwarf)",
     .parse = config_parse_bool,
     FIELD(collector.python_frames),
     .why = "must be yes or no"},
    {.name = "stack-cache-check",
     .arg = "N",
     .def = "64",
     .help = "check one stack cache hit in N at a new place (backing off to 1 in 16N)",
     .parse = config_parse_pow2,
     FIELD(collector.cache_check_shift),
     .min = 1,
     .max = 1U << 16,
     .why = "must be a power of two from 1 to 65536 (one cache hit in N is checked)"},
    {.name = "unwind",
     .arg = "MODE",
     .def = "dwarf",
     .help = "dwarf or frame-pointer",
     .parse = config_parse_choice,
     FIELD(collector.unwind_dwarf),
     .why = "must be dwarf or frame-pointer",
     .choices = unwind_choices},
    /* 2M rows: every file of a busy host (libc has 28k rows, python3 65k) */
    {.name = "unwind-memory",
     .arg = "SIZE",
     .def = "32M",
     .help = "kernel memory for the unwind rows",
     .parse = config_parse_size,
     FIELD(collector.unwind_memory),
     .min = 1ULL << 20,
     .max = 4ULL << 30,
     .why = "must be a size from 1M to 4G, e.g. 32M"},
    {.name = "unwind-linger",
     .arg = "DURATION",
     .def = "30s",
     .help = "keep a file's unwind rows this long after its last process",
     .parse = config_parse_duration,
     FIELD(collector.unwind_linger_ns),
     .min = 0,
     .max = 3600 * NSEC_PER_SEC,
     .why = "must be a duration from 0s (off) to 1h, e.g. 30s"},
    {.name = "trace-kernel-threads",
     .arg = "yes|no",
     .def = "yes",
     .help = "trace kernel threads too",
     .parse = config_parse_bool,
     FIELD(collector.trace_kernel_threads),
     .why = "must be yes or no"},
    {.name = "trace-cgroups",
     .arg = "'PATH...'",
     .def = "",
     .help = "trace only these cgroups and their subtrees (empty: all)",
     .parse = config_parse_cgroups,
     FIELD(trace_cgroups),
     .min = 0,
     .max = SIZE_MAX,
     .why = "must be up to 16 absolute cgroup paths separated by spaces"},
    {.name = "socket-group",
     .arg = "NAME",
     .def = "offcpu",
     .help = "whose members may connect and read",
     .parse = config_parse_string,
     FIELD(socket_group),
     .min = 1,
     .max = SIZE_MAX,
     .why = "must be a group name"},
    {.name = "group-access",
     .arg = "own|all",
     .def = "own",
     .help = "what the socket's group may see",
     .parse = config_parse_choice,
     FIELD(group_access_all),
     .why = "must be own or all",
     .choices = group_access_choices},
    {.name = "max-clients",
     .arg = "NUMBER",
     .def = "128",
     .help = "clients connected at once",
     .parse = config_parse_u32,
     FIELD(max_clients),
     .min = 1,
     .max = 65536,
     .why = "must be a number from 1 to 65536"},
    {.name = "max-clients-per-uid",
     .arg = "NUMBER",
     .def = "16",
     .help = "clients of one user at once (root exempt)",
     .parse = config_parse_u32,
     FIELD(max_clients_per_uid),
     .min = 1,
     .max = 65536,
     .why = "must be a number from 1 to 65536"},
    {.name = "max-clients-per-address",
     .arg = "NUMBER",
     .def = "16",
     .help = "metrics clients of one address at once",
     .parse = config_parse_u32,
     FIELD(max_clients_per_address),
     .min = 1,
     .max = 65536,
     .why = "must be a number from 1 to 65536"},
    {.name = "metrics-listen",
     .arg = "ADDRESS:PORT",
     .def = "",
     .help = "serve Prometheus metrics (empty: off)",
     .parse = config_parse_listen,
     FIELD(metrics_listen),
     .min = 0,
     .max = SIZE_MAX,
     .why = "must be ADDRESS:PORT, e.g. 127.0.0.1:9572, [::1]:9572 or *:9572 (empty: off)"},
    {.name = "metrics-max-cgroups",
     .arg = "NUMBER",
     .def = "200",
     .help = "cgroups the metrics name one by one",
     .parse = config_parse_u32,
     FIELD(metrics_max_cgroups),
     .min = 1,
     .max = 100000,
     .why = "must be a number from 1 to 100000"},
    {.name = "idle-timeout",
     .arg = "DURATION",
     .def = "60s",
     .help = "close a client idle this long",
     .parse = config_parse_duration,
     FIELD(idle_timeout_ns),
     .min = 100 * NSEC_PER_MSEC,
     .max = 3600 * NSEC_PER_SEC,
     .why = "must be a duration from 100ms to 1h, e.g. 60s"},
    {.name = "request-timeout",
     .arg = "DURATION",
     .def = "5s",
     .help = "for a request to arrive whole",
     .parse = config_parse_duration,
     FIELD(request_timeout_ns),
     .min = 100 * NSEC_PER_MSEC,
     .max = 3600 * NSEC_PER_SEC,
     .why = "must be a duration from 100ms to 1h, e.g. 5s"},
};
const size_t config_keys_n = ARRAY_SIZE(config_keys);

void config_defaults(struct config *c)
{
    const char *env = getenv("STATE_DIRECTORY");
    const char *why;

    memset(c, 0, sizeof(*c));
    /* field by field: the reload compares these bytes, padding included;
     * every default parses (tests/config/test_config.c checks it) */
    for (size_t i = 0; i < ARRAY_SIZE(config_keys); i++)
        (void)config_set(c, config_keys[i].name, config_keys[i].def, &why);
    snprintf(c->socket_path, sizeof(c->socket_path), "%s", protocol_socket_path());
    /* systemd's StateDirectory= says where */
    if (env && *env)
        snprintf(c->state_dir, sizeof(c->state_dir), "%s", env);
    /* no keys of their own */
    c->collector.task_entries = 32768;
    c->request_limit = 64 * 1024;
    c->output_limit = 256ULL << 20;
}

int config_set(struct config *c, const char *key, const char *value, const char **why)
{
    for (size_t i = 0; i < ARRAY_SIZE(config_keys); i++) {
        const struct config_key *k = &config_keys[i];
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
