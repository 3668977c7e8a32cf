/* SPDX-License-Identifier: GPL-2.0-only */
#include "access.h"

#include <stdio.h>

#include "macro.h"

enum access access_of(const struct access_policy *policy, const struct peer *p)
{
    if (p->uid == 0)
        return ACCESS_ALL;
    if (policy->gid != (gid_t)-1 && peer_in_group(p, policy->gid))
        return policy->group_all ? ACCESS_ALL : ACCESS_OWN;
    return ACCESS_NONE;
}

bool access_kernel_frames_hidden(const struct peer *p)
{
    _cleanup_fclose_ FILE *f = NULL;
    int level;

    if (p->uid == 0)
        return false;
    f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
    return !f || fscanf(f, "%d", &level) != 1 || level > 1;
}
