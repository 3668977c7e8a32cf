/* SPDX-License-Identifier: GPL-2.0-only */
#include "snapshot_build.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "frame_cache.h"
#include "frame_names.h"
#include "frame_where.h"
#include "histogram.h"
#include "macro.h"

_Static_assert(UID_UNKNOWN == OFFCPU_UID_UNKNOWN, "one unknown owner, two names");

#define MISSED_USER   "[Missed User Stack]"
#define MISSED_KERNEL "[Missed Kernel Stack]"
#define NEW_TASK      "[new task]"
#define IN_EXEC       "[exec]"

struct builder {
    const struct drained *d; /* its stacks */
    struct frame_cache *frames;
    struct intern *in;
    struct snapshot_stats *stats;
};

/* Records to make from keys: the aggregate's, or either side of the wakers'. */
struct record_set {
    const struct offcpu_key *keys;
    size_t n;
    struct record *recs;
};

/* A stack's interned ids: its names, and where its frames lie (user stacks
 * only, two strings per frame; 0 when not known). */
struct resolved {
    uint32_t names, where;
};

/* Intern one stack from its frames, named leaf first as walked: root first.
 * A user frame in no mapping ends the walk there: the frame-pointer chain
 * left known code, and what follows is junk; it reads as one [unknown]. A
 * frame where a stack begins (SYMBOLIZER_ROOT) ends it too, without one. */
static struct resolved intern_frames(struct builder *b, const struct offcpu_stack *s,
                                     const struct offcpu_key *k)
{
    /* copies: the cache's entries move when it grows, within this loop */
    struct named_frame named[OFFCPU_USER_DEPTH];
    uint32_t names[OFFCPU_USER_DEPTH + 1], wheres[2 * (OFFCPU_USER_DEPTH + 1)];
    uint32_t unknown[3] = {0}, n = 0, out = 0;
    struct resolved ret = {0};

    for (uint32_t i = 0; i < s->nr && i < OFFCPU_USER_DEPTH; i++) {
        /* a kernel callchain starts at a caller's return address: no entry is a pc */
        const struct named_frame *f = frame_cache_get(b->frames, k->tgid, k->exec_id, s->ip[i],
                                                      !s->kernel && i == 0, s->kernel);

        if (!f || !f->name || (!s->kernel && (!f->offset || !f->file)))
            continue; /* out of memory: the frame goes, the stack stays whole otherwise */
        /* the tracer's frames are where the stack was taken, at its leaf
         * end; further up, a BPF program is another's, and keeps its name */
        if (f->result == SYMBOLIZER_SKIP && n == 0)
            continue;
        if (f->result < 0 && !s->kernel && i > 0) {
            static const struct frame_where nowhere;
            char offset[FRAME_WHERE_TEXT_MAX], file[FRAME_WHERE_TEXT_MAX];

            frame_where_format(&nowhere, offset, file);
            unknown[0] = intern_string(b->in, FRAME_NAME_UNKNOWN);
            unknown[1] = intern_string(b->in, offset);
            unknown[2] = intern_string(b->in, file);
            if (unknown[0] && unknown[1] && unknown[2]) {
                names[out] = unknown[0];
                wheres[2 * out] = unknown[1];
                wheres[2 * out + 1] = unknown[2];
                out++;
            }
            break;
        }
        named[n++] = *f;
        if (f->result == SYMBOLIZER_ROOT && !s->kernel)
            break;
    }
    for (uint32_t i = n; i-- > 0; out++) {
        names[out] = named[i].name;
        wheres[2 * out] = named[i].offset;
        wheres[2 * out + 1] = named[i].file;
    }
    ret.names = intern_stack(b->in, names, out);
    if (!s->kernel)
        ret.where = intern_stack(b->in, wheres, 2 * out);
    for (int i = 0; i < 3; i++)
        intern_string_unref(b->in, unknown[i]);
    return ret;
}

static uint32_t intern_marker(struct builder *b, const char *what)
{
    uint32_t frame = intern_string(b->in, what), id;

    if (!frame)
        return 0;
    id = intern_stack(b->in, &frame, 1);
    intern_string_unref(b->in, frame);
    return id;
}

