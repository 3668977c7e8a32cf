/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Layout (host byte order; the header says which, and the version):
 *   header   magic[8] "OFFCPUDR", u32 version, u32 byte-order mark,
 *            u32 strings, u32 stacks, u32 snapshots
 *   strings  u32 id, u32 len, bytes            (ids as in the running daemon)
 *   stacks   u32 id, u32 n, u32 string ids[n]  (root first)
 *   snaps    i64 start, i64 end, u32 n, struct disk_record[n]
 *            (version 1 had no uid: its records are read as of an unknown
 *            user, which only root sees; versions 1 and 2 had no uwhere,
 *            and their records are shorter)
 *   trailer  u64 FNV-1a of everything before it
 */
#include "persist.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "fnv.h"
#include "macro.h"

#define MAGIC           "OFFCPUDR"
#define VERSION         3u
#define BYTE_ORDER_MARK 0x01020304u

struct header {
    char magic[8];
    uint32_t version, bom;
    uint32_t nstrings, nstacks, nsnaps;
};

struct disk_record {
    uint64_t total_ns, count;
    uint32_t tgid, tid, comm, cgroup, ustack, kstack;
    uint32_t state;
    uint32_t uid;    /* version 2; padding in version 1 */
    uint32_t uwhere; /* version 3 */
};

/* The records of versions 1 and 2 end before uwhere (uid was padding). */
#define DISK_RECORD_V2_SIZE offsetof(struct disk_record, uwhere)

/* ---- writing ---- */

struct writer {
    FILE *f;
    uint64_t hash;
};

static void put(struct writer *w, const void *data, size_t len)
{
    w->hash = fnv1a(w->hash, data, len);
    fwrite(data, 1, len, w->f);
}

static void put_u32(struct writer *w, uint32_t v)
{
    put(w, &v, sizeof(v));
}

static uint32_t live(const struct blobtab *t)
{
    uint32_t n = 0;

    for (uint32_t id = 1; id < t->nslots; id++)
        n += t->slots[id] != NULL;
    return n;
}

static void put_blobs(struct writer *w, const struct blobtab *t, bool strings)
{
    for (uint32_t id = 1; id < t->nslots; id++) {
        const struct blob *b = t->slots[id];

        if (!b)
            continue;
        put_u32(w, id);
        put_u32(w, strings ? b->len : b->len / sizeof(uint32_t));
        put(w, b->data, b->len);
    }
}

int ring_save(const struct ring *r, const char *path)
{
    _cleanup_free_ char *tmp = NULL;
    struct header h = {.version = VERSION, .bom = BYTE_ORDER_MARK};
    struct writer w = {.hash = FNV1A_INIT};
    int fd;

    if (asprintf(&tmp, "%s.tmp", path) < 0)
        return -ENOMEM;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || !(w.f = fdopen(fd, "w"))) {
        if (fd >= 0)
            close(fd);
        return -errno;
    }
    memcpy(h.magic, MAGIC, sizeof(h.magic));
    h.nstrings = live(&r->intern.strings);
    h.nstacks = live(&r->intern.stacks);
    h.nsnaps = r->n;
    put(&w, &h, sizeof(h));
    put_blobs(&w, &r->intern.strings, true);
    put_blobs(&w, &r->intern.stacks, false);
    for (size_t i = 0; i < r->n; i++) {
        const struct snapshot *s = r->snaps[i];

        put(&w, &s->start_ns, sizeof(s->start_ns));
        put(&w, &s->end_ns, sizeof(s->end_ns));
        put_u32(&w, s->n);
        for (uint32_t j = 0; j < s->n; j++) {
            const struct record *rec = &s->records[j];
            struct disk_record d = {rec->total_ns, rec->count,  rec->tgid,
                                    rec->tid,      rec->comm,   rec->cgroup,
                                    rec->ustack,   rec->kstack, (uint32_t)rec->state,
                                    rec->uid,      rec->uwhere};

            put(&w, &d, sizeof(d));
        }
    }
    fwrite(&w.hash, sizeof(w.hash), 1, w.f);
    if (fflush(w.f) != 0 || fsync(fileno(w.f)) < 0 || ferror(w.f)) {
        int err = -errno ?: -EIO;

        fclose(w.f);
        unlink(tmp);
        return err;
    }
    fclose(w.f);
    return rename(tmp, path) < 0 ? -errno : 0;
}

