/* SPDX-License-Identifier: GPL-2.0-only */
#include "symbolizer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include <libiberty/demangle.h>

#include "debug_files.h"
#include "elf_symbols.h"
#include "kallsyms.h"
#include "kernel_symbols.h"
#include "macro.h"
#include "perf_map.h"
#include "proc_maps.h"

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
/* ELF files kept at most, and how many passes an unused one is kept. */
#define FILE_CACHE_MAX   1024
#define FILE_IDLE_PASSES 64
/* Memory for the perf maps of all processes; past it, JIT code of further
 * processes stays unnamed. */
#define PERF_MAPS_BYTES_MAX (64u << 20)

#define UNKNOWN "[unknown]"

/* What identifies a file's contents without reading them. */
struct file_key {
    uint64_t dev, ino, size;
    int64_t mtime_sec, mtime_nsec;
};
_Static_assert(sizeof(struct file_key) == 5 * sizeof(uint64_t), "keys are compared with memcmp");

struct elf_file {
    struct file_key key;
    struct elf_symbols *syms; /* NULL: not ELF, or unreadable: offsets only */
    unsigned last_pass;
    unsigned refs; /* mappings of cached processes using it: not evicted */
};

/* One image of a process: an exec in place starts a new one, with its own
 * exec_id. The image an exec replaced is frozen: kept as last read, never
 * read again, and forgotten like a process that is gone. */
struct process {
    pid_t pid;
    uint32_t exec_id;
    int error; /* the mappings could never be read */
    bool read_this_pass;
    bool reread_this_pass; /* once more, for an address in none of the mappings */
    bool frozen;
    int64_t gone_since_ns; /* CLOCK_MONOTONIC; 0 while it lives */
    int64_t read_ns;       /* CLOCK_MONOTONIC of the last read of its mappings */
    struct proc_maps maps;
    struct elf_file **files; /* per mapping, NULL until first needed */
    /* names of its JIT code, checked for changes once per pass while it
     * lives, and kept as last read once it is gone */
    struct perf_map *perf_map;
    struct file_key perf_map_key;
    bool perf_map_checked;
};

struct symbolizer {
    unsigned pass;

    struct process *procs; /* sorted by (pid, exec_id); re-read once per pass */
    size_t n_procs, cap_procs;

    struct elf_file **files; /* sorted by key */
    size_t n_files;

    size_t perf_maps_bytes;

    struct kernel_symbols *kernel;

    struct symbolizer_stats stats;
};

/* The file of a mapping that cannot be opened: named by offset only. */
static struct elf_file no_file;

/* Names longer than the buffer are cut: a long C++ name is still telling. */
__attribute__((format(printf, 3, 4))) static int write_name(char *buf, size_t size, const char *fmt,
                                                            ...)
{
    va_list ap;

    if (size == 0)
        return 0;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return 0;
}

/* C++ (_Z) and Rust (legacy _ZN...17h<hash>E, and v0 _R) names as people
 * read them; libiberty is GCC's own demangler, and knows all three. */
static int write_symbol(char *buf, size_t size, const char *name)
{
    _cleanup_free_ char *demangled = NULL;

    if (name[0] == '_' && (name[1] == 'Z' || name[1] == 'R'))
        demangled = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
    return write_name(buf, size, "%s", demangled ?: name);
}

static int write_unknown(char *buf, size_t size, int error)
{
    write_name(buf, size, "%s", UNKNOWN);
    return error;
}

int symbolizer_new(struct symbolizer **ret)
{
    struct symbolizer *s = calloc(1, sizeof(*s));
    int r;

    if (!s)
        return -ENOMEM;
    /* pointers only: sized for the maximum once */
    s->files = calloc(FILE_CACHE_MAX, sizeof(*s->files));
    if (!s->files) {
        free(s);
        return -ENOMEM;
    }
    r = kernel_symbols_new(&s->kernel);
    if (r < 0) {
        free(s->files);
        free(s);
        return r;
    }
    *ret = s;
    return 0;
}

static int64_t monotonic_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static void process_drop_perf_map(struct symbolizer *s, struct process *p)
{
    if (!p->perf_map)
        return;
    s->perf_maps_bytes -= perf_map_bytes(p->perf_map);
    p->perf_map = perf_map_free(p->perf_map);
}

