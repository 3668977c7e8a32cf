/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The journal reader, which rebuilds the ring at start from whatever a crash
 * (or anything else) left in the state directory, with the metrics counting
 * every snapshot it puts back. The first byte picks how the rest is read:
 *
 *   bit 0 clear  records: each u16 length and that many payload bytes,
 *                framed by the harness into a journal with right lengths and
 *                checksums, so that the fuzzer reaches the payload decoder
 *                and not only the checksum test; deflated first if bit 1 is set
 *   bit 0 set    the journal file as it is: header, framing, torn tails
 *
 * Whatever the bytes, the reader must not crash or leak, and every snapshot
 * it keeps must refer only to names and stacks the ring holds.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "fnv.h"
#include "journal.h"

#define SEC 1000000000LL
/* u32 stored, u32 inflated (0: as is), u64 checksum */
#define RECORD_HEAD 16

/* header, then each payload as a record */
static unsigned char *frame(const uint8_t *data, size_t size, bool deflate, size_t *ret_len)
{
    struct journal_writer w = {0};
    unsigned char *out = malloc(JOURNAL_HEADER_SIZE + compressBound(size) + size * 8 + 1);
    size_t len = JOURNAL_HEADER_SIZE;

    journal_writer_init(&w, 1, out);
    journal_writer_done(&w);
    while (size >= 2) {
        uint32_t payload = data[0] | data[1] << 8, raw = 0;
        uLongf stored = compressBound(payload);
        uint64_t hash;

        data += 2;
        size -= 2;
        if (payload > size)
            payload = size;
        if (deflate && compress2(out + len + RECORD_HEAD, &stored, data, payload, 1) == Z_OK) {
            raw = payload;
        } else {
            memcpy(out + len + RECORD_HEAD, data, payload);
            stored = payload;
        }
        hash = fnv1a(FNV1A_INIT, out + len + RECORD_HEAD, stored);
        memcpy(out + len, &(uint32_t){stored}, 4);
        memcpy(out + len + 4, &raw, 4);
        memcpy(out + len + 8, &hash, 8);
        len += RECORD_HEAD + stored;
        data += payload;
        size -= payload;
    }
    *ret_len = len;
    return out;
}

static void check_references(const struct ring *r)
{
    const struct blobtab *strings = &r->intern.strings, *stacks = &r->intern.stacks;

    for (size_t i = 0; i < r->n; i++)
        for (uint32_t j = 0; j < r->snaps[i]->n; j++) {
            const struct record *rec = &r->snaps[i]->records[j];

            if (!rec->comm || rec->comm >= strings->nslots || !strings->slots[rec->comm] ||
                (rec->cgroup && !strings->slots[rec->cgroup]) ||
                (rec->ustack && !stacks->slots[rec->ustack]) ||
                (rec->kstack && !stacks->slots[rec->kstack]) ||
                (rec->uwhere && !stacks->slots[rec->uwhere]) ||
                (rec->hist && !strings->slots[rec->hist]))
                abort();
        }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *framed = NULL;
    struct journal_replay out;
    struct metrics *m;
    struct ring r;
    char *page = NULL;
    size_t len = 0;
    FILE *f;

    if (size < 1)
        return 0;
    if (!(data[0] & 1)) {
        framed = frame(data + 1, size - 1, data[0] & 2, &len);
        data = framed;
        size = len;
    } else {
        data++;
        size--;
    }
    ring_init(&r, 3600 * SEC, 4 << 20);
    if (metrics_new(4, &m) < 0)
        abort();
    journal_replay(&r, m, data, size, 0, &out);
    if (out.records > r.n + r.evicted_memory + r.evicted_retention)
        abort();
    check_references(&r);
    f = open_memstream(&page, &len);
    metrics_write(m, f);
    fclose(f);
    free(page);
    metrics_free(m);
    ring_done(&r);
    free(framed);
    return 0;
}
