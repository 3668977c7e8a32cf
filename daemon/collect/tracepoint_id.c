/* SPDX-License-Identifier: GPL-2.0-only */
#include "tracepoint_id.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"

/* Where the child mounts it: a directory every kernel with tracefs makes */
#define TRACEFS "/sys/kernel/tracing"

/* In the child, between fork and _exit: system calls only (the parent may have
 * had other threads, whose locks the child inherits held). */
_Noreturn static void read_id_in_own_namespace(const char *path, int out)
{
    char buf[32];
    ssize_t n;
    int fd;

    /* MS_PRIVATE first: the mount must not propagate back to the daemon's */
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("tracefs", TRACEFS, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        _exit(1);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        _exit(2);
    n = read(fd, buf, sizeof(buf));
    if (n <= 0 || write(out, buf, (size_t)n) != n)
        _exit(3);
    _exit(0);
}

long tracepoint_id_unmounted(const char *category, const char *name)
{
    _cleanup_close_ int rd = -1, wr = -1;
    char path[256], buf[32] = "";
    int fds[2], status;
    ssize_t n = 0;
    char *end;
    pid_t pid;
    long id;

    if ((size_t)snprintf(path, sizeof(path), TRACEFS "/events/%s/%s/id", category, name) >=
        sizeof(path))
        return -ENAMETOOLONG;
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    rd = fds[0];
    wr = fds[1];
    pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0)
        read_id_in_own_namespace(path, wr);
    close(wr);
    wr = -1;
    while (n < (ssize_t)sizeof(buf) - 1) {
        ssize_t r = read(rd, buf + n, sizeof(buf) - 1 - (size_t)n);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += r;
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -errno;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        /* 1: no mount (no CAP_SYS_ADMIN, no tracefs); 2: no such tracepoint */
        return WIFEXITED(status) && WEXITSTATUS(status) == 2 ? -ENOENT : -EPERM;
    errno = 0;
    id = strtol(buf, &end, 10);
    if (errno || end == buf || id <= 0)
        return -EBADMSG;
    return id;
}

int tracepoint_perf_event(long id)
{
    struct perf_event_attr attr = {
        .type = PERF_TYPE_TRACEPOINT,
        .size = sizeof(attr),
        .config = (__u64)id,
    };
    /* pid -1, cpu 0: the program runs for the tracepoint on every CPU, as
     * libbpf's own tracepoint attach does */
    int fd = (int)syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);

    return fd < 0 ? -errno : fd;
}
