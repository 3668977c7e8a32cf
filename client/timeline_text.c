/* SPDX-License-Identifier: GPL-2.0-only */
#include "timeline_text.h"

#include "render.h"

/* eighths of a character cell, from low to full */
static const char *const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

static const char *state_name(unsigned s)
{
    static const char *const names[FLAME_STATE_COUNT] = {"S", "D", "R", "I", "other"};

    return names[s];
}

static void sparkline(FILE *f, const struct timeline *tl, const char *label, int state)
{
    fprintf(f, "%6s ", label);
    for (size_t i = 0; i < tl->n; i++) {
        uint64_t ns = state < 0 ? tl->buckets[i].total_ns : tl->buckets[i].state_ns[state];

        uint64_t eighth = ns * 8 / tl->peak_ns;

        /* nothing is a blank; anything at all at least the lowest bar */
        if (!ns)
            fputc(' ', f);
        else
            fputs(bars[eighth < 8 ? eighth : 7], f);
    }
    fputc('\n', f);
}

static const char *ns_cell(uint64_t ns, char *buf, size_t size)
{
    return ns ? render_ns((int64_t)ns, buf, size) : "0";
}

static void row(FILE *f, const struct timeline_bucket *b, const bool *seen)
{
    char when[32], ns[32];

    fprintf(f, "%-20s %10s", render_time(b->start_ns, when, sizeof(when)),
            ns_cell(b->total_ns, ns, sizeof(ns)));
    for (unsigned s = 0; s < FLAME_STATE_COUNT; s++)
        if (seen[s])
            fprintf(f, " %10s", ns_cell(b->state_ns[s], ns, sizeof(ns)));
    fputc('\n', f);
}

void timeline_text_write(FILE *f, const struct timeline *tl, const char *title)
{
    char step[32], peak[32], when[32];
    bool seen[FLAME_STATE_COUNT] = {false};

    for (size_t i = 0; i < tl->n; i++)
        for (unsigned s = 0; s < FLAME_STATE_COUNT; s++)
            seen[s] |= tl->buckets[i].state_ns[s] > 0;
    fprintf(f, "%s, per %s; peak %s at %s\n", title, render_ns(tl->bucket_ns, step, sizeof(step)),
            render_ns((int64_t)tl->peak_ns, peak, sizeof(peak)),
            render_time(tl->buckets[tl->peak].start_ns, when, sizeof(when)));
    sparkline(f, tl, "total", -1);
    for (unsigned s = 0; s < FLAME_STATE_COUNT; s++)
        if (seen[s])
            sparkline(f, tl, state_name(s), (int)s);
    fprintf(f, "\n%-20s %10s", "interval from", "total");
    for (unsigned s = 0; s < FLAME_STATE_COUNT; s++)
        if (seen[s])
            fprintf(f, " %10s", state_name(s));
    fputc('\n', f);
    for (size_t i = 0; i < tl->n; i++)
        row(f, &tl->buckets[i], seen);
}
