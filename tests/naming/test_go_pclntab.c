/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Go's function table in each of its layouts (1.2, 1.16, 1.18, 1.20), built
 * here as Go's linker lays it out: every function back with its range and
 * name. Then what a hostile file may hold instead: counts and offsets out of
 * the section, functions out of order, names without an end, an unknown
 * version; refused, never read past the section. And the inline trees of
 * Go 1.18 on: the calls inlined at a pc, innermost first; a tree that loops,
 * or lies past its section, cut, never read past.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "go_pclntab.h"

#define TEXT 0x401000u

static const struct {
    uint32_t entry; /* from TEXT */
    const char *name;
} funcs[] = {{0x0, "runtime.text"}, {0x40, "main.main"}, {0x1c0, "main.(*server).wait"}};
#define NFUNCS  (sizeof(funcs) / sizeof(funcs[0]))
#define TEXTEND 0x300u

struct table {
    uint8_t b[1024];
    size_t n;
};

static size_t put(struct table *t, uint64_t off, uint64_t v, unsigned len)
{
    for (unsigned i = 0; i < len; i++)
        t->b[off + i] = (uint8_t)(v >> (8 * i));
    if (off + len > t->n)
        t->n = off + len;
    return off + len;
}

/* The names from off; each name's offset from off into name_off[]. */
static void put_names(struct table *t, size_t off, uint32_t *name_off)
{
    size_t at = off;

    for (size_t i = 0; i < NFUNCS; i++) {
        name_off[i] = (uint32_t)(at - off);
        memcpy(t->b + at, funcs[i].name, strlen(funcs[i].name) + 1);
        at += strlen(funcs[i].name) + 1;
    }
    t->n = at;
}

static void build(struct table *t, uint32_t magic, bool text_in_header)
{
    uint32_t name_off[NFUNCS];
    const unsigned ptr = 8;
    size_t words = magic == 0xfffffffb ? 1 : magic == 0xfffffffa ? 7 : 8;
    size_t names = 8 + words * ptr, pcln, funcdata;
    bool go118 = magic == 0xfffffff0 || magic == 0xfffffff1;
    unsigned field = go118 ? 4 : ptr;

    memset(t, 0, sizeof(*t));
    put(t, 0, magic, 4);
    t->b[6] = 1; /* instruction quantum */
    t->b[7] = (uint8_t)ptr;
    put(t, 8, NFUNCS, ptr);
    if (magic == 0xfffffffb) {
        /* names after the pairs and the funcs; offsets from the table's start */
        pcln = 8 + ptr;
        funcdata = pcln + NFUNCS * 2 * ptr + ptr;
        put_names(t, funcdata + NFUNCS * 16, name_off);
        for (size_t i = 0; i < NFUNCS; i++)
            name_off[i] += (uint32_t)(funcdata + NFUNCS * 16);
    } else {
        put_names(t, names, name_off);
        pcln = (t->n + 7) & ~(size_t)7;
        funcdata = pcln + (NFUNCS + 1) * 2 * field;
        put(t, 8 + 2 * ptr, go118 ? (text_in_header ? TEXT : 0) : names, ptr);
        if (go118) {
            put(t, 8 + 3 * ptr, names, ptr);
            put(t, 8 + 7 * ptr, pcln, ptr);
        } else {
            put(t, 8 + 6 * ptr, pcln, ptr);
        }
    }
    for (size_t i = 0; i <= NFUNCS; i++) {
        uint64_t entry = i < NFUNCS ? funcs[i].entry : TEXTEND;
        uint64_t func = funcdata + i * 16 - (magic == 0xfffffffb ? 0 : pcln);

        put(t, pcln + i * 2 * field, go118 ? entry : TEXT + entry, field);
        if (i == NFUNCS)
            break;
        put(t, pcln + i * 2 * field + field, func, field);
        /* the func: its entry, then its name's offset */
        put(t, funcdata + i * 16, go118 ? entry : TEXT + entry, go118 ? 4 : ptr);
        put(t, funcdata + i * 16 + (go118 ? 4 : ptr), name_off[i], 4);
    }
}

struct seen {
    size_t n;
    bool right;
};

static int check_func(const struct go_func *f, void *userdata)
{
    struct seen *s = userdata;
    uint64_t end = s->n + 1 < NFUNCS ? funcs[s->n + 1].entry : TEXTEND;

    s->right &= s->n < NFUNCS && f->entry == TEXT + funcs[s->n].entry && f->end == TEXT + end &&
                strcmp(f->name, funcs[s->n].name) == 0;
    s->n++;
    return 0;
}

static int read_table(const struct table *t, struct seen *s)
{
    *s = (struct seen){.right = true};
    return go_pclntab_functions(t->b, t->n, TEXT, check_func, s);
}

static int stop_at_first(const struct go_func *f, void *userdata)
{
    (void)f;
    (void)userdata;
    return -ECANCELED;
}

