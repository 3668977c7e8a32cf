/* SPDX-License-Identifier: GPL-2.0-only */
#include "timeline_text.h"

#include "render.h"

/* eighths of a character cell, from low to full */
static const char *const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
#define NO_DATA_CELL "░"

static const char *state_name(unsigned s)
{
    static const char *const names[FLAME_STATE_COUNT] = {"S", "D", "R", "I", "other"};

    return names[s];
}

/* One row on its own scale, its largest interval said at its end: a few ms
 * of D beside seconds of S would be flat on a common one. */
static void sparkline(FILE *f, const struct timeline *tl, const char *label, int state)
{
    uint64_t peak = state < 0 ? tl->peak_ns : tl->state_peak_ns[state];
    char max[32];

    fprintf(f, "%6s ", label);
    for (size_t i = 0; i < tl->n; i++) {
        uint64_t ns = state < 0 ? tl->buckets[i].total_ns : tl->buckets[i].state_ns[state];
        uint64_t eighth = peak ? ns * 8 / peak : 0;

        /* nothing is a blank, anything at all at least the lowest bar, and an
         * interval the daemon was not running shaded: not quiet, unknown */
        if (tl->buckets[i].no_data)
            fputs(NO_DATA_CELL, f);
        else if (!ns)
            fputc(' ', f);
        else
            fputs(bars[eighth < 8 ? eighth : 7], f);
    }
    fprintf(f, "  max %s\n", render_ns((int64_t)peak, max, sizeof(max)));
}

/* The intervals offcpud was not running, one line each. */
static void gaps(FILE *f, const struct timeline *tl)
{
    for (size_t i = 0; i < tl->n_gaps; i++) {
        char from[32], to[32], length[32];

        fprintf(f, "no data from %s to %s (%s): offcpud was not running\n",
                render_time(tl->gaps[i].start_ns, from, sizeof(from)),
                render_time(tl->gaps[i].end_ns, to, sizeof(to)),
                render_ns(tl->gaps[i].end_ns - tl->gaps[i].start_ns, length, sizeof(length)));
    }
}

static const char *ns_cell(uint64_t ns, char *buf, size_t size)
{
    return ns ? render_ns((int64_t)ns, buf, size) : "0";
}

static void row(FILE *f, const struct timeline_bucket *b, const bool *seen)
{
    char when[32], ns[32];

    fprintf(f, "%-20s", render_time(b->start_ns, when, sizeof(when)));
    if (b->no_data) {
        fprintf(f, " %10s\n", "no data");
        return;
    }
    fprintf(f, " %10s", ns_cell(b->total_ns, ns, sizeof(ns)));
    for (unsigned s = 0; s < FLAME_STATE_COUNT; s++)
        if (seen[s])
            fprintf(f, " %10s", ns_cell(b->state_ns[s], ns, sizeof(ns)));
    if (b->missing_ns)
        fprintf(f, "  (no data for %s of it)", render_ns(b->missing_ns, ns, sizeof(ns)));
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
    gaps(f, tl);
    fprintf(f, "\n%-20s %10s", "interval from", "total");
    for (unsigned s = 0; s < FLAME_STATE_COUNT; s++)
        if (seen[s])
            fprintf(f, " %10s", state_name(s));
    fputc('\n', f);
    for (size_t i = 0; i < tl->n; i++)
        row(f, &tl->buckets[i], seen);
}
