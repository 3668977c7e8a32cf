/* SPDX-License-Identifier: GPL-2.0-only */
#include "process_images.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "clock.h"
#include "elf_symbols.h"
#include "macro.h"
#include "perf_map.h"
#include "sorted_search.h"

/* Processes whose mappings are kept; past that the cache is emptied and
 * refilled, which costs re-reads but no wrong names. */
#define PROCESS_CACHE_MAX 4096
/* How long the last mappings of a process that is gone are kept: the records
 * of its last interval are drained after it exits, and must still be named. */
#define GONE_KEEP_NS ((int64_t)(60 * NSEC_PER_SEC))
/* Reading /proc/PID/maps is most of what naming costs: a live process's
 * mappings are reused for this long. They are read again sooner for an
 * address in none of them (a library loaded since), and when a new thread
 * or an exec is announced (a pid may have been reused). */
#define MAPS_MAX_AGE_NS     ((int64_t)(30 * NSEC_PER_SEC))
#define ANNOUNCE_MAX_AGE_NS ((int64_t)(100 * NSEC_PER_MSEC))
/* Memory for the perf maps of all processes; past it, JIT code of further
 * processes stays unnamed. */
#define PERF_MAPS_BYTES_MAX (64u << 20)
/* Execs announced, their reading put off to the end of the announcements
 * taken together; past this many, one is read at once. */
#define EXECS_PENDING_MAX 1024

/* One image of a process: an exec in place starts a new one, with its own
 * exec_id. The image an exec replaced is frozen: kept as last read, never
 * read again, and forgotten like a process that is gone. */
struct process_image {
    pid_t pid;
    uint32_t exec_id;
    int error; /* the mappings could never be read */
    bool read_this_pass;
    bool reread_this_pass; /* once more, for an address in none of the mappings */
    bool frozen;
    bool read_at_exec;     /* last read for its exec: before ld.so mapped the libraries */
    int64_t gone_since_ns; /* CLOCK_MONOTONIC; 0 while it lives */
    int64_t read_ns;       /* CLOCK_MONOTONIC of the last read of its mappings */
    struct proc_maps maps;
    struct cached_file **files; /* per mapping, NULL until first needed */
    /* names of its JIT code, checked for changes once per pass while it
     * lives, and kept as last read once it is gone */
    struct perf_map *perf_map;
    struct file_key perf_map_key;
    bool perf_map_checked;
};

struct process_images {
    struct file_cache *files;
    struct process_image *procs; /* sorted by (pid, exec_id) */
    size_t n_procs, cap_procs;
    struct {
        pid_t pid;
        uint32_t exec_id;
    } execs_pending[EXECS_PENDING_MAX]; /* in the order announced */
    size_t n_execs_pending;
    size_t perf_maps_bytes; /* of all images, against PERF_MAPS_BYTES_MAX */
    struct process_images_stats stats;
};

static int64_t monotonic_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

int process_images_new(struct file_cache *files, struct process_images **ret)
{
    struct process_images *pi = calloc(1, sizeof(*pi));

    if (!pi)
        return -ENOMEM;
    pi->files = files;
    *ret = pi;
    return 0;
}

static void image_drop_perf_map(struct process_images *pi, struct process_image *p)
{
    if (!p->perf_map)
        return;
    pi->perf_maps_bytes -= perf_map_bytes(p->perf_map);
    p->perf_map = perf_map_free(p->perf_map);
}

static void image_done(struct process_images *pi, struct process_image *p)
{
    for (size_t i = 0; p->files && i < p->maps.n; i++)
        if (p->files[i])
            file_cache_release(p->files[i]);
    proc_maps_done(&p->maps);
    free(p->files);
    image_drop_perf_map(pi, p);
}

static void images_clear(struct process_images *pi)
{
    for (size_t i = 0; i < pi->n_procs; i++)
        image_done(pi, &pi->procs[i]);
    pi->n_procs = 0;
}

