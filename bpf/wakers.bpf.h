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
 * user stack. The context is told by the waker's kernel stack (waker_kind).
 *
 * The waker's stacks are walked on every wakeup: no stack cache (a waker's
 * registers say little about where in the kernel it wakes from, and most
 * wakers are not blocking). This is what makes the feature opt-in.
 *
 * Included by offcpu.bpf.c after the helpers it shares with sched_switch.
 */
#ifndef WAKERS_BPF_H
#define WAKERS_BPF_H

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

/*
 * Where interrupt code lies, from /proc/kallsyms, set by the daemon before
 * load (0: unknown, every waker is named as the task it runs on, counted).
 * The preempt count would tell the context directly, but __preempt_count is
 * a per-CPU variable, which kallsyms lists only with CONFIG_KALLSYMS_ALL:
 * the verifier cannot resolve it here. The waker's kernel stack tells it as
 * well: the frame nearest its leaf that enters an interrupt or a softirq.
 */
const volatile __u64 irq_entry_start = 0, irq_entry_end = 0; /* .irqentry.text: asm_sysvec_* */
const volatile __u64 nmi_entry_start = 0, nmi_entry_end = 0; /* asm_exc_nmi */
const volatile __u64 softirq_start = 0, softirq_end = 0;     /* handle_softirqs */
const volatile __u64 softirq_entry_start = 0, softirq_entry_end = 0; /* .softirqentry.text */

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

/* The current task as a waker: identity, and its user stack unless it is a
 * kernel thread. Its registers are those saved at its entry to the kernel. */
static __always_inline void current_waker(void *ctx, struct offcpu_wake_key *k, void *stk,
                                          __u32 flips)
{
    struct task_struct *cur = bpf_get_current_task_btf();
    __u32 slot = SCRATCH_WAKER_USER;
    struct offcpu_stack *s;
    struct switch_out so = {};
    bool final;

    k->tgid = cur->tgid;
    k->tid = cur->pid;
    k->exec_id = (__u32)cur->self_exec_id;
    k->kthread = !!(cur->flags & PF_KTHREAD);
    k->uid = owner_of(cur->real_cred->uid.val, cur->real_cred->euid.val, cur->real_cred->suid.val,
                      cur->mm);
    bpf_get_current_comm(k->comm, sizeof(k->comm));
    k->user_stack = OFFCPU_STACK_MISSED;
    if (k->kthread)
        return;
    s = bpf_map_lookup_elem(&scratch, &slot);
    if (!s)
        return;
    fingerprint_of(&so.fp, cur, 0);
    so.has_regs = true;
    so.mm = (__u64)cur->mm;
    so.tgid = k->tgid;
    so.exec_id = k->exec_id;
    k->user_stack =
        store_stack(stk, take_user_stack(ctx, s, &so, &final), s, k->woken.cgroup_id, flips);
}

/* The waker's kernel stack, from here, into the scratch slot (nr 0 when it
 * could not be taken): called from one place only (see walk_stacks). */
static __always_inline struct offcpu_stack *waker_kernel_stack(void *ctx)
{
    __u32 slot = SCRATCH_WAKER_KERNEL;
    struct offcpu_stack *s = bpf_map_lookup_elem(&scratch, &slot);

    if (s)
        s->nr = take_stack(ctx, s, 0, OFFCPU_KERNEL_DEPTH * sizeof(__u64), false);
    return s;
}

static __always_inline void add_wake(struct offcpu_wake_key *k, void *map, __u64 blocked)
{
    struct offcpu_wake_value init = {}, *v;
    long err;

    v = bpf_map_lookup_elem(map, k);
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
    struct offcpu_wake_key *k;
    struct offcpu_stack *ks;
    __u32 flips = gen, g = flips & 1, zero = 0;
    struct place *pl;
    void *map, *stk;
    __u64 since, now;

    if (!rec || !rec->ts || rec->woken)
        return 0;
    since = rec->since;
    now = bpf_ktime_get_ns();
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
    k->woken.kernel_stack = store_kernel_stack(stk, pl->kernel_hash, &pl->kstack, SCRATCH_WAKE,
                                               k->woken.cgroup_id, flips);
    k->woken.user_stack = store_stack(stk, pl->user_hash, &pl->ustack, k->woken.cgroup_id, flips);

    ks = waker_kernel_stack(ctx);
    if (!ks)
        return 0;
    k->kind = ks->nr ? waker_kind(ks) : OFFCPU_WAKER_UNKNOWN;
    if (k->kind == OFFCPU_WAKER_TASK || k->kind == OFFCPU_WAKER_UNKNOWN) {
        current_waker(ctx, k, stk, flips);
    } else {
        interrupt_name(k->comm, k->kind);
        k->kthread = 1;
        k->user_stack = OFFCPU_STACK_MISSED;
    }
    k->kernel_stack = ks->nr ? store_stack(stk, stack_hash(ks, OFFCPU_KERNEL_DEPTH), ks,
                                           k->woken.cgroup_id, flips)
                             : OFFCPU_STACK_MISSED;
    add_wake(k, map, now > since ? now - since : 0);
    return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking_btf, struct task_struct *p)
{
    return on_waking(ctx, p, true);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(on_waking_raw, struct task_struct *p)
{
    return on_waking(ctx, p, false);
}

#endif
