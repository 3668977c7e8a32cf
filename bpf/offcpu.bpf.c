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
#include "common.bpf.h"
#include "kernel_layouts.bpf.h"
#include "stack_cache.bpf.h"
#include "unwind.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define PF_KTHREAD           0x00200000
#define TASK_INTERRUPTIBLE   0x0001
#define TASK_UNINTERRUPTIBLE 0x0002
#define TASK_STOPPED_BIT     0x0004
#define TASK_TRACED_BIT      0x0008
#define TASK_DEAD            0x0080
#define TASK_NOLOAD          0x0400
#define MMF_DUMPABLE_MASK    0x3
#define SUID_DUMP_USER       1

/* Counts flips; its parity picks the maps. Written by the daemon through the
 * mmapped .bss; read once per event. */
volatile __u32 gen;

/* Set by the daemon before load. */
const volatile bool trace_kernel_threads = true;
const volatile __u32 ntrace_cgroups = 0; /* 0: every cgroup; else those in trace_cgroups */
/* What one cgroup may add to a generation's maps: new stacks, new aggregate
 * entries (0: no limit). Set from the maps' sizes and the cgroup share. */
const volatile __u32 stack_share_max = 0;
const volatile __u32 entry_share_max = 0;
/* Past its floor, a cgroup adds only while the map holds fewer than open
 * (its size less a reserve): however many cgroups are noisy, the reserve is
 * there for those still under their floor. */
const volatile __u32 stack_floor = 0, stack_open = 0;
const volatile __u32 entry_floor = 0, entry_open = 0;
/* Blocks still short at their end are held for their rows (see
 * OFFCPU_DEFERRED_MAX): where the daemon runs charge_deferred at each flip. */
const volatile bool defer_charges = false;
/* Set by the daemon before its last flip: whatever is held is charged now,
 * as it is, rather than lost when the programs go. */
volatile bool release_held;

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

struct place {
    struct fingerprint fp;
    __u64 user_hash;   /* or OFFCPU_STACK_MISSED */
    __u64 kernel_hash; /* or OFFCPU_STACK_MISSED */
    __u32 stored_gen;  /* gen + 1 when both stacks are known to be in that gen's map */
    __u32 walked;      /* enum unwind_result of the user stack's walk */
    struct offcpu_stack ustack;
    struct kernel_stack kstack;
};

struct task_rec {
    __u64 ts;             /* switch-out time; 0 when no switch-out is pending */
    __u64 since;          /* switch-out time, which charge_blocked leaves alone */
    __u64 woken;          /* runnable since (wakeup or preemption); 0: still blocked */
    __u64 start_time;     /* identifies the task when records are keyed by tid */
    __u32 announced;      /* the daemon was told about this thread (twice: see switch_out) */
    __u32 uncached;       /* a check found other stacks at a known place: always walk */
    __u32 waker_uncached; /* the same, of the place it wakes tasks from */
    __u32 pad;
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

struct {
    __uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
    __uint(max_entries, OFFCPU_TRACE_CGROUPS_MAX);
    __type(key, __u32);
    __type(value, __u32);
} trace_cgroups SEC(".maps");

/*
 * What each cgroup has added to a generation's maps, keyed by the
 * generation's flip count so that nothing needs clearing at a flip (old
 * counts age out of the LRU). A cgroup past its share still has its time
 * counted, under OFFCPU_STACK_OVER_BUDGET: one process's stack explosion
 * costs its own detail, never another cgroup's room.
 */
struct share_key {
    __u64 cgroup_id;
    __u32 flips;
    __u32 pad;
};

struct share {
    __u32 stacks;
    __u32 entries;
};

/* The share_key.cgroup_id under which a generation's totals are counted. */
#define SHARE_ALL (~0ULL)

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 8192);
    __type(key, struct share_key);
    __type(value, struct share);
} shares SEC(".maps");

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
    if (hit && !cache_check_hit(waker))
        return i;
    user = p->user_hash;
    kernel = p->kernel_hash;
    final = walk_stacks(ctx, p, so, waker);
    *walked = true;
    if (hit && cache_mismatch(final, user, kernel, p->user_hash, p->kernel_hash, waker))
        *uncached = 1;
    p->fp = so->fp;
    p->fp.valid = so->cacheable && final;
    return i;
}