struct process_images *process_images_free(struct process_images *pi)
{
    if (!pi)
        return NULL;
    images_clear(pi);
    free(pi->procs);
    free(pi);
    return NULL;
}

/* Every process is read again when next asked for; one gone for long is
 * forgotten, and so is one whose mappings could never be read. */
void process_images_begin_pass(struct process_images *pi)
{
    int64_t now;
    size_t n = 0;

    /* announced before the pass: read before its names are */
    process_images_prefetch_pending(pi);
    now = monotonic_ns();

    for (size_t i = 0; i < pi->n_procs; i++) {
        struct process_image *p = &pi->procs[i];

        if (p->error < 0 || (p->gone_since_ns && now - p->gone_since_ns > GONE_KEEP_NS)) {
            image_done(pi, p);
            continue;
        }
        p->read_this_pass = false;
        p->reread_this_pass = false;
        p->perf_map_checked = false;
        pi->procs[n++] = *p;
    }
    pi->n_procs = n;
}

/* The file behind mapping map, held from its first use on. */
static struct cached_file *image_file(struct process_images *pi, struct process_image *p,
                                      size_t map)
{
    if (!p->files[map])
        p->files[map] = file_cache_hold(pi->files, p->pid, &p->maps.maps[map]);
    return p->files[map];
}

static int compare_image_to_key(const void *elem, const void *key)
{
    const struct process_image *p = elem, *k = key;

    if (p->pid != k->pid)
        return p->pid < k->pid ? -1 : 1;
    if (p->exec_id != k->exec_id)
        return p->exec_id < k->exec_id ? -1 : 1;
    return 0;
}

/* Read once per pass; a process that is gone is remembered as such. */
static int image_read(pid_t pid, uint32_t exec_id, struct process_image *p)
{
    *p = (struct process_image){.pid = pid, .exec_id = exec_id, .read_ns = monotonic_ns()};
    p->error = proc_maps_read(pid, &p->maps);
    /* a zombie's maps read fine, and are empty: it is gone all the same */
    if (p->error == 0 && p->maps.n == 0) {
        proc_maps_done(&p->maps);
        p->error = -ESRCH;
    }
    if (p->error < 0)
        return 0;
    p->files = calloc(p->maps.n ?: 1, sizeof(*p->files));
    if (!p->files) {
        proc_maps_done(&p->maps);
        return -ENOMEM;
    }
    return 0;
}

/* Read the process again, once per pass. A process that is gone keeps the
 * mappings it had; a pid that lives again is a new process, with its own. */
static int image_refresh(struct process_images *pi, struct process_image *p)
{
    struct process_image fresh;
    int r;

    p->read_this_pass = true;
    r = image_read(p->pid, p->exec_id, &fresh);
    if (r < 0)
        return r;
    pi->stats.maps_reads++;
    if (fresh.error < 0) {
        image_done(pi, &fresh);
        if (!p->gone_since_ns)
            p->gone_since_ns = monotonic_ns();
        return 0;
    }
    /* the same pid may be another process now: its perf map is checked
     * again before use, and kept only if it is the same file */
    fresh.perf_map = p->perf_map;
    fresh.perf_map_key = p->perf_map_key;
    p->perf_map = NULL;
    image_done(pi, p);
    *p = fresh;
    p->read_this_pass = true;
    return 0;
}

/* The images of pid before index i were replaced by an exec. */
static void freeze_older_images(struct process_images *pi, size_t i, pid_t pid)
{
    while (i-- > 0 && pi->procs[i].pid == pid && !pi->procs[i].frozen) {
        pi->procs[i].frozen = true;
        if (!pi->procs[i].gone_since_ns)
            pi->procs[i].gone_since_ns = monotonic_ns();
    }
}

/* The image, its mappings read at most max_age_ns ago (once per pass). */
static int image_get(struct process_images *pi, pid_t pid, uint32_t exec_id, int64_t max_age_ns,
                     struct process_image **ret)
{
    struct process_image key = {.pid = pid, .exec_id = exec_id}, p;
    bool found;
    size_t i;
    int r;

