/* SPDX-License-Identifier: GPL-2.0-only */
/* Settings: built-in defaults, then the config file, then the command line. */
#ifndef CONFIG_H
#define CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector_options.h"
#include "config_key.h"

struct config {
    char socket_path[PATH_MAX];
    char state_dir[PATH_MAX]; /* the ring is kept here across restarts */
    uint64_t journal_size;    /* bytes the journal may reach before compaction */
    bool journal_sync;        /* fdatasync after each snapshot journaled */
    uint64_t interval_ns;
    uint64_t drain_budget_ns; /* what one drain may hold the daemon; the rest goes on later */
    uint64_t retention_ns;
    uint64_t memory_limit;
    uint64_t symbol_memory; /* ELF files' symbols, beside memory_limit */
    struct collector_options collector;
    char trace_cgroups[2048]; /* cgroup paths, space-separated; empty: all */
    char socket_group[64];    /* its members may connect and read (see group-access) */
    bool group_access_all;    /* the socket's group sees every process, not only its own */
    uint32_t max_clients;
    uint32_t max_clients_per_uid;     /* root exempt */
    uint32_t max_clients_per_address; /* of the metrics endpoint */
    uint64_t request_timeout_ns;      /* for a request to arrive whole */
    uint64_t idle_timeout_ns;
    uint32_t request_limit;   /* bytes of one request */
    uint64_t output_limit;    /* bytes queued for one client */
    char metrics_listen[128]; /* ADDRESS:PORT of the Prometheus endpoint; empty: none */
    uint32_t metrics_max_cgroups;
};

extern const struct config_key config_keys[];
extern const size_t config_keys_n;

/* Every key's default; $OFFCPUD_SOCKET and $STATE_DIRECTORY (systemd's
 * StateDirectory=) over those of socket and state-directory. */
void config_defaults(struct config *c);

/* Set one key ("interval", "retention", "memory-limit", "socket", ...) from its
 * text. Returns 0, -ENOENT for an unknown key or -EINVAL with *why set. */
int config_set(struct config *c, const char *key, const char *value, const char **why);

/* Read "key = value" lines ('#' comments). Errors are logged as file:line. */
int config_load_file(struct config *c, const char *path);

#endif
