/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The unwind tables the BPF walk reads (see bpf/unwind.bpf.h): each file's
 * rows once in one array shared by every process that maps the file, and per
 * process a table of its executable mappings naming the rows of each.
 *
 * A process's table is read when it is announced (an exec, a first block, an
 * address or address space its table does not know) and for every process
 * at start. A file's rows go when no process's table names it any more, and
 * their room is reused once no walk can still be reading them. Rows that do
 * not fit in the room given are not loaded, and counted; so are files
 * refused for their call frame information (malformed, or more entries,
 * instructions or CPU time than a file may take: see unwind_budget.h), the
 * last few by name. Each file with rows
 * is also listed by its identity, for code a process mapped since its table
 * was read (the walk finds the file through the VMA).
 */
#ifndef UNWIND_TABLES_H
#define UNWIND_TABLES_H

#include <linux/types.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "offcpu.h"

struct unwind_tables;

/* Refused files named in status: the last so many, each by the name a
 * process mapped it under (at most so many bytes, escaped to printable
 * ASCII). */
#define UNWIND_REFUSED_KEPT     8
#define UNWIND_REFUSED_PATH_MAX 256

struct unwind_refused {
    char path[UNWIND_REFUSED_PATH_MAX];
    pid_t pid; /* a process that mapped it */
    uid_t uid; /* whose process (-1: unknown): status names the file to them and root */
    int error; /* why, a negative errno of unwind_rows_derive */
};

struct unwind_tables_stats {
    uint64_t files;             /* files with rows loaded */
    uint64_t rows;              /* rows they take */
    uint64_t rows_max;          /* room for rows (unwind-memory) */
    uint64_t files_without_cfi; /* files read that have none: frame pointers there */
    uint64_t files_refused;     /* files whose CFI was refused: frame pointers there */
    uint64_t files_over_budget; /* files whose rows did not fit: frame pointers there */
    uint64_t processes;         /* processes with a table */
    uint64_t table_reads;       /* tables read (announcements, start) */
    uint64_t tables_inherited;  /* tables of forked (or vforked) processes: their parent's */
    uint64_t asks_superseded;   /* asks not read: a later ask, of the exec since, replaced it */
    uint64_t files_held_known;  /* mappings of files a table held: not opened to be told */
    uint64_t tables_cut;        /* tables with more mappings than a table holds */
    uint64_t files_read;        /* files whose rows were derived since start */
    uint64_t files_debug_frame; /* among them, with rows from .debug_frame */
    uint64_t files_shared;      /* files naming the rows of one with the same CFI, not read */
    uint64_t build_ns;          /* CPU time deriving (or sharing) and loading rows */
    uint64_t files_lingering;   /* files no process maps now, kept for the next (linger_ns) */
    uint64_t rows_lingering;    /* the rows they keep */
    uint64_t linger_reuses;     /* files a process mapped again while they lingered */
    uint64_t python_processes;  /* processes with a table that run CPython */
    uint64_t python_unknown_version; /* ...of a version without a layout: native frames only */
    struct unwind_refused refused[UNWIND_REFUSED_KEPT]; /* the last refused, oldest first */
    size_t nrefused;
};

/* rows: the BPF array of rows, mapped (rows_max of them); procs_fd: the BPF
 * map of tables by pid; files_fd: the BPF map of rows by file. linger_ns:
 * how long a file's rows stay after the last process that mapped it is gone
 * (unwind-linger), so that a program started again and again is read once;
 * 0: they go at once. */
int unwind_tables_new(struct offcpu_unwind_row *rows, uint32_t rows_max, int procs_fd, int files_fd,
                      int64_t linger_ns, struct unwind_tables **ret);
struct unwind_tables *unwind_tables_free(struct unwind_tables *t);

/* The BPF map of CPython processes (python_procs), filled as tables are
 * read: their Python frames are walked. Not set: none are. */
void unwind_tables_set_python_map(struct unwind_tables *t, int python_fd, uint32_t *python_gen);

/* Reading stops at once (a file's reading too) once *stop is set: the
 * daemon is stopping. */
void unwind_tables_set_stop(struct unwind_tables *t, const atomic_bool *stop);

/* Read the table of process pid, whose address space the BPF side calls mm
 * (0 when not known: at start), or, for a first table, take that of parent
 * if pid runs in its address space still (a vfork child's; 0: none). An ask
 * a later one replaced is passed over. Returns 0 or a negative errno. */
int unwind_tables_load(struct unwind_tables *t, pid_t pid, pid_t parent, uint64_t mm);

/* Process pid, forked from parent, was given its parent's table by the BPF
 * side (OFFCPU_ANNOUNCE_FORKED): hold its files for it, or read its own if
 * the copy is not the parent's table as last written. */
int unwind_tables_inherit(struct unwind_tables *t, pid_t pid, pid_t parent, uint64_t mm);

/* Read the tables of every process, until CLOCK_MONOTONIC until (0: no
 * end; a file read then is cut off, and read again when next asked for);
 * between (if not NULL) is called after each, so that what is more urgent
 * need not wait for all. */
void unwind_tables_load_all(struct unwind_tables *t, int64_t until, void (*between)(void *userdata),
                            void *userdata);

/* How many RCU grace periods have ended since start (one per flip): rows
 * freed are reused once two more have. Call before the calls below. */
void unwind_tables_count_grace_periods(struct unwind_tables *t, uint64_t n);

/* Now and then (once per drain): reuse the room of rows no walk can still be
 * reading, and forget processes that are gone. */
void unwind_tables_begin_pass(struct unwind_tables *t);

void unwind_tables_get_stats(const struct unwind_tables *t, struct unwind_tables_stats *ret);

#endif
