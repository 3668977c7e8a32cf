/* SPDX-License-Identifier: GPL-2.0-only */
#include "state_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "duration.h"
#include "log.h"
#include "macro.h"
#include "metrics.h"
#include "owned_files.h"
#include "persist.h"
#include "ring.h"
#include "ring_budget.h"

#define RING_TMP    PERSIST_FILE ".tmp"
#define JOURNAL_TMP JOURNAL_FILE ".tmp"

/* What a state file may weigh: a ring at twice the limit (the limit may have
 * been lowered since), a full journal, and slack for names. */
static size_t read_limit(const struct state_dir *st)
{
    return 2 * st->cfg->memory_limit + st->cfg->journal_size + (64u << 20);
}

/* A write that failed: counted, and said once until writes work again. */
static void write_failed(struct state_dir *st, const char *name, int err)
{
    st->stats.errors++;
    if (!st->failing)
        log_warning("writing %s/%s: %s; until this is fixed, a crash loses history",
                    st->cfg->state_dir, name, strerror(-err));
    st->failing = true;
}

static void write_worked(struct state_dir *st)
{
    if (st->failing)
        log_info("writes to %s work again", st->cfg->state_dir);
    st->failing = false;
}

static int pwrite_all(int fd, const void *data, size_t len, off_t offset)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, offset);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        p += n;
        len -= n;
        offset += n;
    }
    return 0;
}

