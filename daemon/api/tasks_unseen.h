/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Telling apart why a pid or tid selected nothing in a window: a task that
 * ran there but did not block as asked (an empty answer, no error); one
 * offcpud never saw; one that exited, whose records lie outside the window;
 * one of another user's, which a member of the socket group may not read.
 */
#ifndef TASKS_UNSEEN_H
#define TASKS_UNSEEN_H

#include <jansson.h>

#include "daemon.h"
#include "query.h"

/* NULL when q's pid or tid (if any) has records in q's window, or runs now;
 * else the Varlink error to reply: io.offcpud.TaskNotSeen,
 * io.offcpud.TaskExited, or io.offcpud.OtherUsersTasks where its records
 * are another user's than q->uid. */
json_t *task_unseen_error(struct daemon *d, const struct query *q);

#endif
