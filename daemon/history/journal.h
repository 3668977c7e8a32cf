/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The journal: every snapshot appended to the state directory as it is
 * drained, so that a crash (SIGKILL, an OOM or watchdog kill; a power cut too
 * with journal-sync) loses at most the interval being collected, not all
 * since the last clean stop. Append-only, each record checksummed: what a
 * crash tore at the end is cut at the next start, and what came before it
 * is kept. Bounded: when the next record would pass journal-size, the ring
 * file is written whole instead (compaction) and a new journal, of the next
 * generation, begins. At start the ring is rebuilt from the ring file, then
 * from a journal of a later generation than the ring file holds.
 *
 * Layout (host byte order):
 *   header   magic[8] "OFFCPUDJ", u32 version, u32 byte-order mark,
 *            u64 generation, u64 FNV-1a of the 24 bytes before it
 *   records  u32 length stored, u32 length inflated (0: stored as is), u64
 *            FNV-1a of what is stored, then the payload (deflated where that
 *            saves room): u32 strings, u32 stacks, those strings and stacks
 *            (the ids this journal has not defined yet, or defined for other
 *            content: ids are reused), then one snapshot (snapshot_codec.h)
 *
 * Only ids are written for what an earlier record defined, so a steady
 * workload costs a few dozen bytes per record and interval.
 */
#ifndef JOURNAL_H
#define JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "ring.h"

#define JOURNAL_FILE        "journal.v1"
#define JOURNAL_HEADER_SIZE 32

struct journal_definition; /* what a record being made defines */

/* What the journal file holds so far. */
struct journal_writer {
    uint64_t generation;
    uint64_t bytes; /* header and records */
    uint64_t records;
    /* by intern id: the serial of the content the journal defined for the
     * id (0: none) */
    uint64_t *string_serial, *stack_serial;
    size_t nstrings, nstacks;
    struct journal_definition *pending; /* undone if the record is not written */
    size_t npending, pending_cap;
};

/* A writer for a new journal of this generation; header is what begins it. */
void journal_writer_init(struct journal_writer *w, uint64_t generation,
                         unsigned char header[JOURNAL_HEADER_SIZE]);
void journal_writer_done(struct journal_writer *w);

/* s as one record, in *ret (malloc'ed) of *ret_len bytes. What it defines
 * counts as in the journal from now on: journal_written() once it is in the
 * file, journal_not_written() if it could not be written. */
int journal_encode(struct journal_writer *w, const struct intern *in, const struct snapshot *s,
                   char **ret, size_t *ret_len);
void journal_written(struct journal_writer *w, size_t len);
void journal_not_written(struct journal_writer *w);

struct journal_replay {
    uint64_t generation;
    uint64_t records;   /* snapshots put back */
    uint64_t cut_bytes; /* a torn tail: from the first record that fails its checksum */
    int error;          /* a record whose checksum holds but which does not read: -EBADMSG */
};

/* Put the snapshots of a journal's content (buf, len) into r, each counted in
 * m (may be NULL) too, unless the ring file holds them already (its
 * generation is after or at the journal's): then out->records is 0.
 * -EBADMSG when the header is not a journal's; else 0, and out says what was
 * cut or did not read, with everything before it kept. */
int journal_replay(struct ring *r, struct metrics *m, const unsigned char *buf, size_t len,
                   uint64_t ring_generation, struct journal_replay *out);

#endif
