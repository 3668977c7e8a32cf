/* SPDX-License-Identifier: GPL-2.0-only */
#include "collector.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "interrupt_text.h"
#include "kernel_features.h"
#include "percpu_vars.h"
#include "log.h"
#include "macro.h"
#include "offcpu.skel.h"
#include "sorted_search.h"
#include "tracepoint_id.h"
#include "unwind_worker.h"

/*
 * Entries the programs index (aggregates, waker pairs): per generation, a
 * hash map from each key to the index of its value in an array, which the
 * daemon maps.
 */
struct indexed {
    uint32_t cap; /* entries per generation; 0: none kept */
    size_t value_size;
    const void *values[2]; /* the arrays of both generations, mapped */
    size_t values_size;
    uint32_t *index; /* a drain's indexes, beside its keys */
};

struct collector {
    struct offcpu_bpf *skel;
    struct ring_buffer *announcements;
    collector_announce_fn announce;
    void *announce_userdata;
    enum collector_attach attach;
    uint32_t gen;           /* generation the programs write now */
    bool membarrier_global; /* membarrier can wait for an RCU grace period */
    int ncpus;
    int64_t gen_start_ns; /* CLOCK_REALTIME when the current generation began */
    struct drained d;
    uint32_t stack_cap;
    struct unwind_worker *unwind;   /* NULL with unwind = frame-pointer */
    struct offcpu_unwind_row *rows; /* unwind_rows, mapped */
    size_t rows_size;
    struct indexed aggs, wakes; /* wakes.cap 0: wakers off */
    const char *code_mapped_at; /* where code mapped is seen (attach_mmap) */
    /* the parts that run without what they need, and why */
    const char *missing[2];
    uint32_t nmissing;
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    /* libbpf's info/debug chatter is noise in a daemon's log; warnings are not */
    if (level != LIBBPF_WARN)
        return 0;
    return vfprintf(stderr, fmt, ap);
}

_Static_assert(COLLECTOR_TRACE_CGROUPS_MAX == OFFCPU_TRACE_CGROUPS_MAX, "one limit, two names");
_Static_assert(COLLECTOR_COUNTERS == OFFCPU_STAT__MAX, "one counter per BPF stat");

/* How long start-up reads the unwind tables before it attaches and listens:
 * a host's take about a second (several in a sanitizer build), and a table
 * not read then costs a process running since before the daemon its first
 * block's callers. */
#define STARTUP_TABLES_NS ((int64_t)(5000 * NSEC_PER_MSEC))

static uint32_t unwind_rows_max(const struct collector_options *o)
{
    uint64_t n = o->unwind_memory / sizeof(struct offcpu_unwind_row);

    return n > UINT32_MAX ? UINT32_MAX : n ? (uint32_t)n : 1;
}

/* The tables the walk reads, every process's read now (before the programs
 * are attached: the first block of a process already running is then walked
 * whole), kept from then on by their own thread. The daemon listens only
 * after this: what is not read within STARTUP_TABLES_NS (a host of many
 * processes, a file that takes long to read) is left to the thread, which
 * reads every table again once the programs are attached. */
/* The values of a generation's indexed entries, read where the programs
 * write them: a drain takes those its keys name, not the whole arrays. */
static int indexed_map(struct indexed *x, const struct bpf_map *values0,
                       const struct bpf_map *values1)
{
    const struct bpf_map *maps[2] = {values0, values1};

    x->values_size = (size_t)x->cap * x->value_size;
    for (int g = 0; g < 2 && x->cap; g++) {
        void *p = mmap(NULL, x->values_size, PROT_READ, MAP_SHARED, bpf_map__fd(maps[g]), 0);

        if (p == MAP_FAILED)
            return -errno;
        x->values[g] = p;
    }
    return 0;
}

static void indexed_free(struct indexed *x)
{
    for (int g = 0; g < 2; g++)
        if (x->values[g])
            munmap((void *)x->values[g], x->values_size);
    free(x->index);
}

static int open_unwind_tables(struct collector *c, const struct collector_options *o)
{
    struct unwind_tables *t;
    uint32_t n = unwind_rows_max(o);
    void *rows;
    int r;

    if (!o->unwind_dwarf)
        return 0;
    c->rows_size = (size_t)n * sizeof(*c->rows);
    rows = mmap(NULL, c->rows_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                bpf_map__fd(c->skel->maps.unwind_rows), 0);
    if (rows == MAP_FAILED)
        return -errno;
    c->rows = rows;
    r = unwind_tables_new(c->rows, n, bpf_map__fd(c->skel->maps.unwind_procs),
                          bpf_map__fd(c->skel->maps.unwind_files), (int64_t)o->unwind_linger_ns,
                          &t);
    if (r < 0)
        return r;
    if (o->python_frames)
        unwind_tables_set_python_map(t, bpf_map__fd(c->skel->maps.python_procs),
                                     (uint32_t *)&c->skel->bss->python_gen);
    unwind_tables_load_all(t, clock_ns(CLOCK_MONOTONIC) + STARTUP_TABLES_NS, NULL, NULL);
    return unwind_worker_start(t, bpf_map__fd(c->skel->maps.unwind_asks), &c->unwind);
}

