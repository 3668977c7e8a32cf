/* SPDX-License-Identifier: GPL-2.0-only */
#include "elf_symbols.h"
#include "array.h"
#include "go_pclntab.h"
#include "sorted_search.h"
#include "strpool.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "macro.h"

/* Symbols may nest or overlap; a lookup walks back over earlier symbols that
 * might still cover the address, but not without end in a hostile file. */
#define LOOKUP_WALK_MAX 64

/* How far the entry point's label reaches, at most: to its first call
 * (glibc's _start calls __libc_start_main 0x25 bytes in, ld.so's calls
 * _dl_start 3 bytes in), whose return address names the outermost frame. */
#define ENTRY_LABEL_BYTES 64

/* Real files have a handful of program headers; a count read from a hostile
 * file must not size an allocation unchecked. */
#define PHDR_MAX 4096

/* How many of the last inlined ranges a new one may share its names with */
#define INLINED_SHARED_LOOKBACK 16

/* 24 bytes a symbol (the names apart): a program may hold millions. Sizes
 * and reaches past 4 GiB are clamped; no function is that large. */
struct esym {
    uint64_t addr;
    uint32_t size;
    uint32_t reach; /* from addr to the largest end of this and all earlier symbols */
    uint32_t name;  /* offset in the pool */
    uint8_t rank;   /* of the binding, to pick one name among aliases */
    bool label;     /* an unsized label at the entry point (entry_label) */
};

_Static_assert(sizeof(struct esym) == 24, "kept small: one per symbol");

struct segment {
    uint64_t offset, filesz, vaddr;
};

struct elf_symbols {
    struct esym *syms;
    size_t n, cap;
    struct esym *inlined; /* Go's inlined calls: disjoint, in order; the names joined */
    size_t ninlined, inlined_cap;
    struct segment *segs;
    size_t nsegs;
    struct strpool pool;
    struct elf_debug_ref debug;
    uint64_t entry; /* e_entry, 0 if none */
    const struct elf_symbols_budget *budget;
    bool refused; /* a symbol table over the budget was not read */
};

static uint64_t esym_end(const struct esym *s)
{
    return s->addr + s->size;
}

static uint32_t clamp_u32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void elf_endp(Elf **elf)
{
    if (*elf)
        elf_end(*elf);
}

struct elf_symbols *elf_symbols_free(struct elf_symbols *e)
{
    if (!e)
        return NULL;
    elf_symbols_drop(e);
    free(e->segs);
    free(e);
    return NULL;
}

void elf_symbols_drop(struct elf_symbols *e)
{
    free(e->syms);
    free(e->inlined);
    free(e->pool.data);
    e->syms = e->inlined = NULL;
    e->n = e->cap = e->ninlined = e->inlined_cap = 0;
    e->pool = (struct strpool){0};
}

size_t elf_symbols_memory(const struct elf_symbols *e)
{
    return (e->cap + e->inlined_cap) * sizeof(*e->syms) + e->pool.cap;
}

bool elf_symbols_refused(const struct elf_symbols *e)
{
    return e->refused;
}

/* Within what read_symbols reserved: more than the tables' sizes said (names
 * shared by many symbols, each copied) is a file over budget. */
static int syms_push(struct elf_symbols *e, const struct esym *sym)
{
    if (e->n >= e->cap)
        return -E2BIG;
    e->syms[e->n++] = *sym;
    return 0;
}

static int read_segments(Elf *elf, struct elf_symbols *e)
{
    size_t n;

    if (elf_getphdrnum(elf, &n) < 0 || n > PHDR_MAX)
        return -ENOEXEC;
    e->segs = calloc(n ?: 1, sizeof(*e->segs));
    if (!e->segs)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;

        if (!gelf_getphdr(elf, (int)i, &ph))
            return -ENOEXEC;
        if (ph.p_type != PT_LOAD || ph.p_offset > UINT64_MAX - ph.p_filesz)
            continue;
        e->segs[e->nsegs++] = (struct segment){ph.p_offset, ph.p_filesz, ph.p_vaddr};
    }
    return 0;
}

static uint8_t binding_rank(unsigned char bind)
{
    switch (bind) {
    case STB_GLOBAL:
        return 2;
    case STB_WEAK:
        return 1;
    default:
        return 0;
    }
}

