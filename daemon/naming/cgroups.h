/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cgroup v2 ids to paths (relative to the cgroup2 mount, "/" for the root),
 * learnt at drain time so that a cgroup deleted after an incident can still
 * be asked for by path.
 */
#ifndef CGROUPS_H
#define CGROUPS_H

#include <stddef.h>
#include <stdint.h>

struct cgroups;

/* Finds the cgroup2 mount; -ENOENT when there is none. */
int cgroups_new(struct cgroups **ret);
struct cgroups *cgroups_free(struct cgroups *cg);

const char *cgroups_mount(const struct cgroups *cg);

/* Path of cgroup id. An unknown id re-reads the tree, at most once per pass. */
int cgroups_path(struct cgroups *cg, uint64_t id, char *buf, size_t size);
void cgroups_begin_pass(struct cgroups *cg);

/* "/sys/fs/cgroup/unified/a/b/", "/a/b" or "a/b" -> "/a/b". -EINVAL for paths
 * outside the mount or with "..". */
int cgroups_normalize(const struct cgroups *cg, const char *path, char *buf, size_t size);

#endif
