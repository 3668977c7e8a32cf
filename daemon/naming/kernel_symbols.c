/* SPDX-License-Identifier: GPL-2.0-only */
#include "kernel_symbols.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "kallsyms.h"
#include "kernel_code.h"
#include "macro.h"

/* An address nothing names may be code loaded since the last read that no
 * change told of (a program past BPF_PROGS_MAX): read again then, but not
 * more often than this. */
#define RETRY_PASSES 16

struct kernel_symbols {
    struct kallsyms *kallsyms;
    unsigned pass, read_pass;
    uint64_t reads;
    bool stale;     /* read before the next lookup: modules changed, or never read */
    bool bpf_added; /* programs loaded since the read: read at an unknown address */
    uint64_t modules_hash;
    uint32_t *prog_ids; /* as of the last pass, ascending */
    size_t n_prog_ids;
    struct bpf_function *funcs; /* as of the last read, by start */
    size_t n_funcs;
};

int kernel_symbols_new(struct kernel_symbols **ret)
{
    struct kernel_symbols *k = calloc(1, sizeof(*k));
    int r;

    if (!k)
        return -ENOMEM;
    r = kallsyms_new(&k->kallsyms);
    if (r < 0) {
        free(k);
        return r;
    }
    /* read lazily, at the first lookup: by then the collector's own programs
     * are loaded and can be recognised */
    k->stale = true;
    *ret = k;
    return 0;
}

struct kernel_symbols *kernel_symbols_free(struct kernel_symbols *k)
{
    if (!k)
        return NULL;
    kallsyms_free(k->kallsyms);
    free(k->prog_ids);
    free(k->funcs);
    free(k);
    return NULL;
}

/* The functions of a program that went name nothing from now on. */
static void forget_program(struct kernel_symbols *k, uint32_t id)
{
    size_t n = 0;

    for (size_t i = 0; i < k->n_funcs; i++) {
        if (k->funcs[i].prog_id == id)
            kallsyms_forget(k->kallsyms, "bpf", k->funcs[i].start);
        else
            k->funcs[n++] = k->funcs[i];
    }
    k->n_funcs = n;
}

/* Both lists ascending: which ids went, and whether any came. */
static void compare_programs(struct kernel_symbols *k, const uint32_t *ids, size_t n)
{
    size_t i = 0, j = 0;

    while (i < k->n_prog_ids || j < n) {
        if (j == n || (i < k->n_prog_ids && k->prog_ids[i] < ids[j])) {
            forget_program(k, k->prog_ids[i++]);
        } else if (i == k->n_prog_ids || ids[j] < k->prog_ids[i]) {
            k->bpf_added = true;
            j++;
        } else {
            i++;
            j++;
        }
    }
}

void kernel_symbols_begin_pass(struct kernel_symbols *k)
{
    uint64_t h = modules_hash();
    uint32_t *ids;
    size_t n;

    k->pass++;
    if (h != k->modules_hash) {
        k->modules_hash = h;
        k->stale = true;
    }
    if (bpf_program_ids(&ids, &n) < 0)
        return;
    compare_programs(k, ids, n);
    free(k->prog_ids);
    k->prog_ids = ids;
    k->n_prog_ids = n;
}

/* kallsyms knows BPF functions by start only: give them their extents. */
static int set_bpf_extents(struct kallsyms *kallsyms, const struct bpf_function *funcs, size_t n)
{
    _cleanup_free_ struct ksym_extent *ext = calloc(n ?: 1, sizeof(*ext));

    if (!ext)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        ext[i] = (struct ksym_extent){.start = funcs[i].start, .len = funcs[i].len};
    kallsyms_set_extents(kallsyms, "bpf", ext, n);
    return 0;
}

/* The programs first: one loaded after is not listed yet, and names nothing
 * until the next read. Where they cannot be listed, their extents are
 * guessed. A failed read is not retried at every lookup: it counts. */
static void read_kallsyms(struct kernel_symbols *k)
{
    struct bpf_function *funcs = NULL;
    size_t n = 0;
    int r = bpf_functions(&funcs, &n);

    kallsyms_load(k->kallsyms, "/proc/kallsyms");
    if (r == 0)
        r = set_bpf_extents(k->kallsyms, funcs, n);
    free(k->funcs);
    k->funcs = r == 0 ? funcs : NULL;
    k->n_funcs = r == 0 ? n : 0;
    if (r < 0)
        free(funcs);
    k->reads++;
    k->stale = k->bpf_added = false;
    k->read_pass = k->pass;
}

int kernel_symbols_lookup(struct kernel_symbols *k, uint64_t addr, const char **ret_name,
                          const char **ret_module)
{
    int r;

    if (k->stale)
        read_kallsyms(k);
    r = kallsyms_lookup(k->kallsyms, addr, ret_name, ret_module);
    if (r != -ENOENT || (!k->bpf_added && k->pass - k->read_pass < RETRY_PASSES))
        return r;
    read_kallsyms(k);
    return kallsyms_lookup(k->kallsyms, addr, ret_name, ret_module);
}

uint64_t kernel_symbols_reads(const struct kernel_symbols *k)
{
    return k->reads;
}
