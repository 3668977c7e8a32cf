/* SPDX-License-Identifier: GPL-2.0-only */
#include "unwind_tables.h"

#include <bpf/bpf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "array.h"
#include "cfi_digest.h"
#include "clock.h"
#include "file_cache.h"
#include "macro.h"
#include "proc_maps.h"
#include "python_layout.h"
#include "row_space.h"
#include "sorted_search.h"
#include "unwind_budget.h"
#include "unwind_rows.h"

/* Files known at most (with rows or without): beyond, frame pointers. */
#define TABLE_FILES_MAX 65536

/* What lingers at most (unwind-linger): files, and a share of the rows'
 * room, so that rows kept for a program that may start again never keep
 * out the rows of one that runs now. Past either the oldest go first. */
#define LINGER_FILES_MAX    1024
#define LINGER_ROWS_DIVISOR 4

/* A run of rows in the array, named by one file or more whose CFI is the
 * same (cfi_digest.h): copies of a program, an image's files in two
 * containers. It goes with the last. */
struct table_rows {
    uint32_t first, count;
    unsigned files; /* table_files naming it */
};

struct table_file {
    struct file_key key;
    struct offcpu_unwind_file_key kernel_key; /* the same file, as the BPF side names it */
    struct table_rows *rows;                  /* NULL: none */
    struct unwind_segment segs[UNWIND_SEGMENTS_MAX];
    size_t nsegs;
    unsigned users;     /* process tables naming it */
    int64_t idle_since; /* CLOCK_MONOTONIC: when the last table naming it went (0: in use) */
    struct python_layout python;     /* runtime_vaddr 0: not CPython */
    uint8_t digest[CFI_DIGEST_SIZE]; /* of its CFI, if digested */
    bool digested;
};

struct table_proc {
    pid_t pid;
    struct table_file **files; /* one per mapping with a file, repeats included */
    size_t nfiles;
    uint32_t python_layout; /* of the CPython it runs (see python_layout.h) */
    bool python;            /* it runs CPython */
};

/* Rows no table names any more, and when: reused two grace periods later. */
struct freed_run {
    struct row_run run;
    uint64_t at; /* grace periods counted when freed */
};

struct unwind_tables {
    struct offcpu_unwind_row *rows;
    int procs_fd, files_fd;
    int python_fd; /* the BPF map of CPython processes, or -1 */
    /* the collector's python_gen (mmapped): bumped at each process marked,
     * so that tasks that found theirs unmarked look again */
    uint32_t *python_gen;
    struct row_space space;
    struct freed_run *freed;
    size_t nfreed, freed_cap;
    uint64_t grace_periods;    /* as last told */
    struct table_file **files; /* sorted by key */
    size_t nfiles, files_cap;
    struct table_proc *procs; /* sorted by pid */
    size_t nprocs, procs_cap;
    struct unwind_tables_stats stats;
    struct offcpu_unwind_process table; /* the one being written */
    /* a forked process's parent's, as the BPF side has it (table_inherit) */
    struct offcpu_unwind_process parent_table;
    const atomic_bool *stop; /* set when the daemon stops */
    int64_t stop_at;         /* CLOCK_MONOTONIC: reading stops then (0: never) */
    int64_t linger_ns;
};

int unwind_tables_new(struct offcpu_unwind_row *rows, uint32_t rows_max, int procs_fd, int files_fd,
                      int64_t linger_ns, struct unwind_tables **ret)
{
    struct unwind_tables *t;
    int r = cfi_digest_init(); /* here, before the unwind thread starts */

    if (r < 0)
        return r;
    t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->rows = rows;
    t->procs_fd = procs_fd;
    t->files_fd = files_fd;
    t->python_fd = -1;
    t->linger_ns = linger_ns;
    row_space_init(&t->space, rows_max);
    t->stats.rows_max = rows_max;
    *ret = t;
    return 0;
}

struct unwind_tables *unwind_tables_free(struct unwind_tables *t)
{
    if (!t)
        return NULL;
    for (size_t i = 0; i < t->nprocs; i++)
        free(t->procs[i].files);
    for (size_t i = 0; i < t->nfiles; i++) {
        if (t->files[i]->rows && --t->files[i]->rows->files == 0)
            free(t->files[i]->rows);
        free(t->files[i]);
    }
    free(t->procs);
    free(t->files);
    free(t->freed);
    row_space_done(&t->space);
    free(t);
    return NULL;
}

