/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Frame names for kernel and user addresses: what a drain asks, in one place.
 *
 * Kernel: /proc/kallsyms (kernel_symbols.h). User: the ELF file behind the
 * mapping that holds the address (process_images.h, file_cache.h), a symbol
 * used only when the address lies inside its size; JIT code (anonymous
 * memory, or a file that is not ELF) from the process's perf map. How names
 * are written, and what a frame that cannot be named is written as:
 * frame_names.h.
 */
#ifndef SYMBOLIZER_H
#define SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "frame_where.h"
#include "process_images.h"

struct symbolizer;

struct symbolizer_stats {
    uint64_t elf_files;      /* ELF files cached */
    uint64_t elf_opens;      /* ELF files read (cache misses) */
    uint64_t maps_reads;     /* /proc/PID/maps reads */
    uint64_t maps_inherited; /* ... not read: a forked process's, its parent's */
    uint64_t user_frames;    /* user frames asked */
    uint64_t user_named;     /* ... named with a symbol */
    uint64_t debug_files;    /* separate debug files read for stripped ones */
    uint64_t kernel_frames;
    uint64_t kernel_named;
    uint64_t kallsyms_loads; /* /proc/kallsyms reads */
    uint64_t perf_map_reads; /* perf maps (JIT code) read */
    uint64_t symbol_memory;  /* ELF files' symbols: the budget (see file_cache.h) */
    uint64_t symbol_bytes;   /* ... held */
    uint64_t symbol_files_refused;
    uint64_t symbol_files_evicted;
    uint64_t python_frames;       /* Python frames asked */
    uint64_t python_unreadable;   /* ... whose code object could not be read */
    uint64_t python_code_objects; /* code objects cached (python_code.h) */
    uint64_t python_code_memory;  /* ... the bytes they take */
    uint64_t python_code_evicted; /* ... dropped for room */
};

/* Returned by symbolizer_kernel_frame (name filled) for frames of the kinds
 * the tracer's own are made of (bpf_prog_*, bpf_trace_run*, __traceiter_*,
 * __bpf_trace_*): drop those at the leaf end of a stack, where it was taken;
 * further up they are another program's. */
#define SYMBOLIZER_SKIP 1

/* Returned by symbolizer_user_frame (name filled) for a frame where a stack
 * begins though a walk may go on past it (go_function_is_stack_root): what
 * the walk found beyond it is no caller, and is dropped. */
#define SYMBOLIZER_ROOT 2

/* The symbols of ELF files take at most symbol_memory bytes (file_cache.h). */
int symbolizer_new(size_t symbol_memory, struct symbolizer **ret);
struct symbolizer *symbolizer_free(struct symbolizer *s);

/* Start a pass (one drain). A process's mappings are read at most once per
 * pass, and reused across passes for a while (sooner re-read for an address
 * in none of them, or when the process is announced); ELF files stay cached
 * while in use; kernel symbols follow modules and BPF programs as they come
 * and go (see kernel_symbols.h). */
void symbolizer_begin_pass(struct symbolizer *s);

/* Name a frame of process tgid, in the image its exec_id-th exec started
 * (execs in place replace the mappings: a higher exec_id than known freezes
 * the mappings read so far for the lower ones). is_leaf: ip is the
 * interrupted pc (the first frame); otherwise it is a return address, looked
 * up as frame_address.h says.
 * With where non-NULL, also tells where the address looked up lies, so that
 * the name can be checked against another resolver (where->in_file false
 * outside files).
 * buf may hold the names of several frames (Go's inlined calls), separated
 * as frame_names.h says: frame_names_split gives them, innermost first.
 * Returns 0 or SYMBOLIZER_ROOT (buf filled), or a negative errno (buf still
 * filled, as "[unknown]"). */
int symbolizer_user_frame(struct symbolizer *s, pid_t tgid, uint32_t exec_id, uint64_t ip,
                          bool is_leaf, char *buf, size_t size, struct frame_where *where);

/* Name a Python frame of process tgid: word is one of its user stack's
 * (OFFCPU_PY_* in offcpu.h), layout the walk's (its marker's), read from the
 * process's memory while it lives. Returns 0 (buf as frame_name_python
 * writes it, where at its source line) or a negative errno (buf
 * FRAME_NAME_PYTHON_UNREADABLE). */
int symbolizer_python_frame(struct symbolizer *s, pid_t tgid, uint32_t layout, uint64_t word,
                            char *buf, size_t size, struct frame_where *where);

/* Name a kernel frame: "function", or "function [module]" for modules.
 * Returns 0, SYMBOLIZER_SKIP, or a negative errno (buf filled as "[unknown]"). */
int symbolizer_kernel_frame(struct symbolizer *s, uint64_t ip, bool is_leaf, char *buf,
                            size_t size);

/* Process tgid was forked from parent: its mappings are the parent's, if
 * read since the parent last mapped code (see process_images_inherit). */
int symbolizer_inherit(struct symbolizer *s, pid_t tgid, pid_t parent, uint32_t exec_id,
                       int64_t code_ns);

/* Read the mappings of process tgid now, and open the files it maps, so that
 * its frames can be named even if it is gone by the next pass (see enum
 * prefetch_when). */
int symbolizer_prefetch(struct symbolizer *s, pid_t tgid, uint32_t exec_id,
                        enum prefetch_when when);
/* The execs prefetched since the last call, unless read since: read now (at
 * the end of the announcements taken together, see process_images.h). */
void symbolizer_prefetch_pending(struct symbolizer *s);

void symbolizer_get_stats(const struct symbolizer *s, struct symbolizer_stats *ret);

#endif
