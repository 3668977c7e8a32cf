/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Waker stacks (wakers = yes; off, these programs are not even loaded): at
 * sched_waking, which runs in the waker's context, a blocked task's wakeup
 * is charged with the time it was blocked (switch-out to now) to the pair
 * (its blocking identity and stacks, the waker's identity and stacks), in
 * the generation's waker map. Its stacks go to the same generation's stack
 * maps, so that the daemon drains both together.
 *
 * A wakeup from an interrupt (a timer's hrtimer_wakeup, an I/O completion)
 * is the interrupt's, not the task's it happened to interrupt: it is named
 * "[hardirq]", "[softirq]" or "[nmi]", pid 0, with its kernel stack and no
 * user stack. Whether it is one is told by the preempt count (waker_context),
 * and by the interrupt's kernel stack (waker_kind) where that is walked.
 *
 * A task waker's stacks are cached in its own record, as a switch-out's
 * are (waker_stacks): a task that wakes others from where it did before is
 * not walked. Interrupts and kernel threads are walked at every wakeup.
 *
 * It shares the task records, walks and stores of sched_switch (the
 * headers below); its programs are in offcpu.bpf.c with the others.
 */
#ifndef WAKERS_BPF_H
#define WAKERS_BPF_H

#include "generations.bpf.h"
#include "knobs.bpf.h"
#include "stacks.bpf.h"
#include "task_record.bpf.h"

struct wake_map {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1); /* set by the daemon: aggregate-entries, 1 when off */
    __type(key, struct offcpu_wake_key);
    __type(value, struct offcpu_wake_value);
} wake0 SEC(".maps"), wake1 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
    __uint(max_entries, 2);
    __type(key, __u32);
    __array(values, struct wake_map);
} wakes SEC(".maps") = {
    .values = {&wake0, &wake1},
};

static __always_inline __u32 kind_of_frame(__u64 ip)
{
    if (ip - irq_entry_start < irq_entry_end - irq_entry_start)
        return OFFCPU_WAKER_HARDIRQ;
    if (ip - softirq_start < softirq_end - softirq_start ||
        ip - softirq_entry_start < softirq_entry_end - softirq_entry_start)
        return OFFCPU_WAKER_SOFTIRQ;
    if (ip - nmi_entry_start < nmi_entry_end - nmi_entry_start)
        return OFFCPU_WAKER_NMI;
    return OFFCPU_WAKER_TASK;
}

/* The context of a kernel stack (leaf first); an interrupt's is cut after
 * its entry frame: the frames below are the interrupted task's. */
static __always_inline __u32 waker_kind(struct offcpu_stack *s)
{
    __u32 kind;

    if (!irq_entry_end) {
        stat_add(OFFCPU_STAT_WAKE_NO_CONTEXT, 1);
        return OFFCPU_WAKER_UNKNOWN;
    }
    for (int i = 0; i < OFFCPU_KERNEL_DEPTH; i++) {
        if (i >= s->nr)
            break;
        kind = kind_of_frame(s->ip[i]);
        if (kind != OFFCPU_WAKER_TASK) {
            s->nr = i + 1;
            return kind;
        }
    }
    return OFFCPU_WAKER_TASK;
}

/* "[hardirq]", "[softirq]" or "[nmi]", stored as immediates: string
 * constants would go to a .rodata.cst16 section libbpf 1.1 cannot load. */
static __always_inline void interrupt_name(char comm[16], __u32 kind)
{
    __u64 *w = (__u64 *)comm;

    w[0] = kind == OFFCPU_WAKER_HARDIRQ   ? 0x717269647261685bULL /* "[hardirq" */
           : kind == OFFCPU_WAKER_SOFTIRQ ? 0x71726974666f735bULL /* "[softirq" */
                                          : 0x5d696d6e5bULL;      /* "[nmi]" */
    w[1] = kind == OFFCPU_WAKER_NMI ? 0 : 0x5d;                   /* "]" */
}

#define SOFTIRQ_OFFSET 0x00000100 /* serving softirqs (0x200 and up: bh disabled) */
#define HARDIRQ_MASK   0x000f0000
#define NMI_MASK       0x00f00000

static __always_inline __u32 waker_context(struct task_struct *cur)
{
    struct rq *rq;
    int pc;

    if (!preempt_count_from_rq || !bpf_core_field_exists(struct cfs_rq, rq))
        return OFFCPU_WAKER_UNKNOWN;
    /* the current task's run queue is this CPU's, whatever its class */
    rq = cur->se.cfs_rq->rq;
    if (!rq || bpf_probe_read_kernel(&pc, sizeof(pc), (void *)rq + preempt_count_from_rq))
        return OFFCPU_WAKER_UNKNOWN;
    if (pc & NMI_MASK)
        return OFFCPU_WAKER_NMI;
    if (pc & HARDIRQ_MASK)
        return OFFCPU_WAKER_HARDIRQ;
    if (pc & SOFTIRQ_OFFSET)
        return OFFCPU_WAKER_SOFTIRQ;
    return OFFCPU_WAKER_TASK;
}

