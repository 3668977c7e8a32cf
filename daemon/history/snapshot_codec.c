/* SPDX-License-Identifier: GPL-2.0-only */
#include "snapshot_codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"
#include "histogram.h"

struct disk_record {
    uint64_t total_ns, count;
    uint32_t tgid, tid, comm, cgroup, ustack, kstack;
    uint32_t state;
    uint32_t uid;     /* version 2; padding in version 1 */
    uint32_t uwhere;  /* version 3 */
    uint32_t pad;     /* version 3 wrote it too */
    uint64_t runq_ns; /* version 4 */
    uint64_t max_ns;  /* version 5 */
    uint32_t hist;    /* version 5 */
    uint32_t pad5;
};

/* The records of versions 1 and 2 end before uwhere (uid was padding),
 * those of version 3 before runq_ns, of 4 before max_ns (what a version did
 * not have reads as 0: not known then). */
#define DISK_RECORD_V2_SIZE offsetof(struct disk_record, uwhere)
#define DISK_RECORD_V3_SIZE offsetof(struct disk_record, runq_ns)
#define DISK_RECORD_V4_SIZE offsetof(struct disk_record, max_ns)
_Static_assert(DISK_RECORD_V3_SIZE == 56, "version 3 records are 56 bytes");

static size_t disk_record_size(uint32_t version)
{
    return version >= 5   ? sizeof(struct disk_record)
           : version == 4 ? DISK_RECORD_V4_SIZE
           : version == 3 ? DISK_RECORD_V3_SIZE
                          : DISK_RECORD_V2_SIZE;
}

/* More frames than any stack the collector takes. */
#define MAX_FRAMES 512

/* ---- writing ---- */

void codec_put(struct codec_writer *w, const void *data, size_t len)
{
    /* nothing to write may come as NULL, which fwrite must not be given */
    if (!len)
        return;
    if (w->hashed)
        w->hash = fnv1a(w->hash, data, len);
    fwrite(data, 1, len, w->f);
}

void codec_put_u32(struct codec_writer *w, uint32_t v)
{
    codec_put(w, &v, sizeof(v));
}

static void put_blob(struct codec_writer *w, uint32_t id, const struct blob *b, uint32_t count)
{
    codec_put_u32(w, id);
    codec_put_u32(w, count);
    codec_put(w, b->data, b->len);
}

void codec_put_string(struct codec_writer *w, const struct intern *in, uint32_t id)
{
    const struct blob *b = in->strings.slots[id];

    put_blob(w, id, b, b->len);
}

void codec_put_stack(struct codec_writer *w, const struct intern *in, uint32_t id)
{
    const struct blob *b = in->stacks.slots[id];

    put_blob(w, id, b, b->len / sizeof(uint32_t));
}

static void put_record(struct codec_writer *w, const struct record *rec)
{
    struct disk_record d = {rec->total_ns,
                            rec->count,
                            rec->tgid,
                            rec->tid,
                            rec->comm,
                            rec->cgroup,
                            rec->ustack,
                            rec->kstack,
                            (uint32_t)rec->state,
                            rec->uid,
                            rec->uwhere,
                            .runq_ns = rec->runq_ns,
                            .max_ns = rec->max_ns,
                            .hist = rec->hist};

    codec_put(w, &d, sizeof(d));
}

void codec_put_snapshot(struct codec_writer *w, const struct snapshot *s)
{
    codec_put(w, &s->start_ns, sizeof(s->start_ns));
    codec_put(w, &s->end_ns, sizeof(s->end_ns));
    codec_put_u32(w, s->n);
    for (uint32_t j = 0; j < s->n; j++)
        put_record(w, &s->records[j]);
    codec_put_u32(w, s->nwakes);
    for (uint32_t j = 0; j < s->nwakes; j++) {
        put_record(w, &s->wakes[j].woken);
        put_record(w, &s->wakes[j].waker);
    }
}

/* ---- reading ---- */

bool codec_take(struct codec_reader *rd, void *out, size_t len)
{
    if ((size_t)(rd->end - rd->p) < len)
        return false;
    memcpy(out, rd->p, len);
    rd->p += len;
    return true;
}

