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
/* A new task's first wait, fork to first run: it has run no code to have a
 * stack of yet. Its kernel stack is "[new task]", its user stack empty. */
#define OFFCPU_STACK_NEW_TASK 2ULL
/* A block inside execve (reading the new program, freeing the old image):
 * the user registers are the old image's, in an address space going away.
 * Its user stack is "[exec]". */
#define OFFCPU_STACK_EXEC 3ULL
/* Hashes below this name no stored stack. */
#define OFFCPU_STACK_FIRST_HASH 4ULL
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

/*
 * Log2 buckets of single off-CPU periods, in microseconds (as bcc's cpudist
 * -O): bucket 0 holds periods under 1 us, bucket b from 2^(b-1) up to 2^b us,
 * the last one everything longer (2^22 us: 4.2 s on; max_ns has the longest).
 */
#define OFFCPU_HIST_BUCKETS 24

struct offcpu_value {
    __u64 total_ns;
    __u64 count;
    /* of total_ns, the time the task was runnable, waiting for a CPU: from
     * its wakeup (or preemption) to its switch-in; the rest it was blocked */
    __u64 runq_ns;
    /* the periods that ended (count of them) by length, switch-out to
     * switch-in, whichever generations their time went to */
    __u64 max_ns;
    __u32 hist[OFFCPU_HIST_BUCKETS];
};

struct offcpu_stack {
    __u32 nr;     /* frames used */
    __u32 kernel; /* 1 for a kernel stack: tells hash spaces apart */
    __u64 ip[OFFCPU_USER_DEPTH];
};

/*
 * Unwinding from call frame information (.eh_frame), see bpf/unwind.bpf.h.
 * The daemon turns each file's CFI into rows, sorted by pc, in one array
 * shared by every process that maps the file; each process has a table of
 * its executable mappings, sorted by address, naming the rows of the file
 * behind each.
 */
enum offcpu_cfa {
    OFFCPU_CFA_NONE, /* no CFI here (code without it, JIT code): follow the frame pointer */
    OFFCPU_CFA_RSP,  /* CFA = rsp + cfa_off */
    OFFCPU_CFA_RBP,  /* CFA = rbp + cfa_off */
    OFFCPU_CFA_PLT,  /* a PLT entry: rsp + cfa_off, 8 more from its push on (pc & 15 >= plt_push) */
    OFFCPU_CFA_ENTRY,   /* a thread's entry (return address undefined): the stack is whole */
    OFFCPU_CFA_UNKNOWN, /* CFI the walk cannot follow (other expressions) */
    /* a signal frame (libc's __restore_rt, where a handler returns): the
     * interrupted rsp at rsp + cfa_off, its rip just after, rbp at rsp + rbp_off */
    OFFCPU_CFA_SIGNAL,
};

enum offcpu_rbp {
    OFFCPU_RBP_SAME,    /* the caller's rbp is this frame's */
    OFFCPU_RBP_SAVED,   /* saved at CFA + rbp_off */
    OFFCPU_RBP_UNKNOWN, /* not recoverable: a caller whose CFA needs it ends the walk */
};

/* Where the return address is: below the CFA, as every call leaves it; or,
 * in the innermost frame only, in rdi (glibc's vfork pops it there, so that
 * the child cannot overwrite it on the shared stack). */
enum offcpu_ra {
    OFFCPU_RA_BELOW_CFA,
    OFFCPU_RA_IN_RDI,
};

struct offcpu_unwind_row {
    __u32 pc; /* ELF address the row starts at (files span < 4 GiB); it ends at the next row's */
    __s32 cfa_off;
    __s16 rbp_off;
    __u8 cfa;      /* enum offcpu_cfa */
    __u8 rbp;      /* enum offcpu_rbp */
    __u8 plt_push; /* OFFCPU_CFA_PLT: offset of the push in each 16-byte entry */
    __u8 ra;       /* enum offcpu_ra */
    __u8 pad[2];
};

/*
 * A block whose walk met code without rows, still short at its end, is held
 * until a flip finds the rows (at most OFFCPU_DEFERRED_MAX blocks at once,
 * each with its 31 KiB copy of the stack), or until OFFCPU_DEFER_MAX_NS have
 * passed since it ended: then it is charged as it is. A task still blocked
 * is held the same way at flips, for as long since its switch-out.
 */
#define OFFCPU_DEFERRED_MAX 512
#define OFFCPU_DEFER_MAX_NS (5ULL * 1000 * 1000 * 1000)

/* A block's: its copy of the stack, its deferred charge. The task, and the
 * block's switch-out time. */
struct offcpu_resume_key {
    __u32 tid;
    __u32 pad;
    __u64 since;
};

/* Executable mappings of one process the walk knows; more are not walked. */
#define OFFCPU_UNWIND_MAPPINGS_MAX 128