void unwind_tables_set_python_map(struct unwind_tables *t, int python_fd, uint32_t *python_gen)
{
    t->python_fd = python_fd;
    t->python_gen = python_gen;
}

void unwind_tables_set_stop(struct unwind_tables *t, const atomic_bool *stop)
{
    t->stop = stop;
}

static int compare_file_to_key(const void *elem, const void *key)
{
    return file_key_compare(&(*(struct table_file *const *)elem)->key, key);
}

static int compare_proc_to_pid(const void *elem, const void *key)
{
    pid_t a = ((const struct table_proc *)elem)->pid, b = *(const pid_t *)key;

    return a < b ? -1 : a > b;
}

/* Let the walk find the file's rows from a VMA (its first executable segment). */
static void publish_file(struct unwind_tables *t, const struct table_file *f)
{
    struct offcpu_unwind_file v = {
        .seg_offset = f->segs[0].offset,
        .seg_size = f->segs[0].size,
        .seg_vaddr = f->segs[0].vaddr,
        .row_first = f->rows->first,
        .row_count = f->rows->count,
    };

    /* full: those files are walked through process tables alone */
    bpf_map_update_elem(t->files_fd, &f->kernel_key, &v, BPF_ANY);
}

/* Count a file whose rows were refused, and name it among the last. */
static void count_refused(struct unwind_tables *t, pid_t pid, const char *path, int error)
{
    struct unwind_tables_stats *s = &t->stats;
    struct unwind_refused *e;
    char proc[32];
    struct stat st;

    t->stats.files_refused++;
    if (s->nrefused == UNWIND_REFUSED_KEPT)
        memmove(&s->refused[0], &s->refused[1], --s->nrefused * sizeof(s->refused[0]));
    e = &s->refused[s->nrefused++];
    /* as bytes, cut to fit: replies escape names (name_escape.h) */
    snprintf(e->path, sizeof(e->path), "%s", path ?: "?");
    e->pid = pid;
    snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
    e->uid = stat(proc, &st) == 0 ? st.st_uid : (uid_t)-1;
    e->error = error;
}

/* A file known, with rows, whose CFI has that digest; NULL if none. A scan:
 * most files differ in the digest's first bytes, and a scan of 65,536 costs
 * less than the digest of one new file's CFI. */
static const struct table_file *file_alike(const struct unwind_tables *t,
                                           const uint8_t digest[CFI_DIGEST_SIZE])
{
    for (size_t i = 0; i < t->nfiles; i++)
        if (t->files[i]->rows && t->files[i]->digested &&
            memcmp(t->files[i]->digest, digest, CFI_DIGEST_SIZE) == 0)
            return t->files[i];
    return NULL;
}

/* f's rows, of the file open on fd (path, as pid sees it, to find its debug
 * file): those of a file known with the same CFI (*alike), else derived into
 * rows. */
static int rows_of(struct unwind_tables *t, int fd, pid_t pid, const char *path,
                   struct table_file *f, struct unwind_rows *rows, const struct table_file **alike)
{
    struct unwind_budget budget = unwind_budget_for_file(t->stop, t->stop_at);
    struct unwind_source src;
    int r = unwind_source_open(fd, pid, path, &src);

    *alike = NULL;
    *rows = (struct unwind_rows){0};
    if (r < 0)
        return r;
    f->digested = cfi_digest(src.elf, src.debug, f->digest) == 0;
    if (f->digested)
        *alike = file_alike(t, f->digest);
    if (!*alike)
        r = unwind_rows_derive(src.elf, src.debug, &budget, rows);
    unwind_source_close(&src);
    return r;
}

/* A run of the array for rows, with room for them; NULL if there is none. */
static struct table_rows *rows_load(struct unwind_tables *t, const struct unwind_rows *rows)
{
    struct table_rows *run = calloc(1, sizeof(*run));
    int64_t first = run ? row_space_take(&t->space, (uint32_t)rows->n) : -1;

