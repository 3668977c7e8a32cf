/* SPDX-License-Identifier: GPL-2.0-only */
#include "svg_palette.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Two numbers in [0, 1) from a name: shades that stay put from run to run. */
static void name_shades(const char *name, double *a, double *b)
{
    uint32_t h = 2166136261u;

    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 16777619u;
    *a = (h & 0xffff) / 65536.0;
    *b = (h >> 16) / 65536.0;
}

/* A Python function's frame, "qualname (file.py:line)", or one of the
 * weave's marks, "[python: ...]" (daemon/naming/frame_names.h). */
static bool python_frame(const char *name)
{
    const char *open = strrchr(name, '('), *py;

    if (strncmp(name, "[python: ", 9) == 0)
        return true;
    if (!open || open == name || open[-1] != ' ' || !(py = strstr(open, ".py")))
        return false;
    py += 3;
    if (*py == ':')
        py += 1 + strspn(py + 1, "0123456789");
    return strcmp(py, ")") == 0;
}

void svg_frame_color(enum flame_kind kind, const char *name, char *buf, size_t size)
{
    double a, b;
    int r, g, bl;

    name_shades(name, &a, &b);
    if (kind == FLAME_USER && python_frame(name))
        kind = FLAME_PYTHON;
    switch (kind) {
    case FLAME_PYTHON: /* interpreted code: green, as flamegraph.pl draws a JIT's */
        r = 80 + (int)(50 * a);
        g = 180 + (int)(50 * b);
        bl = 60 + (int)(40 * a);
        break;
    case FLAME_USER: /* flamegraph.pl's "io" palette: off-CPU time is blue */
        r = g = 80 + (int)(60 * a);
        bl = 190 + (int)(55 * b);
        break;
    case FLAME_KERNEL:
        r = 225 + (int)(30 * a);
        g = 150 + (int)(50 * b);
        bl = 60 + (int)(40 * a);
        break;
    case FLAME_SEPARATOR:
        r = g = bl = 150;
        break;
    case FLAME_WAKER: /* flamegraph.pl's "wakeup" palette: the waker is aqua */
        r = 0;
        g = 170 + (int)(50 * a);
        bl = 170 + (int)(50 * b);
        break;
    default: /* the root, thread names, merged frames */
        r = g = bl = 190 + (int)(30 * a);
        break;
    }
    snprintf(buf, size, "rgb(%d,%d,%d)", r, g, bl);
}

const char *svg_state_color(unsigned state)
{
    /* S, D, R, I, other: waiting is blue, I/O red, wanting a CPU yellow */
    static const char *const colors[FLAME_STATE_COUNT] = {
        "rgb(100,130,230)", "rgb(220,60,50)",   "rgb(240,190,40)",
        "rgb(170,170,170)", "rgb(160,100,200)",
    };

    return colors[state < FLAME_STATE_COUNT ? state : FLAME_STATE_COUNT - 1];
}

void svg_diff_color(double change, char *buf, size_t size)
{
    int fade;

    if (change > 1)
        change = 1;
    if (change < -1)
        change = -1;
    fade = 255 - (int)(200 * (change < 0 ? -change : change));
    if (change >= 0)
        snprintf(buf, size, "rgb(255,%d,%d)", fade, fade);
    else
        snprintf(buf, size, "rgb(%d,%d,255)", fade, fade);
}
