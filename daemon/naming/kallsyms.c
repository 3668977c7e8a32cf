/* SPDX-License-Identifier: GPL-2.0-only */
#include "kallsyms.h"
#include "array.h"
#include "sorted_search.h"
#include "strpool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* How far past its start a symbol may reach when the next symbol is not of
 * its module: beyond that the address more likely belongs to code loaded
 * after the read than to the tail of a long function. */
#define KSYM_TAIL_MAX 4096

struct ksym {
    uint64_t addr;
    uint64_t end;
    uint32_t name;   /* offset in the pool; 0: not a function, a boundary only */
    uint32_t module; /* offset in the pool; 0: the kernel proper */
};

struct kallsyms {
    struct ksym *syms;
    size_t n;
    char *pool; /* pool[0] is "", the offset 0 means "none" */
    size_t pool_len;
};

/* What one parse builds before it replaces the previous symbols. */
struct table {
    struct ksym *syms;
    size_t n, cap;
    struct strpool pool;
    uint32_t last_module; /* modules come in runs: store each run's name once */
};

int kallsyms_new(struct kallsyms **ret)
{
    struct kallsyms *k = calloc(1, sizeof(*k));

    if (!k)
        return -ENOMEM;
    *ret = k;
    return 0;
}

struct kallsyms *kallsyms_free(struct kallsyms *k)
{
    if (!k)
        return NULL;
    free(k->syms);
    free(k->pool);
    free(k);
    return NULL;
}

static void table_done(struct table *t)
{
    free(t->syms);
    free(t->pool.data);
}

static int module_add(struct table *t, const char *s, size_t len, uint32_t *ret)
{
    const char *last = t->pool.data + t->last_module;
    int r;

    if (!t->last_module || strncmp(last, s, len) != 0 || last[len] != '\0') {
        r = strpool_add(&t->pool, s, len, &t->last_module);
        if (r < 0)
            return r;
    }
    *ret = t->last_module;
    return 0;
}

static int table_push(struct table *t, const struct ksym *sym)
{
    int r = array_reserve(&t->syms, &t->cap, t->n + 1, sizeof(*t->syms), 4096);

    if (r < 0)
        return r;
    t->syms[t->n++] = *sym;
    return 0;
}

static bool is_text_type(char type)
{
    return type != '\0' && strchr("tTwW", type);
}

/* "ADDR TYPE NAME[\t[MODULE]]". Lines that do not parse are skipped. */
static int parse_line(struct table *t, char *line)
{
    struct ksym sym = {};
    char *p, *name, *module;
    size_t name_len;
    int r;

    errno = 0;
    sym.addr = strtoull(line, &p, 16);
    if (errno || p == line || p[0] != ' ' || p[1] == '\0' || p[2] != ' ')
        return 0;
    /* Zero: hidden by kptr_restrict, or a per-CPU offset; neither is code. */
    if (sym.addr == 0)
        return 0;
    name = p + 3;
    name_len = strcspn(name, "\t\n ");
    if (name_len == 0)
        return 0;
    if (is_text_type(p[1])) {
        r = strpool_add(&t->pool, name, name_len, &sym.name);
        if (r < 0)
            return r;
    }
    module = name + name_len;
    if (module[0] == '\t' && module[1] == '[') {
        size_t len = strcspn(module + 2, "]\n");

        if (module[2 + len] == ']' && len > 0) {
            r = module_add(t, module + 2, len, &sym.module);
            if (r < 0)
                return r;
        }
    }
    return table_push(t, &sym);
}

/* By address; at equal addresses the best name sorts last, as lookups take
 * the last: functions over boundaries, then names without a leading
 * underscore (startup_64 over _stext), then by name for stable results. */
static int ksym_compare(const void *a, const void *b, void *userdata)
{
    const struct ksym *x = a, *y = b;
    const char *pool = userdata;
    const char *nx = pool + x->name, *ny = pool + y->name;

    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (!x->name != !y->name)
        return !x->name ? -1 : 1;
    if ((nx[0] == '_') != (ny[0] == '_'))
        return nx[0] == '_' ? -1 : 1;
    return strcmp(nx, ny);
}

static bool same_module(const struct table *t, const struct ksym *a, const struct ksym *b)
{
    if (!a->module || !b->module)
        return a->module == b->module;
    return strcmp(t->pool.data + a->module, t->pool.data + b->module) == 0;
}

