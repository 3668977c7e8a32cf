/* SPDX-License-Identifier: GPL-2.0-only */
/* Stacks for tests that build snapshots by hand. */
#ifndef TESTS_STACKS_H
#define TESTS_STACKS_H

#include <stdint.h>

#include "intern.h"

/* The interned two-frame stack a;b (root first), with a reference of its own. */
static inline uint32_t stack_of(struct intern *in, const char *a, const char *b)
{
    uint32_t f[2] = {intern_string(in, a), intern_string(in, b)};
    uint32_t id = intern_stack(in, f, 2);

    intern_string_unref(in, f[0]);
    intern_string_unref(in, f[1]);
    return id;
}

#endif
