/* SPDX-License-Identifier: GPL-2.0-only */
#include "metrics_endpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "http_listener.h"
#include "log.h"
#include "macro.h"
#include "metrics.h"

static void gauge(FILE *f, const char *name, const char *help, const char *type, uint64_t v)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", name, help, name, type, name, v);
}

static void seconds(FILE *f, const char *name, const char *help, const char *type, uint64_t ns)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s ", name, help, name, type, name);
    metrics_write_seconds(f, ns);
}

/* The BPF side's counters: every event it counted, and those that lost something. */
static void collector_metrics(FILE *f, const struct collector_counter *v)
{
    uint64_t lost_ns = 0;

    fputs("# HELP offcpud_bpf_events_total Events the BPF programs counted, by name.\n"
          "# TYPE offcpud_bpf_events_total counter\n",
          f);
    for (int i = 0; i < COLLECTOR_COUNTERS; i++)
        if (v[i].name && v[i].kind != COLLECTOR_LOST_NS)
            fprintf(f, "offcpud_bpf_events_total{event=\"%s\"} %" PRIu64 "\n", v[i].name,
                    v[i].value);
    fputs("# HELP offcpud_lost_events_total Events whose time or stacks were lost, by cause.\n"
          "# TYPE offcpud_lost_events_total counter\n",
          f);
    for (int i = 0; i < COLLECTOR_COUNTERS; i++)
        if (v[i].name && v[i].kind == COLLECTOR_LOST_EVENT)
            fprintf(f, "offcpud_lost_events_total{cause=\"%s\"} %" PRIu64 "\n", v[i].name,
                    v[i].value);
    for (int i = 0; i < COLLECTOR_COUNTERS; i++)
        if (v[i].kind == COLLECTOR_LOST_NS)
            lost_ns += v[i].value;
    seconds(f, "offcpud_lost_seconds_total",
            "Off-CPU time that could not be charged to any entry (aggregate map full).", "counter",
            lost_ns);
}

static int write_page(void *userdata, FILE *f)
{
    struct daemon *d = userdata;
    struct http_stats hs;
    int r;

    r = metrics_write(d->metrics, f);
    if (r < 0)
        return r;
    if (d->collector && collector_read_counters(d->collector, d->stats.collector) == 0)
        collector_metrics(f, d->stats.collector);
    gauge(f, "offcpud_drains_total", "Generations drained into snapshots.", "counter",
          d->stats.drains);
    seconds(f, "offcpud_drain_seconds_total", "Time spent draining.", "counter",
            d->stats.drain_total_ns);
    seconds(f, "offcpud_drain_last_seconds", "How long the last drain took.", "gauge",
            d->stats.drain_last_ns);
    gauge(f, "offcpud_snapshots", "Snapshots held in memory.", "gauge", d->ring.n);
    gauge(f, "offcpud_memory_used_bytes", "Memory the snapshots and their strings hold.", "gauge",
          ring_memory(&d->ring));
    gauge(f, "offcpud_memory_limit_bytes", "memory-limit.", "gauge", d->cfg.memory_limit);
    fputs("# HELP offcpud_evictions_total Snapshots dropped, by reason.\n"
          "# TYPE offcpud_evictions_total counter\n",
          f);
    fprintf(f, "offcpud_evictions_total{reason=\"retention\"} %" PRIu64 "\n",
            d->ring.evicted_retention);
    fprintf(f, "offcpud_evictions_total{reason=\"memory\"} %" PRIu64 "\n", d->ring.evicted_memory);
    gauge(f, "offcpud_clients", "Clients connected to the Varlink socket.", "gauge",
          d->server ? vl_server_clients(d->server) : 0);
    http_listener_get_stats(d->metrics_http, &hs);
    gauge(f, "offcpud_metrics_scrapes_total", "Scrapes answered.", "counter", hs.requests);
    gauge(f, "offcpud_metrics_refused_total",
          "Metrics requests refused: malformed, another method or path, too large, too many "
          "connections (refused, or closed for another's).",
          "counter",
          hs.refused + hs.conns.refused_max_clients + hs.conns.refused_max_per_peer +
              hs.conns.shed);
    return ferror(f) ? -EIO : 0;
}

int metrics_endpoint_start(struct daemon *d)
{
    int r;

    if (!*d->cfg.metrics_listen)
        return 0;
    r = http_listener_new(d->epfd, d->cfg.metrics_listen, "/metrics", write_page, d,
                          &d->metrics_limits, &d->metrics_http);
    if (r < 0)
        return log_error_errno(r, "metrics-listen %s: %s", d->cfg.metrics_listen, strerror(-r));
    log_info("metrics on http://%s/metrics", d->cfg.metrics_listen);
    return 0;
}

void metrics_endpoint_stop(struct daemon *d)
{
    d->metrics_http = http_listener_free(d->metrics_http);
}
