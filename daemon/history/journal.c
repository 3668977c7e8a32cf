/* SPDX-License-Identifier: GPL-2.0-only */
#include "journal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "array.h"
#include "fnv.h"
#include "macro.h"
#include "snapshot_codec.h"

#define MAGIC "OFFCPUDJ"
/* Version 1 holds the codec's records of version 3, 2 those of 4 (runq_ns),
 * 3 those of 5 (histograms), 4 those of 6 (wakers' pairs). */
#define VERSION     4u
#define CODEC_OF(v) ((v) + 2u)
_Static_assert(CODEC_OF(VERSION) == CODEC_VERSION, "the journal is written in the codec's layout");
#define BYTE_ORDER_MARK 0x01020304u
/* u32 stored length, u32 length uncompressed (0: stored as is), u64 checksum */
#define RECORD_HEAD 16
/* Smaller payloads are stored as they are: too little to gain. */
#define COMPRESS_FROM 512
/* What one record may inflate to: more than deflate ever makes of it (its
 * best is about 1:1032), or more than any payload is, is a corrupt length. */
#define MAX_RATIO 1040u
#define MAX_RAW   (1u << 30)

struct journal_definition {
    uint32_t id;
    bool stack;
    uint64_t old_serial; /* to undo */
};

void journal_writer_init(struct journal_writer *w, uint64_t generation,
                         unsigned char header[JOURNAL_HEADER_SIZE])
{
    uint32_t version = VERSION, bom = BYTE_ORDER_MARK;
    uint64_t hash;

    journal_writer_done(w);
    w->generation = generation;
    w->bytes = JOURNAL_HEADER_SIZE;
    memcpy(header, MAGIC, 8);
    memcpy(header + 8, &version, 4);
    memcpy(header + 12, &bom, 4);
    memcpy(header + 16, &generation, 8);
    hash = fnv1a(FNV1A_INIT, header, 24);
    memcpy(header + 24, &hash, 8);
}

void journal_writer_done(struct journal_writer *w)
{
    free(w->string_serial);
    free(w->stack_serial);
    free(w->pending);
    memset(w, 0, sizeof(*w));
}

/* The journal's serial for id, growing the table to hold it. */
static uint64_t *serial_slot(uint64_t **table, size_t *n, uint32_t id)
{
    size_t old = *n;

    if (array_reserve(table, n, (size_t)id + 1, sizeof(**table), 1024) < 0)
        return NULL;
    memset(*table + old, 0, (*n - old) * sizeof(**table));
    return *table + id;
}

/* Note that the record being made defines id (unless the journal has what
 * id holds now already). */
static int define(struct journal_writer *w, uint32_t id, bool stack, uint64_t serial)
{
    uint64_t *slot = stack ? serial_slot(&w->stack_serial, &w->nstacks, id)
                           : serial_slot(&w->string_serial, &w->nstrings, id);

    if (!slot)
        return -ENOMEM;
    if (*slot == serial)
        return 0;
    if (array_reserve(&w->pending, &w->pending_cap, w->npending + 1, sizeof(*w->pending), 64) < 0)
        return -ENOMEM;
    w->pending[w->npending++] = (struct journal_definition){id, stack, *slot};
    *slot = serial;
    return 1;
}

static int need_string(struct journal_writer *w, const struct intern *in, uint32_t id)
{
    return id ? define(w, id, false, intern_string_serial(in, id)) : 0;
}

/* A stack new to the journal needs its frames' names first. */
static int need_stack(struct journal_writer *w, const struct intern *in, uint32_t id)
{
    const uint32_t *frames;
    uint32_t n;
    int r;

    if (!id)
        return 0;
    r = define(w, id, true, intern_stack_serial(in, id));
    if (r <= 0)
        return r;
    frames = intern_stack_get(in, id, &n);
    for (uint32_t i = 0; i < n && r >= 0; i++)
        r = need_string(w, in, frames[i]);
    return r < 0 ? r : 0;
}

