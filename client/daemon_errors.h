/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's answers in the user's words: each error it names (with its
 * parameters) as one line saying what happened and what to do, and the
 * notes on an answer that leaves something out (a window clipped by the
 * history kept, processes of other users hidden). The one home of these
 * messages: the daemon replies with names and numbers only.
 */
#ifndef DAEMON_ERRORS_H
#define DAEMON_ERRORS_H

#include <jansson.h>

/* connecting to the socket at path failed with errno err (negative): the
 * one-line message; returns EXIT_ERROR. */
int socket_error(const char *path, int err);

/* The daemon answered request (the parameters sent to method) with the
 * Varlink error named error, with its parameters: the one-line message and
 * its exit code, or -ENOENT for an error not known here. socket: where
 * the daemon listens (whose group names who may read). */
int daemon_error_explain(const char *socket, const char *method, const json_t *request,
                         const char *error, const json_t *params);

/* What reply (to request) leaves out, as notes (notes.h): the part of the
 * window before the history kept, processes of other users hidden. An
 * empty answer says nothing here: its error says it. */
void answer_notes_print(const json_t *request, const json_t *reply);

#endif