/*
 * A noisy cgroup's room in each generation's maps: at most cgroup-share of
 * each map, and past a floor only while a quarter of the map is still free.
 * That quarter is kept for the cgroups under their floor (1/64 of it each), so
 * however many cgroups are noisy, a quiet one's stacks are still kept.
 */
static void set_room(struct offcpu_bpf *skel, const struct collector_options *o)
{
    uint32_t stack_reserve = o->stack_entries / 4, entry_reserve = o->agg_entries / 4;

    skel->rodata->stack_share_max = (uint32_t)((uint64_t)o->stack_entries * o->cgroup_share / 100);
    skel->rodata->entry_share_max = (uint32_t)((uint64_t)o->agg_entries * o->cgroup_share / 100);
    skel->rodata->stack_open = o->stack_entries - stack_reserve;
    skel->rodata->entry_open = o->agg_entries - entry_reserve;
    skel->rodata->stack_floor = stack_reserve / 64 ?: 1;
    skel->rodata->entry_floor = entry_reserve / 64 ?: 1;
}

/* Where interrupt entry code lies, for the waker's context; unknown, each
 * waker is named as the task it ran on (and counted: wake_context_unknown). */
static void set_interrupt_text(struct offcpu_bpf *skel)
{
    struct interrupt_text t;
    int r = interrupt_text_read("/proc/kallsyms", &t);

    if (r < 0) {
        log_warning("wakers: interrupt entry code not found in /proc/kallsyms (%s): "
                    "wakeups from interrupts are not told from their interrupted task",
                    strerror(-r));
        return;
    }
    skel->rodata->irq_entry_start = t.irq_entry.start;
    skel->rodata->irq_entry_end = t.irq_entry.end;
    skel->rodata->nmi_entry_start = t.nmi_entry.start;
    skel->rodata->nmi_entry_end = t.nmi_entry.end;
    skel->rodata->softirq_start = t.softirq.start;
    skel->rodata->softirq_end = t.softirq.end;
    skel->rodata->softirq_entry_start = t.softirq_entry.start;
    skel->rodata->softirq_entry_end = t.softirq_entry.end;
}

/* Where this CPU's preempt count lies from its run queue, which tells a
 * waker's context without a walk; unknown, the context is told by the
 * waker's kernel stack, walked at every wakeup. */
static void set_preempt_count(struct offcpu_bpf *skel)
{
    struct btf *btf = btf__load_vmlinux_btf();
    int64_t d = 0;
    int r = btf ? percpu_var_distance(btf, "runqueues", "__preempt_count", &d) : -errno;

    btf__free(btf);
    if (r < 0 || d == 0) {
        log_warning("wakers: __preempt_count or runqueues not in the kernel's BTF (%s): "
                    "every waker's stack is walked to tell its context",
                    strerror(r < 0 ? -r : ENOENT));
        return;
    }
    skel->rodata->preempt_count_from_rq = d;
}

/* The function every mmap syscall returns through (on_mmap_fexit's) */
#define MMAP_FUNCTION "ksys_mmap_pgoff"

