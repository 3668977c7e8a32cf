/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The connection table's admissions over a real listening socket: who is
 * refused at a cap, whose place a newcomer takes, and the deadlines. The
 * peer of each new connection is whatever the test says next (one uid
 * connects them all).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "conn_table.h"
#include "macro.h"

struct test_conn {
    struct conn conn;
    int client; /* our end */
};

static uint64_t next_peer;
static bool next_exempt;
static int refused, shed;

static void on_conn(struct event_source *src, uint32_t events)
{
    /* what a client sends is not read: its request stays in progress */
}

static struct conn *open_conn(void *owner, int fd)
{
    struct test_conn *c = calloc(1, sizeof(*c));

    c->conn.src = (struct event_source){.fd = fd, .dispatch = on_conn};
    c->conn.peer = next_peer;
    c->conn.exempt = next_exempt;
    return &c->conn;
}

static void free_conn(struct conn *c)
{
    free(container_of(c, struct test_conn, conn));
}

static void refuse_conn(struct conn *c, enum conn_refusal why, bool was_shed)
{
    if (was_shed)
        shed++;
    else
        refused++;
}

static const struct conn_table_ops ops = {
    .open = open_conn,
    .free = free_conn,
    .refuse = refuse_conn,
};

static struct conn_limits limits = {
    .max_clients = 4,
    .max_per_peer = 3,
    .exempt_reserve = 1,
    .request_timeout_ns = 5 * NSEC_PER_SEC,
    .idle_timeout_ns = 60 * NSEC_PER_SEC,
};

static struct sockaddr_un addr = {.sun_family = AF_UNIX};

/* A connection of peer, accepted (or not) by the table; our end. */
static int connect_as(struct conn_table *t, uint64_t peer, bool exempt)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
        abort();
    next_peer = peer;
    next_exempt = exempt;
    t->listener.dispatch(&t->listener, EPOLLIN);
    event_release_closed();
    return fd;
}

static struct conn *find(struct conn_table *t, uint64_t peer, size_t nth)
{
    for (struct conn *c = t->head; c; c = c->next)
        if (c->peer == peer && nth-- == 0)
            return c;
    return NULL;
}

static size_t held(struct conn_table *t, uint64_t peer)
{
    size_t n = 0;

    for (struct conn *c = t->head; c; c = c->next)
        n += c->peer == peer;
    return n;
}

/* Whether the table closed our end's connection. */
static bool closed(int fd)
{
    char b;

    return recv(fd, &b, 1, MSG_DONTWAIT) == 0;
}

int main(void)
{
    char dir[] = "/tmp/test_conn_table.XXXXXX";
    struct conn_table t;
    int epfd = epoll_create1(EPOLL_CLOEXEC), lfd, fds[8];
    struct conn *c;

    if (!mkdtemp(dir))
        return 1;
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/s", dir);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(lfd, 64) < 0)
        return 1;
    CHECK(conn_table_init(&t, epfd, lfd, &limits, &ops, NULL) == 0, "table made");

    /* per-peer cap: idle connections keep their places, the newcomer goes */
    for (int i = 0; i < 3; i++)
        fds[i] = connect_as(&t, 1, false);
    for (struct conn *x = t.head; x; x = x->next)
        x->request_ns = 0; /* as if answered */
    fds[3] = connect_as(&t, 1, false);
    CHECK(held(&t, 1) == 3 && refused == 1 && t.stats.refused_max_per_peer == 1,
          "at its cap with nothing arriving, a peer's next connection is refused");

    /* ... but a request still arriving gives way to its own peer's newcomer */
    c = find(&t, 1, 2); /* the oldest */
    conn_request_begin(c);
    fds[4] = connect_as(&t, 1, false);
    CHECK(held(&t, 1) == 3 && shed == 1 && closed(fds[0]),
          "at its cap, a peer's oldest request still arriving takes the newcomer");

    /* total: peer 1 holds 3 of 4; peer 2 takes the last place, then peer 3
     * comes: peer 1 holds more than peer 3 would, so its idlest goes */
    fds[5] = connect_as(&t, 2, false);
    for (struct conn *x = t.head; x; x = x->next)
        x->request_ns = 0;
    fds[6] = connect_as(&t, 3, false);
    CHECK(t.n == 4 && held(&t, 1) == 2 && held(&t, 3) == 1 && shed == 2,
          "at the total, the biggest holder's idlest connection makes room");

    /* now 2, 1, 1: peer 4 would hold 1, peer 1 holds 2: it gives one more;
     * then all hold 1 each, nothing arriving: a fifth peer is refused */
    connect_as(&t, 4, false);
    CHECK(held(&t, 1) == 1 && shed == 3, "shares even out");
    connect_as(&t, 5, false);
    CHECK(held(&t, 5) == 0 && t.stats.refused_max_clients == 1,
          "equal shares, nothing arriving: the newcomer is refused");

    /* root: a place beyond the total, never taken */
    connect_as(&t, 0, true);
    CHECK(t.n == 5 && held(&t, 0) == 1, "root has a reserve");
    connect_as(&t, 0, true);
    CHECK(held(&t, 0) == 1 && t.stats.refused_max_clients == 2, "... of exempt_reserve");

    /* an exchange that is over goes first, whoever holds it */
    conn_done(find(&t, 3, 0));
    connect_as(&t, 5, false);
    CHECK(held(&t, 3) == 0 && held(&t, 5) == 1 && shed == 3,
          "a connection whose exchange is over makes room, uncounted");

    /* the deadline: from the request's first byte, however active since */
    limits.request_timeout_ns = 1 * NSEC_PER_MSEC;
    c = find(&t, 5, 0);
    conn_request_begin(c);
    nanosleep(&(struct timespec){0, 5 * NSEC_PER_MSEC}, NULL);
    conn_active(c);
    t.timer.dispatch(&t.timer, EPOLLIN);
    event_release_closed();
    CHECK(held(&t, 5) == 0 && t.stats.request_timeouts == 1,
          "a request not whole by the deadline is cut");

    conn_table_done(&t);
    for (int i = 0; i < 7; i++)
        close(fds[i]);
    close(lfd);
    close(epfd);
    unlink(addr.sun_path);
    rmdir(dir);
    return CHECK_EXIT();
}
