/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Dump's frame_detail: each user frame with the file and offset it was
 * named from, so that a name can be checked against another resolver.
 */
#ifndef FRAME_DETAIL_H
#define FRAME_DETAIL_H

#include <jansson.h>
#include <stdint.h>

#include "intern.h"

/* [{name, module, offset, build_id}] for a user stack and the stack of where
 * its frames lie (uwhere, 0 if not known); module, offset and build_id are
 * absent for a frame in no file (or when not known). */
json_t *frame_detail_json(const struct intern *in, uint32_t ustack, uint32_t uwhere);

#endif
