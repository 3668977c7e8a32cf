/* SPDX-License-Identifier: GPL-2.0-only */
/* Selecting snapshots by time, filtering their records and merging stacks. */
#ifndef QUERY_H
#define QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "histogram.h"
#include "min_wait.h"
#include "protocol.h"
#include "ring.h"

/* group_by holds the protocol's fields (enum group_by_field) and: */
enum {
    QUERY_GROUP_WHERE = 1u << 4,  /* stacks whose frames lie elsewhere stay apart */
    QUERY_MERGE_STACKS = 1u << 5, /* rows differ by comm and the grouped fields only */
    /* rows of the wakers' records (snapshot.wakes): the woken task's, as
     * any row's, and its waker's (waker_*), its pid and tid grouped as the
     * woken's are */
    QUERY_WAKERS = 1u << 6,
};

struct query {
    int64_t start_ns; /* a snapshot is in the window when start_ns < its end <= end_ns */
    int64_t end_ns;
    int64_t pid, tid;   /* < 0: any */
    const char *cgroup; /* normalized path: that cgroup and those below it */
    const char *unit;   /* a systemd unit: cgroups with a component of that name */
    const char *comm;
    char state; /* 0: any */
    uint64_t min_total_ns;
    uint64_t min_wait_ns; /* only waits at least that long (min_wait.h); 0: all */
    bool no_idle;         /* leave out idle waits (idle_wait.h), their time counted */
    unsigned group_by;
    int64_t uid;          /* < 0: any; else only records of this uid, the others withheld */
    bool collapse_kernel; /* every kernel stack reads as QUERY_KERNEL_COLLAPSED */
    bool histograms;      /* sum the rows' histograms too */
    /* > 0: the rows of that many stacks only, the largest; a stack's rows
     * of each state are one stack (ranked by their sum, kept together) */
    size_t limit;
};

/* Stack id of a kernel stack shown as one "[kernel]" frame. */
#define QUERY_KERNEL_COLLAPSED UINT32_MAX

struct query_row {
    uint32_t comm, ustack, kstack, cgroup; /* interned ids */
    uint32_t uwhere;                       /* with QUERY_GROUP_WHERE, else 0 */
    uint32_t pid, tid;
    char state;
    uint64_t total_ns;
    uint64_t runq_ns;
    uint64_t count;
    uint64_t max_ns;
    uint32_t hist; /* while collecting: the record's (a string id) */
    /* QUERY_WAKERS: the waker's; its user stack 0 when another user's is withheld */
    uint32_t waker_comm, waker_ustack, waker_kstack;
    uint32_t waker_pid, waker_tid;
    char waker_kind;        /* enum offcpu_waker_kind */
    struct histogram *sums; /* with histograms: the merged row's (malloc'ed) */
};

struct query_result {
    struct query_row *rows; /* largest total first */
    size_t n;
    size_t snapshots;
    size_t withheld;          /* records that matched but belong to other users */
    size_t stacks;            /* with limit: the stacks there were, limit or not */
    uint64_t idle_ns;         /* time of the idle waits no_idle left out */
    int64_t start_ns, end_ns; /* what the chosen snapshots cover */
};

/* Whether snapshot s belongs to q's window (by its end). */
bool query_snapshot_in_window(const struct query *q, const struct snapshot *s);

/* Widens [*start_ns, *end_ns), what *n snapshots cover, to cover s too; counts it. */
void query_cover(int64_t *start_ns, int64_t *end_ns, size_t *n, const struct snapshot *s);

/* Whether rec is of the tasks q selects (its uid aside). */
bool query_record_matches(const struct ring *r, const struct query *q, const struct record *rec);
/* Of rec (matching), the waits q keeps (its min_wait_ns) in *w; false when
 * none. Of one record alone: a wait's time in the intervals before it ended
 * is not told apart (query_records() does). */
bool query_record_waits(const struct ring *r, const struct query *q, const struct record *rec,
                        struct waits *w);

/* The records of q's window it selects and the peer may see, with the waits
 * q keeps of each (kept false: none), in *items (malloc'ed, *n of them);
 * counts the withheld ones, and adds the time of the idle waits left out to
 * *idle_ns. */
int query_records(const struct ring *r, const struct query *q, struct min_wait_item **items,
                  size_t *n, size_t *withheld, uint64_t *idle_ns);
/* Is the cgroup at path want, or below it? */
bool query_in_cgroup(const char *path, const char *want);

int query_run(const struct ring *r, const struct query *q, struct query_result *res);
void query_result_done(struct query_result *res);

#endif
