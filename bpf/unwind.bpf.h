/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The user stack, walked from call frame information: code built without
 * frame pointers (Debian's glibc, python3, bash, ...) keeps its callers all
 * the same. Per frame: find the mapping of pc in the process's table (kept
 * by the daemon, sorted: a bounded binary search), then the row of its file
 * that covers pc (another), compute the CFA from rsp or rbp, read the return
 * address below it and the saved rbp, and go on from the caller.
 *
 * Code with no rows (JIT code, code without CFI) is followed by its frame
 * pointer. The walk ends at a thread's entry (the CFI says the return
 * address is undefined there), or where nothing more can be told for sure:
 * it never guesses a frame. An address or address space the table does not
 * know yet ends the walk too, and asks the daemon to read the process again;
 * such a walk is not to be reused (see stack_cache.bpf.h).
 */
#ifndef UNWIND_BPF_H
#define UNWIND_BPF_H

#include "common.bpf.h"
#include "python_words.bpf.h"

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE); /* written by the daemon in place */
    __uint(max_entries, 1);            /* set from unwind-memory */
    __type(key, __u32);
    __type(value, struct offcpu_unwind_row);
} unwind_rows SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, 32768);
    __type(key, __u32); /* tgid */
    __type(value, struct offcpu_unwind_process);
} unwind_procs SEC(".maps");

/* A table of no mappings, for a process first seen: asked for once. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct offcpu_unwind_process);
} unwind_empty SEC(".maps");

/* Requests for tables, read by the daemon's unwind thread: apart from the
 * announcements, so that neither waits for the other. */
struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 64 * 1024);
} unwind_asks SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536); /* the daemon's TABLE_FILES_MAX */
    __type(key, struct offcpu_unwind_file_key);
    __type(value, struct offcpu_unwind_file);
} unwind_files SEC(".maps");

/* Steps of the binary searches: 2^7 mappings, 2^23 rows (more than
 * UNWIND_ROWS_PER_FILE_MAX). */
#define MAPPING_SEARCH_STEPS 8
#define ROW_SEARCH_STEPS     24

enum walk_end {
    WALK_GOING,
    WALK_ENTRY = OFFCPU_STAT_UNWIND_ENTRY,
    WALK_END = OFFCPU_STAT_UNWIND_END,
    WALK_NO_TABLE = OFFCPU_STAT_UNWIND_NO_TABLE,
    WALK_UNKNOWN = OFFCPU_STAT_UNWIND_UNKNOWN,
    WALK_READ = OFFCPU_STAT_UNWIND_READ,
};

/* A walk in progress: no pointers, so that the frame step, a global
 * function, can be verified once for every walk. */
/*
 * The walk's state lives here, not on the BPF stack: kernels up to 6.1 allow
 * 512 bytes for a program and the functions it calls together (bpf_loop's
 * and bpf_find_vma's callbacks included), and the switch-out's own frame
 * takes much of them. Per CPU, a slot for each program that walks: each runs
 * with interrupts off, but sched_waking can fire inside sched_switch (an
 * allocation there may wake kswapd).
 */
enum unwind_slot {
    UNWIND_SLOT_SWITCH, /* sched_switch: switch-outs, and resumes at switch-in */
    UNWIND_SLOT_WAKING, /* sched_waking: the waker's stacks */
    UNWIND_SLOT_ITER,   /* charge_blocked: walks on for tasks still blocked (preemptible) */
    UNWIND_SLOTS,
};

struct walk {
    __u64 pc, sp, bp;
    __u64 di;    /* the innermost frame's rdi (vfork's return address) */
    __u32 first; /* the step is of the innermost frame, whose registers are all known */
    __u64 frame; /* the step's frame, kept if it says so */
    __u64 mm;
    __u32 tgid, exec_id;
    __u32 end;       /* enum walk_end */
    __u32 bp_known;  /* bp holds the caller's rbp */
    __u32 has_table; /* the process's table is of this address space */
    /* ...and knows all of the process's code, as far as the walk can tell
     * (no code mapped since, no mappings left out): an address in none of it
     * is no frame (see unwind_frame) */
    __u32 table_whole;
    __u32 vma_tried; /* bpf_find_vma was called: once per program run, or it fails */
    __u32 unknown;   /* an address was in no code the walk knew: the stack may be incomplete */
    __u32 tid;
    __u32 resuming; /* walking on from a copy of the stack (see unwind_resume) */
    __u32 slot;     /* enum unwind_slot: where this walk and its copy of the stack are */
    __u32 stopped;  /* met code whose rows are not loaded: stop_* is the state there */
    __u32 stop_i;   /* ...the frame it was at */
    __u32 stop_bp_known;
    __u32 new_code; /* went through code mapped since the table was read */
    __u64 stop_pc, stop_sp, stop_bp;
    struct offcpu_unwind_mapping exe; /* without a table: the program's own code (see find_exe) */
    struct offcpu_unwind_mapping vma; /* what bpf_find_vma found (row_count 0: nothing) */
    struct offcpu_unwind_mapping at;  /* unwind_frame's: the mapping of the frame's pc */
    __u64 python[PY_WORDS_MAX];       /* a resumed stack's Python words, put back after it */
};