    if (first < 0) {
        t->stats.files_over_budget += run != NULL;
        free(run);
        return NULL;
    }
    memcpy(&t->rows[first], rows->rows, rows->n * sizeof(*rows->rows));
    *run = (struct table_rows){.first = (uint32_t)first, .count = (uint32_t)rows->n, .files = 1};
    t->stats.rows += rows->n;
    return run;
}

/* One file less names run: with the last, its rows are freed (reused two
 * grace periods later). -ENOMEM if they cannot be: they stay. */
static int rows_release(struct unwind_tables *t, struct table_rows *run)
{
    if (run->files > 1) {
        run->files--;
        return 0;
    }
    if (array_reserve(&t->freed, &t->freed_cap, t->nfreed + 1, sizeof(*t->freed), 16) < 0)
        return -ENOMEM;
    t->freed[t->nfreed++] = (struct freed_run){.run = {.first = run->first, .count = run->count},
                                               .at = t->grace_periods};
    t->stats.rows -= run->count;
    free(run);
    return 0;
}

/* Read the rows of the file open on fd (path, as pid sees it, to find its
 * debug file) into the array, if there is room, or name those of a file with
 * the same CFI. -ECANCELED when the reading was stopped: the file is not
 * known then. */
static int load_rows(struct unwind_tables *t, int fd, pid_t pid, const char *path,
                     struct table_file *f)
{
    int64_t started = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    const struct table_file *alike;
    struct unwind_rows rows;
    int r;

    f->rows = NULL;
    r = rows_of(t, fd, pid, path, f, &rows, &alike);
    if (r == -ECANCELED)
        return r;
    if (alike) {
        t->stats.files_shared++;
        f->rows = alike->rows;
        f->rows->files++;
        memcpy(f->segs, alike->segs, sizeof(f->segs));
        f->nsegs = alike->nsegs;
    } else {
        t->stats.files_read++;
        if (r == -ENODATA || r == -ENOEXEC)
            t->stats.files_without_cfi++;
        else if (r < 0)
            count_refused(t, pid, path, r);
        if (r >= 0) {
            f->rows = rows_load(t, &rows);
            t->stats.files_debug_frame += f->rows && rows.debug_frame;
            memcpy(f->segs, rows.segs, sizeof(f->segs));
            f->nsegs = rows.nsegs;
        }
        unwind_rows_done(&rows);
    }
    t->stats.build_ns += (uint64_t)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - started);
    if (f->rows) {
        t->stats.files++;
        publish_file(t, f);
    }
    return 0;
}

/* The file behind mapping m of pid, its rows read if new; NULL if it cannot
 * be opened or known. */
/* Where the file whose stat is st is among the files known: its index, or
 * (*found false) where it would go. */
static size_t file_index(const struct unwind_tables *t, const struct stat *st, bool *found)
{
    struct file_key key = file_key_from_stat(st);

    return sorted_search(t->files, t->nfiles, sizeof(*t->files), &key, compare_file_to_key, found);
}

/*
 * A file some table holds now, by the device and inode mapping m names, if
 * it is known: while a table holds it, the mapping of that table's process
 * keeps the inode that file's (a table goes at the pass after its process
 * is gone), so it need not be opened to be told. (The walk finds files by
 * the same two numbers through a VMA, and only while a table holds them.)
 * A new process's every table read opened and checked each file it maps:
 * most of what an exec storm cost.
 */
static struct table_file *file_held(const struct unwind_tables *t, const struct proc_map *m)
{
    struct file_key key = {.dev = makedev(m->dev_major, m->dev_minor), .ino = m->inode};
    bool found;
    size_t i =
        sorted_search(t->files, t->nfiles, sizeof(*t->files), &key, compare_file_to_key, &found);

    /* the versions of that inode (size, mtime) lie together from there */
    for (; i < t->nfiles && t->files[i]->key.dev == key.dev && t->files[i]->key.ino == key.ino; i++)
        if (t->files[i]->users > 0)
            return t->files[i];
    return NULL;
}

static struct table_file *file_of(struct unwind_tables *t, pid_t pid, const struct proc_map *m)
{
    _cleanup_close_ int fd = -EBADF;
    struct table_file *f = file_held(t, m);
    struct stat st;
    bool found;
    size_t i;

