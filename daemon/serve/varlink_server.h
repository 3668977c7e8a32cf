/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A generic Varlink server: accepts connections on a listening socket, reads
 * NUL-framed requests, checks each against the method bound to its name
 * (parameters, the caller's access), calls it, and queues the reply, never
 * blocking on a slow client. Every resource a client controls is limited:
 * connections (overall and per uid: conn_table.h), request size and time,
 * queued output, idle time.
 * It knows nothing of what the methods do.
 */
#ifndef VARLINK_SERVER_H
#define VARLINK_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "access.h"
#include "conn_table.h"
#include "peer.h"

struct vl_server;

enum vl_param_type { VL_INT, VL_STRING, VL_STRING_ARRAY, VL_BOOL };

/* A method's parameter; a method's list ends with a NULL name. A null value
 * is the same as an absent one (Varlink's optional fields). */
struct vl_param {
    const char *name;
    enum vl_param_type type;
    bool required;
};

/* Answer one call whose parameters passed the checks: a reply or an error
 * (vl_reply_new, vl_error_new), as a new reference. */
typedef json_t *(*vl_method_fn)(void *userdata, const struct peer *peer, json_t *params);

struct vl_method {
    const char *name; /* "interface.Method" */
    const struct vl_param *params;
    enum access needs;
    vl_method_fn call;
};

/* Connections root may open beyond max-clients (exempt_reserve): a flood
 * of others' clients must not lock out the on-call engineer. */
#define VL_ROOT_RESERVE 8

struct vl_server_limits {
    struct conn_limits conns; /* the per-peer cap per uid; root is exempt */
    uint32_t request_limit;   /* bytes of one request */
    uint64_t output_limit;    /* bytes queued for one client */
};

struct vl_server_stats {
    uint64_t requests;
    uint64_t request_errors;  /* every error answered, whichever layer found it */
    uint64_t reply_too_large; /* replies over a client's output limit */
    struct conn_stats conns;
};

/* Serve listen_fd (not owned) from the epoll loop epfd. listen_fd and epfd
 * may be -1 for a server that only answers vl_server_call (fuzzers, tests).
 * The limits and the policy are read as needed: they may change. */
int vl_server_new(int epfd, int listen_fd, const struct vl_server_limits *limits,
                  const struct access_policy *policy, struct vl_server **ret);
struct vl_server *vl_server_free(struct vl_server *s);

/* Bind methods (an array of n, which must outlive the server) to userdata. */
int vl_server_bind(struct vl_server *s, const struct vl_method *methods, size_t n, void *userdata);

/* Answer one request as if peer had sent it on a connection. *oneway is set
 * when the caller asked for no reply. Returns a new reference. */
json_t *vl_server_call(struct vl_server *s, const struct peer *peer, json_t *msg, bool *oneway);

/* After the limits changed. */
int vl_server_limits_changed(struct vl_server *s);

size_t vl_server_clients(const struct vl_server *s);
void vl_server_get_stats(const struct vl_server *s, struct vl_server_stats *ret);

/* {"parameter": name} as org.varlink.service.InvalidParameter. */
json_t *vl_invalid_parameter(const char *name);

#endif
