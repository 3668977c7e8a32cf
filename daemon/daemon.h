/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's state, shared by the main loop, the drain and the API. */
#ifndef DAEMON_H
#define DAEMON_H

#include <stdint.h>

#include "cgroups.h"
#include "collector.h"
#include "config.h"
#include "ring.h"
#include "snapshot.h"
#include "symbolizer.h"

struct server;

struct daemon_stats {
    uint64_t drains;
    uint64_t drain_last_ns;
    uint64_t drain_max_ns;
    uint64_t requests;
    uint64_t request_errors;
    struct snapshot_stats snap;
    uint64_t collector[OFFCPU_STAT__MAX]; /* as last read for Status */
};

struct daemon {
    struct config cfg;
    int argc; /* kept to read the configuration again on SIGHUP */
    char **argv;
    struct collector *collector;
    struct symbolizer *sym;
    struct cgroups *cgroups; /* NULL without a cgroup2 mount */
    struct ring ring;
    struct server *server;
    int epfd;
    int64_t started_mono_ns;
    int64_t last_drain_mono_ns; /* start of the last successful drain: its flip */
    struct daemon_stats stats;
    gid_t access_gid; /* of cfg.socket_group; (gid_t)-1 when there is no such group */
};

/* Flip, drain, name and keep one generation. */
int daemon_drain(struct daemon *d);

int64_t clock_ns(int clock);

#endif
