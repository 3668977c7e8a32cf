// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Off-CPU collector: at switch-out a task's timestamp, state, cgroup and
 * both stacks go into its own record; at switch-in the elapsed time is added
 * to an aggregate keyed by (cgroup, tgid, tid, uid, comm, state, stacks).
 *
 * Aggregates and stacks come in two generations. The daemon flips `gen`,
 * waits for an RCU grace period (no program still runs on the old set),
 * then drains and clears the old set. Time is charged at switch-in to the
 * generation current then; the stacks travel in the task record, so a task
 * that sleeps across any number of flips still has its own stacks.
 *
 * Stack walks are most of the cost, and most blocks happen where the task
 * blocked before. The record keeps the last two places a task blocked at,
 * each with the stacks walked there, and reuses them when the task blocks
 * at one of them again (see struct fingerprint).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "offcpu.h"
#include "knobs.bpf.h"
#include "task_record.bpf.h"
#include "stacks.bpf.h"
#include "generations.bpf.h"
#include "charge.bpf.h"
#include "wakers.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
    __uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
    __uint(max_entries, OFFCPU_TRACE_CGROUPS_MAX);
    __type(key, __u32);
    __type(value, __u32);
} trace_cgroups SEC(".maps");

/* Of the current task, which at switch-out is prev. */
static __always_inline bool in_traced_cgroup(void)
{
    for (__u32 i = 0; i < OFFCPU_TRACE_CGROUPS_MAX; i++) {
        if (i >= ntrace_cgroups)
            break;
        if (bpf_current_task_under_cgroup(&trace_cgroups, i) == 1)
            return true;
    }
    return !ntrace_cgroups;
}

/* Idle tasks (pid 0) are never off-CPU in any useful sense, nor is a task
 * switching out for the last time (its wait to be reaped is not blocking). */
static __always_inline bool traced(__u32 pid, __u32 flags, unsigned int state)
{
    return pid && !(state & TASK_DEAD) && (trace_kernel_threads || !(flags & PF_KTHREAD)) &&
           in_traced_cgroup();
}

/*
 * sched_switch, for both attach modes (the libbpf-tools habit): btf is a
 * constant, and each program keeps only its own branches. With tp_btf,
 * prev and next are trusted BTF pointers: fields are read directly, records
 * live in task storage, and the stack cache can tell places apart. raw_tp
 * (where BTF-typed tracepoints are missing) reads through CO-RE and keys
 * records by tid, a reused tid told apart by start_time.
 * (TASK_FIELD: task_record.bpf.h)
 */

