/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Perf maps (names of JIT code): the parser against made-up and hostile
 * lines; then the opening rules against real files of a real process that
 * runs as another user (nobody), which is what the daemon, as root, meets:
 * only a regular file of the process's owner, never through a symlink, a
 * hard link or a mount; then the symbolizer naming that process's anonymous
 * code, reading the map again only when it changed, and after the process
 * is gone. Needs root (it changes owners and user ids).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "macro.h"
#include "perf_map.h"
#include "symbolizer.h"

#define NOBODY     65534
#define OTHER_USER 12345
#define CODE_AT    0x3e0000000000ULL

static void check_name(const struct perf_map *m, uint64_t addr, const char *want)
{
    const char *name = perf_map_lookup(m, addr);

    if (!want)
        CHECK(!name, "perf map: 0x%" PRIx64 " -> none (%s)", addr, name ?: "none");
    else
        CHECK(name && strcmp(name, want) == 0, "perf map: 0x%" PRIx64 " -> %s (want %s)", addr,
              name ?: "none", want);
}

static void test_parse(void)
{
    static const char text[] =
        "1000 10 LazyCompile:*foo /app/x.js:12\n" /* name to the end of the line */
        "0x2000 0x20 with_prefix\n"
        "3000 10 crlf\r\n"
        "4000 0 empty_size\n"
        "ffffffffffffff00 1000 wraps_around\n"
        "10000000000000000 10 seventeen_digits\n"
        "5000 10\n"  /* no name */
        "5000 10 \n" /* empty name */
        "6000 10 tab\tinside\n"
        "7000 10 bad\xff utf8\n"
        "7100 10 overlong\xc0\xaf\n"
        "8000 10 caf\xc3\xa9\n"
        "9000 zz not_hex\n"
        " a000 10 leading_space\n"
        "b000 1000 outer\n"
        "b100 10 inner_later\n"
        "c000 10 first_at_c000\n"
        "c000 10 second_at_c000\n"
        "d000 10 last_without_newline";
    struct perf_map *m = NULL;

    CHECK(perf_map_parse(text, sizeof(text) - 1, &m) == 0, "perf map: made-up text parsed");
    if (!m)
        return;
    CHECK(perf_map_count(m) == 11, "perf map: 11 good lines kept (%zu)", perf_map_count(m));
    check_name(m, 0xfff, NULL);
    check_name(m, 0x1000, "LazyCompile:*foo /app/x.js:12");
    check_name(m, 0x100f, "LazyCompile:*foo /app/x.js:12");
    check_name(m, 0x1010, NULL);
    check_name(m, 0x201f, "with_prefix");
    check_name(m, 0x3000, "crlf");
    check_name(m, 0x4000, NULL);
    check_name(m, 0xffffffffffffff10, NULL);
    check_name(m, 0x5000, NULL);
    /* names are bytes, whatever they are: outputs escape them */
    check_name(m, 0x6000, "tab\tinside");
    check_name(m, 0x7000, "bad\xff utf8");
    check_name(m, 0x7100, "overlong\xc0\xaf");
    check_name(m, 0x8000, "caf\xc3\xa9");
    check_name(m, 0x9000, NULL);
    check_name(m, 0xa000, NULL);
    check_name(m, 0xb050, "outer");
    check_name(m, 0xb105, "inner_later"); /* compiled again there, later */
    check_name(m, 0xb200, "outer");
    check_name(m, 0xc005, "second_at_c000");
    check_name(m, 0xd000, NULL);
    perf_map_free(m);

    CHECK(perf_map_parse("", 0, &m) == 0 && perf_map_count(m) == 0, "perf map: empty file");
    m = perf_map_free(m);
}

/* Many functions over one address: a lookup gives up rather than read them
 * all, and gives no name rather than a doubtful one. */
static void test_many_overlaps(void)
{
    _cleanup_free_ char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    struct perf_map *m = NULL;

    for (int i = 0; i < 1000; i++)
        fprintf(f, "%x 100000 f%d\n", 0x1000 + i, i);
    fclose(f);
    CHECK(perf_map_parse(text, size, &m) == 0 && perf_map_count(m) == 1000,
          "perf map: 1000 overlapping functions");
    if (!m)
        return;
    check_name(m, 0x1000, "f0");
    check_name(m, 0x1050, "f80"); /* the latest of 81 */
    check_name(m, 0x13e7, NULL);  /* 1000 to look through */
    perf_map_free(m);
}

