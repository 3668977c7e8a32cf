/* SPDX-License-Identifier: GPL-2.0-only */
/* The methods offered on the socket: io.offcpud and org.varlink.service. */
#ifndef API_H
#define API_H

#include <jansson.h>
#include <stdbool.h>

struct daemon;
struct peer;

/* Answer one Varlink call. Returns the reply or error message (a new
 * reference); *oneway is set when the caller asked for no reply. */
json_t *api_call(struct daemon *d, const struct peer *peer, json_t *msg, bool *oneway);

#endif