    i = sorted_search(pi->procs, pi->n_procs, sizeof(*pi->procs), &key, compare_image_to_key,
                      &found);
    if (found && !pi->procs[i].read_this_pass && !pi->procs[i].frozen &&
        monotonic_ns() - pi->procs[i].read_ns > max_age_ns) {
        r = image_refresh(pi, &pi->procs[i]);
        if (r < 0)
            return r;
    }
    if (!found) {
        if (pi->n_procs >= PROCESS_CACHE_MAX) {
            images_clear(pi);
            i = 0;
        }
        r = array_reserve(&pi->procs, &pi->cap_procs, pi->n_procs + 1, sizeof(*pi->procs), 64);
        if (r < 0)
            return r;
        if (i < pi->n_procs && pi->procs[i].pid == pid) {
            /* a later image is known: this one was replaced before it was
             * ever read, and what is mapped now is not it */
            p = (struct process_image){
                .pid = pid, .exec_id = exec_id, .error = -ESRCH, .frozen = true};
        } else {
            r = image_read(pid, exec_id, &p);
            if (r < 0)
                return r;
            pi->stats.maps_reads++;
            freeze_older_images(pi, i, pid);
        }
        p.read_this_pass = true;
        memmove(&pi->procs[i + 1], &pi->procs[i], (pi->n_procs - i) * sizeof(*pi->procs));
        pi->procs[i] = p;
        pi->n_procs++;
    }
    *ret = &pi->procs[i];
    return pi->procs[i].error;
}

/* The mapping holding addr. The mappings are read again, once per pass, for
 * an address in none of them: a library may have been loaded since (an exec
 * announcement reads them before ld.so has mapped anything). */
static const struct proc_map *image_find_map(struct process_images *pi, struct process_image *p,
                                             uint64_t addr)
{
    const struct proc_map *m = proc_maps_find(&p->maps, addr);

    if (m || p->frozen || p->gone_since_ns || p->reread_this_pass)
        return m;
    if (image_refresh(pi, p) < 0)
        return NULL;
    p->reread_this_pass = true;
    return proc_maps_find(&p->maps, addr);
}

int process_images_locate(struct process_images *pi, pid_t pid, uint32_t exec_id, uint64_t addr,
                          struct image_location *ret)
{
    const struct elf_symbols *syms;
    int r;

    *ret = (struct image_location){0};
    r = image_get(pi, pid, exec_id, MAPS_MAX_AGE_NS, &ret->image);
    if (r < 0)
        return r;
    ret->map = image_find_map(pi, ret->image, addr);
    if (!ret->map)
        return -ENOENT;
    if (ret->map->kind == PROC_MAP_FILE) {
        ret->file = image_file(pi, ret->image, (size_t)(ret->map - ret->image->maps.maps));
        ret->offset = addr - ret->map->start + ret->map->pgoff;
        syms = cached_file_symbols(ret->file);
        ret->has_vaddr = syms && elf_symbols_offset_to_vaddr(syms, ret->offset, &ret->vaddr) == 0;
    }
    return 0;
}

/* Read the process's perf map again if it changed, once per pass while the
 * process lives; once it is gone, what was read last is what it had. Perf
 * maps share one budget: past it, a process's JIT code stays unnamed. */
static void image_check_perf_map(struct process_images *pi, struct process_image *p)
{
    _cleanup_close_ int fd = -EBADF;
    struct perf_map *m = NULL;
    struct file_key k;
    struct stat st;

    if (p->perf_map_checked || p->gone_since_ns || p->frozen)
        return;
    p->perf_map_checked = true;
    fd = perf_map_open(p->pid, &st);
    if (fd == -ESRCH)
        return; /* exited since its mappings were read: keep the last names */
    if (fd < 0) {
        image_drop_perf_map(pi, p);
        return;
    }
    k = file_key_from_stat(&st);
    if (p->perf_map && file_key_compare(&k, &p->perf_map_key) == 0)
        return;
    image_drop_perf_map(pi, p);
    if (perf_map_read(fd, &m) < 0)
        return;
    pi->stats.perf_map_reads++;
    if (pi->perf_maps_bytes + perf_map_bytes(m) > PERF_MAPS_BYTES_MAX) {
        perf_map_free(m);
        return;
    }
    pi->perf_maps_bytes += perf_map_bytes(m);
    p->perf_map = m;
    p->perf_map_key = k;
}

