/* SPDX-License-Identifier: GPL-2.0-only */
#include "perf_map.h"
#include "array.h"
#include "sorted_search.h"
#include "strpool.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <linux/stat.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"

/* How many earlier functions a lookup looks through for one that still
 * holds the address: overlaps are rare, and a file made of nothing else
 * must not make every lookup read all of it. */
#define OVERLAP_SCAN_MAX 256

struct perf_sym {
    uint64_t start, end;
    uint64_t max_end; /* the furthest end of this and all earlier functions */
    uint32_t line;    /* order in the file: the later one wins */
    uint32_t name;    /* offset in the pool */
};

struct perf_map {
    struct perf_sym *syms; /* by start, then line */
    size_t n;
    char *pool;
    size_t pool_len;
};

/* The ids of process pid that may own its files, and its pid as it sees
 * it (the last NSpid field: its own pid namespace's). */
struct proc_ids {
    uid_t uids[3]; /* real, effective, filesystem */
    pid_t nspid;
};

static int proc_ids_read(pid_t pid, struct proc_ids *ret)
{
    _cleanup_fclose_ FILE *f = NULL;
    _cleanup_free_ char *line = NULL;
    size_t size = 0;
    char path[64];
    bool uids = false;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? -ESRCH : -errno;
    *ret = (struct proc_ids){.nspid = pid};
    while (getline(&line, &size, f) >= 0) {
        unsigned r, e, s, fs;

        if (sscanf(line, "Uid: %u %u %u %u", &r, &e, &s, &fs) == 4) {
            *ret = (struct proc_ids){.uids = {r, e, fs}, .nspid = ret->nspid};
            uids = true;
        } else if (strncmp(line, "NSpid:", 6) == 0) {
            const char *last = strrchr(line, '\t') ?: line + 6;

            ret->nspid = (pid_t)strtol(last, NULL, 10);
        }
    }
    return uids && ret->nspid > 0 ? 0 : -EBADMSG;
}

static bool owned_by(const struct stat *st, const struct proc_ids *ids)
{
    for (size_t i = 0; i < ARRAY_SIZE(ids->uids); i++)
        if (st->st_uid == ids->uids[i])
            return true;
    return false;
}

/* A file mounted over the map's path (a bind mount made in a user
 * namespace) could be any file of the host. */