/* ---- reading: nothing in the file is trusted until checked ---- */

struct reader {
    const unsigned char *p, *end;
    uint32_t version;
};

static bool take(struct reader *rd, void *out, size_t len)
{
    if ((size_t)(rd->end - rd->p) < len)
        return false;
    memcpy(out, rd->p, len);
    rd->p += len;
    return true;
}

/* File ids to ids in this daemon's tables, for the ids the file defines. */
struct id_map {
    uint32_t *to; /* indexed by file id; 0: not defined */
    size_t cap;
};

static bool map_set(struct id_map *m, uint32_t from, uint32_t to)
{
    size_t old = m->cap;

    if (from == 0 || from > (1u << 28) || (m->cap > from && m->to[from]))
        return false; /* id 0, absurd, or defined twice */
    if (array_reserve(&m->to, &m->cap, (size_t)from + 1, sizeof(*m->to), 1024) < 0)
        return false;
    memset(m->to + old, 0, (m->cap - old) * sizeof(*m->to));
    m->to[from] = to;
    return true;
}

static uint32_t map_get(const struct id_map *m, uint32_t from)
{
    return from < m->cap ? m->to[from] : 0;
}

static void map_unref(struct intern *in, struct id_map *m, bool strings)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->to[i]) {
            if (strings)
                intern_string_unref(in, m->to[i]);
            else
                intern_stack_unref(in, m->to[i]);
        }
    free(m->to);
}

static int read_strings(struct reader *rd, uint32_t n, struct intern *in, struct id_map *map)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id, len, new_id;
        char *s;

        if (!take(rd, &id, 4) || !take(rd, &len, 4) || (size_t)(rd->end - rd->p) < len ||
            memchr(rd->p, '\0', len))
            return -EBADMSG;
        s = strndup((const char *)rd->p, len);
        if (!s)
            return -ENOMEM;
        rd->p += len;
        new_id = intern_string(in, s);
        free(s);
        if (!new_id || !map_set(map, id, new_id)) {
            intern_string_unref(in, new_id);
            return -EBADMSG;
        }
    }
    return 0;
}

static int read_stacks(struct reader *rd, uint32_t n, struct intern *in,
                       const struct id_map *strings, struct id_map *map)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id, nframes, frames[512], new_id;

        if (!take(rd, &id, 4) || !take(rd, &nframes, 4) || nframes > 512 ||
            !take(rd, frames, nframes * sizeof(uint32_t)))
            return -EBADMSG;
        for (uint32_t f = 0; f < nframes; f++)
            if (!(frames[f] = map_get(strings, frames[f])))
                return -EBADMSG;
        new_id = intern_stack(in, frames, nframes);
        if (!new_id || !map_set(map, id, new_id)) {
            intern_stack_unref(in, new_id);
            return -EBADMSG;
        }
    }
    return 0;
}

/* Each record takes its own references; a reference to an id the file does
 * not define makes the whole snapshot (and file) untrusted. */