/* An unsized label in the entry point's first bytes: ld.so's _start, and
 * _dl_start_user 8 bytes on, where _start goes on after _dl_start returns
 * (addr2line names it so, from libc6-dbg). See label_entry. */
static bool entry_label(const struct elf_symbols *e, const GElf_Sym *sym)
{
    unsigned char type = GELF_ST_TYPE(sym->st_info);

    return e->entry && sym->st_size == 0 && (type == STT_FUNC || type == STT_NOTYPE) &&
           sym->st_value >= e->entry && sym->st_value - e->entry < ENTRY_LABEL_BYTES;
}

/* Functions with a size, defined in this file. Zero-sized symbols are not
 * taken: with no end, they would name whatever follows them. Except near the
 * entry point, where unsized labels are the rule (entry_label). */
static int add_symbol(Elf *elf, size_t strtab, const GElf_Sym *sym, struct elf_symbols *e)
{
    unsigned char type = GELF_ST_TYPE(sym->st_info);
    bool entry = entry_label(e, sym);
    struct esym s = {};
    const char *name;
    size_t len;
    int r;

    if (!entry && ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym->st_size == 0))
        return 0;
    if (sym->st_shndx == SHN_UNDEF || sym->st_value > UINT64_MAX - (sym->st_size ?: 1))
        return 0;
    name = elf_strptr(elf, strtab, sym->st_name);
    if (!name || !name[0] || name[0] == '@')
        return 0;
    /* "read@GLIBC_2.2.5": a symbol version is not part of the function's name */
    len = strcspn(name, "@");
    if (len >= e->pool.cap - e->pool.len)
        return -E2BIG;
    r = strpool_add(&e->pool, name, len, &s.name);
    if (r < 0)
        return r;
    s.addr = sym->st_value;
    s.size = entry ? ENTRY_LABEL_BYTES : clamp_u32(sym->st_size);
    s.label = entry;
    s.rank = binding_rank(GELF_ST_BIND(sym->st_info));
    return syms_push(e, &s);
}

static int read_symbol_section(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct elf_symbols *e)
{
    size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
    Elf_Data *data = elf_getdata(scn, NULL);

    /* a broken table is skipped, the other one may still be good */
    if (!data || data->d_type != ELF_T_SYM || entsize == 0)
        return 0;
    for (size_t i = 0; i < data->d_size / entsize && i <= INT32_MAX; i++) {
        GElf_Sym sym;
        int r;

        if (!gelf_getsym(data, (int)i, &sym))
            break;
        r = add_symbol(elf, sh->sh_link, &sym, e);
        if (r < 0)
            return r;
    }
    return 0;
}

static bool is_symbol_table(const GElf_Shdr *sh, bool symtab_only)
{
    return sh->sh_type == SHT_SYMTAB || (sh->sh_type == SHT_DYNSYM && !symtab_only);
}

/* Whether a section's contents lie in the file: its sizes are a hostile
 * file's word, and reserve memory. */
static bool in_file(const GElf_Shdr *sh, uint64_t file_size)
{
    return sh->sh_offset <= file_size && sh->sh_size <= file_size - sh->sh_offset;
}

/* What reading the symbol tables would hold at most: one entry a symbol and
 * all their names. libelf reads as much (the raw tables) while they are
 * read, so that a table over the cap is refused before any of it is read. */
