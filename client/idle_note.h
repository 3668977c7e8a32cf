/* SPDX-License-Identifier: GPL-2.0-only */
/* --no-idle's account: how much time a reply left out as idle waits, said
 * on stderr, so that what a view leaves out is never lost silently. */
#ifndef IDLE_NOTE_H
#define IDLE_NOTE_H

#include <jansson.h>

#include "cli.h"

/* With g's text output, one line on stderr when reply (of a request with
 * no_idle) has idle_ns: "offcpuctl: --no-idle left out 2.9s of idle waits";
 * which (or NULL) names the window, as in "in the earlier window". */
void idle_note(const struct globals *g, const json_t *reply, const char *which);

/* The reply's idle_ns, if it has one, into out: a command's own JSON. */
void idle_note_json(json_t *out, const json_t *reply);

#endif
