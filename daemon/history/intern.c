/* SPDX-License-Identifier: GPL-2.0-only */
#include "intern.h"
#include "array.h"
#include "fnv.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a, folded with a final mix: good enough spread for an index that
 * always confirms with a full compare. */
static uint64_t hash_bytes(const void *data, size_t len)
{
    uint64_t h = fnv1a(FNV1A_INIT, data, len);

    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

static void blobtab_init(struct blobtab *t)
{
    memset(t, 0, sizeof(*t));
    t->nslots = 1; /* id 0 is reserved */
}

static void blobtab_done(struct blobtab *t)
{
    for (uint32_t i = 1; i < t->nslots && t->slots; i++)
        free(t->slots[i]);
    free(t->slots);
    free(t->free_ids);
    free(t->index);
    memset(t, 0, sizeof(*t));
}

static int index_grow(struct blobtab *t)
{
    uint32_t size = t->index_size ? t->index_size * 2 : 1024;
    uint32_t *idx = calloc(size, sizeof(*idx));

    if (!idx)
        return -1;
    for (uint32_t id = 1; id < t->nslots; id++) {
        struct blob *b = t->slots[id];

        if (!b)
            continue;
        for (uint32_t pos = b->hash & (size - 1);; pos = (pos + 1) & (size - 1))
            if (!idx[pos]) {
                idx[pos] = id;
                break;
            }
    }
    t->bytes += (size_t)(size - t->index_size) * sizeof(*idx);
    free(t->index);
    t->index = idx;
    t->index_size = size;
    return 0;
}

/* Position in the index holding id, or of the empty slot where a blob with
 * this content would go. */
static uint32_t index_find(const struct blobtab *t, uint64_t hash, const void *data, uint32_t len)
{
    uint32_t mask = t->index_size - 1;

    for (uint32_t pos = hash & mask;; pos = (pos + 1) & mask) {
        uint32_t id = t->index[pos];
        const struct blob *b;

        if (!id)
            return pos;
        b = t->slots[id];
        if (b->hash == hash && b->len == len && memcmp(b->data, data, len) == 0)
            return pos;
    }
}

static uint32_t alloc_id(struct blobtab *t)
{
    if (t->nfree)
        return t->free_ids[--t->nfree];
    if (t->nslots >= t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        struct blob **s = realloc(t->slots, cap * sizeof(*s));

        if (!s)
            return 0;
        memset(s + t->cap, 0, (cap - t->cap) * sizeof(*s));
        t->bytes += (size_t)(cap - t->cap) * sizeof(*s);
        t->slots = s;
        t->cap = cap;
    }
    return t->nslots++;
}

static uint32_t blob_intern(struct blobtab *t, const void *data, uint32_t len, bool nul)
{
    uint64_t hash = hash_bytes(data, len);
    struct blob *b;
    uint32_t pos, id;

    /* keep the load factor under 1/2 */
    if ((t->count + 1) * 2 > t->index_size && index_grow(t) < 0)
        return 0;
    pos = index_find(t, hash, data, len);
    if (t->index[pos]) {
        id = t->index[pos];
        t->slots[id]->refs++;
        return id;
    }
    b = malloc(sizeof(*b) + len + (nul ? 1 : 0));
    if (!b)
        return 0;
    id = alloc_id(t);
    if (!id) {
        free(b);
        return 0;
    }
    b->hash = hash;
    b->serial = ++t->serials;
    b->refs = 1;
    b->len = len;
    memcpy(b->data, data, len);
    if (nul)
        b->data[len] = '\0';
    t->slots[id] = b;
    t->index[pos] = id;
    t->count++;
    t->bytes += sizeof(*b) + len + (nul ? 1 : 0);
    return id;
}

/* Remove id from the index, shifting back the entries that probed past it
 * so that lookups never stop early at the hole. */
static void index_remove(struct blobtab *t, uint32_t id)
{
    uint32_t mask = t->index_size - 1;
    uint32_t pos = t->slots[id]->hash & mask;

    while (t->index[pos] != id)
        pos = (pos + 1) & mask;
    for (uint32_t next = (pos + 1) & mask; t->index[next]; next = (next + 1) & mask) {
        uint32_t home = t->slots[t->index[next]]->hash & mask;

        /* move next into the hole unless its home lies cyclically in (pos, next] */
        if ((next > pos && (home <= pos || home > next)) ||
            (next < pos && (home <= pos && home > next))) {
            t->index[pos] = t->index[next];
            pos = next;
        }
    }
    t->index[pos] = 0;
}

/* Returns true when the blob was freed (the caller already read what it needs). */
static bool blob_unref(struct blobtab *t, uint32_t id)
{
    struct blob *b;

    if (!id)
        return false;
    b = t->slots[id];
    assert(b && b->refs > 0);
    if (--b->refs > 0)
        return false;
    index_remove(t, id);
    /* doubled, not grown by one: freeing a whole ring frees every id */
    if (array_reserve(&t->free_ids, &t->free_cap, (size_t)t->nfree + 1, sizeof(*t->free_ids),
                      64) == 0)
        t->free_ids[t->nfree++] = id;
    /* else: the id is simply never reused */
    t->bytes -= sizeof(*b) + b->len;
    free(b);
    t->slots[id] = NULL;
    t->count--;
    return true;
}

void intern_init(struct intern *in)
{
    blobtab_init(&in->strings);
    blobtab_init(&in->stacks);
}

void intern_done(struct intern *in)
{
    blobtab_done(&in->stacks);
    blobtab_done(&in->strings);
}

uint32_t intern_string(struct intern *in, const char *s)
{
    return blob_intern(&in->strings, s, strlen(s), true);
}

uint32_t intern_stack(struct intern *in, const uint32_t *frames, uint32_t nframes)
{
    uint32_t id = blob_intern(&in->stacks, frames, nframes * sizeof(*frames), false);

    /* a new stack takes a reference on each frame; a known one has them */
    if (id && in->stacks.slots[id]->refs == 1)
        for (uint32_t i = 0; i < nframes; i++)
            intern_string_ref(in, frames[i]);
    return id;
}

void intern_string_ref(struct intern *in, uint32_t id)
{
    if (id)
        in->strings.slots[id]->refs++;
}

void intern_string_unref(struct intern *in, uint32_t id)
{
    blob_unref(&in->strings, id);
}

void intern_stack_ref(struct intern *in, uint32_t id)
{
    if (id)
        in->stacks.slots[id]->refs++;
}

void intern_stack_unref(struct intern *in, uint32_t id)
{
    struct blob *b = id ? in->stacks.slots[id] : NULL;

    if (!b)
        return;
    if (b->refs == 1) {
        const uint32_t *frames = (const uint32_t *)b->data;

        for (uint32_t i = 0; i < b->len / sizeof(uint32_t); i++)
            intern_string_unref(in, frames[i]);
    }
    blob_unref(&in->stacks, id);
}

const char *intern_string_get(const struct intern *in, uint32_t id)
{
    return id && id < in->strings.nslots && in->strings.slots[id] ? in->strings.slots[id]->data
                                                                  : "";
}

const uint32_t *intern_stack_get(const struct intern *in, uint32_t id, uint32_t *nframes)
{
    const struct blob *b = id && id < in->stacks.nslots ? in->stacks.slots[id] : NULL;

    *nframes = b ? b->len / sizeof(uint32_t) : 0;
    return b ? (const uint32_t *)b->data : NULL;
}

static uint64_t serial_of(const struct blobtab *t, uint32_t id)
{
    return id && id < t->nslots && t->slots[id] ? t->slots[id]->serial : 0;
}

uint64_t intern_string_serial(const struct intern *in, uint32_t id)
{
    return serial_of(&in->strings, id);
}

uint64_t intern_stack_serial(const struct intern *in, uint32_t id)
{
    return serial_of(&in->stacks, id);
}

size_t intern_stack_share(const struct intern *in, uint32_t id)
{
    const struct blob *b = id && id < in->stacks.nslots ? in->stacks.slots[id] : NULL;

    return b ? (sizeof(*b) + b->len) / b->refs : 0;
}

size_t intern_bytes(const struct intern *in)
{
    return in->strings.bytes + in->stacks.bytes;
}
