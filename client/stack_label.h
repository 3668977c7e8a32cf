/* SPDX-License-Identifier: GPL-2.0-only */
/* A stack on one line for a person, wait first (top --by stack, hist --by
 * stack): where it blocked, then its callers toward the root, so that a line
 * cut at the terminal's edge still shows the wait. Folded lines (root first,
 * for flame graph tools) and JSON (frame arrays) stay as they are. */
#ifndef STACK_LABEL_H
#define STACK_LABEL_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* The separator between a frame and its caller. */
#define STACK_LABEL_CALLER " < "

/* "user-leaf < ... < user-root [kernel: kernel-leaf < ... < kernel-root] (comm)",
 * a stack without user frames (a kernel thread's) as "kernel-leaf < ... <
 * kernel-root (comm)"; names escaped for a terminal. malloc'd; NULL: no memory. */
char *stack_label(const json_t *stack);

/* Writes label to f, cut to at most width bytes from its root end at a
 * frame's end, " ..." marking the cut; the first frame (the wait) stays
 * whole whatever its length. */
void stack_label_put(FILE *f, const char *label, size_t width);

/* The bytes a label may take on a line of standard output after used
 * columns: to the terminal's width (else $COLUMNS, else 200 columns), and
 * never fewer than 40. */
size_t stack_label_width(size_t used);

#endif