/* The switch-out being recorded, per CPU: on the BPF stack it would leave
 * too little of the 512 bytes that kernels up to 6.1 allow a program and the
 * walk it calls together. sched_switch never nests on a CPU. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct switch_out);
} switch_outs SEC(".maps");

static __always_inline int on_switch(void *ctx, bool preempt, struct task_struct *prev,
                                     struct task_struct *next, unsigned int prev_state,
                                     const bool btf)
{
    __u32 tid = TASK_FIELD(btf, prev, pid), flags = TASK_FIELD(btf, prev, flags), zero = 0;
    struct switch_out *so;
    struct task_rec *rec;
    __u64 now = 0; /* one clock read for both tasks: the switch's time */

    if (traced(tid, flags, prev_state) && (so = bpf_map_lookup_elem(&switch_outs, &zero))) {
        const struct cred *cred = (const struct cred *)TASK_FIELD(btf, prev, real_cred);

        __builtin_memset(so, 0, sizeof(*so));
        so->start_time = TASK_FIELD(btf, prev, start_time);
        so->tid = tid;
        so->tgid = TASK_FIELD(btf, prev, tgid);
        so->state = state_of(preempt, prev_state);
        so->exec_id = (__u32)TASK_FIELD(btf, prev, self_exec_id);
        so->kthread = !!(flags & PF_KTHREAD);
        so->uid = owner_of(TASK_FIELD(btf, cred, uid.val), TASK_FIELD(btf, cred, euid.val),
                           TASK_FIELD(btf, cred, suid.val), TASK_FIELD(btf, prev, mm), btf);

        if (btf) {
            so->cgroup_id = prev->cgroups->dfl_cgrp->kn->id;
            *(__u64 *)&so->comm[0] = *(__u64 *)&prev->comm[0];
            *(__u64 *)&so->comm[8] = *(__u64 *)&prev->comm[8];
        } else {
            so->cgroup_id = bpf_get_current_cgroup_id(); /* prev is current */
            bpf_get_current_comm(so->comm, sizeof(so->comm));
        }
        /* a kernel thread has no user registers; a preempted task's
         * kernel stack depends on where it was preempted; an uninterruptible
         * sleep (a lock, I/O, a page fault) is where one user place meets many
         * kernel paths: rare, and the blocks most worth getting exactly right */
        if (!so->kthread) {
            /* prev is current: a trusted pointer in either mode */
            struct task_struct *cur = bpf_get_current_task_btf();

            fingerprint_of(&so->fp, cur, so->state);
            so->mm = (__u64)TASK_FIELD(btf, prev, mm);
            so->has_regs = true;
            /* cur is trusted: read directly, no helper call */
            so->in_exec =
                bpf_core_field_exists(cur->in_execve) && BPF_CORE_READ_BITFIELD(cur, in_execve);
            so->cacheable = btf && stack_cache && !preempt && !so->in_exec &&
                            so->state != OFFCPU_STATE_UNINTERRUPTIBLE;
        }
        rec = record_of(prev, tid, btf);
        /* every switch-out: Python-to-Python calls leave no trace in the
         * registers the stack cache compares */
        if (!so->kthread)
            so->fp.python = python_walk(rec, so->tgid, tid, so->mm, so->fp.syscall, so->fp.di);
        so->since = now = bpf_ktime_get_ns();
        if (rec)
            switch_out(ctx, rec, so);
    }
    tid = TASK_FIELD(btf, next, pid);
    if (!tid)
        return 0;
    switch_in(next, record_if_any(next, tid, btf), TASK_FIELD(btf, next, tgid), tid, now, btf);
    return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    return on_switch(ctx, preempt, prev, next, prev_state, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(on_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    return on_switch(ctx, preempt, prev, next, prev_state, false);
}

/* The new image's mappings are read now; the old image's, read when the
 * process first blocked, are kept for the stacks taken before. Its unwind
 * table is read now too, before it first blocks; until the daemon has read
 * it, the walk knows the program from the kernel (find_exe) and the dynamic
 * linker from here: the process starts at its entry point. */
static __always_inline int on_exec(struct task_struct *p, const bool btf)
{
    __u32 tgid = TASK_FIELD(btf, p, tgid), exec_id = (__u32)TASK_FIELD(btf, p, self_exec_id);
    __u64 mm = (__u64)TASK_FIELD(btf, p, mm);

    /* p is current: the cgroup it execs in is the one it will block in */
    if (!in_traced_cgroup())
        return 0;
    announce(tgid, exec_id, OFFCPU_ANNOUNCE_EXEC, mm);
    if (unwind_dwarf) {
        struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

        ask_table_at_exec(tgid, exec_id, mm);
        remember_mapping(tgid, mm, BPF_CORE_READ(regs, ip));
    }
    return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec_btf, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
    return on_exec(p, true);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(on_exec_raw, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
    return on_exec(p, false);
}

/*
 * Code a process maps (ld.so mapping the libraries, a dlopen), kept for the
 * walk until the daemon has read the process's table again. Seen at the
 * return of the mmap syscall's common function, with the mmap lock given
 * back (remember_mapping looks the mapping up). fexit, where trampolines
 * are (with tp_btf): it costs only the mmaps. A syscall tracepoint, the
 * fallback, turns on the slow path of every syscall of every task on the
 * host: 3.3% of a pinned pipe's round trips under offcpud on these machines.
 */
static __always_inline int on_mmap(long ret)
{
    __u64 addr = (__u64)ret;

    /* an error is -4095..-1 */
    if (addr >= (__u64)-4095 || !in_traced_cgroup())
        return 0;
    remember_mapping(bpf_get_current_pid_tgid() >> 32, (__u64)bpf_get_current_task_btf()->mm, addr);
    return 0;
}

/* attached to ksys_mmap_pgoff (collector.c: MMAP_FUNCTION) */
SEC("fexit")
int BPF_PROG(on_mmap_fexit, unsigned long addr, unsigned long len, unsigned long prot,
             unsigned long flags, unsigned long fd, unsigned long pgoff, long ret)
{
    return on_mmap(ret);
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int on_mmap_syscall(struct trace_event_raw_sys_exit *ctx)
{
    return on_mmap(ctx->ret);
}

/*
 * A new task, runnable for the first time (fork or clone to its first run):
 * from now to its first switch-in it waits for a CPU, run-queue time as after
 * any wakeup. With no switch-out to charge that to, its record is made here,
 * charged to the marker "[new task]" (OFFCPU_STACK_NEW_TASK): it has run no
 * code to have a stack of, and the parent's stacks would cost a walk per
 * fork and tell where the parent is, not why the child waits.
 *
 * The tracepoint fires under the child's run-queue lock: it cannot be
 * switched in before the record is complete. current is the parent, whose
 * cgroup the child is in (but for clone3's CLONE_INTO_CGROUP).
 */
static __always_inline int on_wakeup_new(struct task_struct *p, const bool btf)
{
    __u32 tid = TASK_FIELD(btf, p, pid), flags = TASK_FIELD(btf, p, flags);
    const struct cred *cred = (const struct cred *)TASK_FIELD(btf, p, real_cred);
    struct task_rec *rec;
    struct place *pl;
    __u64 now;

    if (!traced(tid, flags, 0))
        return 0;
    rec = record_of(p, tid, btf);
    if (!rec)
        return 0;
    rec->start_time = TASK_FIELD(btf, p, start_time);
    rec->announced = 0;
    rec->uncached = 0;
    rec->id.state = OFFCPU_STATE_RUNNABLE;
    rec->id.kthread = !!(flags & PF_KTHREAD);
    rec->id.exec_id = (__u32)TASK_FIELD(btf, p, self_exec_id);
    rec->id.uid = owner_of(TASK_FIELD(btf, cred, uid.val), TASK_FIELD(btf, cred, euid.val),
                           TASK_FIELD(btf, cred, suid.val), TASK_FIELD(btf, p, mm), btf);
    if (btf) {
        rec->id.cgroup_id = p->cgroups->dfl_cgrp->kn->id;
        *(__u64 *)&rec->id.comm[0] = *(__u64 *)&p->comm[0];
        *(__u64 *)&rec->id.comm[8] = *(__u64 *)&p->comm[8];
    } else {
        rec->id.cgroup_id = BPF_CORE_READ(p, cgroups, dfl_cgrp, kn, id);
        BPF_CORE_READ_STR_INTO(&rec->id.comm, p, comm);
    }
    /* the next switch-out walks into the other place; this one never matches */
    rec->id.place = 0;
    pl = &rec->places[0];
    pl->fp.valid = 0;
    rec->places[1].fp.valid = 0;
    rec->waker_uncached = 0;
    rec->waker.fp.valid = 0;
    pl->user_hash = OFFCPU_STACK_NEW_TASK;
    pl->kernel_hash = OFFCPU_STACK_NEW_TASK;
    pl->stored_gen = 0;
    now = bpf_ktime_get_ns();
    rec->since = now;
    rec->woken = now;
    /* Last, so that a record is complete whenever ts is set. */
    rec->ts = now;
    /* a new process, not a thread: its mappings are its parent's (on_mmap
     * says since when, so only where it runs) */
    if (unwind_dwarf && !(flags & PF_KTHREAD) && tid == TASK_FIELD(btf, p, tgid))
        inherit_table(tid, rec->id.exec_id, (__u64)TASK_FIELD(btf, p, mm));
    return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new_btf, struct task_struct *p)
{
    return on_wakeup_new(p, true);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(on_wakeup_new_raw, struct task_struct *p)
{
    return on_wakeup_new(p, false);
}

/* wakers = yes: a blocked task paired with its waker (wakers.bpf.h). The
 * daemon loads one: _btf where the kernel has bpf_rdonly_cast (6.2),
 * _btf_read where it does not, _raw with raw_tp. */
SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking_btf, struct task_struct *p)
{
    return on_waking(ctx, p, true, true);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking_btf_read, struct task_struct *p)
{
    return on_waking(ctx, p, true, false);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(on_waking_raw, struct task_struct *p)
{
    return on_waking(ctx, p, false, false);
}

/* The place of a still-blocked task, copied out by the iterator. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct place);
} place_copy SEC(".maps");

/*
 * Run by the daemon just before each flip: every task still off-CPU has the
 * time it has been blocked so far charged to the ending generation, and its
 * switch-out time moved to now. A task blocked for minutes then shows in
 * every interval it was blocked in, not only in the one it wakes up in.
 *
 * The record is copied first and the time claimed with a compare-and-swap on
 * ts: if it still holds the value read before the copy, the task has not run
 * (a switch-in clears ts, and a new switch-out stores a later time), so the
 * copy is consistent and the interval is ours alone.
 *
 * A walk that stopped at code whose rows were not loaded goes on from its
 * copy of the stack: a long block (a new program's first, a thread blocked
 * since before a dlopen's rows) is charged to its whole stack. Until the rows
 * come (OFFCPU_DEFER_MAX_NS at most) its time is left for a later flip or
 * its switch-in to charge, whole. The record keeps its copy for those.
 */
SEC("iter/task")
int charge_blocked(struct bpf_iter__task *ctx)
{
    struct task_struct *task = ctx->task;
    struct task_rec *rec;
    struct rec_ident id;
    struct place *copy;
    __u32 zero = 0;
    __u64 ts, now, woken, since;

    if (!task || !task->pid)
        return 0;
    rec = bpf_task_storage_get(&task_recs, task, 0, 0);
    if (!rec)
        return 0;
    ts = rec->ts;
    if (!ts)
        return 0;
    copy = bpf_map_lookup_elem(&place_copy, &zero);
    if (!copy)
        return 0;
    since = rec->since;
    bpf_probe_read_kernel(&id, sizeof(id), &rec->id);
    bpf_probe_read_kernel(copy, sizeof(*copy), &rec->places[id.place & 1]);
    /* a copy made while the task ran is dropped by the compare-and-swap below */
    if (copy->walked & UNWIND_RESUME) {
        if (unwind_resume(&copy->ustack, task->pid, since, rec->start_time, UNWIND_SLOT_ITER) ==
                RESUMED_SHORT &&
            defer_charges && !release_held && bpf_ktime_get_ns() - since < OFFCPU_DEFER_MAX_NS &&
            rows_may_come(task->tgid)) {
            stat_add(OFFCPU_STAT_CHARGES_DEFERRED, 1);
            return 0;
        }
        copy->user_hash = stack_hash(&copy->ustack, OFFCPU_USER_DEPTH);
    }
    now = bpf_ktime_get_ns();
    /* read after now: a wakeup later than now is the next interval's */
    woken = runnable_since(task, id.state, ts, now, true);
    if (__sync_val_compare_and_swap(&rec->ts, ts, now) != ts)
        return 0;
    charge(&id, copy, NULL, task->tgid, task->pid, ts, woken, now, 0, SCRATCH_ITER);
    return 0;
}

/*
 * A block held for its rows: walked on from its copy of the stack, and
 * charged to the generation about to end once they have come, or once
 * OFFCPU_DEFER_MAX_NS have passed since it ended (short then, and counted).
 * Deleted once charged. An element deleted can be taken again at once (by a
 * switch-in on another CPU), and the iteration may then visit some twice:
 * charged says which ones are done.
 */
static long charge_one_deferred(struct bpf_map *map, const struct offcpu_resume_key *key,
                                struct deferred *d, void *unused)
{
    struct place *copy;
    __u32 zero = 0;
    int resumed;

    if (d->charged)
        return 0;
    copy = bpf_map_lookup_elem(&place_copy, &zero);
    if (!copy)
        return 1;
    bpf_probe_read_kernel(copy, sizeof(*copy), &d->place);
    resumed = unwind_resume(&copy->ustack, key->tid, key->since, d->start_time, UNWIND_SLOT_ITER);
    if (resumed == RESUMED_SHORT && !release_held &&
        bpf_ktime_get_ns() - d->end < OFFCPU_DEFER_MAX_NS && rows_may_come(d->tgid))
        return 0;
    if (resumed != RESUMED_WHOLE)
        stat_add(OFFCPU_STAT_DEFERRED_SHORT, 1);
    copy->user_hash = stack_hash(&copy->ustack, OFFCPU_USER_DEPTH);
    /* no one else writes d: it is charged from where it is */
    charge(&d->id, copy, NULL, d->tgid, key->tid, d->ts, d->woken, d->end, d->period, SCRATCH_ITER);
    d->charged = 1;
    drop_resume(key->tid, key->since);
    bpf_map_delete_elem(&deferred_charges, key);
    return 0;
}

/*
 * Run by the daemon at each flip, after charge_blocked: the blocks held for
 * their rows are charged (charge_one_deferred). An iterator over the BPF
 * maps, for its last call only (map NULL): a program run on demand that
 * needs no map to attach to (an iterator over deferred_charges' elements
 * would: 6.18 here refuses to load one, EPERM).
 */
SEC("iter/bpf_map")
int charge_deferred(struct bpf_iter__bpf_map *ctx)
{
    if (!ctx->map)
        bpf_for_each_map_elem(&deferred_charges, charge_one_deferred, NULL, 0);
    return 0;
}

/* Tasks blocked for less than this are left out by list_blocked; set by
 * the daemon before each walk. */
volatile __u64 blocked_min_ns;

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct offcpu_blocked);
} blocked_copy SEC(".maps");

/*
 * Run when a client asks which tasks are stuck: writes one struct
 * offcpu_blocked per task off-CPU for at least blocked_min_ns, with the
 * stacks its switch-out recorded. A task that runs meanwhile changes
 * since (or clears ts): its copy is dropped, it is not stuck.
 */
SEC("iter/task")
int list_blocked(struct bpf_iter__task *ctx)
{
    struct task_struct *task = ctx->task;
    struct offcpu_blocked *out;
    struct task_rec *rec;
    struct place *p;
    __u32 zero = 0;
    __u64 since;

    if (!task || !task->pid)
        return 0;
    rec = bpf_task_storage_get(&task_recs, task, 0, 0);
    out = bpf_map_lookup_elem(&blocked_copy, &zero);
    if (!rec || !out || !rec->ts)
        return 0;
    since = rec->since;
    if (!since || bpf_ktime_get_ns() - since < blocked_min_ns)
        return 0;
    p = &rec->places[rec->id.place & 1];
    out->since_ns = since;
    out->cgroup_id = rec->id.cgroup_id;
    out->tgid = task->tgid;
    out->tid = task->pid;
    out->uid = rec->id.uid;
    out->state = rec->id.state;
    out->kthread = rec->id.kthread;
    out->exec_id = rec->id.exec_id;
    bpf_probe_read_kernel(out->comm, sizeof(out->comm), rec->id.comm);
    out->user_nr = p->user_hash == OFFCPU_STACK_MISSED ? 0 : p->ustack.nr;
    out->kernel_nr = p->kernel_hash == OFFCPU_STACK_MISSED ? 0 : p->kstack.nr;
    bpf_probe_read_kernel(out->user, sizeof(out->user), p->ustack.ip);
    bpf_probe_read_kernel(out->kernel, sizeof(out->kernel), p->kstack.ip);
    if (!rec->ts || rec->since != since)
        return 0;
    bpf_seq_write(ctx->meta->seq, out, sizeof(*out));
    return 0;
}
