/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * CPython's frames at switch-out (docs/python-frames.md). For a process the
 * daemon marked (python_procs, filled as it reads the process's mappings),
 * the thread's PyThreadState is found through the GIL-state TSS key, as
 * glibc's pthread_getspecific finds it: unlike the interpreter's "current"
 * pointers it is not cleared when the thread releases the GIL to block. The
 * frames are then walked from its current frame along previous, at most
 * OFFCPU_PYTHON_DEPTH of them; each gives its code object and the
 * instruction it is at, for the daemon to name. Where each version keeps
 * these comes with the process (struct offcpu_python_offsets).
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
#include "python_words.bpf.h"

/* glibc (x86-64), struct pthread at the FS base: the first 32 keys' data
 * (specific_1stblock[key].data, 16 bytes an entry, data second), then
 * pointers to blocks of 32 more each (specific[key / 32]), up to 1024 keys. */
#define GLIBC_SPECIFIC_1STBLOCK 0x310
#define GLIBC_SPECIFIC          0x510
#define GLIBC_KEYS_BLOCK        32
#define GLIBC_KEYS_MAX          1024

#define SYSCALL_FUTEX 202

/*
 * Frames are read a span at a time: an evaluation's frames lie one above the
 * other in the thread's data stack (3.11 on), each one's caller below it, so
 * the read that brings a frame also brings the part of its page below it,
 * up to PY_SPAN_BYTES, and the callers found there cost no read of their
 * own. A read of user memory is most of a walk's cost (some 150 ns each on
 * these machines): bench/python_pipe.py's threads block under 14 frames,
 * read one at a time before, in one or two reads now (3140 -> 1620 ns a
 * switch, bpf_stats). Never past the frame's own page, below: the page
 * before may be unmapped (the start of the data stack), and one byte out
 * fails the whole read. Frames elsewhere (a generator's, in its object) are
 * read the same way.
 */
#define PY_SPAN_BYTES 4096
#define PY_PAGE_SIZE  4096

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
    __u64 word[PY_WORDS_MAX];
    __u32 nr;
    __u32 error; /* a read failed */
    /* the walk's state, here rather than on the BPF stack, which the
     * waker's walk all but fills on 6.1 (512 bytes for all its calls) */
    __u64 frame; /* the next frame to read */
    __u64 hash;
    /* the last frame's word, held back until the next frame is read: a
     * shim frame there (3.12 on) says it began an evaluation */
    __u64 pending;
    __u64 read[OFFCPU_PY_FRAME_WINDOW / 8]; /* scratch of the thread state's reads */
    /* the last span read: the user addresses [span_lo, span_hi); none when
     * span_hi is 0 */
    __u64 span_lo, span_hi;
    __u64 span[PY_SPAN_BYTES / 8];
    /* the task the walk is of (the current one): python_walk's arguments to
     * python_walk_task, and its FS base */
    __u64 mm, fsbase, syscall, di;
    __u32 tgid, tid;
    /* the TSS key + 1, as the task's record knew it (0: read it), and as the
     * walk found it good (0: not) */
    __u32 key1;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct py_frames);
} python_words SEC(".maps");

struct py_step_ctx {
    struct py_frames *w;
    const struct offcpu_python_offsets *at;
};