static int read_record(struct reader *rd, struct intern *in, const struct id_map *strings,
                       const struct id_map *stacks, struct record *rec)
{
    struct disk_record d = {0};

    if (!take(rd, &d, rd->version >= 3 ? sizeof(d) : DISK_RECORD_V2_SIZE))
        return -EBADMSG;
    *rec = (struct record){.total_ns = d.total_ns,
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
    if (!rec->comm || (d.cgroup && !rec->cgroup) || (d.ustack && !rec->ustack) ||
        (d.kstack && !rec->kstack) || (d.uwhere && !rec->uwhere) || d.state > 127)
        return -EBADMSG;
    intern_string_ref(in, rec->comm);
    intern_string_ref(in, rec->cgroup);
    intern_stack_ref(in, rec->ustack);
    intern_stack_ref(in, rec->kstack);
    intern_stack_ref(in, rec->uwhere);
    return 0;
}

static int read_snapshots(struct reader *rd, uint32_t n, struct ring *r,
                          const struct id_map *strings, const struct id_map *stacks)
{
    int64_t last_end = INT64_MIN;

    for (uint32_t i = 0; i < n; i++) {
        int64_t start, end;
        uint32_t nrec;
        struct snapshot *s;
        int ret = 0;

        if (!take(rd, &start, 8) || !take(rd, &end, 8) || !take(rd, &nrec, 4) || end < start ||
            start < last_end || (size_t)(rd->end - rd->p) / sizeof(struct disk_record) < nrec)
            return -EBADMSG;
        s = calloc(1, sizeof(*s) + (size_t)nrec * sizeof(s->records[0]));
        if (!s)
            return -ENOMEM;
        *s = (struct snapshot){.start_ns = start, .end_ns = end};
        for (; s->n < nrec && ret == 0; s->n++)
            ret = read_record(rd, &r->intern, strings, stacks, &s->records[s->n]);
        if (ret < 0) {
            s->n--; /* the failed record took no references */
            snapshot_free(&r->intern, s);
            return ret;
        }
        /* pushed with its own end as "now": retention is applied by the caller */
        ret = ring_push(r, s, end);
        if (ret < 0) {
            snapshot_free(&r->intern, s);
            return ret;
        }
        last_end = end;
    }
    return 0;
}

static int read_all(const char *path, size_t max_bytes, unsigned char **ret, size_t *ret_len)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    unsigned char *buf;
    struct stat st;
    size_t got = 0;

    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size > max_bytes ||
        (size_t)st.st_size < sizeof(struct header) + 8)
        return -EBADMSG;
    buf = malloc(st.st_size);
    if (!buf)
        return -ENOMEM;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, st.st_size - got);

        if (n <= 0) {
            free(buf);
            return n < 0 ? -errno : -EBADMSG;
        }
        got += n;
    }
    *ret = buf;
    *ret_len = got;
    return 0;
}

int ring_load(struct ring *r, const char *path, size_t max_bytes)
{
    _cleanup_free_ unsigned char *buf = NULL;
    struct id_map strings = {0}, stacks = {0};
    struct reader rd;
    struct header h;
    uint64_t want;
    size_t len = 0;
    int ret;

    ret = read_all(path, max_bytes, &buf, &len);
    if (ret < 0)
        return ret;
    memcpy(&want, buf + len - 8, 8);
    rd = (struct reader){buf, buf + len - 8, 0};
    if (fnv1a(FNV1A_INIT, buf, len - 8) != want || !take(&rd, &h, sizeof(h)) ||
        memcmp(h.magic, MAGIC, 8) != 0 || h.version < 1 || h.version > VERSION ||
        h.bom != BYTE_ORDER_MARK)
        return -EBADMSG;
    rd.version = h.version;
    ret = read_strings(&rd, h.nstrings, &r->intern, &strings);
    if (ret == 0)
        ret = read_stacks(&rd, h.nstacks, &r->intern, &strings, &stacks);
    if (ret == 0)
        ret = read_snapshots(&rd, h.nsnaps, r, &strings, &stacks);
    if (ret == 0 && rd.p != rd.end)
        ret = -EBADMSG;
    /* the tables' own references: what no record uses goes now */
    map_unref(&r->intern, &stacks, false);
    map_unref(&r->intern, &strings, true);
    return ret;
}
