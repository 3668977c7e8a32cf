/* SPDX-License-Identifier: GPL-2.0-only */
/* The folded text of the stacks of a reply: a Folded reply's, from its
 * tables of names and paths (io.offcpud.varlink), each path made text once;
 * a Dump's or Wakers', from each stack's frames (render_folded_stack). */
#ifndef FOLDED_REPLY_H
#define FOLDED_REPLY_H

#include <jansson.h>
#include <stdio.h>

#include "render.h"

struct folded_reply {
    size_t n;             /* stacks */
    const json_t *stacks; /* a Dump's or Wakers': objects; NULL for Folded's */
    /* Folded's tables and columns (io.offcpud.varlink: FoldedStacks) */
    const json_t *names, *path_texts, *heads;
    const json_t *head, *user, *kernel, *total_ns, *runq_ns;
    char **paths; /* by index: ";name;name..." once made */
    size_t npaths;
};

/* reply must outlive r. -ENOMEM when out of memory, -EBADMSG for Folded
 * columns of other lengths than its head's. */
int folded_reply_init(struct folded_reply *r, const json_t *reply);
void folded_reply_done(struct folded_reply *r);

/* The folded stack of stack i of the reply, then suffix (malloc'd); NULL
 * with errno ENOMEM, or EBADMSG for a stack whose indexes are not in the
 * tables. */
char *folded_reply_stack(struct folded_reply *r, size_t i, const char *suffix);

/* That time of stack i, in ns. */
int64_t folded_reply_time(const struct folded_reply *r, size_t i, enum stack_time which);

/* One line per stack of a Folded, Dump or Wakers reply, sorted, in the
 * folded format (folded.h) with the time which as its value, in
 * microseconds: "comm;...;user-leaf;-;kernel-root;...;kernel-leaf VALUE_US".
 * A stack without blocked or runq time has no line for it. Returns the
 * number of lines, or -errno. */
int render_folded(FILE *f, const json_t *reply, enum stack_time which);

#endif
