/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The BPF side seen from user space: load and attach the sched_switch
 * program, flip the generation, wait until nothing writes the old one, and
 * drain it completely.
 */
#ifndef COLLECTOR_H
#define COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "collector_options.h"
#include "offcpu.h"
#include "unwind_tables.h"

struct drained_slot {
    uint64_t hash;
    uint32_t idx; /* into drained.stacks */
};

/* One drained generation. */
struct drained {
    size_t n;
    struct offcpu_key *keys;
    struct offcpu_value *values;
    size_t nstacks;
    uint64_t *stack_hashes; /* as read, unordered */
    struct offcpu_stack *stacks;
    struct drained_slot *index; /* sorted by hash, for drained_find_stack */
    size_t nwakes;              /* wakers = yes: the waker map's entries */
    struct offcpu_wake_key *wake_keys;
    struct offcpu_wake_value *wake_values;
    int64_t start_ns, end_ns; /* CLOCK_REALTIME bounds of the generation */
};

struct collector;

/* trace_cgroup_fds: open cgroup v2 directories whose tasks (subtrees
 * included) alone are traced; none: every task. */
int collector_open(const struct collector_options *opts, const int *trace_cgroup_fds,
                   uint32_t ntrace_cgroups, struct collector **ret);
struct collector *collector_free(struct collector *c);

/* The i-th part of the collector that runs without what it needs from the
 * host, and what is lost, in one line; NULL past the last. */
const char *collector_missing(const struct collector *c, uint32_t i);

/* "tp_btf" or "raw_tp". */
const char *collector_attach_name(const struct collector *c);

/* Where the programs see a process map code: "fexit ksys_mmap_pgoff", "tracepoint
 * syscalls/sys_exit_mmap", or "none" (frame pointers only, or neither attached). */
const char *collector_code_mapped_at(const struct collector *c);

/* Flip to the other generation and drain the one that was current into d
 * (whose buffers belong to the collector and stay valid until the next call). */
int collector_flip_and_drain(struct collector *c, struct drained **ret);

/* Before the last flip: blocks held for their rows (see OFFCPU_DEFERRED_MAX)
 * are charged at it as they are, not lost when the daemon exits. */
void collector_release_held(struct collector *c);

/* Index the stacks of d (stack_hashes and stacks filled, index with room for
 * nstacks) for drained_find_stack. */
void drained_index_stacks(struct drained *d);

/* Stack with this hash in a drained generation, or NULL. */
const struct offcpu_stack *drained_find_stack(const struct drained *d, uint64_t hash);

/* Called for each announcement of the BPF side: a process whose mappings are
 * to be read while it lives (a thread's first voluntary block, an exec).
 * Unwind tables are asked for and read elsewhere (unwind_worker.h). */
typedef void (*collector_announce_fn)(void *userdata, const struct offcpu_announce *a);

/* Set the callback; returns an fd to poll, readable when announcements wait. */
int collector_watch_announcements(struct collector *c, collector_announce_fn fn, void *userdata);
/* Hand what is waiting to the callback. */
int collector_take_announcements(struct collector *c);

void collector_get_unwind_stats(const struct collector *c, struct unwind_tables_stats *ret);

/* Tasks off-CPU now for at least min_ns: a descriptor to read struct
 * offcpu_blocked records from, each a task's switch-out and its stacks.
 * -EOPNOTSUPP under raw_tp, which keeps no task storage to walk. */
int collector_open_blocked(struct collector *c, uint64_t min_ns);

/* What the BPF side counted (summed over CPUs), by name: every event and
 * every loss. */
enum collector_counter_kind {
    COLLECTOR_EVENT,      /* counts events */
    COLLECTOR_LOST_EVENT, /* counts events whose time or stacks were lost */
    COLLECTOR_LOST_NS,    /* sums off-CPU time that could not be charged anywhere */
};

struct collector_counter {
    const char *name;
    uint64_t value;
    enum collector_counter_kind kind;
};

#define COLLECTOR_COUNTERS OFFCPU_STAT__MAX

/* Fills ret[COLLECTOR_COUNTERS]. Returns 0 or a negative errno. */
int collector_read_counters(struct collector *c, struct collector_counter *ret);

/* The share of switch-outs whose stacks were reused, and of the reuses
 * checked by a walk that found other stacks (negative: none checked). */
void collector_stack_cache_rates(const struct collector_counter *counters, double *ret_hit_rate,
                                 double *ret_mismatch_rate);

#endif
