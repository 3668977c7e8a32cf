/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpud: keeps off-CPU stacks of every task, answers queries on a socket. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "cfi.h"
#include "daemon.h"
#include "duration.h"
#include "event.h"
#include "kallsyms.h"
#include "log.h"
#include "macro.h"
#include "persist.h"
#include "server.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: offcpud [OPTIONS]\n"
            "Always-on off-CPU profiler: sums blocked time per stack in the kernel and\n"
            "answers queries from offcpuctl on a Varlink socket.\n\n"
            "  -c, --config FILE          read settings from FILE (command line wins)\n"
            "  -s, --socket PATH          listen on PATH (default %s, or $OFFCPUD_SOCKET)\n"
            "  -i, --interval DURATION    snapshot interval (default 1s)\n"
            "  -r, --retention DURATION   keep snapshots this long (default 15m)\n"
            "  -m, --memory-limit SIZE    memory for snapshots (default 256M)\n"
            "      --attach MODE          auto, tp_btf or raw_tp (default auto)\n"
            "      --state-directory DIR  keep the ring here across restarts\n"
            "                             (default $STATE_DIRECTORY or /var/lib/offcpud)\n"
            "      --stack-cache yes|no   reuse stacks of a thread blocking at the same\n"
            "                             place again (default yes)\n"
            "      --socket-group NAME    whose members may connect and read (default offcpu)\n"
            "      --group-access own|all what the socket's group may see (default own)\n"
            "      --trace-cgroups 'PATH...' trace only these cgroups and their subtrees\n"
            "  -h, --help                 show this help\n"
            "  -V, --version              show the version\n",
            DEFAULT_SOCKET_PATH);
}

static const struct option long_options[] = {
    {"config", required_argument, NULL, 'c'},
    {"socket", required_argument, NULL, 's'},
    {"interval", required_argument, NULL, 'i'},
    {"retention", required_argument, NULL, 'r'},
    {"memory-limit", required_argument, NULL, 'm'},
    {"attach", required_argument, NULL, 'a'},
    {"state-directory", required_argument, NULL, 'd'},
    {"stack-cache", required_argument, NULL, 0x100},
    {"group-access", required_argument, NULL, 0x101},
    {"socket-group", required_argument, NULL, 0x102},
    {"trace-cgroups", required_argument, NULL, 0x103},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* Returns 0 to go on, 1 to exit successfully (help, version), -EINVAL on misuse. */
static int parse_args(int argc, char **argv, struct config *cfg)
{
    const char *config_file = NULL;
    int c, idx;

    /* the file first, so that the command line overrides it; optind = 0 makes
     * getopt start afresh, as a reload parses the same arguments again */
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "c:s:i:r:m:hV", long_options, NULL)) != -1)
        if (c == 'c')
            config_file = optarg;
    if (config_file && config_load_file(cfg, config_file) < 0)
        return -EINVAL;

    optind = 0;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "c:s:i:r:m:hV", long_options, &idx)) != -1) {
        const char *why = "invalid value";
        const char *key = NULL;

        switch (c) {
        case 'h':
            usage(stdout);
            return 1;
        case 'V':
            printf("offcpud %s\n", OFFCPUD_VERSION);
            return 1;
        case 'c':
            continue;
        case '?':
            usage(stderr);
            return -EINVAL;
        default:
            for (idx = 0; long_options[idx].name; idx++)
                if (long_options[idx].val == c)
                    key = long_options[idx].name;
            if (config_set(cfg, key, optarg, &why) < 0) {
                log_error("--%s %s: %s", key, optarg, why);
                return -EINVAL;
            }
        }
    }
    if (optind < argc) {
        log_error("unexpected argument '%s'", argv[optind]);
        return -EINVAL;
    }
    return 0;
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
    if (daemon_drain(l->d) == 0)
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
    if (clock_ns(CLOCK_MONOTONIC) - l->d->last_drain_mono_ns < stale)
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

/* The call frame rule at a.pc, for the BPF side to recover callers with. */
static int32_t unwind_rule(struct daemon *d, const struct offcpu_announce *a)
{
    _cleanup_close_ int fd = -EBADF;
    uint64_t vaddr;
    int32_t rule;

    fd = symbolizer_open_code(d->sym, (pid_t)a->tgid, a->exec_id, a->pc, &vaddr);
    if (fd < 0)
        return OFFCPU_UNWIND_STOP;
    /* a return address is looked up at the call before it */
    if (a->kind == OFFCPU_ANNOUNCE_UNWIND_CALLER)
        vaddr--;
    return cfi_cfa_offset(fd, vaddr, &rule) < 0 ? OFFCPU_UNWIND_STOP : rule;
}