static int need_record(struct journal_writer *w, const struct intern *in, const struct record *rec)
{
    int r = need_string(w, in, rec->comm);

    if (r >= 0)
        r = need_string(w, in, rec->cgroup);
    if (r >= 0)
        r = need_stack(w, in, rec->ustack);
    if (r >= 0)
        r = need_stack(w, in, rec->kstack);
    if (r >= 0)
        r = need_stack(w, in, rec->uwhere);
    if (r >= 0)
        r = need_string(w, in, rec->hist);
    return r;
}

static int collect_definitions(struct journal_writer *w, const struct intern *in,
                               const struct snapshot *s)
{
    int r = 0;

    for (uint32_t i = 0; i < s->n && r >= 0; i++)
        r = need_record(w, in, &s->records[i]);
    for (uint32_t i = 0; i < s->nwakes && r >= 0; i++) {
        r = need_record(w, in, &s->wakes[i].woken);
        if (r >= 0)
            r = need_record(w, in, &s->wakes[i].waker);
    }
    return r < 0 ? r : 0;
}

static void write_payload(struct codec_writer *cw, const struct journal_writer *w,
                          const struct intern *in, const struct snapshot *s)
{
    uint32_t nstrings = 0, nstacks = 0;

    for (size_t i = 0; i < w->npending; i++)
        *(w->pending[i].stack ? &nstacks : &nstrings) += 1;
    codec_put_u32(cw, nstrings);
    codec_put_u32(cw, nstacks);
    /* every string before any stack: a reader resolves frames as it goes */
    for (size_t i = 0; i < w->npending; i++)
        if (!w->pending[i].stack)
            codec_put_string(cw, in, w->pending[i].id);
    for (size_t i = 0; i < w->npending; i++)
        if (w->pending[i].stack)
            codec_put_stack(cw, in, w->pending[i].id);
    codec_put_snapshot(cw, s);
}

/* The record of a payload: deflated (fast level) where that saves room. A
 * stack explosion's new stacks are mostly the same few frame ids over and
 * over; they shrink about five times, and so does the disk's load. */
static int seal(const char *payload, size_t len, char **ret, size_t *ret_len)
{
    uLongf stored = compressBound(len);
    char *rec = malloc(RECORD_HEAD + (stored > len ? stored : len));
    uint32_t stored32, raw32 = len;
    uint64_t hash;

    if (!rec)
        return -ENOMEM;
    if (len < COMPRESS_FROM ||
        compress2((Bytef *)rec + RECORD_HEAD, &stored, (const Bytef *)payload, len, 1) != Z_OK ||
        stored >= len) {
        memcpy(rec + RECORD_HEAD, payload, len);
        stored = len;
        raw32 = 0;
    }
    stored32 = stored;
    hash = fnv1a(FNV1A_INIT, rec + RECORD_HEAD, stored);
    memcpy(rec, &stored32, 4);
    memcpy(rec + 4, &raw32, 4);
    memcpy(rec + 8, &hash, 8);
    *ret = rec;
    *ret_len = RECORD_HEAD + stored;
    return 0;
}

int journal_encode(struct journal_writer *w, const struct intern *in, const struct snapshot *s,
                   char **ret, size_t *ret_len)
{
    struct codec_writer cw = {0}; /* seal() sums what is stored */
    _cleanup_free_ char *payload = NULL;
    size_t len = 0;
    int r;

    r = collect_definitions(w, in, s);
    cw.f = r < 0 ? NULL : open_memstream(&payload, &len);
    if (!cw.f) {
        journal_not_written(w);
        return r < 0 ? r : -ENOMEM;
    }
    write_payload(&cw, w, in, s);
    r = fclose(cw.f) != 0 || len > MAX_RAW ? -ENOMEM : seal(payload, len, ret, ret_len);
    if (r < 0)
        journal_not_written(w);
    return r;
}

void journal_written(struct journal_writer *w, size_t len)
{
    w->npending = 0;
    w->bytes += len;
    w->records++;
}

void journal_not_written(struct journal_writer *w)
{
    while (w->npending > 0) {
        const struct journal_definition *d = &w->pending[--w->npending];

        (d->stack ? w->stack_serial : w->string_serial)[d->id] = d->old_serial;
    }
}

/* ---- reading ---- */