/*
 * A walk that met code whose rows are not loaded yet (a new process's first
 * blocks come before the daemon has read the files it maps) keeps a copy of
 * the stack above that point, and goes on from it when the task is switched
 * back in: a block later, the daemon has most often loaded the rows. The
 * copy is read then, not the task's memory: at switch-in the address space
 * mapped is the other task's. A block still short at its end keeps its copy
 * until a flip finds the rows (charge_deferred): a copy is the block's, not
 * the task's, which goes on running and blocking.
 *
 * Frames of 16 KiB are common where a server first blocks: the java
 * launcher's JLI_Launch (16.5 KiB: three PATH_MAX buffers), whose thread then
 * waits in pthread_join for the JVM's whole life; libuv's uv__io_poll in node
 * (15.6 KiB: its epoll_event array). A copy of 8 KiB ended inside them, and
 * their callers were lost for the whole block. 31 KiB: the most a per-CPU
 * array's value may hold (32 KiB) with struct resume_stack's own fields.
 */
#define RESUME_STACK_BYTES (31 * RESUME_CHUNK)
#define RESUME_CHUNK       1024 /* copied a chunk at a time: the last may lie past the stack */

struct resume_stack {
    __u64 sp;     /* where the copy begins: a chunk boundary at or below the stop's sp */
    __u32 len;    /* bytes from sp to the end of the last chunk copied */
    __u32 chunks; /* bit k: chunk k was copied (a page never touched is not) */
    __u8 stack[RESUME_STACK_BYTES];
};

struct resume {
    __u64 start_time; /* the task's: a tid reused is another task */
    __u64 pc, sp, bp, di, mm;
    __u32 bp_known;
    __u32 first_i; /* the frame the walk stopped at */
    __u32 tgid, exec_id;
    struct resume_stack copy;
};

/* A task that never runs again (killed while blocked) leaves its copy
 * behind, for the LRU to take back. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, OFFCPU_DEFERRED_MAX);
    __type(key, struct offcpu_resume_key);
    __type(value, struct resume);
} unwind_resumes SEC(".maps");

/* The value a new copy starts from: too large for the BPF stack. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct resume);
} unwind_resume_empty SEC(".maps");

/*
 * The copy a resumed walk reads, per CPU and slot, taken out of
 * unwind_resumes when it starts: looked up here with a key of 4 bytes on the
 * stack (6.1 takes no key from elsewhere, and the walk's frames have little
 * room: see unwind_slot), and from an array.
 */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, UNWIND_SLOTS);
    __type(key, __u32);
    __type(value, struct resume_stack);
} unwind_resume_stacks SEC(".maps");

/* size bytes of the stack at addr: the task's memory, or the copy. */
static __always_inline long read_stack(const struct walk *w, void *dst, __u32 size, __u64 addr)
{
    const struct resume_stack *r;
    __u32 slot = w->slot;
    __u64 off;

    if (!w->resuming)
        return bpf_probe_read_user(dst, size, (void *)addr);
    r = bpf_map_lookup_elem(&unwind_resume_stacks, &slot);
    if (!r || addr < r->sp)
        return -14; /* -EFAULT */
    off = addr - r->sp;
    if (off > RESUME_STACK_BYTES - 16 || off + size > r->len ||
        !(r->chunks & (1U << (off / RESUME_CHUNK))) ||
        !(r->chunks & (1U << ((off + size - 1) / RESUME_CHUNK))))
        return -14; /* -EFAULT */
    return bpf_probe_read_kernel(dst, size, &r->stack[off]);
}

/*
 * The mapping holding addr, copied into *ret; false for none. Copied, not
 * pointed to: the verifier follows each path of the search on its own, and a
 * copy lets those paths meet again right after it.
 */
static __always_inline bool mapping_of(const struct offcpu_unwind_process *proc, __u64 addr,
                                       struct offcpu_unwind_mapping *ret)
{
    __u32 lo = 0, hi = proc->n;

