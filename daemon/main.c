/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpud: keeps off-CPU stacks of every task, answers queries on a socket. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "api.h"
#include "command_line.h"
#include "daemon.h"
#include "drain.h"
#include "kallsyms.h"
#include "kernel_features.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics_endpoint.h"
#include "macro.h"
#include "state_dir.h"

/* trace-cgroups names directories; the programs get them as open fds. */
static int open_trace_cgroups(struct daemon *d, int *fds, uint32_t *n)
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
        fds[(*n)++] = fd;
    }
    return 0;
}

static int open_collector(struct daemon *d)
{
    char missing[512];
    int fds[COLLECTOR_TRACE_CGROUPS_MAX];
    uint32_t n = 0;
    int r;

    r = kernel_features_missing(missing, sizeof(missing));
    if (r > 0) {
        struct utsname u = {0};

        uname(&u);
        return log_error_errno(
            EOPNOTSUPP,
            "this kernel (%s) lacks %s: offcpud needs Linux " KERNEL_FEATURES_FLOOR " or later",
            u.release, missing);
    }
    r = open_trace_cgroups(d, fds, &n);
    if (r == 0) {
        r = collector_open(&d->cfg.collector, fds, n, &d->collector);
        if (r < 0)
            log_error("loading the BPF collector: %s%s", strerror(-r),
                      r == -EPERM ? " (offcpud needs root: CAP_BPF and CAP_PERFMON)" : "");
    }
    /* the map holds its own references to the cgroups */
    for (uint32_t i = 0; i < n; i++)
        close(fds[i]);
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
    /* before the restore, which gives them back their totals */
    if (*d->cfg.metrics_listen && metrics_new(d->cfg.metrics_max_cgroups, &d->metrics) < 0)
        return log_error_errno(ENOMEM, "setting up the metrics: out of memory");
    state_dir_restore(&d->state, &d->cfg, &d->ring, d->metrics);
    lifecycle_apply_settings(d);
    r = symbolizer_new(d->cfg.symbol_memory, &d->sym);
    if (r < 0)
        return log_error_errno(r, "setting up the symbolizer: %s", strerror(-r));
    r = cgroups_new(&d->cgroups);
    if (r < 0)
        log_warning("no cgroup v2 mount (%s): cgroup paths unknown", strerror(-r));
    warn_about_blind_spots();
    r = open_collector(d);
    if (r < 0)
        return r;
    r = listen_socket_open(&d->socket, d->cfg.socket_path, d->access.gid);
    if (r == -EINVAL)
        return log_error_errno(r, "socket activation: expected one listening Unix stream socket");
    if (r < 0)
        return log_error_errno(r, "cannot listen on %s: %s", d->cfg.socket_path,
                               r == -EADDRINUSE ? "another offcpud is listening there"
                               : r == -EEXIST   ? "it exists and is not a socket (offcpud "
                                                  "removes nothing but a stale socket there)"
                               : r == -EPERM    ? "its directory may be written by others, who "
                                                  "could replace the socket (make it root's, "
                                                  "not group- or world-writable, or sticky)"
                                                : strerror(-r));
    r = vl_server_new(d->epfd, d->socket.fd, &d->limits, &d->access, &d->server);
    if (r == 0)
        r = api_bind(d->server, d);
    if (r < 0)
        return log_error_errno(r, "setting up the server: %s", strerror(-r));
    return metrics_endpoint_start(d);
}

static void stop(struct daemon *d)
{
    metrics_endpoint_stop(d);
    d->building = snapshot_build_abandon(d->building);
    d->metrics = metrics_free(d->metrics);
    d->server = vl_server_free(d->server);
    listen_socket_close(&d->socket);
    d->collector = collector_free(d->collector);
    state_dir_close(&d->state);
    ring_done(&d->ring);
    d->cgroups = cgroups_free(d->cgroups);
    d->sym = symbolizer_free(d->sym);
    if (d->epfd >= 0)
        close(d->epfd);
}

int main(int argc, char **argv)
{
    struct daemon d = {.epfd = -1, .socket = {.fd = -1}, .state = STATE_DIR_INIT};
    int r;

    log_setup();
    config_defaults(&d.cfg);
    d.argc = argc;
    d.argv = argv;
    r = command_line_parse(argc, argv, &d.cfg);
    if (r != 0)
        return r > 0 ? EXIT_SUCCESS : 2;
    r = start(&d);
    if (r == 0)
        r = lifecycle_run(&d);
    if (r == 0) {
        /* what the last interval collected is part of what is saved */
        collector_release_held(d.collector);
        drain_run(&d, 0);
        state_dir_save(&d.state);
    }
    stop(&d);
    return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