static void on_announce(void *userdata, const struct offcpu_announce *a)
{
    struct daemon *d = userdata;

    if (a->kind == OFFCPU_ANNOUNCE_PROCESS)
        symbolizer_prefetch(d->sym, (pid_t)a->tgid, a->exec_id);
    else
        collector_set_unwind_rule(d->collector, a, unwind_rule(d, a));
}

static void on_announcements(struct event_source *src, uint32_t events)
{
    struct loop *l = container_of(src, struct loop, announcements);

    collector_take_announcements(l->d->collector);
}

/* The group whose members may read (group-access); none if it does not exist. */
static void resolve_access_group(struct daemon *d)
{
    struct group *g = getgrnam(d->cfg.socket_group);

    d->access_gid = g ? g->gr_gid : (gid_t)-1;
    if (!g)
        log_notice("no group '%s': only root may read", d->cfg.socket_group);
}

/* SIGHUP: the file (and the command line over it) again. What can change
 * live does; what cannot waits for a restart, and says so. A bad file
 * changes nothing. Collected data is untouched either way. */
static void reload(struct loop *l)
{
    struct daemon *d = l->d;
    struct config fresh;

    config_defaults(&fresh);
    if (parse_args(d->argc, d->argv, &fresh) != 0) {
        log_warning("reload failed: keeping the running configuration");
        return;
    }
    if (strcmp(fresh.socket_path, d->cfg.socket_path) != 0 ||
        strcmp(fresh.trace_cgroups, d->cfg.trace_cgroups) != 0 ||
        strcmp(fresh.state_dir, d->cfg.state_dir) != 0 ||
        memcmp(&fresh.collector, &d->cfg.collector, sizeof(fresh.collector)) != 0)
        log_notice("reload: socket, state-directory and collector settings change at the "
                   "next restart only");
    d->cfg.interval_ns = fresh.interval_ns;
    d->cfg.retention_ns = fresh.retention_ns;
    d->cfg.memory_limit = fresh.memory_limit;
    d->cfg.max_clients = fresh.max_clients;
    d->cfg.max_clients_per_uid = fresh.max_clients_per_uid;
    d->cfg.idle_timeout_ns = fresh.idle_timeout_ns;
    d->cfg.group_access_all = fresh.group_access_all;
    memcpy(d->cfg.socket_group, fresh.socket_group, sizeof(d->cfg.socket_group));
    resolve_access_group(d);
    server_apply_config(d->server);
    d->ring.retention_ns = fresh.retention_ns;
    d->ring.memory_limit = fresh.memory_limit;
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

static int run(struct daemon *d)
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

            src->dispatch(src, ev[i].events);
        }
    }
    sd_notify(0, "STOPPING=1");
    close(l.timer.fd);
    close(l.signals.fd);
    if (l.watchdog.fd >= 0)
        close(l.watchdog.fd);
    return 0;
}

static void state_path(const struct daemon *d, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", d->cfg.state_dir, PERSIST_FILE);
}

/* What the previous instance saw: its snapshots, if the file can be trusted. */
static void restore_ring(struct daemon *d)
{
    char path[PATH_MAX + 16], aside[PATH_MAX + 64];
    int r;

    state_path(d, path, sizeof(path));
    r = ring_load(&d->ring, path, 2 * d->cfg.memory_limit + (64u << 20));
    if (r == -ENOENT)
        return;
    if (r < 0) {
        /* kept for a post-mortem, but never read again */
        snprintf(aside, sizeof(aside), "%s.untrusted-%lld", path,
                 (long long)(clock_ns(CLOCK_REALTIME) / NSEC_PER_SEC));
        rename(path, aside);
        log_warning("%s cannot be trusted (%s): set aside as %s", path, strerror(-r), aside);
        ring_done(&d->ring);
        ring_init(&d->ring, d->cfg.retention_ns, d->cfg.memory_limit);
        return;
    }
    ring_expire(&d->ring, clock_ns(CLOCK_REALTIME));
    log_info("restored %zu snapshots from %s", d->ring.n, path);
}

/* At exit: the last interval too, then the ring, for the next instance. */
static void save_ring(struct daemon *d)
{
    char path[PATH_MAX + 16];
    int r;

    daemon_drain(d);
    if (mkdir(d->cfg.state_dir, 0700) < 0 && errno != EEXIST) {
        log_warning("cannot create %s: %s; the ring is not kept", d->cfg.state_dir,
                    strerror(errno));
        return;
    }
    state_path(d, path, sizeof(path));
    r = ring_save(&d->ring, path);
    if (r < 0)
        log_warning("saving the ring to %s: %s", path, strerror(-r));
    else
        log_info("saved %zu snapshots to %s", d->ring.n, path);
}

