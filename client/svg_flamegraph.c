/* SPDX-License-Identifier: GPL-2.0-only */
#include "svg_flamegraph.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flame_layout.h"
#include "macro.h"
#include "name_escape.h"
#include "render.h"
#include "svg_palette.h"
#include "svg_timeline.h"
#include "svg_xml.h"

extern const char flamegraph_script[];

/* Geometry, in px. CHAR_WIDTH is that of the monospace label font. */
#define WIDTH      1200.0
#define PAD        10.0
#define FRAME_H    16.0
#define FONT       12.0
#define CHAR_WIDTH 7.2
#define HEADER     60.0
#define STRIP_H    80.0
#define FOOTER     30.0
#define FRAMES_W   (WIDTH - 2 * PAD)

struct drawing {
    FILE *f;
    const struct flame_tree *t;
    const struct svg_flamegraph *o;
    double px_per_ns;
    double top;       /* y of the deepest row */
    unsigned depth;   /* of the deepest row */
    double max_delta; /* SVG_COLOR_DIFF: the largest change of rate, ns/s */
};

/* The first chars that fit in w px, whole UTF-8 characters, ".." if cut;
 * counted as shown, escapes and all. */
static void put_label(FILE *f, const char *raw, double w)
{
    _cleanup_free_ char *text = name_escape(raw, NAME_ESCAPE_CONTROL);
    const char *name = text ?: "?", *end = name;
    int fit = (int)floor((w - 6) / CHAR_WIDTH), n = 0;

    for (; *end; end++)
        n += ((unsigned char)*end & 0xc0) != 0x80;
    if (n <= fit) {
        svg_put_text(f, name);
        return;
    }
    n = 0;
    for (end = name; *end; end++) {
        if (((unsigned char)*end & 0xc0) != 0x80 && ++n > fit - 2)
            break;
    }
    svg_put_textn(f, name, (size_t)(end - name));
    fputs("..", f);
}

static double rate(const struct drawing *d, const struct flame_box *b, enum flame_window w)
{
    double s = w == FLAME_NOW ? d->o->now_s : d->o->before_s;

    return s > 0 ? (double)b->ns[w] / s : 0;
}

static unsigned dominant_state(const struct drawing *d, const struct flame_box *b)
{
    const uint64_t *ns = d->t->state_ns[b->node];
    unsigned best = 0;

    for (unsigned i = 1; i < FLAME_STATE_COUNT; i++)
        if (ns[i] > ns[best])
            best = i;
    return best;
}

static void put_fill(const struct drawing *d, const struct flame_box *b, const char *name)
{
    char color[32];

    if (d->o->colors == SVG_COLOR_DIFF) {
        double delta = rate(d, b, FLAME_NOW) - rate(d, b, FLAME_BEFORE);

        svg_diff_color(d->max_delta > 0 ? delta / d->max_delta : 0, color, sizeof(color));
    } else if (d->o->colors == SVG_COLOR_STATES && !b->merged) {
        snprintf(color, sizeof(color), "%s", svg_state_color(dominant_state(d, b)));
    } else {
        svg_frame_color(b->merged ? FLAME_ROOT : d->t->nodes[b->node].kind, name, color,
                        sizeof(color));
    }
    fprintf(d->f, " fill=\"%s\"", color);
}

/* A diff's tooltip: both rates and the change, "new" and "vanished" said
 * in words (a percentage of nothing means nothing). */
static void put_change(const struct drawing *d, const struct flame_box *b)
{
    double r0 = rate(d, b, FLAME_BEFORE), r1 = rate(d, b, FLAME_NOW);
    char now[32], before[32], change[32];

    render_ns((int64_t)r0, before, sizeof(before));
    render_ns((int64_t)r1, now, sizeof(now));
    render_ns((int64_t)fabs(r1 - r0), change, sizeof(change));
    fprintf(d->f, " (before %s/s, after %s/s, ", before, now);
    if (b->ns[FLAME_BEFORE] == 0)
        fputs("new)", d->f);
    else if (b->ns[FLAME_NOW] == 0)
        fputs("vanished)", d->f);
    else
        fprintf(d->f, "change %c%s/s, %+.0f%%)", r1 < r0 ? '-' : '+', change, 100 * (r1 - r0) / r0);
}

