/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a member of the socket group (reading only its own processes, see
 * access.h) was not shown: whose the tasks it asked for are, and how many
 * processes of other users an answer left out.
 */
#ifndef WITHHELD_H
#define WITHHELD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"
#include "query.h"

/* The uid of the newest record in q's window that q selects and q->uid may
 * not read; UID_UNKNOWN if none (or not known: setuid, not dumpable). */
uint32_t withheld_owner(const struct ring *r, const struct query *q);

/* How many processes (by pid) have records in q's window that q selects and
 * q->uid may not read. */
size_t withheld_processes(const struct ring *r, const struct query *q);

/* {pid, tid} as q asked (null where it did not): how the errors about
 * tasks name them. */
json_t *task_ids_json(const struct query *q);

/* io.offcpud.OtherUsersTasks: what q asked for is uid's, and the rule that
 * keeps it from the caller. */
json_t *withheld_error(struct daemon *d, const struct query *q, uint32_t uid);

#endif
