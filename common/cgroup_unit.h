/* SPDX-License-Identifier: GPL-2.0-only */
/* The systemd unit of a cgroup, read from its path: what the metrics label
 * series with and what offcpuctl's --unit and top --by unit select by. */
#ifndef CGROUP_UNIT_H
#define CGROUP_UNIT_H

#include <stddef.h>

/* The systemd unit a cgroup path belongs to: its innermost component named
 * like a unit (foo.service, session-2.scope, user.slice, ...); "" if none. */
const char *cgroup_unit(const char *cgroup, char *buf, size_t size);

#endif