struct offcpu_unwind_mapping {
    __u64 start, end; /* [start, end) in the process */
    __u64 bias;       /* ELF address = address - bias */
    __u32 row_first;  /* the file's rows in unwind_rows ... */
    __u32 row_count;  /* ... 0: none (no CFI, anonymous code): frame pointers */
};

/*
 * The rows of each file, by the file's identity as the kernel sees it: for an
 * address the process's table does not know yet (code a new process mapped
 * since its table was read), the walk finds the file through the VMA once.
 */
struct offcpu_unwind_file_key {
    __u64 dev; /* the kernel's encoding: major << 20 | minor */
    __u64 ino;
};

struct offcpu_unwind_file {
    /* the executable segment from the page it starts in: file offsets ... */
    __u64 seg_offset, seg_size;
    __u64 seg_vaddr; /* ... loaded at this ELF address */
    __u32 row_first, row_count;
};

enum offcpu_unwind_asked {
    OFFCPU_UNWIND_IDLE,  /* the daemon wrote the table */
    OFFCPU_UNWIND_ASKED, /* the walk asked for it to be read again (once until written) */
    /* asking again won't help: mappings beyond OFFCPU_UNWIND_MAPPINGS_MAX, or
     * a process the daemon cannot see (gone, or in another pid namespace) */
    OFFCPU_UNWIND_FULL,
};

struct offcpu_unwind_process {
    /* the address space the table is of: after an exec, or for a reused
     * pid, it is stale */
    __u64 mm;
    __u32 n;     /* mappings, sorted by start */
    __u32 asked; /* enum offcpu_unwind_asked */
    /* A table read before its address space was known (mm 0, at start) is
     * of the process that started (boot time, ns) in [started_from,
     * started_to): not of another that reused its pid. */
    __u64 started_from, started_to;
    /* When the daemon began reading the mappings (CLOCK_MONOTONIC ns): how
     * old the table is (see unwind_frame). */
    __u64 read_ns;
    struct offcpu_unwind_mapping maps[OFFCPU_UNWIND_MAPPINGS_MAX];
};

enum offcpu_announce_kind {
    /* a thread first blocked of its own accord (its libraries are loaded by
     * then): read its mappings while it lives */
    OFFCPU_ANNOUNCE_PROCESS,
    /* the process exec'd: read its mappings, keeping those of the image it
     * replaced (its unwind table is asked for on unwind_asks) */
    OFFCPU_ANNOUNCE_EXEC,
    /* on unwind_asks: an exec, or the walk met an address space or an
     * address its table does not know (a dlopen): read the unwind table */
    OFFCPU_ANNOUNCE_UNWIND_TABLE,
    /* a walk went through code mapped since the mappings were read (the
     * first block was in ld.so, loading libraries): read them again, even
     * if just read */
    OFFCPU_ANNOUNCE_MAPPED,
    /* a new process forked from parent, with a copy of its address space:
     * on announcements, the parent's mappings are its own, as they were
     * once the parent last mapped code (code_ns); on unwind_asks, it was
     * given its parent's unwind table (see inherit_table) */
    OFFCPU_ANNOUNCE_FORKED,
};

struct offcpu_announce {
    __u32 tgid;
    __u32 exec_id;
    __u32 kind; /* enum offcpu_announce_kind */
    /* OFFCPU_ANNOUNCE_FORKED: the tgid it was forked from;
     * OFFCPU_ANNOUNCE_UNWIND_TABLE: the tgid whose address space it runs in
     * (a vfork child before its exec), 0 if none */
    __u32 parent;
    __u64 mm; /* the address space it is of (struct offcpu_unwind_process.mm) */
    /* OFFCPU_ANNOUNCE_FORKED: when the parent last mapped code, as far as
     * on_mmap saw (CLOCK_MONOTONIC ns; 0: not since it was traced) */
    __u64 code_ns;
};

/*
 * Waker stacks (wakers = yes): at sched_waking, in the waker's context, who
 * woke a blocked task, and from where, with the time the task had been
 * blocked (switch-out to wakeup).
 */
enum offcpu_waker_kind {
    OFFCPU_WAKER_TASK = 'T', /* a task, in its own context: its stacks */
    OFFCPU_WAKER_HARDIRQ =
        'H', /* an interrupt handler (timers: hrtimer_wakeup): kernel stack only */
    OFFCPU_WAKER_SOFTIRQ = 'S', /* a softirq, on whatever task it interrupted or in ksoftirqd */
    OFFCPU_WAKER_NMI = 'N',
    OFFCPU_WAKER_UNKNOWN = '?', /* no __preempt_count to tell: a task's or an interrupt's */
};

