/* SPDX-License-Identifier: GPL-2.0-only */
/* Who is at the other end of a Unix socket, as the kernel vouches for it. */
#ifndef PEER_H
#define PEER_H

#include <stdbool.h>
#include <sys/types.h>

#define PEER_GROUPS_MAX 64

struct peer {
    pid_t pid;
    uid_t uid;
    gid_t gid;
    gid_t groups[PEER_GROUPS_MAX]; /* supplementary groups, from SO_PEERGROUPS */
    int ngroups;                   /* -1 when the peer has more than fit */
};

/* The credentials of the peer connected on fd (SO_PEERCRED, SO_PEERGROUPS). */
int peer_of(int fd, struct peer *ret);

bool peer_in_group(const struct peer *p, gid_t gid);

#endif