/* Per-CPU room for the stacks of a waker not cached: an interrupt, a kernel
 * thread, or any waker where the cache is off or records are keyed by tid. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct place);
} waker_scratch SEC(".maps");

/*
 * The waker's context and stacks, into *ret_place (the record's waker place
 * for a task waker in task context, else the scratch place): returns its
 * kind. A task waker's place is a stack cache entry like a switch-out's,
 * fingerprinted by the registers of its entry to the kernel: the same user
 * place and syscall nearly always wake through the same kernel path, and a
 * sample of hits is walked to check. Only a walk tells an interrupt's kind
 * from its frames; one done anyway names it by them.
 */
static __always_inline __u32 waker_stacks(void *ctx, struct task_struct *cur, const bool btf,
                                          struct place **ret_place)
{
    __u32 context = waker_context(cur), zero = 0, none = 0, kind;
    bool kthread = !!(cur->flags & PF_KTHREAD), walked;
    /* an interrupt has no user stack of its own; unknown, the frames tell */
    struct switch_out so = {
        .kthread = kthread || (context != OFFCPU_WAKER_TASK && context != OFFCPU_WAKER_UNKNOWN)};
    struct task_rec *wrec = NULL;
    struct offcpu_stack *ks;
    struct place *wp;

    /* like a switch-out's, the cache needs trusted pointers (task storage) */
    if (btf && stack_cache && !so.kthread && context == OFFCPU_WAKER_TASK)
        wrec = bpf_task_storage_get(&task_recs, cur, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    wp = wrec ? &wrec->waker : bpf_map_lookup_elem(&waker_scratch, &zero);
    if (!wp)
        return OFFCPU_WAKER_UNKNOWN;
    *ret_place = wp;
    if (!so.kthread) {
        fingerprint_of(&so.fp, cur, 0);
        so.has_regs = true;
        so.cacheable = !!wrec;
        so.mm = (__u64)cur->mm;
        so.tgid = cur->tgid;
        so.exec_id = (__u32)cur->self_exec_id;
        /* a CPython thread waking another (the GIL's holder dropping it):
         * the Python code it runs */
        so.fp.python = python_walk(wrec, so.tgid, cur->pid, so.mm, 0, 0);
    }
    stacks_at(ctx, wp, 1, 0, wrec ? &wrec->waker_uncached : &none, &so, true, &walked);
    /* the preempt count is the truth where known: a task's page fault is
     * its own context, though asm_exc_page_fault lies in .irqentry.text */
    if (!walked || context == OFFCPU_WAKER_TASK)
        return OFFCPU_WAKER_TASK;
    ks = (struct offcpu_stack *)&wp->kstack;
    kind = ks->nr ? waker_kind(ks) : OFFCPU_WAKER_UNKNOWN;
    if (context == OFFCPU_WAKER_UNKNOWN) {
        if (kind == OFFCPU_WAKER_TASK || kind == OFFCPU_WAKER_UNKNOWN)
            return kind; /* a task's stacks, as walked */
    } else if (kind == OFFCPU_WAKER_TASK || kind == OFFCPU_WAKER_UNKNOWN) {
        /* no entry frame found: an interrupt all the same, never the task's */
        if (kind == OFFCPU_WAKER_TASK)
            stat_add(OFFCPU_STAT_WAKE_CONTEXT_DISAGREE, 1);
        kind = context;
    } else if (kind != context) {
        /* the frames name it, as where the context is not known */
        stat_add(OFFCPU_STAT_WAKE_CONTEXT_DISAGREE, 1);
    }
    /* an interrupt's stack, cut at its entry by waker_kind, and no user stack */
    wp->kernel_hash = ks->nr ? stack_hash(ks, OFFCPU_KERNEL_DEPTH) : OFFCPU_STACK_MISSED;
    wp->user_hash = OFFCPU_STACK_MISSED;
    return kind;
}

/* The current task as a waker: its identity. */
static __always_inline void current_waker(struct offcpu_wake_key *k, struct task_struct *cur)
{
    k->tgid = cur->tgid;
    k->tid = cur->pid;
    k->exec_id = (__u32)cur->self_exec_id;
    k->kthread = !!(cur->flags & PF_KTHREAD);
    k->uid = owner_of(cur->real_cred->uid.val, cur->real_cred->euid.val, cur->real_cred->suid.val,
                      cur->mm, true);
    /* cur is trusted: read directly, no helper call */
    *(__u64 *)&k->comm[0] = *(__u64 *)&cur->comm[0];
    *(__u64 *)&k->comm[8] = *(__u64 *)&cur->comm[8];
}

/* Charges the pair; a new one past the woken cgroup's share goes to its
 * thread's pair over budget, as a new aggregate entry would (new_entry). */
static __always_inline void add_wake(struct offcpu_wake_key *k, void *map, __u64 blocked,
                                     __u32 flips)
{
    struct offcpu_wake_value init = {}, *v;
    long err;

    v = bpf_map_lookup_elem(map, k);
    if (!v && !take_room(k->woken.cgroup_id, flips, ROOM_WAKES)) {
        k->woken.user_stack = k->woken.kernel_stack = OFFCPU_STACK_OVER_BUDGET;
        k->user_stack = k->kernel_stack = OFFCPU_STACK_OVER_BUDGET;
        v = bpf_map_lookup_elem(map, k);
    }
    if (!v) {
        err = bpf_map_update_elem(map, k, &init, BPF_NOEXIST);
        if (err == 0 || err == -17 /* EEXIST: another CPU made it first */)
            v = bpf_map_lookup_elem(map, k);
    }
    if (!v) {
        stat_add(OFFCPU_STAT_WAKE_MAP_FULL, 1);
        stat_add(OFFCPU_STAT_WAKE_LOST_NS, blocked);
        return;
    }
    __sync_fetch_and_add(&v->blocked_ns, blocked);
    __sync_fetch_and_add(&v->count, 1);
    stat_add(OFFCPU_STAT_WAKES, 1);
}

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct offcpu_wake_key);
} wake_key_scratch SEC(".maps");

