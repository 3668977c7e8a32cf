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
#include "offcpu.h"

enum collector_attach {
    COLLECTOR_ATTACH_AUTO,
    COLLECTOR_ATTACH_TP_BTF,
    COLLECTOR_ATTACH_RAW_TP,
};

struct collector_options {
    enum collector_attach attach;
    uint32_t agg_entries;       /* aggregate entries per generation */
    uint32_t stack_entries;     /* distinct stacks per generation */
    uint32_t task_entries;      /* raw_tp only: tasks with a pending switch-out */
    bool stack_cache;           /* reuse stacks when a task blocks at the same place again */
    uint32_t cache_check_shift; /* walk one cache hit in 2^shift all the same */
    bool trace_kernel_threads;
    bool unwind_callers; /* recover callers past code without frame pointers */
    /* traced cgroups, open directories (with their subtrees); none: all */
    uint32_t ntrace_cgroups;
    int trace_cgroup_fds[OFFCPU_TRACE_CGROUPS_MAX];
};

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
    int64_t start_ns, end_ns;   /* CLOCK_REALTIME bounds of the generation */
};

struct collector;

int collector_open(const struct collector_options *opts, struct collector **ret);
struct collector *collector_free(struct collector *c);

/* "tp_btf" or "raw_tp". */
const char *collector_attach_name(const struct collector *c);

/* Flip to the other generation and drain the one that was current into d
 * (whose buffers belong to the collector and stay valid until the next call). */
int collector_flip_and_drain(struct collector *c, struct drained **ret);

/* Stack with this hash in a drained generation, or NULL. */
const struct offcpu_stack *drained_find_stack(const struct drained *d, uint64_t hash);

/* Called for each announcement of the BPF side: a process whose mappings are
 * to be read while it lives (a thread's first voluntary block, an exec), or
 * an unwind rule wanted (answer with collector_set_unwind_rule). */
typedef void (*collector_announce_fn)(void *userdata, const struct offcpu_announce *a);

/* Set the callback; returns an fd to poll, readable when announcements wait. */
int collector_watch_announcements(struct collector *c, collector_announce_fn fn, void *userdata);
/* Hand what is waiting to the callback. */
int collector_take_announcements(struct collector *c);

/* The rule for the announcement's pc: a CFA offset from the user sp, or
 * OFFCPU_UNWIND_STOP. Until it is set, the stacks walked there are not reused. */
int collector_set_unwind_rule(struct collector *c, const struct offcpu_announce *a, int32_t rule);

/* Counters summed over CPUs. */
int collector_read_stats(struct collector *c, uint64_t ret[OFFCPU_STAT__MAX]);

#endif