    if (f) {
        t->stats.files_held_known++;
        return f;
    }
    fd = file_cache_open(pid, m);
    if (fd < 0 || fstat(fd, &st) < 0)
        return NULL;
    i = file_index(t, &st, &found);
    if (found)
        return t->files[i];
    if (t->nfiles >= TABLE_FILES_MAX ||
        array_reserve(&t->files, &t->files_cap, t->nfiles + 1, sizeof(*t->files), 64) < 0)
        return NULL;
    f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->key = file_key_from_stat(&st);
    f->kernel_key = (struct offcpu_unwind_file_key){
        .dev = (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev), .ino = st.st_ino};
    if (load_rows(t, fd, pid, m->path, f) < 0) {
        free(f);
        return NULL;
    }
    /* a file that cannot be read as ELF is no CPython either */
    (void)python_layout_read(fd, &f->python);
    memmove(&t->files[i + 1], &t->files[i], (t->nfiles - i) * sizeof(*t->files));
    t->files[i] = f;
    t->nfiles++;
    return f;
}

/* The rows of f go, and f: no table names it. */
static void file_unload(struct unwind_tables *t, struct table_file *f)
{
    bool found;
    size_t i;

    if (f->idle_since) {
        t->stats.files_lingering--;
        t->stats.rows_lingering -= f->rows ? f->rows->count : 0;
        f->idle_since = 0;
    }
    if (f->rows) {
        bpf_map_delete_elem(t->files_fd, &f->kernel_key);
        if (rows_release(t, f->rows) < 0)
            return; /* kept loaded rather than reused too soon */
        f->rows = NULL;
        t->stats.files--;
    }
    i = sorted_search(t->files, t->nfiles, sizeof(*t->files), &f->key, compare_file_to_key, &found);
    if (found) {
        memmove(&t->files[i], &t->files[i + 1], (t->nfiles - i - 1) * sizeof(*t->files));
        t->nfiles--;
    }
    free(f);
}

/* The file that has lingered longest; NULL if none does. */
static struct table_file *oldest_lingering(const struct unwind_tables *t)
{
    struct table_file *oldest = NULL;

    for (size_t i = 0; i < t->nfiles; i++)
        if (t->files[i]->idle_since && (!oldest || t->files[i]->idle_since < oldest->idle_since))
            oldest = t->files[i];
    return oldest;
}

/*
 * No table names f any more: it lingers, rows and all, for a process that
 * maps it again (the same file: its key is its identity, size and mtime).
 * The walk does not find it from a VMA meanwhile: once deleted, the file's
 * inode may be another's, so only a table read from a live process names
 * its rows again (file_reuse).
 */
static void file_linger(struct unwind_tables *t, struct table_file *f)
{
    struct table_file *oldest;

    if (f->rows)
        bpf_map_delete_elem(t->files_fd, &f->kernel_key);
    f->idle_since = clock_ns(CLOCK_MONOTONIC);
    t->stats.files_lingering++;
    t->stats.rows_lingering += f->rows ? f->rows->count : 0;
    while ((t->stats.files_lingering > LINGER_FILES_MAX ||
            t->stats.rows_lingering > t->stats.rows_max / LINGER_ROWS_DIVISOR) &&
           (oldest = oldest_lingering(t)))
        file_unload(t, oldest);
}

/* A table names f again: if it lingered, its rows serve once more. */
static void file_reuse(struct unwind_tables *t, struct table_file *f)
{
    if (!f->idle_since)
        return;
    t->stats.files_lingering--;
    t->stats.rows_lingering -= f->rows ? f->rows->count : 0;
    t->stats.linger_reuses++;
    f->idle_since = 0;
    if (f->rows)
        publish_file(t, f);
}

/* One process table less names f: once none does, it lingers or goes. */
static void file_release(struct unwind_tables *t, struct table_file *f)
{
    if (--f->users)
        return;
    if (t->linger_ns > 0)
        file_linger(t, f);
    else
        file_unload(t, f);
}

static void proc_release_files(struct unwind_tables *t, struct table_proc *p)
{
    for (size_t i = 0; i < p->nfiles; i++)
        file_release(t, p->files[i]);
    free(p->files);
    p->files = NULL;
    p->nfiles = 0;
}

/* The mapping's entry in the table; its file (held) into files. */
static void fill_mapping(struct unwind_tables *t, pid_t pid, const struct proc_map *m,
                         struct offcpu_unwind_mapping *e, struct table_file **files, size_t *nfiles)
{
    struct unwind_rows segs = {0};
    struct table_file *f;
    uint64_t vaddr;

