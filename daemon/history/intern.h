/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Interned strings (frame names, comms, cgroup paths) and interned stacks
 * (arrays of string ids, root first). Every snapshot shares them; each holds
 * references, so that evicting a snapshot frees what no one else uses.
 * Id 0 is never handed out: it means "none".
 */
#ifndef INTERN_H
#define INTERN_H

#include <stddef.h>
#include <stdint.h>

struct blob {
    uint64_t hash;
    uint64_t serial; /* unique in its table for good: tells a reused id's new content apart */
    uint32_t refs;
    uint32_t len; /* bytes of data */
    char data[];  /* strings are NUL-terminated (not counted in len) */
};

/* Deduplicating table of byte strings, ids stable while referenced. */
struct blobtab {
    struct blob **slots; /* id -> blob; NULL when free */
    uint32_t nslots;     /* ids handed out so far, 0 included */
    uint32_t cap;
    uint32_t *free_ids; /* ids of freed slots, reused first */
    uint32_t nfree;
    size_t free_cap;
    uint32_t *index;     /* open addressing: ids, 0 = empty */
    uint32_t index_size; /* power of two */
    uint32_t count;
    uint64_t serials; /* handed out so far */
    size_t bytes;     /* memory held, for the ring's limit */
};

struct intern {
    struct blobtab strings;
    struct blobtab stacks; /* data: uint32_t string ids */
};

void intern_init(struct intern *in);
void intern_done(struct intern *in);

/* Both return a new reference, or 0 when out of memory. */
uint32_t intern_string(struct intern *in, const char *s);
uint32_t intern_stack(struct intern *in, const uint32_t *frames, uint32_t nframes);

void intern_string_ref(struct intern *in, uint32_t id);
void intern_string_unref(struct intern *in, uint32_t id);
void intern_stack_ref(struct intern *in, uint32_t id);
/* Dropping a stack's last reference drops its frames' references too. */
void intern_stack_unref(struct intern *in, uint32_t id);

const char *intern_string_get(const struct intern *in, uint32_t id);
const uint32_t *intern_stack_get(const struct intern *in, uint32_t id, uint32_t *nframes);

/* The serial of what id holds now (0 for none): an id freed and handed out
 * again gets another, so a copy kept elsewhere (the journal) knows it is stale. */
uint64_t intern_string_serial(const struct intern *in, uint32_t id);
uint64_t intern_stack_serial(const struct intern *in, uint32_t id);

size_t intern_bytes(const struct intern *in);

/* The memory one stack holds, divided among the references to it: what
 * dropping one reference would free, on average. */
size_t intern_stack_share(const struct intern *in, uint32_t id);

#endif
