/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The connections of one listener (the Varlink socket, the metrics
 * endpoint) and the limits every listener holds them to: how many at once,
 * in all and per peer (a uid, a remote address); how long a request may
 * take to arrive whole (a deadline from its first byte, never moved by the
 * bytes after it); how long a connection may sit with nothing done. The
 * table accepts, admits or refuses, times out and closes; what is said on a
 * connection is its owner's business.
 *
 * A connection past a cap takes another's place where that is fairer than
 * refusing it: first that of a connection whose exchange is over (only the
 * client's close is awaited); then, at the per-peer cap, that of the peer's
 * own oldest request still arriving; at the total, of the oldest request
 * still arriving among the peers that hold the most connections, else
 * (when they hold more than the newcomer would) of their idlest
 * connection. So slow clients never keep a quick one out, nor one peer at
 * its cap another.
 */
#ifndef CONN_TABLE_H
#define CONN_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"

struct conn_limits {
    uint32_t max_clients;
    uint32_t max_per_peer;       /* exempt peers have no cap of their own */
    uint32_t exempt_reserve;     /* connections exempt peers may open beyond max_clients */
    uint64_t request_timeout_ns; /* from a request's first byte to its last */
    uint64_t idle_timeout_ns;    /* with nothing done (conn_active) */
};

enum conn_refusal {
    CONN_MAX_CLIENTS = 1, /* (0: admitted) */
    CONN_MAX_PER_PEER,
};

struct conn_stats {
    uint64_t refused_max_clients;
    uint64_t refused_max_per_peer;
    uint64_t shed;             /* closed to make room for a newcomer (see above) */
    uint64_t request_timeouts; /* requests not whole within request_timeout */
    uint64_t idle_closed;
};

struct conn_table;

/* A connection; its owner's object embeds it. */
struct conn {
    struct event_source src; /* the socket; dispatch is the owner's */
    uint64_t peer;           /* whom the per-peer cap counts it against */
    bool exempt;             /* beyond the caps, never shed: root */
    int64_t request_ns;      /* CLOCK_MONOTONIC when the request still arriving began; 0: none */
    int64_t active_ns;       /* ... when something was last done */
    int64_t done_ns;         /* ... when its exchange ended (conn_done); 0: not yet */
    struct conn_table *table;
    struct conn *prev, *next;
};

struct conn_table_ops {
    /* A connection accepted on fd: the owner's object for it, with
     * src.dispatch, peer and exempt set; NULL drops it. Not yet watched. */
    struct conn *(*open)(void *owner, int fd);
    /* Optional: c's socket was just closed; forget it (the object is freed
     * later: events may still name it). */
    void (*closed)(struct conn *c);
    /* Free the owner's object. */
    void (*free)(struct conn *c);
    /* Optional: tell a client why it is refused (shed: closed to make room)
     * just before it is closed. */
    void (*refuse)(struct conn *c, enum conn_refusal why, bool shed);
    /* A request begins at accept (nothing else comes first, as in HTTP),
     * not at its first byte. */
    bool request_at_accept;
};

struct conn_table {
    struct event_source listener;
    struct event_source timer; /* one for every connection's deadlines */
    int epfd;
    const struct conn_limits *limits;
    const struct conn_table_ops *ops;
    void *owner;
    struct conn *head;
    size_t n;
    struct conn_stats stats;
};

/* Accept on listen_fd (not owned) from the epoll loop epfd, within limits
 * (read as needed: they may change). listen_fd -1: a table that never has
 * a connection (a server the fuzzers call directly). */
int conn_table_init(struct conn_table *t, int epfd, int listen_fd, const struct conn_limits *limits,
                    const struct conn_table_ops *ops, void *owner);
/* Close every connection; stop listening. */
void conn_table_done(struct conn_table *t);

/* After the limits changed: the timer's period. */
int conn_table_limits_changed(struct conn_table *t);

void conn_close(struct conn *c);

/* A request's first byte came (the deadline runs from the first call
 * only), or the request is whole. */
void conn_request_begin(struct conn *c);
void conn_request_end(struct conn *c);

/* Something was done on c: it is not idle. */
void conn_active(struct conn *c);

/* c's exchange is over: its client's close is all that is awaited, within
 * request_timeout, and it is the first to go for a newcomer. */
void conn_done(struct conn *c);

#endif
