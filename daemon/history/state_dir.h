/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The state directory: where the ring outlives a restart (the ring file,
 * written at exit and at compaction) and a crash (the journal, appended to
 * at every timer's drain, never by a query). Every access goes through owned_files.h: a directory
 * or file someone else could control is refused with one log line, and the daemon runs on without
 * the history it would have given.
 */
#ifndef STATE_DIR_H
#define STATE_DIR_H

#include <stdbool.h>
#include <stdint.h>

#include "journal.h"
#include "state_origin.h"

struct config;
struct metrics;
struct ring;
struct snapshot;

struct state_dir_stats {
    uint64_t cut_tails;     /* torn journal tails cut at start */
    uint64_t errors;        /* files refused or set aside, writes that failed */
    uint64_t written_bytes; /* into the state directory since start */
    uint64_t compactions;
};

/* What the start restored, and whose it was: said at start and in status. */
struct state_restored {
    size_t snapshots;             /* 0: nothing */
    int64_t oldest_ns, newest_ns; /* CLOCK_REALTIME */
    int64_t at_ns;                /* when: this start */
    enum origin_relation origin;
    char version[32]; /* of the daemon that wrote it; "" where unknown */
};

struct state_dir {
    /* what is kept, by which settings (read at each use: a reload changes
     * journal-size and journal-sync); set at state_dir_restore */
    const struct config *cfg;
    struct ring *ring;
    struct metrics *metrics;  /* its totals; NULL: none */
    int dirfd;                /* -1: history is not kept */
    int journal_fd;           /* -1: no journal to append to */
    bool failing;             /* the last write failed: said once, not at every drain */
    uint64_t ring_file_bytes; /* the ring file's size, as last written or read */
    size_t unjournaled;       /* the ring's newest snapshots kept since the last journaling */
    struct journal_writer journal;
    struct state_dir_stats stats;
    struct state_restored restored;
};

#define STATE_DIR_INIT                                                                             \
    {                                                                                              \
        .dirfd = -1, .journal_fd = -1                                                              \
    }

/* At start: open the directory cfg names, rebuild ring (and the metrics'
 * totals, metrics non-NULL) from the ring file and the journal, and begin a
 * new journal. st keeps the three for the calls below. */
void state_dir_restore(struct state_dir *st, const struct config *cfg, struct ring *ring,
                       struct metrics *metrics);

/* After a timer's drain: the snapshots the ring kept since the last time (a
 * query's catch-up's too) into the journal (or, when the journal is full,
 * the whole ring into the ring file). */
void state_dir_journal(struct state_dir *st);

/* At exit, after the last drain: the ring, for the next instance. */
void state_dir_save(struct state_dir *st);

void state_dir_close(struct state_dir *st);

#endif
