/* SPDX-License-Identifier: GPL-2.0-only */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "api.h"
#include "daemon.h"
#include "event.h"
#include "log.h"
#include "macro.h"
#include "varlink_frame.h"

/* After an oversized request the rest of it is read and dropped, so that the
 * client can still read the error (closing with unread input would reset the
 * connection and lose it); but not forever. */
#define DISCARD_LIMIT (16u << 20)

/* Connections root may open beyond max-clients: a flood of others' clients
 * must not lock out the on-call engineer. */
#define ROOT_RESERVE 8

struct conn {
    struct event_source src;
    struct server *srv;
    struct peer peer;
    struct vl_input in;
    struct vl_output out;
    uint32_t watched; /* epoll events asked for */
    bool closing;     /* close once the output is written */
    bool discarding;  /* after an oversized request: error sent, input thrown away */
    bool shut;        /* our side of the stream is shut down */
    size_t discarded;
    int64_t active_ns; /* CLOCK_MONOTONIC of the last request answered or output written */
    struct conn *prev, *next;
};

struct server {
    struct event_source listener;
    struct event_source idle_timer; /* one for all connections */
    struct daemon *d;
    bool bound_here;        /* we made the socket file, so we remove it */
    struct stat bound_file; /* ... and this is it */
    gid_t bound_gid;        /* the group it was given */
    struct conn *conns;
    size_t nconns;
    struct server_stats stats;
};

static int64_t monotonic_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static void conn_free(struct conn *c)
{
    struct server *s = c->srv;

    epoll_ctl(s->d->epfd, EPOLL_CTL_DEL, c->src.fd, NULL);
    close(c->src.fd);
    vl_input_done(&c->in);
    vl_output_done(&c->out);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    free(c);
}

static void queue(struct conn *c, json_t *msg)
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

/* Answer buffered requests until one leaves output waiting for the socket:
 * a client that does not read its replies stops being read. */
static void process_input(struct conn *c)
{
    while (!c->closing && !vl_output_pending(&c->out)) {
        char reason[256];
        json_t *msg = NULL, *reply;
        bool oneway = false;
        int r = vl_input_next(&c->in, &msg, reason, sizeof(reason));

        if (r == 0)
            return;
        c->srv->d->stats.requests++;
        c->active_ns = monotonic_ns();
        if (r < 0) {
            reply = vl_error_new("io.offcpud.InvalidRequest", json_pack("{s:s}", "reason", reason));
        } else {
            reply = api_call(c->srv->d, &c->peer, msg, &oneway);
            json_decref(msg);
        }
        /* every error answered counts, whichever layer found it */
        if (json_object_get(reply, "error"))
            c->srv->d->stats.request_errors++;
        if (oneway)
            json_decref(reply);
        else
            queue(c, reply);
        vl_output_flush(&c->out, c->src.fd);
    }
}

static void read_input(struct conn *c)
{
    for (;;) {
        ssize_t n = vl_input_read(&c->in, c->src.fd);

        if (n > 0) {
            process_input(c);
            if (vl_output_pending(&c->out) || c->closing)
                return;
            continue;
        }
        if (n == -EAGAIN)
            return;
        if (n == -EMSGSIZE) {
            c->srv->d->stats.requests++;
            c->srv->d->stats.request_errors++;
            queue(c, vl_error_new("io.offcpud.RequestTooLarge",
                                  json_pack("{s:I}", "limit", (json_int_t)c->in.limit)));
            vl_output_flush(&c->out, c->src.fd);
            c->in.len = 0;
            c->discarding = true;
            return;
        }
        /* end of file, an error, or an oversized request: finish writing, then close */
        c->closing = true;
        return;
    }
}

static void discard_input(struct conn *c)
{
    char buf[65536];

    for (;;) {
        ssize_t n = read(c->src.fd, buf, sizeof(buf));

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0 || (c->discarded += n) > DISCARD_LIMIT) {
            c->closing = true;
            return;
        }
    }
}