    if (hi > OFFCPU_UNWIND_MAPPINGS_MAX)
        return false;
    /* the first mapping starting above addr */
    for (int i = 0; i < MAPPING_SEARCH_STEPS && lo < hi; i++) {
        __u32 mid = (lo + hi) / 2;

        /* the compiler knows mid < lo + hi <= 2 * MAX and drops the check;
         * verifiers up to 6.1 do not track lo < hi, and need it */
        barrier_var(mid);
        if (mid >= OFFCPU_UNWIND_MAPPINGS_MAX)
            return false;
        if (proc->maps[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || lo > OFFCPU_UNWIND_MAPPINGS_MAX)
        return false;
    *ret = proc->maps[lo - 1];
    return addr < ret->end;
}

/* The row of the file's rows [first, first + count) covering ELF address
 * vaddr, or NULL before the first. */
static __always_inline const struct offcpu_unwind_row *row_of(__u32 first, __u32 count, __u32 vaddr)
{
    __u32 lo = first, hi = first + count, idx;

    for (int i = 0; i < ROW_SEARCH_STEPS && lo < hi; i++) {
        __u32 mid = lo + (hi - lo) / 2;
        const struct offcpu_unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &mid);

        if (!r)
            return NULL;
        if (r->pc <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == first)
        return NULL;
    idx = lo - 1;
    return bpf_map_lookup_elem(&unwind_rows, &idx);
}

/* The mapping [start, end) of a file's executable segment, from the rows the
 * daemon listed for the file; elf_start: the ELF address at start. */
static __always_inline void mapping_of_file(__u64 start, __u64 end,
                                            const struct offcpu_unwind_file *f, __u64 elf_start,
                                            struct offcpu_unwind_mapping *ret)
{
    ret->start = start;
    ret->end = end;
    ret->bias = start - elf_start;
    ret->row_first = f->row_first;
    ret->row_count = f->row_count;
}

static __always_inline struct offcpu_unwind_file *file_rows(__u64 dev, __u64 ino)
{
    struct offcpu_unwind_file_key k = {.dev = dev, .ino = ino};

    return bpf_map_lookup_elem(&unwind_files, &k);
}

/*
 * The program's own code, without its table: the kernel keeps where it
 * loaded the executable segment ([start_code, end_code)) and from which
 * file. A process just exec'd blocks before the daemon has read its table;
 * its libraries are found by VMA (below), its own code here.
 */
static __always_inline void find_exe(struct walk *w)
{
    struct mm_struct *mm = (struct mm_struct *)w->mm;
    struct offcpu_unwind_file *f;
    struct inode *inode;

    inode = mm ? BPF_CORE_READ(mm, exe_file, f_inode) : NULL;
    f = inode ? file_rows(BPF_CORE_READ(inode, i_sb, s_dev), BPF_CORE_READ(inode, i_ino)) : NULL;
    /* start_code is where the executable segment's own address landed; the
     * daemon says where the page it starts in lies (lld starts segments
     * mid-page) */
    if (f)
        mapping_of_file(BPF_CORE_READ(mm, start_code) & ~0xfffULL, BPF_CORE_READ(mm, end_code), f,
                        f->seg_vaddr, &w->exe);
}

#define VMA_EXEC 0x4 /* VM_EXEC: a macro, not in BTF */

/* bpf_find_vma's callback: the mapping at the address, if its file has rows;
 * if code without rows, its addresses only (row_count 0). */
static long vma_mapping(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
    struct offcpu_unwind_mapping *found = ctx;
    struct offcpu_unwind_file *f;
    __u64 offset;

    if (BPF_CORE_READ(vma, vm_flags) & VMA_EXEC) {
        found->start = vma->vm_start;
        found->end = vma->vm_end;
    }
    if (!vma->vm_file)
        return 0;
    f = file_rows(BPF_CORE_READ(vma, vm_file, f_inode, i_sb, s_dev),
                  BPF_CORE_READ(vma, vm_file, f_inode, i_ino));
    offset = vma->vm_pgoff << 12;
    if (f && offset >= f->seg_offset && offset - f->seg_offset < f->seg_size)
        mapping_of_file(vma->vm_start, vma->vm_end, f, offset - f->seg_offset + f->seg_vaddr,
                        found);
    return 0;
}

/* The mapping holding addr, from its VMA: for code mapped since the table
 * was read (a new process's libraries, a dlopen). */
static __always_inline bool mapping_from_vma(struct walk *w, __u64 addr,
                                             struct offcpu_unwind_mapping *ret)
{
    if (w->resuming) /* current is another task */
        return false;
    if (!w->vma_tried) {
        struct offcpu_unwind_mapping found = {};

        w->vma_tried = true;
        /* sched_switch runs in the task switching out: current is it */
        bpf_find_vma(bpf_get_current_task_btf(), addr, vma_mapping, &found, 0);
        w->vma = found;
    }
    if (!w->vma.row_count || addr < w->vma.start || addr >= w->vma.end)
        return false;
    *ret = w->vma;
    stat_add(OFFCPU_STAT_UNWIND_VMA, 1);
    return true;
}

/*
 * Code mapped since the daemon read the process's table, recorded as it is
 * mapped: the dynamic linker at exec (the kernel maps it), then every mmap.
 * A new process's first blocks come before the daemon has read its table
 * again, and looking a VMA up at the walk mostly fails here: the mmap lock
 * taken with interrupts off is given back by an irq_work, and until that
 * has run every other lookup on the CPU fails (-EBUSY). At the mmap, in the
 * task's own context with interrupts on, the lookup does not fail. Only
 * files whose rows are loaded are kept (libc, known from every process).
 */
#define MAPPED_MAX 16

struct mapped_code {
    __u64 mm; /* the address space the entries are of: reset at exec */
    __u32 n;  /* slots taken (may exceed MAPPED_MAX: those were not kept) */
    __u32 pad;
    __u64 code_mapped_ns; /* the last code mapped, rows or not (bpf_ktime_get_ns) */
    struct offcpu_unwind_mapping maps[MAPPED_MAX];
};

/* Recent processes only: the daemon's table takes over from them. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32); /* tgid */
    __type(value, struct mapped_code);
} unwind_mapped SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct mapped_code);
} unwind_mapped_empty SEC(".maps");

/* Remember the code mapped at addr in the current process, whose address
 * space is mm. Process context only (see above). */
static __always_inline void remember_mapping(__u32 tgid, __u64 mm, __u64 addr)
{
    struct offcpu_unwind_mapping found = {};
    struct mapped_code *m, *empty;
    __u32 zero = 0, n;

    bpf_find_vma(bpf_get_current_task_btf(), addr, vma_mapping, &found, 0);
    if (!found.end)
        return; /* no code */
    m = bpf_map_lookup_elem(&unwind_mapped, &tgid);
    if (!m || m->mm != mm) {
        /* a new process, or an exec: the entries of the old image go */
        empty = bpf_map_lookup_elem(&unwind_mapped_empty, &zero);
        if (!empty || bpf_map_update_elem(&unwind_mapped, &tgid, empty, BPF_ANY) < 0)
            return;
        m = bpf_map_lookup_elem(&unwind_mapped, &tgid);
        if (!m)
            return;
        m->mm = mm;
    }
    m->code_mapped_ns = bpf_ktime_get_ns();
    if (!found.row_count)
        return;
    n = __sync_fetch_and_add(&m->n, 1);
    if (n < MAPPED_MAX)
        m->maps[n] = found;
}