/*
 * Only a task blocked now (ts set: switched out, not yet woken) is of
 * interest: a wakeup racing the task's own sleep, before its switch-out,
 * woke a task that never left the CPU. p's record is not written meanwhile:
 * p runs nowhere, and charge_blocked moves only ts.
 */
static __always_inline int on_waking(void *ctx, struct task_struct *p, const bool btf)
{
    struct task_rec *rec = record_if_any(p, TASK_FIELD(btf, p, pid), btf);
    struct task_struct *cur = bpf_get_current_task_btf();
    struct offcpu_wake_key *k;
    __u32 flips = gen, g = flips & 1, zero = 0;
    struct place *pl, *wp = NULL;
    void *map, *stk;
    __u64 since, now;

    if (!rec || !rec->ts || rec->woken)
        return 0;
    since = rec->since;
    now = bpf_ktime_get_ns();
    /* runnable from now: sched_wakeup, which would say so a moment later
     * (on this CPU, or on the task's once an IPI has queued it), is not
     * traced as well (see on_wakeup) */
    rec->woken = now;
    map = bpf_map_lookup_elem(&wakes, &g);
    stk = bpf_map_lookup_elem(&stacks, &g);
    k = bpf_map_lookup_elem(&wake_key_scratch, &zero);
    if (!map || !stk || !k)
        return 0;
    __builtin_memset(k, 0, sizeof(*k));

    pl = &rec->places[rec->id.place & 1];
    k->woken.cgroup_id = rec->id.cgroup_id;
    k->woken.tgid = TASK_FIELD(btf, p, tgid);
    k->woken.tid = TASK_FIELD(btf, p, pid);
    k->woken.state = rec->id.state;
    k->woken.kthread = rec->id.kthread;
    k->woken.uid = rec->id.uid;
    k->woken.exec_id = rec->id.exec_id;
    __builtin_memcpy(k->woken.comm, rec->id.comm, sizeof(k->woken.comm));
    /* the pair is the woken task's: its cgroup's room holds all its stacks */
    store_place(stk, pl, &pl->stored_gen, SCRATCH_WAKE, k->woken.cgroup_id, flips,
                &k->woken.user_stack, &k->woken.kernel_stack);

    k->kind = waker_stacks(ctx, cur, btf, &wp);
    if (!wp)
        return 0;
    if (k->kind == OFFCPU_WAKER_TASK || k->kind == OFFCPU_WAKER_UNKNOWN) {
        current_waker(k, cur);
    } else {
        interrupt_name(k->comm, k->kind);
        k->kthread = 1;
    }
    store_place(stk, wp, &wp->stored_gen, SCRATCH_WAKER, k->woken.cgroup_id, flips, &k->user_stack,
                &k->kernel_stack);
    add_wake(k, map, now > since ? now - since : 0, flips);
    return 0;
}

#endif
