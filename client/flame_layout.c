/* SPDX-License-Identifier: GPL-2.0-only */
#include "flame_layout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "kth_largest.h"
#include "macro.h"

/* The minimum width that keeps the frames drawn on their own to half of
 * max_boxes (merged boxes, at most one per drawn frame, take the rest). */
size_t flame_layout_apart(size_t max_boxes)
{
    return max_boxes / 2;
}

static int budget_min(const struct flame_tree *t, uint64_t min_ns, size_t max_boxes, uint64_t *ret)
{
    size_t keep = flame_layout_apart(max_boxes), wide = 0;
    _cleanup_free_ uint64_t *v = NULL;

    size_t n = 0;

    *ret = min_ns ?: 1;
    for (size_t i = 0; i < t->n; i++)
        wide += !t->nodes[i].merged && t->nodes[i].width >= *ret;
    if (wide <= keep)
        return 0;
    v = malloc(t->n * sizeof(*v));
    if (!v)
        return -ENOMEM;
    /* frames the daemon merged are merged anyway: they never stay apart */
    for (size_t i = 0; i < t->n; i++)
        if (!t->nodes[i].merged)
            v[n++] = t->nodes[i].width;
    /* only frames wider than the (keep+1)-th widest stay apart: ties merge too */
    *ret = kth_largest(v, n, keep) + 1;
    return 0;
}

struct placing {
    struct flame_layout *l;
    const struct flame_tree *t;
    uint32_t *scratch; /* the children of the frames being placed, a stack of lists */
    size_t scratch_cap;
};

static int by_name(const void *a, const void *b, void *tree)
{
    const struct flame_tree *t = tree;

    return strcmp(t->nodes[*(const uint32_t *)a].name, t->nodes[*(const uint32_t *)b].name);
}

static int push_box(struct flame_layout *l, struct flame_box box)
{
    if (array_reserve(&l->boxes, &l->cap, l->n + 1, sizeof(*l->boxes), 1024) < 0)
        return -ENOMEM;
    l->boxes[l->n++] = box;
    if (box.depth > l->max_depth)
        l->max_depth = box.depth;
    return 0;
}

static int place(struct placing *p, uint32_t node, uint32_t depth, uint64_t x, size_t base)
{
    const struct flame_node *nodes = p->t->nodes;
    struct flame_box merged = {.node = node, .depth = depth + 1};
    size_t k = 0;
    int r;

    r = push_box(p->l, (struct flame_box){.node = node,
                                          .depth = depth,
                                          .x = x,
                                          .width = nodes[node].width,
                                          .ns = {nodes[node].ns[0], nodes[node].ns[1]}});
    for (uint32_t c = nodes[node].first_child; r == 0 && c != FLAME_NONE;
         c = nodes[c].next_sibling) {
        r = array_reserve(&p->scratch, &p->scratch_cap, base + k + 1, sizeof(*p->scratch), 256);
        if (r == 0)
            p->scratch[base + k++] = c;
    }
    if (r < 0)
        return r;
    qsort_r(p->scratch + base, k, sizeof(*p->scratch), by_name, (void *)p->t);
    for (size_t i = 0; i < k; i++) {
        const struct flame_node *c = &nodes[p->scratch[base + i]];

        if (c->merged || c->width < p->l->min_ns) {
            merged.merged += c->merged ?: 1;
            merged.width += c->width;
            merged.ns[FLAME_NOW] += c->ns[FLAME_NOW];
            merged.ns[FLAME_BEFORE] += c->ns[FLAME_BEFORE];
            continue;
        }
        r = place(p, p->scratch[base + i], depth + 1, x, base + k);
        if (r < 0)
            return r;
        x += c->width;
    }
    merged.x = x;
    if (merged.merged && merged.width >= p->l->min_ns)
        return push_box(p->l, merged);
    return 0;
}

int flame_layout_make(struct flame_layout *l, const struct flame_tree *t, uint64_t min_ns,
                      size_t max_boxes)
{
    struct placing p = {.l = l, .t = t};
    int r;

    memset(l, 0, sizeof(*l));
    r = budget_min(t, min_ns, max_boxes, &l->min_ns);
    if (r == 0)
        r = place(&p, 0, 0, 0, 0);
    free(p.scratch);
    if (r < 0)
        flame_layout_done(l);
    return r;
}

void flame_layout_done(struct flame_layout *l)
{
    free(l->boxes);
    memset(l, 0, sizeof(*l));
}
