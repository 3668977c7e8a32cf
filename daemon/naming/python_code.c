/* SPDX-License-Identifier: GPL-2.0-only */
#include "python_code.h"

#include <errno.h>
#include <linux/types.h> /* offcpu.h's types */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"
#include "macro.h"
#include "offcpu.h"
#include "python_lines.h"
#include "python_objects.h"

/* Code objects kept, and the memory they may take together; past either the
 * ones used least recently go (named again by reading them when next seen). */
#define CODE_ENTRIES_MAX 16384
#define CODE_BYTES_MAX   (32u << 20)
/* A location table over this gives no lines (counted): CPython's own are a
 * few bytes per line of source, so only generated code of thousands of
 * lines reaches it. */
#define LINETABLE_MAX (64u << 10)
#define HASH_BUCKETS  4096 /* a power of 2 */
/* Type objects whose verdict is kept: a process has one code type, and few
 * others are ever asked about; past this the oldest verdict is replaced. */
#define TYPE_VERDICTS_MAX 64
/* Processes found gone, kept a while: their code objects, checked while
 * they lived, can no longer change, and their last blocks come in drains
 * after the exit, a held one (bpf/offcpu.h) up to OFFCPU_DEFER_MAX_NS after
 * it ended. Past this many gone at once, the one gone longest is forgotten
 * first. */
#define GONE_MAX       1024
#define GONE_LINGER_NS ((int64_t)(2 * OFFCPU_DEFER_MAX_NS))

struct code_entry {
    struct code_entry *hash_next;
    struct code_entry *lru_prev, *lru_next; /* most recently used first */
    pid_t pid;
    uint32_t layout;
    uint64_t addr;
    uint64_t pass; /* checked against the process in this pass */
    struct python_code_header header;
    char *qualname, *file;
    uint8_t *linetable; /* NULL: over LINETABLE_MAX, no lines */
    size_t linetable_size;
    size_t bytes; /* what it takes, against CODE_BYTES_MAX */
};

struct type_verdict {
    pid_t pid; /* 0: free */
    uint32_t layout;
    uint64_t addr;
    bool is_code;
};

struct python_code_cache {
    struct code_entry *buckets[HASH_BUCKETS];
    struct code_entry *lru_head, *lru_tail;
    uint64_t pass;
    struct type_verdict verdicts[TYPE_VERDICTS_MAX];
    size_t next_verdict; /* the slot a new verdict replaces */
    int64_t pass_ns;     /* when the pass began */
    struct {
        pid_t pid;
        int64_t since_ns; /* the pass that found it gone */
    } gone[GONE_MAX];     /* a ring, the one gone longest at first */
    size_t first_gone, ngone;
    struct python_code_stats stats;
};

int python_code_cache_new(struct python_code_cache **ret)
{
    struct python_code_cache *c = calloc(1, sizeof(*c));

    if (!c)
        return -ENOMEM;
    c->pass = 1;
    *ret = c;
    return 0;
}

static struct code_entry **bucket_of(struct python_code_cache *c, pid_t pid, uint64_t addr)
{
    uint64_t h = fnv1a(FNV1A_INIT, &pid, sizeof(pid));

    h = fnv1a(h, &addr, sizeof(addr));
    return &c->buckets[h & (HASH_BUCKETS - 1)];
}