/* The mapping holding addr among those recorded as they were mapped: the
 * newest first, as a later mmap over the same addresses replaced the older. */
static __always_inline bool mapping_recorded(const struct walk *w, __u64 addr,
                                             struct offcpu_unwind_mapping *ret)
{
    __u32 tgid = w->tgid, n; /* a key on the stack: 6.1's verifier takes no other */
    struct mapped_code *m = bpf_map_lookup_elem(&unwind_mapped, &tgid);

    if (!m || m->mm != w->mm)
        return false;
    n = m->n < MAPPED_MAX ? m->n : MAPPED_MAX;
    for (__u32 k = 0; k < MAPPED_MAX && k < n; k++) {
        __u32 i = n - 1 - k;

        if (i < MAPPED_MAX && addr >= m->maps[i].start && addr < m->maps[i].end &&
            m->maps[i].row_count) {
            *ret = m->maps[i];
            stat_add(OFFCPU_STAT_UNWIND_MAPPED, 1);
            return true;
        }
    }
    return false;
}

/* parent: the process whose address space tgid runs in (vfork_parent), 0
 * if none */
static __always_inline void request_table(__u32 tgid, __u32 exec_id, __u64 mm, __u32 parent)
{
    struct offcpu_announce a = {.tgid = tgid,
                                .exec_id = exec_id,
                                .kind = OFFCPU_ANNOUNCE_UNWIND_TABLE,
                                .parent = parent,
                                .mm = mm};

    if (bpf_ringbuf_output(&unwind_asks, &a, sizeof(a), 0) < 0)
        stat_add(OFFCPU_STAT_ANNOUNCE_LOST, 1);
}

/* Where the table does not say: the program's own code, code recorded as it
 * was mapped, else its VMA. */
static __always_inline bool mapping_without_table(struct walk *w, __u64 addr,
                                                  struct offcpu_unwind_mapping *ret)
{
    if (w->exe.row_count && addr >= w->exe.start && addr < w->exe.end) {
        *ret = w->exe;
        return true;
    }
    if (!mapping_recorded(w, addr, ret) && !mapping_from_vma(w, addr, ret))
        return false;
    w->new_code = true;
    return true;
}

/* May the rows a short walk of tgid missed still come? While the daemon is
 * asked for its table: not once it has said it cannot read the process. */
static __always_inline bool rows_may_come(__u32 tgid)
{
    struct offcpu_unwind_process *p = bpf_map_lookup_elem(&unwind_procs, &tgid);

    return p && p->asked == OFFCPU_UNWIND_ASKED;
}

/* Has the process mapped code since its table was read (as far as on_mmap
 * saw)? Then an address in none of its table's code may be in that. */
static __always_inline bool code_mapped_since(const struct walk *w,
                                              const struct offcpu_unwind_process *proc)
{
    __u32 tgid = w->tgid; /* a key on the stack: 6.1's verifier takes no other */
    struct mapped_code *m = bpf_map_lookup_elem(&unwind_mapped, &tgid);

    return m && m->mm == w->mm && m->code_mapped_ns >= proc->read_ns;
}

/* How often at most a walk has a table read again for a return address in
 * none of its code (see unwind_frame). */
#define TABLE_REREAD_NS (1000ULL * 1000 * 1000)

static __always_inline bool table_outdated(const struct offcpu_unwind_process *proc)
{
    return bpf_ktime_get_ns() - proc->read_ns >= TABLE_REREAD_NS;
}

/* Ask the daemon to read the process's table again: once, until it has. */
static __always_inline void ask_for_table(struct walk *w, struct offcpu_unwind_process *proc)
{
    if (proc->asked != OFFCPU_UNWIND_FULL &&
        __sync_lock_test_and_set(&proc->asked, OFFCPU_UNWIND_ASKED) != OFFCPU_UNWIND_ASKED)
        request_table(w->tgid, w->exec_id, w->mm, 0);
}

/*
 * An exec: the process's table, if it has one, is of the address space it
 * left. It stands for the new one's from now, empty and asked for, until
 * the daemon writes that: a walk meanwhile (the program's own code and what
 * was mapped since are found without a table) does not ask again. Before,
 * the first walk after an exec found the old address space's table and
 * asked once more: a read more for every program started.
 */
/* An empty table made for tgid, to stand for one asked for until the daemon
 * writes it; NULL if another CPU made one first (it asks), or none could be. */
static __always_inline struct offcpu_unwind_process *new_empty_table(__u32 tgid)
{
    struct offcpu_unwind_process *empty;
    __u32 zero = 0;

    empty = bpf_map_lookup_elem(&unwind_empty, &zero);
    if (!empty || bpf_map_update_elem(&unwind_procs, &tgid, empty, BPF_NOEXIST) < 0)
        return NULL;
    return bpf_map_lookup_elem(&unwind_procs, &tgid);
}

static __always_inline void ask_table_at_exec(__u32 tgid, __u32 exec_id, __u64 mm)
{
    struct offcpu_unwind_process *p = bpf_map_lookup_elem(&unwind_procs, &tgid);

    if (!p)
        p = new_empty_table(tgid);
    if (p) {
        p->n = 0;
        p->mm = mm;
        p->asked = OFFCPU_UNWIND_ASKED;
    }
    request_table(tgid, exec_id, mm, 0);
}

/* The process whose address space the walked task runs in when that is its
 * parent's: a child of vfork or posix_spawn before its exec, whose table the
 * daemon takes from the parent rather than reading the same mappings again
 * (or looking for the parent itself, as it did for every process's first
 * table: a tenth of an exec storm's CPU). 0: none, or not known. */
