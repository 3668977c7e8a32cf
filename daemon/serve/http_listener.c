/* SPDX-License-Identifier: GPL-2.0-only */
#include "http_listener.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "event.h"
#include "inet_address.h"
#include "log.h"
#include "macro.h"

struct http_conn {
    struct conn conn;
    struct http_listener *h;
    char in[HTTP_REQUEST_MAX];
    size_t in_len;
    char *out; /* the whole answer, headers and body */
    size_t out_len, out_sent;
    size_t discarded; /* read after the answer was sent, waiting for the client's close */
};

struct http_listener {
    struct conn_table conns;
    int listen_fd;
    char *path;
    http_page_fn page;
    void *userdata;
    struct http_stats stats;
};

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
    return event_watch(c->h->conns.epfd, EPOLL_CTL_MOD, &c->conn.src, EPOLLOUT);
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
        ssize_t n = read(c->conn.src.fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0) {
            conn_close(&c->conn);
            return;
        }
        c->in_len += n;
        c->in[c->in_len] = '\0';
        /* memmem: the request may hold NUL bytes */
        if (memmem(c->in, c->in_len, "\r\n\r\n", 4) || memmem(c->in, c->in_len, "\n\n", 2)) {
            conn_request_end(&c->conn);
            if (handle(c) < 0)
                conn_close(&c->conn);
            return;
        }
        if (c->in_len == sizeof(c->in) - 1) {
            conn_request_end(&c->conn);
            if (answer(c, 431, "Request Header Fields Too Large", "") < 0)
                conn_close(&c->conn);
            return;
        }
    }
}

static void on_writable(struct http_conn *c)
{
    while (c->out_sent < c->out_len) {
        ssize_t n = send(c->conn.src.fd, c->out + c->out_sent, c->out_len - c->out_sent,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0)
            break;
        c->out_sent += n;
        conn_active(&c->conn);
    }
    /* Closing with unread input (the rest of an oversized request) would reset
     * the connection and lose the answer: end our side, then read until the
     * client closes, within a bound (and request-timeout: conn_done). */
    if (c->out_sent < c->out_len || shutdown(c->conn.src.fd, SHUT_WR) < 0 ||
        event_watch(c->h->conns.epfd, EPOLL_CTL_MOD, &c->conn.src, EPOLLIN) < 0)
        conn_close(&c->conn);
    else
        conn_done(&c->conn);
}

static void on_lingering(struct http_conn *c)
{
    char buf[4096];

    for (;;) {
        ssize_t n = read(c->conn.src.fd, buf, sizeof(buf));

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0 || (c->discarded += n) > 16 * HTTP_REQUEST_MAX) {
            conn_close(&c->conn);
            return;
        }
    }
}

static void on_conn(struct event_source *src, uint32_t events)
{
    struct http_conn *c = container_of(src, struct http_conn, conn.src);

    if (events & EPOLLERR)
        conn_close(&c->conn);
    else if (c->out && c->out_sent == c->out_len)
        on_lingering(c);
    else if (c->out)
        on_writable(c);
    else
        on_readable(c);
}

/* Whom the per-address cap counts: an IPv4 address (mapped into IPv6 too),
 * or an IPv6 address's /64, what one host is given. IPv4 keys have bit 32
 * set: no /64 in use starts with 31 zero bits. */
static uint64_t address_key(int fd)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    const uint8_t *a;
    uint64_t key = 0;

    if (getpeername(fd, (struct sockaddr *)&sa, &len) < 0)
        return 0;
    if (sa.ss_family == AF_INET)
        return 1ULL << 32 | ntohl(((struct sockaddr_in *)&sa)->sin_addr.s_addr);
    if (sa.ss_family != AF_INET6)
        return 0;
    a = ((struct sockaddr_in6 *)&sa)->sin6_addr.s6_addr;
    if (IN6_IS_ADDR_V4MAPPED((struct in6_addr *)a))
        return 1ULL << 32 | (uint32_t)a[12] << 24 | a[13] << 16 | a[14] << 8 | a[15];
    for (int i = 0; i < 8; i++)
        key = key << 8 | a[i];
    return key;
}

static struct conn *conn_open(void *owner, int fd)
{
    struct http_conn *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->h = owner;
    c->conn.src = (struct event_source){.fd = fd, .dispatch = on_conn};
    c->conn.peer = address_key(fd);
    return &c->conn;
}

static void conn_release(struct conn *conn)
{
    struct http_conn *c = container_of(conn, struct http_conn, conn);

    free(c->out);
    free(c);
}

/* The whole request head comes first: its deadline runs from accept, and a
 * connection that never sends one is a request that never arrives. */
static const struct conn_table_ops http_conn_ops = {
    .open = conn_open,
    .free = conn_release,
    .request_at_accept = true,
};

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
                      void *userdata, const struct conn_limits *limits, struct http_listener **ret)
{
    struct http_listener *h = calloc(1, sizeof(*h));
    int r, table;

    if (!h)
        return -ENOMEM;
    *h = (struct http_listener){
        .listen_fd = listen_on(address),
        .path = strdup(path),
        .page = page,
        .userdata = userdata,
    };
    r = h->listen_fd < 0 ? h->listen_fd : !h->path ? -ENOMEM : 0;
    /* made whatever happened, so that http_listener_free has a table to free */
    table = conn_table_init(&h->conns, epfd, r < 0 ? -1 : h->listen_fd, limits, &http_conn_ops, h);
    if (r == 0)
        r = table;
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
    conn_table_done(&h->conns);
    if (h->listen_fd >= 0)
        close(h->listen_fd);
    free(h->path);
    free(h);
    return NULL;
}

int http_listener_limits_changed(struct http_listener *h)
{
    return conn_table_limits_changed(&h->conns);
}

void http_listener_get_stats(const struct http_listener *h, struct http_stats *ret)
{
    *ret = h->stats;
    ret->conns = h->conns.stats;
}

size_t http_listener_clients(const struct http_listener *h)
{
    return h->conns.n;
}