/*
 * Whose a record is, as ptrace would judge it: a task's real uid, if its
 * effective and saved uids are the same and it is dumpable; otherwise no
 * member's (a setuid program such as su runs with the member's real uid but
 * holds what is not theirs). A kernel thread (no mm) is root's.
 */
static __always_inline __u32 owner_of(__u32 uid, __u32 euid, __u32 suid, const struct mm_struct *mm)
{
    unsigned long mm_flags = 0;

    if (uid != euid || uid != suid)
        return OFFCPU_UID_UNKNOWN;
    if (!mm)
        return uid;
    if (bpf_probe_read_kernel(&mm_flags, sizeof(mm_flags), (const void *)mm + mm_flags_offset()))
        return OFFCPU_UID_UNKNOWN;
    return (mm_flags & MMF_DUMPABLE_MASK) == SUID_DUMP_USER ? uid : OFFCPU_UID_UNKNOWN;
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
     * mappings read now. Not at a preemption: it may still be in ld.so. It
     * may all the same (loading libraries from a cold cache): once more when
     * a walk first goes through code mapped since its table was read. */
    if (!so->kthread && so->state != OFFCPU_STATE_RUNNABLE &&
        (!rec->announced ||
         (rec->announced == 1 && rec->places[rec->id.place & 1].walked & UNWIND_NEW_CODE))) {
        announce(so->tgid, so->exec_id,
                 rec->announced ? OFFCPU_ANNOUNCE_MAPPED : OFFCPU_ANNOUNCE_PROCESS, so->mm);
        rec->announced++;
    }
    rec->since = now;
    /* a preempted task waits for a CPU from now on; a blocked one from its
     * wakeup (on_wakeup), which cannot come before this switch-out ends */
    rec->woken = so->state == OFFCPU_STATE_RUNNABLE ? now : 0;
    /* Last, so that a record is complete whenever ts is set. */
    rec->ts = now;
    stat_add(OFFCPU_STAT_SWITCHES, 1);
}

/* What a cgroup (or all, SHARE_ALL) added to this generation's maps; NULL
 * where shares are off (or the LRU could not make room: better unlimited than
 * uncounted). */
static __always_inline struct share *share_of(__u64 cgroup_id, __u32 flips)
{
    struct share_key k = {.cgroup_id = cgroup_id, .flips = flips};
    struct share none = {}, *sh;

    if (!stack_share_max && !entry_share_max)
        return NULL;
    sh = bpf_map_lookup_elem(&shares, &k);
    if (sh)
        return sh;
    bpf_map_update_elem(&shares, &k, &none, BPF_NOEXIST);
    return bpf_map_lookup_elem(&shares, &k);
}

/*
 * Room in this generation's maps for one more stack (entries false) or
 * aggregate entry of a cgroup: below its floor always, up to its share while
 * the map is not into the reserve. Racing CPUs may overshoot by a few: this
 * bounds noisy cgroups, it is not an account.
 */
static __always_inline bool take_room(__u64 cgroup_id, __u32 flips, const bool entries)
{
    __u32 max = entries ? entry_share_max : stack_share_max;
    __u32 floor = entries ? entry_floor : stack_floor;
    __u32 open = entries ? entry_open : stack_open;
    struct share *sh, *all;
    __u32 *used, *total;

    if (!max)
        return true;
    sh = share_of(cgroup_id, flips);
    all = share_of(SHARE_ALL, flips);
    if (!sh || !all)
        return true;
    used = entries ? &sh->entries : &sh->stacks;
    total = entries ? &all->entries : &all->stacks;
    if (*used >= floor && (*used >= max || *total >= open)) {
        stat_add(OFFCPU_STAT_OVER_BUDGET, 1);
        return false;
    }
    __sync_fetch_and_add(used, 1);
    __sync_fetch_and_add(total, 1);
    return true;
}

/* Make sure the stack is in this generation's map; returns the hash to charge
 * (OFFCPU_STACK_OVER_BUDGET past the cgroup's room, see take_room). */