static void process_done(struct symbolizer *s, struct process *p)
{
    for (size_t i = 0; p->files && i < p->maps.n; i++)
        if (p->files[i] && p->files[i] != &no_file)
            p->files[i]->refs--;
    proc_maps_done(&p->maps);
    free(p->files);
    process_drop_perf_map(s, p);
}

static void processes_clear(struct symbolizer *s)
{
    for (size_t i = 0; i < s->n_procs; i++)
        process_done(s, &s->procs[i]);
    s->n_procs = 0;
}

static void file_free(struct elf_file *f)
{
    elf_symbols_free(f->syms);
    free(f);
}

struct symbolizer *symbolizer_free(struct symbolizer *s)
{
    if (!s)
        return NULL;
    processes_clear(s);
    free(s->procs);
    for (size_t i = 0; i < s->n_files; i++)
        file_free(s->files[i]);
    free(s->files);
    kernel_symbols_free(s->kernel);
    free(s);
    return NULL;
}

/* Files unused for a while go; the others stay, whatever the number: all
 * of those were used recently, and new ones are refused when full. */
static void files_evict_idle(struct symbolizer *s)
{
    size_t n = 0;

    for (size_t i = 0; i < s->n_files; i++) {
        if (s->files[i]->refs == 0 && s->pass - s->files[i]->last_pass > FILE_IDLE_PASSES)
            file_free(s->files[i]);
        else
            s->files[n++] = s->files[i];
    }
    s->n_files = n;
}

/* Every process is read again when next asked for; one gone for long is
 * forgotten, and so is one whose mappings could never be read. */
static void processes_begin_pass(struct symbolizer *s)
{
    int64_t now = monotonic_ns();
    size_t n = 0;

    for (size_t i = 0; i < s->n_procs; i++) {
        struct process *p = &s->procs[i];

        if (p->error < 0 || (p->gone_since_ns && now - p->gone_since_ns > GONE_KEEP_NS)) {
            process_done(s, p);
            continue;
        }
        p->read_this_pass = false;
        p->reread_this_pass = false;
        p->perf_map_checked = false;
        s->procs[n++] = *p;
    }
    s->n_procs = n;
}

void symbolizer_begin_pass(struct symbolizer *s)
{
    s->pass++;
    processes_begin_pass(s);
    files_evict_idle(s);
    kernel_symbols_begin_pass(s->kernel);
}

static int file_key_compare(const struct file_key *a, const struct file_key *b)
{
    return memcmp(a, b, sizeof(*a));
}

static struct file_key file_key_from_stat(const struct stat *st)
{
    return (struct file_key){
        .dev = st->st_dev,
        .ino = st->st_ino,
        .size = (uint64_t)st->st_size,
        .mtime_sec = st->st_mtim.tv_sec,
        .mtime_nsec = st->st_mtim.tv_nsec,
    };
}

/* Index of the file with key k, or where it would go; *found tells which. */
static size_t files_search(const struct symbolizer *s, const struct file_key *k, bool *found)
{
    size_t lo = 0, hi = s->n_files;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = file_key_compare(&s->files[mid]->key, k);

        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* Read the file open on fd into a cache entry. A file that is not ELF gets
 * an entry too, so that it is not read again at every pass. */
static int file_read(int fd, const struct file_key *k, struct elf_file **ret)
{
    struct elf_file *f = calloc(1, sizeof(*f));
    int r;

    if (!f)
        return -ENOMEM;
    f->key = *k;
    r = elf_symbols_read(fd, &f->syms);
    if (r < 0 && r != -ENOEXEC) {
        free(f);
        return r;
    }
    *ret = f;
    return 0;
}

/* The cached file with the identity st, read from path if not cached yet. */
/* A stripped file's names come from its debug file, where one is installed. */
static void add_debug_symbols(struct symbolizer *s, pid_t pid, const char *mapped_path,
                              struct elf_file *f)
{
    _cleanup_close_ int fd = -EBADF;

    if (!f->syms || !elf_symbols_debug_ref(f->syms)->stripped)
        return;
    fd = debug_file_open(pid, mapped_path, elf_symbols_debug_ref(f->syms));
    if (fd >= 0 && elf_symbols_add_debug(f->syms, fd) == 0)
        s->stats.debug_files++;
}

/* The cached file with the identity st, read from path if not cached yet;
 * mapped_path is its name as process pid sees it, to find its debug file. */
static struct elf_file *file_get(struct symbolizer *s, pid_t pid, const char *mapped_path,
                                 const char *path, const struct stat *st)
{
    struct file_key k = file_key_from_stat(st), opened;
    _cleanup_close_ int fd = -EBADF;
    struct elf_file *f = NULL;
    struct stat fst;
    size_t i;
    bool found;

    i = files_search(s, &k, &found);
    if (found)
        return s->files[i];
    if (s->n_files >= FILE_CACHE_MAX)
        return &no_file;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &fst) < 0)
        return &no_file;
    /* replaced between stat and open: next pass will see the new one */
    opened = file_key_from_stat(&fst);
    if (file_key_compare(&opened, &k) != 0)
        return &no_file;
    if (file_read(fd, &k, &f) < 0)
        return &no_file;
    add_debug_symbols(s, pid, mapped_path, f);
    s->stats.elf_opens++;
    memmove(&s->files[i + 1], &s->files[i], (s->n_files - i) * sizeof(*s->files));
    s->files[i] = f;
    s->n_files++;
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

