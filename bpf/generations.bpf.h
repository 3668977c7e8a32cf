/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The two generations of maps the daemon flips and drains: aggregates and
 * stacks, and each cgroup's share of their room.
 */
#ifndef GENERATIONS_BPF_H
#define GENERATIONS_BPF_H

#include "knobs.bpf.h"
#include "task_record.bpf.h"
#include "stacks.bpf.h"

/*
 * Aggregate entries: a generation's hash map gives each key the index of its
 * entry in the generation's array of values. A task that blocks again where
 * it was charged before in the generation adds to its entry by that index
 * (charge.bpf.h), without hashing and finding its 64-byte key: that lookup
 * was a fifth of the switch's cost. The daemon reads the arrays mapped.
 */
struct agg_map {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1);
    __type(key, struct offcpu_key);
    __type(value, __u32); /* the index in the generation's agg_values */
} agg0 SEC(".maps"), agg1 SEC(".maps");

struct agg_values_map {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct offcpu_value);
} agg_values0 SEC(".maps"), agg_values1 SEC(".maps");

/* The indexes given out in each generation's agg_values; the daemon sets a
 * generation's back to 0 once it has drained it. */
volatile __u32 agg_used[2];

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

/* A generation's agg_values: not in an array of maps, where an array
 * mapped by the daemon cannot be. */
static __always_inline void *agg_values_of(__u32 g)
{
    return g ? (void *)&agg_values1 : (void *)&agg_values0;
}

/* The value at *index of generation g's array of values (values0 or
 * values1): a lookup of each map from a call of its own, which the verifier
 * makes an address computation (one call for both would be a helper call
 * through the map's ops). */
#define VALUE_AT(values0, values1, g, index)                                                       \
    ({                                                                                             \
        void *_v;                                                                                  \
        if (g) {                                                                                   \
            _v = bpf_map_lookup_elem(&values1, index);                                             \
        } else {                                                                                   \
            /* not merged with the call above into one of either map */                            \
            asm volatile("" ::: "memory");                                                         \
            _v = bpf_map_lookup_elem(&values0, index);                                             \
        }                                                                                          \
        _v;                                                                                        \
    })

static __always_inline struct offcpu_value *agg_value_at(__u32 g, const __u32 *index)
{
    return VALUE_AT(agg_values0, agg_values1, g, index);
}

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

/* Which map take_room counts for: the index of its counter in struct share. */
enum room { ROOM_STACKS, ROOM_ENTRIES, ROOM_WAKES };

struct share {
    __u32 stacks;  /* ROOM_STACKS */
    __u32 entries; /* ROOM_ENTRIES */
    __u32 wakes;   /* ROOM_WAKES: waker pairs, a map of aggregate-entries, counted apart */
    __u32 pad;
};

/* The share_key.cgroup_id under which a generation's totals are counted. */
#define SHARE_ALL (~0ULL)

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 8192);
    __type(key, struct share_key);
    __type(value, struct share);
} shares SEC(".maps");

/* A new share's value, from read-only data rather than the stack: the callers
 * of share_of sit deep in bpf-to-bpf calls, where 6.1 allows 512 bytes in all. */
static const struct share share_none = {};

/* What a cgroup (or all, SHARE_ALL) added to this generation's maps; NULL
 * where shares are off (or the LRU could not make room: better unlimited than
 * uncounted). */
static __always_inline struct share *share_of(__u64 cgroup_id, __u32 flips)
{
    struct share_key k = {.cgroup_id = cgroup_id, .flips = flips};
    struct share *sh;

    if (!stack_share_max && !entry_share_max)
        return NULL;
    sh = bpf_map_lookup_elem(&shares, &k);
    if (sh)
        return sh;
    bpf_map_update_elem(&shares, &k, &share_none, BPF_NOEXIST);
    return bpf_map_lookup_elem(&shares, &k);
}

/*
 * Room in this generation's maps for one more stack, aggregate entry or
 * waker pair of a cgroup: below its floor always, up to its share while
 * the map is not into the reserve (the waker map is the aggregate's size,
 * and takes its limits). Racing CPUs may overshoot by a few: this
 * bounds noisy cgroups, it is not an account.
 */
static __always_inline bool take_room(__u64 cgroup_id, __u32 flips, const enum room room)
{
    const bool entries = room != ROOM_STACKS;
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
    /* the counters in the order of enum room: one address, no branches (the
     * callers sit deep in bpf-to-bpf calls, where 6.1 counts every byte) */
    used = (__u32 *)sh + room;
    total = (__u32 *)all + room;
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
    if (!take_room(cgroup_id, flips, ROOM_STACKS))
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

/*
 * A generation's indexed entries (the aggregates', the waker pairs'): a hash
 * map gives each key the index of its value in an array. The entry of key
 * (its index into *index), as the first CPU to add it gave it out; NULL if
 * there is none.
 */
static __always_inline void *indexed_find(void *keys, void *vals, const void *key, __u32 *index)
{
    __u32 *found = bpf_map_lookup_elem(keys, key);

    if (!found)
        return NULL;
    *index = *found;
    return bpf_map_lookup_elem(vals, index);
}

/* A new entry for key, zeroed, at the next index of *used (the generation's
 * count of indexes given out); NULL when the array is full. */
static __always_inline void *indexed_new(void *keys, void *vals, const void *key, __u32 *used,
                                         const void *zero, __u32 *index)
{
    __u32 i = __sync_fetch_and_add(used, 1);
    long err;

    /* zeroed before any CPU can find it; past the array's end, the map is full */
    if (bpf_map_update_elem(vals, &i, zero, BPF_ANY) < 0)
        return NULL;
    err = bpf_map_update_elem(keys, key, &i, BPF_NOEXIST);
    if (err == -17 /* EEXIST: another CPU made it first; i is left unused */)
        return indexed_find(keys, vals, key, index);
    if (err)
        return NULL;
    *index = i;
    return bpf_map_lookup_elem(vals, index);
}

/* A new aggregate entry for key (its index into *index); past the cgroup's
 * share, the thread's one entry for its stacks over budget (created
 * regardless: bounded by threads). NULL when the generation's entries are
 * all given out. */
static __always_inline struct offcpu_value *new_entry(void *agg, void *vals, struct offcpu_key *key,
                                                      __u32 flips, __u32 *index)
{
    struct offcpu_value *val;

    if (!take_room(key->cgroup_id, flips, ROOM_ENTRIES)) {
        key->user_stack = key->kernel_stack = OFFCPU_STACK_OVER_BUDGET;
        val = indexed_find(agg, vals, key, index);
        if (val)
            return val;
    }
    return indexed_new(agg, vals, key, (__u32 *)&agg_used[flips & 1], (const void *)&zero_value,
                       index);
}

#endif
