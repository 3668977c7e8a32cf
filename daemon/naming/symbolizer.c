/* SPDX-License-Identifier: GPL-2.0-only */
#include "symbolizer.h"

#include <errno.h>
#include <stdlib.h>

#include "clock.h"
#include "elf_symbols.h"
#include "file_cache.h"
#include "frame_address.h"
#include "frame_names.h"
#include "go_pclntab.h"
#include "kallsyms.h"
#include "kernel_symbols.h"
#include "offcpu.h"
#include "process_images.h"
#include "python_code.h"

_Static_assert(GO_INLINE_DEPTH_MAX + 1 <= FRAME_NAMES_MAX, "a frame and its inlined calls, whole");

struct symbolizer {
    struct file_cache *files;
    struct process_images *images; /* hold files of the cache above */
    struct kernel_symbols *kernel;
    struct python_code_cache *python;
    struct symbolizer_stats stats; /* the frames asked and named */
};

int symbolizer_new(size_t symbol_memory, struct symbolizer **ret)
{
    struct symbolizer *s = calloc(1, sizeof(*s));
    int r;

    if (!s)
        return -ENOMEM;
    r = file_cache_new(symbol_memory, &s->files);
    if (r == 0)
        r = process_images_new(s->files, &s->images);
    if (r == 0)
        r = kernel_symbols_new(&s->kernel);
    if (r == 0)
        r = python_code_cache_new(&s->python);
    if (r < 0) {
        symbolizer_free(s);
        return r;
    }
    *ret = s;
    return 0;
}

struct symbolizer *symbolizer_free(struct symbolizer *s)
{
    if (!s)
        return NULL;
    /* the images first: they hold files of the cache */
    process_images_free(s->images);
    file_cache_free(s->files);
    kernel_symbols_free(s->kernel);
    python_code_cache_free(s->python);
    free(s);
    return NULL;
}

void symbolizer_begin_pass(struct symbolizer *s)
{
    /* images forgotten now release their files before idle ones are evicted */
    process_images_begin_pass(s->images);
    file_cache_begin_pass(s->files);
    kernel_symbols_begin_pass(s->kernel);
    python_code_begin_pass(s->python, clock_ns(CLOCK_MONOTONIC));
}

/* A symbol of the file when one holds the address; else the file offset,
 * which stays meaningful (addr2line, a later symbolization) and is never
 * a wrong name. A file that is not ELF (a memfd) may hold JIT code. */
static int name_file_frame(struct symbolizer *s, const struct image_location *at, uint64_t addr,
                           bool is_leaf, char *buf, size_t size, struct frame_where *where)
{
    const struct elf_symbols *syms = cached_file_symbols(at->file);
    const struct elf_debug_ref *ref = syms ? elf_symbols_debug_ref(syms) : NULL;
    const char *name = NULL, *inlined;

    if (where)
        frame_where_set(where, at->map->path, at->offset, ref ? ref->build_id : NULL,
                        ref ? ref->build_id_len : 0);
    if (at->has_vaddr) {
        file_cache_used(s->files, at->file);
        name = elf_symbols_lookup(syms, at->vaddr);
    } else if (!syms)
        name = process_image_jit_symbol(s->images, at->image, addr);
    if (!name) {
        frame_name_in_file(buf, size, at->map->path, at->offset);
        return 0;
    }
    s->stats.user_named++;
    inlined = at->has_vaddr ? elf_symbols_inlined(syms, at->vaddr) : NULL;
    if (inlined)
        frame_name_inlined(buf, size, inlined, name);
    else
        frame_name_symbol(buf, size, name);
    return go_function_is_stack_root(name, is_leaf) ? SYMBOLIZER_ROOT : 0;
}

