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

#include "charge.bpf.h"
#include "generations.bpf.h"
#include "knobs.bpf.h"
#include "stacks.bpf.h"
#include "task_record.bpf.h"

/* Indexed as the aggregates are (generations.bpf.h): a blocked task woken
 * by the same waker as its last block at the same place adds to the pair by
 * index (cached_wake). */
struct wake_map {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1); /* set by the daemon: aggregate-entries, 1 when off */
    __type(key, struct offcpu_wake_key);
    __type(value, __u32); /* the index in the generation's wake_values */
} wake0 SEC(".maps"), wake1 SEC(".maps");

struct wake_values_map {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct offcpu_wake_value);
} wake_values0 SEC(".maps"), wake_values1 SEC(".maps");

/* The indexes given out in each generation's wake_values; the daemon sets a
 * generation's back to 0 once it has drained it. */
volatile __u32 wake_used[2];

const volatile struct offcpu_wake_value zero_wake = {};

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

/* A typed view of any kernel address, read by plain loads (kernel 6.2):
 * bpf_probe_read_kernel, which 6.1 needs, costs a sixth of a wakeup's
 * program. Weak: programs that do not call it load where it is missing. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* typed: read with bpf_rdonly_cast (the daemon loads this program where
 * the kernel has it), else with bpf_probe_read_kernel */
