/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stack cache: most blocks happen where the task blocked before, and
 * walking stacks is most of what tracing costs. A task's record keeps the
 * last places it blocked at, each with its fingerprint and the stacks walked
 * there; a block with a known fingerprint reuses them. A waker's record
 * keeps one more place, where it last woke a task from (wakers = yes), used
 * the same way: the counters below are kept apart by `waker`.
 */
#ifndef STACK_CACHE_BPF_H
#define STACK_CACHE_BPF_H

#include "common.bpf.h"
#include "knobs.bpf.h"

/*
 * Where a task blocked, as far as can be told without walking its stacks:
 * the user registers its syscall saved, the syscall and the state. A task
 * that blocks with the same fingerprint again nearly always has the same
 * stacks. Reading user memory would tell more, but on these machines one
 * read of user memory costs as much as the rest of the event; instead a
 * random sample of hits is walked all the same, counted in status, and a
 * task found blocking with other stacks at a known place is walked always.
 */
struct fingerprint {
    __u64 ip, sp, bp;
    __u64 di; /* not compared: where the unwinder finds vfork's return address */
    __u64 syscall;
    __u64 exec_id; /* an exec in place starts a new image */
    /* a CPython thread's Python frames, hashed (python_walk), 0 for others:
     * Python-to-Python calls leave no trace in the registers */
    __u64 python;
    __u32 state;
    __u32 valid;
};

/* Of the task switching out, a trusted BTF pointer. */
static __always_inline void fingerprint_of(struct fingerprint *fp, struct task_struct *task,
                                           __u32 state)
{
    struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

    fp->ip = regs->ip;
    fp->sp = regs->sp;
    fp->bp = regs->bp;
    fp->di = regs->di;
    fp->syscall = regs->orig_ax;
    fp->exec_id = task->self_exec_id;
    fp->python = 0;
    fp->state = state;
    fp->valid = 1;
}

static __always_inline bool fingerprint_equal(const struct fingerprint *a,
                                              const struct fingerprint *b)
{
    return a->valid && b->valid && a->ip == b->ip && a->sp == b->sp && a->bp == b->bp &&
           a->syscall == b->syscall && a->exec_id == b->exec_id && a->python == b->python &&
           a->state == b->state;
}

/*
 * A place's checks back off: one hit in 2^check_shift at a new place (the
 * knob), half as often after each check that found the same stacks, down to
 * one in 2^(check_shift + CHECK_BACKOFF). A check is a whole walk, and a
 * task that blocks at one place all day (a server's accept, a worker's
 * queue) would pay for one in 64 of its blocks for ever; a place where the
 * fingerprint misleads is most likely found in its first checks. With
 * check_shift 0 (every hit checked) nothing backs off.
 */
#define CHECK_BACKOFF 4

static __always_inline __u32 check_shift_new(void)
{
    return check_shift;
}

/* After a check at a place found the same stacks: its next come later. */
static __always_inline __u32 check_shift_after_agreeing(__u32 shift)
{
    return check_shift && shift < check_shift + CHECK_BACKOFF ? shift + 1 : shift;
}

/* Of a cache hit at a place checked one time in 2^shift: is it walked all
 * the same, to check the cache? */
static __always_inline bool cache_check_hit(const bool waker, __u32 shift)
{
    stat_add(waker ? OFFCPU_STAT_WAKER_CACHE_HITS : OFFCPU_STAT_CACHE_HITS, 1);
    if (bpf_get_prandom_u32() & ((1U << (shift & 31)) - 1))
        return false;
    stat_add(waker ? OFFCPU_STAT_WAKER_CACHE_CHECKS : OFFCPU_STAT_CACHE_CHECKS, 1);
    return true;
}

/* A checked hit's walk found other stacks than the cache had: the task is
 * walked always from now on. A walk that failed (a page of the user stack
 * not resident, a table not read yet) proves nothing. */
static __always_inline bool cache_mismatch(bool walk_final, __u64 user_was, __u64 kernel_was,
                                           __u64 user, __u64 kernel, const bool waker)
{
    if (!walk_final || user == OFFCPU_STACK_MISSED || kernel == OFFCPU_STACK_MISSED ||
        (user == user_was && kernel == kernel_was))
        return false;
    stat_add(waker ? OFFCPU_STAT_WAKER_CACHE_MISMATCH : OFFCPU_STAT_CACHE_MISMATCH, 1);
    return true;
}

#endif