static __always_inline __u32 vfork_parent(const struct walk *w)
{
    struct task_struct *parent;

    if (w->resuming) /* current is another task */
        return 0;
    parent = bpf_get_current_task_btf()->real_parent;
    return parent && (__u64)parent->mm == w->mm ? parent->tgid : 0;
}

/* Is the process's table of this address space? If not, ask for one:
 * once, from an empty table standing for it until the daemon writes it. */
static __always_inline bool has_table(struct walk *w)
{
    struct offcpu_unwind_process *p;

    /* a task past exit_mm has no user memory left, nor a table to ask for */
    if (!w->mm)
        return false;
    p = bpf_map_lookup_elem(&unwind_procs, &w->tgid);
    if (!p) {
        p = new_empty_table(w->tgid);
        if (!p)
            return false;
        p->mm = w->mm;
        p->asked = OFFCPU_UNWIND_ASKED;
        request_table(w->tgid, w->exec_id, w->mm, vfork_parent(w));
        return false;
    }
    /* a table read at start knows no address space yet: it is this one's if
     * this process is the one that had the pid then (the daemon read the
     * table after this process began; an exec since was announced) */
    if (p->mm == 0 && !w->resuming) {
        __u64 started = bpf_get_current_task_btf()->group_leader->start_boottime;

        if (started >= p->started_from && started < p->started_to)
            __sync_val_compare_and_swap(&p->mm, 0, w->mm);
    }
    /* (the empty table standing for one asked for is no table: code it does
     * not know is followed by frame pointer meanwhile) */
    if (p->mm == w->mm) {
        w->table_whole = p->n > 0 && p->asked != OFFCPU_UNWIND_FULL && !code_mapped_since(w, p);
        return p->n > 0;
    }
    /* A walk on from a copy is of the address space the task blocked in,
     * which it may have left since: an exec, or a vfork child's block in its
     * parent's. The daemon reads a process as it is now: asked, it would
     * read the new image's mappings as the old address space's table, and
     * the new image's walks would find no table until they asked again (at
     * each flip that resumed the copy, for as long as it is held). */
    if (w->resuming && p->mm)
        return false;
    /* an exec, or another process with a reused pid */
    if (__sync_lock_test_and_set(&p->asked, OFFCPU_UNWIND_ASKED) != OFFCPU_UNWIND_ASKED)
        request_table(w->tgid, w->exec_id, w->mm, 0);
    return false;
}

/*
 * A process forked (not a thread, not an exec: the child's address space is a
 * copy of current's) starts with the mappings its parent has. Its parent's
 * table is copied as its own, so that it is neither asked for nor read from
 * /proc (a server forking a worker per request, `perf bench sched messaging`:
 * the daemon read every child's mappings, most of its CPU time there); the
 * daemon is told on unwind_asks, to hold the files that table names for the
 * child. Only a table that is whole: of this address space, not asked for
 * again, no code mapped since it was read. The naming side is told on
 * announcements in any case, with when the parent last mapped code: its
 * mappings as read after that are the child's too.
 *
 * Called at the child's first wakeup, in the parent's context; the child has
 * not run yet.
 */
static __always_inline void inherit_table(__u32 child, __u32 exec_id, __u64 child_mm)
{
    struct task_struct *parent_task = bpf_get_current_task_btf();
    __u32 parent = bpf_get_current_pid_tgid() >> 32;
    __u64 parent_mm = (__u64)parent_task->mm, code_ns = 0;
    struct offcpu_announce a = {.tgid = child,
                                .exec_id = exec_id,
                                .kind = OFFCPU_ANNOUNCE_FORKED,
                                .parent = parent,
                                .mm = child_mm};
    struct offcpu_unwind_process *p, *c;
    struct mapped_code *m;

    if (!child_mm || child_mm == parent_mm)
        return; /* a vfork: it execs next, or exits */
    m = bpf_map_lookup_elem(&unwind_mapped, &parent);
    if (m && m->mm == parent_mm)
        code_ns = m->code_mapped_ns;
    a.code_ns = code_ns;
    if (bpf_ringbuf_output(&announcements, &a, sizeof(a), 0) < 0)
        stat_add(OFFCPU_STAT_ANNOUNCE_LOST, 1);
    p = bpf_map_lookup_elem(&unwind_procs, &parent);
    if (!p || p->mm != parent_mm || p->n == 0 || p->asked != OFFCPU_UNWIND_IDLE ||
        code_ns >= p->read_ns)
        return;
    if (bpf_map_update_elem(&unwind_procs, &child, p, BPF_ANY) < 0)
        return;
    c = bpf_map_lookup_elem(&unwind_procs, &child);
    if (!c)
        return;
    c->mm = child_mm;
    /* a copy the daemon does not know of must not stay: the files it names
     * may be unloaded once the parent no longer holds them */
    if (bpf_ringbuf_output(&unwind_asks, &a, sizeof(a), 0) < 0) {
        stat_add(OFFCPU_STAT_ANNOUNCE_LOST, 1);
        bpf_map_delete_elem(&unwind_procs, &child);
    }
}

/* One frame by frame pointer: [bp] holds the caller's rbp, [bp + 8] the
 * return address. */
static __always_inline bool step_by_frame_pointer(struct walk *w)
{
    __u64 frame[2];

    if (!w->bp_known || !w->bp) {
        w->end = WALK_END;
        return false;
    }
    if (read_stack(w, frame, sizeof(frame), w->bp) < 0) {
        w->end = WALK_READ;
        return false;
    }
    w->sp = w->bp + 16;
    w->bp = frame[0];
    w->pc = frame[1];
    stat_add(OFFCPU_STAT_UNWIND_FP, 1);
    return true;
}