/* A process running as nobody, with an anonymous executable mapping at
 * CODE_AT; in a mount namespace of its own when asked, so that the test can
 * mount over its perf map. It waits for its stdin to close. */
struct target {
    pid_t pid;
    int release;
};

static int start_target(bool own_mounts, struct target *t)
{
    int go[2], ready[2];
    char c;

    if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0)
        return -errno;
    t->pid = fork();
    if (t->pid < 0)
        return -errno;
    if (t->pid == 0) {
        close(go[1]);
        close(ready[0]);
        if (own_mounts &&
            (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0))
            _exit(1);
        if (mmap((void *)CODE_AT, 4096, PROT_READ | PROT_EXEC,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED)
            _exit(1);
        if (setresgid(NOBODY, NOBODY, NOBODY) < 0 || setresuid(NOBODY, NOBODY, NOBODY) < 0)
            _exit(1);
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        (void)read(go[0], &c, 1);
        _exit(0);
    }
    close(go[0]);
    close(ready[1]);
    t->release = go[1];
    if (read(ready[0], &c, 1) != 1) {
        close(ready[0]);
        return -ECHILD;
    }
    close(ready[0]);
    return 0;
}

static void stop_target(struct target *t)
{
    int status;

    close(t->release);
    waitpid(t->pid, &status, 0);
}

static void map_path(pid_t pid, char *buf, size_t size)
{
    snprintf(buf, size, "/tmp/perf-%d.map", (int)pid);
}

static int write_file(const char *path, const char *text, uid_t owner)
{
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
        fchown(fd, owner, owner) < 0)
        return -errno;
    return 0;
}

static int try_open(pid_t pid)
{
    struct stat st;
    int fd = perf_map_open(pid, &st);

    if (fd >= 0)
        close(fd);
    return fd >= 0 ? 0 : fd;
}

static const char map_text[] = "3e0000000000 40 jit_function_one\n";

static void test_open_rules(void)
{
    char path[64], other[] = "/tmp/perf-map-test-XXXXXX";
    struct target t;
    int r;

    CHECK(start_target(false, &t) == 0, "target process runs as nobody");
    map_path(t.pid, path, sizeof(path));
    unlink(path);
    CHECK(try_open(t.pid) == -ENOENT, "perf map: none -> -ENOENT");

    CHECK(write_file(path, map_text, NOBODY) == 0 && try_open(t.pid) == 0,
          "perf map: the process owner's regular file is opened");
    CHECK(chown(path, OTHER_USER, OTHER_USER) == 0 && try_open(t.pid) == -EPERM,
          "perf map: another user's file is refused");
    CHECK(chown(path, 0, 0) == 0 && try_open(t.pid) == -EPERM,
          "perf map: root's file is refused for a process that is not root's");
    CHECK(chown(path, NOBODY, NOBODY) == 0 && link(path, other) == 0 && try_open(t.pid) == -EPERM,
          "perf map: a hard-linked file is refused");
    unlink(other);

    /* the target's own file, even: a symlink is never followed */
    r = close(mkstemp(other));
    CHECK(r == 0 && write_file(other, map_text, NOBODY) == 0 && unlink(path) == 0 &&
              symlink(other, path) == 0 && lchown(path, NOBODY, NOBODY) == 0 &&
              try_open(t.pid) == -EPERM,
          "perf map: a symlink is refused");
    unlink(path);
    unlink(other);

    CHECK(mkfifo(path, 0644) == 0 && chown(path, NOBODY, NOBODY) == 0 && try_open(t.pid) == -EPERM,
          "perf map: a FIFO is refused, without blocking");
    unlink(path);
    CHECK(mkdir(path, 0755) == 0 && chown(path, NOBODY, NOBODY) == 0 && try_open(t.pid) == -EPERM,
          "perf map: a directory is refused");
    rmdir(path);

    stop_target(&t);
    CHECK(try_open(t.pid) == -ESRCH, "perf map: process gone -> -ESRCH");
}

/* A file mounted over the map's path in the process's own mount namespace
 * (what a user namespace allows anyone) is refused, even one of its owner. */
