/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's state, shared by start-up, the event loop, the drain and the API. */
#ifndef DAEMON_H
#define DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include "access.h"
#include "cgroups.h"
#include "clock.h"
#include "collector.h"
#include "config.h"
#include "http_listener.h"
#include "listen_socket.h"
#include "metrics.h"
#include "ring.h"
#include "snapshot_build.h"
#include "state_dir.h"
#include "symbolizer.h"
#include "varlink_server.h"

struct daemon_stats {
    uint64_t drains;
    uint64_t drain_last_ns; /* these two: the drains after start-up's */
    uint64_t drain_max_ns;
    uint64_t drain_max_cpu_ns; /* the most CPU time of one: what the budget bounds */
    uint64_t drain_startup_ns; /* the first drain, whole by design: start-up's */
    uint64_t drain_total_ns;
    uint64_t drain_budget_stops;    /* drains stopped at drain-budget, to go on later */
    uint64_t drain_records_carried; /* records those left for later */
    size_t rss;                     /* resident bytes after the last drain */
    struct snapshot_stats snap;
    struct collector_counter collector[COLLECTOR_COUNTERS]; /* as last read for Status */
};

struct daemon {
    struct config cfg;
    int argc; /* kept to read the configuration again on SIGHUP */
    char **argv;
    struct collector *collector;
    struct symbolizer *sym;
    struct cgroups *cgroups; /* NULL without a cgroup2 mount */
    struct ring ring;
    struct state_dir state; /* the ring's history on disk */
    struct listen_socket socket;
    struct vl_server_limits limits; /* from cfg, for the server */
    struct access_policy access;    /* from cfg, for the server and the API */
    struct vl_server *server;
    struct metrics *metrics;            /* with metrics-listen only */
    struct http_listener *metrics_http; /* ... and its endpoint */
    struct conn_limits metrics_limits;  /* from cfg */
    int epfd;
    int64_t started_mono_ns;
    int64_t last_drain_mono_ns; /* start of the last successful drain: its flip */
    /* a drained generation still being built, when a drain stopped at its
     * budget: no flip until it is done (the next drain goes on with it) */
    struct snapshot_builder *building;
    int64_t last_catch_up_mono_ns; /* of the last drain a query asked for */
    struct daemon_stats stats;
};

#endif
