/* SPDX-License-Identifier: GPL-2.0-only */
#include "query_flame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "kth_largest.h"
#include "macro.h"

#define NONE UINT32_MAX

/*
 * The tree is never built whole: a window of a busy machine holds millions of
 * frames, and a graph draws a few hundred. The rows' paths (thread name, user
 * frames, "-", kernel frames) are sorted, so that the rows below each frame
 * lie together; a frame's children are then runs of rows, each summed in one
 * pass, and only the wide ones are gone into.
 */
struct path {
    const uint32_t *user, *kernel;
    uint32_t nu, nk;
    uint32_t comm;
    unsigned state; /* the index in PROTOCOL_STATES */
    uint64_t ns;
};

/* A kernel stack collapsed for a caller who may not see kernel frames. */
static const uint32_t collapsed_kernel[] = {FLAME_NAME_KERNEL_COLLAPSED};

static uint32_t path_len(const struct path *p)
{
    return 1 + p->nu + 1 + p->nk;
}

/* The frame at depth d (< path_len) of p: the thread name, the user frames,
 * the separator (FLAME_NAME_NONE, which no string is), the kernel frames. */
static uint32_t path_at(const struct path *p, uint32_t d)
{
    if (d == 0)
        return p->comm;
    if (d <= p->nu)
        return p->user[d - 1];
    if (d == p->nu + 1)
        return FLAME_NAME_NONE;
    return p->kernel[d - p->nu - 2];
}

/* Paths equal up to d have as many user frames before d: a frame's kind
 * follows from where it is. */
static uint32_t path_kind(const struct path *p, uint32_t d)
{
    return d == 0           ? FLAME_FRAME_COMM
           : d <= p->nu     ? FLAME_FRAME_USER
           : d == p->nu + 1 ? FLAME_FRAME_SEPARATOR
                            : FLAME_FRAME_KERNEL;
}

/* Frame by frame; a path that ends first sorts first. */
static int path_cmp(const void *a, const void *b)
{
    const struct path *p = a, *q = b;
    uint32_t np = path_len(p), nq = path_len(q);

    for (uint32_t d = 0; d < np && d < nq; d++) {
        uint32_t x = path_at(p, d), y = path_at(q, d);

        if (x != y)
            return x < y ? -1 : 1;
    }
    return np < nq ? -1 : np > nq;
}

struct emitting {
    struct path *paths;
    bool by_state;
    struct flame_result *res;
    size_t cap, state_cap;
    uint64_t min_ns;
    /* a pass that only gathers the widths of the frames it would keep */
    bool gather;
    uint64_t *widths;
    size_t n_widths, widths_cap;
};

static int64_t gather(struct emitting *e, uint64_t ns)
{
    if (array_reserve(&e->widths, &e->widths_cap, e->n_widths + 1, sizeof(*e->widths), 4096) < 0)
        return -ENOMEM;
    e->widths[e->n_widths] = ns;
    return (int64_t)e->n_widths++;
}

/* Appends f, with the time by state of paths [lo, hi) when by_state; its index. */
static int64_t push(struct emitting *e, struct flame_frame f, size_t lo, size_t hi)
{
    struct flame_result *res = e->res;

    if (res->n >= NONE ||
        array_reserve(&res->frames, &e->cap, res->n + 1, sizeof(*res->frames), 256) < 0)
        return -ENOMEM;
    if (e->by_state) {
        if (array_reserve(&res->state_ns, &e->state_cap, res->n + 1, sizeof(*res->state_ns), 256) <
            0)
            return -ENOMEM;
        memset(res->state_ns[res->n], 0, sizeof(*res->state_ns));
        for (size_t i = lo; i < hi; i++)
            res->state_ns[res->n][e->paths[i].state] += e->paths[i].ns;
    }
    res->frames[res->n] = f;
    return (int64_t)res->n++;
}

/* The frames below frame self, of paths [lo, hi), which share their first d
 * frames (self's path): each child at least min_ns wide, and the frames
 * below it, and the narrow ones summed in one. */
