/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * GET /metrics (metrics-listen = ADDRESS:PORT): the off-CPU counters per
 * cgroup and state, and the daemon's own health, for Prometheus.
 */
#ifndef METRICS_ENDPOINT_H
#define METRICS_ENDPOINT_H

#include "daemon.h"

/* Start serving, if the configuration asks for it. */
int metrics_endpoint_start(struct daemon *d);
void metrics_endpoint_stop(struct daemon *d);

#endif
