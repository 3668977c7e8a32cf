/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPython frames named from the process's own memory while it lives
 * (docs/python-frames.md §3): the BPF side hands, per frame, the address of
 * its code object and the instruction it was at; this reads the code object's
 * qualified name, file and location table from the process and gives the line.
 *
 * What was read is cached by (pid, code address) and checked again, with one
 * read of the code object's header, on its first use in each pass: a code
 * object freed and its memory reused by another is seen as changed. Where
 * no code object is left at all, the frames being named ran the one the
 * last pass checked there (a frame holds its code object alive, and they
 * were recorded since), and are named after it; one at the same address
 * born and freed between two passes would be misnamed. The cache holds at
 * most 16384 code objects and 32 MiB; past either, those used least recently
 * go (read again when next seen). A process found gone keeps its entries
 * for 10 s (twice the longest a block is held for its rows): its last blocks
 * are drained after its exit, and named from what was checked while it
 * lived.
 */
#ifndef PYTHON_CODE_H
#define PYTHON_CODE_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

struct python_code_cache;

int python_code_cache_new(struct python_code_cache **ret);
struct python_code_cache *python_code_cache_free(struct python_code_cache *c);

/* A new drain, at now_ns (CLOCK_MONOTONIC): each cached code object is
 * checked again (one read of its header) on its first use in the pass. */
void python_code_begin_pass(struct python_code_cache *c, int64_t now_ns);

/* pid's entries go (it exited or exec'd). */
void python_code_forget(struct python_code_cache *c, pid_t pid);

struct python_frame_name {
    char qualname[256];  /* co_qualname as UTF-8 ("Thread.run", "f.<locals>.g"), cut if longer */
    char file[PATH_MAX]; /* co_filename as UTF-8, as the interpreter has it, cut if longer */
    int32_t line;        /* the line of instruction lasti (PyCode_Addr2Line);
                          * co_firstlineno for lasti < 0; -1: no line */
};

/* layout: enum offcpu_python_layout (bpf/offcpu.h). lasti: the instruction,
 * in 2-byte code units; -1 for a frame that has not run one yet. A frame
 * whose lasti is below _co_firsttraceable is named all the same (the caller
 * decides whether to show it).
 * Returns 0, or -ESRCH: the process is gone, -EFAULT: its memory could not be
 * read, -EINVAL: not a live code object (its type is not code, a string is not
 * one CPython makes for code, lasti is past the code's end), -EOPNOTSUPP: a
 * layout not known here. Never a guessed name. */
int python_code_name(struct python_code_cache *c, pid_t pid, uint32_t layout, uint64_t code,
                     int32_t lasti, struct python_frame_name *ret);

struct python_code_stats {
    uint64_t named;              /* frames named */
    uint64_t cache_hits;         /* ... from what was cached (its header read again at most) */
    uint64_t unreadable;         /* frames not named: process gone or memory unreadable */
    uint64_t not_code;           /* frames not named: not a live code object */
    uint64_t freed_since;        /* frames named after a code object freed since the last pass */
    uint64_t entries;            /* code objects cached */
    uint64_t bytes;              /* ... the memory they take */
    uint64_t evicted;            /* code objects dropped for room */
    uint64_t linetables_too_big; /* code objects over the location table cap: no lines */
};
void python_code_stats(const struct python_code_cache *c, struct python_code_stats *ret);

#endif