static void test_mounted_over(void)
{
    char path[64], other[] = "/tmp/perf-map-test-XXXXXX";
    struct target t;
    int r;

    CHECK(start_target(true, &t) == 0, "target process runs as nobody in its own mounts");
    map_path(t.pid, path, sizeof(path));
    r = close(mkstemp(other));
    CHECK(r == 0 && write_file(other, map_text, NOBODY) == 0 &&
              write_file(path, map_text, NOBODY) == 0,
          "perf map and another file written");
    CHECK(try_open(t.pid) == 0, "perf map: opened before the mount");
    /* enter the target's mount namespace to mount there only */
    if (fork() == 0) {
        char ns[64];
        _cleanup_close_ int fd = -EBADF;

        snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int)t.pid);
        fd = open(ns, O_RDONLY | O_CLOEXEC);
        _exit(fd < 0 || setns(fd, CLONE_NEWNS) < 0 || mount(other, path, NULL, MS_BIND, NULL) < 0);
    }
    r = -1;
    wait(&r);
    CHECK(r == 0, "file bind-mounted over the perf map in the target's namespace");
    CHECK(try_open(t.pid) == -EPERM, "perf map: a file mounted over it is refused");
    stop_target(&t);
    unlink(path);
    unlink(other);
}

static int name_code(struct symbolizer *s, pid_t pid, uint64_t ip, bool leaf, char *buf,
                     size_t size)
{
    return symbolizer_user_frame(s, pid, 0, ip, leaf, buf, size, NULL);
}

/* The symbolizer: JIT code named while the process lives, the map read again
 * only when it changed, and kept once the process is gone. */
static void test_symbolizer(void)
{
    struct symbolizer_stats before, after;
    struct symbolizer *s = NULL;
    char path[64], name[256];
    struct target t;
    int r;

    CHECK(symbolizer_new(SIZE_MAX, &s) == 0 && start_target(false, &t) == 0,
          "symbolizer and target");
    map_path(t.pid, path, sizeof(path));
    CHECK(write_file(path, map_text, NOBODY) == 0, "perf map written");

    symbolizer_begin_pass(s);
    r = name_code(s, t.pid, CODE_AT + 0x10, true, name, sizeof(name));
    CHECK(r == 0 && strcmp(name, "jit_function_one") == 0, "jit: leaf -> %s", name);
    r = name_code(s, t.pid, CODE_AT + 0x40, false, name, sizeof(name));
    CHECK(r == 0 && strcmp(name, "jit_function_one") == 0, "jit: return to its end -> %s", name);
    r = name_code(s, t.pid, CODE_AT + 0x41, false, name, sizeof(name));
    CHECK(r == 0 && strcmp(name, "[anon]") == 0, "jit: past it -> %s", name);

    symbolizer_get_stats(s, &before);
    symbolizer_begin_pass(s);
    name_code(s, t.pid, CODE_AT + 0x10, true, name, sizeof(name));
    symbolizer_get_stats(s, &after);
    CHECK(after.perf_map_reads == before.perf_map_reads, "jit: unchanged map not read again");

    CHECK(write_file(path, "3e0000000000 40 jit_function_one\n3e0000000100 40 jit_function_two\n",
                     NOBODY) == 0,
          "perf map grows");
    symbolizer_begin_pass(s);
    r = name_code(s, t.pid, CODE_AT + 0x110, true, name, sizeof(name));
    symbolizer_get_stats(s, &after);
    CHECK(r == 0 && strcmp(name, "jit_function_two") == 0 &&
              after.perf_map_reads == before.perf_map_reads + 1,
          "jit: changed map read again -> %s", name);

    unlink(path);
    stop_target(&t);
    symbolizer_begin_pass(s);
    r = name_code(s, t.pid, CODE_AT + 0x110, true, name, sizeof(name));
    CHECK(r == 0 && strcmp(name, "jit_function_two") == 0, "jit: process gone -> %s", name);
    symbolizer_free(s);
}

int main(void)
{
    if (geteuid() != 0) {
        printf("skip: needs root\n");
        return 77;
    }
    signal(SIGPIPE, SIG_IGN);
    test_parse();
    test_many_overlaps();
    test_open_rules();
    test_mounted_over();
    test_symbolizer();
    return CHECK_EXIT();
}
