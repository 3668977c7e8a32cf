/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The symbolizer against real processes: the test programs (PIE, non-PIE,
 * linked by lld, using a shared library) print addresses of their functions
 * with the names those must get; this names them through /proc as the
 * daemon does. Then the kernel side against /proc/kallsyms, and the parsers
 * against made-up and hostile input (kallsyms's: test_kernel_symbols.c).
 *
 * Usage: test_symbolizer PIE NOPIE LLD WITHLIB STRIPPED CPP RUST_V0 RUST_LEGACY
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "elf_symbols.h"
#include "kallsyms.h"
#include "macro.h"
#include "proc_maps.h"
#include "symbolizer.h"

static inline void closedirp(DIR **d)
{
    if (*d)
        closedir(*d);
}

#define CHECKS_MAX   32
#define NAME_MAX_LEN 512

struct expectation {
    char kind[8];
    uint64_t addr;
    char name[128];
};

struct child {
    pid_t pid;
    int stdin_fd;
    struct expectation checks[CHECKS_MAX];
    size_t n_checks;
};

static int spawn(const char *path, struct child *c)
{
    _cleanup_fclose_ FILE *out = NULL;
    int in[2], outp[2], printed = -1;
    char line[256];

    *c = (struct child){.stdin_fd = -1};
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0)
        return -errno;
    c->pid = fork();
    if (c->pid < 0)
        return -errno;
    if (c->pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(outp[1], STDOUT_FILENO);
        execl(path, path, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(outp[1]);
    c->stdin_fd = in[1];
    out = fdopen(outp[0], "r");
    if (!out)
        return -errno;
    while (fgets(line, sizeof(line), out)) {
        struct expectation *e = &c->checks[c->n_checks];

        if (strcmp(line, "ready\n") == 0)
            return printed == c->pid ? 0 : -ESRCH;
        if (sscanf(line, "pid %d", &printed) == 1)
            continue;
        if (c->n_checks < CHECKS_MAX &&
            sscanf(line, "CHECK %7s 0x%" SCNx64 " %127s", e->kind, &e->addr, e->name) == 3)
            c->n_checks++;
    }
    return -EPIPE;
}

static void reap(struct child *c)
{
    int status;

    if (c->stdin_fd >= 0)
        close(c->stdin_fd);
    c->stdin_fd = -1;
    if (c->pid > 0)
        waitpid(c->pid, &status, 0);
}

/* "basename+0xOFFSET" for addr, from the maps as this test reads them. */
static int expected_offset_name(pid_t pid, uint64_t addr, char *buf, size_t size)
{
    _cleanup_fclose_ FILE *f = NULL;
    char path[64], line[PATH_MAX + 128];

    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return -errno;
    while (fgets(line, sizeof(line), f)) {
        uint64_t start, end, pgoff;
        char *name, *deleted;
        int pos = 0;

        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %n", &start, &end, &pgoff,
                   &pos) != 3 ||
            addr < start || addr >= end)
            continue;
        name = strrchr(line + pos, '/');
        if (!name)
            return -ENOENT;
        name[strcspn(name, "\n")] = '\0';
        deleted = strstr(name, " (deleted)");
        if (deleted)
            *deleted = '\0';
        snprintf(buf, size, "%s+0x%" PRIx64, name + 1, addr - start + pgoff);
        return 0;
    }
    return -ENOENT;
}

static void check_frame(struct symbolizer *s, const char *label, pid_t pid,
                        const struct expectation *e)
{
    bool leaf = strcmp(e->kind, "leaf") == 0;
    char name[NAME_MAX_LEN], want[NAME_MAX_LEN];
    int r;

    r = symbolizer_user_frame(s, pid, 0, e->addr, leaf, name, sizeof(name), NULL);
    if (e->name[0] == '!') {
        CHECK(r == 0 && strcmp(name, e->name + 1) != 0, "%s: %s 0x%" PRIx64 " -> %s (not %s)",
              label, e->kind, e->addr, name, e->name + 1);
        return;
    }
    if (strcmp(e->name, "-") == 0) {
        if (expected_offset_name(pid, e->addr, want, sizeof(want)) < 0)
            snprintf(want, sizeof(want), "(address in no file mapping)");
    } else {
        snprintf(want, sizeof(want), "%s", e->name);
    }
    CHECK(r == 0 && strcmp(name, want) == 0, "%s: %s 0x%" PRIx64 " -> %s (want %s)", label, e->kind,
          e->addr, name, want);
}

