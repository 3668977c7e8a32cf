/* SPDX-License-Identifier: GPL-2.0-only */
#include "varlink_server.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn_table.h"
#include "event.h"
#include "log.h"
#include "macro.h"
#include "varlink_frame.h"

/* After an oversized request the rest of it is read and dropped, so that the
 * client can still read the error (closing with unread input would reset the
 * connection and lose it); but not forever. */
#define DISCARD_LIMIT (16u << 20)

/* Methods one server may have bound. */
#define METHODS_MAX 32

struct vl_conn {
    struct conn conn;
    struct vl_server *srv;
    struct peer peer;
    struct vl_input in;
    struct vl_output out;
    uint32_t watched; /* epoll events asked for */
    bool closing;     /* close once the output is written */
    bool discarding;  /* after an oversized request: error sent, input thrown away */
    bool shut;        /* our side of the stream is shut down */
    size_t discarded;
    bool waiting; /* a complete request waits for its turn: in the server's waiting list */
    struct vl_conn *wait_prev, *wait_next;
};

struct bound_method {
    const struct vl_method *m;
    void *userdata;
};

struct vl_server {
    struct conn_table conns;
    struct event_source turn; /* readable while requests wait for their turn */
    bool turn_signalled;
    struct vl_conn *wait_head, *wait_tail; /* connections in the order they became ready */
    const struct vl_server_limits *limits;
    const struct access_policy *policy;
    struct bound_method methods[METHODS_MAX];
    size_t nmethods;
    struct vl_server_stats stats;
};

static void queue(struct vl_conn *c, json_t *msg)
{
    int r;

    if (!msg)
        return;
    r = vl_output_append(&c->out, msg);
    if (r == -ENOBUFS) {
        c->srv->stats.reply_too_large++;
        json_t *err = vl_error_new("io.offcpud.ReplyTooLarge",
                                   json_pack("{s:I}", "limit", (json_int_t)c->out.limit));

        /* a full queue may still take the short error */
        if (vl_output_append(&c->out, err) < 0)
            c->closing = true;
        json_decref(err);
    } else if (r < 0) {
        c->closing = true;
    }
    json_decref(msg);
}

/* Answer the next buffered request. */
static void serve_one(struct vl_conn *c)
{
    char reason[256];
    json_t *msg = NULL, *reply;
    bool oneway = false;
    int r = vl_input_next(&c->in, &msg, reason, sizeof(reason));

    if (r == 0)
        return;
    c->srv->stats.requests++;
    conn_active(&c->conn);
    if (r < 0) {
        reply = vl_error_new("io.offcpud.InvalidRequest", json_pack("{s:s}", "reason", reason));
    } else {
        reply = vl_server_call(c->srv, &c->peer, msg, &oneway);
        json_decref(msg);
    }
    /* every error answered counts, whichever layer found it */
    if (json_object_get(reply, "error"))
        c->srv->stats.request_errors++;
    if (oneway)
        json_decref(reply);
    else
        queue(c, reply);
    vl_output_flush(&c->out, c->conn.src.fd);
}

/* Read until a request is complete (it then waits for its turn, and nothing
 * more is read: a client's pipelined requests wait in its own socket), the
 * socket is drained, or the stream ends. */
static void read_input(struct vl_conn *c)
{
    while (!vl_input_complete(&c->in)) {
        ssize_t n = vl_input_read(&c->in, c->conn.src.fd);

        if (n > 0)
            continue;
        if (n == -EAGAIN)
            return;
        if (n == -EMSGSIZE) {
            c->srv->stats.requests++;
            c->srv->stats.request_errors++;
            queue(c, vl_error_new("io.offcpud.RequestTooLarge",
                                  json_pack("{s:I}", "limit", (json_int_t)c->in.limit)));
            vl_output_flush(&c->out, c->conn.src.fd);
            c->in.len = 0;
            c->discarding = true;
            return;
        }
        /* end of file or an error: finish writing, then close */
        c->closing = true;
        return;
    }
}

static void discard_input(struct vl_conn *c)
{
    char buf[65536];

    for (;;) {
        ssize_t n = read(c->conn.src.fd, buf, sizeof(buf));

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0 || (c->discarded += n) > DISCARD_LIMIT) {
            c->closing = true;
            return;
        }
    }
}

