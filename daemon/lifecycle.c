/* SPDX-License-Identifier: GPL-2.0-only */
#include "lifecycle.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "command_line.h"
#include "drain.h"
#include "event.h"
#include "log.h"
#include "ring_budget.h"
#include "macro.h"

void lifecycle_apply_settings(struct daemon *d)
{
    /* the group whose members may read; none if it does not exist */
    struct group *g = getgrnam(d->cfg.socket_group);
    int r;

    d->access = (struct access_policy){.gid = g ? g->gr_gid : (gid_t)-1,
                                       .group_all = d->cfg.group_access_all};
    if (!g)
        log_notice("no group '%s': only root may read", d->cfg.socket_group);
    d->limits = (struct vl_server_limits){
        .conns = {.max_clients = d->cfg.max_clients,
                  .max_per_peer = d->cfg.max_clients_per_uid,
                  .exempt_reserve = VL_ROOT_RESERVE,
                  .request_timeout_ns = d->cfg.request_timeout_ns,
                  .idle_timeout_ns = d->cfg.idle_timeout_ns},
        .request_limit = d->cfg.request_limit,
        .output_limit = d->cfg.output_limit,
    };
    d->metrics_limits = (struct conn_limits){.max_clients = d->cfg.max_clients,
                                             .max_per_peer = d->cfg.max_clients_per_address,
                                             .request_timeout_ns = d->cfg.request_timeout_ns,
                                             .idle_timeout_ns = d->cfg.idle_timeout_ns};
    if (d->metrics)
        metrics_set_max_cgroups(d->metrics, d->cfg.metrics_max_cgroups);
    if (d->server)
        vl_server_limits_changed(d->server);
    if (d->metrics_http)
        http_listener_limits_changed(d->metrics_http);
    r = listen_socket_set_group(&d->socket, d->access.gid);
    if (r < 0)
        log_warning("cannot give %s to group '%s': %s", d->socket.path, d->cfg.socket_group,
                    r == -ESTALE ? "not the socket offcpud made" : strerror(-r));
}

struct loop {
    struct event_source timer;
    struct event_source signals;
    struct event_source announcements;
    struct event_source watchdog;
    struct daemon *d;
    bool quit;
};

static void on_timer(struct event_source *src, uint32_t events)
{
    struct loop *l = container_of(src, struct loop, timer);
    uint64_t expirations;

    if (read(src->fd, &expirations, sizeof(expirations)) < 0)
        return;
    if (drain_run(l->d, l->d->cfg.drain_budget_ns) == 0)
        sd_notifyf(0, "STATUS=%zu snapshots, %zu MiB, %" PRIu64 " drains", l->d->ring.n,
                   ring_memory(&l->d->ring) >> 20, l->d->stats.drains);
}

/* Pinged only while drains succeed: a collector that is stuck or failing
 * gets the daemon restarted. */
static void on_watchdog(struct event_source *src, uint32_t events)
{
    struct loop *l = container_of(src, struct loop, watchdog);
    uint64_t expirations;
    int64_t stale = 3 * (int64_t)l->d->cfg.interval_ns + (int64_t)NSEC_PER_SEC;

    if (read(src->fd, &expirations, sizeof(expirations)) < 0)
        return;
    /* a generation carried past its drain's budget is progress too */
    if (clock_ns(CLOCK_MONOTONIC) - l->d->last_drain_mono_ns < stale || l->d->building)
        sd_notify(0, "WATCHDOG=1");
}

