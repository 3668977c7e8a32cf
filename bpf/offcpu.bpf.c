// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Off-CPU collector: at switch-out a task's timestamp, state, cgroup and
 * both stacks go into its own record; at switch-in the elapsed time is added
 * to an aggregate keyed by (cgroup, tgid, tid, comm, state, stacks).
 *
 * Aggregates and stacks come in two generations. The daemon flips `gen`,
 * waits for an RCU grace period (no program still runs on the old set),
 * then drains and clears the old set. Time is charged at switch-in to the
 * generation current then; the stacks travel in the task record, so a task
 * that sleeps across any number of flips still has its own stacks.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "offcpu.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define PF_KTHREAD           0x00200000
#define TASK_INTERRUPTIBLE   0x0001
#define TASK_UNINTERRUPTIBLE 0x0002
#define TASK_STOPPED_BIT     0x0004
#define TASK_TRACED_BIT      0x0008
#define TASK_NOLOAD          0x0400

/* Written by the daemon through the mmapped .bss; read once per event. */
volatile __u32 gen;

/* What a blocking episode is charged to, fixed at switch-out. */
struct rec_ident {
    __u64 cgroup_id;
    __u64 user_hash;
    __u64 kernel_hash;
    __u32 state;
    __u32 kthread;
    char comm[16];
};

struct task_rec {
    __u64 ts;         /* switch-out time; 0 when no switch-out is pending */
    __u64 start_time; /* identifies the task when records are keyed by tid */
    __u32 announced;  /* the daemon was told about this thread */
    __u32 pad;
    struct rec_ident id;
    struct offcpu_stack ustack;
    struct offcpu_stack kstack;
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

struct agg_map {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1);
    __type(key, struct offcpu_key);
    __type(value, struct offcpu_value);
} agg0 SEC(".maps"), agg1 SEC(".maps");

struct stack_map {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1);
    __type(key, __u64);
    __type(value, struct offcpu_stack);
} stacks0 SEC(".maps"), stacks1 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
    __uint(max_entries, 2);
    __type(key, __u32);
    __array(values, struct agg_map);
} aggs SEC(".maps") = {
    .values = {&agg0, &agg1},
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
    __uint(max_entries, 2);
    __type(key, __u32);
    __array(values, struct stack_map);
} stacks SEC(".maps") = {
    .values = {&stacks0, &stacks1},
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct offcpu_stats);
} stats SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 256 * 1024);
} announcements SEC(".maps");

static __always_inline void stat_add(enum offcpu_stat s, __u64 n)
{
    __u32 zero = 0;
    struct offcpu_stats *st = bpf_map_lookup_elem(&stats, &zero);

    /* atomic: a preempted iterator and sched_switch may share a CPU */
    if (st && s < OFFCPU_STAT__MAX)
        __sync_fetch_and_add(&st->v[s], n);
}

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