    *e = (struct offcpu_unwind_mapping){.start = m->start, .end = m->end};
    if (m->kind != PROC_MAP_FILE)
        return; /* JIT code, the vdso: frame pointers */
    f = file_of(t, pid, m);
    if (!f)
        return;
    if (f->users++ == 0)
        file_reuse(t, f);
    files[(*nfiles)++] = f;
    memcpy(segs.segs, f->segs, sizeof(segs.segs));
    segs.nsegs = f->nsegs;
    if (!f->rows || unwind_rows_vaddr(&segs, m->pgoff, &vaddr) < 0)
        return;
    e->bias = m->start - vaddr;
    e->row_first = f->rows->first;
    e->row_count = f->rows->count;
}

/* Field n (from 4 on: numbers) of /proc/pid/stat. */
static int proc_stat_field(pid_t pid, int n, uint64_t *ret)
{
    _cleanup_fclose_ FILE *f = NULL;
    char path[64], line[1024], *p;
    int field = 2; /* past "pid (comm)" */

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return -errno;
    if (!fgets(line, sizeof(line), f))
        return -EIO;
    /* the name may hold anything, ')' too: the fields start after the last */
    p = strrchr(line, ')');
    for (; p && field < n; field++)
        p = strchr(p + 1, ' ');
    if (!p || sscanf(p, " %" SCNu64, ret) != 1)
        return -EIO;
    return 0;
}

/* When pid started, in the boot-time nanoseconds the kernel keeps: /proc
 * says it in clock ticks, so within [*from, *to). */
static int process_start(pid_t pid, __u64 *from, __u64 *to)
{
    uint64_t tick = NSEC_PER_SEC / (uint64_t)sysconf(_SC_CLK_TCK), ticks;
    int r = proc_stat_field(pid, 22, &ticks);

    if (r < 0)
        return r;
    *from = ticks * tick;
    *to = *from + tick;
    return 0;
}

/* The BPF side walks the Python frames of pid's threads if its layout is
 * known; a process that exec'd another program, or whose CPython's version
 * has no layout, is forgotten there. */
static void python_publish(struct unwind_tables *t, pid_t pid,
                           const struct offcpu_python_process *py)
{
    if (t->python_fd < 0)
        return;
    if (py->layout != OFFCPU_PYTHON_NONE) {
        if (bpf_map_update_elem(t->python_fd, &pid, py, BPF_ANY) == 0)
            __atomic_fetch_add(t->python_gen, 1, __ATOMIC_RELEASE);
    } else
        bpf_map_delete_elem(t->python_fd, &pid);
}

/* No table of pid will come (see OFFCPU_UNWIND_FULL): walks stop asking,
 * and short blocks are not held for rows. */
static void mark_unreadable(struct unwind_tables *t, pid_t pid, uint64_t mm)
{
    t->table = (struct offcpu_unwind_process){.mm = mm, .asked = OFFCPU_UNWIND_FULL};
    bpf_map_update_elem(t->procs_fd, &pid, &t->table, BPF_ANY);
}

/* The CPython layout of the file behind m: the cached file's, else read from
 * the file itself (a few thousand dynamic symbols, not its rows). */
static int python_layout_of_mapping(struct unwind_tables *t, pid_t pid, const struct proc_map *m,
                                    struct python_layout *ret)
{
    _cleanup_close_ int fd = -EBADF;
    const struct table_file *held = file_held(t, m);
    struct stat st;
    bool found;
    size_t i;

    if (held) {
        *ret = held->python;
        return 0;
    }
    fd = file_cache_open(pid, m);
    if (fd < 0 || fstat(fd, &st) < 0)
        return -errno;
    i = file_index(t, &st, &found);
    if (found) {
        *ret = t->files[i]->python;
        return 0;
    }
    return python_layout_read(fd, ret);
}

/*
 * The CPython pid runs (its program's or a library's, the first mapped), found
 * before any rows are read: the rows of libpython alone take long, and every
 * block of its threads until the process is marked goes without Python frames.
 * Returns its layout (runtime_vaddr 0: none) and fills py.
 */
