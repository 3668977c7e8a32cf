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
    uint64_t pctab;        /* a func's pc-value tables count from here */
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
        l->pctab = w[5];
        l->field = t->ptr;
        l->name_in_func = t->ptr;
        break;
    default:
        /* nfunc, nfiles, text start, funcname, cu, filetab, pctab, pcln
         * offsets; entries are 32-bit offsets from the start of the text */
        l->entry_base = w[2] ? w[2] : text_start;
        l->functab = l->func_base = w[7];
        l->name_base = w[3];
        l->pctab = w[6];
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

/* The i-th function of the table, and where its func record is. */
static int read_func(const struct table *t, const struct layout *l, uint64_t i, struct go_func *f,
                     uint64_t *func_at)
{
    uint64_t pair = l->functab + i * 2 * l->field, entry, next, func, name_off;

    /* the pair after the last function holds the end of the text */
    if (!read_uint(t, pair, l->field, &entry) || !read_uint(t, pair + l->field, l->field, &func) ||
        !read_uint(t, pair + 2 * l->field, l->field, &next) || func > t->size ||
        l->func_base > t->size ||
        !read_uint(t, l->func_base + func + l->name_in_func, 4, &name_off))
        return -EBADMSG;
    if (next <= entry)
        return -EBADMSG;
    f->name = l->name_base > t->size ? NULL : name_at(t, l->name_base + (uint32_t)name_off);
    if (!f->name)
        return -EBADMSG;
    f->entry = l->entry_base + entry;
    f->end = l->entry_base + next;
    *func_at = l->func_base + func;
    return 0;
}

/* The header and layout of the table data[0, size) */
static int open_table(const uint8_t *data, size_t size, uint64_t text_start, struct table *t,
                      struct layout *l, uint32_t *magic)
{
    uint64_t m;

    *t = (struct table){.data = data, .size = size};
    if (size < HEADER_FIXED || !read_uint(t, 0, 4, &m))
        return -EBADMSG;
    if (m != GO_1_2 && m != GO_1_16 && m != GO_1_18 && m != GO_1_20)
        return -EPROTONOSUPPORT;
    t->ptr = data[7];
    if (data[4] != 0 || data[5] != 0 || (t->ptr != 4 && t->ptr != 8))
        return -EBADMSG;
    *magic = (uint32_t)m;
    return read_layout(t, *magic, text_start, l);
}

int go_pclntab_functions(const uint8_t *data, size_t size, uint64_t text_start, go_func_fn fn,
                         void *userdata)
{
    struct table t;
    struct layout l;
    uint32_t magic;
    int r = open_table(data, size, text_start, &t, &l, &magic);

    for (uint64_t i = 0; r == 0 && i < l.nfunc; i++) {
        struct go_func f;
        uint64_t func_at;

        r = read_func(&t, &l, i, &f, &func_at);
        if (r == 0)
            r = fn(&f, userdata);
    }
    return r;
}

/* Where Go's runtime keeps them (runtime/symtab.go): the pc-value table of
 * a pc's place in the inline tree, and the tree itself. */
#define PCDATA_INLTREE_INDEX 2
#define FUNCDATA_INLTREE     3
#define FUNCDATA_NONE        0xffffffffu
/* where a func holds its count of pcdata tables (entryoff, nameoff, args,
 * deferreturn, pcsp, pcfile, pcln before it); its count of funcdata is its
 * last byte before the tables */
#define FUNC_NPCDATA 28

/* Every pc-value step is one varint pair; a hostile table may send the same
 * function's steps round again for each frame of each run: the work of one
 * file is bounded by its size. */
#define STEPS_PER_BYTE 64

struct inline_reader {
    struct table t;
    struct layout l;
    const struct go_funcdata *fd;
    struct table tree;        /* the section that holds the inline trees */
    unsigned entry_size;      /* of an inline tree entry: 20 (Go 1.18, 1.19) or 16 (1.20 on) */
    unsigned name_in_entry;   /* where its name offset is */
    unsigned parent_in_entry; /* where the offset of its call site is */
    unsigned func_fixed;      /* a func's fields before its pcdata offsets */
    uint64_t steps_left;
};

static bool read_varint(const struct table *t, uint64_t *off, uint32_t *ret)
{
    uint32_t v = 0;

    for (unsigned shift = 0; shift < 35; shift += 7) {
        uint64_t b;

        if (!read_uint(t, (*off)++, 1, &b))
            return false;
        v |= (uint32_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *ret = v;
            return true;
        }
    }
    return false;
}

/* One step of a pc-value table (Go's runtime.step): the value changes, then
 * holds up to the returned pc. False at the table's end or a bad step. */
static bool pcvalue_step(struct inline_reader *rd, uint64_t *off, uint64_t *pc, int32_t *val,
                         bool first)
{
    uint32_t dv, dpc;

    if (rd->steps_left == 0 || !read_varint(&rd->t, off, &dv) || (dv == 0 && !first) ||
        !read_varint(&rd->t, off, &dpc) || dpc == 0)
        return false;
    rd->steps_left--;
    *val += (dv & 1) ? (int32_t) ~(dv >> 1) : (int32_t)(dv >> 1);
    *pc += dpc;
    return true;
}

/* The table's value at pc; -1 where it says none, or does not read. */
static int32_t pcvalue_at(struct inline_reader *rd, uint64_t table, const struct go_func *f,
                          uint64_t pc)
{
    uint64_t at = f->entry;
    int32_t val = -1;

    while (at < f->end && pcvalue_step(rd, &table, &at, &val, at == f->entry))
        if (pc < at)
            return val;
    return -1;
}

/* The frames inlined at a pc whose place in the tree is ix: innermost first,
 * each call site's own place looked up at its pc, to the function's body. */