static struct elf_file *process_file(struct symbolizer *s, struct process *p, size_t map)
{
    char path[PATH_MAX + 64];
    struct elf_file *f;
    struct stat st;

    if (p->files[map])
        return p->files[map];
    /* regular files only: opening a device may have side effects */
    if (mapped_file_path(p->pid, &p->maps.maps[map], path, sizeof(path), &st) < 0 ||
        !S_ISREG(st.st_mode))
        f = &no_file;
    else
        f = file_get(s, p->pid, p->maps.maps[map].path, path, &st);
    if (f != &no_file) {
        f->last_pass = s->pass;
        f->refs++;
    }
    p->files[map] = f;
    return f;
}

static int process_compare(const struct process *p, pid_t pid, uint32_t exec_id)
{
    if (p->pid != pid)
        return p->pid < pid ? -1 : 1;
    if (p->exec_id != exec_id)
        return p->exec_id < exec_id ? -1 : 1;
    return 0;
}

static size_t processes_search(const struct symbolizer *s, pid_t pid, uint32_t exec_id, bool *found)
{
    size_t lo = 0, hi = s->n_procs;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = process_compare(&s->procs[mid], pid, exec_id);

        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static int processes_grow(struct symbolizer *s)
{
    size_t cap = s->cap_procs ? s->cap_procs * 2 : 64;
    struct process *p;

    if (s->n_procs < s->cap_procs)
        return 0;
    p = reallocarray(s->procs, cap, sizeof(*p));
    if (!p)
        return -ENOMEM;
    s->procs = p;
    s->cap_procs = cap;
    return 0;
}

/* Read once per pass; a process that is gone is remembered as such. */
static int process_read(pid_t pid, uint32_t exec_id, struct process *p)
{
    *p = (struct process){.pid = pid, .exec_id = exec_id, .read_ns = monotonic_ns()};
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
static int process_refresh(struct symbolizer *s, struct process *p)
{
    struct process fresh;
    int r;

    p->read_this_pass = true;
    r = process_read(p->pid, p->exec_id, &fresh);
    if (r < 0)
        return r;
    s->stats.maps_reads++;
    if (fresh.error < 0) {
        process_done(s, &fresh);
        if (!p->gone_since_ns)
            p->gone_since_ns = monotonic_ns();
        return 0;
    }
    /* the same pid may be another process now: its perf map is checked
     * again before use, and kept only if it is the same file */
    fresh.perf_map = p->perf_map;
    fresh.perf_map_key = p->perf_map_key;
    p->perf_map = NULL;
    process_done(s, p);
    *p = fresh;
    p->read_this_pass = true;
    return 0;
}

/* The images of pid before index i were replaced by an exec. */
static void freeze_older_images(struct symbolizer *s, size_t i, pid_t pid)
{
    while (i-- > 0 && s->procs[i].pid == pid && !s->procs[i].frozen) {
        s->procs[i].frozen = true;
        if (!s->procs[i].gone_since_ns)
            s->procs[i].gone_since_ns = monotonic_ns();
    }
}

/* The process, its mappings read at most max_age_ns ago (once per pass). */
static int process_get(struct symbolizer *s, pid_t pid, uint32_t exec_id, int64_t max_age_ns,
                       struct process **ret)
{
    struct process p;
    bool found;
    size_t i;
    int r;

    i = processes_search(s, pid, exec_id, &found);
    if (found && !s->procs[i].read_this_pass && !s->procs[i].frozen &&
        monotonic_ns() - s->procs[i].read_ns > max_age_ns) {
        r = process_refresh(s, &s->procs[i]);
        if (r < 0)
            return r;
    }
    if (!found) {
        if (s->n_procs >= PROCESS_CACHE_MAX) {
            processes_clear(s);
            i = 0;
        }
        r = processes_grow(s);
        if (r < 0)
            return r;
        if (i < s->n_procs && s->procs[i].pid == pid) {
            /* a later image is known: this one was replaced before it was
             * ever read, and what is mapped now is not it */
            p = (struct process){.pid = pid, .exec_id = exec_id, .error = -ESRCH, .frozen = true};
        } else {
            r = process_read(pid, exec_id, &p);
            if (r < 0)
                return r;
            s->stats.maps_reads++;
            freeze_older_images(s, i, pid);
        }
        p.read_this_pass = true;
        memmove(&s->procs[i + 1], &s->procs[i], (s->n_procs - i) * sizeof(*s->procs));
        s->procs[i] = p;
        s->n_procs++;
    }
    *ret = &s->procs[i];
    return s->procs[i].error;
}

/* The mapping holding addr. The mappings are read again, once per pass, for
 * an address in none of them: a library may have been loaded since (an exec
 * announcement reads them before ld.so has mapped anything). */
static const struct proc_map *process_find_map(struct symbolizer *s, struct process *p,
                                               uint64_t addr)
{
    const struct proc_map *m = proc_maps_find(&p->maps, addr);

    if (m || p->frozen || p->gone_since_ns || p->reread_this_pass)
        return m;
    if (process_refresh(s, p) < 0)
        return NULL;
    p->reread_this_pass = true;
    return proc_maps_find(&p->maps, addr);
}

static const char *path_basename(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash ? slash + 1 : path;
}

/* Read the process's perf map again if it changed, once per pass while the
 * process lives; once it is gone, what was read last is what it had. */
static void process_check_perf_map(struct symbolizer *s, struct process *p)
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
        process_drop_perf_map(s, p);
        return;
    }
    k = file_key_from_stat(&st);
    if (p->perf_map && file_key_compare(&k, &p->perf_map_key) == 0)
        return;
    process_drop_perf_map(s, p);
    if (perf_map_read(fd, &m) < 0)
        return;
    s->stats.perf_map_reads++;
    if (s->perf_maps_bytes + perf_map_bytes(m) > PERF_MAPS_BYTES_MAX) {
        perf_map_free(m);
        return;
    }
    s->perf_maps_bytes += perf_map_bytes(m);
    p->perf_map = m;
    p->perf_map_key = k;
}

