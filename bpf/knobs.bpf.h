/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the daemon sets: the knobs before load (const volatile, in
 * .rodata: the verifier prunes what they turn off), and the flags it writes
 * while the programs run (in the mmapped .bss). One place for all of them,
 * so that what the daemon can set is read in one file (collector.c sets
 * them by these names through the skeleton).
 */
#ifndef KNOBS_BPF_H
#define KNOBS_BPF_H

#include "vmlinux.h"

/* Counts flips; its parity picks the maps. Written by the daemon through the
 * mmapped .bss; read once per event. */
volatile __u32 gen;

/* The collector's (offcpu.bpf.c). */
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

/* The stack cache's (stack_cache.bpf.h). */
const volatile bool stack_cache = true; /* reuse stacks when a task blocks at a known place */
const volatile __u32 check_shift = 6;   /* ...and walk anyway one hit in 2^check_shift */

/* The walk's (unwind.bpf.h): walk with the rows (else frame pointers
 * only, as bpf_get_stack does). */
const volatile bool unwind_dwarf = true;

/* CPython threads' Python frames (python.bpf.h), walked with the rows. */
const volatile bool python_frames = true;
/* Bumped by the daemon (mmapped .bss) each time it marks a process as
 * running CPython: what a task learnt of its process before is stale. */
volatile __u32 python_gen;

/* The wakers' (wakers.bpf.h). */
/*
 * Where interrupt code lies, from /proc/kallsyms, set by the daemon before
 * load (0: unknown, every waker is named as the task it runs on, counted).
 * An interrupt's kernel stack is walked: the frame nearest its leaf that
 * enters an interrupt or a softirq names its kind and cuts the frames of the
 * task it interrupted; where the preempt count is unknown, it tells the
 * context too.
 */
const volatile __u64 irq_entry_start = 0, irq_entry_end = 0; /* .irqentry.text: asm_sysvec_* */
const volatile __u64 nmi_entry_start = 0, nmi_entry_end = 0; /* asm_exc_nmi */
const volatile __u64 softirq_start = 0, softirq_end = 0;     /* handle_softirqs */
const volatile __u64 softirq_entry_start = 0, softirq_entry_end = 0; /* .softirqentry.text */

/*
 * The context this wakeup runs in, told without a walk: this CPU's preempt
 * count. It is a per-CPU variable, which a typed __ksym cannot reach here
 * (it is not in kallsyms), but each CPU's per-CPU variables lie at the same
 * distances from one another (the daemon reads them from BTF), and this
 * CPU's run queue is known: the current task's. (A waker's own kernel stack
 * would tell it as well, were the program's frame on it: a large tracing
 * program runs on a private per-CPU stack since 6.13.)
 */
const volatile __s64 preempt_count_from_rq = 0; /* &__preempt_count - &runqueues; 0: unknown */

#endif