/* The header's generation, and the codec version of the records after it. */
static int read_header(const unsigned char *buf, size_t len, uint64_t *generation,
                       uint32_t *codec_version)
{
    uint32_t version, bom;
    uint64_t hash;

    if (len < JOURNAL_HEADER_SIZE || memcmp(buf, MAGIC, 8) != 0)
        return -EBADMSG;
    memcpy(&version, buf + 8, 4);
    memcpy(&bom, buf + 12, 4);
    memcpy(generation, buf + 16, 8);
    memcpy(&hash, buf + 24, 8);
    *codec_version = CODEC_OF(version);
    return version >= 1 && version <= VERSION && bom == BYTE_ORDER_MARK &&
                   hash == fnv1a(FNV1A_INIT, buf, 24)
               ? 0
               : -EBADMSG;
}

/* A record's payload as written: inflated if it was deflated. */
static int unseal(const unsigned char *stored, uint32_t len, uint32_t raw, uint32_t codec_version,
                  unsigned char **ret_free, struct codec_reader *rd)
{
    uLongf got = raw;

    *ret_free = NULL;
    if (!raw) {
        *rd = (struct codec_reader){stored, stored + len, codec_version};
        return 0;
    }
    if (raw > MAX_RAW || raw / MAX_RATIO > len)
        return -EBADMSG;
    *ret_free = malloc(raw);
    if (!*ret_free)
        return -ENOMEM;
    if (uncompress(*ret_free, &got, stored, len) != Z_OK || got != raw)
        return -EBADMSG;
    *rd = (struct codec_reader){*ret_free, *ret_free + raw, codec_version};
    return 0;
}

/* One record's payload: its definitions, then its snapshot. */
static int replay_payload(struct codec_reader *rd, struct ring *r, struct metrics *m,
                          struct id_map *strings, struct id_map *stacks, int64_t *last_end)
{
    const struct snapshot *s;
    uint32_t nstrings, nstacks;
    int err;

    if (!codec_take(rd, &nstrings, 4) || !codec_take(rd, &nstacks, 4))
        return -EBADMSG;
    err = codec_read_strings(rd, nstrings, &r->intern, strings);
    if (err == 0)
        err = codec_read_stacks(rd, nstacks, &r->intern, strings, stacks);
    if (err == 0)
        err = codec_read_snapshot(rd, r, strings, stacks, last_end, &s);
    if (err == 0 && rd->p != rd->end)
        err = -EBADMSG;
    if (err == 0 && m)
        err = metrics_add(m, s, &r->intern);
    return err;
}

int journal_replay(struct ring *r, struct metrics *m, const unsigned char *buf, size_t len,
                   uint64_t ring_generation, struct journal_replay *out)
{
    struct id_map strings = {.redefine = true}, stacks = {.redefine = true};
    size_t pos = JOURNAL_HEADER_SIZE;
    int64_t last_end = INT64_MIN;
    uint32_t codec_version;
    int err = 0;

    *out = (struct journal_replay){0};
    if (read_header(buf, len, &out->generation, &codec_version) < 0)
        return -EBADMSG;
    if (out->generation <= ring_generation)
        return 0; /* compacted into the ring file before a crash could remove it */
    while (pos < len && err == 0) {
        _cleanup_free_ unsigned char *inflated = NULL;
        struct codec_reader rd;
        uint32_t stored, raw;
        uint64_t hash;

        if (len - pos < RECORD_HEAD)
            break;
        memcpy(&stored, buf + pos, 4);
        memcpy(&raw, buf + pos + 4, 4);
        memcpy(&hash, buf + pos + 8, 8);
        if (stored > len - pos - RECORD_HEAD ||
            fnv1a(FNV1A_INIT, buf + pos + RECORD_HEAD, stored) != hash)
            break;
        err = unseal(buf + pos + RECORD_HEAD, stored, raw, codec_version, &inflated, &rd);
        if (err == 0)
            err = replay_payload(&rd, r, m, &strings, &stacks, &last_end);
        if (err == 0) {
            out->records++;
            pos += RECORD_HEAD + stored;
        }
    }
    if (err < 0)
        out->error = err;
    else
        out->cut_bytes = len - pos;
    id_map_done(&r->intern, &stacks, false);
    id_map_done(&r->intern, &strings, true);
    return 0;
}
