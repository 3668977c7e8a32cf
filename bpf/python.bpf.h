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
#include "knobs.bpf.h"
#include "task_record.bpf.h"

/* CPython 3.11, x86-64 (offsets from Debian's own DWARF, see the note). */
#define PY311_TSS            0x250 /* _PyRuntime.gilstate.autoTSSkey: _is_initialized, _key */
#define PY311_GIL            0x168 /* _PyRuntime.ceval.gil */
#define PY311_GIL_SIZE       208
#define PY311_TSTATE_CFRAME  0x38 /* PyThreadState.cframe */
#define PY311_TSTATE_THREAD  0x98 /* .thread_id: pthread_self(), the FS base */
#define PY311_TSTATE_NATIVE  0xa0 /* .native_thread_id: the tid */
#define PY311_CFRAME_CURRENT 0x8  /* _PyCFrame.current_frame */
#define PY311_FRAME_CODE                                                                           \
    0x20 /* _PyInterpreterFrame.f_code, then frame_obj, previous, prev_instr                       \
          */
#define PY311_CODE_ADAPTIVE 0xb8 /* PyCodeObject.co_code_adaptive: the instructions */

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
    __u32 error; /* a read failed */
    /* the walk's state, here rather than on the BPF stack, which the
     * waker's walk all but fills on 6.1 (512 bytes for all its calls) */
    __u64 frame; /* the next frame to read */
    __u64 hash;
    __u64 read[5]; /* what a read brought */
    /* the task the walk is of (the current one): python_walk's arguments to
     * python_walk_task, and its FS base */
    __u64 mm, fsbase, syscall, di;
    __u32 tgid, tid;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct py_frames);
} python_words SEC(".maps");

struct py_step_ctx {
    struct py_frames *w;
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
    struct py_frames *w = c->w;
    /* f_code, frame_obj, previous, prev_instr, then stacktop (int), is_entry */
    __u64 *f = w->read;
    __s64 lasti;
    __u64 word;

    if (!w->frame)
        return 1;
    if (bpf_probe_read_user(f, sizeof(w->read), (void *)(w->frame + PY311_FRAME_CODE))) {
        w->error = 1;
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
        w->word[i + 1] = word;
        w->nr = i + 2;
    }
    w->hash = py_hash_step(w->hash, word);
    w->frame = f[2];
    return 0;
}

/*
 * The Python frames of the task w is filled in for (python_walk), into w's
 * words for its user stack. Returns their hash; 0 for a task whose frames
 * were not walked: not a thread of the interpreter's (counted), and
 * PY_NOT_PYTHON for a process not marked. A subprogram: the rest of the
 * programs that call it stay as small as they were for the many tasks that
 * never get here.
 */
#define PY_NOT_PYTHON 1

