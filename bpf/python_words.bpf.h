/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A CPython thread's user stack ends in the words of its Python walk
 * (OFFCPU_PY_*, all tagged, after the native frames): put there at
 * switch-out (python_append), and kept across a resumed walk, whose native
 * frames grow into where they were (unwind_resume).
 */
#ifndef PYTHON_WORDS_BPF_H
#define PYTHON_WORDS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "offcpu.h"
#include "common.bpf.h"

#define PY_WORDS_MAX (OFFCPU_PYTHON_DEPTH + 1) /* the marker, then the frames */

/* The Python words ending s, copied into words[PY_WORDS_MAX]; their count. */
static __always_inline __u32 python_words_take(const struct offcpu_stack *s, __u64 *words)
{
    __u32 nr = s->nr, n = 0, i;

    for (i = 0; i < PY_WORDS_MAX && i < nr; i++) {
        __u64 at = (__u64)nr - 1 - i;

        barrier_var(at);
        if (at >= OFFCPU_USER_DEPTH || !(s->ip[at] & OFFCPU_PY_TAG))
            break;
        n++;
    }
    for (i = 0; i < PY_WORDS_MAX && i < n; i++) {
        __u64 at = (__u64)nr - n + i;

        barrier_var(at);
        if (at >= OFFCPU_USER_DEPTH)
            break;
        words[i] = s->ip[at];
    }
    return n;
}

/* After the native frames of s, words[n]; where they do not all fit, the
 * outermost go, and the marker (the first) says so. */
static __always_inline void python_words_append(struct offcpu_stack *s, const __u64 *words, __u32 n)
{
    __u32 at = s->nr, i;

    if (at >= OFFCPU_USER_DEPTH)
        return;
    for (i = 0; i < PY_WORDS_MAX && i < n; i++) {
        __u64 to = (__u64)at + i;

        /* the verifier's bound, on the register the store uses */
        barrier_var(to);
        if (to >= OFFCPU_USER_DEPTH) {
            s->ip[at] |= OFFCPU_PY_MARK_TRUNCATED;
            break;
        }
        s->ip[to] = words[i];
    }
    s->nr = at + i;
}

#endif
