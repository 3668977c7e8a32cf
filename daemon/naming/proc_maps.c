/* SPDX-License-Identifier: GPL-2.0-only */
#include "proc_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/types.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "macro.h"
#include "sorted_search.h"

#define DELETED_SUFFIX " (deleted)"

void proc_maps_done(struct proc_maps *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->maps[i].path);
    free(m->maps);
    *m = (struct proc_maps){};
}

static bool endswith(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);

    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* The name column: a path, "[vdso]", "[heap]", "[anon:NAME]", or nothing. */
static int parse_name(struct proc_map *m, const char *name)
{
    size_t len = strcspn(name, "\n");

    if (name[0] != '/') {
        m->kind = len == strlen("[vdso]") && strncmp(name, "[vdso]", len) == 0 ? PROC_MAP_VDSO
                                                                               : PROC_MAP_ANON;
        return 0;
    }
    m->kind = PROC_MAP_FILE;
    if (endswith(name, len, DELETED_SUFFIX)) {
        m->deleted = true;
        len -= strlen(DELETED_SUFFIX);
    }
    m->path = strndup(name, len);
    return m->path ? 0 : -ENOMEM;
}

/* "START-END PERMS PGOFF MAJOR:MINOR INODE [NAME]". *ret_skip is set for
 * lines that are not executable mappings. */
static int parse_line(const char *line, struct proc_map *m, bool *ret_skip)
{
    int name_pos = -1;

    *m = (struct proc_map){};
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n", &m->start,
               &m->end, m->perms, &m->pgoff, &m->dev_major, &m->dev_minor, &m->inode,
               &name_pos) != 7 ||
        name_pos < 0 || m->start >= m->end)
        return -EBADMSG;
    *ret_skip = strlen(m->perms) != 4 || m->perms[2] != 'x';
    if (*ret_skip)
        return 0;
    return parse_name(m, line + name_pos);
}

static int maps_push(struct proc_maps *ms, size_t *cap, const struct proc_map *m)
{
    if (ms->n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        struct proc_map *p = reallocarray(ms->maps, c, sizeof(*p));

        if (!p)
            return -ENOMEM;
        ms->maps = p;
        *cap = c;
    }
    ms->maps[ms->n++] = *m;
    return 0;
}

int proc_maps_parse(FILE *f, struct proc_maps *ret)
{
    _cleanup_free_ char *line = NULL;
    struct proc_maps ms = {};
    size_t line_size = 0, cap = 0;
    int r = 0;

    while (getline(&line, &line_size, f) >= 0) {
        struct proc_map m;
        bool skip;

        /* A line that does not parse is skipped: one odd line must not hide
         * the whole process. */
        r = parse_line(line, &m, &skip);
        if (r == -EBADMSG || (r >= 0 && skip)) {
            r = 0;
            continue;
        }
        if (r < 0)
            break;
        r = maps_push(&ms, &cap, &m);
        if (r < 0) {
            free(m.path);
            break;
        }
    }
    if (r >= 0 && ferror(f))
        r = -EIO;
    if (r < 0) {
        proc_maps_done(&ms);
        return r;
    }
    *ret = ms;
    return 0;
}

/* The PROCMAP_QUERY ioctl of /proc/PID/maps (linux/fs.h since 6.11; not in
 * Debian 12's headers): one mapping per call, chosen by the kernel. */
struct maps_query {
    __u64 size;
    __u64 query_flags;
    __u64 query_addr;
    __u64 vma_start, vma_end;
    __u64 vma_flags;
    __u64 vma_page_size;
    __u64 vma_offset;
    __u64 inode;
    __u32 dev_major, dev_minor;
    __u32 vma_name_size; /* in: the buffer's size; out: the name's, NUL included (0: none) */
    __u32 build_id_size;
    __u64 vma_name_addr;
    __u64 build_id_addr;
};