/* The tooltip after the name: " (time, share)" and what the colours mean. */
static void put_figures(const struct drawing *d, const struct flame_box *b)
{
    uint64_t total = d->t->nodes[0].ns[FLAME_NOW];
    char now[32];

    if (d->o->colors == SVG_COLOR_DIFF) {
        put_change(d, b);
        return;
    }
    render_ns((int64_t)b->ns[FLAME_NOW], now, sizeof(now));
    fprintf(d->f, " (%s, %.2f%%", now, total ? 100.0 * b->ns[FLAME_NOW] / total : 0);
    if (d->o->colors == SVG_COLOR_STATES && !b->merged && b->ns[FLAME_NOW])
        for (unsigned i = 0, first = 1; i < FLAME_STATE_COUNT; i++) {
            uint64_t ns = d->t->state_ns[b->node][i];
            char letter[2] = {FLAME_STATES[i], '\0'};

            if (!ns)
                continue;
            fprintf(d->f, "%s %s %.0f%%", first ? ";" : ",",
                    i < FLAME_STATE_COUNT - 1 ? letter : "other", 100.0 * ns / b->ns[FLAME_NOW]);
            first = 0;
        }
    fputc(')', d->f);
}

/* A diff's frame is as wide as its stacks at their larger: the time they
 * have now, in colour, then hatched the time they lost since before (all of
 * a vanished frame); data-keep, the share in colour, for flamegraph.js's zoom. */
static void put_lost(const struct drawing *d, const struct flame_box *b, double x, double y,
                     double w)
{
    double keep = b->width ? (double)b->ns[FLAME_NOW] / b->width : 1;

    if (keep > 1)
        keep = 1;
    if (w * (1 - keep) < 0.05)
        return;
    fprintf(d->f,
            "<rect class=\"lost\" data-keep=\"%.4f\" x=\"%.3f\" y=\"%.0f\" width=\"%.3f\" "
            "height=\"%.0f\" fill=\"url(#lost)\"/>",
            keep, x + w * keep, y, w * (1 - keep), FRAME_H - 1);
}

static void put_box(const struct drawing *d, const struct flame_box *b)
{
    const struct flame_node *node = &d->t->nodes[b->node];
    double x = PAD + b->x * d->px_per_ns, w = b->width * d->px_per_ns;
    double y = d->top + (d->depth - b->depth) * FRAME_H;
    char merged[64];
    const char *name = node->name;

    if (b->merged) {
        snprintf(merged, sizeof(merged), "[%u small frames]", b->merged);
        name = merged;
    }
    fprintf(d->f, "<g class=\"f\"><title>");
    svg_put_text(d->f, name);
    put_figures(d, b);
    fprintf(d->f, "</title><rect x=\"%.3f\" y=\"%.0f\" width=\"%.3f\" height=\"%.0f\"", x, y, w,
            FRAME_H - 1);
    put_fill(d, b, name);
    fputs("/>", d->f);
    if (d->o->colors == SVG_COLOR_DIFF)
        put_lost(d, b, x, y, w);
    if (w - 6 >= 3 * CHAR_WIDTH) {
        fprintf(d->f, "<text x=\"%.3f\" y=\"%.0f\">", x + 3, y + FONT);
        put_label(d->f, name, w);
        fputs("</text>", d->f);
    }
    fputs("</g>\n", d->f);
}

/* The largest change of a frame's rate but the root's (which sums every
 * change): the reddest and the bluest frames are those that changed most. */
static void diff_scale(struct drawing *d, const struct flame_layout *l)
{
    for (size_t i = 1; i < l->n; i++) {
        double delta = fabs(rate(d, &l->boxes[i], FLAME_NOW) - rate(d, &l->boxes[i], FLAME_BEFORE));

        if (delta > d->max_delta)
            d->max_delta = delta;
    }
}

/* Time lost since before: blue stripes on pale blue, readable beside the
 * shrunk frames' solid blue */
#define LOST_HATCH                                                                                 \
    "<defs><pattern id=\"lost\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "         \
    "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"rgb(225,232,255)\"/>"   \
    "<rect width=\"2.5\" height=\"6\" fill=\"rgb(70,90,220)\"/></pattern></defs>\n"

