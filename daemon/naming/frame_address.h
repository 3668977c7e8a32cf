/* SPDX-License-Identifier: GPL-2.0-only */
/* The address a frame is looked up at. */
#ifndef FRAME_ADDRESS_H
#define FRAME_ADDRESS_H

#include <stdbool.h>
#include <stdint.h>

/* A return address lies past its call, possibly already in the next
 * function (a call that never returns ends its function): the call, and so
 * the caller's name and unwind rule, is at the byte before. A leaf frame's
 * address is the interrupted pc itself. */
static inline uint64_t frame_lookup_address(uint64_t ip, bool is_return_address)
{
    return is_return_address && ip != 0 ? ip - 1 : ip;
}

#endif
