/* SPDX-License-Identifier: GPL-2.0-only */
#include "selection_flamegraph.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "daemon_call.h"
#include "idle_note.h"
#include "flame_layout.h"
#include "flame_tree.h"
#include "macro.h"
#include "render.h"
#include "selection.h"
#include "timeline.h"

/* columns of the strip above the graph */
#define STRIP_BUCKETS 120

/* The timeline of exactly the window the stacks came from. */
static int ask_timeline(const struct globals *g, const json_t *params, const json_t *flame,
                        json_t **ret)
{
    json_auto_t *p = json_deep_copy(params);

    json_object_del(p, "since_ns");
    json_object_del(p, "until_ns");
    json_object_del(p, "group_by");
    json_object_set(p, "start_ns", json_object_get(flame, "start_ns"));
    json_object_set(p, "end_ns", json_object_get(flame, "end_ns"));
    json_object_set_new(p, "buckets", json_integer(STRIP_BUCKETS));
    return daemon_call(g, "io.offcpud.Timeline", p, ret);
}

static int draw(FILE *out, const json_t *params, const json_t *flame, const struct timeline *tl,
                const struct flamegraph_request *req, struct flamegraph_written *written)
{
    int64_t start = json_integer_value(json_object_get(flame, "start_ns"));
    int64_t end = json_integer_value(json_object_get(flame, "end_ns"));
    char title[320], window[128];
    struct flame_tree t;
    int r;

    if (flame_tree_init(&t, req->colors == SVG_COLOR_STATES) < 0)
        return fail("out of memory");
    r = flame_tree_add_frames(&t, flame);
    if (r == 0) {
        struct svg_flamegraph o = {
            .title = title,
            .subtitle = window,
            .colors = req->colors,
            .min_px = req->min_px,
            .max_frames = SVG_MAX_FRAMES,
            .max_bytes = SVG_MAX_BYTES,
            .timeline = tl,
        };

        selection_title(params, "Off-CPU time", title, sizeof(title));
        render_window(start, end, window, sizeof(window));
        written->stacks = (size_t)json_integer_value(json_object_get(flame, "stacks"));
        written->total_ns = t.nodes[0].ns[FLAME_NOW];
        r = svg_flamegraph_write(out, &t, &o);
    }
    flame_tree_done(&t);
    if (r == -EINVAL)
        return fail("the daemon's reply has a frame without a parent, a name or time");
    return r < 0 ? fail("writing the SVG: %s", strerror(-r)) : EXIT_OK;
}

int selection_flamegraph(const struct globals *g, json_t *params,
                         const struct flamegraph_request *req, FILE *out,
                         struct flamegraph_written *written)
{
    json_auto_t *flame = NULL, *timeline_reply = NULL;
    struct timeline tl = {0};
    int r;

    if (req->colors == SVG_COLOR_STATES)
        json_object_set_new(params, "group_by", json_pack("[s]", "state"));
    /* the daemon merges the stacks, and sends the frames too narrow to be
     * drawn on their own summed: a window of a busy machine holds 100,000
     * stacks. Rounded down, so that it never sums a frame drawn on its own. */
    json_object_set_new(params, "min_width_ppb",
                        json_integer((json_int_t)floor(svg_flamegraph_share(req->min_px) * 1e9)));
    json_object_set_new(params, "max_frames",
                        json_integer((json_int_t)flame_layout_apart(SVG_MAX_FRAMES)));
    r = daemon_call(g, "io.offcpud.Flame", params, &flame);
    json_object_del(params, "min_width_ppb");
    json_object_del(params, "max_frames");
    if (r != EXIT_OK)
        return r;
    idle_note(g, flame, NULL);
    if (json_integer_value(json_object_get(flame, "stacks")) == 0)
        return selection_no_data(params, "that window");
    if (req->timeline) {
        r = ask_timeline(g, params, flame, &timeline_reply);
        if (r != EXIT_OK)
            return r;
        r = timeline_read(timeline_reply, &tl);
        if (r < 0)
            return fail("reading the daemon's timeline: %s", strerror(-r));
    }
    r = draw(out, params, flame, req->timeline ? &tl : NULL, req, written);
    timeline_done(&tl);
    return r;
}