static int emit_children(struct emitting *e, size_t lo, size_t hi, uint32_t d, uint32_t self)
{
    struct flame_frame narrow = {.parent = self, .kind = FLAME_FRAME_NARROW};
    const struct path *paths = e->paths;
    size_t i = lo;

    /* paths that end at self come first */
    while (i < hi && path_len(&paths[i]) <= d)
        i++;
    while (i < hi) {
        uint32_t name = path_at(&paths[i], d);
        uint64_t ns = 0;
        size_t j = i;
        int64_t child;
        int r;

        for (; j < hi && path_at(&paths[j], d) == name; j++)
            ns += paths[j].ns;
        if (ns < e->min_ns) {
            narrow.merged++;
            narrow.ns += ns;
        } else if (e->gather) {
            child = gather(e, ns);
            r = child < 0 ? (int)child : emit_children(e, i, j, d + 1, NONE);
            if (r < 0)
                return r;
        } else {
            child =
                push(e,
                     (struct flame_frame){
                         .parent = self, .name = name, .kind = path_kind(&paths[i], d), .ns = ns},
                     i, j);
            r = child < 0 ? (int)child : emit_children(e, i, j, d + 1, (uint32_t)child);
            if (r < 0)
                return r;
        }
        i = j;
    }
    if (narrow.merged && !e->gather) {
        int64_t r = push(e, narrow, 0, 0);

        if (r < 0)
            return (int)r;
    }
    return 0;
}

int query_flame(const struct query_result *rows, const struct intern *in, bool by_state,
                uint64_t min_ppb, size_t max_frames, struct flame_result *res)
{
    _cleanup_free_ struct path *paths = calloc(rows->n ?: 1, sizeof(*paths));
    struct emitting e = {.paths = paths, .by_state = by_state, .res = res};
    uint64_t total = 0;
    int64_t root;
    int r;

    memset(res, 0, sizeof(*res));
    if (!paths)
        return -ENOMEM;
    for (size_t i = 0; i < rows->n; i++) {
        const struct query_row *row = &rows->rows[i];
        struct path *p = &paths[i];

        p->comm = row->comm;
        p->user = intern_stack_get(in, row->ustack, &p->nu);
        if (row->kstack == QUERY_KERNEL_COLLAPSED) {
            p->kernel = collapsed_kernel;
            p->nk = 1;
        } else {
            p->kernel = intern_stack_get(in, row->kstack, &p->nk);
        }
        p->state = protocol_state_index(row->state);
        p->ns = row->total_ns;
        total += row->total_ns;
    }
    qsort(paths, rows->n, sizeof(*paths), path_cmp);
    /* rounded down: a frame a graph draws on its own is never summed */
    e.min_ns = (uint64_t)((unsigned __int128)total * min_ppb / FLAME_PPB);
    r = max_frames ? (int)gather(&e, total) : 0;
    if (max_frames && r >= 0) {
        e.gather = true;
        r = emit_children(&e, 0, rows->n, 0, NONE);
        e.gather = false;
        /* as a graph keeps to a number of frames (client/flame_layout.c):
         * only frames wider than the (max_frames + 1)-th widest stay apart */
        if (r >= 0 && e.n_widths > max_frames)
            e.min_ns = kth_largest(e.widths, e.n_widths, max_frames) + 1;
        free(e.widths);
    }
    root = r < 0 ? r
                 : push(&e,
                        (struct flame_frame){.parent = NONE, .kind = FLAME_FRAME_ROOT, .ns = total},
                        0, rows->n);
    r = root < 0 ? (int)root : emit_children(&e, 0, rows->n, 0, (uint32_t)root);
    if (r < 0)
        flame_result_done(res);
    return r;
}

void flame_result_done(struct flame_result *res)
{
    free(res->frames);
    free(res->state_ns);
    memset(res, 0, sizeof(*res));
}