static void symbols_estimate(Elf *elf, bool symtab_only, uint64_t file_size, size_t *entries,
                             size_t *names_bytes)
{
    size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
    Elf_Scn *scn = NULL;

    *entries = *names_bytes = 0;
    while (entsize > 0 && (scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh, strtab;
        Elf_Scn *names;

        if (!gelf_getshdr(scn, &sh) || !is_symbol_table(&sh, symtab_only) ||
            !in_file(&sh, file_size))
            continue;
        *entries += sh.sh_size / entsize;
        names = elf_getscn(elf, sh.sh_link);
        if (names && gelf_getshdr(names, &strtab) && in_file(&strtab, file_size))
            *names_bytes += strtab.sh_size;
    }
}

/* Exactly n elements: array_reserve's doubling would leave up to twice as
 * many allocated. */
static int resize_exact(void *array, size_t *cap, size_t n, size_t elem_size)
{
    void **p = array;
    void *resized;

    if (n == *cap)
        return 0;
    resized = reallocarray(*p, n ?: 1, elem_size);
    if (!resized)
        return -ENOMEM;
    *p = resized;
    *cap = n;
    return 0;
}

/* Whether entries more symbols (or inlined ranges) and names more bytes fit
 * the budget: -E2BIG if not. */
static int within_budget(struct elf_symbols *e, size_t entries, size_t names)
{
    size_t most;

    if (entries > (SIZE_MAX / 2 - names) / sizeof(struct esym))
        return -E2BIG;
    most = elf_symbols_memory(e) + entries * sizeof(struct esym) + names;
    if (most > e->budget->cap ||
        (e->budget->make_room && e->budget->make_room(e->budget->userdata, most) < 0))
        return -E2BIG;
    return 0;
}

/* Room for entries more symbols and names more bytes of names, within the
 * budget (-E2BIG past it): sized once for the most that may come, and cut to
 * what came in finish_symbols. */
static int reserve_symbols(struct elf_symbols *e, size_t entries, size_t names)
{
    int r = 0;

    if (e->n + entries <= e->cap && e->pool.len + names <= e->pool.cap)
        return 0;
    r = within_budget(e, entries, names);
    if (r < 0)
        return r;
    if (e->n + entries > e->cap)
        r = resize_exact(&e->syms, &e->cap, e->n + entries, sizeof(*e->syms));
    if (r == 0 && e->pool.len + names > e->pool.cap)
        r = resize_exact(&e->pool.data, &e->pool.cap, e->pool.len + names, 1);
    return r;
}

/* Refused: what was read of it goes too. */
static void refuse(struct elf_symbols *e)
{
    elf_symbols_drop(e);
    e->refused = true;
}

/* symtab_only: a debug file's .dynsym (if any) is the stripped file's, read
 * already; file_size: of the file elf reads. */
static int read_symbols(Elf *elf, struct elf_symbols *e, bool symtab_only, uint64_t file_size)
{
    Elf_Scn *scn = NULL;
    size_t entries, names;
    int r;

    e->debug.stripped = true;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;

        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
            e->debug.stripped = false;
    }
    symbols_estimate(elf, symtab_only, file_size, &entries, &names);
    if (entries == 0)
        return 0;
    r = reserve_symbols(e, entries, names);
    if (r == -E2BIG) {
        e->refused = true;
        return 0;
    }
    if (r < 0)
        return r;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;

        if (!gelf_getshdr(scn, &sh) || !is_symbol_table(&sh, symtab_only))
            continue;
        r = read_symbol_section(elf, scn, &sh, e);
        if (r == -E2BIG) {
            refuse(e);
            return 0;
        }
        if (r < 0)
            return r;
    }
    return 0;
}

struct go_count {
    size_t functions, name_bytes;
};

static int count_go_function(const struct go_func *f, void *userdata)
{
    struct go_count *c = userdata;

    c->functions++;
    c->name_bytes += strlen(f->name) + 1;
    return 0;
}

static int add_go_function(const struct go_func *f, void *userdata)
{
    struct elf_symbols *e = userdata;
    struct esym s = {
        .addr = f->entry, .size = clamp_u32(f->end - f->entry), .rank = binding_rank(STB_GLOBAL)};
    int r = strpool_add(&e->pool, f->name, strlen(f->name), &s.name);

    return r < 0 ? r : syms_push(e, &s);
}

struct go_inlined_count {
    size_t ranges, name_bytes;
};

static int count_go_inlined(const struct go_inlined *in, void *userdata)
{
    struct go_inlined_count *c = userdata;

    c->ranges++;
    for (unsigned i = 0; i < in->n; i++)
        c->name_bytes += strlen(in->names[i]) + 1;
    return 0;
}

/* Whether joined is in's names joined by '\n' */
static bool same_inlined(const char *joined, const struct go_inlined *in)
{
    for (unsigned i = 0; i < in->n; i++) {
        size_t len = strlen(in->names[i]);

        if (strncmp(joined, in->names[i], len) != 0 || joined[len] != (i + 1 < in->n ? '\n' : '\0'))
            return false;
        joined += len + 1;
    }
    return true;
}

