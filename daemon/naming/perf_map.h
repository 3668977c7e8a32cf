/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Names of JIT code from the perf map a process writes, /tmp/perf-PID.map
 * (PID as the process sees it), one "START SIZE NAME" line per function, in
 * hex. The daemon is root and the file belongs to whoever runs the process:
 * it is opened inside the process's root without following any symlink,
 * must be a regular file of the process's owner (or root) that is neither
 * hard-linked nor mounted over, and is read only up to a bound; lines that
 * do not parse are dropped, and names that are not printable UTF-8 too.
 */
#ifndef PERF_MAP_H
#define PERF_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* A bigger file is read up to here: its first functions keep their names. */
#define PERF_MAP_SIZE_MAX    (8u << 20)
#define PERF_MAP_ENTRIES_MAX (128u << 10)
#define PERF_MAP_NAME_MAX    1024u

struct perf_map;

/* Open the perf map of process pid; *ret_st is the file's stat.
 * Returns an fd, -ENOENT when there is none, -ESRCH when the process is gone,
 * -EPERM when the file is not one the process could have written (a
 * symlink, another user's, a hard link, a mount), or another negative errno. */
int perf_map_open(pid_t pid, struct stat *ret_st);

/* Parse the text of a perf map. Returns 0 or -ENOMEM. */
int perf_map_parse(const char *text, size_t len, struct perf_map **ret);

/* Read (up to PERF_MAP_SIZE_MAX) and parse the perf map open on fd. */
int perf_map_read(int fd, struct perf_map **ret);

struct perf_map *perf_map_free(struct perf_map *m);

/* The name of the function holding addr, or NULL. Where functions overlap
 * (code freed and compiled again at the same place) the later line wins. */
const char *perf_map_lookup(const struct perf_map *m, uint64_t addr);

size_t perf_map_count(const struct perf_map *m);
/* Memory held, for the symbolizer's bound over all processes. */
size_t perf_map_bytes(const struct perf_map *m);

#endif
