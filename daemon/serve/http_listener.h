/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A minimal HTTP/1.x server for one read-only page (Prometheus's scrapes):
 * GET of its path answered with a body made per request, anything else a
 * 4xx, every connection closed after one answer. Served from the daemon's
 * event loop, never blocking: requests bounded in size and in time,
 * connections in number, in all and per remote address (conn_table.h).
 */
#ifndef HTTP_LISTENER_H
#define HTTP_LISTENER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conn_table.h"

/* Largest request accepted: request line and headers. */
#define HTTP_REQUEST_MAX 8192

struct http_listener;

/* Write the page's body to f; returns 0 or a negative errno. */
typedef int (*http_page_fn)(void *userdata, FILE *f);

struct http_stats {
    uint64_t requests; /* answered 200 */
    uint64_t refused;  /* 4xx answers */
    struct conn_stats conns;
};

/* Listen on address (see inet_address_parse) and serve path from the loop
 * epfd. The per-peer cap of limits counts per remote address (an IPv6 /64:
 * one host's). limits are read as needed: they may change. */
int http_listener_new(int epfd, const char *address, const char *path, http_page_fn page,
                      void *userdata, const struct conn_limits *limits, struct http_listener **ret);
struct http_listener *http_listener_free(struct http_listener *h);

/* After the limits changed. */
int http_listener_limits_changed(struct http_listener *h);

void http_listener_get_stats(const struct http_listener *h, struct http_stats *ret);
size_t http_listener_clients(const struct http_listener *h);

#endif