/* Sort, keep one symbol per address, and set where each one ends. */
static void table_finish(struct table *t)
{
    size_t n = 0;

    if (t->n == 0)
        return;
    qsort_r(t->syms, t->n, sizeof(*t->syms), ksym_compare, t->pool.data);
    for (size_t i = 0; i < t->n; i++) {
        if (i + 1 < t->n && t->syms[i + 1].addr == t->syms[i].addr)
            continue;
        t->syms[n++] = t->syms[i];
    }
    t->n = n;
    for (size_t i = 0; i < n; i++) {
        struct ksym *s = &t->syms[i];
        uint64_t cap = s->addr > UINT64_MAX - KSYM_TAIL_MAX ? UINT64_MAX : s->addr + KSYM_TAIL_MAX;

        if (i + 1 == n)
            s->end = cap;
        else if (same_module(t, s, s + 1))
            s->end = s[1].addr;
        else
            s->end = s[1].addr < cap ? s[1].addr : cap;
    }
}

int kallsyms_parse(struct kallsyms *k, FILE *f)
{
    _cleanup_free_ char *line = NULL;
    struct table t = {};
    size_t line_size = 0;
    uint32_t empty;
    int r;

    r = strpool_add(&t.pool, "", 0, &empty);
    while (r >= 0 && getline(&line, &line_size, f) >= 0)
        r = parse_line(&t, line);
    if (r >= 0 && ferror(f))
        r = -EIO;
    if (r < 0) {
        table_done(&t);
        return r;
    }
    table_finish(&t);
    free(k->syms);
    free(k->pool);
    k->syms = t.syms;
    k->n = t.n;
    k->pool = t.pool.data;
    k->pool_len = t.pool.len;
    return 0;
}

int kallsyms_load(struct kallsyms *k, const char *path)
{
    _cleanup_fclose_ FILE *f = fopen(path, "re");

    if (!f)
        return -errno;
    return kallsyms_parse(k, f);
}

int kallsyms_shows_addresses(FILE *f)
{
    _cleanup_free_ char *line = NULL;
    size_t line_size = 0;

    /* Absolute symbols come first on some kernels (6.1: the per-CPU section's
     * offsets, fixed_percpu_data at 0): only an address in the text tells. */
    while (getline(&line, &line_size, f) >= 0) {
        char *end, type;
        uint64_t addr = strtoull(line, &end, 16);

        if (sscanf(end, " %c", &type) == 1 && (type == 'A' || type == 'a'))
            continue;
        return addr != 0;
    }
    return ferror(f) ? -EIO : -ENODATA;
}

int kallsyms_lookup(const struct kallsyms *k, uint64_t addr, const char **ret_name,
                    const char **ret_module)
{
    size_t lo = sorted_count_at_or_below(k->syms, k->n, sizeof(*k->syms),
                                         offsetof(struct ksym, addr), addr);
    const struct ksym *s;

    if (lo == 0)
        return -ENOENT;
    s = &k->syms[lo - 1];
    if (addr >= s->end || !s->name)
        return -ENOENT;
    *ret_name = k->pool + s->name;
    *ret_module = s->module ? k->pool + s->module : NULL;
    return 0;
}

void kallsyms_set_extents(struct kallsyms *k, const char *module, const struct ksym_extent *ext,
                          size_t n)
{
    for (size_t i = 0; i < k->n; i++) {
        struct ksym *s = &k->syms[i];
        size_t at;

        if (!s->module || strcmp(k->pool + s->module, module) != 0)
            continue;
        at = sorted_count_at_or_below(ext, n, sizeof(*ext), offsetof(struct ksym_extent, start),
                                      s->addr);
        s->end = at > 0 && ext[at - 1].start == s->addr ? s->addr + ext[at - 1].len : s->addr;
    }
}

void kallsyms_forget(struct kallsyms *k, const char *module, uint64_t start)
{
    size_t at = sorted_count_at_or_below(k->syms, k->n, sizeof(*k->syms),
                                         offsetof(struct ksym, addr), start);
    struct ksym *s = at > 0 ? &k->syms[at - 1] : NULL;

    if (s && s->addr == start && s->module && strcmp(k->pool + s->module, module) == 0)
        s->end = s->addr;
}

size_t kallsyms_count(const struct kallsyms *k)
{
    return k->n;
}

static bool startswith(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* JITed programs are named bpf_prog_<16 hex digit tag>, optionally followed
 * by _<name>; kernel functions such as bpf_prog_realloc are not. */
static bool is_bpf_prog(const char *name)
{
    const char *tag;

    if (!startswith(name, "bpf_prog_"))
        return false;
    tag = name + strlen("bpf_prog_");
    for (size_t i = 0; i < 16; i++)
        if (!((tag[i] >= '0' && tag[i] <= '9') || (tag[i] >= 'a' && tag[i] <= 'f')))
            return false;
    return tag[16] == '\0' || tag[16] == '_';
}

bool kallsyms_is_tracer_frame(const char *name)
{
    return is_bpf_prog(name) || startswith(name, "bpf_trace_run") ||
           startswith(name, "__traceiter_") || startswith(name, "__bpf_trace_");
}
