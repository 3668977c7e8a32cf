/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The listening Unix socket: the one systemd passed (socket activation), or
 * one bound here, 0660 root:group (0600 root:root without a group), its
 * access set before listen() so that no one connects in between.
 */
#ifndef LISTEN_SOCKET_H
#define LISTEN_SOCKET_H

#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

struct listen_socket {
    int fd;
    bool bound_here;  /* we made the socket file, so we remove it */
    struct stat file; /* ... and this is it */
    gid_t gid;        /* the group it was given */
    char path[PATH_MAX];
};

/* Take the inherited socket, or bind path. A live daemon's socket is not
 * taken over (-EADDRINUSE), anything but a socket at path is not removed
 * (-EEXIST), a directory others could replace the socket in is refused
 * (-EPERM); socket activation with anything but one listening Unix stream
 * socket is -EINVAL. */
int listen_socket_open(struct listen_socket *ls, const char *path, gid_t gid);

/* Give the socket file we bound to another group ((gid_t)-1: none). -ESTALE
 * when the file at the path is no longer the one we made. */
int listen_socket_set_group(struct listen_socket *ls, gid_t gid);

void listen_socket_close(struct listen_socket *ls);

#endif