static void lru_unlink(struct python_code_cache *c, struct code_entry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        c->lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        c->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_push(struct python_code_cache *c, struct code_entry *e)
{
    e->lru_next = c->lru_head;
    if (c->lru_head)
        c->lru_head->lru_prev = e;
    else
        c->lru_tail = e;
    c->lru_head = e;
}

static struct code_entry *entry_free(struct code_entry *e)
{
    if (!e)
        return NULL;
    free(e->qualname);
    free(e->file);
    free(e->linetable);
    free(e);
    return NULL;
}

static inline void entry_freep(struct code_entry **e)
{
    entry_free(*e);
}

static void entry_drop(struct python_code_cache *c, struct code_entry *e)
{
    struct code_entry **p = bucket_of(c, e->pid, e->addr);

    while (*p != e)
        p = &(*p)->hash_next;
    *p = e->hash_next;
    lru_unlink(c, e);
    c->stats.entries--;
    c->stats.bytes -= e->bytes;
    entry_free(e);
}

struct python_code_cache *python_code_cache_free(struct python_code_cache *c)
{
    if (!c)
        return NULL;
    while (c->lru_head)
        entry_drop(c, c->lru_head);
    free(c);
    return NULL;
}

/* The process gone longest is forgotten. */
static void forget_first_gone(struct python_code_cache *c)
{
    python_code_forget(c, c->gone[c->first_gone].pid);
    c->first_gone = (c->first_gone + 1) % GONE_MAX;
    c->ngone--;
}

void python_code_begin_pass(struct python_code_cache *c, int64_t now_ns)
{
    while (c->ngone && now_ns - c->gone[c->first_gone].since_ns >= GONE_LINGER_NS)
        forget_first_gone(c);
    c->pass++;
    c->pass_ns = now_ns;
}

/* pid is gone: forgotten GONE_LINGER_NS from now. */
static void note_gone(struct python_code_cache *c, pid_t pid)
{
    for (size_t i = 0; i < c->ngone; i++)
        if (c->gone[(c->first_gone + i) % GONE_MAX].pid == pid)
            return;
    if (c->ngone == GONE_MAX)
        forget_first_gone(c);
    c->gone[(c->first_gone + c->ngone++) % GONE_MAX] = (typeof(c->gone[0])){pid, c->pass_ns};
}

void python_code_forget(struct python_code_cache *c, pid_t pid)
{
    for (struct code_entry *e = c->lru_head, *next; e; e = next) {
        next = e->lru_next;
        if (e->pid == pid)
            entry_drop(c, e);
    }
    for (size_t i = 0; i < TYPE_VERDICTS_MAX; i++)
        if (c->verdicts[i].pid == pid)
            c->verdicts[i].pid = 0;
}

static struct code_entry *entry_find(struct python_code_cache *c, pid_t pid, uint64_t addr)
{
    for (struct code_entry *e = *bucket_of(c, pid, addr); e; e = e->hash_next)
        if (e->pid == pid && e->addr == addr)
            return e;
    return NULL;
}

/* Whether the type at addr is the code type: asked of the process once per
 * (pid, type), which makes it free after the first code object of a process.
 * A verdict holds while the process lives: the code type is static in the
 * interpreter's image, never at another address, and a process is forgotten
 * when it execs. */
static int type_is_code(struct python_code_cache *c, pid_t pid, uint32_t layout,
                        const struct python_object_layout *l, uint64_t addr)
{
    struct type_verdict *v;
    int r;

    for (size_t i = 0; i < TYPE_VERDICTS_MAX; i++) {
        v = &c->verdicts[i];
        if (v->pid == pid && v->layout == layout && v->addr == addr)
            return v->is_code;
    }
    r = python_type_is_code(pid, l, addr);
    if (r < 0)
        return r;
    v = &c->verdicts[c->next_verdict];
    c->next_verdict = (c->next_verdict + 1) % TYPE_VERDICTS_MAX;
    *v = (struct type_verdict){.pid = pid, .layout = layout, .addr = addr, .is_code = r};
    return r;
}

static bool header_same(const struct python_code_header *a, const struct python_code_header *b)
{
    return a->type == b->type && a->qualname == b->qualname && a->filename == b->filename &&
           a->linetable == b->linetable && a->units == b->units && a->firstlineno == b->firstlineno;
}

/* Read what names the code object whose header is h, into a new entry. */
static int entry_read(struct python_code_cache *c, pid_t pid, uint32_t layout,
                      const struct python_object_layout *l, uint64_t addr,
                      const struct python_code_header *h, struct code_entry **ret)
{
    _cleanup_(entry_freep) struct code_entry *e = NULL;
    _cleanup_free_ struct python_frame_name *n = malloc(sizeof(*n));
    int r;

    e = calloc(1, sizeof(*e));
    if (!n || !e)
        return -ENOMEM;
    r = python_read_str(pid, l, h->qualname, n->qualname, sizeof(n->qualname));
    if (r < 0)
        return r;
    r = python_read_str(pid, l, h->filename, n->file, sizeof(n->file));
    if (r < 0)
        return r;
    r = python_read_bytes(pid, l, h->linetable, LINETABLE_MAX, &e->linetable, &e->linetable_size);
    if (r == -E2BIG)
        c->stats.linetables_too_big++;
    else if (r < 0)
        return r;
    e->qualname = strdup(n->qualname);
    e->file = strdup(n->file);
    if (!e->qualname || !e->file)
        return -ENOMEM;
    e->pid = pid;
    e->layout = layout;
    e->addr = addr;
    e->header = *h;
    e->bytes = sizeof(*e) + strlen(e->qualname) + 1 + strlen(e->file) + 1 + e->linetable_size;
    *ret = e;
    e = NULL;
    return 0;
}

static void entry_add(struct python_code_cache *c, struct code_entry *e)
{
    struct code_entry **b = bucket_of(c, e->pid, e->addr);

    while (c->lru_tail &&
           (c->stats.entries >= CODE_ENTRIES_MAX || c->stats.bytes + e->bytes > CODE_BYTES_MAX)) {
        entry_drop(c, c->lru_tail);
        c->stats.evicted++;
    }
    e->hash_next = *b;
    *b = e;
    lru_push(c, e);
    c->stats.entries++;
    c->stats.bytes += e->bytes;
}

/* The entry of the code object at addr, checked against the process on its
 * first use in the pass and read again if it changed. */
static int entry_get(struct python_code_cache *c, pid_t pid, uint32_t layout,
                     const struct python_object_layout *l, uint64_t addr, struct code_entry **ret)
{
    struct code_entry *e = entry_find(c, pid, addr);
    struct python_code_header h;
    int r;

    if (e && e->layout == layout && e->pass == c->pass) {
        c->stats.cache_hits++;
        *ret = e;
        return 0;
    }
    r = python_read_code_header(pid, l, addr, &h);
    if (r == -ESRCH)
        note_gone(c, pid);
    if (r == -ESRCH && e && e->layout == layout) {
        /* checked while the process lived, and nothing changes it now */
        c->stats.cache_hits++;
        *ret = e;
        return 0;
    }
    if (r == 0)
        r = type_is_code(c, pid, layout, l, h.type);
    if (r == 0 || (r > 0 && h.units <= 0))
        r = -EINVAL;
    if (r < 0 && e && e->layout == layout && e->pass + 1 == c->pass) {
        /* No code object there now, where the last pass checked one: the
         * frames named now were recorded since, in a live code object, and
         * it has died (an interpreter finalizing before its exit frees
         * them all). Named after the one checked, not refreshed: the next
         * pass drops it. */
        c->stats.freed_since++;
        *ret = e;
        return 0;
    }
    if (r < 0) {
        if (e)
            entry_drop(c, e);
        return r;
    }
    if (e && e->layout == layout && header_same(&e->header, &h)) {
        c->stats.cache_hits++;
    } else {
        if (e)
            entry_drop(c, e);
        r = entry_read(c, pid, layout, l, addr, &h, &e);
        if (r < 0)
            return r;
        entry_add(c, e);
    }
    e->pass = c->pass;
    *ret = e;
    return 0;
}

int python_code_name(struct python_code_cache *c, pid_t pid, uint32_t layout, uint64_t code,
                     int32_t lasti, struct python_frame_name *ret)
{
    const struct python_object_layout *l = python_object_layout_of(layout);
    struct code_entry *e;
    int r;

    if (!l)
        return -EOPNOTSUPP;
    r = entry_get(c, pid, layout, l, code, &e);
    if (r == 0 && lasti >= e->header.units)
        r = -EINVAL; /* past its end: not the code object the frame ran */
    if (r == -ESRCH || r == -EFAULT) {
        c->stats.unreadable++;
    } else if (r == -EINVAL) {
        c->stats.not_code++;
    }
    if (r < 0)
        return r;
    lru_unlink(c, e);
    lru_push(c, e);
    snprintf(ret->qualname, sizeof(ret->qualname), "%s", e->qualname);
    snprintf(ret->file, sizeof(ret->file), "%s", e->file);
    if (lasti < 0)
        ret->line = e->header.firstlineno;
    else if (!e->linetable)
        ret->line = -1;
    else
        ret->line = python_line(e->linetable, e->linetable_size, e->header.firstlineno, lasti);
    c->stats.named++;
    return 0;
}

void python_code_stats(const struct python_code_cache *c, struct python_code_stats *ret)
{
    *ret = c->stats;
}
