/* SPDX-License-Identifier: GPL-2.0-only */
#include "owned_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "macro.h"

/* Ours alone: owned by the daemon's user (root, in service) and writable by
 * no one else. Else why says what is wrong. */
static int check_owner_and_mode(const struct stat *st, char why[OWNED_WHY_MAX])
{
    if (st->st_uid != geteuid()) {
        snprintf(why, OWNED_WHY_MAX, "is owned by uid %u, not by uid %u", (unsigned)st->st_uid,
                 (unsigned)geteuid());
        return -EPERM;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, OWNED_WHY_MAX, "may be written by group or others (mode %04o)",
                 (unsigned)(st->st_mode & 07777));
        return -EPERM;
    }
    return 0;
}

static int open_error(int err, const char *what, char why[OWNED_WHY_MAX])
{
    if (err == ELOOP)
        snprintf(why, OWNED_WHY_MAX, "is a symlink");
    else if (err == ENOTDIR)
        snprintf(why, OWNED_WHY_MAX, "is not a %s", what);
    else
        snprintf(why, OWNED_WHY_MAX, "cannot be opened: %s", strerror(err));
    return -err;
}

int owned_dir_open(const char *path, char why[OWNED_WHY_MAX])
{
    _cleanup_close_ int fd = -1;
    struct stat st;
    int r;

    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return open_error(errno, "directory", why);
    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return open_error(errno, "directory", why);
    if (fstat(fd, &st) < 0)
        return open_error(errno, "directory", why);
    r = check_owner_and_mode(&st, why);
    if (r < 0)
        return r;
    r = fd;
    fd = -1;
    return r;
}

static int read_fully(int fd, unsigned char *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO; /* shrunk under us */
        got += n;
    }
    return 0;
}

int owned_file_read(int dirfd, const char *name, size_t max_bytes, unsigned char **ret,
                    size_t *ret_len, char why[OWNED_WHY_MAX])
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    _cleanup_close_ int fd =
        openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    _cleanup_free_ unsigned char *buf = NULL;
    struct stat st;
    int r;

    if (fd < 0 && errno == ENOENT)
        return -ENOENT;
    if (fd < 0)
        return open_error(errno, "regular file", why);
    if (fstat(fd, &st) < 0)
        return open_error(errno, "regular file", why);
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, OWNED_WHY_MAX, "is not a regular file");
        return -EINVAL;
    }
    r = check_owner_and_mode(&st, why);
    if (r < 0)
        return r;
    if ((uint64_t)st.st_size > max_bytes) {
        snprintf(why, OWNED_WHY_MAX, "is larger than %zu bytes", max_bytes);
        return -EFBIG;
    }
    buf = malloc(st.st_size ? st.st_size : 1);
    if (!buf)
        return -ENOMEM;
    r = read_fully(fd, buf, st.st_size);
    if (r < 0) {
        snprintf(why, OWNED_WHY_MAX, "cannot be read: %s", strerror(-r));
        return r;
    }
    *ret = buf;
    *ret_len = st.st_size;
    buf = NULL;
    return 0;
}

int owned_file_create(int dirfd, const char *tmp_name)
{
    for (int attempt = 0;; attempt++) {
        int fd =
            openat(dirfd, tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

        if (fd >= 0 || errno != EEXIST || attempt > 0)
            return fd >= 0 ? fd : -errno;
        /* left by a crash, or planted: unlinkat removes a symlink itself,
         * never what it points to */
        if (unlinkat(dirfd, tmp_name, 0) < 0)
            return -errno;
    }
}

int owned_file_commit(int dirfd, int fd, const char *tmp_name, const char *name)
{
    /* the data first, so that a crash never leaves an empty file in place
     * of a good one; then the rename itself */
    if (fsync(fd) < 0 || renameat(dirfd, tmp_name, dirfd, name) < 0) {
        int r = -errno;

        unlinkat(dirfd, tmp_name, 0);
        return r;
    }
    return fsync(dirfd) < 0 ? -errno : 0;
}

int owned_file_set_aside(int dirfd, const char *name, char *aside, size_t size)
{
    snprintf(aside, size, "%s.untrusted-%lld", name,
             (long long)(clock_ns(CLOCK_REALTIME) / (int64_t)NSEC_PER_SEC));
    return renameat(dirfd, name, dirfd, aside) < 0 ? -errno : 0;
}