/* The names joined by '\n', innermost first (elf_symbols_inlined), in the
 * room reserved; shared with one of the last few ranges that has the same
 * (a function's pcs go in and out of the same inlined calls). */
static int add_go_inlined(const struct go_inlined *in, void *userdata)
{
    struct elf_symbols *e = userdata;
    struct esym s = {
        .addr = in->start, .size = clamp_u32(in->end - in->start), .name = (uint32_t)e->pool.len};

    if (e->ninlined >= e->inlined_cap || e->pool.len > UINT32_MAX)
        return -E2BIG;
    for (size_t j = e->ninlined; j > 0 && e->ninlined - j < INLINED_SHARED_LOOKBACK; j--)
        if (same_inlined(e->pool.data + e->inlined[j - 1].name, in)) {
            s.name = e->inlined[j - 1].name;
            e->inlined[e->ninlined++] = s;
            return 0;
        }
    for (unsigned i = 0; i < in->n; i++) {
        size_t len = strlen(in->names[i]);

        if (len + 1 > e->pool.cap - e->pool.len)
            return -E2BIG;
        memcpy(e->pool.data + e->pool.len, in->names[i], len);
        e->pool.data[e->pool.len + len] = i + 1 < in->n ? '\n' : '\0';
        e->pool.len += len + 1;
    }
    e->inlined[e->ninlined++] = s;
    return 0;
}

/* The section that holds addr, or NULL */
static Elf_Scn *section_at(Elf *elf, uint64_t addr, GElf_Shdr *sh)
{
    Elf_Scn *scn = NULL;

    while ((scn = elf_nextscn(elf, scn)))
        if (gelf_getshdr(scn, sh) && sh->sh_type == SHT_PROGBITS && addr >= sh->sh_addr &&
            addr - sh->sh_addr < sh->sh_size)
            return scn;
    return NULL;
}

/* Go's inlined calls (go_pclntab_inlined), where the tables read: their
 * tree is in the section of moduledata.gofunc, moduledata in .noptrdata.
 * Counted first, to reserve within the budget; a table that does not read,
 * or that is over the budget, adds none. */
static int read_go_inlined(Elf *elf, struct elf_symbols *e, const Elf_Data *pclntab,
                           uint64_t pclntab_addr, Elf_Scn *noptrdata, uint64_t text)
{
    Elf_Data *data = noptrdata ? elf_getdata(noptrdata, NULL) : NULL, *tree_data;
    struct go_funcdata fd = {0};
    struct go_inlined_count count = {0};
    GElf_Shdr sh;
    Elf_Scn *tree;
    int r;

    if (!data || !data->d_buf ||
        go_moduledata_gofunc(pclntab->d_buf, pclntab->d_size, pclntab_addr, data->d_buf,
                             data->d_size, &fd.gofunc) < 0)
        return 0;
    tree = section_at(elf, fd.gofunc, &sh);
    tree_data = tree ? elf_getdata(tree, NULL) : NULL;
    if (!tree_data || !tree_data->d_buf)
        return 0;
    fd = (struct go_funcdata){.data = tree_data->d_buf,
                              .size = tree_data->d_size,
                              .addr = sh.sh_addr,
                              .gofunc = fd.gofunc};
    r = go_pclntab_inlined(pclntab->d_buf, pclntab->d_size, text, &fd, count_go_inlined, &count);
    if (r < 0 || count.ranges == 0 || within_budget(e, count.ranges, count.name_bytes) < 0)
        return 0;
    r = resize_exact(&e->inlined, &e->inlined_cap, count.ranges, sizeof(*e->inlined));
    if (r == 0)
        r = resize_exact(&e->pool.data, &e->pool.cap, e->pool.len + count.name_bytes, 1);
    if (r == 0)
        r = go_pclntab_inlined(pclntab->d_buf, pclntab->d_size, text, &fd, add_go_inlined, e);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        e->ninlined = 0;
    return 0;
}

/* A Go program without .symtab (Debian strips them all): its functions'
 * names from Go's own table (go_pclntab.h). A table that does not read adds
 * nothing (frames stay file+0x...); what it added before it failed is kept. */
