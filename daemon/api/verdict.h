/* SPDX-License-Identifier: GPL-2.0-only */
/* The first line of Status: "healthy", or what data is being lost and what
 * to do, from the counters the reply already holds. */
#ifndef VERDICT_H
#define VERDICT_H

#include <jansson.h>

/* The verdict of status (a Status reply, "verdict" aside): a new string. */
json_t *status_verdict(const json_t *status);

#endif
