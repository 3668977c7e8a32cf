/* SPDX-License-Identifier: GPL-2.0-only */
#include "snapshot_build.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "frame_cache.h"
#include "frame_names.h"
#include "frame_rules.h"
#include "frame_where.h"
#include "histogram.h"
#include "python_weave.h"
#include "clock.h"
#include "macro.h"

_Static_assert(UID_UNKNOWN == OFFCPU_UID_UNKNOWN, "one unknown owner, two names");

/* A stack's interned ids: its names, and where its frames lie (user stacks
 * only, two strings per frame; 0 when not known). */
struct resolved {
    uint32_t names, where;
};

/* Records to make from keys: the aggregate's, or either side of the wakers'. */
struct record_set {
    const struct offcpu_key *keys;
    size_t n;
    struct record *recs;
    struct cgroups *cg; /* NULL: no cgroup for these records */
    bool sums;          /* the aggregate's: its values are summed in */
};

/* What is done to each record of a set, in this order. */
enum build_step {
    STEP_IDENTITY,
    STEP_USER,
    STEP_KERNEL,
    STEP_SUMS,
    _STEP_MAX,
};

struct snapshot_builder {
    const struct drained *d; /* its stacks */
    struct frame_cache *frames;
    struct intern *in;
    struct snapshot_stats *stats;
    struct snapshot *snap;
    /* the sets, the aggregate first, then the wakers' two sides; both sides'
     * keys and records are made at the start */
    struct record_set sets[3];
    size_t nsets;
    struct offcpu_key *wake_keys;
    struct record *wake_recs;
    uint32_t *order; /* of the set's records for a naming step, by stack */
    /* where the build stands: set, step, record; and, in a naming step, the
     * stack the previous record was given (the next of the same takes it) */
    size_t set, i;
    enum build_step step;
    struct resolved id;
    size_t left;
};

/* Frames of one stack as shown: those walked (with Python's woven in), an
 * unknown last, and the calls inlined in them (frame_cache.h), as many
 * again at most */
#define FRAMES_OUT_MAX (2 * PYTHON_WEAVE_MAX(OFFCPU_USER_DEPTH) + 1)

/* Strings a stack's weave interned for its marks, released once it is. */
struct marks {
    uint32_t ids[4]; /* two marks at most: the GIL's, and a cut or unwoven walk's */
    unsigned n;
};

static struct named_frame mark_frame(struct snapshot_builder *b, struct marks *held,
                                     enum python_mark m)
{
    struct named_frame f = {0};

    if (held->n + 2 > ARRAY_SIZE(held->ids))
        return f;
    f.name = held->ids[held->n++] = intern_string(b->in, python_mark_name(m));
    f.offset = f.file = held->ids[held->n++] = intern_string(b->in, "");
    return f;
}

/* named[0, n): the native frames kept of user stack s, leaf first, whose
 * Python frames follow its marker; woven (python_weave.h), in place.
 * Returns their new count. */
static uint32_t weave(struct snapshot_builder *b, const struct offcpu_stack *s,
                      const struct offcpu_key *k, uint32_t marker, struct named_frame *named,
                      uint32_t n, struct marks *held)
{
    struct named_frame py[OFFCPU_PYTHON_DEPTH], native[OFFCPU_USER_DEPTH];
    struct weave_step plan[PYTHON_WEAVE_MAX(OFFCPU_USER_DEPTH)];
    uint32_t npy = python_frame_count(s->nr, marker), layout = python_marker_layout(s->ip[marker]);
    bool is_eval[OFFCPU_USER_DEPTH], unwoven;
    size_t len;

    for (uint32_t j = 0; j < npy; j++) {
        const struct named_frame *f =
            frame_cache_get_python(b->frames, k->tgid, k->exec_id, s->ip[marker + 1 + j], layout);

        if (!f)
            return n; /* out of memory: the native frames alone, as they were */
        py[j] = *f;
    }
    for (uint32_t i = 0; i < n; i++) {
        const char *name = intern_string_get(b->in, named[i].name);

        native[i] = named[i];
        is_eval[i] = name && strcmp(name, PYTHON_EVAL_FRAME) == 0;
    }
    len = python_weave(s->ip, s->nr, marker, is_eval, n, plan, &unwoven);
    n = 0;
    for (size_t i = 0; i < len; i++) {
        const struct named_frame f = plan[i].kind == WEAVE_NATIVE ? native[plan[i].index]
                                     : plan[i].kind == WEAVE_PYTHON
                                         ? py[plan[i].index]
                                         : mark_frame(b, held, plan[i].index);

        if (f.name) /* interning failed: the frame goes, the stack stays */
            named[n++] = f;
    }
    b->stats->python_stacks++;
    b->stats->python_unwoven += unwoven;
    return n;
}

