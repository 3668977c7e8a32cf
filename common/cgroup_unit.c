/* SPDX-License-Identifier: GPL-2.0-only */
#include "cgroup_unit.h"

#include <string.h>

#include "macro.h"

const char *cgroup_unit(const char *cgroup, char *buf, size_t size)
{
    static const char *const suffixes[] = {".service", ".scope", ".slice", ".socket",
                                           ".mount",   ".swap",  ".timer"};
    const char *end = cgroup + strlen(cgroup);

    while (end > cgroup) {
        const char *start = end;
        size_t len;

        while (start > cgroup && start[-1] != '/')
            start--;
        len = end - start;
        for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
            size_t sl = strlen(suffixes[i]);

            if (len > sl && len < size && memcmp(end - sl, suffixes[i], sl) == 0) {
                memcpy(buf, start, len);
                buf[len] = '\0';
                return buf;
            }
        }
        end = start > cgroup ? start - 1 : cgroup;
    }
    buf[0] = '\0';
    return buf;
}

bool unit_name_valid(const char *name)
{
    char buf[256];

    return !strchr(name, '/') && strcmp(cgroup_unit(name, buf, sizeof(buf)), name) == 0;
}

bool cgroup_in_unit(const char *path, const char *unit)
{
    size_t n = strlen(unit);

    for (const char *p = strstr(path, unit); p; p = strstr(p + 1, unit))
        if (p > path && p[-1] == '/' && (p[n] == '\0' || p[n] == '/'))
            return true;
    return false;
}