static __always_inline __u32 waker_context(struct task_struct *cur, const bool typed)
{
    struct rq *rq;
    int pc;

    if (!preempt_count_from_rq || !bpf_core_field_exists(struct cfs_rq, rq))
        return OFFCPU_WAKER_UNKNOWN;
    /* the current task's run queue is this CPU's, whatever its class */
    rq = cur->se.cfs_rq->rq;
    if (!rq)
        return OFFCPU_WAKER_UNKNOWN;
    if (typed) {
        /* an int at its start, as the preempt count is */
        const struct refcount_struct *count =
            bpf_rdonly_cast((void *)((__u64)rq + preempt_count_from_rq),
                            bpf_core_type_id_kernel(struct refcount_struct));

        pc = count->refs.counter;
    } else if (bpf_probe_read_kernel(&pc, sizeof(pc), (void *)rq + preempt_count_from_rq)) {
        return OFFCPU_WAKER_UNKNOWN;
    }
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
                                          const bool typed, struct place **ret_place)
{
    __u32 context = waker_context(cur, typed), zero = 0, none = 0, kind;
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
static __always_inline void current_waker(struct offcpu_waker *w, struct task_struct *cur)
{
    w->tgid = cur->tgid;
    w->tid = cur->pid;
    w->exec_id = (__u32)cur->self_exec_id;
    w->kthread = !!(cur->flags & PF_KTHREAD);
    w->uid = owner_of(cur->real_cred->uid.val, cur->real_cred->euid.val, cur->real_cred->suid.val,
                      cur->mm, true);
    /* cur is trusted: read directly, no helper call */
    *(__u64 *)&w->comm[0] = *(__u64 *)&cur->comm[0];
    *(__u64 *)&w->comm[8] = *(__u64 *)&cur->comm[8];
}

/*
 * The pair of a block at place pl woken by w, by index, if it is the one its
 * last block there was charged to: the same waker, and the woken side the
 * place's aggregate entry then and now (agg_cache_valid: the key charge()
 * and the pair's woken side would be built alike; one index, one key).
 */
static __always_inline struct offcpu_wake_value *
cached_wake(const struct task_rec *rec, const struct place *pl, __u32 tgid, __u32 tid,
            const struct offcpu_waker *w, __u32 flips)
{
    if (pl->wake.gen1 != flips + 1 || pl->wake.agg_index != pl->agg.index ||
        !agg_cache_valid(&rec->id, pl, tgid, tid, flips) ||
        !words_equal(&pl->wake.waker, w, sizeof(*w)))
        return NULL;
    return VALUE_AT(wake_values0, wake_values1, flips & 1, &pl->wake.index);
}

/* The pair's entry, found or made; a new one past the woken cgroup's share
 * is its thread's pair over budget, as a new aggregate entry would be
 * (new_entry). *index: the entry's; *exact: it is the pair of k as given. */
static __always_inline struct offcpu_wake_value *wake_entry(struct offcpu_wake_key *k, __u32 flips,
                                                            __u32 *index, bool *exact)
{
    __u32 g = flips & 1;
    void *map = bpf_map_lookup_elem(&wakes, &g),
         *vals = g ? (void *)&wake_values1 : (void *)&wake_values0;
    struct offcpu_wake_value *v;

    *exact = true;
    if (!map)
        return NULL;
    v = indexed_find(map, vals, k, index);
    if (v)
        return v;
    if (!take_room(k->woken.cgroup_id, flips, ROOM_WAKES)) {
        k->woken.user_stack = k->woken.kernel_stack = OFFCPU_STACK_OVER_BUDGET;
        k->waker.user_stack = k->waker.kernel_stack = OFFCPU_STACK_OVER_BUDGET;
        *exact = false;
        v = indexed_find(map, vals, k, index);
        if (v)
            return v;
    }
    /* flips & 1 again, not g: a 32-bit value spilled across the calls above
     * comes back unbounded to 6.1's verifier */
    return indexed_new(map, vals, k, (__u32 *)&wake_used[flips & 1], (const void *)&zero_wake,
                       index);
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
static __always_inline int on_waking(void *ctx, struct task_struct *p, const bool btf,
                                     const bool typed)
{
    __u32 tid = TASK_FIELD(btf, p, pid), tgid, flips = gen, g = flips & 1, zero = 0, index = 0;
    struct task_rec *rec = record_if_any(p, tid, btf);
    struct task_struct *cur = bpf_get_current_task_btf();
    struct offcpu_wake_value *v;
    struct offcpu_wake_key *k;
    struct place *pl, *wp = NULL;
    __u64 since, now, blocked;
    bool exact;
    void *stk;

    if (!rec || !rec->ts || rec->woken)
        return 0;
    since = rec->since;
    now = bpf_ktime_get_ns();
    /* its first waking since it blocked: the later ones find it woken */
    rec->woken = now;
    blocked = now > since ? now - since : 0;
    stk = bpf_map_lookup_elem(&stacks, &g);
    k = bpf_map_lookup_elem(&wake_key_scratch, &zero);
    if (!stk || !k)
        return 0;
    tgid = TASK_FIELD(btf, p, tgid);
    pl = &rec->places[rec->id.place & 1];

    /* the waker: all of the pair that the woken's record does not hold */
    __builtin_memset(&k->waker, 0, sizeof(k->waker));
    k->waker.kind = waker_stacks(ctx, cur, btf, typed, &wp);
    if (!wp)
        return 0;
    if (k->waker.kind == OFFCPU_WAKER_TASK || k->waker.kind == OFFCPU_WAKER_UNKNOWN) {
        current_waker(&k->waker, cur);
    } else {
        interrupt_name(k->waker.comm, k->waker.kind);
        k->waker.kthread = 1;
    }
    /* the pair is the woken task's: its cgroup's room holds all its stacks */
    store_place(stk, wp, &wp->stored_gen, SCRATCH_WAKER, rec->id.cgroup_id, flips,
                &k->waker.user_stack, &k->waker.kernel_stack);

    v = cached_wake(rec, pl, tgid, tid, &k->waker, flips);
    if (!v) {
        k->woken.cgroup_id = rec->id.cgroup_id;
        k->woken.tgid = tgid;
        k->woken.tid = tid;
        k->woken.state = rec->id.state;
        k->woken.kthread = rec->id.kthread;
        k->woken.uid = rec->id.uid;
        k->woken.exec_id = rec->id.exec_id;
        __builtin_memcpy(k->woken.comm, rec->id.comm, sizeof(k->woken.comm));
        store_place(stk, pl, &pl->stored_gen, SCRATCH_WAKE, k->woken.cgroup_id, flips,
                    &k->woken.user_stack, &k->woken.kernel_stack);
        v = wake_entry(k, flips, &index, &exact);
        pl->wake.gen1 = 0;
        if (v && exact && agg_cache_valid(&rec->id, pl, tgid, tid, flips)) {
            pl->wake.agg_index = pl->agg.index;
            pl->wake.index = index;
            pl->wake.waker = k->waker;
            pl->wake.gen1 = flips + 1;
        }
    }
    if (!v) {
        stat_add(OFFCPU_STAT_WAKE_MAP_FULL, 1);
        stat_add(OFFCPU_STAT_WAKE_LOST_NS, blocked);
        return 0;
    }
    __sync_fetch_and_add(&v->blocked_ns, blocked);
    __sync_fetch_and_add(&v->count, 1);
    stat_add(OFFCPU_STAT_WAKES, 1);
    return 0;
}

#endif
