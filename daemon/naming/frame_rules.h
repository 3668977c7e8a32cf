/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which named frames a stack keeps, and what a stack with none reads as: the
 * rules both a drained snapshot (snapshot_build.c) and a live task's stacks
 * (stuck.c) follow, so that the two name one stack alike.
 */
#ifndef FRAME_RULES_H
#define FRAME_RULES_H

#include <stdbool.h>
#include <stdint.h>

/* A stack that has no frames of its own reads as one of these. */
#define FRAME_MARK_MISSED_USER   "[Missed User Stack]" /* the kernel could not take it */
#define FRAME_MARK_MISSED_KERNEL "[Missed Kernel Stack]"
#define FRAME_MARK_NEW_TASK      "[new task]" /* a task's first run: no user stack yet */
#define FRAME_MARK_EXEC          "[exec]"     /* blocked in exec: the old image is gone */
#define FRAME_MARK_KERNEL        "[kernel]"   /* a kernel stack, collapsed on request */

/* What a walk from the leaf does with one named frame. */
enum frame_step {
    FRAME_STEP_KEEP, /* the frame joins the stack */
    FRAME_STEP_DROP, /* the tracer's own frame at the leaf end, where the stack was taken */
    FRAME_STEP_LAST, /* joins the stack, and ends it: a frame where a stack begins */
    /* ends the stack with one "[unknown]" in its place: a user frame in no
     * mapping, where the frame-pointer chain left known code and what follows
     * is junk */
    FRAME_STEP_UNKNOWN_LAST,
};

/* Frame i of a stack (0: the leaf), whose naming returned result (0,
 * SYMBOLIZER_SKIP, SYMBOLIZER_ROOT or a negative errno), after kept frames
 * were kept. */
enum frame_step frame_rule(bool kernel, uint32_t i, uint32_t kept, int result);

#endif