static void check_child_frames(struct symbolizer *s, const char *label, const struct child *c)
{
    for (size_t i = 0; i < c->n_checks; i++)
        check_frame(s, label, c->pid, &c->checks[i]);
}

/* Names, then the caches: a second pass reads the maps again, not the ELF
 * files; once the process is gone its frames keep their names. */
static void test_program(struct symbolizer *s, const char *label, const char *path)
{
    struct symbolizer_stats before, after;
    char name[NAME_MAX_LEN];
    struct child c;
    int r;

    r = spawn(path, &c);
    CHECK(r == 0 && c.n_checks > 0, "%s: %s runs and prints %zu addresses", label, path,
          c.n_checks);
    if (r < 0) {
        reap(&c);
        return;
    }
    symbolizer_begin_pass(s);
    check_child_frames(s, label, &c);
    symbolizer_get_stats(s, &before);
    symbolizer_begin_pass(s);
    check_child_frames(s, label, &c);
    symbolizer_get_stats(s, &after);
    CHECK(after.elf_opens == before.elf_opens, "%s: no ELF file read again in the next pass",
          label);
    CHECK(after.maps_reads == before.maps_reads, "%s: maps reused in the next pass", label);
    reap(&c);
    /* its last interval is drained after it exits: still named, from the
     * mappings read while it lived */
    symbolizer_begin_pass(s);
    for (size_t i = 0; i < c.n_checks; i++) {
        const struct expectation *e = &c.checks[i];

        if (e->name[0] == '!' || strcmp(e->name, "-") == 0)
            continue;
        r = symbolizer_user_frame(s, c.pid, 0, e->addr, strcmp(e->kind, "leaf") == 0, name,
                                  sizeof(name), NULL);
        CHECK(r == 0 && strcmp(name, e->name) == 0, "%s: exited process -> %s (want %s)", label,
              name, e->name);
        break;
    }
}

static int copy_file(const char *from, int to)
{
    _cleanup_close_ int fd = open(from, O_RDONLY | O_CLOEXEC);
    struct stat st;
    off_t off = 0;

    if (fd < 0 || fstat(fd, &st) < 0)
        return -errno;
    while (off < st.st_size)
        if (sendfile(to, fd, &off, (size_t)(st.st_size - off)) <= 0)
            return -EIO;
    return fchmod(to, 0700) < 0 ? -errno : 0;
}

/* The binary is unlinked while it runs: only map_files still reaches it. */
static void test_deleted(struct symbolizer *s, const char *path)
{
    char copy[] = "/tmp/symtest-deleted-XXXXXX";
    struct child c = {.stdin_fd = -1};
    int fd, r;

    fd = mkostemp(copy, O_CLOEXEC);
    r = fd < 0 ? -errno : copy_file(path, fd);
    if (fd >= 0)
        close(fd);
    if (r == 0)
        r = spawn(copy, &c);
    unlink(copy);
    CHECK(r == 0, "deleted: copy of the PIE program runs and is unlinked (%d)", r);
    if (r == 0) {
        symbolizer_begin_pass(s);
        check_child_frames(s, "deleted", &c);
    }
    reap(&c);
}

static void test_own_mappings(struct symbolizer *s)
{
    uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
    char name[NAME_MAX_LEN];
    void *anon;
    int r;

    anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(anon != MAP_FAILED, "anonymous executable mapping made");
    symbolizer_begin_pass(s);
    if (anon != MAP_FAILED) {
        r = symbolizer_user_frame(s, getpid(), 0, (uintptr_t)anon + 16, true, name, sizeof(name),
                                  NULL);
        CHECK(r == 0 && strcmp(name, "[anon]") == 0, "anonymous memory -> %s", name);
        munmap(anon, 4096);
    }
    if (vdso) {
        r = symbolizer_user_frame(s, getpid(), 0, vdso + 16, true, name, sizeof(name), NULL);
        CHECK(r == 0 && strcmp(name, "[vdso]") == 0, "vdso -> %s", name);
    }
    r = symbolizer_user_frame(s, getpid(), 0, 0x10, true, name, sizeof(name), NULL);
    CHECK(r < 0 && strcmp(name, "[unknown]") == 0, "address in no mapping -> %s (%d)", name, r);
    r = symbolizer_user_frame(s, getpid(), 0, (uintptr_t)test_own_mappings, true, name, 8, NULL);
    CHECK(r == 0 && strlen(name) == 7, "name cut to the buffer: %s", name);
}