static int is_mount_root(int fd)
{
    struct statx stx;

    if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) < 0)
        return -errno;
    return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
           (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

int perf_map_open(pid_t pid, struct stat *ret_st)
{
    /* Inside the process's root, no symlink anywhere on the way: through
     * /proc/PID/root an absolute symlink would resolve in the daemon's own
     * root, and any symlink could name a file its owner cannot read. */
    struct open_how how = {
        .flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    _cleanup_close_ int root = -EBADF, fd = -EBADF;
    char path[64];
    struct proc_ids ids = {};
    int r;

    r = proc_ids_read(pid, &ids);
    if (r < 0)
        return r;
    snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
    root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return errno == ENOENT ? -ESRCH : -errno; /* gone, or a zombie */
    snprintf(path, sizeof(path), "tmp/perf-%d.map", (int)ids.nspid);
    fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
    if (fd < 0)
        return errno == ELOOP || errno == EXDEV ? -EPERM : -errno;
    if (fstat(fd, ret_st) < 0)
        return -errno;
    /* a FIFO would block, a device could act on being read; a hard link
     * or a mount could be another user's file under the expected name */
    if (!S_ISREG(ret_st->st_mode) || ret_st->st_nlink != 1 || !owned_by(ret_st, &ids))
        return -EPERM;
    r = is_mount_root(fd);
    if (r != 0)
        return r < 0 ? r : -EPERM;
    r = fd;
    fd = -EBADF;
    return r;
}

static bool parse_hex(const char **p, const char *end, uint64_t *ret)
{
    const char *s = *p;
    uint64_t v = 0;
    size_t digits = 0;

    if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    for (; s < end; s++, digits++) {
        unsigned d;

        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (*s >= 'a' && *s <= 'f')
            d = (unsigned)(*s - 'a' + 10);
        else if (*s >= 'A' && *s <= 'F')
            d = (unsigned)(*s - 'A' + 10);
        else
            break;
        if (digits == 16)
            return false;
        v = v << 4 | d;
    }
    if (digits == 0)
        return false;
    *p = s;
    *ret = v;
    return true;
}

struct builder {
    struct perf_sym *syms;
    size_t n, cap;
    struct strpool pool;
};

/* "START SIZE NAME": hex, hex, and the rest of the line; anything else is
 * not a function and is skipped. */
static int parse_line(struct builder *b, const char *line, const char *end, uint32_t lineno)
{
    struct perf_sym sym = {.line = lineno};
    const char *p = line, *name;
    uint64_t size;
    size_t len;
    int r;

    if (!parse_hex(&p, end, &sym.start) || p == end || *p++ != ' ' || !parse_hex(&p, end, &size) ||
        p == end || *p++ != ' ')
        return 0;
    name = p;
    len = (size_t)(end - name);
    if (len > 0 && name[len - 1] == '\r')
        len--;
    /* the name is bytes, kept as written: outputs escape it (name_escape.h) */
    if (size == 0 || sym.start > UINT64_MAX - size || len == 0 || len > PERF_MAP_NAME_MAX)
        return 0;
    sym.end = sym.start + size;
    r = strpool_add(&b->pool, name, len, &sym.name);
    if (r < 0)
        return r;
    r = array_reserve(&b->syms, &b->cap, b->n + 1, sizeof(*b->syms), 256);
    if (r < 0)
        return r;
    b->syms[b->n++] = sym;
    return 0;
}

static int sym_compare(const void *a, const void *b)
{
    const struct perf_sym *x = a, *y = b;

    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int builder_finish(struct builder *b, struct perf_map **ret)
{
    struct perf_map *m = calloc(1, sizeof(*m));
    uint64_t furthest = 0;

    if (!m)
        return -ENOMEM;
    if (b->n)
        qsort(b->syms, b->n, sizeof(*b->syms), sym_compare);
    for (size_t i = 0; i < b->n; i++) {
        if (b->syms[i].end > furthest)
            furthest = b->syms[i].end;
        b->syms[i].max_end = furthest;
    }
    m->syms = b->syms;
    m->n = b->n;
    m->pool = b->pool.data;
    m->pool_len = b->pool.len;
    *ret = m;
    return 0;
}

int perf_map_parse(const char *text, size_t len, struct perf_map **ret)
{
    struct builder b = {};
    const char *p = text, *end = text + len;
    uint32_t lineno = 0;
    int r = 0;

    /* only whole lines: the last one may be being written */
    while (r == 0 && p < end && b.n < PERF_MAP_ENTRIES_MAX) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));

        if (!nl)
            break;
        r = parse_line(&b, p, nl, lineno++);
        p = nl + 1;
    }
    if (r == 0)
        r = builder_finish(&b, ret);
    if (r < 0) {
        free(b.syms);
        free(b.pool.data);
    }
    return r;
}

int perf_map_read(int fd, struct perf_map **ret)
{
    _cleanup_free_ char *buf = NULL;
    size_t len = 0, cap = 0;

    while (len < PERF_MAP_SIZE_MAX) {
        size_t want = len + 65536 < PERF_MAP_SIZE_MAX ? len + 65536 : PERF_MAP_SIZE_MAX;
        int r = array_reserve(&buf, &cap, want, 1, 65536);
        ssize_t n;

        if (r < 0)
            return r;
        n = pread(fd, buf + len, want - len, (off_t)len);
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        len += (size_t)n;
    }
    return perf_map_parse(buf ?: "", len, ret);
}

struct perf_map *perf_map_free(struct perf_map *m)
{
    if (!m)
        return NULL;
    free(m->syms);
    free(m->pool);
    free(m);
    return NULL;
}

const char *perf_map_lookup(const struct perf_map *m, uint64_t addr)
{
    size_t lo = sorted_count_at_or_below(m->syms, m->n, sizeof(*m->syms),
                                         offsetof(struct perf_sym, start), addr);
    const struct perf_sym *best = NULL;

    for (size_t i = lo, scanned = 0; i-- > 0 && m->syms[i].max_end > addr; scanned++) {
        const struct perf_sym *s = &m->syms[i];

        if (scanned == OVERLAP_SCAN_MAX)
            return NULL; /* not known for sure: better no name than a wrong one */
        if (addr < s->end && (!best || s->line > best->line))
            best = s;
    }
    return best ? m->pool + best->name : NULL;
}

size_t perf_map_count(const struct perf_map *m)
{
    return m->n;
}

size_t perf_map_bytes(const struct perf_map *m)
{
    return sizeof(*m) + m->n * sizeof(*m->syms) + m->pool_len;
}
