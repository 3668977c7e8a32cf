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
#define PY311_FRAME_CODE     0x20 /* _PyInterpreterFrame.f_code, then frame_obj, previous, prev_instr \
                                   */

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

/* A walk's frames: code object and instruction offset (in code units, from
 * prev_instr), leaf first. Per CPU: too large for the BPF stack. */
struct py_frames {
    __u64 code[OFFCPU_PYTHON_DEPTH];
    __u64 prev_instr[OFFCPU_PYTHON_DEPTH];
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
    struct py_frames *out;
    __u32 error;
};

/* bpf_loop's body: one frame. */
static long py_step(__u32 i, struct py_step_ctx *c)
{
    __u64 f[4]; /* f_code, frame_obj, previous, prev_instr */

    if (!c->frame)
        return 1;
    if (bpf_probe_read_user(f, sizeof(f), (void *)(c->frame + PY311_FRAME_CODE))) {
        c->error = 1;
        return 1;
    }
    if (i < OFFCPU_PYTHON_DEPTH) {
        c->out->code[i] = f[0];
        c->out->prev_instr[i] = f[3];
        c->out->nr = i + 1;
    }
    c->frame = f[2];
    return 0;
}

/*
 * The Python frames of the current task (tid, FS base fsbase) of process
 * tgid, address space mm, into python_frames; its registers say whether it
 * blocks on the GIL. Counted in status; a task of no marked process costs
 * one lookup.
 */
static __always_inline void python_walk(__u32 tgid, __u32 tid, __u64 mm, __u64 fsbase,
                                        __u64 syscall, __u64 di)
{
    struct offcpu_python_process *py = bpf_map_lookup_elem(&python_procs, &tgid);
    struct py_step_ctx c = {};
    __u64 tstate = 0, ids[2] = {}, cframe = 0;
    __u32 zero = 0;
    __s32 key = -1;

    /* mm 0: read at start, before the address space was known; a pid
     * reused since fails the thread state's checks below */
    if (!py || (py->mm && py->mm != mm) || py->layout != OFFCPU_PYTHON_3_11)
        return;
    if (syscall == SYSCALL_FUTEX && di - (py->runtime + PY311_GIL) < PY311_GIL_SIZE)
        stat_add(OFFCPU_STAT_PY_GIL_WAITS, 1);
    c.out = bpf_map_lookup_elem(&python_frames, &zero);
    if (!c.out)
        return;
    c.out->nr = 0;
    if (bpf_probe_read_user(&key, sizeof(key), (void *)(py->runtime + PY311_TSS_KEY)) || key < 0 ||
        key >= GLIBC_KEYS_1STBLOCK ||
        bpf_probe_read_user(&tstate, sizeof(tstate),
                            (void *)(fsbase + GLIBC_SPECIFIC_1STBLOCK + 16 * key + 8)) ||
        !tstate || bpf_probe_read_user(ids, sizeof(ids), (void *)(tstate + PY311_TSTATE_THREAD)) ||
        ids[0] != fsbase || ids[1] != tid) {
        stat_add(OFFCPU_STAT_PY_NO_TSTATE, 1);
        return;
    }
    if (bpf_probe_read_user(&cframe, sizeof(cframe), (void *)(tstate + PY311_TSTATE_CFRAME)) ||
        !cframe ||
        bpf_probe_read_user(&c.frame, sizeof(c.frame), (void *)(cframe + PY311_CFRAME_CURRENT))) {
        stat_add(OFFCPU_STAT_PY_READ_ERROR, 1);
        return;
    }
    bpf_loop(OFFCPU_PYTHON_DEPTH, py_step, &c, 0);
    stat_add(OFFCPU_STAT_PY_WALKS, 1);
    stat_add(OFFCPU_STAT_PY_FRAMES, c.out->nr);
    if (c.error)
        stat_add(OFFCPU_STAT_PY_READ_ERROR, 1);
    else if (c.frame)
        stat_add(OFFCPU_STAT_PY_TRUNCATED, 1);
}

#endif