/* Intern one stack from its frames, named leaf first as walked: root first;
 * which frames it keeps is frame_rule's to say. A CPython thread's Python
 * frames are woven in (python_weave.h). */
static struct resolved intern_frames(struct snapshot_builder *b, const struct offcpu_stack *s,
                                     const struct offcpu_key *k)
{
    /* copies: the cache's entries move when it grows, within this loop */
    struct named_frame named[PYTHON_WEAVE_MAX(OFFCPU_USER_DEPTH)];
    uint32_t names[FRAMES_OUT_MAX], wheres[2 * FRAMES_OUT_MAX];
    uint32_t unknown[3] = {0}, n = 0, out = 0;
    uint32_t native = s->kernel ? s->nr : python_marker_index(s->ip, s->nr);
    struct marks held = {0};
    struct resolved ret = {0};

    for (uint32_t i = 0; i < native && i < OFFCPU_USER_DEPTH; i++) {
        /* a kernel callchain starts at a caller's return address: no entry is a pc */
        const struct named_frame *f = frame_cache_get(b->frames, k->tgid, k->exec_id, s->ip[i],
                                                      !s->kernel && i == 0, s->kernel);

        enum frame_step step;

        if (!f || !f->name || (!s->kernel && (!f->offset || !f->file)))
            continue; /* out of memory: the frame goes, the stack stays whole otherwise */
        step = frame_rule(s->kernel, i, n, f->result);
        if (step == FRAME_STEP_DROP)
            continue;
        if (step == FRAME_STEP_UNKNOWN_LAST) {
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
        if (step == FRAME_STEP_LAST)
            break;
    }
    if (native < s->nr)
        n = weave(b, s, k, native, named, n, &held);
    for (uint32_t i = n; i-- > 0;) {
        const uint32_t *inlined = NULL;
        uint32_t ninlined = 0;

        if (named[i].inlined)
            inlined = intern_stack_get(b->in, named[i].inlined, &ninlined);
        /* the frames below this one keep their room; inlined calls that do
         * not fit go, the frame that holds them stays */
        if (out + 1 + ninlined + i > FRAMES_OUT_MAX)
            ninlined = 0;
        /* root first: the frame, then its inlined calls, the innermost last */
        for (uint32_t j = ninlined + 1; j-- > 0; out++) {
            names[out] = j == ninlined ? named[i].name : inlined[j];
            wheres[2 * out] = named[i].offset;
            wheres[2 * out + 1] = named[i].file;
        }
    }
    ret.names = intern_stack(b->in, names, out);
    if (!s->kernel)
        ret.where = intern_stack(b->in, wheres, 2 * out);
    for (int i = 0; i < 3; i++)
        intern_string_unref(b->in, unknown[i]);
    for (unsigned i = 0; i < held.n; i++)
        intern_string_unref(b->in, held.ids[i]);
    return ret;
}

static uint32_t intern_marker(struct snapshot_builder *b, const char *what)
{
    uint32_t frame = intern_string(b->in, what), id;

    if (!frame)
        return 0;
    id = intern_stack(b->in, &frame, 1);
    intern_string_unref(b->in, frame);
    return id;
}

static struct resolved resolve(struct snapshot_builder *b, const struct offcpu_key *k, bool kernel)
{
    uint64_t hash = kernel ? k->kernel_stack : k->user_stack;
    const struct offcpu_stack *s;

    if (!kernel && (k->kthread || hash == OFFCPU_STACK_NEW_TASK))
        return (struct resolved){0};
    if (hash == OFFCPU_STACK_NEW_TASK)
        return (struct resolved){.names = intern_marker(b, FRAME_MARK_NEW_TASK)};
    if (hash == OFFCPU_STACK_EXEC)
        return (struct resolved){.names = intern_marker(b, FRAME_MARK_EXEC)};
    if (hash == OFFCPU_STACK_OVER_BUDGET)
        return (struct resolved){.names = intern_marker(b, SNAPSHOT_OVER_BUDGET)};
    s = drained_find_stack(b->d, hash);
    if (!s) {
        if (hash != OFFCPU_STACK_MISSED)
            b->stats->orphan_stacks++;
        return (struct resolved){
            .names = intern_marker(b, kernel ? FRAME_MARK_MISSED_KERNEL : FRAME_MARK_MISSED_USER)};
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

/* Record i in the set's order by stack: the stack named for the one before
 * it when it is the same, else its own. */
static void resolve_one(struct snapshot_builder *b, const struct record_set *set, size_t i,
                        bool kernel)
{
    struct order_ctx ctx = {.keys = set->keys, .kernel = kernel};
    struct record *rec;

    if (i == 0) {
        for (size_t j = 0; j < set->n; j++)
            b->order[j] = j;
        qsort_r(b->order, set->n, sizeof(*b->order), cmp_order, &ctx);
    }
    rec = &set->recs[b->order[i]];
    if (i > 0 && cmp_order(&b->order[i - 1], &b->order[i], &ctx) == 0) {
        intern_stack_ref(b->in, b->id.names);
        intern_stack_ref(b->in, b->id.where);
    } else {
        b->id = resolve(b, &set->keys[b->order[i]], kernel);
    }
    if (kernel) {
        rec->kstack = b->id.names;
    } else {
        rec->ustack = b->id.names;
        rec->uwhere = b->id.where;
    }
}

/* Identity of record i (cgroup only with the set's cg). */
static void fill_identity(struct snapshot_builder *b, const struct record_set *set, size_t i)
{
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
    rec->cgroup = set->cg && cgroups_path(set->cg, k->cgroup_id, path, sizeof(path)) == 0
                      ? intern_string(b->in, path)
                      : 0;
}

static void fill_sums(struct snapshot_builder *b, const struct record_set *set, size_t i)
{
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

/* One step of one record, where the build stands. */
static void build_one(struct snapshot_builder *b)
{
    const struct record_set *set = &b->sets[b->set];

    switch (b->step) {
    case STEP_IDENTITY:
        fill_identity(b, set, b->i);
        break;
    case STEP_USER:
    case STEP_KERNEL:
        resolve_one(b, set, b->i, b->step == STEP_KERNEL);
        break;
    case STEP_SUMS:
        if (set->sums)
            fill_sums(b, set, b->i);
        break;
    case _STEP_MAX:
        break;
    }
}

/* Past what build_one did: the next record, step or set. */
static void advance(struct snapshot_builder *b)
{
    if (++b->i < b->sets[b->set].n)
        return;
    b->i = 0;
    b->id = (struct resolved){0};
    if (++b->step < _STEP_MAX)
        return;
    b->step = STEP_IDENTITY;
    b->set++;
}

/* The waker of a drained pair as a key of its own, to be named as any is. */
static void waker_key(const struct offcpu_waker *w, struct offcpu_key *ret)
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

/* The wakers' pairs: each side a set of records of its own. */
static int add_wake_sets(struct snapshot_builder *b, struct cgroups *cg)
{
    size_t n = b->d->nwakes;

    if (!n)
        return 0;
    b->wake_keys = calloc(2 * n, sizeof(*b->wake_keys));
    b->wake_recs = calloc(2 * n, sizeof(*b->wake_recs));
    b->snap->wakes = calloc(n, sizeof(*b->snap->wakes));
    if (!b->wake_keys || !b->wake_recs || !b->snap->wakes)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        b->wake_keys[i] = b->d->wake_keys[i].woken;
        waker_key(&b->d->wake_keys[i].waker, &b->wake_keys[n + i]);
    }
    b->sets[b->nsets++] =
        (struct record_set){.keys = b->wake_keys, .n = n, .recs = b->wake_recs, .cg = cg};
    b->sets[b->nsets++] =
        (struct record_set){.keys = b->wake_keys + n, .n = n, .recs = b->wake_recs + n};
    b->left += 2 * n;
    return 0;
}

/* The wakers' pairs from both sides' records, once every step is done. */
static void finish_wakes(struct snapshot_builder *b)
{
    size_t n = b->d->nwakes;

    for (size_t i = 0; i < n; i++) {
        b->snap->wakes[i].woken = b->wake_recs[i];
        b->snap->wakes[i].woken.total_ns = b->d->wake_values[i].blocked_ns;
        b->snap->wakes[i].woken.count = b->d->wake_values[i].count;
        b->snap->wakes[i].waker = b->wake_recs[n + i];
    }
    b->snap->nwakes = n;
}

static struct snapshot_builder *builder_free(struct snapshot_builder *b)
{
    if (!b)
        return NULL;
    frame_cache_free(b->frames);
    free(b->wake_keys);
    free(b->wake_recs);
    free(b->order);
    free(b);
    return NULL;
}

int snapshot_build_begin(const struct drained *d, struct symbolizer *sym, struct cgroups *cg,
                         struct intern *in, struct snapshot_stats *stats,
                         struct snapshot_builder **ret)
{
    size_t most = d->n > d->nwakes ? d->n : d->nwakes;
    struct snapshot_builder *b = calloc(1, sizeof(*b));
    int r;

    if (!b)
        return -ENOMEM;
    *b = (struct snapshot_builder){.d = d, .in = in, .stats = stats, .left = d->n};
    b->snap = calloc(1, sizeof(*b->snap) + d->n * sizeof(b->snap->records[0]));
    b->order = malloc((most ?: 1) * sizeof(*b->order));
    if (!b->snap || !b->order || frame_cache_new(sym, in, &b->frames) < 0) {
        free(b->snap);
        builder_free(b);
        return -ENOMEM;
    }
    b->snap->start_ns = d->start_ns;
    b->snap->end_ns = d->end_ns;
    b->snap->n = d->n;
    b->sets[b->nsets++] = (struct record_set){
        .keys = d->keys, .n = d->n, .recs = b->snap->records, .cg = cg, .sums = true};
    r = add_wake_sets(b, cg);
    if (r < 0) {
        snapshot_free(in, b->snap);
        builder_free(b);
        return r;
    }
    symbolizer_begin_pass(sym);
    if (cg)
        cgroups_begin_pass(cg);
    *ret = b;
    return 0;
}

bool snapshot_build_step(struct snapshot_builder *b, int64_t deadline_ns)
{
    while (b->set < b->nsets) {
        if (b->sets[b->set].n == 0) {
            b->set++;
            continue;
        }
        build_one(b);
        /* a record is built once its last step is */
        if (b->step == _STEP_MAX - 1)
            b->left--;
        advance(b);
        /* at every record (the clock costs a hundredth of one): on a loaded
         * host one record may wait long for the CPU */
        if (deadline_ns && clock_ns(CLOCK_MONOTONIC) >= deadline_ns)
            return b->set >= b->nsets;
    }
    return true;
}

size_t snapshot_build_left(const struct snapshot_builder *b)
{
    return b->left;
}

struct snapshot *snapshot_build_end(struct snapshot_builder *b)
{
    struct snapshot *snap = b->snap;

    finish_wakes(b);
    b->stats->records += b->d->n;
    builder_free(b);
    return snap;
}

struct snapshot_builder *snapshot_build_abandon(struct snapshot_builder *b)
{
    if (b)
        snapshot_free(b->in, b->snap);
    return builder_free(b);
}

int snapshot_build(const struct drained *d, struct symbolizer *sym, struct cgroups *cg,
                   struct intern *in, struct snapshot **ret, struct snapshot_stats *stats)
{
    struct snapshot_builder *b;
    int r = snapshot_build_begin(d, sym, cg, in, stats, &b);

    if (r < 0)
        return r;
    snapshot_build_step(b, 0);
    *ret = snapshot_build_end(b);
    return 0;
}
