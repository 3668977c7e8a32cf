/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Structures shared by the BPF collector (offcpu.bpf.c) and the daemon. */
#ifndef OFFCPU_H
#define OFFCPU_H

/* Cgroups (with their subtrees) that trace-cgroups may name. */
#define OFFCPU_TRACE_CGROUPS_MAX 16

/* Frames kept per stack. 127 is the kernel's default perf_event_max_stack. */
#define OFFCPU_USER_DEPTH   127
#define OFFCPU_KERNEL_DEPTH 64

/* Task state at switch-out, as ps(1) letters. */
enum offcpu_state {
    OFFCPU_STATE_RUNNABLE = 'R',        /* preempted, or yielded while runnable */
    OFFCPU_STATE_SLEEPING = 'S',        /* TASK_INTERRUPTIBLE */
    OFFCPU_STATE_UNINTERRUPTIBLE = 'D', /* TASK_UNINTERRUPTIBLE */
    OFFCPU_STATE_IDLE = 'I',            /* TASK_IDLE: D without load contribution */
    OFFCPU_STATE_STOPPED = 'T',
    OFFCPU_STATE_TRACED = 't',
    OFFCPU_STATE_OTHER = '?',
};

/*
 * Stacks are content-addressed: a stack is named by a 64-bit hash of its
 * frames, and its frames live in the generation's stack map under that
 * hash. A hash of 0 means the stack could not be taken.
 */
#define OFFCPU_STACK_MISSED 0ULL
/* A cgroup took its whole share of a generation's maps: its stack, counted
 * all the same, is "[stacks over budget]". No stack hashes to it either. */
#define OFFCPU_STACK_OVER_BUDGET 1ULL
/* The owner of a record when the task's uids differed (setuid) or it was not
 * dumpable: no member of the socket group is shown it, as ptrace would refuse. */
#define OFFCPU_UID_UNKNOWN 0xffffffffU

struct offcpu_key {
    __u64 cgroup_id;
    __u32 tgid;
    __u32 tid;
    __u64 user_stack;   /* hash, or OFFCPU_STACK_MISSED */
    __u64 kernel_stack; /* hash, or OFFCPU_STACK_MISSED */
    char comm[16];
    __u32 state;   /* enum offcpu_state */
    __u32 kthread; /* 1 for kernel threads: no user stack to miss */
    __u32 uid;     /* real uid at switch-out: whose stacks these are */
    __u32 exec_id; /* counts the process's execs: which image its user stack is of */
};

struct offcpu_value {
    __u64 total_ns;
    __u64 count;
};

struct offcpu_stack {
    __u32 nr;     /* frames used */
    __u32 kernel; /* 1 for a kernel stack: tells hash spaces apart */
    __u64 ip[OFFCPU_USER_DEPTH];
};

/* Callers recovered past code without frame pointers, per stack. */
#define OFFCPU_UNWIND_MAX 3

/* An unwind rule (see unwind_rules in offcpu.bpf.c): the CFA is at user sp +
 * offset (> 0), or OFFCPU_UNWIND_STOP, or OFFCPU_UNWIND_PENDING (asked). */
#define OFFCPU_UNWIND_STOP    0
#define OFFCPU_UNWIND_PENDING (-1)

struct offcpu_unwind_key {
    __u32 tgid;
    __u32 exec_id;
    __u64 pc;
};

enum offcpu_announce_kind {
    /* a thread first blocked of its own accord (its libraries are loaded by
     * then), or the process exec'd: read its mappings while it lives, and
     * keep those of the image an exec replaced */
    OFFCPU_ANNOUNCE_PROCESS,
    /* an unwind rule is wanted for pc, an interrupted pc (leaf) or a
     * return address (caller) */
    OFFCPU_ANNOUNCE_UNWIND_LEAF,
    OFFCPU_ANNOUNCE_UNWIND_CALLER,
};

struct offcpu_announce {
    __u32 tgid;
    __u32 exec_id;
    __u32 kind; /* enum offcpu_announce_kind */
    __u32 pad;
    __u64 pc;
};

/* Per-CPU counters of everything that happened and everything that was lost. */
enum offcpu_stat {
    OFFCPU_STAT_SWITCHES,          /* switch-outs recorded */
    OFFCPU_STAT_ACCOUNTED,         /* switch-ins added to an aggregate */
    OFFCPU_STAT_USER_STACK_EFAULT, /* user stack unreadable (paged out, no frame pointer) */
    OFFCPU_STAT_USER_STACK_ERROR,  /* any other user stack error */
    OFFCPU_STAT_KERNEL_STACK_ERROR,
    OFFCPU_STAT_STACK_MAP_FULL,  /* a stack could not be stored: its time counts as missed */
    OFFCPU_STAT_STACK_COLLISION, /* two different stacks with one hash: time counts as missed */
    OFFCPU_STAT_AGG_MAP_FULL,    /* an aggregate entry could not be created: time lost */
    OFFCPU_STAT_AGG_LOST_NS,     /* ...and how much time that was */
    OFFCPU_STAT_NO_SWITCH_OUT,   /* switch-in with no switch-out record (task seen first) */
    OFFCPU_STAT_STORAGE_FAIL,    /* no per-task storage could be had at switch-out */
    OFFCPU_STAT_ANNOUNCE_LOST,   /* a new process could not be announced: ring buffer full */
    OFFCPU_STAT_WALKS,           /* switch-outs whose stacks were walked */
    OFFCPU_STAT_CACHE_HITS,      /* ...whose stacks were reused: blocked at the same place */
    OFFCPU_STAT_CACHE_CHECKS,    /* hits walked anyway, to check the cache */
    OFFCPU_STAT_CACHE_MISMATCH,  /* ...where the walk found other stacks */
    OFFCPU_STAT_OVER_BUDGET,     /* a cgroup's new stack or entry beyond its share */
    OFFCPU_STAT__MAX,
};

struct offcpu_stats {
    __u64 v[OFFCPU_STAT__MAX];
};

#endif
