/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Snapshots as bytes, for both state files (the ring file and the journal):
 * strings, stacks and snapshots with the ids of the daemon that wrote them,
 * read back into another daemon's tables through id maps. Host byte order;
 * the files' headers say which. Nothing read is trusted until checked.
 *
 *   string    u32 id, u32 len, bytes (no NUL)
 *   stack     u32 id, u32 n, u32 string ids[n] (root first)
 *   snapshot  i64 start, i64 end, u32 n, records[n] (see snapshot_codec.c)
 *             (version 6 on) u32 wakes, (woken record, waker record)[wakes]
 */
#ifndef SNAPSHOT_CODEC_H
#define SNAPSHOT_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ring.h"

/* The layout of records: version 1 had no uid (read as of an unknown user,
 * whom only root sees); versions 1 and 2 had no uwhere; 1 to 3 no runq_ns;
 * 1 to 4 no max_ns and hist; 1 to 5 no wakers' pairs after the records. */
#define CODEC_VERSION 6u

struct codec_writer {
    FILE *f;
    bool hashed;   /* whether to keep hash: the ring file's trailer needs it */
    uint64_t hash; /* FNV-1a of all put so far */
};

void codec_put(struct codec_writer *w, const void *data, size_t len);
void codec_put_u32(struct codec_writer *w, uint32_t v);
void codec_put_string(struct codec_writer *w, const struct intern *in, uint32_t id);
void codec_put_stack(struct codec_writer *w, const struct intern *in, uint32_t id);
void codec_put_snapshot(struct codec_writer *w, const struct snapshot *s);

struct codec_reader {
    const unsigned char *p, *end;
    uint32_t version; /* of the records' layout */
};

bool codec_take(struct codec_reader *rd, void *out, size_t len);

/* Ids in the bytes to ids in this daemon's tables, each holding a reference.
 * Hashed, not indexed: the memory it takes follows what the bytes define,
 * not how large an id they name. */
struct id_map {
    struct id_pair *pairs; /* open addressing; from 0: empty */
    size_t cap, n;         /* cap: 0 or a power of two */
    bool redefine;         /* an id may be defined again (the journal: ids are reused) */
};

/* Drop the map's references: what no snapshot uses goes. */
void id_map_done(struct intern *in, struct id_map *m, bool strings);

int codec_read_strings(struct codec_reader *rd, uint32_t n, struct intern *in,
                       struct id_map *strings);
int codec_read_stacks(struct codec_reader *rd, uint32_t n, struct intern *in,
                      const struct id_map *strings, struct id_map *stacks);

/* One snapshot, appended to r (retention is applied by the caller) and
 * returned in *ret; it must start at or after *last_end, which it moves on.
 * -EBADMSG when it refers to what the maps do not define. */
int codec_read_snapshot(struct codec_reader *rd, struct ring *r, const struct id_map *strings,
                        const struct id_map *stacks, int64_t *last_end,
                        const struct snapshot **ret);

#endif