static void inline_chain(struct inline_reader *rd, uint64_t table, uint64_t tree,
                         const struct go_func *f, int32_t ix, struct go_inlined *in)
{
    in->n = 0;
    while (ix >= 0 && in->n < GO_INLINE_DEPTH_MAX) {
        uint64_t e = tree + (uint64_t)ix * rd->entry_size, name_off, parent_pc;
        const char *name;

        if (!read_uint(&rd->tree, e + rd->name_in_entry, 4, &name_off) ||
            !read_uint(&rd->tree, e + rd->parent_in_entry, 4, &parent_pc))
            break;
        name = rd->l.name_base > rd->t.size ? NULL : name_at(&rd->t, rd->l.name_base + name_off);
        if (!name)
            break;
        in->names[in->n++] = name;
        ix = pcvalue_at(rd, table, f, f->entry + parent_pc);
    }
}

/* The inline tree of the function whose func record is at func_at, and the
 * table of its pcs' places in it; false when it has none. */
static bool inline_tables(struct inline_reader *rd, uint64_t func_at, uint64_t *table,
                          uint64_t *tree)
{
    uint64_t npcdata, nfuncdata, pcdata, funcdata;

    if (!read_uint(&rd->t, func_at + FUNC_NPCDATA, 4, &npcdata) ||
        !read_uint(&rd->t, func_at + rd->func_fixed - 1, 1, &nfuncdata) ||
        npcdata <= PCDATA_INLTREE_INDEX || nfuncdata <= FUNCDATA_INLTREE ||
        !read_uint(&rd->t, func_at + rd->func_fixed + 4 * PCDATA_INLTREE_INDEX, 4, &pcdata) ||
        !read_uint(&rd->t, func_at + rd->func_fixed + 4 * (npcdata + FUNCDATA_INLTREE), 4,
                   &funcdata) ||
        pcdata == 0 || funcdata == FUNCDATA_NONE)
        return false;
    *table = rd->l.pctab + pcdata;
    /* funcdata counts from moduledata.gofunc, which lies in the section given */
    if (rd->fd->gofunc < rd->fd->addr || rd->fd->gofunc - rd->fd->addr > rd->fd->size)
        return false;
    *tree = rd->fd->gofunc - rd->fd->addr + funcdata;
    return true;
}

static int function_inlined(struct inline_reader *rd, const struct go_func *f, uint64_t func_at,
                            go_inlined_fn fn, void *userdata)
{
    uint64_t table, tree, off, at = f->entry;
    int32_t val = -1;

    if (!inline_tables(rd, func_at, &table, &tree))
        return 0;
    off = table;
    while (at < f->end) {
        uint64_t start = at;
        int32_t ix;
        struct go_inlined in;
        int r;

        if (!pcvalue_step(rd, &off, &at, &val, start == f->entry))
            break;
        ix = val;
        if (ix < 0)
            continue;
        inline_chain(rd, table, tree, f, ix, &in);
        if (in.n == 0)
            continue;
        in.start = start;
        in.end = at < f->end ? at : f->end;
        r = fn(&in, userdata);
        if (r < 0)
            return r;
    }
    return rd->steps_left == 0 ? -EBADMSG : 0;
}

int go_pclntab_inlined(const uint8_t *data, size_t size, uint64_t text_start,
                       const struct go_funcdata *fd, go_inlined_fn fn, void *userdata)
{
    struct inline_reader rd = {.fd = fd,
                               .tree = {.data = fd->data, .size = fd->size},
                               .steps_left = (uint64_t)STEPS_PER_BYTE * size};
    uint32_t magic;
    int r = open_table(data, size, text_start, &rd.t, &rd.l, &magic);

    if (r < 0)
        return r;
    /* the layouts before Go 1.18 keep the tree's address, not an offset */
    if (magic != GO_1_18 && magic != GO_1_20)
        return -EPROTONOSUPPORT;
    if (magic == GO_1_18) /* parent, funcID, pad, file, line, func, parentPc */
        rd.entry_size = 20, rd.name_in_entry = 12, rd.parent_in_entry = 16, rd.func_fixed = 40;
    else /* funcID, pad, nameOff, parentPc, startLine; func gained startLine */
        rd.entry_size = 16, rd.name_in_entry = 4, rd.parent_in_entry = 8, rd.func_fixed = 44;
    for (uint64_t i = 0; r == 0 && i < rd.l.nfunc; i++) {
        struct go_func f;
        uint64_t func_at;

        r = read_func(&rd.t, &rd.l, i, &f, &func_at);
        if (r == 0)
            r = function_inlined(&rd, &f, func_at, fn, userdata);
    }
    return r;
}

int go_moduledata_gofunc(const uint8_t *pclntab, size_t pclntab_size, uint64_t pclntab_addr,
                         const uint8_t *data, size_t size, uint64_t *ret)
{
    /* moduledata's first word points to the table; gofunc is its 39th word
     * (Go 1.18, 1.19), the 41st from Go 1.20 on (covctrs, ecovctrs came
     * before it) */
    struct table t = {.data = data, .size = size, .ptr = 8},
                 header = {.data = pclntab, .size = pclntab_size};
    uint64_t magic, gofunc_at;

    if (!read_uint(&header, 0, 4, &magic))
        return -EBADMSG;
    if (magic != GO_1_18 && magic != GO_1_20)
        return -EPROTONOSUPPORT;
    gofunc_at = magic == GO_1_18 ? 38 * 8 : 40 * 8;
    for (uint64_t off = 0; off + 8 <= size; off += 8) {
        uint64_t w;

        if (read_word(&t, off, &w) && w == pclntab_addr && read_word(&t, off + gofunc_at, ret))
            return 0;
    }
    return -ENOENT;
}