const char *process_image_jit_symbol(struct process_images *pi, struct process_image *img,
                                     uint64_t addr)
{
    image_check_perf_map(pi, img);
    return img->perf_map ? perf_map_lookup(img->perf_map, addr) : NULL;
}

/* Hold the files p maps, and read its perf map: named even once it is gone. */
static void image_hold(struct process_images *pi, struct process_image *p)
{
    for (size_t i = 0; i < p->maps.n; i++) {
        if (p->maps.maps[i].kind == PROC_MAP_FILE)
            image_file(pi, p, i);
        else if (p->maps.maps[i].kind == PROC_MAP_ANON)
            image_check_perf_map(pi, p);
    }
}

/* Whether pid's exec into exec_id waits to be read; no longer, either way,
 * nor any of pid's earlier ones: its later announcement reads what it has
 * now (an image an exec replaced before it was read is never read: what
 * is mapped now is not it). */
static bool exec_unpend(struct process_images *pi, pid_t pid, uint32_t exec_id)
{
    bool found = false;
    size_t kept = 0;

    for (size_t i = 0; i < pi->n_execs_pending; i++) {
        if (pi->execs_pending[i].pid == pid && pi->execs_pending[i].exec_id <= exec_id) {
            found |= pi->execs_pending[i].exec_id == exec_id;
            continue;
        }
        pi->execs_pending[kept++] = pi->execs_pending[i];
    }
    pi->n_execs_pending = kept;
    return found;
}

static int prefetch_now(struct process_images *pi, pid_t pid, uint32_t exec_id,
                        enum prefetch_when when)
{
    struct process_image *p = NULL;
    int r = image_get(pi, pid, exec_id, ANNOUNCE_MAX_AGE_NS, &p);

    /* Read again what was read too early, even in this pass: a process gone
     * before the next would keep its libraries unnamed. So is an image read
     * as gone (no code mapped): an announcement of it says it lives. Read in
     * the middle of its exec, it had no code yet; kept as gone, it would be
     * frozen empty at the next exec, its frames all [unknown]. (A process
     * that is gone fails to open its maps: it is not read again and again.) */
    if ((r == 0 || r == -ESRCH) && p && !p->frozen &&
        (r == -ESRCH || when == PREFETCH_MAPPED ||
         (when == PREFETCH_FIRST_BLOCK && p->read_at_exec))) {
        r = image_refresh(pi, p);
        if (r == 0)
            r = p->error;
    }
    if (r < 0)
        return r;
    p->read_at_exec = when == PREFETCH_EXEC;
    image_hold(pi, p);
    return 0;
}

/*
 * An exec is read at the end of the announcements taken with it
 * (process_images_prefetch_pending), unless the process's first block or
 * new code comes among them, which reads it then: once, where it was read
 * at the exec, before ld.so had mapped the libraries, and again at the
 * first block. A storm of new programs, which the daemon takes many at a
 * time, read each twice.
 */
int process_images_prefetch(struct process_images *pi, pid_t pid, uint32_t exec_id,
                            enum prefetch_when when)
{
    bool pending = exec_unpend(pi, pid, exec_id);

    if (when == PREFETCH_EXEC && pi->n_execs_pending < EXECS_PENDING_MAX) {
        pi->execs_pending[pi->n_execs_pending].pid = pid;
        pi->execs_pending[pi->n_execs_pending++].exec_id = exec_id;
        return 0;
    }
    /* its exec not read yet: this is the first reading of the image */
    return prefetch_now(pi, pid, exec_id, pending ? PREFETCH_FIRST_BLOCK : when);
}

