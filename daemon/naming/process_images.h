/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The images of processes: the mappings each one had, kept so that its
 * frames can be named after it is gone, with the files behind them (held in
 * the file cache) and the names of its JIT code (its perf map).
 *
 * An exec in place starts a new image of the same pid, with its own exec_id
 * (the BPF side counts them): a higher exec_id than known freezes the images
 * before it, kept as last read, never read again. A live process's mappings
 * are reused for a while, read again sooner for an address in none of them
 * or when the process is announced.
 */
#ifndef PROCESS_IMAGES_H
#define PROCESS_IMAGES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "file_cache.h"
#include "proc_maps.h"

struct process_images;
struct process_image;

struct process_images_stats {
    uint64_t maps_reads;     /* /proc/PID/maps reads */
    uint64_t perf_map_reads; /* perf maps (JIT code) read */
    uint64_t maps_inherited; /* processes forked that took their parent's mappings */
};

/* files: where the files behind the mappings are held; it outlives images. */
int process_images_new(struct file_cache *files, struct process_images **ret);
struct process_images *process_images_free(struct process_images *pi);

/* Start a pass (one drain): a process's mappings are read at most once per
 * pass; one gone for long is forgotten. */
void process_images_begin_pass(struct process_images *pi);

/* What lies at addr in the exec_id-th image of process pid. Valid until the
 * next call into the images. */
struct image_location {
    struct process_image *image;
    const struct proc_map *map; /* the mapping holding addr */
    struct cached_file *file;   /* the file behind it (PROC_MAP_FILE) */
    uint64_t offset;            /* addr's offset in that file (PROC_MAP_FILE) */
    bool has_vaddr;             /* the file is ELF and loads that offset ... */
    uint64_t vaddr;             /* ... at this ELF address */
};

/* Returns 0, the error the mappings could not be read with, or -ENOENT for
 * an address in no mapping. */
int process_images_locate(struct process_images *pi, pid_t pid, uint32_t exec_id, uint64_t addr,
                          struct image_location *ret);

/* The name of JIT code at addr (in anonymous memory, or in a file that is
 * not ELF, such as a memfd) from the process's perf map, or NULL. */
const char *process_image_jit_symbol(struct process_images *pi, struct process_image *img,
                                     uint64_t addr);

/* Why a process's mappings are read ahead. */
enum prefetch_when {
    PREFETCH_EXEC,        /* at its exec: ld.so has mapped nothing yet */
    PREFETCH_FIRST_BLOCK, /* a thread's first block: read again if last read at the exec */
    PREFETCH_MAPPED,      /* it mapped more code since: read again */
};

/* Read the mappings of an announced process now (unless just read, see
 * enum prefetch_when), and hold the files it maps, so that its frames can
 * be named even if it is gone by the next pass. An exec's are read by
 * process_images_prefetch_pending, unless a later announcement of the
 * process reads them first. */
int process_images_prefetch(struct process_images *pi, pid_t pid, uint32_t exec_id,
                            enum prefetch_when when);

/* The execs announced since the last call, not read yet: read now. Called
 * at the end of the announcements taken together, and before a pass. */
void process_images_prefetch_pending(struct process_images *pi);

/* Process pid was forked from parent, and has been running exec_id (the
 * parent's image) since. The parent last mapped code at code_ns
 * (CLOCK_MONOTONIC; 0: not since traced): its mappings read after that
 * (now, if they were not) are pid's too, taken with the files they hold,
 * not read. -ESTALE if the parent cannot be read (gone, replaced): pid's
 * are read when it is announced. */
int process_images_inherit(struct process_images *pi, pid_t pid, pid_t parent, uint32_t exec_id,
                           int64_t code_ns);

void process_images_get_stats(const struct process_images *pi, struct process_images_stats *ret);

#endif