static __always_inline __u64 store_stack(void *map, __u64 hash, const struct offcpu_stack *s,
                                         __u64 cgroup_id, __u32 flips)
{
    struct offcpu_stack *old;
    long err;

    if (hash < OFFCPU_STACK_FIRST_HASH) /* a marker, no frames to store */
        return hash;
    old = bpf_map_lookup_elem(map, &hash);
    if (old) {
        if (stack_equal(old, s))
            return hash;
        stat_add(OFFCPU_STAT_STACK_COLLISION, 1);
        return OFFCPU_STACK_MISSED;
    }
    if (!take_room(cgroup_id, flips, false))
        return OFFCPU_STACK_OVER_BUDGET;
    err = bpf_map_update_elem(map, &hash, s, BPF_NOEXIST);
    if (err == 0 || err == -17 /* EEXIST: another CPU stored it first */)
        return hash;
    stat_add(OFFCPU_STAT_STACK_MAP_FULL, 1);
    return OFFCPU_STACK_MISSED;
}

static __always_inline __u64 store_kernel_stack(void *map, __u64 hash, const struct kernel_stack *k,
                                                __u32 slot, __u64 cgroup_id, __u32 flips)
{
    struct offcpu_stack *s;

    if (hash < OFFCPU_STACK_FIRST_HASH)
        return hash;
    s = bpf_map_lookup_elem(&scratch, &slot);
    if (!s)
        return OFFCPU_STACK_MISSED;
    __builtin_memcpy(s, k, sizeof(*k));
    return store_stack(map, hash, s, cgroup_id, flips);
}

/* A place's stacks into this generation's map, once per generation where
 * the place's own stored_gen is given (NULL for a copy): sets the hashes to
 * charge. Stacks already stored take no cgroup's room, so skipping them is
 * the same as storing them again. */
static __always_inline void store_place(void *map, const struct place *p, __u32 *stored_gen,
                                        __u32 slot, __u64 cgroup_id, __u32 flips, __u64 *user,
                                        __u64 *kernel)
{
    if (stored_gen && *stored_gen == flips + 1) {
        *kernel = p->kernel_hash;
        *user = p->user_hash;
        return;
    }
    *kernel = store_kernel_stack(map, p->kernel_hash, &p->kstack, slot, cgroup_id, flips);
    *user = store_stack(map, p->user_hash, &p->ustack, cgroup_id, flips);
    if (stored_gen && *kernel == p->kernel_hash && *user == p->user_hash)
        *stored_gen = flips + 1;
}

/* What a new aggregate entry starts from: not on the BPF stack, which up to
 * 6.1 the switch-out shares with the walk (512 bytes in all). */
const volatile struct offcpu_value zero_value = {};

/* A new aggregate entry for key; past the cgroup's share, the thread's one
 * entry for its stacks over budget (created regardless: bounded by threads). */
