/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Charging a block's time at switch-in to the generation current then:
 * run-queue part, histogram, and blocks held for rows still to come.
 */
#ifndef CHARGE_BPF_H
#define CHARGE_BPF_H

#include "generations.bpf.h"

/*
 * When t became runnable, on the clock of now (the switch's or the flip's):
 * the kernel keeps it, as sched_info.last_queued on its run queue's clock,
 * from the enqueue a wakeup, a preemption or a new task's first wakeup makes
 * until the switch-in (what /proc/PID/schedstat sums as run_delay). Its lag
 * behind that clock, read now, is the wait for a CPU so far. At a switch-in
 * the clock is the switch's own (__schedule updates it first); at a flip it
 * may lag by up to a tick, and the flip's share of the wait with it (the
 * total is charged at the switch-in). 0: not runnable, or not known (a
 * kernel without CONFIG_SCHED_INFO; status says so). btf: t is a trusted
 * BTF pointer. state and ts: the block's, as in the task's record.
 */
static __always_inline __u64 runnable_since(struct task_struct *t, __u32 state, __u64 ts, __u64 now,
                                            const bool btf)
{
    __u64 queued, clock;

    /* preempted, or new: runnable all along (the clock read in __schedule,
     * before the tracepoint, would leave the switch itself out) */
    if (state == OFFCPU_STATE_RUNNABLE)
        return ts;
    if (!bpf_core_field_exists(t->sched_info) || !bpf_core_field_exists(struct cfs_rq, rq))
        return 0;
    if (btf) {
        queued = t->sched_info.last_queued;
        clock = queued ? t->se.cfs_rq->rq->clock : 0;
    } else {
        queued = BPF_CORE_READ(t, sched_info.last_queued);
        clock = queued ? BPF_CORE_READ(t, se.cfs_rq, rq, clock) : 0;
    }
    if (!queued)
        return 0;
    if (clock <= queued)
        return now;
    return clock - queued < now ? now - (clock - queued) : 0;
}

/* Of [ts, now), the time runnable: from woken (0: not woken yet) on. */
static __always_inline __u64 runq_part(__u64 ts, __u64 woken, __u64 now)
{
    if (!woken || woken >= now)
        return 0;
    return now - (woken > ts ? woken : ts);
}

/* The histogram bucket of a period (see OFFCPU_HIST_BUCKETS): floor(log2(us)) + 1. */
static __always_inline __u32 hist_bucket(__u64 ns)
{
    __u64 us = ns / 1000;
    __u32 b = 0;

    if (us >= 1ULL << 32) {
        b += 32;
        us >>= 32;
    }
    if (us >= 1ULL << 16) {
        b += 16;
        us >>= 16;
    }
    if (us >= 1 << 8) {
        b += 8;
        us >>= 8;
    }
    if (us >= 1 << 4) {
        b += 4;
        us >>= 4;
    }
    if (us >= 1 << 2) {
        b += 2;
        us >>= 2;
    }
    if (us >= 1 << 1) {
        b += 1;
        us >>= 1;
    }
    b += us; /* 0 or 1 left */
    return b < OFFCPU_HIST_BUCKETS ? b : OFFCPU_HIST_BUCKETS - 1;
}

/* The key charge() builds, per CPU and slot (enum in stacks.bpf.h, as the
 * scratch stacks): on the BPF stack it would leave the deepest callers past
 * the 512 bytes 6.1 allows a program and the functions it calls together. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, struct offcpu_key);
} charge_keys SEC(".maps");

/*
 * Is the entry own was last charged to the one charge() would find now? If
 * it was in this generation and its key is the one charge() would build: the
 * same identity, and both stacks stored in this generation (store_place
 * gives their hashes then).
 */
