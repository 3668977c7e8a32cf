/* SPDX-License-Identifier: GPL-2.0-only */
/* The colours of offcpuctl's SVGs: by frame kind (the off-CPU "io" blues for
 * user frames, warm for the kernel, aqua for a waker, grey for the rest), by
 * task state, and by growth for a diff. */
#ifndef SVG_PALETTE_H
#define SVG_PALETTE_H

#include <stddef.h>

#include "flame_tree.h"

/* "rgb(r,g,b)" into buf; a frame's shade follows its name, so that one
 * function has one colour across graphs. */
void svg_frame_color(enum flame_kind kind, const char *name, char *buf, size_t size);

/* A state's colour, by its index in FLAME_STATES (FLAME_STATE_COUNT - 1: other). */
const char *svg_state_color(unsigned state);

/* change in [-1, 1]: -1 shrank most (blue), 0 unchanged (white), 1 grew most (red). */
void svg_diff_color(double change, char *buf, size_t size);

#endif
