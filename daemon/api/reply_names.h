/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ring's interned names and stacks as JSON for one reply, each made once
 * and shared by every row that names it: jansson counts references, so one
 * value may sit in many arrays. A Dump of 100k stacks made a string per
 * frame, millions of allocations, where its distinct names are thousands.
 */
#ifndef REPLY_NAMES_H
#define REPLY_NAMES_H

#include <jansson.h>
#include <stdint.h>

#include "intern.h"

struct reply_names {
    const struct intern *in;
    json_t **strings; /* by string id, made when first asked */
    uint32_t nstrings;
    json_t **stacks; /* by stack id: arrays of the frames' names */
    uint32_t nstacks;
};

/* in must not change while m is used (the methods run between drains). */
int reply_names_init(struct reply_names *m, const struct intern *in);
void reply_names_done(struct reply_names *m);

/* A new reference to string id's JSON (name_json), or NULL when out of memory. */
json_t *reply_names_string(struct reply_names *m, uint32_t id);

/* A new reference to stack id's frames as an array of names; the caller must
 * not change it (other rows share it). NULL when out of memory. */
json_t *reply_names_stack(struct reply_names *m, uint32_t id);

#endif