/* Multiply-xorshift over the used frames; never returns OFFCPU_STACK_MISSED. */
static __always_inline __u64 stack_hash(const struct offcpu_stack *s)
{
    __u64 h = 0x243f6a8885a308d3ULL ^ ((__u64)s->kernel << 32) ^ s->nr;

    for (int i = 0; i < OFFCPU_USER_DEPTH; i++) {
        if (i >= s->nr)
            break;
        h ^= s->ip[i];
        h *= 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    return h ? h : 1;
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

/* Walk one stack into s; returns its hash or OFFCPU_STACK_MISSED. */
static __always_inline __u64 take_stack(void *ctx, struct offcpu_stack *s, bool user)
{
    long n;

    s->kernel = !user;
    if (user)
        n = bpf_get_stack(ctx, s->ip, sizeof(s->ip), BPF_F_USER_STACK);
    else
        n = bpf_get_stack(ctx, s->ip, OFFCPU_KERNEL_DEPTH * sizeof(__u64), 0);
    if (n <= 0) {
        s->nr = 0;
        if (!user)
            stat_add(OFFCPU_STAT_KERNEL_STACK_ERROR, 1);
        else if (n == -14 /* EFAULT */ || n == 0)
            stat_add(OFFCPU_STAT_USER_STACK_EFAULT, 1);
        else
            stat_add(OFFCPU_STAT_USER_STACK_ERROR, 1);
        return OFFCPU_STACK_MISSED;
    }
    s->nr = n / sizeof(__u64);
    return stack_hash(s);
}

static __always_inline void switch_out(void *ctx, struct task_rec *rec, struct task_struct *prev,
                                       bool preempt, unsigned int prev_state)
{
    __u32 flags = BPF_CORE_READ(prev, flags);
    __u64 start_time = BPF_CORE_READ(prev, start_time);

    rec->id.state = state_of(preempt, prev_state);
    rec->id.kthread = !!(flags & PF_KTHREAD);
    /* a tid-keyed record may have belonged to an earlier task with this tid */
    if (rec->start_time != start_time) {
        rec->start_time = start_time;
        rec->announced = 0;
    }
    rec->id.cgroup_id = bpf_get_current_cgroup_id();
    bpf_get_current_comm(rec->id.comm, sizeof(rec->id.comm));
    rec->id.kernel_hash = take_stack(ctx, &rec->kstack, false);
    if (rec->id.kthread) {
        rec->ustack.nr = 0;
        rec->id.user_hash = OFFCPU_STACK_MISSED;
    } else {
        rec->id.user_hash = take_stack(ctx, &rec->ustack, true);
    }
    /* A short-lived process may be gone before the next drain: have its
     * mappings read now. Not at a preemption: it may still be in ld.so. */
    if (!rec->announced && !rec->id.kthread && rec->id.state != OFFCPU_STATE_RUNNABLE) {
        struct offcpu_announce a = {.tgid = BPF_CORE_READ(prev, tgid)};

        rec->announced = 1;
        if (bpf_ringbuf_output(&announcements, &a, sizeof(a), 0) < 0)
            stat_add(OFFCPU_STAT_ANNOUNCE_LOST, 1);
    }
    /* Last, so that a record is complete whenever ts is set. */
    rec->ts = bpf_ktime_get_ns();
    stat_add(OFFCPU_STAT_SWITCHES, 1);
}

/* Make sure the stack is in this generation's map; returns the hash to charge. */
static __always_inline __u64 store_stack(void *map, __u64 hash, const struct offcpu_stack *s)
{
    struct offcpu_stack *old;
    long err;

    if (hash == OFFCPU_STACK_MISSED)
        return hash;
    old = bpf_map_lookup_elem(map, &hash);
    if (old) {
        if (stack_equal(old, s))
            return hash;
        stat_add(OFFCPU_STAT_STACK_COLLISION, 1);
        return OFFCPU_STACK_MISSED;
    }
    err = bpf_map_update_elem(map, &hash, s, BPF_NOEXIST);
    if (err == 0 || err == -17 /* EEXIST: another CPU stored it first */)
        return hash;
    stat_add(OFFCPU_STAT_STACK_MAP_FULL, 1);
    return OFFCPU_STACK_MISSED;
}

/*
 * Add [ts, now) of a task to the current generation. wakeup: the task is
 * running again (one more blocking episode), rather than still blocked.
 */
static __always_inline void charge(const struct rec_ident *id, const struct offcpu_stack *ustack,
                                   const struct offcpu_stack *kstack, struct task_struct *task,
                                   __u64 ts, __u64 now, bool wakeup)
{
    struct offcpu_value *val, init = {};
    struct offcpu_key key = {};
    __u64 delta = now > ts ? now - ts : 0;
    void *agg, *stk;
    __u32 g = gen & 1;

    agg = bpf_map_lookup_elem(&aggs, &g);
    stk = bpf_map_lookup_elem(&stacks, &g);
    if (!agg || !stk)
        return;

    key.cgroup_id = id->cgroup_id;
    key.tgid = BPF_CORE_READ(task, tgid);
    key.tid = BPF_CORE_READ(task, pid);
    key.state = id->state;
    key.kthread = id->kthread;
    __builtin_memcpy(key.comm, id->comm, sizeof(key.comm));
    key.kernel_stack = store_stack(stk, id->kernel_hash, kstack);
    key.user_stack = store_stack(stk, id->user_hash, ustack);

    val = bpf_map_lookup_elem(agg, &key);
    if (!val) {
        long err = bpf_map_update_elem(agg, &key, &init, BPF_NOEXIST);

        if (err && err != -17 /* EEXIST */) {
            stat_add(OFFCPU_STAT_AGG_MAP_FULL, 1);
            stat_add(OFFCPU_STAT_AGG_LOST_NS, delta);
            return;
        }
        val = bpf_map_lookup_elem(agg, &key);
        if (!val)
            return;
    }
    __sync_fetch_and_add(&val->total_ns, delta);
    if (wakeup) {
        __sync_fetch_and_add(&val->count, 1);
        stat_add(OFFCPU_STAT_ACCOUNTED, 1);
    }
}

static __always_inline void switch_in(struct task_rec *rec, struct task_struct *next)
{
    __u64 ts;

    /* exchange, because the iterator below may move ts forward concurrently */
    ts = rec ? __sync_lock_test_and_set(&rec->ts, 0) : 0;
    if (!ts) {
        stat_add(OFFCPU_STAT_NO_SWITCH_OUT, 1);
        return;
    }
    charge(&rec->id, &rec->ustack, &rec->kstack, next, ts, bpf_ktime_get_ns(), true);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    struct task_rec *rec;

    if (prev->pid) {
        rec = bpf_task_storage_get(&task_recs, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
        if (rec)
            switch_out(ctx, rec, prev, preempt, prev_state);
        else
            stat_add(OFFCPU_STAT_STORAGE_FAIL, 1);
    }
    if (next->pid)
        switch_in(bpf_task_storage_get(&task_recs, next, 0, 0), next);
    return 0;
}

/* Fallback where BTF-typed tracepoints are missing: no task storage, so
 * records are keyed by tid and a reused tid is told apart by start_time. */
SEC("raw_tp/sched_switch")
int BPF_PROG(on_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    __u32 zero = 0, tid;
    struct task_rec *rec;

    tid = BPF_CORE_READ(prev, pid);
    if (tid) {
        rec = bpf_map_lookup_elem(&tid_recs, &tid);
        if (!rec) {
            struct task_rec *z = bpf_map_lookup_elem(&zero_rec, &zero);

            if (z)
                bpf_map_update_elem(&tid_recs, &tid, z, BPF_ANY);
            rec = bpf_map_lookup_elem(&tid_recs, &tid);
        }
        if (rec)
            switch_out(ctx, rec, prev, preempt, prev_state);
        else
            stat_add(OFFCPU_STAT_STORAGE_FAIL, 1);
    }
    tid = BPF_CORE_READ(next, pid);
    if (tid) {
        rec = bpf_map_lookup_elem(&tid_recs, &tid);
        if (rec && rec->start_time != BPF_CORE_READ(next, start_time))
            rec = NULL;
        switch_in(rec, next);
    }
    return 0;
}

/* Stacks copied out of a record by the iterator, checked afterwards. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, struct offcpu_stack);
} stack_copy SEC(".maps");

/*
 * Run by the daemon just before each flip: every task still off-CPU has the
 * time it has been blocked so far charged to the ending generation, and its
 * switch-out time moved to now. A task blocked for minutes then shows in
 * every interval it was blocked in, not only in the one it wakes up in.
 *
 * The stacks are copied first and the time claimed with a compare-and-swap on
 * ts: if it still holds the value read before the copy, the task has not run
 * (a switch-in clears ts, and a new switch-out stores a later time), so the
 * copy is consistent and the interval is ours alone.
 */
SEC("iter/task")
int charge_blocked(struct bpf_iter__task *ctx)
{
    struct task_struct *task = ctx->task;
    struct offcpu_stack *us, *ks;
    __u32 zero = 0, one = 1;
    struct rec_ident id;
    struct task_rec *rec;
    __u64 ts, now;

    if (!task || !task->pid)
        return 0;
    rec = bpf_task_storage_get(&task_recs, task, 0, 0);
    if (!rec)
        return 0;
    ts = rec->ts;
    if (!ts)
        return 0;
    us = bpf_map_lookup_elem(&stack_copy, &zero);
    ks = bpf_map_lookup_elem(&stack_copy, &one);
    if (!us || !ks)
        return 0;
    bpf_probe_read_kernel(&id, sizeof(id), &rec->id);
    bpf_probe_read_kernel(us, sizeof(*us), &rec->ustack);
    bpf_probe_read_kernel(ks, sizeof(*ks), &rec->kstack);
    now = bpf_ktime_get_ns();
    if (__sync_val_compare_and_swap(&rec->ts, ts, now) != ts)
        return 0;
    charge(&id, us, ks, task, ts, now, false);
    return 0;
}
