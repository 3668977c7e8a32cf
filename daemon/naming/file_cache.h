/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The files behind mappings: the one place that opens them, and keeps what
 * was read of each. A file is opened through /proc/PID/map_files, which gives
 * the very file mapped (deleted, or in another mount namespace), else by its
 * path under the process's root if that still names the same inode. What was
 * read is cached by the file's identity, so that a library mapped by every
 * process is read once.
 */
#ifndef FILE_CACHE_H
#define FILE_CACHE_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "elf_symbols.h"
#include "proc_maps.h"

/* What identifies a file's contents without reading them. */
struct file_key {
    uint64_t dev, ino, size;
    int64_t mtime_sec, mtime_nsec;
};

struct file_key file_key_from_stat(const struct stat *st);
int file_key_compare(const struct file_key *a, const struct file_key *b);

struct file_cache;
struct cached_file;

struct file_cache_stats {
    uint64_t files;                /* files cached */
    uint64_t opens;                /* files read (cache misses) */
    uint64_t debug_files;          /* separate debug files read for stripped ones */
    uint64_t symbol_memory;        /* the budget of all files' symbols */
    uint64_t symbol_bytes;         /* ... held */
    uint64_t symbol_files_refused; /* files whose symbols were over the cap of one file */
    uint64_t symbol_files_evicted; /* files whose symbols were freed for another's */
};

/* The files' symbols take at most symbol_memory bytes together, one file
 * at most half: a file over that is refused (named by offset only), and
 * the symbols of the files used least recently are freed for a new file's.
 * Those come back when a program maps their file anew, a while later. */
int file_cache_new(size_t symbol_memory, struct file_cache **ret);
struct file_cache *file_cache_free(struct file_cache *c);

/* Start a pass: files no mapping holds, and unused for a while, go. */
void file_cache_begin_pass(struct file_cache *c);

/* The file behind mapping m (PROC_MAP_FILE) of process pid, read if not
 * cached yet, and held until file_cache_release. Never NULL: a file that
 * cannot be opened (or is full) has no symbols. */
struct cached_file *file_cache_hold(struct file_cache *c, pid_t pid, const struct proc_map *m);
void file_cache_release(struct cached_file *f);
/* Hold f once more (a forked process maps what its parent held). */
void file_cache_hold_again(struct file_cache *c, struct cached_file *f);

/* Its function symbols (its debug file's too, for a stripped one), or NULL
 * for a file that is not ELF or could not be read. */
const struct elf_symbols *cached_file_symbols(const struct cached_file *f);

/* Its symbols were looked up: the last to be evicted. */
void file_cache_used(struct file_cache *c, struct cached_file *f);

/* Open the file behind mapping m of process pid, for what the cache does
 * not keep (call frame information). Returns a descriptor or a negative errno. */
int file_cache_open(pid_t pid, const struct proc_map *m);

void file_cache_get_stats(const struct file_cache *c, struct file_cache_stats *ret);

#endif