static __always_inline bool agg_cache_valid(const struct rec_ident *id, const struct place *own,
                                            __u32 tgid, __u32 tid, __u32 flips)
{
    const struct offcpu_key *k = &own->agg.key;

    return own->agg.gen1 == flips + 1 && own->stored_gen == flips + 1 &&
           k->user_stack == own->user_hash && k->kernel_stack == own->kernel_hash &&
           k->cgroup_id == id->cgroup_id && k->tgid == tgid && k->tid == tid &&
           k->state == id->state && k->kthread == id->kthread && k->uid == id->uid &&
           k->exec_id == id->exec_id && *(__u64 *)&k->comm[0] == *(__u64 *)&id->comm[0] &&
           *(__u64 *)&k->comm[8] == *(__u64 *)&id->comm[8];
}

/* That entry, where valid: a task that blocks where it blocked before, as
 * most do, adds by index at once, with nothing looked up or built. */
static __always_inline struct offcpu_value *cached_entry(const struct rec_ident *id,
                                                         const struct place *own, __u32 tgid,
                                                         __u32 tid, __u32 flips)
{
    if (!agg_cache_valid(id, own, tgid, tid, flips))
        return NULL;
    return agg_value_at(flips & 1, &own->agg.index);
}

/*
 * Add [ts, now) of a task to the current generation, [woken, now) of it as
 * run-queue time. period: at a switch-in, the whole off-CPU period that ends
 * (one more blocking episode, of that length); 0 while the task is still
 * blocked. own: p when it is the task's own place (NULL for a copy): its
 * stacks are stored only once per generation, and the entry it was charged
 * to is found again by index while the key is the same.
 */
static __always_inline void charge(const struct rec_ident *id, const struct place *p,
                                   struct place *own, __u32 tgid, __u32 tid, __u64 ts, __u64 woken,
                                   __u64 now, __u64 period, __u32 slot)
{
    struct offcpu_value *val = NULL;
    struct offcpu_key *key;
    __u64 delta = now > ts ? now - ts : 0, runq = runq_part(ts, woken, now);
    __u32 flips = gen, g = flips & 1, index = 0;
    void *agg, *vals, *stk;

    if (own) {
        val = cached_entry(id, own, tgid, tid, flips);
        if (val)
            goto add;
    }
    agg = bpf_map_lookup_elem(&aggs, &g);
    vals = agg_values_of(g);
    stk = bpf_map_lookup_elem(&stacks, &g);
    key = bpf_map_lookup_elem(&charge_keys, &slot);
    if (!agg || !vals || !stk || !key)
        return;
    __builtin_memset(key, 0, sizeof(*key));

    key->cgroup_id = id->cgroup_id;
    key->tgid = tgid;
    key->tid = tid;
    key->state = id->state;
    key->kthread = id->kthread;
    key->uid = id->uid;
    key->exec_id = id->exec_id;
    __builtin_memcpy(key->comm, id->comm, sizeof(key->comm));
    store_place(stk, p, own ? &own->stored_gen : NULL, slot, id->cgroup_id, flips, &key->user_stack,
                &key->kernel_stack);

    if (own && own->agg.gen1 == flips + 1 && words_equal(&own->agg.key, key, sizeof(*key)))
        val = agg_value_at(g, &own->agg.index);
    if (!val) {
        if (own) {
            own->agg.gen1 = 0;
            own->agg.key = *key; /* new_entry may change it (over budget) */
        }
        val = indexed_find(agg, vals, key, &index);
        if (!val)
            val = new_entry(agg, vals, key, flips, &index);
        if (own && val) {
            own->agg.index = index;
            own->agg.gen1 = flips + 1;
        }
    }
    if (!val) {
        stat_add(OFFCPU_STAT_AGG_MAP_FULL, 1);
        stat_add(OFFCPU_STAT_AGG_LOST_NS, delta);
        return;
    }
add:
    __sync_fetch_and_add(&val->total_ns, delta);
    if (runq)
        __sync_fetch_and_add(&val->runq_ns, runq);
    if (period) {
        __sync_fetch_and_add(&val->count, 1);
        __sync_fetch_and_add(&val->hist[hist_bucket(period)], 1);
        /* only this task's switch-in writes max_ns of its entries */
        if (period > val->max_ns)
            val->max_ns = period;
        stat_add(OFFCPU_STAT_ACCOUNTED, 1);
    }
}

