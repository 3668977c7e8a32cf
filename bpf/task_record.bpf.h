/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A task's record: what its switch-out fixed (its identity, state and the
 * places it blocked at, with their stacks), kept in task storage (tp_btf)
 * or by tid (raw_tp); the task's state and owner as the record keeps them.
 */
#ifndef TASK_RECORD_BPF_H
#define TASK_RECORD_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "offcpu.h"
#include "common.bpf.h"
#include "kernel_layouts.bpf.h"
#include "stack_cache.bpf.h"

#define PF_KTHREAD           0x00200000
#define TASK_INTERRUPTIBLE   0x0001
#define TASK_UNINTERRUPTIBLE 0x0002
#define TASK_STOPPED_BIT     0x0004
#define TASK_TRACED_BIT      0x0008
#define TASK_DEAD            0x0080
#define TASK_NOLOAD          0x0400
#define MMF_DUMPABLE_MASK    0x3
#define SUID_DUMP_USER       1

/* What a blocking episode is charged to, fixed at switch-out. */
struct rec_ident {
    __u64 cgroup_id;
    __u32 state;
    __u32 kthread;
    __u32 uid;
    __u32 place; /* which of task_rec.places holds the stacks */
    __u32 exec_id;
    __u32 pad;
    char comm[16];
};

/* A kernel stack as kept in a record; stored as a struct offcpu_stack,
 * whose beginning it shares. */
struct kernel_stack {
    __u32 nr;
    __u32 kernel;
    __u64 ip[OFFCPU_KERNEL_DEPTH];
};

#define PLACES 2

/* The aggregate entry a place was last charged to (charge.bpf.h): in the
 * generation flips + 1 = gen1, at index, for key. */
struct agg_cache {
    __u32 gen1;
    __u32 index;
    struct offcpu_key key;
};

/* The waker pair a block at this place was last charged to (wakers.bpf.h):
 * its index, while the woken side is the place's aggregate entry (agg_index
 * in generation gen1 - 1) and the waker is the same. */
struct wake_cache {
    __u32 gen1;
    __u32 agg_index;
    __u32 index;
    __u32 pad;
    struct offcpu_waker waker;
};

struct place {
    struct fingerprint fp;
    __u64 user_hash;   /* or OFFCPU_STACK_MISSED */
    __u64 kernel_hash; /* or OFFCPU_STACK_MISSED */
    __u32 stored_gen;  /* gen + 1 when both stacks are known to be in that gen's map */
    __u32 walked;      /* enum unwind_result of the user stack's walk */
    __u32 check_shift; /* a hit here is walked all the same one time in 2^check_shift */
    struct agg_cache agg;
    struct wake_cache wake;
    struct offcpu_stack ustack;
    struct kernel_stack kstack;
};

struct task_rec {
    __u64 ts;    /* switch-out time; 0 when no switch-out is pending */
    __u64 since; /* switch-out time, which charge_blocked leaves alone */
    /* runnable since (its first waking, or a preemption); 0: still blocked.
     * on_waking pairs only the first waking with its waker; the run-queue
     * wait is the kernel's to tell (runnable_since) */
    __u64 woken;
    __u64 start_time;     /* identifies the task when records are keyed by tid */
    __u32 announced;      /* the daemon was told about this thread (twice: see switch_out) */
    __u32 uncached;       /* a check found other stacks at a known place: always walk */
    __u32 waker_uncached; /* the same, of the place it wakes tasks from */
    /* python_gen when its address space, python_mm, was found to run no
     * CPython the collector knows (python_walk): no lookup until either
     * changes */
    __u32 python_gen;
    __u64 python_mm;
    /* its process's GIL-state TSS key + 1 (0: not known), read in address
     * space python_key_mm (python_walk) */
    __u64 python_key_mm;
    __u32 python_key1;
    __u32 python_pad;
    struct rec_ident id;
    struct place places[PLACES];
    struct place waker; /* where it last woke a task from (wakers.bpf.h) */
};

struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct task_rec);
} task_recs SEC(".maps");

/* raw_tp fallback only: records keyed by tid, checked against start_time. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct task_rec);
} tid_recs SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct task_rec);
} zero_rec SEC(".maps");

static __always_inline __u32 state_of(bool preempt, unsigned int prev_state)
{
    if (preempt || prev_state == 0)
        return OFFCPU_STATE_RUNNABLE;
    if (prev_state & TASK_UNINTERRUPTIBLE)
        return (prev_state & TASK_NOLOAD) ? OFFCPU_STATE_IDLE : OFFCPU_STATE_UNINTERRUPTIBLE;
    if (prev_state & TASK_INTERRUPTIBLE)
        return OFFCPU_STATE_SLEEPING;
    if (prev_state & TASK_STOPPED_BIT)
        return OFFCPU_STATE_STOPPED;
    if (prev_state & TASK_TRACED_BIT)
        return OFFCPU_STATE_TRACED;
    return OFFCPU_STATE_OTHER;
}

/*
 * Whose a record is, as ptrace would judge it: a task's real uid, if its
 * effective and saved uids are the same and it is dumpable; otherwise no
 * member's (a setuid program such as su runs with the member's real uid but
 * holds what is not theirs). A kernel thread (no mm) is root's. btf: mm
 * came through a BTF pointer (mm_flags_of).
 */
static __always_inline __u32 owner_of(__u32 uid, __u32 euid, __u32 suid, const struct mm_struct *mm,
                                      const bool btf)
{
    unsigned long mm_flags = 0;

    if (uid != euid || uid != suid)
        return OFFCPU_UID_UNKNOWN;
    if (!mm)
        return uid;
    if (!mm_flags_of(mm, btf, &mm_flags))
        return OFFCPU_UID_UNKNOWN;
    return (mm_flags & MMF_DUMPABLE_MASK) == SUID_DUMP_USER ? uid : OFFCPU_UID_UNKNOWN;
}

/* A task's field, for both attach modes (btf a constant): direct through a
 * trusted BTF pointer, else through CO-RE. */
#define TASK_FIELD(btf, t, f) ((btf) ? (t)->f : BPF_CORE_READ(t, f))

/* The record of prev (made if need be); NULL (counted) if none can be had. */
static __always_inline struct task_rec *record_of(struct task_struct *prev, __u32 tid,
                                                  const bool btf)
{
    struct task_rec *rec, *z;
    __u32 zero = 0;

    if (btf) {
        rec = bpf_task_storage_get(&task_recs, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    } else {
        rec = bpf_map_lookup_elem(&tid_recs, &tid);
        if (!rec) {
            z = bpf_map_lookup_elem(&zero_rec, &zero);
            if (z)
                bpf_map_update_elem(&tid_recs, &tid, z, BPF_ANY);
            rec = bpf_map_lookup_elem(&tid_recs, &tid);
        }
    }
    if (!rec)
        stat_add(OFFCPU_STAT_STORAGE_FAIL, 1);
    return rec;
}

/* The record of t, made by an earlier switch-out; NULL if there is none. */
static __always_inline struct task_rec *record_if_any(struct task_struct *t, __u32 tid,
                                                      const bool btf)
{
    struct task_rec *rec;

    if (btf)
        return bpf_task_storage_get(&task_recs, t, 0, 0);
    rec = bpf_map_lookup_elem(&tid_recs, &tid);
    return rec && rec->start_time == BPF_CORE_READ(t, start_time) ? rec : NULL;
}

#endif