static void turn_signal(struct vl_server *s)
{
    uint64_t one = 1;

    if (!s->turn_signalled && write(s->turn.fd, &one, sizeof(one)) == sizeof(one))
        s->turn_signalled = true;
}

static void waiting_add(struct vl_conn *c)
{
    struct vl_server *s = c->srv;

    if (c->waiting)
        return;
    c->waiting = true;
    c->wait_next = NULL;
    c->wait_prev = s->wait_tail;
    if (s->wait_tail)
        s->wait_tail->wait_next = c;
    else
        s->wait_head = c;
    s->wait_tail = c;
    turn_signal(s);
}

static void waiting_remove(struct vl_conn *c)
{
    struct vl_server *s = c->srv;

    if (!c->waiting)
        return;
    c->waiting = false;
    if (c->wait_prev)
        c->wait_prev->wait_next = c->wait_next;
    else
        s->wait_head = c->wait_next;
    if (c->wait_next)
        c->wait_next->wait_prev = c->wait_prev;
    else
        s->wait_tail = c->wait_prev;
}

/* After anything happened on c: what to wait for next. A complete request
 * waits for its turn; output waits for the socket (a client that does not
 * read its replies is not served more); otherwise more input. Returns
 * -ECONNRESET when c is done with. */
static int conn_settle(struct vl_conn *c)
{
    bool ready =
        !c->closing && !c->discarding && !vl_output_pending(&c->out) && vl_input_complete(&c->in);
    uint32_t want;

    if (ready)
        waiting_add(c);
    else
        waiting_remove(c);
    /* the deadline runs while a request is being read: from its first byte
     * (or from when the replies before it were taken) until it is whole */
    if (c->in.len == 0 || c->discarding || vl_output_pending(&c->out) || vl_input_complete(&c->in))
        conn_request_end(&c->conn);
    else
        conn_request_begin(&c->conn);
    if (vl_output_pending(&c->out)) {
        want = EPOLLOUT | (c->discarding ? EPOLLIN : 0);
    } else if (c->closing) {
        return -ECONNRESET; /* all written */
    } else if (c->discarding) {
        /* the error is out: end of stream for the client, then wait for its close */
        if (!c->shut)
            shutdown(c->conn.src.fd, SHUT_WR);
        c->shut = true;
        want = EPOLLIN;
    } else {
        want = ready ? 0 : EPOLLIN;
    }
    if (want == c->watched)
        return 0;
    c->watched = want;
    return event_watch(c->srv->conns.epfd, EPOLL_CTL_MOD, &c->conn.src, want);
}

static void on_conn(struct event_source *src, uint32_t events)
{
    struct vl_conn *c = container_of(src, struct vl_conn, conn.src);
    int r;

    if (events & EPOLLERR) {
        conn_close(&c->conn);
        return;
    }
    if (events & EPOLLOUT) {
        size_t start = c->out.start, len = c->out.len;

        r = vl_output_flush(&c->out, c->conn.src.fd);
        if (r < 0 && r != -EAGAIN) {
            conn_close(&c->conn);
            return;
        }
        if (c->out.start != start || c->out.len != len)
            conn_active(&c->conn);
    }
    if ((events & (EPOLLIN | EPOLLHUP)) && c->discarding)
        discard_input(c);
    else if ((events & (EPOLLIN | EPOLLHUP)) && !vl_output_pending(&c->out) && !c->closing)
        read_input(c);
    if (conn_settle(c) < 0)
        conn_close(&c->conn);
}

/*
 * Requests are answered in turns: each turn, every connection with a
 * complete request has one answered, but one per uid, so that no client, nor
 * one user's many clients, can keep another's request waiting behind its
 * own pipelined ones. Between turns the event loop reads what came in.
 */
