/* SPDX-License-Identifier: GPL-2.0-only */
#include "cgroups.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "macro.h"

struct cgroup_entry {
    uint64_t id;
    char *path;
};

struct cgroups {
    char mount[PATH_MAX];
    struct cgroup_entry *entries; /* sorted by id */
    size_t n, cap;
    bool scanned_this_pass;
};

static int find_mount(char *buf, size_t size)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
    _cleanup_free_ char *line = NULL;
    size_t len = 0;

    if (!f)
        return -errno;
    while (getline(&line, &len, f) > 0) {
        char mnt[PATH_MAX], fstype[64];
        const char *sep = strstr(line, " - ");

        /* fields: id parent maj:min root mountpoint ... - fstype source opts */
        if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
            sscanf(sep + 3, "%63s", fstype) != 1)
            continue;
        if (strcmp(fstype, "cgroup2") == 0) {
            snprintf(buf, size, "%s", mnt);
            return 0;
        }
    }
    return -ENOENT;
}

int cgroups_new(struct cgroups **ret)
{
    struct cgroups *cg = calloc(1, sizeof(*cg));
    int r;

    if (!cg)
        return -ENOMEM;
    r = find_mount(cg->mount, sizeof(cg->mount));
    if (r < 0) {
        free(cg);
        return r;
    }
    *ret = cg;
    return 0;
}

static void clear_entries(struct cgroups *cg)
{
    for (size_t i = 0; i < cg->n; i++)
        free(cg->entries[i].path);
    cg->n = 0;
}

struct cgroups *cgroups_free(struct cgroups *cg)
{
    if (!cg)
        return NULL;
    clear_entries(cg);
    free(cg->entries);
    free(cg);
    return NULL;
}

const char *cgroups_mount(const struct cgroups *cg)
{
    return cg->mount;
}

/* nftw has no user pointer: the tree being scanned is kept here. */
static struct cgroups *scanning;

static int scan_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    struct cgroups *cg = scanning;
    const char *rel = path + strlen(cg->mount);

    if (type != FTW_D)
        return 0;
    if (array_reserve(&cg->entries, &cg->cap, cg->n + 1, sizeof(*cg->entries), 256) < 0)
        return -1;
    cg->entries[cg->n].path = strdup(*rel ? rel : "/");
    if (!cg->entries[cg->n].path)
        return -1;
    /* a cgroup2 directory's inode number is the cgroup id */
    cg->entries[cg->n++].id = st->st_ino;
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    const struct cgroup_entry *x = a, *y = b;

    return x->id < y->id ? -1 : x->id > y->id;
}

static int rescan(struct cgroups *cg)
{
    int r;

    clear_entries(cg);
    scanning = cg;
    r = nftw(cg->mount, scan_one, 32, FTW_PHYS | FTW_MOUNT);
    scanning = NULL;
    qsort(cg->entries, cg->n, sizeof(*cg->entries), cmp_entry);
    return r < 0 ? -ENOMEM : 0;
}

static const struct cgroup_entry *lookup(const struct cgroups *cg, uint64_t id)
{
    struct cgroup_entry key = {.id = id};

    return cg->n ? bsearch(&key, cg->entries, cg->n, sizeof(key), cmp_entry) : NULL;
}

void cgroups_begin_pass(struct cgroups *cg)
{
    cg->scanned_this_pass = false;
}

int cgroups_path(struct cgroups *cg, uint64_t id, char *buf, size_t size)
{
    const struct cgroup_entry *e = lookup(cg, id);

    if (!e && !cg->scanned_this_pass) {
        cg->scanned_this_pass = true;
        rescan(cg);
        e = lookup(cg, id);
    }
    if (!e)
        return -ENOENT;
    snprintf(buf, size, "%s", e->path);
    return 0;
}

int cgroups_normalize(const struct cgroups *cg, const char *path, char *buf, size_t size)
{
    size_t mlen = strlen(cg->mount), len;
    const char *rel = path;

    if (strncmp(path, cg->mount, mlen) == 0 && (path[mlen] == '/' || path[mlen] == '\0'))
        rel = path + mlen;
    else if (path[0] == '/' && strncmp(path, "/sys/fs/cgroup", 14) == 0)
        return -EINVAL; /* a cgroup v1 hierarchy, or another mount */
    while (*rel == '/')
        rel++;
    if (strstr(rel, "..") || snprintf(buf, size, "/%s", rel) >= (int)size)
        return -EINVAL;
    len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    return 0;
}
