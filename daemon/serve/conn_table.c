/* SPDX-License-Identifier: GPL-2.0-only */
#include "conn_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "macro.h"

static void unlink_conn(struct conn *c)
{
    struct conn_table *t = c->table;

    if (c->prev)
        c->prev->next = c->next;
    else
        t->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    t->n--;
}

static void release(struct event_source *src)
{
    struct conn *c = container_of(src, struct conn, src);

    c->table->ops->free(c);
}

static void close_socket(struct conn *c)
{
    unlink_conn(c);
    epoll_ctl(c->table->epfd, EPOLL_CTL_DEL, c->src.fd, NULL);
    close(c->src.fd);
    c->src.fd = -1;
    if (c->table->ops->closed)
        c->table->ops->closed(c);
}

/* Closed by its own event, by another's (a newcomer taking its place), by
 * the timer or in a turn of another connection's requests: freed after the
 * batch of events, which may name it still. */
void conn_close(struct conn *c)
{
    close_socket(c);
    event_release_later(&c->src, release);
}

void conn_request_begin(struct conn *c)
{
    if (!c->request_ns)
        c->request_ns = clock_ns(CLOCK_MONOTONIC);
}

void conn_request_end(struct conn *c)
{
    c->request_ns = 0;
}

void conn_active(struct conn *c)
{
    c->active_ns = clock_ns(CLOCK_MONOTONIC);
}

void conn_done(struct conn *c)
{
    c->request_ns = 0;
    c->done_ns = clock_ns(CLOCK_MONOTONIC);
}

/* Connections the cap counts against peer. */
static size_t held_by(const struct conn_table *t, uint64_t peer)
{
    size_t n = 0;

    for (const struct conn *c = t->head; c; c = c->next)
        n += !c->exempt && c->peer == peer;
    return n;
}

/* 0: its exchange is over; 1: a request is still arriving; 2: neither. */
static int rank(const struct conn *c)
{
    return c->done_ns ? 0 : c->request_ns ? 1 : 2;
}

/* Whose place to take first: an exchange over, the oldest; a request still
 * arriving, the oldest; else the idlest connection. */
static bool before(const struct conn *a, const struct conn *b)
{
    if (!b)
        return true;
    if (rank(a) != rank(b))
        return rank(a) < rank(b);
    return rank(a) == 0   ? a->done_ns < b->done_ns
           : rank(a) == 1 ? a->request_ns < b->request_ns
                          : a->active_ns < b->active_ns;
}

/* The first place to take among peer's connections (any peer's: all) with
 * a rank of at most max_rank. */
static struct conn *first_to_go(const struct conn_table *t, bool all, uint64_t peer, int max_rank)
{
    struct conn *best = NULL;

    for (struct conn *c = t->head; c; c = c->next)
        if (!c->exempt && (all || c->peer == peer) && rank(c) <= max_rank && before(c, best))
            best = c;
    return best;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The peers holding the most connections (*most of them each), sorted into
 * *ret; how many there are, or -ENOMEM. */
static ssize_t biggest_holders(const struct conn_table *t, uint64_t **ret, size_t *most)
{
    _cleanup_free_ uint64_t *peers = malloc((t->n ?: 1) * sizeof(*peers));
    size_t k = 0, m = 0, run;

    if (!peers)
        return -ENOMEM;
    for (const struct conn *c = t->head; c; c = c->next)
        if (!c->exempt)
            peers[k++] = c->peer;
    qsort(peers, k, sizeof(*peers), cmp_u64);
    *most = 0;
    for (size_t i = 0; i < k; i += run) {
        for (run = 1; i + run < k && peers[i + run] == peers[i]; run++)
            ;
        if (run > *most) {
            *most = run;
            m = 0;
        }
        if (run == *most)
            peers[m++] = peers[i];
    }
    *ret = peers;
    peers = NULL;
    return m;
}

/* At the total: see conn_table.h. newcomer holds mine connections now. */
static struct conn *victim_of_table(const struct conn_table *t, size_t mine)
{
    _cleanup_free_ uint64_t *biggest = NULL;
    struct conn *best = NULL;
    size_t most;
    ssize_t m;