struct id_pair {
    uint32_t from, to;
};

/* The pair for from, or the empty one where it would go (cap > n). */
static struct id_pair *map_slot(const struct id_map *m, uint32_t from)
{
    size_t mask = m->cap - 1;

    for (size_t i = (from * 2654435761u) & mask;; i = (i + 1) & mask)
        if (m->pairs[i].from == from || m->pairs[i].from == 0)
            return &m->pairs[i];
}

static int map_grow(struct id_map *m)
{
    struct id_map bigger = {.cap = m->cap ? 2 * m->cap : 1024, .n = m->n};

    bigger.pairs = calloc(bigger.cap, sizeof(*bigger.pairs));
    if (!bigger.pairs)
        return -ENOMEM;
    for (size_t i = 0; i < m->cap; i++)
        if (m->pairs[i].from)
            *map_slot(&bigger, m->pairs[i].from) = m->pairs[i];
    free(m->pairs);
    m->pairs = bigger.pairs;
    m->cap = bigger.cap;
    return 0;
}

static void unref(struct intern *in, uint32_t id, bool strings)
{
    if (strings)
        intern_string_unref(in, id);
    else
        intern_stack_unref(in, id);
}

static bool map_set(struct intern *in, struct id_map *m, uint32_t from, uint32_t to, bool strings)
{
    struct id_pair *p;

    if (from == 0 || ((m->n + 1) * 2 > m->cap && map_grow(m) < 0))
        return false;
    p = map_slot(m, from);
    if (p->from && !m->redefine)
        return false; /* defined twice */
    if (p->from)
        unref(in, p->to, strings);
    else
        m->n++;
    *p = (struct id_pair){from, to};
    return true;
}

static uint32_t map_get(const struct id_map *m, uint32_t from)
{
    return from && m->cap ? map_slot(m, from)->to : 0;
}

void id_map_done(struct intern *in, struct id_map *m, bool strings)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->pairs[i].from)
            unref(in, m->pairs[i].to, strings);
    free(m->pairs);
    *m = (struct id_map){0};
}

int codec_read_strings(struct codec_reader *rd, uint32_t n, struct intern *in,
                       struct id_map *strings)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id, len, new_id;
        char *s;

        if (!codec_take(rd, &id, 4) || !codec_take(rd, &len, 4) ||
            (size_t)(rd->end - rd->p) < len || memchr(rd->p, '\0', len))
            return -EBADMSG;
        s = strndup((const char *)rd->p, len);
        if (!s)
            return -ENOMEM;
        rd->p += len;
        new_id = intern_string(in, s);
        free(s);
        if (!new_id || !map_set(in, strings, id, new_id, true)) {
            intern_string_unref(in, new_id);
            return -EBADMSG;
        }
    }
    return 0;
}

int codec_read_stacks(struct codec_reader *rd, uint32_t n, struct intern *in,
                      const struct id_map *strings, struct id_map *stacks)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id, nframes, frames[MAX_FRAMES], new_id;

        if (!codec_take(rd, &id, 4) || !codec_take(rd, &nframes, 4) || nframes > MAX_FRAMES ||
            !codec_take(rd, frames, nframes * sizeof(uint32_t)))
            return -EBADMSG;
        for (uint32_t f = 0; f < nframes; f++)
            if (!(frames[f] = map_get(strings, frames[f])))
                return -EBADMSG;
        new_id = intern_stack(in, frames, nframes);
        if (!new_id || !map_set(in, stacks, id, new_id, false)) {
            intern_stack_unref(in, new_id);
            return -EBADMSG;
        }
    }
    return 0;
}

/* Each record takes its own references; a reference to an id the bytes do
 * not define makes the whole snapshot untrusted. */