/* The point of the lld binary: its code is loaded at an address other than
 * its file offset, so that confusing the two would fail. */
static void test_lld_layout(const char *path)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf *elf;
    size_t n = 0;
    bool differs = false;

    elf_version(EV_CURRENT);
    elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    if (elf && elf_getphdrnum(elf, &n) == 0)
        for (size_t i = 0; i < n; i++) {
            GElf_Phdr ph;

            if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
                differs = ph.p_offset != ph.p_vaddr;
        }
    if (elf)
        elf_end(elf);
    CHECK(differs, "lld: executable PT_LOAD has p_offset != p_vaddr");
}

struct ksym_found {
    uint64_t addr;
    char name[NAME_MAX_LEN];
    char module[NAME_MAX_LEN];
};

/* The first symbol of /proc/kallsyms matching: a name, or with want_module
 * any symbol of a module (not a tracer frame), or with tracer one of those. */
static bool kallsyms_find(const char *want, bool want_module, bool tracer, struct ksym_found *ret)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/kallsyms", "re");
    char line[1024];

    while (f && fgets(line, sizeof(line), f)) {
        char type, name[NAME_MAX_LEN], module[NAME_MAX_LEN] = "";
        uint64_t addr;

        if (sscanf(line, "%" SCNx64 " %c %511s [%511[^]]]", &addr, &type, name, module) < 3 ||
            addr == 0 || !strchr("tT", type))
            continue;
        if ((want && strcmp(name, want) != 0) || (want_module && !module[0]) ||
            kallsyms_is_tracer_frame(name) != tracer)
            continue;
        *ret = (struct ksym_found){.addr = addr};
        snprintf(ret->name, sizeof(ret->name), "%s", name);
        snprintf(ret->module, sizeof(ret->module), "%s", module);
        return true;
    }
    return false;
}

static void test_kernel(struct symbolizer *s)
{
    char name[NAME_MAX_LEN], want[2 * NAME_MAX_LEN + 4];
    struct ksym_found k;
    int r;

    symbolizer_begin_pass(s);
    CHECK(kallsyms_find("schedule", false, false, &k), "kallsyms lists schedule at 0x%" PRIx64,
          k.addr);
    r = symbolizer_kernel_frame(s, k.addr + 1, true, name, sizeof(name));
    CHECK(r == 0 && strcmp(name, "schedule") == 0, "kernel: schedule+1 -> %s", name);
    r = symbolizer_kernel_frame(s, k.addr + 1, false, name, sizeof(name));
    CHECK(r == 0 && strcmp(name, "schedule") == 0, "kernel: return to schedule+1 -> %s", name);
    r = symbolizer_kernel_frame(s, k.addr, false, name, sizeof(name));
    CHECK(strcmp(name, "schedule") != 0, "kernel: return to schedule+0 -> %s, not schedule", name);
    r = symbolizer_kernel_frame(s, 0x1000, true, name, sizeof(name));
    CHECK(r < 0 && strcmp(name, "[unknown]") == 0, "kernel: 0x1000 -> %s (%d)", name, r);
    if (kallsyms_find(NULL, false, true, &k)) {
        r = symbolizer_kernel_frame(s, k.addr, true, name, sizeof(name));
        CHECK(r == SYMBOLIZER_SKIP, "kernel: tracer frame %s is skipped (%d)", k.name, r);
    } else {
        printf("skip: no tracer frame in /proc/kallsyms\n");
    }
    if (kallsyms_find(NULL, true, false, &k)) {
        snprintf(want, sizeof(want), "%s [%s]", k.name, k.module);
        r = symbolizer_kernel_frame(s, k.addr, true, name, sizeof(name));
        CHECK(r == 0 && strcmp(name, want) == 0, "kernel: module symbol -> %s (want %s)", name,
              want);
    } else {
        printf("skip: no module symbol in /proc/kallsyms\n");
    }
}

/* An unknown kernel address may be code loaded since the last read: it
 * makes kallsyms be read again, but only after a while. */
static void test_kallsyms_retry(struct symbolizer *s)
{
    struct symbolizer_stats before, after;
    char name[NAME_MAX_LEN];

    symbolizer_get_stats(s, &before);
    symbolizer_kernel_frame(s, 0x1000, true, name, sizeof(name));
    symbolizer_get_stats(s, &after);
    CHECK(after.kallsyms_loads == before.kallsyms_loads, "kallsyms: no re-read right after a read");
    for (int i = 0; i < 16; i++)
        symbolizer_begin_pass(s);
    symbolizer_kernel_frame(s, 0x1000, true, name, sizeof(name));
    symbolizer_kernel_frame(s, 0x1000, true, name, sizeof(name));
    symbolizer_get_stats(s, &after);
    CHECK(after.kallsyms_loads == before.kallsyms_loads + 1,
          "kallsyms: re-read once for an unknown address, 16 passes later");
}