#define MAPS_QUERY                  _IOWR('f', 17, struct maps_query)
#define MAPS_QUERY_READABLE         0x01
#define MAPS_QUERY_WRITABLE         0x02
#define MAPS_QUERY_EXECUTABLE       0x04
#define MAPS_QUERY_SHARED           0x08
#define MAPS_QUERY_COVERING_OR_NEXT 0x10

/*
 * The executable mappings asked of the kernel one by one: it skips the
 * others and formats nothing (reading the text of a process's every mapping
 * and parsing it was most of what a new process cost the daemon). -ENOTTY
 * where the kernel has no such ioctl (6.1). The gate page ([vsyscall]) is
 * not a mapping of the process's: never listed here.
 */
static int query_maps(int fd, struct proc_maps *ret)
{
    char name[PATH_MAX + 32];
    struct proc_maps ms = {};
    uint64_t addr = 0;
    size_t cap = 0;
    int r = 0;

    for (;;) {
        struct maps_query q = {.size = sizeof(q),
                               .query_flags = MAPS_QUERY_COVERING_OR_NEXT | MAPS_QUERY_EXECUTABLE,
                               .query_addr = addr,
                               .vma_name_size = sizeof(name),
                               .vma_name_addr = (__u64)(uintptr_t)name};
        struct proc_map m;

        if (ioctl(fd, MAPS_QUERY, &q) < 0) {
            /* none further; or the process is gone (a zombie: no mappings, as its text says) */
            if (errno != ENOENT && errno != ESRCH)
                r = -errno;
            break;
        }
        m = (struct proc_map){.start = q.vma_start,
                              .end = q.vma_end,
                              .pgoff = q.vma_offset,
                              .dev_major = q.dev_major,
                              .dev_minor = q.dev_minor,
                              .inode = q.inode};
        m.perms[0] = q.vma_flags & MAPS_QUERY_READABLE ? 'r' : '-';
        m.perms[1] = q.vma_flags & MAPS_QUERY_WRITABLE ? 'w' : '-';
        m.perms[2] = 'x';
        m.perms[3] = q.vma_flags & MAPS_QUERY_SHARED ? 's' : 'p';
        if (q.vma_name_size == 0)
            name[0] = '\0';
        r = parse_name(&m, name);
        if (r == 0)
            r = maps_push(&ms, &cap, &m);
        if (r < 0) {
            free(m.path);
            break;
        }
        if (q.vma_end <= addr)
            break; /* the kernel said no further: never loop */
        addr = q.vma_end;
    }
    if (r < 0) {
        proc_maps_done(&ms);
        return r;
    }
    *ret = ms;
    return 0;
}

int proc_maps_read(pid_t pid, struct proc_maps *ret)
{
    _cleanup_fclose_ FILE *f = NULL;
    char path[64];
    int fd, r;

    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    r = query_maps(fd, ret);
    if (r != -ENOTTY && r != -EINVAL) {
        close(fd);
        return r;
    }
    f = fdopen(fd, "re");
    if (!f) {
        close(fd);
        return -errno;
    }
    return proc_maps_parse(f, ret);
}

int proc_maps_copy(const struct proc_maps *from, struct proc_maps *ret)
{
    struct proc_maps ms = {.maps = calloc(from->n ?: 1, sizeof(*from->maps))};

    if (!ms.maps)
        return -ENOMEM;
    for (; ms.n < from->n; ms.n++) {
        ms.maps[ms.n] = from->maps[ms.n];
        if (from->maps[ms.n].path && !(ms.maps[ms.n].path = strdup(from->maps[ms.n].path))) {
            proc_maps_done(&ms);
            return -ENOMEM;
        }
    }
    *ret = ms;
    return 0;
}

const struct proc_map *proc_maps_find(const struct proc_maps *m, uint64_t addr)
{
    /* mappings do not overlap: only the last starting at or below addr may hold it */
    size_t at = sorted_count_at_or_below(m->maps, m->n, sizeof(*m->maps),
                                         offsetof(struct proc_map, start), addr);

    return at > 0 && addr < m->maps[at - 1].end ? &m->maps[at - 1] : NULL;
}