static __always_inline __u64 py_hash_step(__u64 h, __u64 word)
{
    h ^= word;
    h *= 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

/* The 8-byte field at off of a frame read into f (0 past the window). */
static __always_inline __u64 py_frame_u64(const __u64 *f, __u32 off)
{
    if (off > OFFCPU_PY_FRAME_WINDOW - 8)
        return 0;
    return f[off / 8];
}

/* The byte at off of a frame read into f; 0xff past the window. */
static __always_inline __u32 py_frame_u8(const __u64 *f, __u32 off)
{
    if (off >= OFFCPU_PY_FRAME_WINDOW)
        return 0xff;
    return (f[off / 8] >> (8 * (off % 8))) & 0xff;
}

/* The held-back word into the walk's words; false: no room left. */
static __always_inline bool py_emit_pending(struct py_frames *w)
{
    __u32 at = w->nr;

    if (!w->pending)
        return true;
    if (at > OFFCPU_PYTHON_DEPTH)
        return false;
    w->word[at] = w->pending;
    w->nr = at + 1;
    w->hash = py_hash_step(w->hash, w->pending);
    w->pending = 0;
    return true;
}

/* bpf_loop's body: one frame. */
/* The OFFCPU_PY_FRAME_WINDOW bytes of the frame at fa, from the last span
 * read or a new one; NULL if they cannot be read. */
static __always_inline const __u64 *py_frame_at(struct py_frames *w, __u64 fa)
{
    __u64 lo, n, at;

    /* frames are 8-byte aligned: anything else is read on its own */
    if (fa & 7 || fa >= (1ULL << 63))
        return bpf_probe_read_user(w->read, sizeof(w->read), (void *)fa) ? NULL : w->read;
    if (!w->span_hi || fa < w->span_lo || fa > w->span_hi - OFFCPU_PY_FRAME_WINDOW) {
        lo = fa & ~(__u64)(PY_PAGE_SIZE - 1);
        if (fa + OFFCPU_PY_FRAME_WINDOW - lo > PY_SPAN_BYTES)
            lo = fa + OFFCPU_PY_FRAME_WINDOW - PY_SPAN_BYTES;
        n = fa + OFFCPU_PY_FRAME_WINDOW - lo;
        w->span_hi = 0;
        if (n > PY_SPAN_BYTES || bpf_probe_read_user(w->span, n, (void *)lo))
            return NULL;
        w->span_lo = lo;
        w->span_hi = lo + n;
    }
    at = (fa - w->span_lo) / 8;
    if (at > (PY_SPAN_BYTES - OFFCPU_PY_FRAME_WINDOW) / 8)
        return NULL;
    return &w->span[at];
}

static long py_step(__u32 i, struct py_step_ctx *c)
{
    struct py_frames *w = c->w;
    const struct offcpu_python_offsets *at = c->at;
    const __u64 *f;
    __u64 code;
    __s64 lasti;

    if (!w->frame)
        return 1;
    f = py_frame_at(w, w->frame);
    if (!f) {
        w->error = 1;
        return 1;
    }
    if (py_frame_u8(f, at->frame_owner) == OFFCPU_PY_OWNED_BY_CSTACK) {
        w->pending |= w->pending ? OFFCPU_PY_ENTRY : 0;
        w->frame = py_frame_u64(f, at->frame_previous);
        return 0;
    }
    /* the frame before this one is whole now: out it goes, if it fits */
    if (!py_emit_pending(w))
        return 1;
    code = py_frame_u64(f, at->frame_code);
    /* (instruction - co_code_adaptive) / 2: -1 before the first one (3.11's
     * prev_instr); the frame's instruction (3.13's instr_ptr) */
    lasti = ((__s64)py_frame_u64(f, at->frame_instr) - (__s64)(code + at->code_adaptive)) >> 1;
    lasti = lasti < -1 ? OFFCPU_PY_LASTI_FAR : lasti + 1;
    if (lasti > OFFCPU_PY_LASTI_FAR)
        lasti = OFFCPU_PY_LASTI_FAR;
    w->pending = OFFCPU_PY_TAG | (code & OFFCPU_PY_CODE_MASK) |
                 ((__u64)lasti << OFFCPU_PY_LASTI_SHIFT) |
                 (py_frame_u8(f, at->frame_is_entry) == 1 ? OFFCPU_PY_ENTRY : 0);
    w->frame = py_frame_u64(f, at->frame_previous);
    return 0;
}

static __always_inline bool py_gil_wait(struct py_frames *w, const struct offcpu_python_process *py,
                                        __u64 tstate)
{
    __u64 *r = &w->read[4];

    if (w->syscall != SYSCALL_FUTEX)
        return false;
    if (py->at.runtime_gil != OFFCPU_PY_NONE)
        return w->di - (py->runtime + py->at.runtime_gil) < OFFCPU_PY_GIL_SIZE;
    /* 3.12 on: each interpreter's, through the thread's */
    return !bpf_probe_read_user(r, sizeof(*r), (void *)(tstate + py->at.tstate_interp)) &&
           !bpf_probe_read_user(r, sizeof(*r), (void *)(*r + py->at.interp_gil)) &&
           w->di - *r < OFFCPU_PY_GIL_SIZE;
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

/* The thread state's fields a walk needs, in one read: its ids (is it the
 * current thread's?) and its current frame (or _PyCFrame), into w->frame.
 * Every version's lie within 128 bytes of one another. */
#define PY_TSTATE_SPAN 128

static __always_inline bool py_thread_state(struct py_frames *w,
                                            const struct offcpu_python_offsets *at, __u64 tstate)
{
    __u32 lo = at->tstate_frame < at->tstate_thread ? at->tstate_frame : at->tstate_thread;
    __u32 frame = at->tstate_frame - lo, ids = at->tstate_thread - lo;

    /* the span's buffer, free until the frames are read */
    if (frame > PY_TSTATE_SPAN - 8 || ids > PY_TSTATE_SPAN - 16 ||
        bpf_probe_read_user(w->span, PY_TSTATE_SPAN, (void *)(tstate + lo)))
        return false;
    if (w->span[ids / 8] != w->fsbase || w->span[ids / 8 + 1] != w->tid)
        return false;
    w->frame = w->span[frame / 8];
    return true;
}

static __noinline __u64 python_walk_task(struct py_frames *w)
{
    struct offcpu_python_process *py;
    struct py_step_ctx c = {.w = w};
    __u32 tgid = w->tgid;
    __u64 mark, *r;

    /* mm 0: read at start, before the address space was known; a pid
     * reused since fails the thread state's checks below */
    py = bpf_map_lookup_elem(&python_procs, &tgid);
    if (!py || (py->mm && py->mm != w->mm) || py->layout == OFFCPU_PYTHON_NONE)
        return PY_NOT_PYTHON;
    c.at = &py->at;
    /* of the current task, which is the one walked: read here only, as
     * the thread struct lies in a line of the task no other part of a
     * switch-out touches */
    w->fsbase = bpf_get_current_task_btf()->thread.fsbase;
    /* r[0]: the TSS key (_is_initialized, _key): a key never changes while
     * its interpreter lives, so a thread's record keeps it; r[1]: the thread
     * state */
    r = w->read;
    r[1] = 0;
    if (w->key1) {
        /* dropped if it finds no thread state: read again next time */
        r[0] = w->key1 - 1;
        w->key1 = 0;
    } else {
        if (bpf_probe_read_user(r, sizeof(r[0]), (void *)(py->runtime + py->at.tss)))
            goto no_tstate;
        /* a program that links libpython but never started the interpreter
         * (Debian's perf): as good as no CPython, and said so once per task */
        if (!(__u32)r[0])
            return PY_NOT_PYTHON;
        r[0] >>= 32;
        w->key1 = r[0] + 1;
    }
    /* r[1]: the key's block of data (a program that made 32 keys before
     * starting the interpreter has its key in a second-level block) */
    r[1] = w->fsbase + GLIBC_SPECIFIC_1STBLOCK;
    if (r[0] >= GLIBC_KEYS_MAX ||
        (r[0] >= GLIBC_KEYS_BLOCK &&
         (bpf_probe_read_user(
              &r[1], sizeof(r[1]),
              (void *)(w->fsbase + GLIBC_SPECIFIC + 8 * (r[0] / GLIBC_KEYS_BLOCK))) ||
          !r[1])) ||
        bpf_probe_read_user(&r[1], sizeof(r[1]),
                            (void *)(r[1] + 16 * (r[0] % GLIBC_KEYS_BLOCK) + 8)) ||
        !r[1] || !py_thread_state(w, &py->at, r[1]))
        goto no_tstate;
    w->key1 = r[0] + 1;
    mark = OFFCPU_PY_TAG | ((__u64)py->layout << OFFCPU_PY_MARK_LAYOUT_SHIFT);
    if (py_gil_wait(w, py, r[1])) {
        mark |= OFFCPU_PY_MARK_GIL;
        stat_add(OFFCPU_STAT_PY_GIL_WAITS, 1);
    }
    w->nr = 1;
    w->error = 0;
    w->pending = 0;
    w->hash = 0x243f6a8885a308d3ULL;
    w->span_hi = 0;
    /* the thread's current frame (py_thread_state read its field), through
     * its _PyCFrame up to 3.12 */
    if (py->at.cframe_current != OFFCPU_PY_NONE &&
        (!w->frame || bpf_probe_read_user(&w->frame, sizeof(w->frame),
                                          (void *)(w->frame + py->at.cframe_current)))) {
        w->frame = 0;
        w->error = 1;
    } else {
        /* room for the shim frame behind each evaluation's first */
        bpf_loop(2 * OFFCPU_PYTHON_DEPTH + 1, py_step, &c, 0);
    }
    if (!py_emit_pending(w) && !w->frame)
        w->frame = 1; /* read, but no room: cut */
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
    w->key1 = rec && rec->python_key_mm == mm ? rec->python_key1 : 0;
    hash = python_walk_task(w);
    if (rec) {
        rec->python_key1 = w->key1;
        rec->python_key_mm = mm;
    }
    if (hash != PY_NOT_PYTHON)
        return hash;
    if (rec) {
        rec->python_mm = mm;
        rec->python_gen = gen_now;
    }
    return 0;
}

/* After the native frames of s, the words of the walk that returned a hash
 * (python_walk). */
static __always_inline void python_append(struct offcpu_stack *s)
{
    struct py_frames *py;
    __u32 zero = 0;

    py = bpf_map_lookup_elem(&python_words, &zero);
    if (py)
        python_words_append(s, py->word, py->nr);
}

#endif
