/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A CPython thread's user stack holds its native frames, a marker, then its
 * Python frames (OFFCPU_PY_* in offcpu.h). Each _PyEval_EvalFrameDefault
 * among the native frames ran one run of Python frames: from the innermost
 * up to the first that began an evaluation (OFFCPU_PY_ENTRY). The weave puts
 * each run in place of the frame that ran it; the native frames between
 * them stay (C extensions, time.sleep's C code, the lock). Where runs and
 * interpreter frames do not pair up, nothing is guessed: the native stack
 * stays as it is, and the Python frames follow its innermost frame behind
 * PYTHON_MARK_UNWOVEN. docs/python-frames.md, section 4.
 */
#ifndef PYTHON_WEAVE_H
#define PYTHON_WEAVE_H

#include <stddef.h>
#include <stdint.h>

#include "frame_cache.h"
#include "intern.h"
#include "offcpu.h"

/* Frames that say what a walk met, not code that ran. */
#define PYTHON_MARK_GIL       "[python: waiting for the GIL]"
#define PYTHON_MARK_TRUNCATED "[python: truncated]"
#define PYTHON_MARK_UNWOVEN   "[python: not woven]"

/* The strings a weave interned for its marks: released once the stack is. */
struct python_weave_held {
    uint32_t ids[4]; /* two marks at most: the GIL's, and a cut or unwoven walk's */
    unsigned n;
};

/* Room the weave may add to a stack's frames: its marks. */
#define PYTHON_WEAVE_EXTRA 3

/* Index of s's Python marker (s a user stack), or s->nr for a stack without. */
uint32_t python_marker_index(const struct offcpu_stack *s);

/* The frames of user stack s of process tgid (image exec_id), named leaf
 * first in named[0, n) from its native frames, with its Python frames
 * (after its marker, s->ip[marker]) woven in; named has room for cap
 * (s->nr + PYTHON_WEAVE_EXTRA will do). Returns the new count. *unwoven is
 * set when they could not be paired. */
size_t python_weave(struct frame_cache *c, struct intern *in, pid_t tgid, uint32_t exec_id,
                    const struct offcpu_stack *s, uint32_t marker, struct named_frame *named,
                    size_t n, size_t cap, struct python_weave_held *held, bool *unwoven);

/* Releases what held holds. */
void python_weave_release(struct intern *in, struct python_weave_held *held);

#endif