static int set_interval(int fd, uint64_t ns)
{
    struct itimerspec its = {
        .it_interval = {.tv_sec = ns / NSEC_PER_SEC, .tv_nsec = ns % NSEC_PER_SEC},
    };

    its.it_value = its.it_interval;
    return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

static int periodic_timer(uint64_t ns)
{
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC), r;

    if (fd < 0)
        return -errno;
    r = set_interval(fd, ns);
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

/* systemd asks for pings with WATCHDOG_USEC: at half of it. */
static int setup_watchdog(struct loop *l)
{
    uint64_t usec;

    l->watchdog = (struct event_source){.fd = -1, .dispatch = on_watchdog};
    if (sd_watchdog_enabled(0, &usec) <= 0)
        return 0;
    l->watchdog.fd = periodic_timer(usec * NSEC_PER_USEC / 2);
    if (l->watchdog.fd < 0)
        return l->watchdog.fd;
    return event_watch(l->d->epfd, EPOLL_CTL_ADD, &l->watchdog, EPOLLIN);
}

static void on_announce(void *userdata, const struct offcpu_announce *a)
{
    static const enum prefetch_when when[] = {
        [OFFCPU_ANNOUNCE_PROCESS] = PREFETCH_FIRST_BLOCK,
        [OFFCPU_ANNOUNCE_EXEC] = PREFETCH_EXEC,
        [OFFCPU_ANNOUNCE_MAPPED] = PREFETCH_MAPPED,
    };
    struct daemon *d = userdata;

    if (a->kind == OFFCPU_ANNOUNCE_FORKED)
        symbolizer_inherit(d->sym, (pid_t)a->tgid, (pid_t)a->parent, a->exec_id,
                           (int64_t)a->code_ns);
    else if (a->kind == OFFCPU_ANNOUNCE_PROCESS || a->kind == OFFCPU_ANNOUNCE_EXEC ||
             a->kind == OFFCPU_ANNOUNCE_MAPPED)
        symbolizer_prefetch(d->sym, (pid_t)a->tgid, a->exec_id, when[a->kind]);
}

static void on_announcements(struct event_source *src, uint32_t events)
{
    struct loop *l = container_of(src, struct loop, announcements);

    collector_take_announcements(l->d->collector);
    symbolizer_prefetch_pending(l->d->sym);
}

/* SIGHUP: the file (and the command line over it) again. What can change
 * live does; what cannot waits for a restart, and says so. A bad file
 * changes nothing. Collected data is untouched either way. */
static void reload(struct loop *l)
{
    struct daemon *d = l->d;
    struct config fresh;

    config_defaults(&fresh);
    if (command_line_parse(d->argc, d->argv, &fresh) != 0) {
        log_warning("reload failed: keeping the running configuration");
        return;
    }
    if (strcmp(fresh.socket_path, d->cfg.socket_path) != 0 ||
        strcmp(fresh.trace_cgroups, d->cfg.trace_cgroups) != 0 ||
        strcmp(fresh.state_dir, d->cfg.state_dir) != 0 ||
        strcmp(fresh.metrics_listen, d->cfg.metrics_listen) != 0 ||
        fresh.symbol_memory != d->cfg.symbol_memory ||
        memcmp(&fresh.collector, &d->cfg.collector, sizeof(fresh.collector)) != 0)
        log_notice("reload: socket, state-directory, metrics-listen, symbol-memory and "
                   "collector settings change at the next restart only");
    d->cfg.interval_ns = fresh.interval_ns;
    d->cfg.drain_budget_ns = fresh.drain_budget_ns;
    d->cfg.retention_ns = fresh.retention_ns;
    d->cfg.memory_limit = fresh.memory_limit;
    d->cfg.journal_size = fresh.journal_size;
    d->cfg.journal_sync = fresh.journal_sync;
    d->cfg.max_clients = fresh.max_clients;
    d->cfg.max_clients_per_uid = fresh.max_clients_per_uid;
    d->cfg.max_clients_per_address = fresh.max_clients_per_address;
    d->cfg.request_timeout_ns = fresh.request_timeout_ns;
    d->cfg.idle_timeout_ns = fresh.idle_timeout_ns;
    d->cfg.group_access_all = fresh.group_access_all;
    d->cfg.metrics_max_cgroups = fresh.metrics_max_cgroups;
    memcpy(d->cfg.socket_group, fresh.socket_group, sizeof(d->cfg.socket_group));
    lifecycle_apply_settings(d);
    d->ring.retention_ns = fresh.retention_ns;
    d->ring.memory_limit = fresh.memory_limit;
    ring_budget_make_room(&d->ring, 0);
    ring_expire(&d->ring, clock_ns(CLOCK_REALTIME));
    set_interval(l->timer.fd, fresh.interval_ns);
    log_info("reloaded: interval %" PRIu64 "ms, retention %" PRIu64 "s, memory limit %" PRIu64
             " MiB",
             (uint64_t)(fresh.interval_ns / NSEC_PER_MSEC),
             (uint64_t)(fresh.retention_ns / NSEC_PER_SEC), fresh.memory_limit >> 20);
}

static void on_signal(struct event_source *src, uint32_t events)
{
    struct loop *l = container_of(src, struct loop, signals);
    struct signalfd_siginfo si;

    if (read(src->fd, &si, sizeof(si)) != sizeof(si))
        return;
    if (si.ssi_signo == SIGHUP) {
        sd_notify(0, "RELOADING=1");
        reload(l);
        sd_notify(0, "READY=1");
        return;
    }
    log_info("%s: exiting", strsignal(si.ssi_signo));
    l->quit = true;
}

static int setup_loop(struct loop *l, struct daemon *d)
{
    sigset_t mask;
    int r;

    l->d = d;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    l->signals = (struct event_source){.fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC),
                                       .dispatch = on_signal};
    if (l->signals.fd < 0)
        return -errno;
    l->timer =
        (struct event_source){.fd = periodic_timer(d->cfg.interval_ns), .dispatch = on_timer};
    if (l->timer.fd < 0)
        return l->timer.fd;
    l->announcements =
        (struct event_source){.fd = collector_watch_announcements(d->collector, on_announce, d),
                              .dispatch = on_announcements};
    if (l->announcements.fd < 0)
        return l->announcements.fd;
    r = event_watch(d->epfd, EPOLL_CTL_ADD, &l->signals, EPOLLIN);
    if (r == 0)
        r = event_watch(d->epfd, EPOLL_CTL_ADD, &l->timer, EPOLLIN);
    if (r == 0)
        r = event_watch(d->epfd, EPOLL_CTL_ADD, &l->announcements, EPOLLIN);
    if (r == 0)
        r = setup_watchdog(l);
    return r;
}

int lifecycle_run(struct daemon *d)
{
    struct loop l = {0};
    int r = setup_loop(&l, d);

    if (r < 0)
        return log_error_errno(r, "setting up the event loop: %s", strerror(-r));
    sd_notifyf(0, "READY=1\nSTATUS=collecting (%s), socket %s", collector_attach_name(d->collector),
               d->cfg.socket_path);
    log_info("ready: attached (%s), listening on %s", collector_attach_name(d->collector),
             d->cfg.socket_path);
    while (!l.quit) {
        struct epoll_event ev[32];
        int n = epoll_wait(d->epfd, ev, ARRAY_SIZE(ev), -1);

        if (n < 0 && errno != EINTR)
            return log_error_errno(errno, "epoll_wait: %s", strerror(errno));
        for (int i = 0; i < n; i++) {
            struct event_source *src = ev[i].data.ptr;

            if (src->dispatch)
                src->dispatch(src, ev[i].events);
        }
        event_release_closed();
    }
    sd_notify(0, "STOPPING=1");
    close(l.timer.fd);
    close(l.signals.fd);
    if (l.watchdog.fd >= 0)
        close(l.watchdog.fd);
    return 0;
}