/* The waker of a pair. */
struct offcpu_waker {
    __u64 user_stack; /* OFFCPU_STACK_MISSED for interrupts, kernel threads */
    __u64 kernel_stack;
    __u32 tgid, tid; /* 0 for interrupts */
    __u32 exec_id;
    __u32 kind; /* enum offcpu_waker_kind */
    __u32 kthread;
    __u32 uid;     /* as offcpu_key.uid, of the waker */
    char comm[16]; /* "[hardirq]", "[softirq]", "[nmi]" for interrupts */
};

struct offcpu_wake_key {
    struct offcpu_key woken; /* the blocked task, as in the aggregate */
    struct offcpu_waker waker;
};

struct offcpu_wake_value {
    __u64 blocked_ns; /* switch-out to wakeup, whole, charged at the wakeup */
    __u64 count;      /* wakeups */
};

/*
 * CPython (see docs/python-frames.md): a process whose program or libpython
 * the daemon recognised, by the version the file says it is, with the
 * addresses its layout needs. The BPF side finds each thread's state through
 * the GIL-state TSS key (glibc's pthread_getspecific) and walks its frames.
 */
#define OFFCPU_PYTHON_DEPTH 32 /* Python frames walked per switch-out; more: truncated */

enum offcpu_python_layout {
    OFFCPU_PYTHON_NONE,
    OFFCPU_PYTHON_3_11, /* the offsets of CPython 3.11 on x86-64 */
    OFFCPU_PYTHON_3_12,
    OFFCPU_PYTHON_3_13, /* checked against the file's own _Py_DebugOffsets */
    OFFCPU_PYTHON_LAYOUTS,
};

/* What the walk reads, where a version keeps it (daemon/naming/python_layout.c):
 * offsets in _PyRuntime, PyThreadState, PyInterpreterState and
 * _PyInterpreterFrame. OFFCPU_PY_NONE: the version has no such field. */
#define OFFCPU_PY_NONE         0xffff
#define OFFCPU_PY_FRAME_WINDOW 72 /* the bytes of a frame read at once: all its fields below */
struct offcpu_python_offsets {
    __u16 tss;            /* _PyRuntime's GIL-state TSS key (Py_tss_t) */
    __u16 runtime_gil;    /* _PyRuntime's GIL (3.11); NONE: the interpreter's */
    __u16 tstate_frame;   /* PyThreadState.cframe (to 3.12), .current_frame (3.13) */
    __u16 cframe_current; /* _PyCFrame.current_frame; NONE: tstate_frame is the frame */
    __u16 tstate_thread;  /* .thread_id (pthread_self()), then .native_thread_id (the tid) */
    __u16 tstate_interp;  /* .interp */
    __u16 interp_gil;     /* PyInterpreterState.ceval.gil, a pointer (3.12 on) */
    __u16 code_adaptive;  /* PyCodeObject.co_code_adaptive: the instructions */
    __u8 frame_code, frame_previous, frame_instr; /* 8 bytes each */
    __u8 frame_owner;    /* 1 byte: OFFCPU_PY_OWNED_BY_CSTACK marks an evaluation's start */
    __u8 frame_is_entry; /* 1 byte (3.11); 0xff: the version marks entries by owner */
    __u8 pad[3];
};

#define OFFCPU_PY_OWNED_BY_CSTACK 3   /* a shim frame _PyEval_EvalFrameDefault pushes (3.12 on) */
#define OFFCPU_PY_GIL_SIZE        208 /* struct _gil_runtime_state, glibc x86-64, 3.11 to 3.13 */

/*
 * A CPython thread's user stack holds its native frames, leaf first, then a
 * marker, then its Python frames, leaf first: one tagged word each (user
 * addresses never have bit 63 set). The daemon weaves them into the native
 * frames that evaluated them (docs/python-frames.md).
 */
#define OFFCPU_PY_TAG       (1ULL << 63)
#define OFFCPU_PY_CODE_MASK ((1ULL << 48) - 1) /* a frame's code object; 0 in the marker */
/* a frame: the instruction it is at, lasti + 1 in code units (0: none run
 * yet; OFFCPU_PY_LASTI_FAR: too far to say), and whether it began an
 * evaluation (the outermost frame one _PyEval_EvalFrameDefault runs) */
#define OFFCPU_PY_LASTI_SHIFT 48
#define OFFCPU_PY_LASTI_FAR   0x3fffULL
#define OFFCPU_PY_ENTRY       (1ULL << 62)
/* the marker: the layout (enum offcpu_python_layout), and what the walk met */
#define OFFCPU_PY_MARK_LAYOUT_SHIFT 48           /* 8 bits */
#define OFFCPU_PY_MARK_TRUNCATED    (1ULL << 56) /* more frames than were kept */
#define OFFCPU_PY_MARK_READ_ERROR   (1ULL << 57) /* a frame could not be read */
#define OFFCPU_PY_MARK_GIL          (1ULL << 58) /* blocked waiting for the GIL */

