/* SPDX-License-Identifier: GPL-2.0-only */
#include "metrics_persist.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FLAG_EXPORTED 1u
#define FLAG_OTHER    2u
/* Longer than any cgroup path the kernel makes. */
#define MAX_CGROUP 4096

void metrics_put(struct codec_writer *w, const struct metrics *m)
{
    size_t n = m ? metrics_series_count(m) : 0;

    codec_put_u32(w, METRICS_NSTATES);
    codec_put(w, PROTOCOL_STATES, METRICS_NSTATES);
    codec_put_u32(w, n);
    for (size_t i = 0; i < n; i++) {
        struct metrics_series_state s;
        uint32_t len;

        metrics_series_at(m, i, &s);
        codec_put_u32(w, (s.exported ? FLAG_EXPORTED : 0) | (s.cgroup ? 0 : FLAG_OTHER));
        if (!s.cgroup)
            s.cgroup = ""; /* "other" */
        len = strlen(s.cgroup);
        codec_put_u32(w, len);
        codec_put(w, s.cgroup, len);
        codec_put(w, &s.recent, sizeof(s.recent));
        codec_put(w, s.c.ns, sizeof(s.c.ns));
        codec_put(w, s.c.switches, sizeof(s.c.switches));
        codec_put(w, s.c.runq_ns, sizeof(s.c.runq_ns));
    }
}

/* Counters of nstates states in the file's order, to ours: ns, switches,
 * then runq_ns where the file has them. */
static bool take_counters(struct codec_reader *rd, const int *ours, uint32_t nstates,
                          struct metrics_counters *c)
{
    uint64_t *to[] = {c->ns, c->switches, c->runq_ns};
    size_t arrays = rd->version >= 4 ? 3 : 2;

    for (size_t a = 0; a < arrays; a++)
        for (uint32_t st = 0; st < nstates; st++) {
            uint64_t v;

            if (!codec_take(rd, &v, sizeof(v)))
                return false;
            to[a][ours[st]] += v;
        }
    return true;
}

int metrics_take(struct codec_reader *rd, struct metrics *m)
{
    char letters[64], cgroup[MAX_CGROUP + 1];
    int ours[sizeof(letters)];
    uint32_t nstates, nseries;

    if (!codec_take(rd, &nstates, 4) || nstates > sizeof(letters) ||
        !codec_take(rd, letters, nstates) || !codec_take(rd, &nseries, 4))
        return -EBADMSG;
    for (uint32_t st = 0; st < nstates; st++)
        ours[st] = (int)protocol_state_index(letters[st]);
    for (uint32_t i = 0; i < nseries; i++) {
        struct metrics_series_state s = {.cgroup = cgroup};
        uint32_t flags, len;

        if (!codec_take(rd, &flags, 4) || flags > (FLAG_EXPORTED | FLAG_OTHER) ||
            !codec_take(rd, &len, 4) || len > MAX_CGROUP || !codec_take(rd, cgroup, len) ||
            memchr(cgroup, '\0', len) || !codec_take(rd, &s.recent, sizeof(s.recent)) ||
            !isfinite(s.recent) || s.recent < 0 || !take_counters(rd, ours, nstates, &s.c))
            return -EBADMSG;
        cgroup[len] = '\0';
        s.exported = flags & FLAG_EXPORTED;
        if (flags & FLAG_OTHER)
            s.cgroup = NULL;
        if (m && metrics_series_restore(m, &s) < 0)
            return -ENOMEM;
    }
    return 0;
}
