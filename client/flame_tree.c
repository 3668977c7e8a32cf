/* SPDX-License-Identifier: GPL-2.0-only */
#include "flame_tree.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

/* FNV-1a: the names are short; the tables stay at most half full */
static uint64_t hash_text(const char *s)
{
    uint64_t h = 14695981039346656037ULL;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static uint64_t hash_child(uint32_t parent, const char *name)
{
    uint64_t h = ((uint64_t)parent << 32) ^ (uint64_t)(uintptr_t)name;

    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

static int grow_names(struct flame_tree *t)
{
    size_t size = t->names_size ? t->names_size * 2 : 1024;
    const char **names = calloc(size, sizeof(*names));

    if (!names)
        return -ENOMEM;
    for (size_t i = 0; i < t->names_size; i++) {
        size_t j;

        if (!t->names[i])
            continue;
        for (j = hash_text(t->names[i]) & (size - 1); names[j]; j = (j + 1) & (size - 1))
            ;
        names[j] = t->names[i];
    }
    free(t->names);
    t->names = names;
    t->names_size = size;
    return 0;
}

/* One pointer per distinct text, so that children compare by pointer. */
static const char *intern_name(struct flame_tree *t, const char *s)
{
    size_t i;

    if (2 * (t->names_n + 1) > t->names_size && grow_names(t) < 0)
        return NULL;
    for (i = hash_text(s) & (t->names_size - 1); t->names[i]; i = (i + 1) & (t->names_size - 1))
        if (strcmp(t->names[i], s) == 0)
            return t->names[i];
    t->names_n++;
    return t->names[i] = s;
}

static int grow_children(struct flame_tree *t)
{
    size_t size = t->children_size ? t->children_size * 2 : 4096;
    uint32_t *children = malloc(size * sizeof(*children));

    if (!children)
        return -ENOMEM;
    memset(children, 0xff, size * sizeof(*children));
    for (size_t i = 0; i < t->children_size; i++) {
        uint32_t c = t->children[i];
        size_t j;

        if (c == FLAME_NONE)
            continue;
        for (j = hash_child(t->nodes[c].parent, t->nodes[c].name) & (size - 1);
             children[j] != FLAME_NONE; j = (j + 1) & (size - 1))
            ;
        children[j] = c;
    }
    free(t->children);
    t->children = children;
    t->children_size = size;
    return 0;
}

static int64_t add_node(struct flame_tree *t, uint32_t parent, const char *name,
                        enum flame_kind kind)
{
    if (t->n >= FLAME_NONE)
        return -ENOMEM;
    if (array_reserve(&t->nodes, &t->cap, t->n + 1, sizeof(*t->nodes), 1024) < 0)
        return -ENOMEM;
    if (t->state_ns) {
        if (array_reserve(&t->state_ns, &t->state_cap, t->n + 1, sizeof(*t->state_ns), 1024) < 0)
            return -ENOMEM;
        memset(t->state_ns[t->n], 0, sizeof(*t->state_ns));
    }
    t->nodes[t->n] = (struct flame_node){
        .name = name,
        .parent = parent,
        .first_child = FLAME_NONE,
        .next_sibling = parent == FLAME_NONE ? FLAME_NONE : t->nodes[parent].first_child,
        .kind = kind,
    };
    if (parent != FLAME_NONE)
        t->nodes[parent].first_child = (uint32_t)t->n;
    return (int64_t)t->n++;
}

/* The child of parent named name, made if new: its index, or -ENOMEM. */
static int64_t child(struct flame_tree *t, uint32_t parent, const char *text, enum flame_kind kind)
{
    const char *name = intern_name(t, text);
    size_t i, mask;
    int64_t r;

    if (!name)
        return -ENOMEM;
    if (2 * (t->n + 1) > t->children_size && grow_children(t) < 0)
        return -ENOMEM;
    mask = t->children_size - 1;
    for (i = hash_child(parent, name) & mask; t->children[i] != FLAME_NONE; i = (i + 1) & mask) {
        const struct flame_node *c = &t->nodes[t->children[i]];

        if (c->parent == parent && c->name == name)
            return t->children[i];
    }
    r = add_node(t, parent, name, kind);
    if (r < 0)
        return r;
    t->children[i] = (uint32_t)r;
    return r;
}

int flame_tree_init(struct flame_tree *t, bool by_state)
{
    memset(t, 0, sizeof(*t));
    if (by_state && array_reserve(&t->state_ns, &t->state_cap, 1, sizeof(*t->state_ns), 1024) < 0)
        return -ENOMEM;
    if (add_node(t, FLAME_NONE, "all", FLAME_ROOT) < 0) {
        flame_tree_done(t);
        return -ENOMEM;
    }
    return 0;
}

void flame_tree_done(struct flame_tree *t)
{
    free(t->nodes);
    free(t->state_ns);
    free(t->children);
    free(t->names);
    memset(t, 0, sizeof(*t));
}

unsigned flame_state_index(const char *state)
{
    const char *p = state && state[0] && !state[1] ? strchr(FLAME_STATES, state[0]) : NULL;

    return p ? (unsigned)(p - FLAME_STATES) : FLAME_STATE_COUNT - 1;
}

void flame_tree_diff_widths(struct flame_tree *t, double before_scale)
{
    for (size_t i = 0; i < t->n; i++)
        t->nodes[i].width = 0;
    /* children come after their parent: from the last node back, each is
     * whole before it is added to its parent */
    for (size_t i = t->n; i-- > 0;) {
        struct flame_node *n = &t->nodes[i];
        uint64_t own[FLAME_WINDOWS] = {n->ns[FLAME_NOW], n->ns[FLAME_BEFORE]}, before;

        /* a node's own time: the stacks that end on it */
        for (uint32_t c = n->first_child; c != FLAME_NONE; c = t->nodes[c].next_sibling)
            for (int w = 0; w < FLAME_WINDOWS; w++)
                own[w] -= t->nodes[c].ns[w];
        before = (uint64_t)llround((double)own[FLAME_BEFORE] * before_scale);
        n->width += own[FLAME_NOW] > before ? own[FLAME_NOW] : before;
        if (n->parent != FLAME_NONE)
            t->nodes[n->parent].width += n->width;
    }
}

/* Adds ns to node and every node above it. */
static void charge(struct flame_tree *t, uint32_t node, enum flame_window w, uint64_t ns,
                   unsigned state)
{
    for (; node != FLAME_NONE; node = t->nodes[node].parent) {
        t->nodes[node].ns[w] += ns;
        if (w == FLAME_NOW)
            t->nodes[node].width += ns;
        if (t->state_ns && w == FLAME_NOW)
            t->state_ns[node][state] += ns;
    }
}

static int64_t add_frames(struct flame_tree *t, int64_t node, const json_t *frames,
                          enum flame_kind kind)
{
    size_t i;
    json_t *v;

    json_array_foreach(frames, i, v)
    {
        if (node < 0)
            break;
        node = child(t, (uint32_t)node, json_string_value(v) ?: "?", kind);
    }
    return node;
}

static int64_t add_frames_reversed(struct flame_tree *t, int64_t node, const json_t *frames)
{
    for (size_t i = json_array_size(frames); i-- > 0 && node >= 0;)
        node = child(t, (uint32_t)node, json_string_value(json_array_get(frames, i)) ?: "?",
                     FLAME_WAKER);
    return node;
}

/* The waker of a Wakers stack, past the blocked task's kernel leaf. */
static int64_t add_waker(struct flame_tree *t, int64_t node, const json_t *stack)
{
    const char *comm = json_string_value(json_object_get(stack, "waker_comm"));

    if (node >= 0)
        node = child(t, (uint32_t)node, "--", FLAME_WAKER);
    node = add_frames_reversed(t, node, json_object_get(stack, "waker_kernel"));
    if (node >= 0)
        node = child(t, (uint32_t)node, "-", FLAME_WAKER);
    node = add_frames_reversed(t, node, json_object_get(stack, "waker_user"));
    if (node >= 0)
        node = child(t, (uint32_t)node, comm ?: "?", FLAME_WAKER);
    return node;
}

static int add_stack(struct flame_tree *t, const json_t *stack, enum flame_window w)
{
    const json_t *user = json_object_get(stack, "user"), *kernel = json_object_get(stack, "kernel");
    const json_t *total = json_object_get(stack, "total_ns");
    const char *comm = json_string_value(json_object_get(stack, "comm"));
    int64_t node;

    if (!json_is_array(user) || !json_is_array(kernel) || !json_is_integer(total) ||
        json_integer_value(total) < 0)
        return -EINVAL;
    node = child(t, 0, comm ?: "?", FLAME_COMM);
    node = add_frames(t, node, user, FLAME_USER);
    if (node >= 0)
        node = child(t, (uint32_t)node, "-", FLAME_SEPARATOR);
    node = add_frames(t, node, kernel, FLAME_KERNEL);
    if (json_object_get(stack, "waker_comm"))
        node = add_waker(t, node, stack);
    /* offcpuctl why: the later hops of a chain, past its first waker */
    node = add_frames(t, node, json_object_get(stack, "chain"), FLAME_WAKER);
    if (node < 0)
        return (int)node;
    charge(t, (uint32_t)node, w, (uint64_t)json_integer_value(total),
           flame_state_index(json_string_value(json_object_get(stack, "state"))));
    return 0;
}

int flame_tree_add(struct flame_tree *t, const json_t *reply, enum flame_window w)
{
    const json_t *stacks = json_object_get(reply, "stacks");
    size_t i;
    json_t *s;

    json_array_foreach(stacks, i, s)
    {
        int r = add_stack(t, s, w);

        if (r < 0)
            return r;
    }
    return 0;
}

static enum flame_kind frame_kind(const char *kind)
{
    static const struct {
        const char *name;
        enum flame_kind kind;
    } kinds[] = {{"comm", FLAME_COMM},
                 {"user", FLAME_USER},
                 {"separator", FLAME_SEPARATOR},
                 {"kernel", FLAME_KERNEL}};

    for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(kind, kinds[i].name) == 0)
            return kinds[i].kind;
    return FLAME_ROOT; /* "narrow", which is drawn merged */
}

static void add_state_ns(struct flame_tree *t, uint32_t node, const json_t *states)
{
    const char *state;
    json_t *v;

    json_object_foreach((json_t *)states, state, v) t->state_ns[node][flame_state_index(state)] +=
        (uint64_t)json_integer_value(v);
}

int flame_tree_add_frames(struct flame_tree *t, const json_t *reply)
{
    const json_t *frames = json_object_get(reply, "frames");
    size_t i;
    json_t *f;

    json_array_foreach(frames, i, f)
    {
        json_int_t parent = json_integer_value(json_object_get(f, "parent"));
        const json_t *total = json_object_get(f, "total_ns");
        const char *name = json_string_value(json_object_get(f, "name"));
        int64_t node = 0;

        if (!name || !json_is_integer(total) || json_integer_value(total) < 0 ||
            (i > 0 && (parent < 0 || (size_t)parent >= i)))
            return -EINVAL;
        if (i > 0)
            node = add_node(t, (uint32_t)parent, name,
                            frame_kind(json_string_value(json_object_get(f, "kind"))));
        if (node < 0)
            return (int)node;
        t->nodes[node].ns[FLAME_NOW] = t->nodes[node].width = (uint64_t)json_integer_value(total);
        t->nodes[node].merged = (uint32_t)json_integer_value(json_object_get(f, "merged"));
        if (t->state_ns)
            add_state_ns(t, (uint32_t)node, json_object_get(f, "state_ns"));
    }
    return 0;
}
