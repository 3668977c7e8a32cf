/* SPDX-License-Identifier: GPL-2.0-only */
/* The state directory: where the ring outlives a restart. */
#ifndef STATE_DIR_H
#define STATE_DIR_H

#include "daemon.h"

/* What the previous instance saw: its snapshots, if the file can be trusted;
 * one that cannot is set aside, never read again. */
void state_dir_restore(struct daemon *d);

/* At exit: the last interval too, then the ring, for the next instance. */
void state_dir_save(struct daemon *d);

#endif
