/* SPDX-License-Identifier: GPL-2.0-only */
#include "frame_cache.h"

#include <errno.h>
#include <stdlib.h>

#include "frame_names.h"
#include "frame_where.h"

#define FRAME_MAX 512

/* What an address is named as, with the address, tgid and exec_id. */
enum frame_kind {
    KIND_USER = 0,
    KIND_USER_LEAF = 1,
    KIND_KERNEL = 2,
    KIND_KERNEL_LEAF = 3,
    KIND_PYTHON = 4, /* + the walk's layout */
};

struct entry {
    uint64_t ip;
    uint32_t tgid, exec_id;
    uint32_t kind; /* enum frame_kind */
    bool used;
    struct named_frame f;
};

struct frame_cache {
    struct symbolizer *sym;
    struct intern *in;
    struct entry *slots;
    size_t size; /* power of two */
    size_t count;
};

int frame_cache_new(struct symbolizer *sym, struct intern *in, struct frame_cache **ret)
{
    struct frame_cache *c = calloc(1, sizeof(*c));

    if (!c)
        return -ENOMEM;
    *c = (struct frame_cache){.sym = sym, .in = in, .size = 4096};
    c->slots = calloc(c->size, sizeof(*c->slots));
    if (!c->slots) {
        free(c);
        return -ENOMEM;
    }
    *ret = c;
    return 0;
}

struct frame_cache *frame_cache_free(struct frame_cache *c)
{
    if (!c)
        return NULL;
    for (size_t i = 0; i < c->size; i++)
        if (c->slots[i].used) {
            intern_string_unref(c->in, c->slots[i].f.name);
            intern_string_unref(c->in, c->slots[i].f.offset);
            intern_string_unref(c->in, c->slots[i].f.file);
            intern_stack_unref(c->in, c->slots[i].f.inlined);
        }
    free(c->slots);
    free(c);
    return NULL;
}

static uint64_t hash_of(uint64_t ip, uint32_t tgid, uint32_t exec_id, uint32_t kind)
{
    uint64_t h = ip ^ ((uint64_t)tgid << 32 | exec_id) * 0x9e3779b97f4a7c15ULL;

    h ^= (uint64_t)kind << 56;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 29);
}

static struct entry *slot_for(struct entry *slots, size_t size, uint64_t ip, uint32_t tgid,
                              uint32_t exec_id, uint32_t kind)
{
    for (size_t i = hash_of(ip, tgid, exec_id, kind) & (size - 1);; i = (i + 1) & (size - 1)) {
        struct entry *e = &slots[i];

        if (!e->used ||
            (e->ip == ip && e->tgid == tgid && e->exec_id == exec_id && e->kind == kind))
            return e;
    }
}

static int grow(struct frame_cache *c)
{
    size_t size = c->size * 2;
    struct entry *slots = calloc(size, sizeof(*slots));

    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < c->size; i++) {
        const struct entry *e = &c->slots[i];

        if (e->used)
            *slot_for(slots, size, e->ip, e->tgid, e->exec_id, e->kind) = *e;
    }
    free(c->slots);
    c->slots = slots;
    c->size = size;
    return 0;
}

/* The frames before the last of names[0, n), as a stack (0 if none). */
static uint32_t intern_inlined(struct intern *in, const char *const *names, size_t n)
{
    uint32_t ids[FRAME_NAMES_MAX], id = 0;
    size_t i;

    for (i = 0; i + 1 < n; i++)
        if (!(ids[i] = intern_string(in, names[i])))
            break;
    if (i + 1 == n && i > 0)
        id = intern_stack(in, ids, (uint32_t)i);
    while (i-- > 0)
        intern_string_unref(in, ids[i]);
    return id;
}

/* Name the frame and intern its strings. */
static void name(struct frame_cache *c, struct entry *e)
{
    char text[FRAME_MAX], offset[FRAME_WHERE_TEXT_MAX], file[FRAME_WHERE_TEXT_MAX];
    struct frame_where where = {0};
    const char *names[FRAME_NAMES_MAX];
    /* the bits of the native kinds; a Python frame's kind is a number */
    bool python = e->kind >= KIND_PYTHON, kernel = !python && (e->kind & KIND_KERNEL);
    bool leaf = !python && (e->kind & KIND_USER_LEAF);
    size_t n;

    if (python)
        e->f.result = symbolizer_python_frame(c->sym, e->tgid, e->kind - KIND_PYTHON, e->ip, text,
                                              sizeof(text), &where);
    else if (kernel)
        e->f.result = symbolizer_kernel_frame(c->sym, e->ip, leaf, text, sizeof(text));
    else
        e->f.result = symbolizer_user_frame(c->sym, e->tgid, e->exec_id, e->ip, leaf, text,
                                            sizeof(text), &where);
    if (!kernel) {
        frame_where_format(&where, offset, file);
        e->f.offset = intern_string(c->in, offset);
        e->f.file = intern_string(c->in, file);
    }
    n = frame_names_split(text, names, FRAME_NAMES_MAX);
    e->f.inlined = intern_inlined(c->in, names, n);
    e->f.name = intern_string(c->in, names[n - 1]);
}

static const struct named_frame *get(struct frame_cache *c, pid_t tgid, uint32_t exec_id,
                                     uint64_t ip, uint32_t kind)
{
    struct entry *e;

    if (2 * (c->count + 1) > c->size && grow(c) < 0)
        return NULL;
    e = slot_for(c->slots, c->size, ip, tgid, exec_id, kind);
    if (!e->used) {
        *e = (struct entry){.ip = ip, .tgid = tgid, .exec_id = exec_id, .kind = kind, .used = true};
        name(c, e);
        c->count++;
    }
    return &e->f;
}

const struct named_frame *frame_cache_get(struct frame_cache *c, pid_t tgid, uint32_t exec_id,
                                          uint64_t ip, bool is_leaf, bool kernel)
{
    if (kernel)
        tgid = exec_id = 0; /* the same in every process */
    return get(c, tgid, exec_id, ip, (kernel ? KIND_KERNEL : KIND_USER) | is_leaf);
}

const struct named_frame *frame_cache_get_python(struct frame_cache *c, pid_t tgid,
                                                 uint32_t exec_id, uint64_t word, uint32_t layout)
{
    return get(c, tgid, exec_id, word, KIND_PYTHON + layout);
}
