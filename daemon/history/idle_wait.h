/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --no-idle: is a record an idle wait, a thread waiting for work rather than
 * held up? Told from its state and frames alone, as the man page says it:
 *  - only a wait in S (sleeping) can be idle: D (I/O), R and the others never;
 *  - idle when its kernel stack is in poll, ppoll, select, pselect6,
 *    epoll_wait, epoll_pwait(2), nanosleep or clock_nanosleep (an event loop
 *    with nothing to do, a timer loop);
 *  - or in a futex wait whose innermost pthread function (on the user stack,
 *    from the leaf) is a condition-variable wait (a worker pool with nothing
 *    queued): a mutex, rwlock or join wait, and the re-lock after a
 *    condition variable's wakeup, stay, as do reads of pipes and sockets.
 */
#ifndef IDLE_WAIT_H
#define IDLE_WAIT_H

#include <stdbool.h>

#include "intern.h"
#include "snapshot.h"

bool idle_wait(const struct intern *in, const struct record *rec);

#endif