static int count_fds(void)
{
    _cleanup_(closedirp) DIR *d = opendir("/proc/self/fd");
    int n = 0;

    while (d && readdir(d))
        n++;
    return n;
}

static FILE *memfile(const char *text)
{
    return fmemopen((void *)text, strlen(text), "r");
}

static void test_proc_maps_parse(void)
{
    static const char text[] =
        "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/prog\n"
        "55d0c0a01000-55d0c0a05000 r-xp 00001000 08:01 1234 /usr/bin/prog\n"
        "7f0000000000-7f0000001000 r-xp 00002000 08:01 99 /tmp/my lib.so (deleted)\n"
        "7f0000002000-7f0000003000 rwxp 00000000 00:00 0 \n"
        "7f0000004000-7f0000005000 r-xp 00000000 00:00 0 [anon:jit]\n"
        "7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                  [vdso]\n"
        "not a mapping\n";
    _cleanup_fclose_ FILE *f = memfile(text);
    struct proc_maps m = {};
    const struct proc_map *p;

    CHECK(f && proc_maps_parse(f, &m) == 0 && m.n == 5, "maps: 5 executable mappings (%zu)", m.n);
    p = proc_maps_find(&m, 0x55d0c0a01234);
    CHECK(p && p->kind == PROC_MAP_FILE && p->pgoff == 0x1000 && p->inode == 1234 &&
              p->dev_major == 8 && strcmp(p->path, "/usr/bin/prog") == 0,
          "maps: file mapping parsed");
    p = proc_maps_find(&m, 0x7f0000000010);
    CHECK(p && p->deleted && strcmp(p->path, "/tmp/my lib.so") == 0,
          "maps: deleted file with a space in its name");
    p = proc_maps_find(&m, 0x7f0000002010);
    CHECK(p && p->kind == PROC_MAP_ANON && !p->path, "maps: anonymous mapping");
    p = proc_maps_find(&m, 0x7f0000004010);
    CHECK(p && p->kind == PROC_MAP_ANON, "maps: named anonymous mapping");
    p = proc_maps_find(&m, 0x7ffd00000010);
    CHECK(p && p->kind == PROC_MAP_VDSO, "maps: vdso");
    CHECK(!proc_maps_find(&m, 0x55d0c0a00010), "maps: non-executable mapping dropped");
    proc_maps_done(&m);
}

static const struct elf_symbols_budget unbounded = {SIZE_MAX, NULL, NULL};

/* A file's symbols over the cap: not read, the file still places offsets;
 * under it, 24 bytes a symbol and its name. */
static void test_symbol_cap(const char *path)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct elf_symbols *e = NULL;
    struct elf_symbols_budget small = {4096, NULL, NULL};
    uint64_t vaddr;
    size_t n, bytes;

    CHECK(fd >= 0 && elf_symbols_read(fd, &unbounded, &e) == 0, "cap: %s read", path);
    if (!e)
        return;
    n = elf_symbols_count(e);
    bytes = elf_symbols_memory(e);
    CHECK(n > 0 && !elf_symbols_refused(e) && bytes < n * (24 + 64),
          "cap: %zu symbols in %zu bytes, %zu a symbol", n, bytes, bytes / (n ?: 1));
    e = elf_symbols_free(e);
    small.cap = bytes / 2;
    CHECK(elf_symbols_read(fd, &small, &e) == 0 && elf_symbols_refused(e) &&
              elf_symbols_count(e) == 0 && elf_symbols_memory(e) == 0,
          "cap: over %zu bytes, refused", small.cap);
    CHECK(e && elf_symbols_offset_to_vaddr(e, 0, &vaddr) == 0,
          "cap: refused, offsets still placed");
    e = elf_symbols_free(e);
}

/* Read a file made of the given bytes; it must not crash, and must not
 * claim symbols it does not have. */
static int read_bytes(const void *bytes, size_t n, struct elf_symbols **ret)
{
    _cleanup_close_ int fd = memfd_create("hostile", MFD_CLOEXEC);

    if (fd < 0 || write(fd, bytes, n) != (ssize_t)n)
        return -errno;
    return elf_symbols_read(fd, &unbounded, ret);
}

