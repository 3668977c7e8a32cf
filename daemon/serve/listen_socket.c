/* SPDX-License-Identifier: GPL-2.0-only */
#include "listen_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "macro.h"

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

/* Others could replace a socket in a directory they may write to, and every
 * client would then talk to their server: the directory must be root's and
 * writable by no one else, unless sticky (like /tmp: no one removes what is
 * not theirs) or the runtime directory systemd made for us. */
static int check_parent(const char *path)
{
    const char *runtime = getenv("RUNTIME_DIRECTORY");
    char buf[PATH_MAX];
    struct stat st;
    char *dir;

    snprintf(buf, sizeof(buf), "%s", path);
    dir = dirname(buf);
    if (stat(dir, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    if (runtime && strcmp(runtime, dir) == 0)
        return 0;
    if (st.st_mode & S_ISVTX)
        return 0;
    return st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) ? 0 : -EPERM;
}

/* A socket file left by a dead daemon is removed; a live one is not taken
 * over; anything else is not ours to remove. */
static int clear_stale_socket(const struct sockaddr_un *sa)
{
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct stat st;

    if (fd < 0)
        return -errno;
    if (lstat(sa->sun_path, &st) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISSOCK(st.st_mode))
        return -EEXIST;
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
    r = check_parent(path);
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

int listen_socket_open(struct listen_socket *ls, const char *path, gid_t gid)
{
    *ls = (struct listen_socket){.fd = -1};
    snprintf(ls->path, sizeof(ls->path), "%s", path);
    ls->fd = inherited_socket();
    if (ls->fd != -ENOENT)
        return ls->fd < 0 ? ls->fd : 0;
    ls->fd = bind_socket(path, gid, &ls->file);
    if (ls->fd < 0)
        return ls->fd;
    ls->bound_here = true;
    ls->gid = gid;
    return 0;
}

int listen_socket_set_group(struct listen_socket *ls, gid_t gid)
{
    int r;

    if (!ls->bound_here || ls->gid == gid)
        return 0;
    r = socket_file_set_access(ls->path, &ls->file, gid);
    if (r == 0)
        ls->gid = gid;
    return r;
}

void listen_socket_close(struct listen_socket *ls)
{
    if (ls->fd >= 0)
        close(ls->fd);
    if (ls->bound_here)
        unlink(ls->path);
    ls->fd = -1;
    ls->bound_here = false;
}
