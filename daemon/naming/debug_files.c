/* SPDX-License-Identifier: GPL-2.0-only */
#include "debug_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int open_regular(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;

    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -ENOENT;
    }
    return fd;
}

static int by_build_id(const char *root, const struct elf_debug_ref *ref)
{
    char hex[2 * sizeof(ref->build_id) + 1], path[PATH_MAX];

    for (size_t i = 0; i < ref->build_id_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", ref->build_id[i]);
    if (snprintf(path, sizeof(path), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", root, hex,
                 hex + 2) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    return open_regular(path);
}

static int by_debuglink(const char *root, const char *file, const struct elf_debug_ref *ref)
{
    static const char *const places[] = {"%s%.*s/%s", "%s%.*s/.debug/%s",
                                         "%s/usr/lib/debug%.*s/%s"};
    const char *slash = strrchr(file, '/');
    int dirlen = slash ? (int)(slash - file) : 0;
    char path[PATH_MAX];

    for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
        int fd;

        if (snprintf(path, sizeof(path), places[i], root, dirlen, file, ref->debuglink) >=
            (int)sizeof(path))
            continue;
        /* the debug link may name the file itself: that one has no more to give */
        if (strcmp(path + strlen(root), file) == 0)
            continue;
        fd = open_regular(path);
        if (fd >= 0)
            return fd;
    }
    return -ENOENT;
}

int debug_file_open(pid_t pid, const char *path, const struct elf_debug_ref *ref)
{
    char roots[2][32];

    snprintf(roots[0], sizeof(roots[0]), "/proc/%d/root", (int)pid);
    roots[1][0] = '\0';
    for (size_t i = 0; i < 2; i++) {
        int fd = ref->build_id_len ? by_build_id(roots[i], ref) : -ENOENT;

        if (fd < 0 && ref->debuglink[0] && path)
            fd = by_debuglink(roots[i], path, ref);
        if (fd >= 0)
            return fd;
    }
    return -ENOENT;
}