/* Past a signal frame: the interrupted registers, from the kernel's
 * sigcontext on the stack (see OFFCPU_CFA_SIGNAL), read into the walk itself:
 * unwind_frame's own frame has no room to spare (see unwind_slot). */
static __always_inline bool step_signal_frame(struct walk *w, const struct offcpu_unwind_row *row)
{
    /* rsp last: the addresses are from the frame's own */
    if (read_stack(w, &w->pc, sizeof(w->pc), w->sp + row->cfa_off + 8) < 0 ||
        read_stack(w, &w->bp, sizeof(w->bp), w->sp + row->rbp_off) < 0 ||
        read_stack(w, &w->sp, sizeof(w->sp), w->sp + row->cfa_off) < 0) {
        w->end = WALK_READ;
        return false;
    }
    /* the interrupted instruction is no return address: kept one byte on, as
     * if it were one, it is looked up and named at itself */
    w->pc++;
    w->bp_known = true;
    stat_add(OFFCPU_STAT_UNWIND_SIGNAL, 1);
    return true;
}

/* One frame by the row covering pc. */
static __always_inline bool step_by_row(struct walk *w, const struct offcpu_unwind_row *row)
{
    __u64 cfa, frame[2]; /* [saved rbp, return address] when rbp is at CFA - 16 */

    switch (row->cfa) {
    case OFFCPU_CFA_SIGNAL:
        return step_signal_frame(w, row);
    case OFFCPU_CFA_RSP:
        cfa = w->sp + row->cfa_off;
        break;
    case OFFCPU_CFA_RBP:
        if (!w->bp_known) {
            w->end = WALK_UNKNOWN;
            return false;
        }
        cfa = w->bp + row->cfa_off;
        break;
    case OFFCPU_CFA_PLT:
        cfa = w->sp + row->cfa_off + ((w->pc & 15) >= row->plt_push ? 8 : 0);
        break;
    case OFFCPU_CFA_ENTRY:
        w->end = WALK_ENTRY;
        return false;
    default:
        w->end = WALK_UNKNOWN;
        return false;
    }
    if (row->ra == OFFCPU_RA_IN_RDI) {
        /* only the innermost frame's rdi is known */
        if (!w->first || (row->rbp == OFFCPU_RBP_SAVED &&
                          read_stack(w, &frame[0], sizeof(frame[0]), cfa + row->rbp_off) < 0)) {
            w->end = WALK_UNKNOWN;
            return false;
        }
        frame[1] = w->di;
    } else if (row->rbp == OFFCPU_RBP_SAVED && row->rbp_off == -16) {
        /* one read where rbp lies next to the return address, as after the
         * usual push rbp: user memory reads are dear */
        if (read_stack(w, frame, sizeof(frame), cfa - 16) < 0) {
            w->end = WALK_READ;
            return false;
        }
    } else {
        if (read_stack(w, &frame[1], sizeof(frame[1]), cfa - 8) < 0 ||
            (row->rbp == OFFCPU_RBP_SAVED &&
             read_stack(w, &frame[0], sizeof(frame[0]), cfa + row->rbp_off) < 0)) {
            w->end = WALK_READ;
            return false;
        }
    }
    if (row->rbp == OFFCPU_RBP_SAVED) {
        w->bp = frame[0];
        w->bp_known = true;
    } else if (row->rbp == OFFCPU_RBP_UNKNOWN) {
        w->bp_known = false;
    }
    w->sp = cfa;
    w->pc = frame[1];
    return true;
}

enum step {
    STEP_STOP, /* the frame at pc is none: stop without it */
    STEP_LAST, /* keep the frame, and stop */
    STEP_NEXT, /* keep the frame; its caller is at pc */
};

/*
 * The frame at w->pc (a return address past the first): kept once it is
 * known to lie in code of the process, and its caller found. A global
 * function: the verifier checks it once, not once for every state the walk
 * can be in. Returns an enum step.
 */