/* The ring whole, holding the current journal's snapshots too. */
static int write_ring(struct state_dir *st)
{
    int fd = owned_file_create(st->dirfd, RING_TMP), r;
    FILE *f;

    if (fd < 0)
        return fd;
    f = fdopen(fd, "w");
    if (!f) {
        r = -errno;
        close(fd);
        unlinkat(st->dirfd, RING_TMP, 0);
        return r;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    r = ring_save(st->ring, st->metrics, st->journal.generation, f);
    if (r == 0)
        r = owned_file_commit(st->dirfd, fd, RING_TMP, PERSIST_FILE);
    else
        unlinkat(st->dirfd, RING_TMP, 0);
    st->stats.written_bytes += ftell(f) > 0 ? (uint64_t)ftell(f) : 0;
    if (r == 0)
        st->ring_file_bytes = ftell(f);
    fclose(f);
    return r;
}

/* A new, empty journal of this generation in place of the old one. */
static int begin_journal(struct state_dir *st, uint64_t generation)
{
    unsigned char header[JOURNAL_HEADER_SIZE];
    int fd, r;

    if (st->journal_fd >= 0)
        close(st->journal_fd);
    st->journal_fd = -1;
    /* the generation counts even without a file: the ring file says it
     * holds it, so that no older journal is ever replayed again */
    journal_writer_init(&st->journal, generation, header);
    fd = owned_file_create(st->dirfd, JOURNAL_TMP);
    if (fd < 0)
        return fd;
    r = pwrite_all(fd, header, sizeof(header), 0);
    if (r == 0)
        r = owned_file_commit(st->dirfd, fd, JOURNAL_TMP, JOURNAL_FILE);
    else
        unlinkat(st->dirfd, JOURNAL_TMP, 0);
    if (r < 0) {
        close(fd);
        return r;
    }
    st->journal_fd = fd;
    st->stats.written_bytes += sizeof(header);
    return 0;
}

/* The journal is full: the ring file takes everything, and a journal of the
 * next generation begins. Until that works, the old journal stays. */
static void compact(struct state_dir *st)
{
    int r = write_ring(st);

    if (r == 0) {
        r = begin_journal(st, st->journal.generation + 1);
        if (r < 0)
            write_failed(st, JOURNAL_FILE, r);
    } else {
        write_failed(st, PERSIST_FILE, r);
    }
    if (r == 0) {
        st->stats.compactions++;
        write_worked(st);
    }
}

/* The journal's bound: journal-size, or the ring file's size if larger, so
 * that rewriting the ring file at compaction never writes more than the
 * journal did since the last one (a busy ring would else be written over
 * and over, for each journal-size of records). */
static uint64_t journal_bound(const struct state_dir *st)
{
    return st->cfg->journal_size > st->ring_file_bytes ? st->cfg->journal_size
                                                       : st->ring_file_bytes;
}

/* One snapshot into the journal. False when the ring file was written
 * instead (compaction): it holds every snapshot of the ring. */
static bool journal_one(struct state_dir *st, const struct snapshot *s)
{
    _cleanup_free_ char *buf = NULL;
    size_t len;
    int r;

    r = journal_encode(&st->journal, &st->ring->intern, s, &buf, &len);
    if (r < 0) {
        write_failed(st, JOURNAL_FILE, r);
        return true;
    }
    if (st->journal.bytes + len > journal_bound(st)) {
        journal_not_written(&st->journal);
        compact(st);
        return false;
    }
    r = pwrite_all(st->journal_fd, buf, len, st->journal.bytes);
    if (r == 0 && st->cfg->journal_sync && fdatasync(st->journal_fd) < 0)
        r = -errno;
    if (r < 0) {
        /* a torn record would end the journal for the reader: away with it */
        if (ftruncate(st->journal_fd, st->journal.bytes) < 0)
            log_warning("cutting %s/%s: %s", st->cfg->state_dir, JOURNAL_FILE, strerror(errno));
        journal_not_written(&st->journal);
        write_failed(st, JOURNAL_FILE, r);
        return true;
    }
    journal_written(&st->journal, len);
    st->stats.written_bytes += len;
    write_worked(st);
    return true;
}

void state_dir_journal(struct state_dir *st)
{
    /* those evicted meanwhile are gone from the journal's reader too */
    size_t n = st->unjournaled < st->ring->n ? st->unjournaled : st->ring->n;

    st->unjournaled = 0;
    if (st->journal_fd < 0)
        return;
    for (size_t i = st->ring->n - n; i < st->ring->n; i++)
        if (!journal_one(st, st->ring->snaps[i]))
            return;
}

/* A file that cannot be used: refused with one line, and kept aside for a
 * post-mortem, never read again. */
static void refuse(struct state_dir *st, const char *name, const char *why)
{
    char aside[NAME_MAX + 1];

    st->stats.errors++;
    if (owned_file_set_aside(st->dirfd, name, aside, sizeof(aside)) == 0)
        log_warning("%s/%s cannot be trusted (%s): set aside as %s", st->cfg->state_dir, name, why,
                    aside);
    else
        log_warning("%s/%s cannot be trusted (%s), nor set aside: %s", st->cfg->state_dir, name,
                    why, strerror(errno));
}

static void reset_history(struct state_dir *st)
{
    ring_done(st->ring);
    ring_init(st->ring, st->cfg->retention_ns, st->cfg->memory_limit);
    if (st->metrics)
        metrics_reset(st->metrics);
}

/* The ring file; the last journal generation it holds. */
static uint64_t restore_ring(struct state_dir *st)
{
    _cleanup_free_ unsigned char *buf = NULL;
    char why[OWNED_WHY_MAX];
    uint64_t generation = 0;
    size_t len;
    int r;

    r = owned_file_read(st->dirfd, PERSIST_FILE, read_limit(st), &buf, &len, why);
    if (r == -ENOENT)
        return 0;
    if (r == 0) {
        r = ring_load(st->ring, st->metrics, buf, len, &generation);
        snprintf(why, sizeof(why), "%s",
                 r == -EBADMSG ? "corrupt, foreign or of another version" : strerror(-r));
    }
    if (r < 0) {
        refuse(st, PERSIST_FILE, why);
        reset_history(st);
        return 0;
    }
    st->ring_file_bytes = len;
    return generation;
}

/* The journal over it; its generation, or the ring file's if later. Whether
 * anything was replayed, which calls for a compaction. */
static bool replay_journal(struct state_dir *st, uint64_t *generation)
{
    _cleanup_free_ unsigned char *buf = NULL;
    struct journal_replay out;
    char why[OWNED_WHY_MAX];
    size_t len;
    int r;

    r = owned_file_read(st->dirfd, JOURNAL_FILE, read_limit(st), &buf, &len, why);
    if (r == -ENOENT)
        return false;
    if (r == 0 && journal_replay(st->ring, st->metrics, buf, len, *generation, &out) < 0) {
        snprintf(why, sizeof(why), "not a journal of this version");
        r = -EBADMSG;
    }
    if (r < 0) {
        refuse(st, JOURNAL_FILE, why);
        return false;
    }
    if (out.cut_bytes) {
        st->stats.cut_tails++;
        log_warning("%s/%s: cut a torn tail of %" PRIu64 " bytes after %" PRIu64 " records",
                    st->cfg->state_dir, JOURNAL_FILE, out.cut_bytes, out.records);
    }
    if (out.error) {
        st->stats.errors++;
        log_warning("%s/%s: record %" PRIu64 " does not read (%s): the records before it are kept",
                    st->cfg->state_dir, JOURNAL_FILE, out.records + 1, strerror(-out.error));
    }
    if (out.generation > *generation)
        *generation = out.generation;
    return out.records > 0;
}

/* Who wrote the history (state_origin.h), one line, rewritten at each start. */
#define ORIGIN_FILE "origin.v1"
#define ORIGIN_TMP  ORIGIN_FILE ".tmp"

/* The record of who wrote what is in the directory; false where there is none
 * or it does not read (then the history's origin is unknown, nothing more). */
static bool read_origin(struct state_dir *st, struct state_origin *ret)
{
    _cleanup_free_ unsigned char *buf = NULL;
    char why[OWNED_WHY_MAX];
    size_t len;
    int r = owned_file_read(st->dirfd, ORIGIN_FILE, 256, &buf, &len, why);

    if (r == 0 && state_origin_parse((const char *)buf, len, ret) == 0)
        return true;
    if (r != -ENOENT)
        log_warning("%s/%s %s: the history's origin is unknown", st->cfg->state_dir, ORIGIN_FILE,
                    r < 0 ? why : "does not read");
    return false;
}

static void write_origin(struct state_dir *st, const struct state_origin *o)
{
    char line[128];
    int n = state_origin_format(o, line, sizeof(line));
    _cleanup_close_ int fd = n < 0 ? n : owned_file_create(st->dirfd, ORIGIN_TMP);
    int r = fd;

    if (fd >= 0)
        r = pwrite_all(fd, line, (size_t)n, 0);
    if (r == 0)
        r = owned_file_commit(st->dirfd, fd, ORIGIN_TMP, ORIGIN_FILE);
    if (r < 0) {
        if (fd >= 0)
            unlinkat(st->dirfd, ORIGIN_TMP, 0);
        write_failed(st, ORIGIN_FILE, r);
    }
}

/* An age to the second ("14m2s"); "0s" for a clock set back since. */
static void age_text(int64_t ns, char *buf, size_t size)
{
    const int64_t second = 1000000000;

    duration_format(ns > second ? (uint64_t)(ns - ns % second) : 0, buf, size);
}

/* Says what was restored, how old and whose, then records this start as the
 * history's writer. */
static void note_restored(struct state_dir *st, const char *from)
{
    static const char *const written[] = {
        [ORIGIN_UNKNOWN] = "by an unknown writer",
        [ORIGIN_THIS_BOOT] = "in this boot",
        [ORIGIN_EARLIER_BOOT] = "in an earlier boot",
        [ORIGIN_OTHER_HOST] = "on another host",
    };
    struct state_restored *rs = &st->restored;
    struct state_origin here, then;
    char oldest[32], newest[32];
    bool known, other_version;

    state_origin_here(&here);
    known = read_origin(st, &then);
    other_version = known && strcmp(then.version, here.version) != 0;
    if (st->ring->n) {
        rs->snapshots = st->ring->n;
        rs->oldest_ns = st->ring->snaps[0]->start_ns;
        rs->newest_ns = st->ring->snaps[st->ring->n - 1]->end_ns;
        rs->at_ns = clock_ns(CLOCK_REALTIME);
        rs->origin = known ? state_origin_relation(&then, &here) : ORIGIN_UNKNOWN;
        snprintf(rs->version, sizeof(rs->version), "%s", known ? then.version : "");
        age_text(rs->at_ns - rs->oldest_ns, oldest, sizeof(oldest));
        age_text(rs->at_ns - rs->newest_ns, newest, sizeof(newest));
        log_info("restored %zu snapshots from %s/%s, %s to %s old, written %s%s%s", rs->snapshots,
                 st->cfg->state_dir, from, oldest, newest, written[rs->origin],
                 other_version ? " by offcpud " : "", other_version ? then.version : "");
    }
    write_origin(st, &here);
}

void state_dir_restore(struct state_dir *st, const struct config *cfg, struct ring *ring,
                       struct metrics *metrics)
{
    char why[OWNED_WHY_MAX];
    unsigned char header[JOURNAL_HEADER_SIZE];
    uint64_t generation;
    bool from_ring, replayed;
    int r;

    st->cfg = cfg;
    st->ring = ring;
    st->metrics = metrics;
    st->dirfd = owned_dir_open(st->cfg->state_dir, why);
    if (st->dirfd < 0) {
        st->stats.errors++;
        log_warning("state directory %s %s: history is not kept", st->cfg->state_dir, why);
        return;
    }
    generation = restore_ring(st);
    from_ring = st->ring->n > 0;
    replayed = replay_journal(st, &generation);
    ring_budget_make_room(st->ring, 0);
    ring_expire(st->ring, clock_ns(CLOCK_REALTIME));
    note_restored(st, !replayed   ? PERSIST_FILE
                      : from_ring ? PERSIST_FILE " and " JOURNAL_FILE
                                  : JOURNAL_FILE);
    /* what the journal gave back goes into the ring file, under the
     * generation of the journal it came from; then a journal after both */
    journal_writer_init(&st->journal, generation, header);
    if (replayed) {
        compact(st);
        return;
    }
    r = begin_journal(st, generation + 1);
    if (r < 0)
        write_failed(st, JOURNAL_FILE, r);
}

void state_dir_save(struct state_dir *st)
{
    int r;

    if (st->dirfd < 0)
        return;
    r = write_ring(st);
    if (r < 0) {
        log_warning("saving the ring to %s/%s: %s", st->cfg->state_dir, PERSIST_FILE, strerror(-r));
        return;
    }
    /* the ring file holds it all now */
    unlinkat(st->dirfd, JOURNAL_FILE, 0);
    log_info("saved %zu snapshots to %s/%s", st->ring->n, st->cfg->state_dir, PERSIST_FILE);
}

void state_dir_close(struct state_dir *st)
{
    if (st->journal_fd >= 0)
        close(st->journal_fd);
    if (st->dirfd >= 0)
        close(st->dirfd);
    journal_writer_done(&st->journal);
    *st = (struct state_dir)STATE_DIR_INIT;
}
