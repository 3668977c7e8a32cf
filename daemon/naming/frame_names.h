/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How frames are written: symbols as people read them (C++ and Rust names
 * demangled), cut to the caller's buffer (a long C++ name is still telling).
 * A frame that cannot be named keeps what is known of it, never a wrong name:
 * "module+0xOFFSET" (the offset in the file), "[vdso]", "[anon]", and only
 * when nothing at all is known "[unknown]".
 */
#ifndef FRAME_NAMES_H
#define FRAME_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_NAME_UNKNOWN "[unknown]"
#define FRAME_NAME_VDSO    "[vdso]"
#define FRAME_NAME_ANON    "[anon]"
/* a Python frame whose code object could not be read as one (the process
 * is gone, or freed or changed it): marked, never guessed */
#define FRAME_NAME_PYTHON_UNREADABLE "[python: unreadable]"

/* One address may stand for several frames: the calls inlined where it lies
 * (Go's), or frames of an interpreter woven in for one of its own. Their
 * names are written one after another in the same buffer, separated by
 * FRAME_NAMES_SEP, the innermost first; the last is the frame of the code
 * the address lies in, the one its file and offset describe. */
#define FRAME_NAMES_SEP '\n'
/* The frames one address stands for, at most: its own, and Go's deepest
 * inlined calls (GO_INLINE_DEPTH_MAX) */
#define FRAME_NAMES_MAX 17

/* inlined (names separated by FRAME_NAMES_SEP, innermost first), then
 * symbol as frame_name_symbol writes it. Where both do not fit, symbol
 * alone: the frame the address lies in is never cut. */
void frame_name_inlined(char *buf, size_t size, const char *inlined, const char *symbol);

/* Splits buf, in place, into the names of the frames it holds, innermost
 * first; returns their count. At most max (> 0): the outermost ones. */
size_t frame_names_split(char *buf, const char **names, size_t max);

/* A symbol of user code: demangled when mangled. */
void frame_name_symbol(char *buf, size_t size, const char *symbol);

/* Code in the file at path that no symbol covers: "BASENAME+0xOFFSET". */
void frame_name_in_file(char *buf, size_t size, const char *path, uint64_t offset);

/* A Python function, as py-spy names it (the name people compare with):
 * "qualname (file.py:line)", the file's base name; "qualname (file.py)"
 * where the line is not known (line <= 0). */
void frame_name_python(char *buf, size_t size, const char *qualname, const char *path,
                       int32_t line);

/* A kernel function: "function", or "function [module]" in a module. */
void frame_name_kernel(char *buf, size_t size, const char *function, const char *module);

/* A name written as it is (FRAME_NAME_*). */
void frame_name_literal(char *buf, size_t size, const char *name);

/* "[unknown]"; returns error, the negative errno of why. */
int frame_name_unknown(char *buf, size_t size, int error);

#endif