__noinline int unwind_frame(struct walk *w, __u32 i)
{
    struct offcpu_unwind_process *proc = NULL;
    struct offcpu_unwind_mapping *m;
    const struct offcpu_unwind_row *row = NULL;
    __u32 tgid;
    __u64 at;
    bool ok;

    if (!w)
        return STEP_STOP;
    /* w points into the caller's memory, not this frame: up to 6.1 the
     * verifier takes only a key on the stack (or in a map value) */
    tgid = w->tgid;
    m = &w->at;
    /* a return address points after its call, maybe past the function's end */
    at = i == 0 ? w->pc : w->pc - 1;
    if (w->has_table)
        proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
    if (!proc || !mapping_of(proc, at, m)) {
        bool known = mapping_without_table(w, at, m);

        /* looked up again: kept across the lookup above, it took more stack
         * than 6.1's verifier lets the walk's calls have together */
        proc = w->has_table ? bpf_map_lookup_elem(&unwind_procs, &tgid) : NULL;
        /* A return address in no code of a process whose table is read is
         * no frame (a frame pointer of code built without them): the stack
         * ends there, whole. Unless code was mapped since the table was
         * read: then the table is read again, and the walk is short until it
         * is. Code made executable by mprotect (JIT code) has it read again
         * once a second at most. Before, every walk through such an address
         * had the whole table read again, and its stack was never reused. */
        if (!known && i > 0 && w->table_whole) {
            if (proc && table_outdated(proc))
                ask_for_table(w, proc);
            w->end = WALK_NO_TABLE;
            return STEP_STOP;
        }
        if (proc)
            ask_for_table(w, proc);
        if (!known) {
            w->end = WALK_NO_TABLE;
            w->unknown = true;
            if (!w->stopped) {
                w->stopped = true;
                w->stop_i = i;
                w->stop_pc = w->pc;
                w->stop_sp = w->sp;
                w->stop_bp = w->bp;
                w->stop_bp_known = w->bp_known;
            }
            /* Code the walk does not know (a process whose table is not read
             * yet, JIT code just mapped) is followed by frame pointer
             * meanwhile, as the kernel would. But a return address in no code
             * of a process whose table is read is no frame (a new thread's
             * first instruction, where its CFI is still its parent's): not
             * kept. */
            if (w->has_table && i > 0)
                return STEP_STOP;
            w->frame = w->pc;
            return step_by_frame_pointer(w) && w->pc ? STEP_NEXT : STEP_LAST;
        }
    }
    w->frame = w->pc;
    w->first = i == 0;
    if (m->row_count && at - m->bias <= 0xffffffffULL)
        row = row_of(m->row_first, m->row_count, (__u32)(at - m->bias));
    /* the signal trampoline a handler returns to is no call's return: kept one
     * byte on, named at itself (naming looks up every frame but the leaf one
     * byte before, as return addresses need) */
    if (row && row->cfa == OFFCPU_CFA_SIGNAL)
        w->frame++;
    if (!row || row->cfa == OFFCPU_CFA_NONE)
        ok = step_by_frame_pointer(w);
    else
        ok = step_by_row(w, row);
    if (!ok)
        return STEP_LAST;
    if (!w->pc) {
        w->end = WALK_END;
        return STEP_LAST;
    }
    return STEP_NEXT;
}

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, UNWIND_SLOTS);
    __type(key, __u32);
    __type(value, struct walk);
} unwind_walk SEC(".maps");

/* Where the walk starts: the user registers of the task switching out. */
struct unwind_start {
    __u64 ip, sp, bp, di;
    __u64 mm;
    __u64 start_time; /* the task's */
    __u64 since;      /* the switch-out's time: with tid, the key of a copy of the stack */
    __u32 tgid, exec_id, tid;
    __u32 slot; /* enum unwind_slot: whose walk */
};

/* Filled in by the caller, for the same reason. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, UNWIND_SLOTS);
    __type(key, __u32);
    __type(value, struct unwind_start);
} unwind_starts SEC(".maps");

static __always_inline struct unwind_start *unwind_start_of(__u32 slot)
{
    struct unwind_start *r = bpf_map_lookup_elem(&unwind_starts, &slot);

    if (r)
        r->slot = slot;
    return r;
}

/* A cleared walk of this CPU's, or NULL (never: the array has its slot). */
static __always_inline struct walk *new_walk(__u32 slot)
{
    struct walk *w = bpf_map_lookup_elem(&unwind_walk, &slot);

    if (w) {
        __builtin_memset(w, 0, sizeof(*w));
        w->slot = slot;
    }
    return w;
}

struct walk_ctx {
    struct walk *w;
    struct offcpu_stack *s;
    __u32 first_i; /* the frame the walk starts at: 0, or where a resumed walk stopped */
};

/* bpf_loop's body: one frame, kept in the stack. */
static long unwind_step(__u32 i, void *ctx)
{
    struct walk_ctx *c = ctx;
    int step;
    __u32 n;

    i += c->first_i;
    step = unwind_frame(c->w, i);
    if (step == STEP_STOP)
        return 1;
    if (i > 0) { /* the first, the interrupted pc, is kept already */
        n = c->s->nr;
        if (n >= OFFCPU_USER_DEPTH)
            return 1;
        c->s->ip[n] = c->w->frame;
        c->s->nr = n + 1;
        stat_add(OFFCPU_STAT_UNWIND_FRAMES, 1);
    }
    return step == STEP_NEXT ? 0 : 1;
}

/* What unwind_user_stack found: none of these, a short walk (it met what its
 * table does not know yet: not to be reused). */
enum unwind_result {
    UNWIND_WHOLE = 1,    /* as whole as the process's code allows */
    UNWIND_RESUME = 2,   /* short, and to be walked on (unwind_resume): at flips, at switch-in */
    UNWIND_NEW_CODE = 4, /* through code mapped since the process's table was read */
};

/* Copy the stack above where the walk stopped, and the state there: of a
 * switch-out only (a waker's walk is never resumed). */
static __always_inline bool save_resume(const struct walk *w, const struct unwind_start *r)
{
    struct offcpu_resume_key k = {.tid = r->tid, .since = r->since};
    struct resume *res, *empty;
    __u32 zero = 0;

    if (r->slot != UNWIND_SLOT_SWITCH)
        return false;
    empty = bpf_map_lookup_elem(&unwind_resume_empty, &zero);
    if (!empty || bpf_map_update_elem(&unwind_resumes, &k, empty, BPF_ANY) < 0)
        return false;
    res = bpf_map_lookup_elem(&unwind_resumes, &k);
    if (!res)
        return false;
    res->start_time = r->start_time;
    res->pc = w->stop_pc;
    res->sp = w->stop_sp;
    res->bp = w->stop_bp;
    res->di = r->di;
    res->mm = w->mm;
    res->bp_known = w->stop_bp_known;
    res->first_i = w->stop_i;
    res->tgid = w->tgid;
    res->exec_id = w->exec_id;
    /* From a chunk boundary, each chunk lies in one page: a page the thread
     * never touched (the unused part of a large local array, as the 12 KiB
     * of epoll events in uv__io_poll's frame of a thread that started
     * waiting at once) fails alone, and is marked, instead of ending the
     * copy there; the walk reads only words its frames wrote. Chunks past
     * the stack's end fail too. */
    res->copy.sp = w->stop_sp & ~(__u64)(RESUME_CHUNK - 1);
    res->copy.len = 0;
    res->copy.chunks = 0;
    /* unrolled: kernels up to 6.1 refuse the back-edge a loop that goes on
     * past a failed chunk compiles to */
#pragma unroll
    for (__u32 k = 0; k < RESUME_STACK_BYTES / RESUME_CHUNK; k++) {
        if (bpf_probe_read_user(&res->copy.stack[k * RESUME_CHUNK], RESUME_CHUNK,
                                (void *)(res->copy.sp + k * RESUME_CHUNK)) < 0)
            continue;
        res->copy.chunks |= 1U << k;
        res->copy.len = (k + 1) * RESUME_CHUNK;
    }
    return res->copy.len > 0;
}