static int update_watch(struct conn *c)
{
    uint32_t want;

    if (vl_output_pending(&c->out)) {
        want = EPOLLOUT | (c->discarding ? EPOLLIN : 0);
    } else if (c->closing) {
        return -ECONNRESET; /* all written */
    } else if (c->discarding) {
        /* the error is out: end of stream for the client, then wait for its close */
        if (!c->shut)
            shutdown(c->src.fd, SHUT_WR);
        c->shut = true;
        want = EPOLLIN;
    } else {
        want = EPOLLIN;
    }
    if (want == c->watched)
        return 0;
    c->watched = want;
    return event_watch(c->srv->d->epfd, EPOLL_CTL_MOD, &c->src, want);
}

static void on_conn(struct event_source *src, uint32_t events)
{
    struct conn *c = (struct conn *)src;
    int r;

    if (events & EPOLLERR) {
        conn_free(c);
        return;
    }
    if (events & EPOLLOUT) {
        size_t start = c->out.start, len = c->out.len;

        r = vl_output_flush(&c->out, c->src.fd);
        if (r < 0 && r != -EAGAIN) {
            conn_free(c);
            return;
        }
        if (c->out.start != start || c->out.len != len)
            c->active_ns = monotonic_ns();
        /* requests that waited behind the output */
        if (r == 0)
            process_input(c);
    }
    if ((events & (EPOLLIN | EPOLLHUP)) && c->discarding)
        discard_input(c);
    else if ((events & (EPOLLIN | EPOLLHUP)) && !vl_output_pending(&c->out) && !c->closing)
        read_input(c);
    if (update_watch(c) < 0)
        conn_free(c);
}

static int peer_of(int fd, struct peer *p)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return -errno;
    *p = (struct peer){.pid = cred.pid, .uid = cred.uid, .gid = cred.gid};
    len = sizeof(p->groups);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, p->groups, &len) < 0)
        p->ngroups = errno == ERANGE ? -1 : 0;
    else
        p->ngroups = len / sizeof(gid_t);
    return 0;
}

bool peer_in_group(const struct peer *p, gid_t gid)
{
    if (p->gid == gid)
        return true;
    for (int i = 0; i < p->ngroups; i++)
        if (p->groups[i] == gid)
            return true;
    return false;
}

static size_t clients_of(const struct server *s, uid_t uid)
{
    size_t n = 0;

    for (const struct conn *c = s->conns; c; c = c->next)
        n += c->peer.uid == uid;
    return n;
}

/* The limit a new connection of peer would pass, or NULL. */
static const char *limit_reached(struct server *s, const struct peer *p)
{
    const struct config *cfg = &s->d->cfg;

    if (s->nconns >= cfg->max_clients + (p->uid == 0 ? ROOT_RESERVE : 0)) {
        s->stats.refused_max_clients++;
        return "max-clients";
    }
    if (p->uid != 0 && clients_of(s, p->uid) >= cfg->max_clients_per_uid) {
        s->stats.refused_max_clients_per_uid++;
        return "max-clients-per-uid";
    }
    return NULL;
}

