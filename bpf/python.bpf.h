/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * CPython's frames at switch-out (docs/python-frames.md). For a process the
 * daemon marked (python_procs, filled as it reads the process's mappings),
 * the thread's PyThreadState is found through the GIL-state TSS key, as
 * glibc's pthread_getspecific finds it: unlike the interpreter's "current"
 * pointers it is not cleared when the thread releases the GIL to block. The
 * frames are then walked from tstate->cframe->current_frame along previous,
 * at most OFFCPU_PYTHON_DEPTH of them; each gives its code object and the
 * instruction it is at, for the daemon to name.
 *
 * Nothing is guessed: a thread state whose ids are not the thread's (a
 * thread the interpreter does not know, a program that set its own FS base)
 * is not walked, and counted.
 */
#ifndef PYTHON_BPF_H
#define PYTHON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "offcpu.h"
#include "common.bpf.h"

/* CPython 3.11, x86-64 (offsets from Debian's own DWARF, see the note). */
#define PY311_TSS_KEY        0x254 /* _PyRuntime.gilstate.autoTSSkey._key */
#define PY311_GIL            0x168 /* _PyRuntime.ceval.gil */
#define PY311_GIL_SIZE       208
#define PY311_TSTATE_CFRAME  0x38 /* PyThreadState.cframe */
#define PY311_TSTATE_THREAD  0x98 /* .thread_id: pthread_self(), the FS base */
#define PY311_TSTATE_NATIVE  0xa0 /* .native_thread_id: the tid */
#define PY311_CFRAME_CURRENT 0x8  /* _PyCFrame.current_frame */
#define PY311_FRAME_CODE     0x20 /* _PyInterpreterFrame.f_code, then frame_obj, previous, prev_instr */
#define PY311_CODE_ADAPTIVE  0xb8 /* PyCodeObject.co_code_adaptive: the instructions */

/* glibc (x86-64): the first 32 keys' data in the thread descriptor, at
 * FS base + 0x310 + 16 * key + 8 (specific_1stblock[key].data). */
#define GLIBC_SPECIFIC_1STBLOCK 0x310
#define GLIBC_KEYS_1STBLOCK     32

#define SYSCALL_FUTEX 202

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, 32768);
    __type(key, __u32); /* tgid */
    __type(value, struct offcpu_python_process);
} python_procs SEC(".maps");

/* A walk's words for the user stack (OFFCPU_PY_*): the marker, then the
 * frames, leaf first. Per CPU: too large for the BPF stack. sched_switch and
 * sched_waking both run with interrupts off, and append the words in the
 * same run of the program that walked them. */
struct py_frames {
    __u64 word[OFFCPU_PYTHON_DEPTH + 1];
    __u32 nr;
    __u32 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct py_frames);
} python_frames SEC(".maps");

struct py_step_ctx {
    __u64 frame;
    __u64 hash;
    struct py_frames *out;
    __u32 error;
};

