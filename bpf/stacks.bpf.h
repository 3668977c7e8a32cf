/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Walking a task's stacks at switch-out (and a waker's): the kernel's by
 * bpf_get_stack, the user's by unwind.bpf.h; hashed, and reused through the
 * stack cache where the task blocked before.
 */
#ifndef STACKS_BPF_H
#define STACKS_BPF_H

#include "knobs.bpf.h"
#include "task_record.bpf.h"
#include "unwind.bpf.h"
#include "python.bpf.h"

/*
 * Per-CPU room for a kernel stack widened to a struct offcpu_stack before it
 * is stored. Slot 0 is sched_switch's, slot 1 the iterator's: sched_switch
 * runs with interrupts off, but the iterator can be preempted mid-use.
 */
enum { SCRATCH_SWITCH, SCRATCH_ITER, SCRATCH_WAKE, SCRATCH_WAKER };

/* Slots 2 and 3 are sched_waking's (wakers.bpf.h), which runs with interrupts
 * off too, but may interrupt the iterator. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, struct offcpu_stack);
} scratch SEC(".maps");

/* Multiply-xorshift over the used frames; never returns a reserved hash
 * (below OFFCPU_STACK_FIRST_HASH).
 * s may be a struct kernel_stack: only its first max frames are read. */
static __always_inline __u64 stack_hash(const struct offcpu_stack *s, const int max)
{
    __u64 h = 0x243f6a8885a308d3ULL ^ ((__u64)s->kernel << 32) ^ s->nr;

    for (int i = 0; i < max; i++) {
        if (i >= s->nr)
            break;
        h ^= s->ip[i];
        h *= 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    return h >= OFFCPU_STACK_FIRST_HASH ? h : h + OFFCPU_STACK_FIRST_HASH;
}

static __always_inline bool stack_equal(const struct offcpu_stack *a, const struct offcpu_stack *b)
{
    if (a->nr != b->nr || a->kernel != b->kernel)
        return false;
    for (int i = 0; i < OFFCPU_USER_DEPTH; i++) {
        if (i >= a->nr)
            break;
        if (a->ip[i] != b->ip[i])
            return false;
    }
    return true;
}

/* Walk one stack into ip[skip...]; returns the number of frames, or 0 (counted). */
static __always_inline __u32 take_stack(void *ctx, struct offcpu_stack *s, __u32 skip, __u32 size,
                                        bool user)
{
    long n;

    s->kernel = !user;
    n = bpf_get_stack(ctx, &s->ip[skip & 3], size - (skip & 3) * sizeof(__u64),
                      user ? BPF_F_USER_STACK : 0);
    if (n <= 0) {
        s->nr = 0;
        if (!user)
            stat_add(OFFCPU_STAT_KERNEL_STACK_ERROR, 1);
        else if (n == -14 /* EFAULT */ || n == 0)
            stat_add(OFFCPU_STAT_USER_STACK_EFAULT, 1);
        else
            stat_add(OFFCPU_STAT_USER_STACK_ERROR, 1);
        return 0;
    }
    return n / sizeof(__u64);
}

/* What sched_switch tells about the task switching out. */
struct switch_out {
    __u64 start_time;
    __u64 since; /* the switch-out's time: off-CPU from here (a deep walk takes a while) */
    __u32 tgid, tid;
    __u32 state;
    __u32 exec_id;
    __u64 cgroup_id;
    __u32 uid; /* owner: see owner_of */
    char comm[16];
    __u64 mm; /* the address space: whose unwind table */
    bool kthread;
    bool has_regs;  /* fp is filled in */
    bool cacheable; /* ...and may be used to reuse stacks */
    bool in_exec;   /* inside execve: no user stack to walk (OFFCPU_STACK_EXEC) */
    struct fingerprint fp;
};

/* The user stack, from call frame information or frame pointers. Returns
 * its hash; *final is false when the walk met what its table does not know
 * yet: the stacks are not to be reused, a later walk will know more.
 * *walked: what the walk found (enum unwind_result). */
static __always_inline __u64 take_user_stack(void *ctx, struct offcpu_stack *s,
                                             const struct switch_out *so, const bool waker,
                                             bool *final, __u32 *walked)
{
    struct unwind_start *start =
        unwind_dwarf && so->has_regs
            ? unwind_start_of(waker ? UNWIND_SLOT_WAKING : UNWIND_SLOT_SWITCH)
            : NULL;

    if (start) {
        start->ip = so->fp.ip;
        start->sp = so->fp.sp;
        start->bp = so->fp.bp;
        start->di = so->fp.di;
        start->mm = so->mm;
        start->start_time = so->start_time;
        start->since = so->since;
        start->tgid = so->tgid;
        start->exec_id = so->exec_id;
        start->tid = so->tid;
        *walked = unwind_user_stack(s, start);
        *final = *walked & UNWIND_WHOLE;
    } else {
        s->nr = take_stack(ctx, s, 0, sizeof(s->ip), true);
        if (!s->nr)
            return OFFCPU_STACK_MISSED;
    }
    /* python_walk's, in this same run of the program */
    if (so->fp.python)
        python_append(s);
    return stack_hash(s, OFFCPU_USER_DEPTH);
}

/*
 * Called from one place only: a kernel stack includes the return address
 * into this program, so two call sites would make two stacks of one place.
 * Returns false when the stacks are not to be reused (see take_user_stack).
 */
static __always_inline bool walk_stacks(void *ctx, struct place *p, const struct switch_out *so,
                                        const bool waker)
{
    struct offcpu_stack *k = (struct offcpu_stack *)&p->kstack;
    bool final = true;

    k->nr = take_stack(ctx, k, 0, sizeof(p->kstack.ip), false);
    p->kernel_hash = k->nr ? stack_hash(k, OFFCPU_KERNEL_DEPTH) : OFFCPU_STACK_MISSED;
    p->walked = 0;
    if (so->kthread || so->in_exec) {
        p->ustack.nr = 0;
        p->user_hash = so->in_exec ? OFFCPU_STACK_EXEC : OFFCPU_STACK_MISSED;
    } else {
        p->user_hash = take_user_stack(ctx, &p->ustack, so, waker, &final, &p->walked);
    }
    p->stored_gen = 0;
    stat_add(waker ? OFFCPU_STAT_WAKER_WALKS : OFFCPU_STAT_WALKS, 1);
    return final;
}

/*
 * The place this block (or, waker, this wakeup) happened at: one of the n
 * known places (n a power of two), or the least recently used one, lru,
 * overwritten by a walk. Returns the place's index; *walked tells whether
 * its stacks are new. *uncached: a check found other stacks at a known place.
 */
static __always_inline __u32 stacks_at(void *ctx, struct place *places, const __u32 n, __u32 lru,
                                       __u32 *uncached, const struct switch_out *so,
                                       const bool waker, bool *walked)
{
    __u32 i = lru;
    __u64 user, kernel;
    bool hit = false, final;
    struct place *p;

    *walked = false;
    if (so->cacheable && !*uncached) {
        for (__u32 j = 0; j < n; j++) {
            if (fingerprint_equal(&so->fp, &places[j].fp)) {
                i = j;
                hit = true;
                break;
            }
        }
    }
    p = &places[i & (n - 1)];
    if (hit && !cache_check_hit(waker, p->check_shift))
        return i;
    user = p->user_hash;
    kernel = p->kernel_hash;
    final = walk_stacks(ctx, p, so, waker);
    *walked = true;
    if (!hit)
        p->check_shift = check_shift_new();
    else if (cache_mismatch(final, user, kernel, p->user_hash, p->kernel_hash, waker))
        *uncached = 1;
    else if (final)
        p->check_shift = check_shift_after_agreeing(p->check_shift);
    p->fp = so->fp;
    p->fp.valid = so->cacheable && final;
    return i;
}

static __always_inline void switch_out(void *ctx, struct task_rec *rec, const struct switch_out *so)
{
    __u64 now = so->since;
    bool walked;

    /* a tid-keyed record may have belonged to an earlier task with this tid */
    if (rec->start_time != so->start_time) {
        rec->start_time = so->start_time;
        rec->announced = 0;
        rec->uncached = 0;
        rec->places[0].fp.valid = 0;
        rec->places[1].fp.valid = 0;
        rec->waker_uncached = 0;
        rec->waker.fp.valid = 0;
    }
    rec->id.state = so->state;
    rec->id.kthread = so->kthread;
    rec->id.exec_id = so->exec_id;
    rec->id.cgroup_id = so->cgroup_id;
    rec->id.uid = so->uid;
    __builtin_memcpy(rec->id.comm, so->comm, sizeof(rec->id.comm));
    rec->id.place =
        stacks_at(ctx, rec->places, PLACES, rec->id.place ^ 1, &rec->uncached, so, false, &walked);
    /* A short-lived process may be gone before the next drain: have its
     * mappings read now. Not at a preemption: it may still be in ld.so. Not
     * inside execve: its new image has no code mapped yet (a block there
     * waits for the lock of the address space it builds). It may all the
     * same (loading libraries from a cold cache): once more when a walk
     * first goes through code mapped since its table was read. */
    if (!so->kthread && so->state != OFFCPU_STATE_RUNNABLE && !so->in_exec &&
        (!rec->announced ||
         (rec->announced == 1 && rec->places[rec->id.place & 1].walked & UNWIND_NEW_CODE))) {
        announce(so->tgid, so->exec_id,
                 rec->announced ? OFFCPU_ANNOUNCE_MAPPED : OFFCPU_ANNOUNCE_PROCESS, so->mm);
        rec->announced++;
    }
    rec->since = now;
    /* a preempted task waits for a CPU from now on, and no waking ends its
     * block; a blocked one's first waking cannot come before this
     * switch-out ends (on_waking) */
    rec->woken = so->state == OFFCPU_STATE_RUNNABLE ? now : 0;
    /* Last, so that a record is complete whenever ts is set. */
    rec->ts = now;
    stat_add(OFFCPU_STAT_SWITCHES, 1);
}

#endif
