/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Notes on an answer (what it leaves out: a window clipped by the history,
 * hidden processes, idle waits), kept until the command has succeeded and
 * then written to stderr: a command that fails says one line, its error.
 */
#ifndef NOTES_H
#define NOTES_H

/* Sets the note under key (a later one replaces it: a refreshed top's
 * latest); past the few kinds there are, a note is dropped. */
__attribute__((format(printf, 2, 3))) void note_set(const char *key, const char *fmt, ...);

/* Writes the notes, "offcpuctl: " and one line each, and forgets them. */
void notes_flush(void);

#endif
