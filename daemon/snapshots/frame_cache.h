/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The frames named in one drain, by where they were taken: a process image's
 * address (pc or return address), or a kernel address. Stacks share most of
 * their frames (one drain may hold thousands of stacks that differ in a few
 * frames): each frame is named, and its strings interned, once per drain.
 * The cache holds a reference on each string it hands out, until it is done.
 */
#ifndef FRAME_CACHE_H
#define FRAME_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "intern.h"
#include "symbolizer.h"

/* A named frame: what naming it returned (0, SYMBOLIZER_SKIP or a negative
 * errno), its name and, for a user frame, where it lies in the ring's two
 * strings (see frame_where.h). String ids, 0 when interning failed.
 * One address may stand for several frames (frame_names.h): inlined is then
 * an interned stack of the names of those shown before this one, the
 * innermost first, which lie where it does; 0 for none. */
struct named_frame {
    int result;
    uint32_t name, offset, file, inlined;
};

struct frame_cache;

int frame_cache_new(struct symbolizer *sym, struct intern *in, struct frame_cache **ret);
/* Drops the cache's references. */
struct frame_cache *frame_cache_free(struct frame_cache *c);

/* The frame at ip of process tgid's image exec_id (tgid 0: the kernel);
 * is_leaf: ip is where the task was, not a return address. NULL when out of
 * memory. The pointer is good until the next call, which may move entries. */
const struct named_frame *frame_cache_get(struct frame_cache *c, pid_t tgid, uint32_t exec_id,
                                          uint64_t ip, bool is_leaf, bool kernel);

/* The Python frame word (OFFCPU_PY_*) of process tgid's image exec_id, of a
 * walk of layout (symbolizer_python_frame). NULL when out of memory; the
 * pointer is good until the next call. */
const struct named_frame *frame_cache_get_python(struct frame_cache *c, pid_t tgid,
                                                 uint32_t exec_id, uint64_t word, uint32_t layout);

#endif
