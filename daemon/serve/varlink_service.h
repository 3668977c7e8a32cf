/* SPDX-License-Identifier: GPL-2.0-only */
/* org.varlink.service: what every Varlink service answers about itself. */
#ifndef VARLINK_SERVICE_H
#define VARLINK_SERVICE_H

#include "varlink_server.h"

struct vl_interface {
    const char *name;
    const char *description; /* the interface definition, in Varlink's IDL */
};

/* Bind GetInfo and GetInterfaceDescription, describing org.varlink.service
 * and the interfaces listed (an array of n that must outlive the server). */
int varlink_service_bind(struct vl_server *s, const struct vl_interface *interfaces, size_t n);

#endif
