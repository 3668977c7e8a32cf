/* SPDX-License-Identifier: GPL-2.0-only */
#include "waker_flamegraph.h"

#include <errno.h>

#include "flame_tree.h"
#include "render.h"
#include "selection.h"
#include "svg_flamegraph.h"

int waker_flamegraph_write(FILE *f, const json_t *params, const char *what, const json_t *reply,
                           int64_t start_ns, int64_t end_ns)
{
    char title[320], window[128];
    struct flame_tree t;
    int r;

    if (flame_tree_init(&t, false) < 0)
        return -ENOMEM;
    r = flame_tree_add(&t, reply, FLAME_NOW);
    if (r == 0) {
        struct svg_flamegraph o = {
            .title = title,
            .subtitle = window,
            .colors = SVG_COLOR_FRAMES,
            .min_px = SVG_MIN_PX,
            .max_frames = SVG_MAX_FRAMES,
            .max_bytes = SVG_MAX_BYTES,
        };

        selection_title(params, what, title, sizeof(title));
        render_window(start_ns, end_ns, window, sizeof(window));
        r = svg_flamegraph_write(f, &t, &o);
    }
    flame_tree_done(&t);
    return r;
}
