/* SPDX-License-Identifier: GPL-2.0-only */
/* One Varlink call to offcpud, after checking that offcpud is who answers. */
#ifndef DAEMON_CALL_H
#define DAEMON_CALL_H

#include <jansson.h>
#include <stdbool.h>

#include "cli.h"

/* Calls method with params (borrowed) on g->socket; on success *ret is the
 * reply's parameters (owned by the caller). On failure prints the one-line
 * cause and returns its exit code. */
int daemon_call(const struct globals *g, const char *method, json_t *params, json_t **ret);

/* daemon_call, for a caller that shows what it may not see as withheld: a
 * PermissionDenied or OtherUsersTasks sets *refused and returns EXIT_OK with
 * *ret NULL. */
int daemon_call_refusable(const struct globals *g, const char *method, json_t *params, json_t **ret,
                          bool *refused);

#endif