/*
 * The user stack from its registers, into s. Returns an enum unwind_result:
 * short where the walk met what its table does not know yet (the stack may
 * be incomplete, and is not to be reused; the daemon was asked), to be
 * resumed where that was code whose rows are not loaded and the stack above
 * could be copied.
 *
 * A global function: the verifier checks it once, not once for each path of
 * its caller that reaches it.
 */
__noinline int unwind_user_stack(struct offcpu_stack *s, const struct unwind_start *r)
{
    struct walk *w = r ? new_walk(r->slot) : NULL;
    struct walk_ctx c = {.w = w, .s = s};

    if (!s || !r)
        return 1;
    if (!w) {
        s->nr = 0;
        return 0;
    }
    w->pc = r->ip;
    w->sp = r->sp;
    w->bp = r->bp;
    w->di = r->di;
    w->bp_known = true;
    w->mm = r->mm;
    w->tgid = r->tgid;
    w->exec_id = r->exec_id;
    w->tid = r->tid;
    s->kernel = 0;
    s->ip[0] = r->ip;
    s->nr = 1;
    w->has_table = has_table(w);
    if (!w->has_table)
        find_exe(w);
    stat_add(OFFCPU_STAT_UNWIND_WALKS, 1);
    bpf_loop(OFFCPU_USER_DEPTH, unwind_step, &c, 0);
    if (w->end == WALK_GOING)
        stat_add(OFFCPU_STAT_UNWIND_DEPTH, 1);
    else
        stat_add(w->end, 1);
    return (w->new_code ? UNWIND_NEW_CODE : 0) | (!w->unknown                       ? UNWIND_WHOLE
                                                  : w->stopped && save_resume(w, r) ? UNWIND_RESUME
                                                                                    : 0);
}

/* What unwind_resume found. */
enum resumed {
    RESUMED_NO_COPY, /* none (taken back by the LRU, or of another task) */
    RESUMED_SHORT,   /* still short: the rows are not there yet */
    RESUMED_WHOLE,
};

/*
 * The walk of s that stopped at code without rows, on from the copy of the
 * stack its block (tid, since) took. Returns an enum resumed. The copy stays
 * (drop_resume): at a flip a task still blocked, or a block held for its rows
 * (charge_deferred), is walked on again until they come.
 */
__noinline int unwind_resume(struct offcpu_stack *s, __u32 tid, __u64 since, __u64 start_time,
                             __u32 slot)
{
    struct offcpu_resume_key k = {.tid = tid, .since = since};
    struct walk *w = new_walk(slot);
    struct walk_ctx c = {.w = w, .s = s};
    struct resume *r = bpf_map_lookup_elem(&unwind_resumes, &k);
    struct resume_stack *copy = bpf_map_lookup_elem(&unwind_resume_stacks, &slot);
    __u32 npython;

    if (!s || !r || !w || !copy)
        return RESUMED_NO_COPY;
    if (r->start_time != start_time || r->first_i >= OFFCPU_USER_DEPTH) {
        bpf_map_delete_elem(&unwind_resumes, &k);
        return RESUMED_NO_COPY;
    }
    bpf_probe_read_kernel(copy, sizeof(*copy), &r->copy);
    w->pc = r->pc;
    w->sp = r->sp;
    w->bp = r->bp;
    w->di = r->di;
    w->bp_known = r->bp_known;
    w->mm = r->mm;
    w->tgid = r->tgid;
    w->exec_id = r->exec_id;
    w->tid = tid;
    w->resuming = true;
    c.first_i = r->first_i;
    /* the frames from the stop on go: those after it were followed by frame
     * pointer; a CPython thread's Python words come back after the new ones */
    npython = python_words_take(s, w->python);
    s->nr = c.first_i ? c.first_i : 1;
    w->has_table = has_table(w);
    if (!w->has_table)
        find_exe(w);
    bpf_loop(OFFCPU_USER_DEPTH, unwind_step, &c, 0);
    python_words_append(s, w->python, npython);
    stat_add(w->unknown ? OFFCPU_STAT_UNWIND_RESUMED_SHORT : OFFCPU_STAT_UNWIND_RESUMED, 1);
    return w->unknown ? RESUMED_SHORT : RESUMED_WHOLE;
}

/* The block's copy of the stack is no longer needed. */
static __always_inline void drop_resume(__u32 tid, __u64 since)
{
    struct offcpu_resume_key k = {.tid = tid, .since = since};

    bpf_map_delete_elem(&unwind_resumes, &k);
}

#endif