static void on_turn(struct event_source *src, uint32_t events)
{
    struct vl_server *s = container_of(src, struct vl_server, turn);
    struct vl_conn *c, *next, *last = s->wait_tail;
    uid_t served[64];
    size_t nserved = 0;
    uint64_t n;

    if (read(src->fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
        log_warning("turn: %s", strerror(errno));
    s->turn_signalled = false;
    for (c = s->wait_head; c; c = next) {
        bool done = c == last, again = false;

        next = c->wait_next;
        for (size_t i = 0; i < nserved; i++)
            again |= served[i] == c->peer.uid;
        if (!again) {
            if (nserved < ARRAY_SIZE(served))
                served[nserved++] = c->peer.uid;
            waiting_remove(c);
            serve_one(c);
            if (conn_settle(c) < 0)
                conn_close(&c->conn);
        }
        if (done)
            break;
    }
    if (s->wait_head)
        turn_signal(s);
}

static void conn_closed(struct conn *conn)
{
    waiting_remove(container_of(conn, struct vl_conn, conn));
}

static void conn_release(struct conn *conn)
{
    struct vl_conn *c = container_of(conn, struct vl_conn, conn);

    vl_input_done(&c->in);
    vl_output_done(&c->out);
    free(c);
}

static struct conn *conn_open(void *owner, int fd)
{
    struct vl_server *s = owner;
    struct vl_conn *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    if (peer_of(fd, &c->peer) < 0) {
        free(c);
        return NULL;
    }
    c->conn.src = (struct event_source){.fd = fd, .dispatch = on_conn};
    c->conn.peer = c->peer.uid;
    c->conn.exempt = c->peer.uid == 0;
    c->srv = s;
    c->watched = EPOLLIN;
    vl_input_init(&c->in, s->limits->request_limit);
    vl_output_init(&c->out, s->limits->output_limit);
    return &c->conn;
}

/* Tell the client why, if its socket takes it at once (and no reply is
 * half written: the error must not land inside it). */
static void conn_refuse(struct conn *conn, enum conn_refusal why, bool shed)
{
    struct vl_conn *c = container_of(conn, struct vl_conn, conn);
    const struct conn_stats *st = &c->srv->conns.stats;
    const char *limit = why == CONN_MAX_CLIENTS ? "max-clients" : "max-clients-per-uid";
    uint64_t n = shed ? st->shed : st->refused_max_clients + st->refused_max_per_peer;
    json_t *err = vl_error_new("io.offcpud.TooManyConnections", json_pack("{s:s}", "limit", limit));
    char *text = json_dumps(err, JSON_COMPACT);

    /* 1st, 2nd, 4th, 8th...: a flood of clients does not flood the log */
    if ((n & (n - 1)) == 0 && shed)
        log_notice("closed a connection of uid %u (pid %d) for another's: %s reached (%" PRIu64
                   " closed)",
                   c->peer.uid, c->peer.pid, limit, n);
    else if ((n & (n - 1)) == 0)
        log_notice("refused a connection of uid %u (pid %d): %s reached (%" PRIu64 " refused)",
                   c->peer.uid, c->peer.pid, limit, n);
    if (text && !vl_output_pending(&c->out))
        send(c->conn.src.fd, text, strlen(text) + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    free(text);
    json_decref(err);
}

static const struct conn_table_ops vl_conn_ops = {
    .open = conn_open,
    .closed = conn_closed,
    .free = conn_release,
    .refuse = conn_refuse,
};

int vl_server_limits_changed(struct vl_server *s)
{
    return conn_table_limits_changed(&s->conns);
}

void vl_server_get_stats(const struct vl_server *s, struct vl_server_stats *ret)
{
    *ret = s->stats;
    ret->conns = s->conns.stats;
}

size_t vl_server_clients(const struct vl_server *s)
{
    return s->conns.n;
}

int vl_server_new(int epfd, int listen_fd, const struct vl_server_limits *limits,
                  const struct access_policy *policy, struct vl_server **ret)
{
    struct vl_server *s = calloc(1, sizeof(*s));
    int r;

    if (!s)
        return -ENOMEM;
    s->limits = limits;
    s->policy = policy;
    s->turn = (struct event_source){.fd = -1, .dispatch = on_turn};
    r = conn_table_init(&s->conns, epfd, listen_fd, &limits->conns, &vl_conn_ops, s);
    if (r == 0 && listen_fd >= 0) {
        s->turn.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        r = s->turn.fd < 0 ? -errno : event_watch(epfd, EPOLL_CTL_ADD, &s->turn, EPOLLIN);
    }
    if (r < 0) {
        vl_server_free(s);
        return r;
    }
    *ret = s;
    return 0;
}

struct vl_server *vl_server_free(struct vl_server *s)
{
    if (!s)
        return NULL;
    conn_table_done(&s->conns);
    if (s->turn.fd >= 0)
        close(s->turn.fd);
    free(s);
    return NULL;
}

int vl_server_bind(struct vl_server *s, const struct vl_method *methods, size_t n, void *userdata)
{
    if (n > METHODS_MAX - s->nmethods)
        return -E2BIG;
    for (size_t i = 0; i < n; i++)
        s->methods[s->nmethods++] = (struct bound_method){.m = &methods[i], .userdata = userdata};
    return 0;
}

json_t *vl_invalid_parameter(const char *name)
{
    return vl_error_new("org.varlink.service.InvalidParameter",
                        json_pack("{s:s}", "parameter", name));
}

static bool type_ok(const json_t *v, enum vl_param_type t)
{
    size_t i;
    json_t *e;

    switch (t) {
    case VL_INT:
        return json_is_integer(v);
    case VL_STRING:
        return json_is_string(v);
    case VL_BOOL:
        return json_is_boolean(v);
    case VL_STRING_ARRAY:
        if (!json_is_array(v))
            return false;
        json_array_foreach(v, i, e) if (!json_is_string(e)) return false;
        return true;
    }
    return false;
}

/* Every parameter known, of its type, and the required ones there. */
static json_t *check_params(const struct vl_param *spec, json_t *params)
{
    const char *key;
    json_t *v;

    json_object_foreach(params, key, v)
    {
        const struct vl_param *p = spec;

        while (p->name && strcmp(p->name, key) != 0)
            p++;
        if (!p->name || (!json_is_null(v) && !type_ok(v, p->type)))
            return vl_invalid_parameter(key);
    }
    for (const struct vl_param *p = spec; p->name; p++)
        if (p->required && json_is_null(json_object_get(params, p->name) ?: json_null()))
            return vl_invalid_parameter(p->name);
    return NULL;
}

/* An unknown method of a known interface, or an unknown interface. */
static json_t *not_found(const struct vl_server *s, const char *method)
{
    const char *dot = strrchr(method, '.');
    size_t len = dot ? (size_t)(dot - method) : 0;

    for (size_t i = 0; i < s->nmethods; i++) {
        const char *name = s->methods[i].m->name;

        if (len && strncmp(name, method, len) == 0 && name[len] == '.')
            return vl_error_new("org.varlink.service.MethodNotFound",
                                json_pack("{s:s}", "method", method));
    }
    return vl_error_new("org.varlink.service.InterfaceNotFound",
                        json_pack("{s:s%}", "interface", method, len));
}

json_t *vl_server_call(struct vl_server *s, const struct peer *peer, json_t *msg, bool *oneway)
{
    json_t *method = json_object_get(msg, "method");
    json_t *params = json_object_get(msg, "parameters");
    const struct bound_method *b = NULL;
    json_t *empty = NULL, *reply;

    *oneway = json_is_true(json_object_get(msg, "oneway"));
    if (!json_is_string(method))
        return vl_error_new("io.offcpud.InvalidRequest",
                            json_pack("{s:s}", "reason", "'method' must be a string"));
    if (params && !json_is_object(params) && !json_is_null(params))
        return vl_error_new("io.offcpud.InvalidRequest",
                            json_pack("{s:s}", "reason", "'parameters' must be an object"));
    for (size_t i = 0; i < s->nmethods && !b; i++)
        if (strcmp(s->methods[i].m->name, json_string_value(method)) == 0)
            b = &s->methods[i];
    if (!b)
        return not_found(s, json_string_value(method));
    if (access_of(s->policy, peer) < b->m->needs) {
        log_notice("denied %s to uid %u (pid %d): neither root nor in the socket group", b->m->name,
                   peer->uid, peer->pid);
        return vl_error_new("org.varlink.service.PermissionDenied", NULL);
    }
    if (!json_is_object(params))
        params = empty = json_object();
    reply = check_params(b->m->params, params);
    if (!reply)
        reply = b->m->call(b->userdata, peer, params);
    json_decref(empty);
    return reply;
}