static int read_go_functions(Elf *elf, struct elf_symbols *e)
{
    Elf_Scn *scn = NULL, *pclntab = NULL, *noptrdata = NULL;
    uint64_t text = 0, pclntab_addr = 0;
    size_t shstrndx;
    Elf_Data *data;

    if (elf_getshdrstrndx(elf, &shstrndx) < 0)
        return 0;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        const char *name;

        if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
            continue;
        if (strcmp(name, ".gopclntab") == 0 && sh.sh_type == SHT_PROGBITS) {
            pclntab = scn;
            pclntab_addr = sh.sh_addr;
        } else if (strcmp(name, ".noptrdata") == 0)
            noptrdata = scn;
        else if (strcmp(name, ".text") == 0)
            text = sh.sh_addr;
    }
    data = pclntab ? elf_getdata(pclntab, NULL) : NULL;
    if (!data || !data->d_buf)
        return 0;
    /* counted first, to reserve within the budget as read_symbols does */
    struct go_count count = {};
    int r = go_pclntab_functions(data->d_buf, data->d_size, text, count_go_function, &count);

    if (r < 0)
        return 0;
    r = reserve_symbols(e, count.functions, count.name_bytes);
    if (r == -E2BIG) {
        e->refused = true;
        return 0;
    }
    if (r == 0)
        r = go_pclntab_functions(data->d_buf, data->d_size, text, add_go_function, e);
    if (r == 0)
        r = read_go_inlined(elf, e, data, pclntab_addr, noptrdata, text);
    return r == -ENOMEM ? r : 0;
}

/* By address; at the same address the shorter symbol last, so that a lookup
 * walking back meets the innermost one first; among aliases (same range) the
 * best last: global over weak over local, then by name for stable results. */
static int esym_compare(const void *a, const void *b, void *userdata)
{
    const struct esym *x = a, *y = b;
    const char *pool = userdata;

    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(pool + x->name, pool + y->name);
}

/*
 * Where a process begins, the file's entry point, is named _start, as the
 * label there is in every libc's crt1 and ld.so: by the file's own unsized
 * label where it has one, else (stripped: Debian's ld.so has no symbol there)
 * by that name, where no function covers the entry. The label reaches to
 * the next symbol, at most ENTRY_LABEL_BYTES: the return address of the
 * entry's first call, the root of every main thread's stack, lies within.
 * Sorted symbols in and out.
 */
static int label_entry(struct elf_symbols *e)
{
    size_t at = sorted_count_at_or_below(e->syms, e->n, sizeof(*e->syms),
                                         offsetof(struct esym, addr), e->entry);
    struct esym label = {.addr = e->entry, .size = ENTRY_LABEL_BYTES, .label = true};
    int r;

    if (!e->entry || e->entry > UINT64_MAX - ENTRY_LABEL_BYTES || e->refused)
        return 0;
    /* at: the symbols starting at or below the entry; one covering it wins */
    for (size_t i = at; i-- > 0 && at - i <= LOOKUP_WALK_MAX;)
        if (esym_end(&e->syms[i]) > e->entry && !e->syms[i].label)
            return 0;
    if (at > 0 && e->syms[at - 1].label)
        return 0;
    r = reserve_symbols(e, 1, sizeof("_start"));
    if (r == -E2BIG)
        return 0; /* no room: the entry stays file+0x... */
    if (r == 0)
        r = strpool_add(&e->pool, "_start", strlen("_start"), &label.name);
    if (r < 0)
        return r;
    r = syms_push(e, &label);
    if (r < 0)
        return r;
    qsort_r(e->syms, e->n, sizeof(*e->syms), esym_compare, e->pool.data);
    return 0;
}

/* Each label (a debug file's may come after the stripped file's) ends at the
 * next symbol further on: one pass from the end, whatever their count. */
static void end_labels(struct elf_symbols *e)
{
    for (size_t i = e->n, next = e->n; i-- > 0;) {
        if (i + 1 < e->n && e->syms[i + 1].addr > e->syms[i].addr)
            next = i + 1;
        if (e->syms[i].label && next < e->n && esym_end(&e->syms[i]) > e->syms[next].addr)
            e->syms[i].size = (uint32_t)(e->syms[next].addr - e->syms[i].addr);
    }
}

