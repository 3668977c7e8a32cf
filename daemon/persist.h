/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ring on disk, so that a restart or an upgrade keeps the minutes an
 * on-call engineer needs. Written at exit (to a temporary file, then renamed),
 * read at start. The format is versioned and checksummed; a file that is
 * corrupt, foreign or from another version is set aside, never trusted.
 */
#ifndef PERSIST_H
#define PERSIST_H

#include <stddef.h>

#include "ring.h"

#define PERSIST_FILE "ring.v1"

int ring_save(const struct ring *r, const char *path);

/* Add the snapshots saved in path to r (which holds no snapshot yet).
 * -ENOENT when there is no file; -EBADMSG when it cannot be trusted. */
int ring_load(struct ring *r, const char *path, size_t max_bytes);

#endif