static int open_skeleton(const struct collector_options *o, const int *cgroup_fds,
                         uint32_t ncgroups, enum collector_attach attach, struct offcpu_bpf **ret)
{
    struct offcpu_bpf *skel;
    bool typed;
    int r;

    skel = offcpu_bpf__open();
    if (!skel)
        return -errno;
    bpf_map__set_max_entries(skel->maps.agg0, o->agg_entries);
    bpf_map__set_max_entries(skel->maps.agg1, o->agg_entries);
    bpf_map__set_max_entries(skel->maps.agg_values0, o->agg_entries);
    bpf_map__set_max_entries(skel->maps.agg_values1, o->agg_entries);
    bpf_map__set_max_entries(skel->maps.stacks0, o->stack_entries);
    bpf_map__set_max_entries(skel->maps.stacks1, o->stack_entries);
    /* off, the maps stay (the programs that are loaded name them) but hold one */
    bpf_map__set_max_entries(skel->maps.wake0, o->wakers ? o->agg_entries : 1);
    bpf_map__set_max_entries(skel->maps.wake1, o->wakers ? o->agg_entries : 1);
    bpf_map__set_max_entries(skel->maps.wake_values0, o->wakers ? o->agg_entries : 1);
    bpf_map__set_max_entries(skel->maps.wake_values1, o->wakers ? o->agg_entries : 1);
    /* the waker's context is read directly where the kernel can cast (asked
     * only where a waker program of tp_btf is loaded) */
    typed = o->wakers && attach == COLLECTOR_ATTACH_TP_BTF &&
            kernel_has_function("bpf_rdonly_cast") > 0;
    bpf_program__set_autoload(skel->progs.on_waking_btf,
                              o->wakers && attach == COLLECTOR_ATTACH_TP_BTF && typed);
    bpf_program__set_autoload(skel->progs.on_waking_btf_read,
                              o->wakers && attach == COLLECTOR_ATTACH_TP_BTF && !typed);
    bpf_program__set_autoload(skel->progs.on_waking_raw,
                              o->wakers && attach == COLLECTOR_ATTACH_RAW_TP);
    if (o->wakers) {
        set_interrupt_text(skel);
        set_preempt_count(skel);
    }
    skel->rodata->stack_cache = o->stack_cache;
    skel->rodata->check_shift = o->cache_check_shift;
    skel->rodata->trace_kernel_threads = o->trace_kernel_threads;
    skel->rodata->unwind_dwarf = o->unwind_dwarf;
    skel->rodata->python_frames = o->python_frames && o->unwind_dwarf;
    /* without rows, the walk needs none: one (an array cannot be empty) */
    bpf_map__set_max_entries(skel->maps.unwind_rows, o->unwind_dwarf ? unwind_rows_max(o) : 1);
    skel->rodata->ntrace_cgroups = ncgroups;
    if (o->cgroup_share < 100)
        set_room(skel, o);
    /* code mapped is recorded for the walk from call frame information only;
     * attached apart (attach_mmap): fexit where it attaches, else the
     * syscall tracepoint, else without */
    bpf_program__set_autoload(skel->progs.on_mmap_fexit, o->unwind_dwarf &&
                                                             attach == COLLECTOR_ATTACH_TP_BTF &&
                                                             kernel_fexit_loads(MMAP_FUNCTION) > 0);
    bpf_program__set_attach_target(skel->progs.on_mmap_fexit, 0, MMAP_FUNCTION);
    bpf_program__set_autoattach(skel->progs.on_mmap_fexit, false);
    bpf_program__set_autoload(skel->progs.on_mmap_syscall, o->unwind_dwarf);
    bpf_program__set_autoattach(skel->progs.on_mmap_syscall, false);
    /* run at each flip where iterators are (tp_btf) */
    skel->rodata->defer_charges = o->unwind_dwarf && attach == COLLECTOR_ATTACH_TP_BTF;
    bpf_program__set_autoload(skel->progs.charge_deferred, skel->rodata->defer_charges);
    if (attach == COLLECTOR_ATTACH_TP_BTF) {
        bpf_program__set_autoload(skel->progs.on_switch_raw, false);
        bpf_program__set_autoload(skel->progs.on_exec_raw, false);
        bpf_program__set_autoload(skel->progs.on_wakeup_new_raw, false);
    } else {
        bpf_program__set_autoload(skel->progs.on_switch_btf, false);
        bpf_program__set_autoload(skel->progs.on_exec_btf, false);
        bpf_program__set_autoload(skel->progs.on_wakeup_new_btf, false);
        bpf_program__set_autoload(skel->progs.charge_blocked, false);
        bpf_program__set_autoload(skel->progs.list_blocked, false);
        /* task storage needs kernel BTF, which is what raw_tp does without */
        bpf_map__set_autocreate(skel->maps.task_recs, false);
        bpf_map__set_max_entries(skel->maps.tid_recs, o->task_entries);
    }
    r = offcpu_bpf__load(skel);
    for (uint32_t i = 0; r == 0 && i < ncgroups; i++)
        r = bpf_map_update_elem(bpf_map__fd(skel->maps.trace_cgroups), &i, &cgroup_fds[i], BPF_ANY);
    if (r < 0) {
        r = -errno;
        offcpu_bpf__destroy(skel);
        return r;
    }
    *ret = skel;
    return 0;
}

/* Where libbpf looks for tracefs: its two places */
#define TRACEFS         "/sys/kernel/tracing"
#define DEBUGFS_TRACING "/sys/kernel/debug/tracing"