/* Sort, name the entry point, drop aliases (.symtab and .dynsym list most
 * functions twice), and note the furthest end so far for lookups among
 * overlapping symbols. */
static int finish_symbols(struct elf_symbols *e)
{
    size_t n = 0;
    int r;

    if (e->n)
        qsort_r(e->syms, e->n, sizeof(*e->syms), esym_compare, e->pool.data);
    r = label_entry(e);
    if (r < 0)
        return r;
    end_labels(e);
    for (size_t i = 0; i < e->n; i++) {
        const struct esym *s = &e->syms[i];

        uint64_t max_end = esym_end(s);

        if (i + 1 < e->n && s[1].addr == s->addr && s[1].size == s->size)
            continue;
        if (n > 0 && e->syms[n - 1].addr + e->syms[n - 1].reach > max_end)
            max_end = e->syms[n - 1].addr + e->syms[n - 1].reach;
        e->syms[n] = *s;
        e->syms[n].reach = clamp_u32(max_end - s->addr);
        n++;
    }
    e->n = n;
    r = resize_exact(&e->syms, &e->cap, e->n, sizeof(*e->syms));
    if (r == 0)
        r = resize_exact(&e->pool.data, &e->pool.cap, e->pool.len, 1);
    return r;
}

/* The GNU build-id note, from any note section. */
static void read_build_id(Elf *elf, struct elf_debug_ref *ref)
{
    Elf_Scn *scn = NULL;

    while ((scn = elf_nextscn(elf, scn))) {
        Elf_Data *data;
        GElf_Shdr sh;
        GElf_Nhdr nh;
        size_t off = 0, name_off, desc_off;

        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(data = elf_getdata(scn, NULL)))
            continue;
        while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
            if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
                memcmp((char *)data->d_buf + name_off, "GNU", 4) != 0 || nh.n_descsz == 0 ||
                nh.n_descsz > sizeof(ref->build_id))
                continue;
            memcpy(ref->build_id, (char *)data->d_buf + desc_off, nh.n_descsz);
            ref->build_id_len = nh.n_descsz;
            return;
        }
    }
}

/* .gnu_debuglink: a NUL-terminated file name, padded to 4 bytes, then a CRC32. */
static void read_debuglink(Elf *elf, const GElf_Ehdr *eh, struct elf_debug_ref *ref)
{
    Elf_Scn *scn = NULL;

    while ((scn = elf_nextscn(elf, scn))) {
        const char *name;
        Elf_Data *data;
        GElf_Shdr sh;
        size_t len, crc_off;

        if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, eh->e_shstrndx, sh.sh_name)) ||
            strcmp(name, ".gnu_debuglink") != 0 || !(data = elf_getdata(scn, NULL)))
            continue;
        len = strnlen(data->d_buf, data->d_size);
        crc_off = (len + 4) & ~(size_t)3;
        if (len == 0 || len >= sizeof(ref->debuglink) || strchr(data->d_buf, '/') ||
            crc_off + 4 > data->d_size)
            return;
        memcpy(ref->debuglink, data->d_buf, len + 1);
        memcpy(&ref->debuglink_crc, (char *)data->d_buf + crc_off, 4);
        return;
    }
}

int elf_debug_ref_read(Elf *elf, struct elf_debug_ref *ref)
{
    GElf_Ehdr eh;

    *ref = (struct elf_debug_ref){0};
    if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
        return -ENOEXEC;
    read_build_id(elf, ref);
    read_debuglink(elf, &eh, ref);
    return 0;
}

static int read_elf(Elf *elf, uint64_t file_size, struct elf_symbols *e)
{
    GElf_Ehdr eh;
    int r;

    if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
        return -ENOEXEC;
    if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
        return -ENOEXEC;
    e->entry = eh.e_entry;
    r = read_segments(elf, e);
    if (r < 0)
        return r;
    elf_debug_ref_read(elf, &e->debug); /* first: reading the symbols says if stripped */
    r = read_symbols(elf, e, false, file_size);
    if (r == 0 && e->debug.stripped)
        r = read_go_functions(elf, e);
    return r < 0 ? r : finish_symbols(e);
}