static __always_inline struct offcpu_value *new_entry(void *agg, struct offcpu_key *key,
                                                      __u32 flips)
{
    struct offcpu_value *val;
    long err;

    if (!take_room(key->cgroup_id, flips, true)) {
        key->user_stack = key->kernel_stack = OFFCPU_STACK_OVER_BUDGET;
        val = bpf_map_lookup_elem(agg, key);
        if (val)
            return val;
    }
    err = bpf_map_update_elem(agg, key, (const void *)&zero_value, BPF_NOEXIST);
    if (err && err != -17 /* EEXIST: another CPU made it first */)
        return NULL;
    return bpf_map_lookup_elem(agg, key);
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

/*
 * Add [ts, now) of a task to the current generation, [woken, now) of it as
 * run-queue time. period: at a switch-in, the whole off-CPU period that ends
 * (one more blocking episode, of that length); 0 while the task is still
 * blocked. stored_gen: the place's own (NULL for a copy), to store its stacks
 * only once per generation.
 */
static __always_inline void charge(const struct rec_ident *id, const struct place *p,
                                   __u32 *stored_gen, __u32 tgid, __u32 tid, __u64 ts, __u64 woken,
                                   __u64 now, __u64 period, __u32 slot)
{
    struct offcpu_value *val;
    struct offcpu_key key = {};
    __u64 delta = now > ts ? now - ts : 0, runq = runq_part(ts, woken, now);
    __u32 flips = gen, g = flips & 1;
    void *agg, *stk;

    agg = bpf_map_lookup_elem(&aggs, &g);
    stk = bpf_map_lookup_elem(&stacks, &g);
    if (!agg || !stk)
        return;

    key.cgroup_id = id->cgroup_id;
    key.tgid = tgid;
    key.tid = tid;
    key.state = id->state;
    key.kthread = id->kthread;
    key.uid = id->uid;
    key.exec_id = id->exec_id;
    __builtin_memcpy(key.comm, id->comm, sizeof(key.comm));
    store_place(stk, p, stored_gen, slot, id->cgroup_id, flips, &key.user_stack, &key.kernel_stack);

    val = bpf_map_lookup_elem(agg, &key);
    if (!val)
        val = new_entry(agg, &key, flips);
    if (!val) {
        stat_add(OFFCPU_STAT_AGG_MAP_FULL, 1);
        stat_add(OFFCPU_STAT_AGG_LOST_NS, delta);
        return;
    }
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
                                         __u32 tgid, __u32 tid, __u64 ts, __u64 now)
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
    d->woken = rec->woken;
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

static __always_inline void switch_in(struct task_rec *rec, __u32 tgid, __u32 tid)
{
    struct place *p;
    __u64 ts, now;
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
        if (resumed == RESUMED_SHORT && defer_charge(rec, p, tgid, tid, ts, now))
            return;
        drop_resume(tid, rec->since);
    }
    now = bpf_ktime_get_ns();
    /* since, not ts: charge_blocked moves ts at each flip */
    charge(&rec->id, p, &p->stored_gen, tgid, tid, ts, rec->woken, now,
           now > rec->since ? now - rec->since : 1, SCRATCH_SWITCH);
}

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
 */
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
                           TASK_FIELD(btf, cred, suid.val), TASK_FIELD(btf, prev, mm));

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
            so->in_exec = bpf_core_field_exists(cur->in_execve) &&
                          BPF_CORE_READ_BITFIELD_PROBED(cur, in_execve);
            so->cacheable = btf && stack_cache && !preempt && !so->in_exec &&
                            so->state != OFFCPU_STATE_UNINTERRUPTIBLE;
        }
        rec = record_of(prev, tid, btf);
        so->since = bpf_ktime_get_ns();
        if (rec)
            switch_out(ctx, rec, so);
    }
    tid = TASK_FIELD(btf, next, pid);
    if (!tid)
        return 0;
    switch_in(record_if_any(next, tid, btf), TASK_FIELD(btf, next, tgid), tid);
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
    request_table(tgid, exec_id, mm);
    if (unwind_dwarf) {
        struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

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

/* Code a process maps (ld.so mapping the libraries, a dlopen), kept for the
 * walk until the daemon has read the process's table again. A classic
 * tracepoint on one syscall: no cost to any other. */
SEC("tracepoint/syscalls/sys_exit_mmap")
int on_mmap(struct trace_event_raw_sys_exit *ctx)
{
    __u64 addr = (__u64)ctx->ret;

    /* an error is -4095..-1 */
    if (addr >= (__u64)-4095 || !in_traced_cgroup())
        return 0;
    remember_mapping(bpf_get_current_pid_tgid() >> 32, (__u64)bpf_get_current_task_btf()->mm, addr);
    return 0;
}

/*
 * A blocked task became runnable: from now until its switch-in it waits for
 * a CPU (run-queue latency), no longer for what it blocked on. Only the
 * first wakeup after a switch-out counts, and none while the task runs (a
 * wakeup racing its own sleep before it switched out finds ts 0).
 */
static __always_inline int on_wakeup(struct task_struct *p, const bool btf)
{
    struct task_rec *rec = record_if_any(p, TASK_FIELD(btf, p, pid), btf);

    if (rec && rec->ts && !rec->woken)
        rec->woken = bpf_ktime_get_ns();
    return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup_btf, struct task_struct *p)
{
    return on_wakeup(p, true);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(on_wakeup_raw, struct task_struct *p)
{
    return on_wakeup(p, false);
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
                           TASK_FIELD(btf, cred, suid.val), TASK_FIELD(btf, p, mm));
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

#include "wakers.bpf.h" /* uses the helpers above */

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
    woken = rec->woken;
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