/* Go 1.18 on: main.main (funcs[1]) gets an inline tree. Its pcs
 * [0x60, 0x80) stand for an inlined runtime.text, [0x80, 0xa0) for a
 * main.(*server).wait inlined there in turn; its record moves to the
 * table's end, with its pc-value table (from the table's start: the header's
 * pctab offset is 0) and its tree (gofunc: the table's start too). Returns
 * the tree's offset. */
static size_t add_inline_tree(struct table *t, uint32_t magic)
{
    static const uint8_t pcvalues[] = {0x00, 0x20, 0x02, 0x20, 0x02, 0x20, 0x03, 0xa0, 0x02, 0x00};
    bool go120 = magic == 0xfffffff1;
    unsigned fixed = go120 ? 44 : 40, entry_size = go120 ? 16 : 20, name_at = go120 ? 4 : 12;
    size_t pcln = 0, funcdata, rec, table, tree;
    uint32_t name_off[NFUNCS];

    for (unsigned i = 0; i < 8; i++)
        pcln |= (size_t)t->b[8 + 7 * 8 + i] << (8 * i);
    funcdata = pcln + (NFUNCS + 1) * 2 * 4;
    for (size_t i = 0; i < NFUNCS; i++)
        memcpy(&name_off[i], t->b + funcdata + i * 16 + 4, 4);
    rec = (t->n + 7) & ~(size_t)7;
    put(t, pcln + 1 * 2 * 4 + 4, rec - pcln, 4);
    put(t, rec, funcs[1].entry, 4);
    put(t, rec + 4, name_off[1], 4);
    put(t, rec + 28, 3, 4);    /* npcdata */
    t->b[rec + fixed - 1] = 4; /* nfuncdata */
    table = rec + fixed + 3 * 4 + 4 * 4;
    tree = table + sizeof(pcvalues);
    put(t, rec + fixed + 2 * 4, table, 4);
    for (unsigned i = 0; i < 3; i++)
        put(t, rec + fixed + 3 * 4 + i * 4, 0xffffffff, 4);
    put(t, rec + fixed + 3 * 4 + 3 * 4, tree, 4);
    memcpy(t->b + table, pcvalues, sizeof(pcvalues));
    /* 0: runtime.text, called at main.main's entry; 1: wait, called at 0x60 */
    put(t, tree + name_at, name_off[0], 4);
    put(t, tree + name_at + 4, 0, 4);
    put(t, tree + entry_size + name_at, name_off[2], 4);
    put(t, tree + entry_size + name_at + 4, 0x20, 4);
    return tree;
}

struct inlined_seen {
    size_t n;
    bool right;
    unsigned deepest;
};

static int check_inlined(const struct go_inlined *in, void *userdata)
{
    struct inlined_seen *s = userdata;
    bool first = s->n == 0;

    s->right &= s->n < 2 && in->start == TEXT + (first ? 0x60 : 0x80) &&
                in->end == in->start + 0x20 && in->n == (first ? 1u : 2u) &&
                strcmp(in->names[in->n - 1], funcs[0].name) == 0 &&
                (first || strcmp(in->names[0], funcs[2].name) == 0);
    s->n++;
    return 0;
}

static int count_deepest(const struct go_inlined *in, void *userdata)
{
    struct inlined_seen *s = userdata;

    s->n++;
    if (in->n > s->deepest)
        s->deepest = in->n;
    return 0;
}

static void check_inline_trees(uint32_t magic, const char *go)
{
    struct table t, bad;
    struct inlined_seen s = {.right = true};
    struct go_funcdata fd;
    size_t tree;
    bool cuts = true;
    int r;

    build(&t, magic, true);
    tree = add_inline_tree(&t, magic);
    fd = (struct go_funcdata){.data = t.b, .size = t.n, .addr = 0x1000, .gofunc = 0x1000};
    r = go_pclntab_inlined(t.b, t.n, TEXT, &fd, check_inlined, &s);
    CHECK(r == 0 && s.n == 2 && s.right, "Go %s: inlined calls, innermost first (%d, %zu)", go, r,
          s.n);
    /* every cut of the table and of the tree's section: within them, never past */
    for (size_t n = 0; n < t.n; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        struct go_funcdata cut = fd;

        memcpy(copy, t.b, n);
        s = (struct inlined_seen){0};
        r = go_pclntab_inlined(copy, n, TEXT, &fd, count_deepest, &s);
        cuts &= r == -EBADMSG || s.n <= 2;
        cut.data = copy;
        cut.size = n;
        r = go_pclntab_inlined(t.b, t.n, TEXT, &cut, count_deepest, &s);
        cuts &= r == 0;
        free(copy);
    }
    CHECK(cuts, "Go %s: each of the %zu cuts of the table, of the tree: read within", go, t.n);
    /* a call site inlined in itself: a tree without end is cut */
    bad = t;
    put(&bad, tree + (magic == 0xfffffff1 ? 16 + 8 : 20 + 16), 0x40, 4);
    fd.data = bad.b;
    s = (struct inlined_seen){0};
    r = go_pclntab_inlined(bad.b, bad.n, TEXT, &fd, count_deepest, &s);
    CHECK(r == 0 && s.deepest == GO_INLINE_DEPTH_MAX, "Go %s: a looping tree cut at %u (%u)", go,
          GO_INLINE_DEPTH_MAX, s.deepest);
    /* its index past the tree's section */
    bad = t;
    fd = (struct go_funcdata){.data = bad.b, .size = tree + 10, .addr = 0x1000, .gofunc = 0x1000};
    s = (struct inlined_seen){0};
    r = go_pclntab_inlined(bad.b, bad.n, TEXT, &fd, count_deepest, &s);
    CHECK(r == 0 && s.n == 0, "Go %s: a tree past its section: no inlined calls", go);
    fd.gofunc = 0x1000 + tree + 11;
    r = go_pclntab_inlined(bad.b, bad.n, TEXT, &fd, count_deepest, &s);
    CHECK(r == 0 && s.n == 0, "Go %s: gofunc past the section: no inlined calls", go);
}