static int read_record(struct codec_reader *rd, struct intern *in, const struct id_map *strings,
                       const struct id_map *stacks, struct record *rec)
{
    struct disk_record d = {0};

    if (!codec_take(rd, &d, disk_record_size(rd->version)))
        return -EBADMSG;
    *rec = (struct record){.total_ns = d.total_ns,
                           .runq_ns = d.runq_ns,
                           .max_ns = d.max_ns,
                           .count = d.count,
                           .tgid = d.tgid,
                           .tid = d.tid,
                           .uid = rd->version >= 2 ? d.uid : UID_UNKNOWN,
                           .state = (char)d.state};
    rec->comm = map_get(strings, d.comm);
    rec->cgroup = map_get(strings, d.cgroup);
    rec->ustack = map_get(stacks, d.ustack);
    rec->kstack = map_get(stacks, d.kstack);
    rec->uwhere = map_get(stacks, d.uwhere);
    rec->hist = map_get(strings, d.hist);
    if (!rec->comm || (d.cgroup && !rec->cgroup) || (d.ustack && !rec->ustack) ||
        (d.kstack && !rec->kstack) || (d.uwhere && !rec->uwhere) || d.state > 127 ||
        d.runq_ns > d.total_ns || (d.hist && !rec->hist) ||
        (rec->hist && !histogram_text_valid(intern_string_get(in, rec->hist))))
        return -EBADMSG;
    intern_string_ref(in, rec->comm);
    intern_string_ref(in, rec->cgroup);
    intern_stack_ref(in, rec->ustack);
    intern_stack_ref(in, rec->kstack);
    intern_stack_ref(in, rec->uwhere);
    intern_string_ref(in, rec->hist);
    return 0;
}

/* The wakers' pairs after the records (version 6 on), into s. On error,
 * s->nwakes counts the whole pairs read, which hold references. */
static int read_wakes(struct codec_reader *rd, struct intern *in, const struct id_map *strings,
                      const struct id_map *stacks, struct snapshot *s)
{
    size_t pair_size = 2 * disk_record_size(rd->version);
    uint32_t n;
    int err;

    if (rd->version < 6)
        return 0;
    if (!codec_take(rd, &n, 4) || (size_t)(rd->end - rd->p) / pair_size < n)
        return -EBADMSG;
    if (!n)
        return 0;
    s->wakes = calloc(n, sizeof(*s->wakes));
    if (!s->wakes)
        return -ENOMEM;
    for (; s->nwakes < n; s->nwakes++) {
        struct wake_record *w = &s->wakes[s->nwakes];

        err = read_record(rd, in, strings, stacks, &w->woken);
        if (err < 0)
            return err;
        err = read_record(rd, in, strings, stacks, &w->waker);
        if (err < 0) {
            record_unref(in, &w->woken);
            return err;
        }
    }
    return 0;
}

int codec_read_snapshot(struct codec_reader *rd, struct ring *r, const struct id_map *strings,
                        const struct id_map *stacks, int64_t *last_end, const struct snapshot **ret)
{
    size_t record_size = disk_record_size(rd->version);
    int64_t start, end;
    uint32_t nrec;
    struct snapshot *s;
    int err = 0;

    /* times since 1970: their differences (durations, for the metrics'
     * decay) cannot overflow */
    if (!codec_take(rd, &start, 8) || !codec_take(rd, &end, 8) || !codec_take(rd, &nrec, 4) ||
        start < 0 || end < start || start < *last_end ||
        (size_t)(rd->end - rd->p) / record_size < nrec)
        return -EBADMSG;
    s = calloc(1, sizeof(*s) + (size_t)nrec * sizeof(s->records[0]));
    if (!s)
        return -ENOMEM;
    *s = (struct snapshot){.start_ns = start, .end_ns = end};
    for (; s->n < nrec && err == 0; s->n++)
        err = read_record(rd, &r->intern, strings, stacks, &s->records[s->n]);
    if (err < 0)
        s->n--; /* the failed record took no references */
    if (err == 0)
        err = read_wakes(rd, &r->intern, strings, stacks, s);
    if (err < 0) {
        snapshot_free(&r->intern, s);
        return err;
    }
    /* pushed with its own end as "now": retention is applied by the caller */
    err = ring_push(r, s, end);
    if (err < 0) {
        snapshot_free(&r->intern, s);
        return err;
    }
    *last_end = end;
    *ret = s;
    return 0;
}