/* Tell the refused client why, if its socket takes it at once; then close. */
static void refuse(struct server *s, int fd, const struct peer *p, const char *limit)
{
    uint64_t n = s->stats.refused_max_clients + s->stats.refused_max_clients_per_uid;
    json_t *err = vl_error_new("io.offcpud.TooManyConnections", json_pack("{s:s}", "limit", limit));
    char *text = json_dumps(err, JSON_COMPACT);

    /* 1st, 2nd, 4th, 8th...: a flood of clients does not flood the log */
    if ((n & (n - 1)) == 0)
        log_notice("refused a connection of uid %u (pid %d): %s reached (%" PRIu64 " refused)",
                   p->uid, p->pid, limit, n);
    if (text)
        send(fd, text, strlen(text) + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    free(text);
    json_decref(err);
    close(fd);
}

static void on_listener(struct event_source *src, uint32_t events)
{
    struct server *s = (struct server *)src;

    for (;;) {
        int fd = accept4(s->listener.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        const char *limit;
        struct peer peer;
        struct conn *c;

        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                log_warning("accept: %s", strerror(errno));
            return;
        }
        if (peer_of(fd, &peer) < 0) {
            close(fd);
            continue;
        }
        limit = limit_reached(s, &peer);
        if (limit) {
            refuse(s, fd, &peer, limit);
            continue;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            continue;
        }
        c->peer = peer;
        c->active_ns = monotonic_ns();
        c->src = (struct event_source){.fd = fd, .dispatch = on_conn};
        c->srv = s;
        c->watched = EPOLLIN;
        vl_input_init(&c->in, s->d->cfg.request_limit);
        vl_output_init(&c->out, s->d->cfg.output_limit);
        if (event_watch(s->d->epfd, EPOLL_CTL_ADD, &c->src, EPOLLIN) < 0) {
            vl_input_done(&c->in);
            vl_output_done(&c->out);
            free(c);
            close(fd);
            continue;
        }
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        s->nconns++;
    }
}

/* 0755 whatever the umask (systemd's UMask=0077, a root shell's 077): the
 * socket group must be able to reach the socket inside. */
static int mkdir_parent(const char *path)
{
    char buf[PATH_MAX];
    char *dir;

    snprintf(buf, sizeof(buf), "%s", path);
    dir = dirname(buf);
    if (mkdir(dir, 0755) < 0)
        return errno == EEXIST ? 0 : -errno;
    return chmod(dir, 0755) < 0 ? -errno : 0;
}

/* A socket file left by a dead daemon is removed; a live one is not taken over. */
static int clear_stale_socket(const struct sockaddr_un *sa)
{
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
        return -EADDRINUSE;
    if (errno == ENOENT)
        return 0;
    if (unlink(sa->sun_path) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

/* Who may connect: 0660 root:group where there is a group to read (gid),
 * else 0600 root:root. The mode passes through 0600, so a change of group
 * never lets the old group in under the new one. Only on the file we bound
 * (identity in *bound) and never through a link: the path may lie in a
 * directory others can write to. */
static int socket_file_set_access(const char *path, const struct stat *bound, gid_t gid)
{
    _cleanup_close_ int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    char self[64];
    struct stat st;

    if (fd < 0 || fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISSOCK(st.st_mode) || st.st_dev != bound->st_dev || st.st_ino != bound->st_ino)
        return -ESTALE;
    /* chmod does not take an O_PATH descriptor; its /proc link names the same inode */
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    if (chmod(self, 0600) < 0 || fchownat(fd, "", 0, gid == (gid_t)-1 ? 0 : gid, AT_EMPTY_PATH) < 0)
        return -errno;
    if (gid != (gid_t)-1 && chmod(self, 0660) < 0)
        return -errno;
    return 0;
}

/* Access is set before listen(), so no one connects in between. */
static int bind_socket(const char *path, gid_t access_gid, struct stat *ret_file)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    _cleanup_close_ int fd = -1;
    mode_t old;
    int r;

    if (strlen(path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    strcpy(sa.sun_path, path);
    r = mkdir_parent(path);
    if (r < 0)
        return r;
    r = clear_stale_socket(&sa);
    if (r < 0)
        return r;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    old = umask(0177);
    r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (r < 0 || lstat(path, ret_file) < 0)
        return -errno;
    r = socket_file_set_access(path, ret_file, access_gid);
    if (r < 0)
        return r;
    if (listen(fd, SOMAXCONN) < 0)
        return -errno;
    r = fd;
    fd = -1;
    return r;
}

/* Connections with neither a request answered nor output taken for
 * idle-timeout go: an idle client, a client that stopped reading, or one
 * that sends a request a byte at a time. */
static void on_idle_timer(struct event_source *src, uint32_t events)
{
    struct server *s = container_of(src, struct server, idle_timer);
    int64_t deadline = monotonic_ns() - (int64_t)s->d->cfg.idle_timeout_ns;
    uint64_t expirations;
    struct conn *next;

    if (read(src->fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
        log_warning("idle timer: %s", strerror(errno));
    for (struct conn *c = s->conns; c; c = next) {
        next = c->next;
        if (c->active_ns < deadline) {
            s->stats.idle_closed++;
            conn_free(c);
        }
    }
}

/* Checked four times per idle-timeout, at most once a second. */
int server_apply_config(struct server *s)
{
    uint64_t period = s->d->cfg.idle_timeout_ns / 4;
    struct itimerspec its;
    int r;

    if (s->bound_here && s->bound_gid != s->d->access_gid) {
        r = socket_file_set_access(s->d->cfg.socket_path, &s->bound_file, s->d->access_gid);
        if (r < 0)
            log_warning("cannot give %s to group '%s': %s", s->d->cfg.socket_path,
                        s->d->cfg.socket_group,
                        r == -ESTALE ? "not the socket offcpud made" : strerror(-r));
        else
            s->bound_gid = s->d->access_gid;
    }
    if (period > NSEC_PER_SEC)
        period = NSEC_PER_SEC;
    its.it_interval = (struct timespec){period / NSEC_PER_SEC, period % NSEC_PER_SEC};
    its.it_value = its.it_interval;
    return timerfd_settime(s->idle_timer.fd, 0, &its, NULL) < 0 ? -errno : 0;
}

void server_get_stats(const struct server *s, struct server_stats *ret)
{
    *ret = s->stats;
}

/* systemd's socket activation hands over one listening Unix socket. */
static int inherited_socket(void)
{
    int n = sd_listen_fds(1);

    if (n <= 0)
        return -ENOENT;
    if (n > 1 || sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0)
        return -EINVAL;
    if (fcntl(SD_LISTEN_FDS_START, F_SETFL, O_NONBLOCK) < 0)
        return -errno;
    return SD_LISTEN_FDS_START;
}

int server_new(struct daemon *d, struct server **ret)
{
    struct server *s = calloc(1, sizeof(*s));
    int fd, r;

    if (!s)
        return -ENOMEM;
    s->d = d;
    fd = inherited_socket();
    if (fd == -EINVAL) {
        free(s);
        return log_error_errno(EINVAL,
                               "socket activation: expected one listening Unix stream socket");
    }
    if (fd < 0) {
        fd = bind_socket(d->cfg.socket_path, d->access_gid, &s->bound_file);
        if (fd < 0) {
            free(s);
            return log_error_errno(fd, "cannot listen on %s: %s", d->cfg.socket_path,
                                   fd == -EADDRINUSE ? "another offcpud is listening there"
                                                     : strerror(-fd));
        }
        s->bound_here = true;
        s->bound_gid = d->access_gid;
    }
    s->listener = (struct event_source){.fd = fd, .dispatch = on_listener};
    s->idle_timer =
        (struct event_source){.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
                              .dispatch = on_idle_timer};
    r = s->idle_timer.fd < 0 ? -errno : server_apply_config(s);
    if (r == 0)
        r = event_watch(d->epfd, EPOLL_CTL_ADD, &s->listener, EPOLLIN);
    if (r == 0)
        r = event_watch(d->epfd, EPOLL_CTL_ADD, &s->idle_timer, EPOLLIN);
    if (r < 0) {
        server_free(s);
        return r;
    }
    *ret = s;
    return 0;
}

struct server *server_free(struct server *s)
{
    if (!s)
        return NULL;
    while (s->conns)
        conn_free(s->conns);
    close(s->listener.fd);
    if (s->idle_timer.fd >= 0)
        close(s->idle_timer.fd);
    if (s->bound_here)
        unlink(s->d->cfg.socket_path);
    free(s);
    return NULL;
}

size_t server_clients(const struct server *s)
{
    return s->nconns;
}
