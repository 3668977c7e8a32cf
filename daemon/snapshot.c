/* SPDX-License-Identifier: GPL-2.0-only */
#include "snapshot.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "frame_names.h"
#include "frame_where.h"
#include "macro.h"

#define MISSED_USER   "[Missed User Stack]"
#define MISSED_KERNEL "[Missed Kernel Stack]"
#define FRAME_MAX     512

struct builder {
    const struct drained *d;
    struct symbolizer *sym;
    struct intern *in;
    struct snapshot *snap;
    struct snapshot_stats *stats;
};

/* The frames of one stack, leaf first as walked: names, and for user
 * frames where their address lies (see symbolizer_user_frame). */
struct frames {
    char names[OFFCPU_USER_DEPTH][FRAME_MAX];
    struct frame_where where[OFFCPU_USER_DEPTH];
};

/* A stack's interned ids: its names, and where its frames lie (user stacks
 * only, two strings per frame; 0 when not known). */
struct resolved {
    uint32_t names, where;
};

/* Name the frames of s, leaf first. A user frame in no mapping ends the walk:
 * the frame-pointer chain left known code there, and what follows is junk.
 * Returns the number named; *cut tells whether the walk was cut short. */
static uint32_t name_frames(struct builder *b, const struct offcpu_stack *s,
                            const struct offcpu_key *k, struct frames *f, bool *cut)
{
    uint32_t n = 0;

    *cut = false;
    for (uint32_t i = 0; i < s->nr && i < OFFCPU_USER_DEPTH; i++) {
        int r;

        /* a kernel callchain starts at a caller's return address: no entry is a pc */
        if (s->kernel)
            r = symbolizer_kernel_frame(b->sym, s->ip[i], false, f->names[n], FRAME_MAX);
        else
            r = symbolizer_user_frame(b->sym, k->tgid, k->exec_id, s->ip[i], i == 0, f->names[n],
                                      FRAME_MAX, &f->where[n]);
        /* the tracer's frames are where the stack was taken, at its leaf
         * end; further up, a BPF program is another's, and keeps its name */
        if (r == SYMBOLIZER_SKIP && n == 0)
            continue;
        if (r < 0 && !s->kernel && i > 0) {
            *cut = true;
            break;
        }
        n++;
    }
    return n;
}

/* Append one frame: its name, and for a user frame where it lies, as the
 * ring keeps it (two strings, see frame_where.h). All or nothing (out of
 * memory), so that the arrays stay aligned. where is NULL for kernel frames. */
static void push_frame(struct builder *b, const char *name, const struct frame_where *where,
                       uint32_t *names, uint32_t *wheres, uint32_t *n)
{
    char offset_text[FRAME_WHERE_TEXT_MAX], file_text[FRAME_WHERE_TEXT_MAX];
    uint32_t id, offset = 0, in_file = 0;

    id = intern_string(b->in, name);
    if (where) {
        frame_where_format(where, offset_text, file_text);
        offset = intern_string(b->in, offset_text);
        in_file = intern_string(b->in, file_text);
    }
    if (!id || (where && (!offset || !in_file))) {
        intern_string_unref(b->in, id);
        intern_string_unref(b->in, offset);
        intern_string_unref(b->in, in_file);
        return;
    }
    wheres[2 * *n] = offset;
    wheres[2 * *n + 1] = in_file;
    names[(*n)++] = id;
}

/* Intern one stack from its frames (leaf first, as walked): root first. */
static struct resolved intern_frames(struct builder *b, const struct offcpu_stack *s,
                                     const struct offcpu_key *k)
{
    static struct frames f;
    static const struct frame_where nowhere;
    uint32_t names[OFFCPU_USER_DEPTH + 1] = {0}, wheres[2 * (OFFCPU_USER_DEPTH + 1)] = {0};
    struct resolved ret = {0};
    uint32_t n = 0;
    bool cut;
    uint32_t named = name_frames(b, s, k, &f, &cut);

    if (cut)
        push_frame(b, FRAME_NAME_UNKNOWN, &nowhere, names, wheres, &n);
    for (uint32_t i = named; i-- > 0;)
        push_frame(b, f.names[i], s->kernel ? NULL : &f.where[i], names, wheres, &n);
    ret.names = intern_stack(b->in, names, n);
    if (!s->kernel)
        ret.where = intern_stack(b->in, wheres, 2 * n);
    for (uint32_t i = 0; i < n; i++) {
        intern_string_unref(b->in, names[i]);
        intern_string_unref(b->in, wheres[2 * i]);
        intern_string_unref(b->in, wheres[2 * i + 1]);
    }
    return ret;
}

static uint32_t intern_missed(struct builder *b, const char *what)
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

    if (!kernel && k->kthread)
        return (struct resolved){0};
    s = drained_find_stack(b->d, hash);
    if (!s) {
        if (hash != OFFCPU_STACK_MISSED)
            b->stats->orphan_stacks++;
        return (struct resolved){.names = intern_missed(b, kernel ? MISSED_KERNEL : MISSED_USER)};
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

static void resolve_all(struct builder *b, uint32_t *order, bool kernel)
{
    struct order_ctx ctx = {.keys = b->d->keys, .kernel = kernel};
    struct resolved id = {0};

    for (size_t i = 0; i < b->d->n; i++)
        order[i] = i;
    qsort_r(order, b->d->n, sizeof(*order), cmp_order, &ctx);
    for (size_t i = 0; i < b->d->n; i++) {
        const struct offcpu_key *k = &b->d->keys[order[i]];
        struct record *rec = &b->snap->records[order[i]];

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

static void fill_identity(struct builder *b, struct cgroups *cg)
{
    for (size_t i = 0; i < b->d->n; i++) {
        const struct offcpu_key *k = &b->d->keys[i];
        struct record *rec = &b->snap->records[i];
        char comm[sizeof(k->comm) + 1], path[PATH_MAX];

        memcpy(comm, k->comm, sizeof(k->comm));
        comm[sizeof(k->comm)] = '\0';
        rec->tgid = k->tgid;
        rec->tid = k->tid;
        rec->uid = k->uid;
        rec->state = (char)k->state;
        rec->total_ns = b->d->values[i].total_ns;
        rec->count = b->d->values[i].count;
        rec->comm = intern_string(b->in, comm);
        rec->cgroup = cg && cgroups_path(cg, k->cgroup_id, path, sizeof(path)) == 0
                          ? intern_string(b->in, path)
                          : 0;
    }
}

int snapshot_build(const struct drained *d, struct symbolizer *sym, struct cgroups *cg,
                   struct intern *in, struct snapshot **ret, struct snapshot_stats *stats)
{
    _cleanup_free_ uint32_t *order = malloc((d->n ? d->n : 1) * sizeof(*order));
    struct snapshot *snap = calloc(1, sizeof(*snap) + d->n * sizeof(snap->records[0]));
    struct builder b = {.d = d, .sym = sym, .in = in, .snap = snap, .stats = stats};

    if (!snap || !order) {
        free(snap);
        return -ENOMEM;
    }
    snap->start_ns = d->start_ns;
    snap->end_ns = d->end_ns;
    snap->n = d->n;
    symbolizer_begin_pass(sym);
    if (cg)
        cgroups_begin_pass(cg);
    fill_identity(&b, cg);
    resolve_all(&b, order, false);
    resolve_all(&b, order, true);
    stats->records += d->n;
    *ret = snap;
    return 0;
}