    best = first_to_go(t, true, 0, 0);
    if (best)
        return best;
    m = biggest_holders(t, &biggest, &most);
    if (m <= 0)
        return NULL;
    for (struct conn *c = t->head; c; c = c->next)
        if (!c->exempt && bsearch(&c->peer, biggest, m, sizeof(*biggest), cmp_u64) &&
            before(c, best))
            best = c;
    /* an idle connection goes only where that evens the peers' shares */
    if (best && !best->request_ns && most <= mine + 1)
        return NULL;
    return best;
}

static void shed(struct conn_table *t, struct conn *victim, enum conn_refusal why)
{
    /* (one whose exchange is over loses nothing) */
    if (!victim->done_ns) {
        t->stats.shed++;
        if (t->ops->refuse)
            t->ops->refuse(victim, why, true);
    }
    conn_close(victim);
}

/* Whether c may stay (perhaps in another's place): 0, or the cap refusing it. */
static int admit(struct conn_table *t, const struct conn *c)
{
    const struct conn_limits *l = t->limits;
    size_t mine = c->exempt ? 0 : held_by(t, c->peer);
    struct conn *victim;

    if (!c->exempt && mine >= l->max_per_peer) {
        victim = first_to_go(t, false, c->peer, 1);
        if (!victim) {
            t->stats.refused_max_per_peer++;
            return CONN_MAX_PER_PEER;
        }
        shed(t, victim, CONN_MAX_PER_PEER);
        return 0;
    }
    if (t->n < l->max_clients + (c->exempt ? l->exempt_reserve : 0))
        return 0;
    victim = victim_of_table(t, mine);
    if (!victim) {
        t->stats.refused_max_clients++;
        return CONN_MAX_CLIENTS;
    }
    shed(t, victim, CONN_MAX_CLIENTS);
    return 0;
}

static void refuse(struct conn_table *t, struct conn *c, int why)
{
    if (t->ops->refuse)
        t->ops->refuse(c, why, false);
    close(c->src.fd);
    t->ops->free(c);
}

static void on_listener(struct event_source *src, uint32_t events)
{
    struct conn_table *t = container_of(src, struct conn_table, listener);

    for (;;) {
        int fd = accept4(src->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), why;
        struct conn *c;

        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                log_warning("accept: %s", strerror(errno));
            return;
        }
        c = t->ops->open(t->owner, fd);
        if (!c) {
            close(fd);
            continue;
        }
        c->src.fd = fd;
        c->table = t;
        conn_active(c);
        c->request_ns = t->ops->request_at_accept ? c->active_ns : 0;
        why = admit(t, c);
        if (why) {
            refuse(t, c, why);
            continue;
        }
        if (event_watch(t->epfd, EPOLL_CTL_ADD, &c->src, EPOLLIN) < 0) {
            close(fd);
            t->ops->free(c);
            continue;
        }
        c->prev = NULL;
        c->next = t->head;
        if (t->head)
            t->head->prev = c;
        t->head = c;
        t->n++;
        /* what the client sent with its connect is read now: a request
         * already whole is not one still arriving, whose place the next
         * newcomers may take */
        c->src.dispatch(&c->src, EPOLLIN);
    }
}

/* A request not whole within request-timeout goes, however steadily its
 * bytes came; a connection with nothing done for idle-timeout goes. */
static void on_timer(struct event_source *src, uint32_t events)
{
    struct conn_table *t = container_of(src, struct conn_table, timer);
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    int64_t requests_from = now - (int64_t)t->limits->request_timeout_ns;
    int64_t active_from = now - (int64_t)t->limits->idle_timeout_ns;
    uint64_t expirations;
    struct conn *next;

    if (read(src->fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
        log_warning("connection timer: %s", strerror(errno));
    for (struct conn *c = t->head; c; c = next) {
        next = c->next;
        if (c->request_ns && c->request_ns <= requests_from) {
            t->stats.request_timeouts++;
            conn_close(c);
        } else if (c->active_ns < active_from || (c->done_ns && c->done_ns <= requests_from)) {
            t->stats.idle_closed++;
            conn_close(c);
        }
    }
}

/* Ten checks per the shorter timeout, at least two a second: a deadline is
 * kept within a tenth of itself, or half a second. */
int conn_table_limits_changed(struct conn_table *t)
{
    uint64_t period = t->limits->idle_timeout_ns < t->limits->request_timeout_ns
                          ? t->limits->idle_timeout_ns
                          : t->limits->request_timeout_ns;
    struct itimerspec its;

    if (t->timer.fd < 0)
        return 0;
    period /= 10;
    if (period > NSEC_PER_SEC / 2)
        period = NSEC_PER_SEC / 2;
    its.it_interval = (struct timespec){period / NSEC_PER_SEC, period % NSEC_PER_SEC};
    its.it_value = its.it_interval;
    return timerfd_settime(t->timer.fd, 0, &its, NULL) < 0 ? -errno : 0;
}

int conn_table_init(struct conn_table *t, int epfd, int listen_fd, const struct conn_limits *limits,
                    const struct conn_table_ops *ops, void *owner)
{
    int r;

    *t = (struct conn_table){
        .listener = {.fd = listen_fd, .dispatch = on_listener},
        .timer = {.fd = -1, .dispatch = on_timer},
        .epfd = epfd,
        .limits = limits,
        .ops = ops,
        .owner = owner,
    };
    if (listen_fd < 0)
        return 0;
    t->timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    r = t->timer.fd < 0 ? -errno : conn_table_limits_changed(t);
    if (r == 0)
        r = event_watch(epfd, EPOLL_CTL_ADD, &t->timer, EPOLLIN);
    if (r == 0)
        r = event_watch(epfd, EPOLL_CTL_ADD, &t->listener, EPOLLIN);
    return r;
}

void conn_table_done(struct conn_table *t)
{
    /* no event loop runs now: freed at once */
    while (t->head) {
        struct conn *c = t->head;

        close_socket(c);
        t->ops->free(c);
    }
    if (t->listener.fd >= 0)
        epoll_ctl(t->epfd, EPOLL_CTL_DEL, t->listener.fd, NULL);
    if (t->timer.fd >= 0)
        close(t->timer.fd);
    t->listener.fd = t->timer.fd = -1;
}