static struct python_layout python_of_maps(struct unwind_tables *t, pid_t pid,
                                           const struct proc_maps *maps,
                                           struct offcpu_python_process *py)
{
    struct python_layout python = {0};
    const struct proc_map *last = NULL;
    uint64_t bias;

    for (size_t k = 0; k < maps->n; k++) {
        const struct proc_map *m = &maps->maps[k];

        /* a file's mappings come one after another: one look each */
        if (m->kind != PROC_MAP_FILE ||
            (last && last->inode == m->inode && last->dev_major == m->dev_major &&
             last->dev_minor == m->dev_minor))
            continue;
        last = m;
        if (python_layout_of_mapping(t, pid, m, &python) < 0 || !python.runtime_vaddr)
            continue;
        if (python_layout_bias(&python, m->pgoff, m->start, &bias) < 0) {
            python.runtime_vaddr = 0;
            continue;
        }
        py->runtime = python.runtime_vaddr + bias;
        py->layout = python.layout;
        if (python_layout_offsets(python.layout))
            py->at = *python_layout_offsets(python.layout);
        break;
    }
    return python;
}

/*
 * Remember that pid's table (written to the BPF map with result r) holds
 * files, which it takes; if it was not written, or cannot be remembered, the
 * table must not stay. The table it replaces lets go of its files after the
 * new one holds them: a file in both is never unloaded in between.
 */
static int proc_remember(struct unwind_tables *t, pid_t pid, int r, struct table_file **files,
                         size_t nfiles, bool python, uint32_t python_layout)
{
    struct table_proc *p;
    bool found;
    size_t i;

    i = sorted_search(t->procs, t->nprocs, sizeof(*t->procs), &pid, compare_proc_to_pid, &found);
    if (!found && r == 0) {
        if (array_reserve(&t->procs, &t->procs_cap, t->nprocs + 1, sizeof(*t->procs), 64) < 0) {
            r = -ENOMEM;
        } else {
            memmove(&t->procs[i + 1], &t->procs[i], (t->nprocs - i) * sizeof(*t->procs));
            t->procs[i] = (struct table_proc){.pid = pid};
            t->nprocs++;
            found = true;
        }
    }
    if (!found) {
        bpf_map_delete_elem(t->procs_fd, &pid);
        for (size_t k = 0; k < nfiles; k++)
            file_release(t, files[k]);
        free(files);
        return r < 0 ? r : -ENOMEM;
    }
    p = &t->procs[i];
    proc_release_files(t, p);
    p->files = files;
    p->nfiles = nfiles;
    p->python = python;
    p->python_layout = python_layout;
    t->stats.processes = t->nprocs;
    return 0;
}

/* pid's table is from's, as the BPF side has it for pid now (of address
 * space mm): pid holds from's files, and its CPython too (the same runtime at
 * the same address). */
static int table_copy(struct unwind_tables *t, pid_t pid, const struct table_proc *from,
                      uint64_t mm)
{
    struct table_file **files;
    struct offcpu_python_process py;

    if (from->python && t->python_fd >= 0) {
        if (bpf_map_lookup_elem(t->python_fd, &from->pid, &py) < 0)
            return -ESTALE;
        py.mm = mm;
        python_publish(t, pid, &py);
    }
    files = calloc(from->nfiles ?: 1, sizeof(*files));
    if (!files)
        return -ENOMEM;
    for (size_t k = 0; k < from->nfiles; k++) {
        files[k] = from->files[k];
        files[k]->users++; /* held by from: not lingering */
    }
    t->stats.tables_inherited++;
    return proc_remember(t, pid, 0, files, from->nfiles, from->python, from->python_layout);
}

/*
 * A process forked with its parent's table (inherit_table): the BPF side
 * copied the table it had for the parent, which this thread wrote from the
 * files it holds for the parent, unless it replaced it since (the request to
 * read the parent again lies behind this one on the ring if it was made
 * before the copy). The child holds the same files.
 */
