/* SPDX-License-Identifier: GPL-2.0-only */
#include "svg_timeline.h"

#include "render.h"
#include "svg_palette.h"

#define LEGEND_H 14.0
#define ROW_FONT 9.0

/* The rows drawn: the states with time in the window, in FLAME_STATES order. */
struct rows {
    unsigned state[FLAME_STATE_COUNT];
    unsigned n;
    double h; /* px each */
};

static void put_title(FILE *f, const struct timeline_bucket *b)
{
    char when[32], ns[32];

    render_time(b->start_ns, when, sizeof(when));
    if (b->no_data) {
        fprintf(f, "<title>%s: no data, offcpud was not running</title>", when);
        return;
    }
    render_ns((int64_t)b->total_ns, ns, sizeof(ns));
    fprintf(f, "<title>%s: %s off-CPU", when, ns);
    for (unsigned s = 0; s < FLAME_STATE_COUNT; s++)
        if (b->state_ns[s]) {
            render_ns((int64_t)b->state_ns[s], ns, sizeof(ns));
            fprintf(f, ", %c %s", s < FLAME_STATE_COUNT - 1 ? FLAME_STATES[s] : '?', ns);
        }
    if (b->missing_ns) {
        render_ns(b->missing_ns, ns, sizeof(ns));
        fprintf(f, "; no data for %s of it", ns);
    }
    fputs("</title>", f);
}

/* A column: a bar in each row, as high as the state's time on the row's
 * own scale; hatched whole where the daemon was not running. */
static void put_bucket(FILE *f, const struct timeline *tl, const struct rows *rows, size_t i,
                       double x, double top, double w)
{
    const struct timeline_bucket *b = &tl->buckets[i];

    fputs("<g>", f);
    put_title(f, b);
    /* an invisible full-height bar: the whole column answers the pointer */
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"%s/>", x, top,
            w, rows->n * rows->h, b->no_data ? "url(#nodata)" : "#fff",
            b->no_data ? " class=\"nodata\"" : " fill-opacity=\"0\"");
    for (unsigned r = 0; r < rows->n && !b->no_data; r++) {
        unsigned s = rows->state[r];
        double h = (double)b->state_ns[s] / tl->state_peak_ns[s] * (rows->h - 1);

        if (h <= 0)
            continue;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>", x,
                top + (r + 1) * rows->h - h, w, h, svg_state_color(s));
    }
    fputs("</g>\n", f);
}

/* Each row's name and largest interval, at its left, over the bars. */
static void put_row_labels(FILE *f, const struct timeline *tl, const struct rows *rows, double x,
                           double top)
{
    for (unsigned r = 0; r < rows->n; r++) {
        unsigned s = rows->state[r];
        char peak[32], letter[2] = {FLAME_STATES[s], '\0'};

        render_ns((int64_t)tl->state_peak_ns[s], peak, sizeof(peak));
        fprintf(f,
                "<text class=\"row\" x=\"%.2f\" y=\"%.2f\" font-size=\"%.0f\" "
                "pointer-events=\"none\">%s max %s</text>\n",
                x + 2, top + r * rows->h + ROW_FONT, ROW_FONT,
                s < FLAME_STATE_COUNT - 1 ? letter : "other", peak);
    }
}

void svg_timeline_write(FILE *f, const struct timeline *tl, double x, double y, double w, double h)
{
    double bar = tl->n ? w / tl->n : w, top = y + LEGEND_H, bottom = top + h;
    char when[32], peak[32], step[32], end[32];
    struct rows rows = {.n = 0};

    for (unsigned s = 0; s < FLAME_STATE_COUNT; s++)
        if (tl->state_peak_ns[s])
            rows.state[rows.n++] = s;
    rows.h = rows.n ? h / rows.n : h;
    render_ns(tl->bucket_ns, step, sizeof(step));
    render_ns((int64_t)tl->peak_ns, peak, sizeof(peak));
    render_time(tl->n ? tl->buckets[tl->peak].start_ns : 0, when, sizeof(when));
    fprintf(f,
            "<g id=\"timeline\">\n<defs><pattern id=\"nodata\" width=\"6\" height=\"6\" "
            "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
            "<rect width=\"6\" height=\"6\" fill=\"rgb(235,235,235)\"/>"
            "<rect width=\"2\" height=\"6\" fill=\"rgb(170,170,170)\"/></pattern></defs>\n"
            "<text x=\"%.2f\" y=\"%.2f\">off-CPU time per %s: peak %s at %s",
            x, y + LEGEND_H - 3, step, peak, when);
    fputs(" (a row per state, each on its own scale; S blue, D red, R yellow, I grey; "
          "hatched: no data)</text>\n",
          f);
    for (size_t i = 0; i < tl->n; i++)
        put_bucket(f, tl, &rows, i, x + i * bar, top, bar);
    put_row_labels(f, tl, &rows, x, top);
    render_time(tl->n ? tl->buckets[0].start_ns : 0, when, sizeof(when));
    render_time(tl->n ? tl->buckets[tl->n - 1].start_ns + tl->bucket_ns : 0, end, sizeof(end));
    fprintf(f,
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#888\"/>\n"
            "<text x=\"%.2f\" y=\"%.2f\">%s</text><text x=\"%.2f\" y=\"%.2f\" "
            "text-anchor=\"end\">%s</text>\n</g>\n",
            x, bottom, x + w, bottom, x, bottom + LEGEND_H, when, x + w, bottom + LEGEND_H, end);
}