static __always_inline __u64 py_hash_step(__u64 h, __u64 word)
{
    h ^= word;
    h *= 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

/* bpf_loop's body: one frame. */
static long py_step(__u32 i, struct py_step_ctx *c)
{
    /* f_code, frame_obj, previous, prev_instr, then stacktop (int), is_entry */
    __u64 f[5];
    __s64 lasti;
    __u64 word;

    if (!c->frame)
        return 1;
    if (bpf_probe_read_user(f, sizeof(f), (void *)(c->frame + PY311_FRAME_CODE))) {
        c->error = 1;
        return 1;
    }
    /* (prev_instr - co_code_adaptive) / 2: -1 before the first instruction */
    lasti = ((__s64)f[3] - (__s64)(f[0] + PY311_CODE_ADAPTIVE)) >> 1;
    lasti = lasti < -1 ? OFFCPU_PY_LASTI_FAR : lasti + 1;
    if (lasti > OFFCPU_PY_LASTI_FAR)
        lasti = OFFCPU_PY_LASTI_FAR;
    word = OFFCPU_PY_TAG | (f[0] & OFFCPU_PY_CODE_MASK) | ((__u64)lasti << OFFCPU_PY_LASTI_SHIFT) |
           ((f[4] >> 32) & 0xff ? OFFCPU_PY_ENTRY : 0);
    if (i < OFFCPU_PYTHON_DEPTH) {
        c->out->word[i + 1] = word;
        c->out->nr = i + 2;
    }
    c->hash = py_hash_step(c->hash, word);
    c->frame = f[2];
    return 0;
}

/*
 * The Python frames of the current task (tid, FS base fsbase) of process
 * tgid, address space mm, into python_frames, as words for its user stack;
 * its registers say whether it blocks on the GIL. Returns their hash, 0 for
 * a task whose frames were not walked (no marked process, not a thread of
 * the interpreter's). Counted in status; a task of no marked process costs
 * one lookup.
 */
static __always_inline __u64 python_walk(__u32 tgid, __u32 tid, __u64 mm, __u64 fsbase,
                                         __u64 syscall, __u64 di)
{
    struct offcpu_python_process *py = bpf_map_lookup_elem(&python_procs, &tgid);
    struct py_step_ctx c = {.hash = 0x243f6a8885a308d3ULL};
    __u64 tstate = 0, ids[2] = {}, cframe = 0, mark;
    __u32 zero = 0;
    __s32 key = -1;

    /* mm 0: read at start, before the address space was known; a pid
     * reused since fails the thread state's checks below */
    if (!py || (py->mm && py->mm != mm) || py->layout != OFFCPU_PYTHON_3_11)
        return 0;
    c.out = bpf_map_lookup_elem(&python_frames, &zero);
    if (!c.out)
        return 0;
    if (bpf_probe_read_user(&key, sizeof(key), (void *)(py->runtime + PY311_TSS_KEY)) || key < 0 ||
        key >= GLIBC_KEYS_1STBLOCK ||
        bpf_probe_read_user(&tstate, sizeof(tstate),
                            (void *)(fsbase + GLIBC_SPECIFIC_1STBLOCK + 16 * key + 8)) ||
        !tstate || bpf_probe_read_user(ids, sizeof(ids), (void *)(tstate + PY311_TSTATE_THREAD)) ||
        ids[0] != fsbase || ids[1] != tid) {
        stat_add(OFFCPU_STAT_PY_NO_TSTATE, 1);
        return 0;
    }
    mark = OFFCPU_PY_TAG | ((__u64)py->layout << OFFCPU_PY_MARK_LAYOUT_SHIFT);
    if (syscall == SYSCALL_FUTEX && di - (py->runtime + PY311_GIL) < PY311_GIL_SIZE) {
        mark |= OFFCPU_PY_MARK_GIL;
        stat_add(OFFCPU_STAT_PY_GIL_WAITS, 1);
    }
    c.out->nr = 1;
    if (bpf_probe_read_user(&cframe, sizeof(cframe), (void *)(tstate + PY311_TSTATE_CFRAME)) ||
        !cframe ||
        bpf_probe_read_user(&c.frame, sizeof(c.frame), (void *)(cframe + PY311_CFRAME_CURRENT)))
        c.error = 1;
    else
        bpf_loop(OFFCPU_PYTHON_DEPTH, py_step, &c, 0);
    stat_add(OFFCPU_STAT_PY_WALKS, 1);
    stat_add(OFFCPU_STAT_PY_FRAMES, c.out->nr - 1);
    if (c.error) {
        mark |= OFFCPU_PY_MARK_READ_ERROR;
        stat_add(OFFCPU_STAT_PY_READ_ERROR, 1);
    } else if (c.frame) {
        mark |= OFFCPU_PY_MARK_TRUNCATED;
        stat_add(OFFCPU_STAT_PY_TRUNCATED, 1);
    }
    c.out->word[0] = mark;
    return py_hash_step(c.hash, mark) | 1; /* never 0: walked */
}

/* After the native frames of s, the words of the walk that returned a hash
 * (python_walk); where they do not all fit, the outermost go, and the
 * marker says so. */
static __always_inline void python_append(struct offcpu_stack *s)
{
    struct py_frames *py;
    __u32 zero = 0, at = s->nr, n, i;

    py = bpf_map_lookup_elem(&python_frames, &zero);
    if (!py || at >= OFFCPU_USER_DEPTH)
        return;
    n = py->nr;
    for (i = 0; i < OFFCPU_PYTHON_DEPTH + 1 && i < n; i++) {
        __u64 to = (__u64)at + i;

        /* the verifier's bound, on the register the store uses */
        barrier_var(to);
        if (to >= OFFCPU_USER_DEPTH) {
            s->ip[at] |= OFFCPU_PY_MARK_TRUNCATED;
            break;
        }
        s->ip[to] = py->word[i];
    }
    s->nr = at + i;
}

#endif
