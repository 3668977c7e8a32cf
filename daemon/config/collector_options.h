/* SPDX-License-Identifier: GPL-2.0-only */
/* How the BPF collector is loaded: what the configuration decides about it. */
#ifndef COLLECTOR_OPTIONS_H
#define COLLECTOR_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

/* Cgroups trace-cgroups may name (the BPF side's OFFCPU_TRACE_CGROUPS_MAX). */
#define COLLECTOR_TRACE_CGROUPS_MAX 16

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
    uint32_t cgroup_share;      /* % of the maps one cgroup may fill per generation */
    bool trace_kernel_threads;
    bool unwind_dwarf;      /* walk user stacks from call frame information, else frame pointers */
    uint64_t unwind_memory; /* bytes of unwind rows, for all files together */
    uint64_t unwind_linger_ns; /* a file's rows outlive its last process so long */
    bool wakers;              /* walk the waker's stacks at each wakeup (wakers.bpf.h) */
    bool python_frames;       /* walk CPython threads' Python frames (python.bpf.h) */
};

#endif
