/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a caller may read, from its credentials: root everything, members of
 * the socket's group the stacks of their own processes (or all, with
 * group-access = all), anyone else only the service's introspection.
 */
#ifndef ACCESS_H
#define ACCESS_H

#include <stdbool.h>
#include <sys/types.h>

#include "peer.h"

enum access {
    ACCESS_NONE, /* introspection only */
    ACCESS_OWN,  /* the stacks of processes running as its own uid */
    ACCESS_ALL,
};

struct access_policy {
    gid_t gid;      /* the reading group; (gid_t)-1 when there is none */
    bool group_all; /* its members see every process, not only their own */
};

enum access access_of(const struct access_policy *policy, const struct peer *p);

/* Kernel frames go to non-root callers only where the kernel would let them
 * profile the kernel themselves: perf_event_paranoid <= 1. */
bool access_kernel_frames_hidden(const struct peer *p);

#endif
