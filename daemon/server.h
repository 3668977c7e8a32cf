/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Varlink socket: accepts connections (its own, or one systemd passed),
 * reads NUL-framed requests, hands them to the API and queues the replies,
 * never blocking on a slow client.
 */
#ifndef SERVER_H
#define SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct daemon;
struct server;

#define PEER_GROUPS_MAX 64

struct peer {
    pid_t pid;
    uid_t uid;
    gid_t gid;
    gid_t groups[PEER_GROUPS_MAX]; /* supplementary groups, from SO_PEERGROUPS */
    int ngroups;                   /* -1 when the peer has more than fit */
};

bool peer_in_group(const struct peer *p, gid_t gid);

struct server_stats {
    uint64_t refused_max_clients;
    uint64_t refused_max_clients_per_uid;
    uint64_t idle_closed;     /* connections closed after idle-timeout */
    uint64_t reply_too_large; /* replies over a client's output limit */
};

int server_new(struct daemon *d, struct server **ret);
struct server *server_free(struct server *s);
size_t server_clients(const struct server *s);
void server_get_stats(const struct server *s, struct server_stats *ret);

/* After a reload: the idle timeout's timer and, on a socket file of our own, its
 * group (the limits are read as needed). */
int server_apply_config(struct server *s);

#endif
