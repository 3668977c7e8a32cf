/* SPDX-License-Identifier: GPL-2.0-only */
#include "http_listener.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "clock.h"
#include "event.h"
#include "inet_address.h"
#include "log.h"
#include "macro.h"

struct http_conn {
    struct event_source src;
    struct http_listener *h;
    char in[HTTP_REQUEST_MAX];
    size_t in_len;
    char *out; /* the whole answer, headers and body */
    size_t out_len, out_sent;
    size_t discarded; /* read after the answer was sent, waiting for the client's close */
    int64_t active_ns; /* CLOCK_MONOTONIC of the last byte read or written */
    struct http_conn *prev, *next;
};

struct http_listener {
    struct event_source listener;
    struct event_source idle_timer;
    int epfd;
    char *path;
    http_page_fn page;
    void *userdata;
    const struct http_limits *limits;
    struct http_conn *conns;
    size_t nconns;
    struct http_stats stats;
};

static void conn_free(struct http_conn *c)
{
    struct http_listener *h = c->h;

    epoll_ctl(h->epfd, EPOLL_CTL_DEL, c->src.fd, NULL);
    close(c->src.fd);
    free(c->out);
    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    h->nconns--;
    free(c);
}

/* The answer, whole: headers, then the body (made by the page for a 200). */
static int answer(struct http_conn *c, int status, const char *reason, const char *extra)
{
    _cleanup_free_ char *body = NULL;
    size_t body_len = 0;
    FILE *f = open_memstream(&body, &body_len);
    FILE *out;
    int r = 0;

    if (!f)
        return -ENOMEM;
    if (status == 200)
        r = c->h->page(c->h->userdata, f);
    else
        fprintf(f, "%d %s\n", status, reason);
    if (fclose(f) != 0 || r < 0) {
        status = 500;
        reason = "Internal Server Error";
        body_len = 0;
        extra = "";
    }
    out = open_memstream(&c->out, &c->out_len);
    if (!out)
        return -ENOMEM;
    fprintf(out,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
            "Connection: close\r\n\r\n",
            status, reason,
            status == 200 ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain", body_len,
            extra);
    fwrite(body, 1, body_len, out);
    if (fclose(out) != 0)
        return -ENOMEM;
    if (status == 200)
        c->h->stats.requests++;
    else
        c->h->stats.refused++;
    return event_watch(c->h->epfd, EPOLL_CTL_MOD, &c->src, EPOLLOUT);
}

/* A complete request head is in c->in: answer it. */
static int handle(struct http_conn *c)
{
    char *method, *target, *version, *save;
    size_t plen = strlen(c->h->path);

    c->in[strcspn(c->in, "\r\n")] = '\0';
    method = strtok_r(c->in, " ", &save);
    target = strtok_r(NULL, " ", &save);
    version = strtok_r(NULL, " ", &save);
    if (!method || !target || !version || strtok_r(NULL, " ", &save) ||
        strncmp(version, "HTTP/1.", 7) != 0)
        return answer(c, 400, "Bad Request", "");
    if (strcmp(method, "GET") != 0)
        return answer(c, 405, "Method Not Allowed", "Allow: GET\r\n");
    if (strncmp(target, c->h->path, plen) != 0 || (target[plen] && target[plen] != '?'))
        return answer(c, 404, "Not Found", "");
    return answer(c, 200, "OK", "");
}

static void on_readable(struct http_conn *c)
{
    for (;;) {
        ssize_t n = read(c->src.fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0) {
            conn_free(c);
            return;
        }
        c->in_len += n;
        c->in[c->in_len] = '\0';
        c->active_ns = clock_ns(CLOCK_MONOTONIC);
        /* memmem: the request may hold NUL bytes */
        if (memmem(c->in, c->in_len, "\r\n\r\n", 4) || memmem(c->in, c->in_len, "\n\n", 2)) {
            if (handle(c) < 0)
                conn_free(c);
            return;
        }
        if (c->in_len == sizeof(c->in) - 1) {
            if (answer(c, 431, "Request Header Fields Too Large", "") < 0)
                conn_free(c);
            return;
        }
    }
}

static void on_writable(struct http_conn *c)
{
    while (c->out_sent < c->out_len) {
        ssize_t n = send(c->src.fd, c->out + c->out_sent, c->out_len - c->out_sent,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0)
            break;
        c->out_sent += n;
        c->active_ns = clock_ns(CLOCK_MONOTONIC);
    }
    /* Closing with unread input (the rest of an oversized request) would reset
     * the connection and lose the answer: end our side, then read until the
     * client closes, within a bound (and the idle timeout). */
    if (c->out_sent < c->out_len || shutdown(c->src.fd, SHUT_WR) < 0 ||
        event_watch(c->h->epfd, EPOLL_CTL_MOD, &c->src, EPOLLIN) < 0)
        conn_free(c);
}

