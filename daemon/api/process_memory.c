/* SPDX-License-Identifier: GPL-2.0-only */
#include "process_memory.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "macro.h"

int process_rss(size_t *ret)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/self/statm", "re");
    unsigned long size, resident;

    if (!f)
        return -errno;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        return -EIO;
    *ret = resident * (size_t)sysconf(_SC_PAGESIZE);
    return 0;
}
