/* SPDX-License-Identifier: GPL-2.0-only */
#include "units.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup_unit.h"
#include "macro.h"
#include "varlink_frame.h"

/* Where systemd reads unit files from (systemd.unit(5), system units). */
static const char *const unit_dirs[] = {
    "/etc/systemd/system",           "/run/systemd/transient",  "/run/systemd/system",
    "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system",
};

/* Units nest in slices a few levels deep (user.slice/user-1000.slice/
 * user@1000.service/app.slice/x.service): deeper trees are not walked. */
#define CGROUP_DEPTH_MAX 8

static bool unit_file_exists(const char *unit)
{
    char path[PATH_MAX];
    struct stat st;

    for (size_t i = 0; i < ARRAY_SIZE(unit_dirs); i++) {
        snprintf(path, sizeof(path), "%s/%s", unit_dirs[i], unit);
        if (stat(path, &st) == 0)
            return true;
    }
    return false;
}

static void closedirp(DIR **d)
{
    if (*d)
        closedir(*d);
}

/* Is there a directory named unit in the tree at fd (which it takes)? */
static bool cgroup_dir_exists(int fd, const char *unit, int depth)
{
    _cleanup_(closedirp) DIR *dir = fdopendir(fd);
    struct dirent *e;

    if (!dir) {
        close(fd);
        return false;
    }
    while ((e = readdir(dir))) {
        int sub;

        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        if (strcmp(e->d_name, unit) == 0)
            return true;
        if (depth >= CGROUP_DEPTH_MAX)
            continue;
        sub = openat(dirfd(dir), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sub >= 0 && cgroup_dir_exists(sub, unit, depth + 1))
            return true;
    }
    return false;
}

static bool seen_in_ring(const struct ring *r, const char *unit)
{
    for (size_t s = 0; s < r->n; s++)
        for (uint32_t i = 0; i < r->snaps[s]->n; i++) {
            uint32_t cgroup = r->snaps[s]->records[i].cgroup;

            if (cgroup && cgroup_in_unit(intern_string_get(&r->intern, cgroup), unit))
                return true;
        }
    return false;
}

json_t *unit_unseen_error(struct daemon *d, const char *unit)
{
    int fd;

    if (seen_in_ring(&d->ring, unit))
        return NULL;
    fd = d->cgroups ? open(cgroups_mount(d->cgroups), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0 && cgroup_dir_exists(fd, unit, 0))
        return NULL;
    return vl_error_new(unit_file_exists(unit) ? "io.offcpud.UnitWithoutCgroup"
                                               : "io.offcpud.UnitNotFound",
                        json_pack("{s:s}", "unit", unit));
}
