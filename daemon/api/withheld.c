/* SPDX-License-Identifier: GPL-2.0-only */
#include "withheld.h"

#include <stdlib.h>

#include "array.h"
#include "macro.h"
#include "varlink_frame.h"

static bool is_withheld(const struct ring *r, const struct query *q, const struct record *rec)
{
    return q->uid >= 0 && rec->uid != q->uid && query_record_matches(r, q, rec);
}

uint32_t withheld_owner(const struct ring *r, const struct query *q)
{
    /* the newest snapshot first: a process started by root (a shell,
     * setpriv) and given to a user blocked as root at first; within one
     * snapshot, whose blocking took the most time (records have no order) */
    for (size_t s = r->n; s-- > 0;) {
        const struct snapshot *snap = r->snaps[s];
        const struct record *most = NULL;

        if (!query_snapshot_in_window(q, snap))
            continue;
        for (uint32_t i = 0; i < snap->n; i++)
            if (is_withheld(r, q, &snap->records[i]) &&
                (!most || snap->records[i].total_ns > most->total_ns))
                most = &snap->records[i];
        if (most)
            return most->uid;
    }
    return UID_UNKNOWN;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

size_t withheld_processes(const struct ring *r, const struct query *q)
{
    _cleanup_free_ uint32_t *pids = NULL;
    size_t n = 0, cap = 0, distinct = 0;

    if (q->uid < 0)
        return 0;
    for (size_t s = 0; s < r->n; s++) {
        const struct snapshot *snap = r->snaps[s];

        if (!query_snapshot_in_window(q, snap))
            continue;
        for (uint32_t i = 0; i < snap->n; i++) {
            if (!is_withheld(r, q, &snap->records[i]))
                continue;
            /* short of memory, a count too low: it is a hint */
            if (array_reserve(&pids, &cap, n + 1, sizeof(*pids), 256) < 0)
                break;
            pids[n++] = snap->records[i].tgid;
        }
    }
    if (!n)
        return 0;
    qsort(pids, n, sizeof(*pids), cmp_u32);
    for (size_t i = 0; i < n; i++)
        distinct += i == 0 || pids[i] != pids[i - 1];
    return distinct;
}

json_t *task_ids_json(const struct query *q)
{
    return json_pack("{s:o, s:o}", "pid", q->pid >= 0 ? json_integer(q->pid) : json_null(), "tid",
                     q->tid >= 0 ? json_integer(q->tid) : json_null());
}

json_t *withheld_error(struct daemon *d, const struct query *q, uint32_t uid)
{
    json_t *params = task_ids_json(q);

    json_object_update_new(params, json_pack("{s:o, s:s}", "uid",
                                             uid != UID_UNKNOWN ? json_integer(uid) : json_null(),
                                             "group", d->cfg.socket_group));
    return vl_error_new("io.offcpud.OtherUsersTasks", params);
}
