/* SPDX-License-Identifier: GPL-2.0-only */
#include "peer.h"

#include <errno.h>
#include <sys/socket.h>

int peer_of(int fd, struct peer *p)
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