static __noinline __u64 python_walk_task(struct py_frames *w)
{
    struct offcpu_python_process *py;
    struct py_step_ctx c = {.w = w};
    __u32 tgid = w->tgid;
    __u64 mark, *r;

    /* mm 0: read at start, before the address space was known; a pid
     * reused since fails the thread state's checks below */
    py = bpf_map_lookup_elem(&python_procs, &tgid);
    if (!py || (py->mm && py->mm != w->mm) || py->layout != OFFCPU_PYTHON_3_11)
        return PY_NOT_PYTHON;
    /* of the current task, which is the one walked: read here only, as
     * the thread struct lies in a line of the task no other part of a
     * switch-out touches */
    w->fsbase = bpf_get_current_task_btf()->thread.fsbase;
    /* r[0]: the TSS key (_is_initialized, _key), r[1]: the thread state,
     * r[2..3]: its ids */
    r = w->read;
    r[0] = r[1] = 0;
    if (bpf_probe_read_user(r, sizeof(r[0]), (void *)(py->runtime + PY311_TSS)))
        goto no_tstate;
    /* a program that links libpython but never started the interpreter
     * (Debian's perf): as good as no CPython, and said so once per task */
    if (!(__u32)r[0])
        return PY_NOT_PYTHON;
    r[0] >>= 32;
    if (r[0] >= GLIBC_KEYS_1STBLOCK ||
        bpf_probe_read_user(&r[1], sizeof(r[1]),
                            (void *)(w->fsbase + GLIBC_SPECIFIC_1STBLOCK + 16 * r[0] + 8)) ||
        !r[1] ||
        bpf_probe_read_user(&r[2], 2 * sizeof(r[2]), (void *)(r[1] + PY311_TSTATE_THREAD)) ||
        r[2] != w->fsbase || r[3] != w->tid)
        goto no_tstate;
    mark = OFFCPU_PY_TAG | ((__u64)py->layout << OFFCPU_PY_MARK_LAYOUT_SHIFT);
    if (w->syscall == SYSCALL_FUTEX && w->di - (py->runtime + PY311_GIL) < PY311_GIL_SIZE) {
        mark |= OFFCPU_PY_MARK_GIL;
        stat_add(OFFCPU_STAT_PY_GIL_WAITS, 1);
    }
    w->nr = 1;
    w->error = 0;
    w->frame = 0;
    w->hash = 0x243f6a8885a308d3ULL;
    /* r[0]: the thread's current _PyCFrame */
    if (bpf_probe_read_user(r, sizeof(r[0]), (void *)(r[1] + PY311_TSTATE_CFRAME)) || !r[0] ||
        bpf_probe_read_user(&w->frame, sizeof(w->frame), (void *)(r[0] + PY311_CFRAME_CURRENT)))
        w->error = 1;
    else
        bpf_loop(OFFCPU_PYTHON_DEPTH, py_step, &c, 0);
    stat_add(OFFCPU_STAT_PY_WALKS, 1);
    stat_add(OFFCPU_STAT_PY_FRAMES, w->nr - 1);
    if (w->error) {
        mark |= OFFCPU_PY_MARK_READ_ERROR;
        stat_add(OFFCPU_STAT_PY_READ_ERROR, 1);
    } else if (w->frame) {
        mark |= OFFCPU_PY_MARK_TRUNCATED;
        stat_add(OFFCPU_STAT_PY_TRUNCATED, 1);
    }
    w->word[0] = mark;
    /* never 0 nor PY_NOT_PYTHON: walked */
    return py_hash_step(w->hash, mark) | 2;
no_tstate:
    stat_add(OFFCPU_STAT_PY_NO_TSTATE, 1);
    return 0;
}

/*
 * The Python frames of the current task (tid) of process
 * tgid, address space mm, into python_words, as words for its user stack;
 * its registers say whether it blocks on the GIL. Returns their hash, 0 for
 * a task whose frames were not walked (no marked process, not a thread of
 * the interpreter's). Counted in status. A task whose record (rec, may be
 * NULL) says its process is not marked costs no lookup.
 */
static __always_inline __u64 python_walk(struct task_rec *rec, __u32 tgid, __u32 tid, __u64 mm,
                                         __u64 syscall, __u64 di)
{
    struct py_frames *w;
    __u32 zero = 0, gen_now;
    __u64 hash;

    if (!python_frames)
        return 0;
    /* most tasks run no Python: said by their record */
    gen_now = python_gen;
    if (rec && rec->python_mm == mm && rec->python_gen == gen_now)
        return 0;
    w = bpf_map_lookup_elem(&python_words, &zero);
    if (!w)
        return 0;
    w->tgid = tgid;
    w->tid = tid;
    w->mm = mm;
    w->syscall = syscall;
    w->di = di;
    hash = python_walk_task(w);
    if (hash != PY_NOT_PYTHON)
        return hash;
    if (rec) {
        rec->python_mm = mm;
        rec->python_gen = gen_now;
    }
    return 0;
}

/* After the native frames of s, the words of the walk that returned a hash
 * (python_walk); where they do not all fit, the outermost go, and the
 * marker says so. */
static __always_inline void python_append(struct offcpu_stack *s)
{
    struct py_frames *py;
    __u32 zero = 0, at = s->nr, n, i;

    py = bpf_map_lookup_elem(&python_words, &zero);
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
