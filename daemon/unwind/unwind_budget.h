/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How long the reading of one file's call frame information may go on. Any
 * process maps files of its own making, and the one thread that reads them
 * serves every process on the host: whatever slipped past the bounds on
 * entries and instructions (cfi_check.h) is cut off after a fixed CPU time,
 * and all of it stops at once when the daemon stops (SIGTERM) or when the
 * time it gave the reading is up (at start, before it listens).
 */
#ifndef UNWIND_BUDGET_H
#define UNWIND_BUDGET_H

#include <stdatomic.h>
#include <stdint.h>

/* CPU time one file may take: Debian's largest libraries take < 0.3 s
 * (libjvm's 230k rows, libLLVM-15's 98k FDEs), a sanitizer build some
 * times that. */
#define UNWIND_FILE_CPU_NS (2LL * 1000000000LL)

struct unwind_budget {
    int64_t cpu_until;       /* CLOCK_THREAD_CPUTIME_ID: this file's time is up */
    int64_t stop_at;         /* CLOCK_MONOTONIC: stop everything then (0: never) */
    const atomic_bool *stop; /* set: stop everything now (NULL: never) */
    unsigned calls;          /* clocks are read every so many calls */
};

/* A budget for one file, read from now on. */
struct unwind_budget unwind_budget_for_file(const atomic_bool *stop, int64_t stop_at);

/* 0 while there is time; -ECANCELED once everything is to stop; -ETIME once
 * the file's time is up. Cheap: call it for every entry and row. */
int unwind_budget_check(struct unwind_budget *b);

#endif