static int table_inherit(struct unwind_tables *t, pid_t pid, pid_t parent, uint64_t mm)
{
    const struct offcpu_unwind_process *mine = &t->table, *theirs = &t->parent_table;
    bool found;
    size_t i;

    i = sorted_search(t->procs, t->nprocs, sizeof(*t->procs), &parent, compare_proc_to_pid, &found);
    if (!found || bpf_map_lookup_elem(t->procs_fd, &pid, &t->table) < 0 ||
        bpf_map_lookup_elem(t->procs_fd, &parent, &t->parent_table) < 0)
        return -ESTALE;
    if (mine->mm != mm || mine->n != theirs->n || mine->read_ns != theirs->read_ns ||
        mine->n > OFFCPU_UNWIND_MAPPINGS_MAX ||
        memcmp(mine->maps, theirs->maps, mine->n * sizeof(mine->maps[0])) != 0)
        return -ESTALE;
    return table_copy(t, pid, &t->procs[i], mm);
}

/*
 * A process without a table yet that runs in its parent's very address
 * space (a child of vfork or posix_spawn, how Python, Go and glibc start
 * programs, until it execs) takes its parent's table rather than reading the
 * same mappings again. The walk that asked names that parent (vfork_parent);
 * kcmp tells whether the two share it still. Asks are taken in order: an
 * exec of the parent is read before, so its table is of the address space
 * it has now. If that table is not up to date for what pid's walk met, pid
 * asks again, and is read.
 */
static int table_share(struct unwind_tables *t, pid_t pid, pid_t parent, uint64_t mm)
{
    bool found;
    size_t i;

    if (!mm || parent <= 0 || parent == pid)
        return -ESTALE;
    sorted_search(t->procs, t->nprocs, sizeof(*t->procs), &pid, compare_proc_to_pid, &found);
    if (found)
        return -ESTALE;
    i = sorted_search(t->procs, t->nprocs, sizeof(*t->procs), &parent, compare_proc_to_pid, &found);
    if (!found || syscall(SYS_kcmp, pid, parent, KCMP_VM, 0, 0) != 0 ||
        bpf_map_lookup_elem(t->procs_fd, &parent, &t->table) < 0)
        return -ESTALE;
    /* read at start, the parent's table may not know its address space */
    t->table.mm = mm;
    if (bpf_map_update_elem(t->procs_fd, &pid, &t->table, BPF_ANY) < 0)
        return -errno;
    return table_copy(t, pid, &t->procs[i], mm);
}

/*
 * Is an ask for pid's table of address space mm replaced by a later one?
 * So when the BPF side's table for pid stands, empty and asked for, for
 * another address space: an exec made it so (ask_table_at_exec), or a walk
 * in the new one (has_table), each asking again behind this ask. The
 * common case is a child of vfork or posix_spawn that blocked in its
 * parent's address space and exec'd before its ask was taken: read now, it
 * would be the new image's mappings, labelled with the old address space,
 * and read again at the exec's ask.
 */
static bool ask_superseded(struct unwind_tables *t, pid_t pid, uint64_t mm)
{
    const struct offcpu_unwind_process *now = &t->table;

    if (!mm || bpf_map_lookup_elem(t->procs_fd, &pid, &t->table) < 0)
        return false;
    return now->mm && now->mm != mm && now->n == 0 && now->asked == OFFCPU_UNWIND_ASKED;
}

int unwind_tables_load(struct unwind_tables *t, pid_t pid, pid_t parent, uint64_t mm)
{
    _cleanup_free_ struct table_file **files = NULL;
    struct offcpu_unwind_process *v = &t->table;
    struct proc_maps maps = {0};
    struct offcpu_python_process py = {.mm = mm};
    struct python_layout python;
    size_t nfiles = 0;
    /* before the reading: code mapped meanwhile may be missing from it */
    int64_t read_ns = clock_ns(CLOCK_MONOTONIC);
    int r;

    if (ask_superseded(t, pid, mm)) {
        t->stats.asks_superseded++;
        return 0;
    }
    if (table_share(t, pid, parent, mm) == 0)
        return 0;
    r = proc_maps_read(pid, &maps);
    if (r == -ENOENT || r == -ESRCH) {
        if (mm)
            mark_unreadable(t, pid, mm);
        return r;
    }
    if (r < 0)
        return r;
    t->stats.table_reads++;
    files = calloc(maps.n ? maps.n : 1, sizeof(*files));
    if (!files) {
        proc_maps_done(&maps);
        return -ENOMEM;
    }
    *v = (struct offcpu_unwind_process){.mm = mm, .read_ns = (__u64)read_ns};
    if (!mm) {
        r = process_start(pid, &v->started_from, &v->started_to);
        if (r < 0) {
            proc_maps_done(&maps);
            return r;
        }
    }
    python = python_of_maps(t, pid, &maps, &py);
    python_publish(t, pid, &py);
    for (size_t k = 0; k < maps.n; k++) {
        if (v->n == OFFCPU_UNWIND_MAPPINGS_MAX) {
            v->asked = OFFCPU_UNWIND_FULL;
            t->stats.tables_cut++;
            break;
        }
        fill_mapping(t, pid, &maps.maps[k], &v->maps[v->n], files, &nfiles);
        v->n++;
    }
    proc_maps_done(&maps);
    r = bpf_map_update_elem(t->procs_fd, &pid, v, BPF_ANY) < 0 ? -errno : 0;
    r = proc_remember(t, pid, r, files, nfiles, python.runtime_vaddr != 0, python.layout);
    files = NULL;
    return r;
}