int main(void)
{
    static const struct {
        uint32_t magic;
        const char *go;
    } layouts[] = {
        {0xfffffffb, "1.2"}, {0xfffffffa, "1.16"}, {0xfffffff0, "1.18"}, {0xfffffff1, "1.20"}};
    struct table t, bad;
    struct seen s;
    int r;

    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
        build(&t, layouts[i].magic, true);
        r = read_table(&t, &s);
        CHECK(r == 0 && s.n == NFUNCS && s.right, "Go %s: %zu functions, names and ranges (%d)",
              layouts[i].go, s.n, r);
        /* every cut of the table: refused or read within it, never past it */
        bool cuts = true;
        for (size_t n = 0; n < t.n; n++) {
            uint8_t *copy = malloc(n ? n : 1);

            memcpy(copy, t.b, n);
            r = go_pclntab_functions(copy, n, TEXT, check_func, &s);
            cuts &= r == -EBADMSG;
            free(copy);
        }
        CHECK(cuts, "Go %s: each of its %zu cuts refused", layouts[i].go, t.n);
    }
    check_inline_trees(0xfffffff0, "1.18");
    check_inline_trees(0xfffffff1, "1.20");
    build(&t, 0xfffffffa, true);
    CHECK(go_pclntab_inlined(t.b, t.n, TEXT, &(struct go_funcdata){0}, check_inlined, &s) ==
              -EPROTONOSUPPORT,
          "Go 1.16: its tree's addresses are not read");
    build(&t, 0xfffffff1, false);
    CHECK(read_table(&t, &s) == 0 && s.right, "Go 1.20, text start left to a relocation: .text's");

    build(&t, 0xfffffff1, true);
    bad = t;
    put(&bad, 0, 0xfffffff2, 4);
    CHECK(read_table(&bad, &s) == -EPROTONOSUPPORT, "an unknown magic: not guessed");
    bad = t;
    bad.b[7] = 2;
    CHECK(read_table(&bad, &s) == -EBADMSG, "a pointer size of 2: refused");
    bad = t;
    put(&bad, 8, 1u << 30, 8);
    CHECK(read_table(&bad, &s) == -EBADMSG, "more functions than the section holds: refused");
    bad = t;
    put(&bad, 8 + 7 * 8, UINT64_MAX - 3, 8);
    CHECK(read_table(&bad, &s) == -EBADMSG, "the pairs' offset past the end (wrapping): refused");
    bad = t;
    put(&bad, 8 + 3 * 8, UINT64_MAX, 8);
    CHECK(read_table(&bad, &s) == -EBADMSG, "the names' offset past the end: refused");
    /* Go 1.2's names come last: the last one's end cut off */
    build(&bad, 0xfffffffb, true);
    bad.n--;
    CHECK(go_pclntab_functions(bad.b, bad.n, TEXT, check_func, &s) == -EBADMSG,
          "a name without its end in the section: refused");
    CHECK(go_pclntab_functions(t.b, t.n, TEXT, stop_at_first, NULL) == -ECANCELED,
          "the callback's error stops the walk");
    for (int leaf = 0; leaf <= 1; leaf++)
        CHECK(go_function_is_stack_root("runtime.goexit", leaf) &&
                  go_function_is_stack_root("runtime.mstart", leaf) &&
                  go_function_is_stack_root("runtime.rt0_go", leaf),
              "Go's outermost frames, wherever the walk met them");
    CHECK(go_function_is_stack_root("runtime.mcall", false) &&
              go_function_is_stack_root("runtime.clone", false),
          "a stack switch, as a caller: what is beyond is not one");
    CHECK(!go_function_is_stack_root("runtime.mcall", true) &&
              !go_function_is_stack_root("runtime.clone", true),
          "as the interrupted pc: still on its caller's stack");
    CHECK(!go_function_is_stack_root("runtime.mstart0", false) &&
              !go_function_is_stack_root("runtime.systemstack", false) &&
              !go_function_is_stack_root("main.goexit", false) &&
              !go_function_is_stack_root("runtime.", false) &&
              !go_function_is_stack_root("goexit", false),
          "and no other function");
    return CHECK_EXIT();
}
