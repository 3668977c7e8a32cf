/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Telling apart why a systemd unit selected nothing: a unit offcpud has
 * seen (its cgroup exists, or the ring holds its records) simply had no
 * off-CPU time in the window; otherwise the unit is unknown, or it is
 * known to systemd (a unit file) but has no cgroup: it has not run.
 */
#ifndef UNITS_H
#define UNITS_H

#include <jansson.h>

#include "daemon.h"

/* NULL when the unit has been seen, else the Varlink error to reply:
 * io.offcpud.UnitNotFound or io.offcpud.UnitWithoutCgroup. */
json_t *unit_unseen_error(struct daemon *d, const char *unit);

#endif
