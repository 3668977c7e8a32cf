/* SPDX-License-Identifier: GPL-2.0-only */
#include "svg_timeline.h"

#include "render.h"
#include "svg_palette.h"

#define LEGEND_H 14.0

static void put_bucket(FILE *f, const struct timeline *tl, size_t i, double x, double bottom,
                       double w, double px_per_ns)
{
    const struct timeline_bucket *b = &tl->buckets[i];
    char when[32], ns[32];

    render_time(b->start_ns, when, sizeof(when));
    render_ns((int64_t)b->total_ns, ns, sizeof(ns));
    fprintf(f, "<g><title>%s: %s off-CPU", when, ns);
    for (unsigned s = 0; s < FLAME_STATE_COUNT; s++)
        if (b->state_ns[s]) {
            render_ns((int64_t)b->state_ns[s], ns, sizeof(ns));
            fprintf(f, ", %c %s", s < FLAME_STATE_COUNT - 1 ? FLAME_STATES[s] : '?', ns);
        }
    fputs("</title>", f);
    /* an invisible full-height bar: the whole column answers the pointer */
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill-opacity=\"0\"/>", x,
            bottom - tl->peak_ns * px_per_ns, w, tl->peak_ns * px_per_ns);
    for (unsigned s = 0; s < FLAME_STATE_COUNT; s++) {
        double h = b->state_ns[s] * px_per_ns;

        if (h <= 0)
            continue;
        bottom -= h;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>", x,
                bottom, w, h, svg_state_color(s));
    }
    fputs("</g>\n", f);
}

void svg_timeline_write(FILE *f, const struct timeline *tl, double x, double y, double w, double h)
{
    double bar = tl->n ? w / tl->n : w, bottom = y + LEGEND_H + h;
    double px_per_ns = tl->peak_ns ? h / tl->peak_ns : 0;
    char when[32], peak[32], step[32], end[32];

    render_ns(tl->bucket_ns, step, sizeof(step));
    render_ns((int64_t)tl->peak_ns, peak, sizeof(peak));
    render_time(tl->n ? tl->buckets[tl->peak].start_ns : 0, when, sizeof(when));
    fprintf(f,
            "<g id=\"timeline\">\n<text x=\"%.2f\" y=\"%.2f\">off-CPU time per %s: peak %s at %s",
            x, y + LEGEND_H - 3, step, peak, when);
    fputs(" (S blue, D red, R yellow, I grey)</text>\n", f);
    for (size_t i = 0; i < tl->n; i++)
        put_bucket(f, tl, i, x + i * bar, bottom, bar, px_per_ns);
    render_time(tl->n ? tl->buckets[0].start_ns : 0, when, sizeof(when));
    render_time(tl->n ? tl->buckets[tl->n - 1].start_ns + tl->bucket_ns : 0, end, sizeof(end));
    fprintf(f,
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#888\"/>\n"
            "<text x=\"%.2f\" y=\"%.2f\">%s</text><text x=\"%.2f\" y=\"%.2f\" "
            "text-anchor=\"end\">%s</text>\n</g>\n",
            x, bottom, x + w, bottom, x, bottom + LEGEND_H, when, x + w, bottom + LEGEND_H, end);
}