/* JIT code: in anonymous memory, or in a file that is not ELF (a memfd). */
static const char *jit_symbol(struct symbolizer *s, struct process *p, uint64_t addr)
{
    process_check_perf_map(s, p);
    return p->perf_map ? perf_map_lookup(p->perf_map, addr) : NULL;
}

/* "0xOFFSET BUILD_ID PATH": the file's build-id in hex, "-" if unknown. */
static void write_where(char *where, size_t size, const struct elf_file *f, const char *path,
                        uint64_t offset)
{
    const struct elf_debug_ref *ref = f->syms ? elf_symbols_debug_ref(f->syms) : NULL;
    char id[2 * sizeof(ref->build_id) + 1] = "-";

    for (size_t i = 0; ref && i < ref->build_id_len; i++)
        snprintf(id + 2 * i, 3, "%02x", ref->build_id[i]);
    write_name(where, size, "0x%" PRIx64 " %s %s", offset, id, path);
}

/* A symbol of the file when one holds the address; else the file offset,
 * which stays meaningful (addr2line, a later symbolization) and is never
 * a wrong name. */
static int name_file_frame(struct symbolizer *s, struct process *p, size_t map, uint64_t addr,
                           char *buf, size_t size, char *where, size_t where_size)
{
    const struct proc_map *m = &p->maps.maps[map];
    uint64_t offset = addr - m->start + m->pgoff, vaddr;
    struct elf_file *f = process_file(s, p, map);
    const char *name = NULL;

    if (where)
        write_where(where, where_size, f, m->path, offset);
    if (f->syms && elf_symbols_offset_to_vaddr(f->syms, offset, &vaddr) == 0)
        name = elf_symbols_lookup(f->syms, vaddr);
    else if (!f->syms)
        name = jit_symbol(s, p, addr);
    if (!name)
        return write_name(buf, size, "%s+0x%" PRIx64, path_basename(m->path), offset);
    s->stats.user_named++;
    return write_symbol(buf, size, name);
}