static void on_lingering(struct http_conn *c)
{
    char buf[4096];

    for (;;) {
        ssize_t n = read(c->src.fd, buf, sizeof(buf));

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0 || (c->discarded += n) > 16 * HTTP_REQUEST_MAX) {
            conn_free(c);
            return;
        }
    }
}

static void on_conn(struct event_source *src, uint32_t events)
{
    struct http_conn *c = container_of(src, struct http_conn, src);

    if (events & EPOLLERR)
        conn_free(c);
    else if (c->out && c->out_sent == c->out_len)
        on_lingering(c);
    else if (c->out)
        on_writable(c);
    else
        on_readable(c);
}

static void on_listener(struct event_source *src, uint32_t events)
{
    struct http_listener *h = container_of(src, struct http_listener, listener);

    for (;;) {
        int fd = accept4(h->listener.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct http_conn *c;

        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                log_warning("metrics: accept: %s", strerror(errno));
            return;
        }
        if (h->nconns >= h->limits->max_clients) {
            h->stats.refused_max_clients++;
            close(fd);
            continue;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            continue;
        }
        c->h = h;
        c->src = (struct event_source){.fd = fd, .dispatch = on_conn};
        c->active_ns = clock_ns(CLOCK_MONOTONIC);
        if (event_watch(h->epfd, EPOLL_CTL_ADD, &c->src, EPOLLIN) < 0) {
            close(fd);
            free(c);
            continue;
        }
        c->next = h->conns;
        if (h->conns)
            h->conns->prev = c;
        h->conns = c;
        h->nconns++;
    }
}

/* A client that sends or takes nothing for idle-timeout is closed: a slow
 * or stalled scraper cannot hold a connection forever. */
static void on_idle_timer(struct event_source *src, uint32_t events)
{
    struct http_listener *h = container_of(src, struct http_listener, idle_timer);
    int64_t deadline = clock_ns(CLOCK_MONOTONIC) - (int64_t)h->limits->idle_timeout_ns;
    uint64_t expirations;
    struct http_conn *next;

    if (read(src->fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
        log_warning("metrics: idle timer: %s", strerror(errno));
    for (struct http_conn *c = h->conns; c; c = next) {
        next = c->next;
        if (c->active_ns < deadline) {
            h->stats.idle_closed++;
            conn_free(c);
        }
    }
}

static int listen_on(const char *address)
{
    struct sockaddr_storage sa;
    socklen_t len;
    int fd, one = 1, r;

    r = inet_address_parse(address, &sa, &len);
    if (r < 0)
        return r;
    fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, SOMAXCONN) < 0) {
        r = -errno;
        close(fd);
        return r;
    }
    return fd;
}

int http_listener_new(int epfd, const char *address, const char *path, http_page_fn page,
                      void *userdata, const struct http_limits *limits, struct http_listener **ret)
{
    struct http_listener *h = calloc(1, sizeof(*h));
    struct itimerspec its = {.it_interval = {.tv_sec = 1}, .it_value = {.tv_sec = 1}};
    int r;

    if (!h)
        return -ENOMEM;
    *h = (struct http_listener){
        .listener = {.fd = -1, .dispatch = on_listener},
        .idle_timer = {.fd = -1, .dispatch = on_idle_timer},
        .epfd = epfd,
        .path = strdup(path),
        .page = page,
        .userdata = userdata,
        .limits = limits,
    };
    h->listener.fd = listen_on(address);
    r = h->listener.fd < 0 ? h->listener.fd : !h->path ? -ENOMEM : 0;
    if (r == 0) {
        h->idle_timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (h->idle_timer.fd < 0 || timerfd_settime(h->idle_timer.fd, 0, &its, NULL) < 0)
            r = -errno;
    }
    if (r == 0)
        r = event_watch(epfd, EPOLL_CTL_ADD, &h->listener, EPOLLIN);
    if (r == 0)
        r = event_watch(epfd, EPOLL_CTL_ADD, &h->idle_timer, EPOLLIN);
    if (r < 0) {
        http_listener_free(h);
        return r;
    }
    *ret = h;
    return 0;
}

struct http_listener *http_listener_free(struct http_listener *h)
{
    if (!h)
        return NULL;
    while (h->conns)
        conn_free(h->conns);
    if (h->listener.fd >= 0)
        close(h->listener.fd);
    if (h->idle_timer.fd >= 0)
        close(h->idle_timer.fd);
    free(h->path);
    free(h);
    return NULL;
}

void http_listener_get_stats(const struct http_listener *h, struct http_stats *ret)
{
    *ret = h->stats;
}

size_t http_listener_clients(const struct http_listener *h)
{
    return h->nconns;
}
