/* SPDX-License-Identifier: GPL-2.0-only */
/* The io.offcpud interface (Dump, Status) and the service's introspection. */
#ifndef API_H
#define API_H

#include "daemon.h"
#include "varlink_server.h"

/* The methods with their parameters, each as daemon/api/io.offcpud.varlink
 * declares it: the interface file is the source, and tests/api checks these
 * tables against it. */
#define API_METHODS 8
extern const struct vl_method api_methods[API_METHODS];

/* The interface file, embedded at build time. */
extern const char offcpud_interface_description[];

/* Bind every method the daemon offers to s. */
int api_bind(struct vl_server *s, struct daemon *d);

#endif