int symbolizer_user_frame(struct symbolizer *s, pid_t tgid, uint32_t exec_id, uint64_t ip,
                          bool is_leaf, char *buf, size_t size, char *where, size_t where_size)
{
    uint64_t addr = is_leaf || ip == 0 ? ip : ip - 1;
    const struct proc_map *m;
    const char *name;
    struct process *p;
    int r;

    if (where)
        write_name(where, where_size, "%s", "");
    s->stats.user_frames++;
    r = process_get(s, tgid, exec_id, MAPS_MAX_AGE_NS, &p);
    if (r < 0)
        return write_unknown(buf, size, r);
    m = process_find_map(s, p, addr);
    if (!m)
        return write_unknown(buf, size, -ENOENT);
    switch (m->kind) {
    case PROC_MAP_FILE:
        return name_file_frame(s, p, (size_t)(m - p->maps.maps), addr, buf, size, where,
                               where_size);
    case PROC_MAP_VDSO:
        return write_name(buf, size, "[vdso]");
    default:
        name = jit_symbol(s, p, addr);
        if (!name)
            return write_name(buf, size, "[anon]");
        s->stats.user_named++;
        return write_symbol(buf, size, name);
    }
}

int symbolizer_kernel_frame(struct symbolizer *s, uint64_t ip, bool is_leaf, char *buf, size_t size)
{
    uint64_t addr = is_leaf || ip == 0 ? ip : ip - 1;
    const char *name, *module;
    int r;

    s->stats.kernel_frames++;
    r = kernel_symbols_lookup(s->kernel, addr, &name, &module);
    if (r < 0)
        return write_unknown(buf, size, r);
    if (module)
        write_name(buf, size, "%s [%s]", name, module);
    else
        write_name(buf, size, "%s", name);
    if (kallsyms_is_tracer_frame(name))
        return SYMBOLIZER_SKIP;
    s->stats.kernel_named++;
    return 0;
}

int symbolizer_open_code(struct symbolizer *s, pid_t tgid, uint32_t exec_id, uint64_t ip,
                         uint64_t *vaddr)
{
    char path[PATH_MAX + 64];
    const struct proc_map *m;
    struct process *p;
    struct elf_file *f;
    struct stat st;
    int r, fd;

    r = process_get(s, tgid, exec_id, MAPS_MAX_AGE_NS, &p);
    if (r < 0)
        return r;
    m = process_find_map(s, p, ip);
    if (!m || m->kind != PROC_MAP_FILE)
        return -ENOENT;
    f = process_file(s, p, (size_t)(m - p->maps.maps));
    if (!f->syms || elf_symbols_offset_to_vaddr(f->syms, ip - m->start + m->pgoff, vaddr) < 0)
        return -ENOENT;
    r = mapped_file_path(p->pid, m, path, sizeof(path), &st);
    if (r < 0)
        return r;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    return fd < 0 ? -errno : fd;
}

int symbolizer_prefetch(struct symbolizer *s, pid_t tgid, uint32_t exec_id)
{
    struct process *p;
    int r = process_get(s, tgid, exec_id, ANNOUNCE_MAX_AGE_NS, &p);

    if (r < 0)
        return r;
    for (size_t i = 0; i < p->maps.n; i++) {
        if (p->maps.maps[i].kind == PROC_MAP_FILE)
            process_file(s, p, i);
        else if (p->maps.maps[i].kind == PROC_MAP_ANON)
            process_check_perf_map(s, p);
    }
    return 0;
}

void symbolizer_get_stats(const struct symbolizer *s, struct symbolizer_stats *ret)
{
    *ret = s->stats;
    ret->elf_files = s->n_files;
    ret->kallsyms_loads = kernel_symbols_reads(s->kernel);
}
