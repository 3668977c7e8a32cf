/* SPDX-License-Identifier: GPL-2.0-only */
#include "file_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "debug_files.h"
#include "macro.h"
#include "sorted_search.h"

/* Files kept at most, and how many passes an unused one is kept. */
#define FILE_CACHE_MAX   1024
#define FILE_IDLE_PASSES 64

_Static_assert(sizeof(struct file_key) == 5 * sizeof(uint64_t), "keys are compared with memcmp");

struct cached_file {
    struct file_key key;
    struct elf_symbols *syms; /* NULL: not ELF, or unreadable: offsets only */
    unsigned last_pass;
    unsigned refs;         /* holders (mappings of cached processes): not evicted */
    unsigned used_pass;    /* its symbols last read or looked up */
    unsigned evicted_pass; /* its symbols last evicted, if evicted */
    bool evicted;
};

struct file_cache {
    unsigned pass;
    struct cached_file **files; /* sorted by key */
    size_t n_files;
    size_t symbol_memory; /* the budget of all files' symbols */
    struct elf_symbols_budget budget;
    struct file_cache_stats stats;
};

/* The file of a mapping that cannot be opened: named by offset only. */
static struct cached_file no_file;

struct file_key file_key_from_stat(const struct stat *st)
{
    return (struct file_key){
        .dev = st->st_dev,
        .ino = st->st_ino,
        .size = (uint64_t)st->st_size,
        .mtime_sec = st->st_mtim.tv_sec,
        .mtime_nsec = st->st_mtim.tv_nsec,
    };
}

int file_key_compare(const struct file_key *a, const struct file_key *b)
{
    return memcmp(a, b, sizeof(*a));
}

/* Free the symbols of the files used least recently (of those used as long
 * ago, the largest first) until bytes more fit. */
static int make_room(void *userdata, size_t bytes)
{
    struct file_cache *c = userdata;

    while (c->stats.symbol_bytes + bytes > c->symbol_memory) {
        struct cached_file *victim = NULL;

        for (size_t i = 0; i < c->n_files; i++) {
            struct cached_file *f = c->files[i];

            if (!f->syms || elf_symbols_memory(f->syms) == 0)
                continue;
            if (!victim || f->used_pass < victim->used_pass ||
                (f->used_pass == victim->used_pass &&
                 elf_symbols_memory(f->syms) > elf_symbols_memory(victim->syms)))
                victim = f;
        }
        if (!victim)
            return -ENOSPC;
        c->stats.symbol_bytes -= elf_symbols_memory(victim->syms);
        elf_symbols_drop(victim->syms);
        victim->evicted = true;
        victim->evicted_pass = c->pass;
        c->stats.symbol_files_evicted++;
    }
    return 0;
}

int file_cache_new(size_t symbol_memory, struct file_cache **ret)
{
    struct file_cache *c = calloc(1, sizeof(*c));

    if (!c)
        return -ENOMEM;
    c->symbol_memory = symbol_memory;
    /* one file at most half: another big one still fits beside it */
    c->budget = (struct elf_symbols_budget){symbol_memory / 2, make_room, c};
    /* pointers only: sized for the maximum once */
    c->files = calloc(FILE_CACHE_MAX, sizeof(*c->files));
    if (!c->files) {
        free(c);
        return -ENOMEM;
    }
    *ret = c;
    return 0;
}

static void file_free(struct file_cache *c, struct cached_file *f)
{
    if (f->syms)
        c->stats.symbol_bytes -= elf_symbols_memory(f->syms);
    elf_symbols_free(f->syms);
    free(f);
}

struct file_cache *file_cache_free(struct file_cache *c)
{
    if (!c)
        return NULL;
    for (size_t i = 0; i < c->n_files; i++)
        file_free(c, c->files[i]);
    free(c->files);
    free(c);
    return NULL;
}

/* Files unused for a while go; the others stay, whatever the number: all
 * of those were used recently, and new ones are refused when full. */
void file_cache_begin_pass(struct file_cache *c)
{
    size_t n = 0;

    c->pass++;
    for (size_t i = 0; i < c->n_files; i++) {
        if (c->files[i]->refs == 0 && c->pass - c->files[i]->last_pass > FILE_IDLE_PASSES)
            file_free(c, c->files[i]);
        else
            c->files[n++] = c->files[i];
    }
    c->n_files = n;
}

static int compare_file_to_key(const void *elem, const void *key)
{
    const struct cached_file *const *f = elem;

    return file_key_compare(&(*f)->key, key);
}

/* A stripped file's names come from its debug file, where one is installed. */
static void add_debug_symbols(struct file_cache *c, pid_t pid, const char *mapped_path,
                              struct elf_symbols *e)
{
    _cleanup_close_ int fd = -EBADF;

    if (!elf_symbols_debug_ref(e)->stripped)
        return;
    fd = debug_file_open(pid, mapped_path, elf_symbols_debug_ref(e));
    if (fd >= 0 && elf_symbols_add_debug(e, fd) == 0)
        c->stats.debug_files++;
}

/* The symbols of the file open on fd, its debug file's too, counted in the
 * budget; NULL for a file that is not ELF (it keeps an entry all the same,
 * so that it is not read again at every pass). */
static int symbols_read(struct file_cache *c, int fd, pid_t pid, const char *mapped_path,
                        struct elf_symbols **ret)
{
    struct elf_symbols *e = NULL;
    int r = elf_symbols_read(fd, &c->budget, &e);

