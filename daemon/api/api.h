/* SPDX-License-Identifier: GPL-2.0-only */
/* The io.offcpud interface (Dump, Status) and the service's introspection. */
#ifndef API_H
#define API_H

#include "daemon.h"
#include "varlink_server.h"

/* Bind every method the daemon offers to s. */
int api_bind(struct vl_server *s, struct daemon *d);

#endif