/*
 * A block still short at its end, held until a flip finds its rows
 * (charge_deferred); false where it cannot be (then it is charged now).
 */
struct deferred {
    struct rec_ident id;
    __u64 start_time;             /* the task's */
    __u64 ts, woken, end, period; /* what charge() is given */
    __u32 tgid;
    __u32 charged; /* by charge_one_deferred: deleted then */
    struct place place;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, OFFCPU_DEFERRED_MAX);
    __type(key, struct offcpu_resume_key); /* the block's copy of the stack has the same */
    __type(value, struct deferred);
} deferred_charges SEC(".maps");

/* A deferred charge is made here, then stored: too large for the BPF stack. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct deferred);
} deferred_scratch SEC(".maps");

static __always_inline bool defer_charge(const struct task_rec *rec, const struct place *p,
                                         __u32 tgid, __u32 tid, __u64 ts, __u64 woken, __u64 now)
{
    struct offcpu_resume_key k = {.tid = tid, .since = rec->since};
    struct deferred *d;
    __u32 zero = 0;

    if (!defer_charges || !rows_may_come(tgid))
        return false;
    d = bpf_map_lookup_elem(&deferred_scratch, &zero);
    if (!d)
        return false;
    d->id = rec->id;
    d->start_time = rec->start_time;
    d->ts = ts;
    d->woken = woken;
    d->end = now;
    d->period = now > rec->since ? now - rec->since : 1;
    d->tgid = tgid;
    d->charged = 0;
    bpf_probe_read_kernel(&d->place, sizeof(d->place), p);
    if (bpf_map_update_elem(&deferred_charges, &k, d, BPF_NOEXIST) < 0) {
        stat_add(OFFCPU_STAT_DEFER_FULL, 1);
        return false;
    }
    stat_add(OFFCPU_STAT_CHARGES_DEFERRED, 1);
    return true;
}

/* now: the switch's time, if the switch-out took it already (else 0) */
static __always_inline void switch_in(struct task_struct *next, struct task_rec *rec, __u32 tgid,
                                      __u32 tid, __u64 now, const bool btf)
{
    struct place *p;
    __u64 ts, woken;
    int resumed;

    /* exchange, because the iterator below may move ts forward concurrently */
    ts = rec ? __sync_lock_test_and_set(&rec->ts, 0) : 0;
    if (!ts) {
        /* where only some tasks are traced, the others have no record, or
         * one a wakeup made for its waker's stacks (since never set) */
        if ((rec && rec->since) || (trace_kernel_threads && !ntrace_cgroups))
            stat_add(OFFCPU_STAT_NO_SWITCH_OUT, 1);
        return;
    }
    p = &rec->places[rec->id.place & 1];
    if (p->walked & UNWIND_RESUME) {
        /* a block's stack is known by its end: the rows may have come meanwhile */
        p->walked &= ~UNWIND_RESUME;
        resumed = unwind_resume(&p->ustack, tid, rec->since, rec->start_time, UNWIND_SLOT_SWITCH);
        /* whole or not, the stack may have changed: stored anew */
        p->user_hash = stack_hash(&p->ustack, OFFCPU_USER_DEPTH);
        p->stored_gen = 0;
        now = bpf_ktime_get_ns();
        if (resumed == RESUMED_SHORT &&
            defer_charge(rec, p, tgid, tid, ts, runnable_since(next, rec->id.state, ts, now, btf),
                         now))
            return;
        drop_resume(tid, rec->since);
    }
    if (!now)
        now = bpf_ktime_get_ns();
    woken = runnable_since(next, rec->id.state, ts, now, btf);
    /* since, not ts: charge_blocked moves ts at each flip */
    charge(&rec->id, p, p, tgid, tid, ts, woken, now, now > rec->since ? now - rec->since : 1,
           SCRATCH_SWITCH);
}

#endif