/* on_mmap_syscall on a perf event on its tracepoint, whose id a child read
 * from a tracefs of its own: NULL, errno set, where that fails */
static struct bpf_link *attach_mmap_unmounted(struct bpf_program *prog)
{
    struct bpf_link *link;
    long id = tracepoint_id_unmounted("syscalls", "sys_exit_mmap");
    int fd = id < 0 ? (int)id : tracepoint_perf_event(id);

    if (fd < 0) {
        errno = -fd;
        return NULL;
    }
    link = bpf_program__attach_perf_event(prog, fd);
    if (!link) {
        int r = errno;

        close(fd);
        errno = r;
    }
    return link;
}

/*
 * on_mmap_syscall is a classic tracepoint (syscalls/sys_exit_mmap): libbpf
 * finds its id through tracefs. Where tracefs is not mounted (a new VM, most
 * containers), the id comes from a tracefs that a child mounts in a mount
 * namespace of its own (tracepoint_id.h): nothing is mounted where anyone
 * sees it. Where the child may not have one (systemd's RestrictNamespaces=),
 * the daemon mounts tracefs in its own, which systemd made the service's.
 */
static struct bpf_link *attach_mmap_syscall(struct bpf_program *prog)
{
    struct bpf_link *link = NULL;
    struct stat st;

