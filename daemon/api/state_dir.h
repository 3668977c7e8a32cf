/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The state directory: where the ring outlives a restart (the ring file,
 * written at exit and at compaction) and a crash (the journal, appended to
 * at every drain). Every access goes through owned_files.h: a directory or
 * file someone else could control is refused with one log line, and the
 * daemon runs on without the history it would have given.
 */
#ifndef STATE_DIR_H
#define STATE_DIR_H

#include <stdbool.h>
#include <stdint.h>

#include "journal.h"
#include "state_origin.h"

struct daemon;
struct snapshot;

struct state_dir_stats {
    uint64_t cut_tails;     /* torn journal tails cut at start */
    uint64_t errors;        /* files refused or set aside, writes that failed */
    uint64_t written_bytes; /* into the state directory since start */
    uint64_t compactions;
};

/* What the start restored, and whose it was: said at start and in status. */
struct state_restored {
    size_t snapshots;            /* 0: nothing */
    int64_t oldest_ns, newest_ns; /* CLOCK_REALTIME */
    int64_t at_ns;               /* when: this start */
    enum origin_relation origin;
    char version[32]; /* of the daemon that wrote it; "" where unknown */
};

struct state_dir {
    int dirfd;      /* -1: history is not kept */
    int journal_fd; /* -1: no journal to append to */
    bool failing;   /* the last write failed: said once, not at every drain */
    uint64_t ring_file_bytes; /* the ring file's size, as last written or read */
    struct journal_writer journal;
    struct state_dir_stats stats;
    struct state_restored restored;
};

#define STATE_DIR_INIT                                                                             \
    {                                                                                              \
        .dirfd = -1, .journal_fd = -1                                                              \
    }

/* At start: open the directory, rebuild the ring (and the metrics' totals)
 * from the ring file and the journal, and begin a new journal. */
void state_dir_restore(struct daemon *d);

/* After a drain: s, the ring's newest snapshot, into the journal (or, when
 * the journal is full, the whole ring into the ring file). */
void state_dir_journal(struct daemon *d, const struct snapshot *s);

/* At exit, after the last drain: the ring, for the next instance. */
void state_dir_save(struct daemon *d);

void state_dir_close(struct state_dir *st);

#endif