int elf_symbols_read(int fd, const struct elf_symbols_budget *budget, struct elf_symbols **ret)
{
    _cleanup_(elf_endp) Elf *elf = NULL;
    struct elf_symbols *e;
    struct stat st;
    int r;

    if (elf_version(EV_CURRENT) == EV_NONE)
        return -ENOTSUP;
    if (fstat(fd, &st) < 0)
        return -errno;
    /* ELF_C_READ, not ELF_C_READ_MMAP: a file truncated under a mapping
     * would fault on access instead of failing a read. */
    elf = elf_begin(fd, ELF_C_READ, NULL);
    if (!elf)
        return -ENOEXEC;
    e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->budget = budget;
    r = read_elf(elf, (uint64_t)st.st_size, e);
    if (r < 0) {
        elf_symbols_free(e);
        return r;
    }
    *ret = e;
    return 0;
}

const struct elf_debug_ref *elf_symbols_debug_ref(const struct elf_symbols *e)
{
    return &e->debug;
}

static uint32_t file_crc32(int fd)
{
    unsigned char buf[65536];
    uLong crc = crc32(0, NULL, 0);
    ssize_t n;
    off_t off = 0;

    while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
        crc = crc32(crc, buf, (uInt)n);
        off += n;
    }
    return (uint32_t)crc;
}

int elf_debug_ref_check(const struct elf_debug_ref *ref, Elf *debug, int fd)
{
    struct elf_debug_ref theirs = {};

    if (elf_kind(debug) != ELF_K_ELF)
        return -ENOEXEC;
    read_build_id(debug, &theirs);
    /* a debug file for another build would put wrong names on every frame,
     * and wrong rules on every row */
    if (ref->build_id_len)
        return theirs.build_id_len == ref->build_id_len &&
                       memcmp(theirs.build_id, ref->build_id, theirs.build_id_len) == 0
                   ? 0
                   : -ESTALE;
    return ref->debuglink[0] && file_crc32(fd) == ref->debuglink_crc ? 0 : -ESTALE;
}

int elf_symbols_add_debug(struct elf_symbols *e, int fd)
{
    _cleanup_(elf_endp) Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    struct stat st;
    GElf_Ehdr eh;
    int r;

    if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
        return -ENOEXEC;
    if (fstat(fd, &st) < 0)
        return -errno;
    r = elf_debug_ref_check(&e->debug, elf, fd);
    if (r < 0)
        return r;
    r = read_symbols(elf, e, true, (uint64_t)st.st_size);
    e->debug.stripped = false;
    return r < 0 ? r : finish_symbols(e);
}

int elf_symbols_offset_to_vaddr(const struct elf_symbols *e, uint64_t offset, uint64_t *ret)
{
    for (size_t i = 0; i < e->nsegs; i++) {
        const struct segment *s = &e->segs[i];

        if (offset >= s->offset && offset < s->offset + s->filesz) {
            *ret = offset - s->offset + s->vaddr;
            return 0;
        }
    }
    return -ENOENT;
}

const char *elf_symbols_lookup(const struct elf_symbols *e, uint64_t vaddr)
{
    size_t lo = sorted_count_at_or_below(e->syms, e->n, sizeof(*e->syms),
                                         offsetof(struct esym, addr), vaddr);

    /* back from the last symbol starting at or below vaddr, while an earlier symbol may still reach
     * vaddr */
    for (size_t i = lo, steps = 0; i > 0 && steps < LOOKUP_WALK_MAX; i--, steps++) {
        const struct esym *s = &e->syms[i - 1];

        if (s->addr + s->reach <= vaddr)
            break;
        if (vaddr < esym_end(s))
            return e->pool.data + s->name;
    }
    return NULL;
}

const char *elf_symbols_inlined(const struct elf_symbols *e, uint64_t vaddr)
{
    size_t i = sorted_count_at_or_below(e->inlined, e->ninlined, sizeof(*e->inlined),
                                        offsetof(struct esym, addr), vaddr);

    if (i == 0 || vaddr >= esym_end(&e->inlined[i - 1]))
        return NULL;
    return e->pool.data + e->inlined[i - 1].name;
}

size_t elf_symbols_count(const struct elf_symbols *e)
{
    return e->n;
}
