/* SPDX-License-Identifier: GPL-2.0-only */
#include "go_pclntab.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* The magic numbers of the table's layouts (Go's runtime/symtab.go) */
enum {
    GO_1_2 = 0xfffffffb,
    GO_1_16 = 0xfffffffa,
    GO_1_18 = 0xfffffff0,
    GO_1_20 = 0xfffffff1,
};

/* The header's first 8 bytes: magic, two zero bytes, the instruction size
 * quantum (1 on x86), the pointer size; then words of that size. */
#define HEADER_FIXED 8

struct table {
    const uint8_t *data;
    size_t size;
    unsigned ptr; /* 4 or 8 */
};

/* Little-endian: the table is in the byte order of the target, and the
 * daemon reads x86-64 programs only. */
static bool read_uint(const struct table *t, uint64_t off, unsigned len, uint64_t *ret)
{
    uint64_t v = 0;

    if (off > t->size || len > t->size - off)
        return false;
    for (unsigned i = 0; i < len; i++)
        v |= (uint64_t)t->data[off + i] << (8 * i);
    *ret = v;
    return true;
}

static bool read_word(const struct table *t, uint64_t off, uint64_t *ret)
{
    return read_uint(t, off, t->ptr, ret);
}

/* The name at off, NUL-terminated inside the section, or NULL. */
static const char *name_at(const struct table *t, uint64_t off)
{
    if (off >= t->size || !memchr(t->data + off, '\0', t->size - off))
        return NULL;
    return (const char *)t->data + off;
}

/* Where each layout keeps its parts */
struct layout {
    uint64_t nfunc;
    uint64_t functab;      /* the (entry, func) pairs, nfunc + 1 of them */
    unsigned field;        /* the size of each half of a pair: 4 (Go 1.18 on) or ptr */
    uint64_t func_base;    /* a pair's func offset counts from here */
    uint64_t name_base;    /* a func's name offset counts from here */
    uint64_t entry_base;   /* a pair's entry counts from here (0: absolute) */
    unsigned name_in_func; /* where the name offset is in a func: after its entry */
};

static int read_layout(const struct table *t, uint32_t magic, uint64_t text_start, struct layout *l)
{
    uint64_t w[8];
    unsigned nwords = magic == GO_1_2 ? 1 : magic == GO_1_16 ? 7 : 8;

    for (unsigned i = 0; i < nwords; i++)
        if (!read_word(t, HEADER_FIXED + (uint64_t)i * t->ptr, &w[i]))
            return -EBADMSG;
    *l = (struct layout){.nfunc = w[0]};
    switch (magic) {
    case GO_1_2:
        /* the pairs right after the header; offsets from the table's start */
        l->functab = HEADER_FIXED + t->ptr;
        l->field = t->ptr;
        l->name_in_func = t->ptr;
        break;
    case GO_1_16:
        /* nfunc, nfiles, funcname, cu, filetab, pctab, pcln offsets */
        l->functab = l->func_base = w[6];
        l->name_base = w[2];
        l->field = t->ptr;
        l->name_in_func = t->ptr;
        break;
    default:
        /* nfunc, nfiles, text start, funcname, cu, filetab, pctab, pcln
         * offsets; entries are 32-bit offsets from the start of the text */
        l->entry_base = w[2] ? w[2] : text_start;
        l->functab = l->func_base = w[7];
        l->name_base = w[3];
        l->field = 4;
        l->name_in_func = 4;
        break;
    }
    /* each pair takes 2 * field bytes: a count the section cannot hold is a lie */
    if (l->nfunc == 0 || l->nfunc > t->size / (2 * l->field))
        return -EBADMSG;
    return 0;
}

bool go_function_is_stack_root(const char *name, bool is_leaf)
{
    /* a thread's or goroutine's first frame: nothing was ever below it */
    static const char *const roots[] = {"goexit", "mstart", "rt0_go"};
    /* they call on a stack they switched to (mcall: the thread's own, g0;
     * clone: the new thread's); as the interrupted pc they are still on
     * their caller's, whose frames are real (a clone blocking in the parent) */
    static const char *const switches[] = {"mcall", "clone"};
    static const char prefix[] = "runtime.";
    const char *base = name + sizeof(prefix) - 1;

    if (strncmp(name, prefix, sizeof(prefix) - 1) != 0)
        return false;
    for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
        if (strcmp(base, roots[i]) == 0)
            return true;
    for (size_t i = 0; !is_leaf && i < sizeof(switches) / sizeof(switches[0]); i++)
        if (strcmp(base, switches[i]) == 0)
            return true;
    return false;
}

int go_pclntab_functions(const uint8_t *data, size_t size, uint64_t text_start, go_func_fn fn,
                         void *userdata)
{
    struct table t = {.data = data, .size = size};
    struct layout l;
    uint64_t magic;
    int r;

    if (size < HEADER_FIXED || !read_uint(&t, 0, 4, &magic))
        return -EBADMSG;
    if (magic != GO_1_2 && magic != GO_1_16 && magic != GO_1_18 && magic != GO_1_20)
        return -EPROTONOSUPPORT;
    t.ptr = data[7];
    if (data[4] != 0 || data[5] != 0 || (t.ptr != 4 && t.ptr != 8))
        return -EBADMSG;
    r = read_layout(&t, (uint32_t)magic, text_start, &l);
    if (r < 0)
        return r;
    for (uint64_t i = 0; i < l.nfunc; i++) {
        uint64_t pair = l.functab + i * 2 * l.field, entry, next, func, name_off;
        struct go_func f;

        /* the pair after the last function holds the end of the text */
        if (!read_uint(&t, pair, l.field, &entry) ||
            !read_uint(&t, pair + l.field, l.field, &func) ||
            !read_uint(&t, pair + 2 * l.field, l.field, &next) || func > size ||
            l.func_base > size || !read_uint(&t, l.func_base + func + l.name_in_func, 4, &name_off))
            return -EBADMSG;
        if (next <= entry)
            return -EBADMSG;
        f.name = l.name_base > size ? NULL : name_at(&t, l.name_base + (uint32_t)name_off);
        if (!f.name)
            return -EBADMSG;
        f.entry = l.entry_base + entry;
        f.end = l.entry_base + next;
        r = fn(&f, userdata);
        if (r < 0)
            return r;
    }
    return 0;
}