static struct resolved resolve(struct builder *b, const struct offcpu_key *k, bool kernel)
{
    uint64_t hash = kernel ? k->kernel_stack : k->user_stack;
    const struct offcpu_stack *s;

    if (!kernel && (k->kthread || hash == OFFCPU_STACK_NEW_TASK))
        return (struct resolved){0};
    if (hash == OFFCPU_STACK_NEW_TASK)
        return (struct resolved){.names = intern_marker(b, NEW_TASK)};
    if (hash == OFFCPU_STACK_EXEC)
        return (struct resolved){.names = intern_marker(b, IN_EXEC)};
    if (hash == OFFCPU_STACK_OVER_BUDGET)
        return (struct resolved){.names = intern_marker(b, SNAPSHOT_OVER_BUDGET)};
    s = drained_find_stack(b->d, hash);
    if (!s) {
        if (hash != OFFCPU_STACK_MISSED)
            b->stats->orphan_stacks++;
        return (struct resolved){.names = intern_marker(b, kernel ? MISSED_KERNEL : MISSED_USER)};
    }
    return intern_frames(b, s, k);
}

/* Records are visited grouped by (tgid, exec_id, stack) so that each distinct stack is
 * named once per pass; the others take a reference on the first's result. */
struct order_ctx {
    const struct offcpu_key *keys;
    bool kernel;
};

static int cmp_order(const void *a, const void *b, void *p)
{
    const struct order_ctx *ctx = p;
    const struct offcpu_key *x = &ctx->keys[*(const uint32_t *)a];
    const struct offcpu_key *y = &ctx->keys[*(const uint32_t *)b];
    uint64_t hx = ctx->kernel ? x->kernel_stack : x->user_stack;
    uint64_t hy = ctx->kernel ? y->kernel_stack : y->user_stack;
    /* kernel stacks are the same in every process */
    uint32_t tx = ctx->kernel ? 0 : x->tgid, ty = ctx->kernel ? 0 : y->tgid;
    uint32_t ex = ctx->kernel ? 0 : x->exec_id, ey = ctx->kernel ? 0 : y->exec_id;

    if (tx != ty)
        return tx < ty ? -1 : 1;
    if (ex != ey)
        return ex < ey ? -1 : 1;
    if (hx != hy)
        return hx < hy ? -1 : 1;
    return x->kthread - y->kthread;
}

static void resolve_all(struct builder *b, const struct record_set *set, uint32_t *order,
                        bool kernel)
{
    struct order_ctx ctx = {.keys = set->keys, .kernel = kernel};
    struct resolved id = {0};

    for (size_t i = 0; i < set->n; i++)
        order[i] = i;
    qsort_r(order, set->n, sizeof(*order), cmp_order, &ctx);
    for (size_t i = 0; i < set->n; i++) {
        const struct offcpu_key *k = &set->keys[order[i]];
        struct record *rec = &set->recs[order[i]];

        if (i > 0 && cmp_order(&order[i - 1], &order[i], &ctx) == 0) {
            intern_stack_ref(b->in, id.names);
            intern_stack_ref(b->in, id.where);
        } else {
            id = resolve(b, k, kernel);
        }
        if (kernel) {
            rec->kstack = id.names;
        } else {
            rec->ustack = id.names;
            rec->uwhere = id.where;
        }
    }
}

/* Identity of each record (cgroup only with cg); sums are the caller's. */
static void fill_identity(struct builder *b, const struct record_set *set, struct cgroups *cg)
{
    for (size_t i = 0; i < set->n; i++) {
        const struct offcpu_key *k = &set->keys[i];
        struct record *rec = &set->recs[i];
        char comm[sizeof(k->comm) + 1], path[PATH_MAX];

        memcpy(comm, k->comm, sizeof(k->comm));
        comm[sizeof(k->comm)] = '\0';
        rec->tgid = k->tgid;
        rec->tid = k->tid;
        rec->uid = k->uid;
        rec->state = (char)k->state;
        rec->comm = intern_string(b->in, comm);
        rec->cgroup = cg && cgroups_path(cg, k->cgroup_id, path, sizeof(path)) == 0
                          ? intern_string(b->in, path)
                          : 0;
    }
}