int symbolizer_user_frame(struct symbolizer *s, pid_t tgid, uint32_t exec_id, uint64_t ip,
                          bool is_leaf, char *buf, size_t size, struct frame_where *where)
{
    uint64_t addr = frame_lookup_address(ip, !is_leaf);
    struct image_location at;
    const char *name;
    int r;

    if (where)
        where->in_file = false;
    s->stats.user_frames++;
    r = process_images_locate(s->images, tgid, exec_id, addr, &at);
    if (r < 0)
        return frame_name_unknown(buf, size, r);
    switch (at.map->kind) {
    case PROC_MAP_FILE:
        return name_file_frame(s, &at, addr, is_leaf, buf, size, where);
    case PROC_MAP_VDSO:
        frame_name_literal(buf, size, FRAME_NAME_VDSO);
        return 0;
    default:
        name = process_image_jit_symbol(s->images, at.image, addr);
        if (!name) {
            frame_name_literal(buf, size, FRAME_NAME_ANON);
            return 0;
        }
        s->stats.user_named++;
        frame_name_symbol(buf, size, name);
        return 0;
    }
}

int symbolizer_python_frame(struct symbolizer *s, pid_t tgid, uint32_t layout, uint64_t word,
                            char *buf, size_t size, struct frame_where *where)
{
    uint64_t lasti1 = (word >> OFFCPU_PY_LASTI_SHIFT) & OFFCPU_PY_LASTI_FAR;
    struct python_frame_name py;
    int r;

    if (where)
        where->in_file = false;
    s->stats.python_frames++;
    /* an instruction too far to encode: the function is known, its line not */
    r = python_code_name(s->python, tgid, layout, word & OFFCPU_PY_CODE_MASK,
                         lasti1 == OFFCPU_PY_LASTI_FAR ? -1 : (int32_t)lasti1 - 1, &py);
    if (r < 0) {
        s->stats.python_unreadable++;
        frame_name_literal(buf, size, FRAME_NAME_PYTHON_UNREADABLE);
        return r;
    }
    if (lasti1 == OFFCPU_PY_LASTI_FAR)
        py.line = -1;
    frame_name_python(buf, size, py.qualname, py.file, py.line);
    if (where && py.line > 0)
        frame_where_set_source(where, py.file, (uint32_t)py.line);
    return 0;
}

int symbolizer_kernel_frame(struct symbolizer *s, uint64_t ip, bool is_leaf, char *buf, size_t size)
{
    const char *name, *module;
    int r;

    s->stats.kernel_frames++;
    r = kernel_symbols_lookup(s->kernel, frame_lookup_address(ip, !is_leaf), &name, &module);
    if (r < 0)
        return frame_name_unknown(buf, size, r);
    frame_name_kernel(buf, size, name, module);
    if (kallsyms_is_tracer_frame(name))
        return SYMBOLIZER_SKIP;
    s->stats.kernel_named++;
    return 0;
}

int symbolizer_prefetch(struct symbolizer *s, pid_t tgid, uint32_t exec_id, enum prefetch_when when)
{
    return process_images_prefetch(s->images, tgid, exec_id, when);
}

void symbolizer_prefetch_pending(struct symbolizer *s)
{
    process_images_prefetch_pending(s->images);
}

int symbolizer_inherit(struct symbolizer *s, pid_t tgid, pid_t parent, uint32_t exec_id,
                       int64_t code_ns)
{
    return process_images_inherit(s->images, tgid, parent, exec_id, code_ns);
}

void symbolizer_get_stats(const struct symbolizer *s, struct symbolizer_stats *ret)
{
    struct process_images_stats images;
    struct file_cache_stats files;
    struct python_code_stats py;

    process_images_get_stats(s->images, &images);
    file_cache_get_stats(s->files, &files);
    *ret = s->stats;
    ret->elf_files = files.files;
    ret->elf_opens = files.opens;
    ret->debug_files = files.debug_files;
    ret->symbol_memory = files.symbol_memory;
    ret->symbol_bytes = files.symbol_bytes;
    ret->symbol_files_refused = files.symbol_files_refused;
    ret->symbol_files_evicted = files.symbol_files_evicted;
    ret->maps_reads = images.maps_reads;
    ret->maps_inherited = images.maps_inherited;
    ret->perf_map_reads = images.perf_map_reads;
    ret->kallsyms_loads = kernel_symbols_reads(s->kernel);
    python_code_stats(s->python, &py);
    ret->python_code_objects = py.entries;
    ret->python_code_memory = py.bytes;
    ret->python_code_evicted = py.evicted;
}
