/* SPDX-License-Identifier: GPL-2.0-only */
/* The systemd unit of a cgroup, read from its path: what the metrics label
 * series with and what offcpuctl's --unit and top --by unit select by. */
#ifndef CGROUP_UNIT_H
#define CGROUP_UNIT_H

#include <stdbool.h>
#include <stddef.h>

/* The systemd unit a cgroup path belongs to: its innermost component named
 * like a unit (foo.service, session-2.scope, user.slice, ...); "" if none. */
const char *cgroup_unit(const char *cgroup, char *buf, size_t size);

/* Is name a unit's name ("foo.service", "user.slice"): no '/', a unit's suffix? */
bool unit_name_valid(const char *name);

/* Does the cgroup at path belong to unit: is a component of it named so? A
 * unit that restarted has a new cgroup (a new id) at the same path. */
bool cgroup_in_unit(const char *path, const char *unit);

#endif
