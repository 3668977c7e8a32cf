/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The folded stack format, one home for the daemon's Folded replies and
 * offcpuctl's own folded lines:
 *
 *     comm;[pid N];[tid N];[state S];[cgroup
 * C];user-root;...;user-leaf;-;kernel-root;...;kernel-leaf
 *
 * the labels only for the fields the stacks were grouped by. Names are made
 * one frame each (name_escape.h): no ';', no newline, no lone separator.
 */
#ifndef FOLDED_H
#define FOLDED_H

#include <stdbool.h>
#include <stdio.h>

#include "name_escape.h"

/* How a name becomes one folded frame; with NAME_ESCAPE_RAW for raw bytes
 * (the daemon's), without for text (a reply's). */
#define FOLDED_ESCAPE (NAME_ESCAPE_CONTROL | NAME_ESCAPE_FOLDED)

/* The separator between the user and the kernel frames. */
#define FOLDED_KERNEL_SEPARATOR ";-"

/* The fields a stack was grouped by: has_* false for those it was not. */
struct folded_labels {
    bool has_pid, has_tid;
    long long pid, tid;
    char state;         /* 0: not grouped by it */
    const char *cgroup; /* NULL: not grouped by it */
};

/* ";" and name as a frame; flags: 0 or NAME_ESCAPE_RAW. */
void folded_put_frame(FILE *f, const char *name, unsigned flags);

/* The head of a folded stack: the comm, then the labels. */
void folded_put_head(FILE *f, const char *comm, const struct folded_labels *l, unsigned flags);

#endif