int unwind_tables_inherit(struct unwind_tables *t, pid_t pid, pid_t parent, uint64_t mm)
{
    int r = table_inherit(t, pid, parent, mm);

    if (r < 0)
        r = unwind_tables_load(t, pid, 0, mm);
    /* a copy that no files held here stand for must not stay (a process
     * gone is marked unreadable instead) */
    if (r < 0 && r != -ENOENT && r != -ESRCH)
        bpf_map_delete_elem(t->procs_fd, &pid);
    return r;
}

/* Whether reading is to stop: the daemon stops, or its time is up. */
static bool stopping(const struct unwind_tables *t)
{
    return (t->stop && atomic_load(t->stop)) ||
           (t->stop_at && clock_ns(CLOCK_MONOTONIC) >= t->stop_at);
}

void unwind_tables_load_all(struct unwind_tables *t, int64_t until, void (*between)(void *userdata),
                            void *userdata)
{
    DIR *d = opendir("/proc");
    struct dirent *e;

    if (!d)
        return;
    t->stop_at = until;
    while (!stopping(t) && (e = readdir(d)))
        if (isdigit((unsigned char)e->d_name[0])) {
            unwind_tables_load(t, (pid_t)strtol(e->d_name, NULL, 10), 0, 0);
            if (between)
                between(userdata);
        }
    closedir(d);
    t->stop_at = 0;
}

void unwind_tables_count_grace_periods(struct unwind_tables *t, uint64_t n)
{
    t->grace_periods = n;
}

void unwind_tables_begin_pass(struct unwind_tables *t)
{
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    size_t kept = 0;

    /* Counted when freed as n, the next grace period may have begun before
     * the free; the one after began later: no walk reads the rows after it. */
    for (size_t i = 0; i < t->nfreed; i++)
        if (t->freed[i].at + 2 > t->grace_periods ||
            row_space_give(&t->space, t->freed[i].run.first, t->freed[i].run.count) < 0)
            t->freed[kept++] = t->freed[i];
    t->nfreed = kept;
    kept = 0;
    for (size_t i = 0; i < t->nprocs; i++) {
        struct table_proc *p = &t->procs[i];

        if (kill(p->pid, 0) == 0 || errno != ESRCH) {
            t->procs[kept++] = *p;
            continue;
        }
        bpf_map_delete_elem(t->procs_fd, &p->pid);
        if (t->python_fd >= 0)
            bpf_map_delete_elem(t->python_fd, &p->pid);
        proc_release_files(t, p);
    }
    t->nprocs = kept;
    t->stats.processes = t->nprocs;
    /* backwards: an unload moves only the files after it */
    for (size_t i = t->nfiles; i-- > 0;)
        if (t->files[i]->idle_since && now - t->files[i]->idle_since >= t->linger_ns)
            file_unload(t, t->files[i]);
}

void unwind_tables_get_stats(const struct unwind_tables *t, struct unwind_tables_stats *ret)
{
    *ret = t->stats;
    ret->python_processes = ret->python_unknown_version = 0;
    for (size_t i = 0; i < t->nprocs; i++)
        if (t->procs[i].python) {
            ret->python_processes++;
            ret->python_unknown_version += t->procs[i].python_layout == OFFCPU_PYTHON_NONE;
        }
}
