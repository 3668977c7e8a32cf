/* SPDX-License-Identifier: GPL-2.0-only */
#include "tasks_unseen.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

#include "varlink_frame.h"
#include "withheld.h"

/* What the ring holds of one task, at any time. */
struct task_history {
    size_t records;
    size_t in_window;   /* of them, those the peer may read */
    int64_t first_ns;   /* start of the first snapshot with its records */
    int64_t last_ns;    /* end of the last */
    uint32_t other_uid; /* of its newest record q->uid may not read */
    bool withheld;      /* there is one */
};

static bool is_task(const struct query *q, const struct record *rec)
{
    return (q->pid < 0 || rec->tgid == q->pid) && (q->tid < 0 || rec->tid == q->tid);
}

static void task_history_read(const struct ring *r, const struct query *q, struct task_history *h)
{
    *h = (struct task_history){0};
    for (size_t s = 0; s < r->n; s++) {
        const struct snapshot *snap = r->snaps[s];

        for (uint32_t i = 0; i < snap->n; i++) {
            const struct record *rec = &snap->records[i];

            if (!is_task(q, rec))
                continue;
            if (!h->records++)
                h->first_ns = snap->start_ns;
            h->last_ns = snap->end_ns;
            if (q->uid < 0 || rec->uid == q->uid)
                h->in_window += query_snapshot_in_window(q, snap);
            else { /* the newest: whose it became */
                h->other_uid = rec->uid;
                h->withheld = true;
            }
        }
    }
}

/* /proc/N is there for a thread's tid as for a process's pid (the daemon
 * sees every pid namespace's tasks by the ids of its own). */
static bool task_runs(int64_t id)
{
    char path[32];
    struct stat st;

    snprintf(path, sizeof(path), "/proc/%" PRId64, id);
    return stat(path, &st) == 0;
}

json_t *task_unseen_error(struct daemon *d, const struct query *q)
{
    const struct ring *r = &d->ring;
    struct task_history h;
    json_t *params;

    if (q->pid < 0 && q->tid < 0)
        return NULL;
    task_history_read(r, q, &h);
    if (h.in_window)
        return NULL;
    /* then whose it is: when it ran and exited is its owner's to learn */
    if (h.withheld)
        return withheld_error(d, q, h.other_uid);
    if (task_runs(q->tid >= 0 ? q->tid : q->pid))
        return NULL;
    params = task_ids_json(q);
    if (!h.records) {
        json_object_update_new(
            params, json_pack("{s:o, s:o}", "oldest_ns",
                              r->n ? json_integer(r->snaps[0]->start_ns) : json_null(), "newest_ns",
                              r->n ? json_integer(r->snaps[r->n - 1]->end_ns) : json_null()));
        return vl_error_new("io.offcpud.TaskNotSeen", params);
    }
    json_object_update_new(params, json_pack("{s:I, s:I, s:I}", "first_ns", (json_int_t)h.first_ns,
                                             "last_ns", (json_int_t)h.last_ns, "retention_ns",
                                             (json_int_t)d->cfg.retention_ns));
    return vl_error_new("io.offcpud.TaskExited", params);
}