static void put_header(const struct drawing *d, double height)
{
    FILE *f = d->f;

    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
            "xmlns=\"http://www.w3.org/2000/svg\">\n"
            "<style>text{font-family:monospace;font-size:%.0fpx;fill:#000}"
            "#frames text{pointer-events:none}#frames rect{cursor:pointer}"
            ".button{cursor:pointer;fill:#24c}#title{font-size:17px}</style>\n"
            "%s<rect width=\"100%%\" height=\"100%%\" fill=\"rgb(250,250,250)\"/>\n"
            "<text id=\"title\" x=\"%.0f\" y=\"24\" text-anchor=\"middle\">",
            WIDTH, height, WIDTH, height, FONT, d->o->colors == SVG_COLOR_DIFF ? LOST_HATCH : "",
            WIDTH / 2);
    svg_put_text(f, d->o->title);
    fprintf(f, "</text>\n<text id=\"subtitle\" x=\"%.0f\" y=\"44\" text-anchor=\"middle\">",
            WIDTH / 2);
    svg_put_text(f, d->o->subtitle);
    fprintf(
        f,
        "</text>\n"
        "<text id=\"reset\" class=\"button\" x=\"%.0f\" y=\"24\" opacity=\"0\">Reset zoom</text>\n"
        "<text id=\"search\" class=\"button\" x=\"%.0f\" y=\"24\" "
        "text-anchor=\"end\">Search</text>\n"
        "<text id=\"clear\" class=\"button\" x=\"%.0f\" y=\"44\" text-anchor=\"end\" "
        "opacity=\"0\">Clear search</text>\n"
        "<text id=\"details\" x=\"%.0f\" y=\"%.0f\"> </text>\n"
        "<text id=\"matched\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\"></text>\n",
        PAD, WIDTH - PAD, WIDTH - PAD, PAD, height - 10, WIDTH - PAD, height - 10);
}

/* What a box costs at most besides its name: markup and figures. */
#define BOX_BYTES 200
/* and a diff's hatched part */
#define LOST_BYTES 130

/* The frames' text at most: a name in the tooltip, and in the label as much
 * as the box has room for (4 bytes a character, at most). */
static size_t layout_bytes(const struct flame_tree *t, const struct svg_flamegraph *o,
                           const struct flame_layout *l)
{
    size_t box_bytes = BOX_BYTES + (o->colors == SVG_COLOR_DIFF ? LOST_BYTES : 0);
    double px_per_ns = FRAMES_W / t->nodes[0].width;
    size_t bytes = 0;

    for (size_t i = 0; i < l->n; i++) {
        const struct flame_box *b = &l->boxes[i];
        size_t name = b->merged ? 0 : strlen(t->nodes[b->node].name);
        size_t label = 4 * (size_t)(b->width * px_per_ns / CHAR_WIDTH);

        bytes += box_bytes + name + (label < name ? label : name);
    }
    return bytes;
}

double svg_flamegraph_share(double px)
{
    return px / FRAMES_W;
}

/* Frames narrower than o->min_px merged, and more until they are at most
 * o->max_frames and their text fits o->max_bytes (C++ names can be long). */
static int lay_out(const struct flame_tree *t, const struct svg_flamegraph *o,
                   struct flame_layout *l)
{
    uint64_t min_ns = (uint64_t)ceil(svg_flamegraph_share(o->min_px) * t->nodes[0].width);
    size_t max_frames = o->max_frames;

    for (;;) {
        int r = flame_layout_make(l, t, min_ns, max_frames);
        size_t bytes;

        if (r < 0)
            return r;
        bytes = layout_bytes(t, o, l);
        if (bytes <= o->max_bytes || l->n <= 1)
            return 0;
        /* fewer in proportion, with a margin: names differ in length */
        max_frames = (size_t)(0.9 * l->n * o->max_bytes / bytes);
        flame_layout_done(l);
    }
}

int svg_flamegraph_write(FILE *f, const struct flame_tree *t, const struct svg_flamegraph *o)
{
    uint64_t total = t->nodes[0].ns[FLAME_NOW], width = t->nodes[0].width;
    struct drawing d = {.f = f, .t = t, .o = o, .px_per_ns = width ? FRAMES_W / width : 0};
    struct flame_layout l;
    double height;
    int r;

    r = lay_out(t, o, &l);
    if (r < 0)
        return r;
    d.depth = l.max_depth;
    d.top = HEADER + (o->timeline ? STRIP_H : 0);
    height = d.top + (l.max_depth + 1) * FRAME_H + FOOTER;
    if (o->colors == SVG_COLOR_DIFF)
        diff_scale(&d, &l);
    put_header(&d, height);
    if (o->timeline)
        svg_timeline_write(f, o->timeline, PAD, HEADER, FRAMES_W, STRIP_H - 32);
    fprintf(f,
            "<g id=\"frames\" data-left=\"%.0f\" data-width=\"%.0f\" data-char-width=\"%.1f\" "
            "data-total-ns=\"%llu\">\n",
            PAD, FRAMES_W, CHAR_WIDTH,
            (unsigned long long)(o->colors == SVG_COLOR_DIFF ? 0 : total));
    for (size_t i = 0; i < l.n; i++)
        put_box(&d, &l.boxes[i]);
    fprintf(f, "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n",
            flamegraph_script);
    flame_layout_done(&l);
    return ferror(f) ? -EIO : 0;
}
