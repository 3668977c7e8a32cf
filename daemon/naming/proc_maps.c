/* SPDX-License-Identifier: GPL-2.0-only */
#include "proc_maps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

int proc_maps_read(pid_t pid, struct proc_maps *ret)
{
    _cleanup_fclose_ FILE *f = NULL;
    char path[64];

    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return -errno;
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
