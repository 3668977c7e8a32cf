/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Layout (host byte order; the header says which, and the version):
 *   header   magic[8] "OFFCPUDR", u32 version, u32 byte-order mark,
 *            u32 strings, u32 stacks, u32 snapshots
 *            (version 4) u64 the last journal generation the file holds
 *   strings, stacks, snapshots, as snapshot_codec.h says (versions 1 to 3
 *            are the codec's record layouts; 4 has 3's, 5 has 4's, 6 5's,
 *            7 6's: wakers' pairs)
 *   (version 4 on) the metrics' totals, as metrics_persist.h says
 *   trailer  u64 FNV-1a of everything before it
 */
#include "persist.h"

#include <errno.h>
#include <string.h>

#include "fnv.h"
#include "metrics_persist.h"
#include "snapshot_codec.h"

#define MAGIC   "OFFCPUDR"
#define VERSION 7u
/* The codec's record layout in a file of version v (see above). */
#define CODEC_OF(v) ((v) <= 3u ? (v) : (v)-1u)
_Static_assert(CODEC_OF(VERSION) == CODEC_VERSION,
               "the ring file is written in the codec's layout");
#define BYTE_ORDER_MARK 0x01020304u

struct header {
    char magic[8];
    uint32_t version, bom;
    uint32_t nstrings, nstacks, nsnaps;
};

int ring_save(const struct ring *r, const struct metrics *m, uint64_t journal_generation, FILE *f)
{
    struct header h = {.version = VERSION, .bom = BYTE_ORDER_MARK};
    struct codec_writer w = {.f = f, .hashed = true, .hash = FNV1A_INIT};

    /* stdio keeps the cause of a failed write in errno only: a full disk
     * must be reported as one, never as a vague I/O error */
    errno = 0;
    memcpy(h.magic, MAGIC, sizeof(h.magic));
    h.nstrings = r->intern.strings.count;
    h.nstacks = r->intern.stacks.count;
    h.nsnaps = r->n;
    codec_put(&w, &h, sizeof(h));
    codec_put(&w, &journal_generation, sizeof(journal_generation));
    for (uint32_t id = 1; id < r->intern.strings.nslots; id++)
        if (r->intern.strings.slots[id])
            codec_put_string(&w, &r->intern, id);
    for (uint32_t id = 1; id < r->intern.stacks.nslots; id++)
        if (r->intern.stacks.slots[id])
            codec_put_stack(&w, &r->intern, id);
    for (size_t i = 0; i < r->n; i++)
        codec_put_snapshot(&w, r->snaps[i]);
    metrics_put(&w, m);
    fwrite(&w.hash, sizeof(w.hash), 1, f);
    if (fflush(f) != 0 || ferror(f))
        return errno > 0 ? -errno : -EIO;
    return 0;
}

int ring_load(struct ring *r, struct metrics *m, const unsigned char *buf, size_t len,
              uint64_t *journal_generation)
{
    struct id_map strings = {0}, stacks = {0};
    struct codec_reader rd;
    int64_t last_end = INT64_MIN;
    struct header h;
    uint64_t want;
    int ret = 0;

    *journal_generation = 0;
    if (len < sizeof(h) + sizeof(want))
        return -EBADMSG;
    memcpy(&want, buf + len - sizeof(want), sizeof(want));
    rd = (struct codec_reader){buf, buf + len - sizeof(want), 0};
    if (fnv1a(FNV1A_INIT, buf, len - sizeof(want)) != want || !codec_take(&rd, &h, sizeof(h)) ||
        memcmp(h.magic, MAGIC, 8) != 0 || h.version < 1 || h.version > VERSION ||
        h.bom != BYTE_ORDER_MARK ||
        (h.version >= 4 && !codec_take(&rd, journal_generation, sizeof(*journal_generation))))
        return -EBADMSG;
    rd.version = CODEC_OF(h.version);
    ret = codec_read_strings(&rd, h.nstrings, &r->intern, &strings);
    if (ret == 0)
        ret = codec_read_stacks(&rd, h.nstacks, &r->intern, &strings, &stacks);
    for (uint32_t i = 0; ret == 0 && i < h.nsnaps; i++) {
        const struct snapshot *s;

        ret = codec_read_snapshot(&rd, r, &strings, &stacks, &last_end, &s);
    }
    if (ret == 0 && h.version >= 4)
        ret = metrics_take(&rd, m);
    if (ret == 0 && rd.p != rd.end)
        ret = -EBADMSG;
    /* the tables' own references: what no record uses goes now */
    id_map_done(&r->intern, &stacks, false);
    id_map_done(&r->intern, &strings, true);
    return ret;
}