    *ret = NULL;
    if (r == -ENOEXEC)
        return 0;
    if (r < 0)
        return r;
    add_debug_symbols(c, pid, mapped_path, e);
    if (elf_symbols_refused(e))
        c->stats.symbol_files_refused++;
    c->stats.symbol_bytes += elf_symbols_memory(e);
    *ret = e;
    return 0;
}

static int file_insert(struct file_cache *c, size_t i, const struct file_key *k,
                       struct elf_symbols *syms, struct cached_file **ret)
{
    struct cached_file *f = calloc(1, sizeof(*f));

    if (!f)
        return -ENOMEM;
    *f = (struct cached_file){.key = *k, .syms = syms, .used_pass = c->pass};
    memmove(&c->files[i + 1], &c->files[i], (c->n_files - i) * sizeof(*c->files));
    c->files[i] = f;
    c->n_files++;
    *ret = f;
    return 0;
}

/* Symbols evicted come back for a program that maps the file anew, but not
 * sooner than an idle file would go: files that do not fit together are not
 * read over and over. */
static bool symbols_due(const struct file_cache *c, const struct cached_file *f)
{
    return f->evicted && c->pass - f->evicted_pass > FILE_IDLE_PASSES;
}

/* The cached file with the identity st, read from path if not cached yet;
 * mapped_path is its name as process pid sees it, to find its debug file. */
static struct cached_file *file_get(struct file_cache *c, pid_t pid, const char *mapped_path,
                                    const char *path, const struct stat *st)
{
    struct file_key k = file_key_from_stat(st), opened;
    _cleanup_close_ int fd = -EBADF;
    struct cached_file *f = NULL;
    struct elf_symbols *syms;
    struct stat fst;
    size_t i;
    bool found;

    i = sorted_search(c->files, c->n_files, sizeof(*c->files), &k, compare_file_to_key, &found);
    if (found && !symbols_due(c, c->files[i]))
        return c->files[i];
    if (!found && c->n_files >= FILE_CACHE_MAX)
        return &no_file;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &fst) < 0)
        return found ? c->files[i] : &no_file;
    /* replaced between stat and open: next pass will see the new one */
    opened = file_key_from_stat(&fst);
    if (file_key_compare(&opened, &k) != 0 || symbols_read(c, fd, pid, mapped_path, &syms) < 0)
        return found ? c->files[i] : &no_file;
    c->stats.opens++;
    if (found) {
        f = c->files[i];
        elf_symbols_free(f->syms); /* dropped: nothing counted */
        f->syms = syms;
        f->evicted = false;
        f->used_pass = c->pass;
        return f;
    }
    if (file_insert(c, i, &k, syms, &f) < 0) {
        if (syms)
            c->stats.symbol_bytes -= elf_symbols_memory(syms);
        elf_symbols_free(syms);
        return &no_file;
    }
    return f;
}

/* A path to the file behind m and its identity. map_files gives the very
 * file mapped, deleted or in another mount namespace; the path under the
 * process's root is the fallback, if it still names the same inode. */
static int mapped_file_path(pid_t pid, const struct proc_map *m, char *path, size_t size,
                            struct stat *st)
{
    snprintf(path, size, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start, m->end);
    if (stat(path, st) == 0)
        return 0;
    if (m->deleted)
        return -errno;
    if ((size_t)snprintf(path, size, "/proc/%d/root%s", (int)pid, m->path) >= size)
        return -ENAMETOOLONG;
    if (stat(path, st) == 0)
        return st->st_ino == m->inode ? 0 : -ESTALE;
    if (errno != ENOENT)
        return -errno;
    /* the process is gone: the path as seen from here, if it is the very file */
    snprintf(path, size, "%s", m->path);
    if (stat(path, st) < 0)
        return -errno;
    if (st->st_ino != m->inode || major(st->st_dev) != m->dev_major ||
        minor(st->st_dev) != m->dev_minor)
        return -ESTALE;
    return 0;
}

struct cached_file *file_cache_hold(struct file_cache *c, pid_t pid, const struct proc_map *m)
{
    char path[PATH_MAX + 64];
    struct cached_file *f;
    struct stat st;

    /* regular files only: opening a device may have side effects */
    if (mapped_file_path(pid, m, path, sizeof(path), &st) < 0 || !S_ISREG(st.st_mode))
        return &no_file;
    f = file_get(c, pid, m->path, path, &st);
    if (f != &no_file) {
        f->last_pass = c->pass;
        f->refs++;
    }
    return f;
}

void file_cache_hold_again(struct file_cache *c, struct cached_file *f)
{
    if (f == &no_file)
        return;
    f->last_pass = c->pass;
    f->refs++;
}

void file_cache_release(struct cached_file *f)
{
    if (f != &no_file)
        f->refs--;
}

const struct elf_symbols *cached_file_symbols(const struct cached_file *f)
{
    return f->syms;
}

void file_cache_used(struct file_cache *c, struct cached_file *f)
{
    if (f != &no_file)
        f->used_pass = c->pass;
}

int file_cache_open(pid_t pid, const struct proc_map *m)
{
    char path[PATH_MAX + 64];
    struct stat st;
    int r, fd;

    r = mapped_file_path(pid, m, path, sizeof(path), &st);
    if (r < 0)
        return r;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    return fd < 0 ? -errno : fd;
}

void file_cache_get_stats(const struct file_cache *c, struct file_cache_stats *ret)
{
    *ret = c->stats;
    ret->files = c->n_files;
    ret->symbol_memory = c->symbol_memory;
}
