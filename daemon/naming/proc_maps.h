/* SPDX-License-Identifier: GPL-2.0-only */
/* The executable mappings of a process, from /proc/PID/maps. */
#ifndef PROC_MAPS_H
#define PROC_MAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum proc_map_kind {
    PROC_MAP_FILE, /* path is the file's */
    PROC_MAP_VDSO,
    PROC_MAP_ANON, /* no file: anonymous, [stack], [anon:NAME], ... */
};

struct proc_map {
    uint64_t start, end; /* [start, end) */
    uint64_t pgoff;      /* file offset of start */
    unsigned dev_major, dev_minor;
    uint64_t inode;
    char perms[5];
    enum proc_map_kind kind;
    bool deleted; /* the file was unlinked: " (deleted)", removed from path */
    char *path;   /* NULL for PROC_MAP_ANON */
};

struct proc_maps {
    struct proc_map *maps; /* sorted by start, as the kernel lists them */
    size_t n;
};

/* Parse the format of /proc/PID/maps; only executable mappings are kept. */
int proc_maps_parse(FILE *f, struct proc_maps *ret);
int proc_maps_read(pid_t pid, struct proc_maps *ret);
void proc_maps_done(struct proc_maps *m);
/* A copy of from, paths and all. */
int proc_maps_copy(const struct proc_maps *from, struct proc_maps *ret);

const struct proc_map *proc_maps_find(const struct proc_maps *m, uint64_t addr);

#endif