static void fill_sums(struct builder *b, const struct record_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        const struct offcpu_value *v = &b->d->values[i];
        struct record *rec = &set->recs[i];
        struct histogram h;

        rec->total_ns = v->total_ns;
        rec->runq_ns = v->runq_ns;
        rec->max_ns = v->max_ns;
        histogram_from_counts(&h, v->hist);
        rec->hist = histogram_intern(b->in, &h);
        rec->count = v->count;
    }
}

static void build_set(struct builder *b, const struct record_set *set, struct cgroups *cg,
                      uint32_t *order)
{
    fill_identity(b, set, cg);
    resolve_all(b, set, order, false);
    resolve_all(b, set, order, true);
}

/* The waker of a drained pair as a key of its own, to be named as any is. */
static void waker_key(const struct offcpu_wake_key *w, struct offcpu_key *ret)
{
    *ret = (struct offcpu_key){
        .tgid = w->tgid,
        .tid = w->tid,
        .user_stack = w->user_stack,
        .kernel_stack = w->kernel_stack,
        .state = w->kind,
        .kthread = w->kthread,
        .uid = w->uid,
        .exec_id = w->exec_id,
    };
    memcpy(ret->comm, w->comm, sizeof(ret->comm));
}

/* The wakers' pairs: each side built as a set of records of its own. */
static int build_wakes(struct builder *b, struct cgroups *cg, struct snapshot *snap)
{
    size_t n = b->d->nwakes;
    _cleanup_free_ struct offcpu_key *keys = calloc(2 * n, sizeof(*keys));
    _cleanup_free_ struct record *recs = calloc(2 * n, sizeof(*recs));
    _cleanup_free_ uint32_t *order = malloc(n * sizeof(*order));
    struct record_set woken = {.keys = keys, .n = n, .recs = recs};
    struct record_set wakers = {.keys = keys + n, .n = n, .recs = recs + n};

    if (!n)
        return 0;
    snap->wakes = calloc(n, sizeof(*snap->wakes));
    if (!keys || !recs || !order || !snap->wakes)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        keys[i] = b->d->wake_keys[i].woken;
        waker_key(&b->d->wake_keys[i], &keys[n + i]);
    }
    build_set(b, &woken, cg, order);
    build_set(b, &wakers, NULL, order);
    for (size_t i = 0; i < n; i++) {
        snap->wakes[i].woken = recs[i];
        snap->wakes[i].woken.total_ns = b->d->wake_values[i].blocked_ns;
        snap->wakes[i].woken.count = b->d->wake_values[i].count;
        snap->wakes[i].waker = recs[n + i];
    }
    snap->nwakes = n;
    return 0;
}

int snapshot_build(const struct drained *d, struct symbolizer *sym, struct cgroups *cg,
                   struct intern *in, struct snapshot **ret, struct snapshot_stats *stats)
{
    _cleanup_free_ uint32_t *order = malloc((d->n ? d->n : 1) * sizeof(*order));
    struct snapshot *snap = calloc(1, sizeof(*snap) + d->n * sizeof(snap->records[0]));
    struct builder b = {.d = d, .in = in, .stats = stats};
    struct record_set aggregate = {.keys = d->keys, .n = d->n, .recs = snap ? snap->records : NULL};
    int r;

    if (!snap || !order || frame_cache_new(sym, in, &b.frames) < 0) {
        free(snap);
        return -ENOMEM;
    }
    snap->start_ns = d->start_ns;
    snap->end_ns = d->end_ns;
    snap->n = d->n;
    symbolizer_begin_pass(sym);
    if (cg)
        cgroups_begin_pass(cg);
    build_set(&b, &aggregate, cg, order);
    fill_sums(&b, &aggregate);
    r = build_wakes(&b, cg, snap);
    b.frames = frame_cache_free(b.frames);
    if (r < 0) {
        snapshot_free(in, snap);
        return r;
    }
    stats->records += d->n;
    *ret = snap;
    return 0;
}