struct offcpu_python_process {
    __u64 mm;      /* the address space the entry is of: stale after an exec */
    __u64 runtime; /* &_PyRuntime in the process */
    __u32 layout;  /* enum offcpu_python_layout */
    __u32 pad;
    struct offcpu_python_offsets at; /* of that layout */
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
    OFFCPU_STAT_UNWIND_WALKS,    /* user stacks walked from call frame information */
    OFFCPU_STAT_UNWIND_FRAMES,   /* ...frames they found */
    OFFCPU_STAT_UNWIND_ENTRY,    /* ...walks that reached the thread's entry */
    OFFCPU_STAT_UNWIND_END,      /* ...that met a null return address or frame pointer */
    OFFCPU_STAT_UNWIND_NO_TABLE, /* ...that met an address space or address not yet known */
    OFFCPU_STAT_UNWIND_UNKNOWN,  /* ...that met CFI they cannot follow */
    OFFCPU_STAT_UNWIND_READ,     /* ...that could not read the user stack */
    OFFCPU_STAT_UNWIND_DEPTH,    /* ...that were cut at OFFCPU_USER_DEPTH frames */
    OFFCPU_STAT_UNWIND_FP,       /* frames found by frame pointer, in code without rows */
    OFFCPU_STAT_UNWIND_VMA,      /* frames in code the table did not know, found by its VMA */
    OFFCPU_STAT_UNWIND_MAPPED,   /* ...found among the code recorded as it was mapped */
    OFFCPU_STAT_UNWIND_RESUMED,  /* short walks made whole at switch-in, from a copy of the stack */
    OFFCPU_STAT_UNWIND_RESUMED_SHORT, /* ...still short then: the rows were not loaded yet */
    OFFCPU_STAT_UNWIND_SIGNAL,        /* signal frames walked through, to the interrupted code */
    OFFCPU_STAT_CHARGES_DEFERRED,     /* short blocks (or a flip's part) held until the rows come */
    OFFCPU_STAT_DEFERRED_SHORT,       /* ...charged short all the same: no rows within the bound */
    OFFCPU_STAT_DEFER_FULL,           /* ...not held, no room: charged short at once */
    OFFCPU_STAT_WAKES,                /* wakeups of blocked tasks paired with their waker */
    OFFCPU_STAT_WAKE_MAP_FULL,        /* ...that found no room in the generation's waker map */
    OFFCPU_STAT_WAKE_LOST_NS,         /* ...and the blocked time they had */
    OFFCPU_STAT_WAKE_NO_CONTEXT,      /* ...whose context (task, interrupt) could not be told */
    OFFCPU_STAT_WAKER_WALKS,          /* wakeups whose waker's stacks were walked */
    OFFCPU_STAT_WAKER_CACHE_HITS,   /* ...reused: a task waking from a place it woke from before */
    OFFCPU_STAT_WAKER_CACHE_CHECKS, /* hits walked anyway, to check the cache */
    OFFCPU_STAT_WAKER_CACHE_MISMATCH,  /* ...where the walk found other stacks */
    OFFCPU_STAT_WAKE_CONTEXT_DISAGREE, /* interrupts whose entry frame told another kind, or none */
    OFFCPU_STAT_PY_WALKS,      /* switch-outs of CPython threads whose Python frames were walked */
    OFFCPU_STAT_PY_FRAMES,     /* ...Python frames they found */
    OFFCPU_STAT_PY_TRUNCATED,  /* ...walks cut at OFFCPU_PYTHON_DEPTH frames */
    OFFCPU_STAT_PY_READ_ERROR, /* ...walks that could not read the interpreter's memory */
    OFFCPU_STAT_PY_NO_TSTATE,  /* CPython threads with no valid thread state (not Python's own) */
    OFFCPU_STAT_PY_GIL_WAITS,  /* CPython threads that blocked waiting for the GIL */
    OFFCPU_STAT__MAX,
};

struct offcpu_stats {
    __u64 v[OFFCPU_STAT__MAX];
};

/* A task off-CPU now, as the list_blocked iterator writes it. */
struct offcpu_blocked {
    __u64 since_ns; /* CLOCK_MONOTONIC switch-out time */
    __u64 cgroup_id;
    __u32 tgid;
    __u32 tid;
    __u32 uid;
    __u32 state; /* enum offcpu_state */
    __u32 kthread;
    __u32 exec_id;
    __u32 user_nr; /* frames in user, kernel; 0: the stack was missed */
    __u32 kernel_nr;
    char comm[16];
    __u64 user[OFFCPU_USER_DEPTH]; /* leaf first, as walked */
    __u64 kernel[OFFCPU_KERNEL_DEPTH];
};

#endif
