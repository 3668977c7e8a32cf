/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ring file: the whole ring (and the metrics' totals), so that a restart
 * or an upgrade keeps the minutes an on-call engineer needs. Written at exit
 * and whenever the journal is compacted, read at start, then the journal on
 * top of it. Versioned and checksummed; a file that is corrupt, foreign or
 * from another version is set aside, never trusted.
 */
#ifndef PERSIST_H
#define PERSIST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "metrics.h"
#include "ring.h"

#define PERSIST_FILE "ring.v1"

/* Write r and m (may be NULL) to f; journal_generation: the last journal
 * whose snapshots r holds (the next instance replays only later ones). */
int ring_save(const struct ring *r, const struct metrics *m, uint64_t journal_generation, FILE *f);

/* Add the snapshots of a ring file's content to r (which holds none yet),
 * and its totals to m (a fresh one, or NULL). -EBADMSG when it cannot be
 * trusted: then r and m hold part of it, and are to be reset. */
int ring_load(struct ring *r, struct metrics *m, const unsigned char *buf, size_t len,
              uint64_t *journal_generation);

#endif
