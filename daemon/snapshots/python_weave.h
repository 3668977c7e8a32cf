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
 *
 * The weave is a plan, of which frame goes where: a drain's snapshot
 * (snapshot_build.c) and a live task's stacks (stuck.c) name frames each
 * their own way, and weave them alike.
 */
#ifndef PYTHON_WEAVE_H
#define PYTHON_WEAVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "offcpu.h"

/* The interpreter's frame: the function each run of Python frames ran in. */
#define PYTHON_EVAL_FRAME "_PyEval_EvalFrameDefault"

/* Frames that say what a walk met, not code that ran. */
enum python_mark {
    PYTHON_MARK_GIL,       /* "[python: waiting for the GIL]" */
    PYTHON_MARK_TRUNCATED, /* "[python: truncated]": a run's outer frames were not walked */
    PYTHON_MARK_UNWOVEN,   /* "[python: not woven]" */
};

const char *python_mark_name(enum python_mark m);

enum weave_kind { WEAVE_NATIVE, WEAVE_PYTHON, WEAVE_MARK };

/* One frame of the woven stack: native frame index (leaf first, as given),
 * Python frame index (leaf first, as walked), or a mark (enum python_mark). */
struct weave_step {
    uint16_t kind; /* enum weave_kind */
    uint16_t index;
};

/* Room a plan needs for a stack with n native frames kept. */
#define PYTHON_WEAVE_MAX(n) ((n) + OFFCPU_PYTHON_DEPTH + 2)

/* Index of the Python marker of user stack ip[0, nr), or nr for a stack
 * without. */
uint32_t python_marker_index(const __u64 *ip, uint32_t nr);

/* The layout of the walk (enum offcpu_python_layout), from its marker. */
uint32_t python_marker_layout(uint64_t marker);

/* The Python frames of user stack ip[0, nr) after its marker: how many.
 * Their words are ip[marker + 1 ...]. */
uint32_t python_frame_count(uint32_t nr, uint32_t marker);

/* The woven stack, leaf first, into plan (room for PYTHON_WEAVE_MAX(n)),
 * of user stack ip[0, nr) whose native frames kept, leaf first, are n, and
 * of those is_eval[i] the interpreter's. Returns the plan's length;
 * *unwoven is set when Python frames and interpreter frames could not be
 * paired. */
size_t python_weave(const __u64 *ip, uint32_t nr, uint32_t marker, const bool *is_eval,
                    size_t n, struct weave_step *plan, bool *unwoven);

#endif