static void test_hostile_elf(const char *real)
{
    _cleanup_free_ unsigned char *buf = NULL;
    _cleanup_close_ int fd = open(real, O_RDONLY | O_CLOEXEC);
    struct elf_symbols *e = NULL;
    struct stat st;
    unsigned seed = 1;
    int r;

    CHECK(read_bytes("", 0, &e) == -ENOEXEC, "elf: empty file rejected");
    CHECK(read_bytes("#!/bin/sh\n", 10, &e) == -ENOEXEC, "elf: script rejected");
    if (fd < 0 || fstat(fd, &st) < 0 || !(buf = malloc((size_t)st.st_size)) ||
        read(fd, buf, (size_t)st.st_size) != st.st_size) {
        CHECK(false, "elf: %s read", real);
        return;
    }
    r = read_bytes(buf, (size_t)st.st_size, &e);
    CHECK(r == 0 && elf_symbols_count(e) > 0, "elf: intact copy has %zu symbols",
          e ? elf_symbols_count(e) : 0);
    e = elf_symbols_free(e);
    for (size_t len = 16; len < (size_t)st.st_size; len *= 3) {
        r = read_bytes(buf, len, &e);
        e = elf_symbols_free(e);
    }
    CHECK(true, "elf: truncated copies read without a crash");
    for (int round = 0; round < 200; round++) {
        _cleanup_free_ unsigned char *bad = malloc((size_t)st.st_size);

        if (!bad)
            break;
        memcpy(bad, buf, (size_t)st.st_size);
        /* corrupt headers and tables: the first 4 KiB and random bytes */
        for (int i = 0; i < 64; i++) {
            size_t at = (size_t)rand_r(&seed) % (size_t)st.st_size;

            if (i % 2)
                at %= 4096;
            bad[at] = (unsigned char)rand_r(&seed);
        }
        r = read_bytes(bad, (size_t)st.st_size, &e);
        if (r == 0) {
            uint64_t vaddr;

            for (uint64_t off = 0; off < 0x10000; off += 0x100)
                if (elf_symbols_offset_to_vaddr(e, off, &vaddr) == 0)
                    (void)elf_symbols_lookup(e, vaddr);
        }
        e = elf_symbols_free(e);
    }
    CHECK(true, "elf: 200 corrupted copies read without a crash");
}

int main(int argc, char **argv)
{
    /* stripped: the PIE program without .symtab, named from the debug file its
     * .gnu_debuglink names */
    static const char *const labels[] = {"pie",      "nopie", "lld",     "withlib",
                                         "stripped", "cpp",   "rust-v0", "rust-legacy"};
    struct symbolizer *s = NULL;
    struct symbolizer_stats st;
    int fds = count_fds();

    if (argc != 9) {
        fprintf(stderr, "usage: %s PIE NOPIE LLD WITHLIB STRIPPED CPP RUST_V0 RUST_LEGACY\n",
                argv[0]);
        return 2;
    }
    /* a test program must not outlive a failed check */
    signal(SIGPIPE, SIG_IGN);
    CHECK(symbolizer_new(SIZE_MAX, &s) == 0, "symbolizer made");
    if (!s)
        return CHECK_EXIT();
    for (int i = 1; i < argc; i++)
        test_program(s, labels[i - 1], argv[i]);
    test_lld_layout(argv[3]);
    test_deleted(s, argv[1]);
    test_own_mappings(s);
    test_symbol_cap(argv[1]);
    test_kernel(s);
    symbolizer_get_stats(s, &st);
    printf("stats: %" PRIu64 " ELF files, %" PRIu64 " read, %" PRIu64 " maps reads, %" PRIu64
           "/%" PRIu64 " user named, %" PRIu64 "/%" PRIu64 " kernel named, %" PRIu64
           " kallsyms reads\n",
           st.elf_files, st.elf_opens, st.maps_reads, st.user_named, st.user_frames,
           st.kernel_named, st.kernel_frames, st.kallsyms_loads);
    CHECK(st.kallsyms_loads == 1, "kallsyms read once");
    test_kallsyms_retry(s);
    s = symbolizer_free(s);
    test_proc_maps_parse();
    test_hostile_elf(argv[1]);
    CHECK(count_fds() == fds, "no descriptor left open (%d, %d before)", count_fds(), fds);
    return CHECK_EXIT();
}