    if (stat(TRACEFS "/events", &st) < 0 && stat(DEBUGFS_TRACING "/events", &st) < 0) {
        link = attach_mmap_unmounted(prog);
        if (!link &&
            mount("tracefs", TRACEFS, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0)
            log_info("mounted tracefs on " TRACEFS " (for tracepoint syscalls/sys_exit_mmap)");
    }
    return link ? link : bpf_program__attach(prog);
}

/*
 * Code mapped is seen at fexit of MMAP_FUNCTION where the kernel has
 * trampolines (with tp_btf; not every architecture had them as early): it
 * costs the mmaps only, and needs no tracefs. Else through the syscall
 * tracepoint, which costs every task's every syscall its slow path. Where
 * both fail (a kernel without tracefs), it runs without: a new process's
 * first blocks may then be short until its mappings are read. Said once, and
 * in status.
 */
static void attach_mmap(struct collector *c, const struct collector_options *o)
{
    struct offcpu_bpf *skel = c->skel;
    struct bpf_link *link = NULL;

    if (!o->unwind_dwarf)
        return;
    if (bpf_program__fd(skel->progs.on_mmap_fexit) >= 0) {
        link = bpf_program__attach(skel->progs.on_mmap_fexit);
        if (link) {
            skel->links.on_mmap_fexit = link;
            c->code_mapped_at = "fexit " MMAP_FUNCTION;
            return;
        }
        log_info("fexit/" MMAP_FUNCTION " did not attach (%s): code mapped is seen through "
                 "the tracepoint syscalls/sys_exit_mmap",
                 strerror(errno));
    }
    link = attach_mmap_syscall(skel->progs.on_mmap_syscall);
    if (link) {
        skel->links.on_mmap_syscall = link;
        c->code_mapped_at = "tracepoint syscalls/sys_exit_mmap";
        return;
    }
    c->missing[c->nmissing] =
        "code mapped is not recorded at the mmap (tracepoint syscalls/sys_exit_mmap needs "
        "tracefs: mount -t tracefs tracefs " TRACEFS "): a new process's first blocks may be short";
    log_warning("%s (%s)", c->missing[c->nmissing++], strerror(errno));
}

/* The run-queue wait is the kernel's record (runnable_since in BPF); a
 * kernel that keeps none has all of each off-CPU period blocked. */
static void check_runnable_since(struct collector *c)
{
    int r = kernel_keeps_runnable_since();

    if (r > 0)
        return;
    c->missing[c->nmissing] = "run-queue time is not told from blocked time (the kernel keeps "
                              "no sched_info: CONFIG_SCHED_INFO, set with TASK_DELAY_ACCT or "
                              "SCHEDSTATS)";
    log_warning("%s (%s)", c->missing[c->nmissing++], r < 0 ? strerror(-r) : "not in its BTF");
}

static int load_and_attach(struct collector *c, const struct collector_options *o,
                           const int *cgroup_fds, uint32_t ncgroups)
{
    enum collector_attach attach =
        o->attach == COLLECTOR_ATTACH_RAW_TP ? COLLECTOR_ATTACH_RAW_TP : COLLECTOR_ATTACH_TP_BTF;
    int r;

    r = open_skeleton(o, cgroup_fds, ncgroups, attach, &c->skel);
    /* a missing permission is not a missing feature: raw_tp would fail alike */
    if (r < 0 && r != -EPERM && o->attach == COLLECTOR_ATTACH_AUTO) {
        log_warning("tp_btf/sched_switch did not load (%s), falling back to raw_tp", strerror(-r));
        attach = COLLECTOR_ATTACH_RAW_TP;
        r = open_skeleton(o, cgroup_fds, ncgroups, attach, &c->skel);
    }
    if (r < 0)
        return r;
    c->attach = attach;
    c->gen = 0;
    c->skel->bss->gen = 0;
    c->gen_start_ns = clock_ns(CLOCK_REALTIME);
    r = open_unwind_tables(c, o);
    if (r < 0)
        return r;
    r = offcpu_bpf__attach(c->skel);
    if (r < 0)
        return -errno;
    attach_mmap(c, o);
    check_runnable_since(c);
    return 0;
}

int collector_open(const struct collector_options *o, const int *trace_cgroup_fds,
                   uint32_t ntrace_cgroups, struct collector **ret)
{
    struct collector *c;
    int r, mask;

    libbpf_set_print(libbpf_print);
    c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->ncpus = libbpf_num_possible_cpus();
    c->aggs = (struct indexed){.cap = o->agg_entries, .value_size = sizeof(struct offcpu_value)};
    c->wakes = (struct indexed){.cap = o->wakers ? o->agg_entries : 0,
                                .value_size = sizeof(struct offcpu_wake_value)};
    c->stack_cap = o->stack_entries;
    c->d.keys = calloc(c->aggs.cap, sizeof(*c->d.keys));
    c->d.values = calloc(c->aggs.cap, sizeof(*c->d.values));
    c->aggs.index = calloc(c->aggs.cap, sizeof(*c->aggs.index));
    c->d.stacks = calloc(c->stack_cap, sizeof(*c->d.stacks));
    c->d.stack_hashes = calloc(c->stack_cap, sizeof(*c->d.stack_hashes));
    c->d.index = calloc(c->stack_cap, sizeof(*c->d.index));
    c->d.wake_keys = calloc(c->wakes.cap ?: 1, sizeof(*c->d.wake_keys));
    c->d.wake_values = calloc(c->wakes.cap ?: 1, sizeof(*c->d.wake_values));
    c->wakes.index = calloc(c->wakes.cap ?: 1, sizeof(*c->wakes.index));
    if (c->ncpus <= 0 || !c->d.keys || !c->d.values || !c->aggs.index || !c->d.stacks ||
        !c->d.stack_hashes || !c->d.index || !c->d.wake_keys || !c->d.wake_values ||
        !c->wakes.index) {
        collector_free(c);
        return -ENOMEM;
    }
    mask = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    c->membarrier_global = mask > 0 && (mask & MEMBARRIER_CMD_GLOBAL);
    if (!c->membarrier_global)
        log_warning("membarrier(MEMBARRIER_CMD_GLOBAL) unavailable (nohz_full?): "
                    "waiting 20ms after each flip instead of an RCU grace period");
    r = load_and_attach(c, o, trace_cgroup_fds, ntrace_cgroups);
    if (r == 0)
        r = indexed_map(&c->aggs, c->skel->maps.agg_values0, c->skel->maps.agg_values1);
    if (r == 0)
        r = indexed_map(&c->wakes, c->skel->maps.wake_values0, c->skel->maps.wake_values1);
    if (r < 0) {
        collector_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

struct collector *collector_free(struct collector *c)
{
    if (!c)
        return NULL;
    ring_buffer__free(c->announcements);
    unwind_worker_stop(c->unwind); /* before the maps it writes go */
    if (c->rows)
        munmap(c->rows, c->rows_size);
    indexed_free(&c->aggs);
    indexed_free(&c->wakes);
    offcpu_bpf__destroy(c->skel);
    free(c->d.keys);
    free(c->d.values);
    free(c->d.stacks);
    free(c->d.stack_hashes);
    free(c->d.index);
    free(c->d.wake_keys);
    free(c->d.wake_values);
    free(c);
    return NULL;
}

const char *collector_missing(const struct collector *c, uint32_t i)
{
    return i < c->nmissing ? c->missing[i] : NULL;
}

const char *collector_attach_name(const struct collector *c)
{
    return c->attach == COLLECTOR_ATTACH_RAW_TP ? "raw_tp" : "tp_btf";
}

const char *collector_code_mapped_at(const struct collector *c)
{
    return c->code_mapped_at ? c->code_mapped_at : "none";
}

/*
 * Programs on sched_switch run with interrupts off, so once an RCU grace
 * period has passed after the flip, none of them can still be using the old
 * generation. MEMBARRIER_CMD_GLOBAL waits for exactly that.
 */
static void wait_for_writers(struct collector *c)
{
    if (c->membarrier_global && syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
        return;
    usleep(20 * 1000);
}

/* Read and delete every entry of a hash map; returns the number read. */
static int drain_map(int fd, void *keys, size_t key_size, void *values, size_t value_size,
                     uint32_t cap)
{
    uint64_t batch = 0;
    uint32_t n = 0;
    bool first = true;

    while (n < cap) {
        uint32_t count = cap - n;
        int r = bpf_map_lookup_and_delete_batch(
            fd, first ? NULL : &batch, &batch, (char *)keys + (size_t)n * key_size,
            (char *)values + (size_t)n * value_size, &count, NULL);

        n += count;
        first = false;
        if (r < 0) {
            if (errno == ENOENT) /* no more buckets */
                return n;
            return -errno;
        }
    }
    return n;
}

/* Generation g's indexed entries: their keys, read and deleted from keys_map,
 * and the values they index (zero for an index past the array: none). */
static int indexed_drain(struct indexed *x, const struct bpf_map *keys_map, uint32_t g, void *keys,
                         size_t key_size, void *values)
{
    int n = drain_map(bpf_map__fd(keys_map), keys, key_size, x->index, sizeof(*x->index), x->cap);

    for (int i = 0; i < n; i++) {
        char *to = (char *)values + (size_t)i * x->value_size;

        if (x->index[i] < x->cap)
            memcpy(to, (const char *)x->values[g] + (size_t)x->index[i] * x->value_size,
                   x->value_size);
        else
            memset(to, 0, x->value_size);
    }
    return n;
}

static int cmp_slot(const void *a, const void *b)
{
    const struct drained_slot *x = a, *y = b;

    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static int on_announcement(void *ctx, void *data, size_t size)
{
    struct collector *c = ctx;
    const struct offcpu_announce *a = data;

    if (size >= sizeof(*a))
        c->announce(c->announce_userdata, a);
    return 0;
}

int collector_watch_announcements(struct collector *c, collector_announce_fn fn, void *userdata)
{
    c->announce = fn;
    c->announce_userdata = userdata;
    c->announcements =
        ring_buffer__new(bpf_map__fd(c->skel->maps.announcements), on_announcement, c, NULL);
    if (!c->announcements)
        return -errno;
    return ring_buffer__epoll_fd(c->announcements);
}

int collector_take_announcements(struct collector *c)
{
    int r = ring_buffer__consume(c->announcements);

    return r < 0 ? r : 0;
}

void collector_get_unwind_stats(const struct collector *c, struct unwind_tables_stats *ret)
{
    if (c->unwind)
        unwind_worker_get_stats(c->unwind, ret);
    else
        *ret = (struct unwind_tables_stats){0};
}

/* Run an iterator that writes nothing: reading runs it; 0 where the link is not. */
static int run_iterator(struct bpf_link *link)
{
    _cleanup_close_ int fd = -1;
    char buf[64];
    ssize_t n;

    if (!link)
        return 0;
    fd = bpf_iter_create(bpf_link__fd(link));
    if (fd < 0)
        return -errno;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        ;
    return n < 0 ? -errno : 0;
}

int collector_open_blocked(struct collector *c, uint64_t min_ns)
{
    int fd;

    if (!c->skel->links.list_blocked)
        return -EOPNOTSUPP;
    /* read when the iterator runs, on this thread: no walk can see another's */
    c->skel->bss->blocked_min_ns = min_ns;
    fd = bpf_iter_create(bpf_link__fd(c->skel->links.list_blocked));
    return fd < 0 ? -errno : fd;
}

void collector_release_held(struct collector *c)
{
    c->skel->bss->release_held = true;
}

int collector_flip_and_drain(struct collector *c, struct drained **ret)
{
    uint32_t old = c->gen;
    int64_t now;
    int n, m;

    /* the time of tasks still blocked, then of blocks held for their rows,
     * to the generation about to end (raw_tp: no task storage, none held) */
    n = run_iterator(c->skel->links.charge_blocked);
    if (n < 0)
        log_warning("charging tasks still blocked: %s", strerror(-n));
    n = run_iterator(c->skel->links.charge_deferred);
    if (n < 0)
        log_warning("charging blocks held for their rows: %s", strerror(-n));
    c->gen = old + 1;
    c->skel->bss->gen = c->gen;
    now = clock_ns(CLOCK_REALTIME);
    wait_for_writers(c);
    if (c->unwind)
        unwind_worker_grace_period(c->unwind);

    n = indexed_drain(&c->aggs, old & 1 ? c->skel->maps.agg1 : c->skel->maps.agg0, old & 1,
                      c->d.keys, sizeof(*c->d.keys), c->d.values);
    if (n < 0)
        return log_error_errno(n, "draining aggregates of generation %u: %s", old, strerror(-n));
    /* every index of the generation drained is free again */
    c->skel->bss->agg_used[old & 1] = 0;
    c->d.nwakes = 0;
    if (c->wakes.cap) {
        int w = indexed_drain(&c->wakes, old & 1 ? c->skel->maps.wake1 : c->skel->maps.wake0,
                              old & 1, c->d.wake_keys, sizeof(*c->d.wake_keys), c->d.wake_values);

        if (w < 0)
            return log_error_errno(w, "draining wakers of generation %u: %s", old, strerror(-w));
        c->skel->bss->wake_used[old & 1] = 0;
        c->d.nwakes = w;
    }
    /* last: the stacks of both maps are in it */
    m = drain_map(bpf_map__fd(old & 1 ? c->skel->maps.stacks1 : c->skel->maps.stacks0),
                  c->d.stack_hashes, sizeof(*c->d.stack_hashes), c->d.stacks, sizeof(*c->d.stacks),
                  c->stack_cap);
    if (m < 0)
        return log_error_errno(m, "draining stacks of generation %u: %s", old, strerror(-m));

    c->d.n = n;
    c->d.nstacks = m;
    drained_index_stacks(&c->d);
    c->d.start_ns = c->gen_start_ns;
    c->d.end_ns = now;
    c->gen_start_ns = now;
    *ret = &c->d;
    return 0;
}

void drained_index_stacks(struct drained *d)
{
    for (size_t i = 0; i < d->nstacks; i++)
        d->index[i] = (struct drained_slot){.hash = d->stack_hashes[i], .idx = i};
    qsort(d->index, d->nstacks, sizeof(*d->index), cmp_slot);
}

const struct offcpu_stack *drained_find_stack(const struct drained *d, uint64_t hash)
{
    struct drained_slot key = {.hash = hash};
    bool found;
    size_t i;

    if (hash < OFFCPU_STACK_FIRST_HASH)
        return NULL;
    i = sorted_search(d->index, d->nstacks, sizeof(*d->index), &key, cmp_slot, &found);
    return found ? &d->stacks[d->index[i].idx] : NULL;
}

/* Each BPF stat: its name in Status and the metrics, and whether it counts a
 * loss (what an operator alerts on) or an event. */
static const struct {
    const char *name;
    enum collector_counter_kind kind;
} counters[OFFCPU_STAT__MAX] = {
    [OFFCPU_STAT_SWITCHES] = {"switches", COLLECTOR_EVENT},
    [OFFCPU_STAT_ACCOUNTED] = {"accounted", COLLECTOR_EVENT},
    [OFFCPU_STAT_USER_STACK_EFAULT] = {"user_stack_efault", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_USER_STACK_ERROR] = {"user_stack_error", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_KERNEL_STACK_ERROR] = {"kernel_stack_error", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_STACK_MAP_FULL] = {"stack_map_full", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_STACK_COLLISION] = {"stack_collision", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_AGG_MAP_FULL] = {"agg_map_full", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_AGG_LOST_NS] = {"agg_lost_ns", COLLECTOR_LOST_NS},
    [OFFCPU_STAT_NO_SWITCH_OUT] = {"no_switch_out", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_STORAGE_FAIL] = {"storage_fail", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_ANNOUNCE_LOST] = {"announce_lost", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_WALKS] = {"stack_walks", COLLECTOR_EVENT},
    [OFFCPU_STAT_CACHE_HITS] = {"stack_cache_hits", COLLECTOR_EVENT},
    [OFFCPU_STAT_CACHE_CHECKS] = {"stack_cache_checks", COLLECTOR_EVENT},
    [OFFCPU_STAT_CACHE_MISMATCH] = {"stack_cache_mismatches", COLLECTOR_EVENT},
    [OFFCPU_STAT_OVER_BUDGET] = {"over_cgroup_share", COLLECTOR_EVENT},
    [OFFCPU_STAT_UNWIND_WALKS] = {"unwind_walks", COLLECTOR_EVENT},
    [OFFCPU_STAT_UNWIND_FRAMES] = {"unwind_frames", COLLECTOR_EVENT},
    [OFFCPU_STAT_UNWIND_ENTRY] = {"unwind_reached_entry", COLLECTOR_EVENT},
    [OFFCPU_STAT_UNWIND_END] = {"unwind_ended_null", COLLECTOR_EVENT},
    [OFFCPU_STAT_UNWIND_NO_TABLE] = {"unwind_no_table", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_UNWIND_UNKNOWN] = {"unwind_unknown_cfi", COLLECTOR_EVENT},
    [OFFCPU_STAT_UNWIND_READ] = {"unwind_read_error", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_UNWIND_DEPTH] = {"unwind_truncated", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_UNWIND_FP] = {"unwind_frame_pointer_frames", COLLECTOR_EVENT},
    [OFFCPU_STAT_UNWIND_VMA] = {"unwind_vma_frames", COLLECTOR_EVENT},
    [OFFCPU_STAT_WAKES] = {"wakes", COLLECTOR_EVENT},
    [OFFCPU_STAT_WAKE_MAP_FULL] = {"wake_map_full", COLLECTOR_LOST_EVENT},
    /* not off-CPU time lost: the aggregate has it, only its waker is not
     * known; an event counter (of ns), apart from offcpud_lost_seconds_total */
    [OFFCPU_STAT_WAKE_LOST_NS] = {"wake_lost_ns", COLLECTOR_EVENT},
    [OFFCPU_STAT_WAKE_NO_CONTEXT] = {"wake_context_unknown", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_WAKER_WALKS] = {"waker_walks", COLLECTOR_EVENT},
    [OFFCPU_STAT_WAKER_CACHE_HITS] = {"waker_cache_hits", COLLECTOR_EVENT},
    [OFFCPU_STAT_WAKER_CACHE_CHECKS] = {"waker_cache_checks", COLLECTOR_EVENT},
    [OFFCPU_STAT_WAKER_CACHE_MISMATCH] = {"waker_cache_mismatches", COLLECTOR_EVENT},
    [OFFCPU_STAT_WAKE_CONTEXT_DISAGREE] = {"wake_context_disagree", COLLECTOR_EVENT},
    [OFFCPU_STAT_UNWIND_MAPPED] = {"unwind_mapped_frames", COLLECTOR_EVENT},
    [OFFCPU_STAT_UNWIND_RESUMED] = {"unwind_resumed", COLLECTOR_EVENT},
    [OFFCPU_STAT_UNWIND_RESUMED_SHORT] = {"unwind_resumed_short", COLLECTOR_EVENT},
    [OFFCPU_STAT_UNWIND_SIGNAL] = {"unwind_signal_frames", COLLECTOR_EVENT},
    [OFFCPU_STAT_CHARGES_DEFERRED] = {"charges_deferred", COLLECTOR_EVENT},
    [OFFCPU_STAT_DEFERRED_SHORT] = {"deferred_charged_short", COLLECTOR_EVENT},
    [OFFCPU_STAT_DEFER_FULL] = {"defer_full", COLLECTOR_EVENT},
    [OFFCPU_STAT_PY_WALKS] = {"python_walks", COLLECTOR_EVENT},
    [OFFCPU_STAT_PY_FRAMES] = {"python_frames", COLLECTOR_EVENT},
    [OFFCPU_STAT_PY_TRUNCATED] = {"python_truncated", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_PY_READ_ERROR] = {"python_read_error", COLLECTOR_LOST_EVENT},
    [OFFCPU_STAT_PY_NO_TSTATE] = {"python_no_thread_state", COLLECTOR_EVENT},
    [OFFCPU_STAT_PY_GIL_WAITS] = {"python_gil_waits", COLLECTOR_EVENT},
};

int collector_read_counters(struct collector *c, struct collector_counter *ret)
{
    _cleanup_free_ struct offcpu_stats *percpu = calloc(c->ncpus, sizeof(*percpu));
    uint32_t zero = 0;

    if (!percpu)
        return -ENOMEM;
    if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.stats), &zero, percpu) < 0)
        return -errno;
    for (int i = 0; i < OFFCPU_STAT__MAX; i++) {
        ret[i] = (struct collector_counter){.name = counters[i].name, .kind = counters[i].kind};
        for (int cpu = 0; cpu < c->ncpus; cpu++)
            ret[i].value += percpu[cpu].v[i];
    }
    return 0;
}

static double ratio(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0.0;
}

void collector_stack_cache_rates(const struct collector_counter *v, double *ret_hit_rate,
                                 double *ret_mismatch_rate)
{
    uint64_t checks = v[OFFCPU_STAT_CACHE_CHECKS].value;

    *ret_hit_rate = ratio(v[OFFCPU_STAT_CACHE_HITS].value, v[OFFCPU_STAT_SWITCHES].value);
    *ret_mismatch_rate = checks ? ratio(v[OFFCPU_STAT_CACHE_MISMATCH].value, checks) : -1.0;
}