/* trace-cgroups names directories; the programs get them as open fds. */
static int open_trace_cgroups(struct daemon *d, struct collector_options *o)
{
    _cleanup_free_ char *copy = strdup(d->cfg.trace_cgroups);
    char *save = NULL, rel[PATH_MAX], path[PATH_MAX * 2];

    if (!copy)
        return -ENOMEM;
    for (char *p = strtok_r(copy, " \t", &save); p; p = strtok_r(NULL, " \t", &save)) {
        int fd;

        if (!d->cgroups || cgroups_normalize(d->cgroups, p, rel, sizeof(rel)) < 0)
            return log_error_errno(EINVAL, "trace-cgroups: %s is not a cgroup v2 path", p);
        snprintf(path, sizeof(path), "%s%s", cgroups_mount(d->cgroups), rel);
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            return log_error_errno(errno, "trace-cgroups: %s: %s", path, strerror(errno));
        o->trace_cgroup_fds[o->ntrace_cgroups++] = fd;
    }
    return 0;
}

static int open_collector(struct daemon *d)
{
    struct collector_options o = d->cfg.collector;
    int r;

    r = open_trace_cgroups(d, &o);
    if (r == 0) {
        r = collector_open(&o, &d->collector);
        if (r < 0)
            log_error("loading the BPF collector: %s%s", strerror(-r),
                      r == -EPERM ? " (offcpud needs root: CAP_BPF and CAP_PERFMON)" : "");
    }
    /* the map holds its own references to the cgroups */
    for (uint32_t i = 0; i < o.ntrace_cgroups; i++)
        close(o.trace_cgroup_fds[i]);
    return r;
}

/* Conditions that leave answers without names yet fail nothing: said at start,
 * where whoever installed offcpud looks. */
static void warn_about_blind_spots(void)
{
    /* the kernel's own number for the first PID namespace (PROC_PID_INIT_INO) */
    const ino_t init_pid_ns = 0xEFFFFFFCu;
    _cleanup_fclose_ FILE *f = fopen("/proc/kallsyms", "re");
    int r = f ? kallsyms_shows_addresses(f) : -errno;
    struct stat st;

    if (r <= 0)
        log_warning("kernel frames cannot be named: /proc/kallsyms %s",
                    r == 0 ? "hides its addresses from offcpud (it needs CAP_SYSLOG)"
                           : strerror(-r));
    if (stat("/proc/self/ns/pid", &st) == 0 && st.st_ino != init_pid_ns)
        log_warning("offcpud runs in a PID namespace of its own: the kernel's process ids "
                    "are not its /proc's, so user frames cannot be named (run it in the "
                    "host's PID namespace)");
}

static int start(struct daemon *d)
{
    int r;

    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (d->epfd < 0)
        return log_error_errno(errno, "epoll_create1: %s", strerror(errno));
    d->started_mono_ns = clock_ns(CLOCK_MONOTONIC);
    d->last_drain_mono_ns = d->started_mono_ns;
    ring_init(&d->ring, d->cfg.retention_ns, d->cfg.memory_limit);
    restore_ring(d);
    resolve_access_group(d);
    r = symbolizer_new(&d->sym);
    if (r < 0)
        return log_error_errno(r, "setting up the symbolizer: %s", strerror(-r));
    r = cgroups_new(&d->cgroups);
    if (r < 0)
        log_warning("no cgroup v2 mount (%s): cgroup paths unknown", strerror(-r));
    warn_about_blind_spots();
    r = open_collector(d);
    if (r < 0)
        return r;
    return server_new(d, &d->server);
}

static void stop(struct daemon *d)
{
    d->server = server_free(d->server);
    d->collector = collector_free(d->collector);
    ring_done(&d->ring);
    d->cgroups = cgroups_free(d->cgroups);
    d->sym = symbolizer_free(d->sym);
    if (d->epfd >= 0)
        close(d->epfd);
}

int main(int argc, char **argv)
{
    struct daemon d = {.epfd = -1};
    int r;

    log_setup();
    config_defaults(&d.cfg);
    d.argc = argc;
    d.argv = argv;
    r = parse_args(argc, argv, &d.cfg);
    if (r != 0)
        return r > 0 ? EXIT_SUCCESS : 2;
    r = start(&d);
    if (r == 0)
        r = run(&d);
    if (r == 0)
        save_ring(&d);
    stop(&d);
    return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