void process_images_prefetch_pending(struct process_images *pi)
{
    for (size_t i = 0; i < pi->n_execs_pending; i++)
        prefetch_now(pi, pi->execs_pending[i].pid, pi->execs_pending[i].exec_id, PREFETCH_EXEC);
    pi->n_execs_pending = 0;
}

/* The image of the parent, copied for pid (at index i), its files held again. */
static int image_copy(struct process_images *pi, const struct process_image *from, pid_t pid,
                      struct process_image *ret)
{
    struct process_image p = {
        .pid = pid, .exec_id = from->exec_id, .read_ns = monotonic_ns(), .read_this_pass = true};
    int r = proc_maps_copy(&from->maps, &p.maps);

    if (r < 0)
        return r;
    p.files = calloc(p.maps.n ?: 1, sizeof(*p.files));
    if (!p.files) {
        proc_maps_done(&p.maps);
        return -ENOMEM;
    }
    for (size_t k = 0; k < p.maps.n; k++)
        if (from->files[k]) {
            p.files[k] = from->files[k];
            file_cache_hold_again(pi->files, p.files[k]);
        }
    *ret = p;
    return 0;
}

int process_images_inherit(struct process_images *pi, pid_t pid, pid_t parent, uint32_t exec_id,
                           int64_t code_ns)
{
    struct process_image key = {.pid = parent, .exec_id = exec_id}, child;
    const struct process_image *from;
    bool found;
    size_t i;
    int r;

    i = sorted_search(pi->procs, pi->n_procs, sizeof(*pi->procs), &key, compare_image_to_key,
                      &found);
    from = found ? &pi->procs[i] : NULL;
    /* A parent not read since it last mapped code is read now, once for all
     * the children it forks: a new program that forks at once (perf bench
     * sched messaging: 400 children) had every child's maps read. */
    if (!from || (from->read_ns <= code_ns && !from->frozen && !from->gone_since_ns)) {
        struct process_image *p;

        r = image_get(pi, parent, exec_id, ANNOUNCE_MAX_AGE_NS, &p);
        if (r == 0 && p->read_ns <= code_ns)
            r = image_refresh(pi, p);
        if (r < 0 || p->error < 0)
            return -ESTALE;
        image_hold(pi, p);
        /* where it is now: the images may have moved */
        i = sorted_search(pi->procs, pi->n_procs, sizeof(*pi->procs), &key, compare_image_to_key,
                          &found);
        from = found ? &pi->procs[i] : NULL;
    }
    if (!from || from->error < 0 || from->frozen || from->gone_since_ns || from->read_ns <= code_ns)
        return -ESTALE;
    r = image_copy(pi, from, pid, &child);
    if (r < 0)
        return r;
    key = (struct process_image){.pid = pid, .exec_id = exec_id};
    i = sorted_search(pi->procs, pi->n_procs, sizeof(*pi->procs), &key, compare_image_to_key,
                      &found);
    if (found) {
        /* an earlier process with this pid and image */
        image_done(pi, &pi->procs[i]);
    } else {
        /* full: read when announced, as image_get makes room then */
        r = pi->n_procs >= PROCESS_CACHE_MAX
                ? -ENOSPC
                : array_reserve(&pi->procs, &pi->cap_procs, pi->n_procs + 1, sizeof(*pi->procs),
                                64);
        if (r < 0) {
            image_done(pi, &child);
            return r;
        }
        memmove(&pi->procs[i + 1], &pi->procs[i], (pi->n_procs - i) * sizeof(*pi->procs));
        pi->n_procs++;
        freeze_older_images(pi, i, pid);
    }
    pi->procs[i] = child;
    pi->stats.maps_inherited++;
    return 0;
}

void process_images_get_stats(const struct process_images *pi, struct process_images_stats *ret)
{
    *ret = pi->stats;
}
