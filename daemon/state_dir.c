/* SPDX-License-Identifier: GPL-2.0-only */
#include "state_dir.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "drain.h"
#include "log.h"
#include "macro.h"
#include "persist.h"
#include "ring_budget.h"

static void state_path(const struct daemon *d, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", d->cfg.state_dir, PERSIST_FILE);
}

/* What the previous instance saw: its snapshots, if the file can be trusted. */
void state_dir_restore(struct daemon *d)
{
    char path[PATH_MAX + 16], aside[PATH_MAX + 64];
    int r;

    state_path(d, path, sizeof(path));
    r = ring_load(&d->ring, path, 2 * d->cfg.memory_limit + (64u << 20));
    if (r == -ENOENT)
        return;
    if (r < 0) {
        /* kept for a post-mortem, but never read again */
        snprintf(aside, sizeof(aside), "%s.untrusted-%lld", path,
                 (long long)(clock_ns(CLOCK_REALTIME) / NSEC_PER_SEC));
        rename(path, aside);
        log_warning("%s cannot be trusted (%s): set aside as %s", path, strerror(-r), aside);
        ring_done(&d->ring);
        ring_init(&d->ring, d->cfg.retention_ns, d->cfg.memory_limit);
        return;
    }
    ring_budget_make_room(&d->ring, 0);
    ring_expire(&d->ring, clock_ns(CLOCK_REALTIME));
    log_info("restored %zu snapshots from %s", d->ring.n, path);
}

/* At exit: the last interval too, then the ring, for the next instance. */
void state_dir_save(struct daemon *d)
{
    char path[PATH_MAX + 16];
    int r;

    drain_run(d);
    if (mkdir(d->cfg.state_dir, 0700) < 0 && errno != EEXIST) {
        log_warning("cannot create %s: %s; the ring is not kept", d->cfg.state_dir,
                    strerror(errno));
        return;
    }
    state_path(d, path, sizeof(path));
    r = ring_save(&d->ring, path);
    if (r < 0)
        log_warning("saving the ring to %s: %s", path, strerror(-r));
    else
        log_info("saved %zu snapshots to %s", d->ring.n, path);
}
