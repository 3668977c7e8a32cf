/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The executable mappings as the kernel answers PROCMAP_QUERY (6.11 on) are
 * those of the text of /proc/PID/maps, field for field, for processes of
 * every kind of executable mapping: programs and libraries, the vdso, code
 * in anonymous memory, a file deleted since it was mapped, a memfd. The
 * gate page ([vsyscall]) is the text's alone: no process maps it.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "proc_maps.h"

static int text_maps(pid_t pid, struct proc_maps *ret)
{
    char path[64];
    FILE *f;
    int r;

    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return -errno;
    r = proc_maps_parse(f, ret);
    fclose(f);
    return r;
}

static bool same_map(const struct proc_map *a, const struct proc_map *b)
{
    return a->start == b->start && a->end == b->end && a->pgoff == b->pgoff &&
           a->dev_major == b->dev_major && a->dev_minor == b->dev_minor && a->inode == b->inode &&
           strcmp(a->perms, b->perms) == 0 && a->kind == b->kind && a->deleted == b->deleted &&
           (a->path && b->path ? strcmp(a->path, b->path) == 0 : a->path == b->path);
}

static void compare(pid_t pid, const char *label)
{
    struct proc_maps asked = {}, text = {};
    size_t k = 0, n = 0;
    int r = proc_maps_read(pid, &asked), t = text_maps(pid, &text);

    CHECK(r == 0 && t == 0, "%s: both read (%d, %d)", label, r, t);
    for (size_t i = 0; i < text.n; i++) {
        if (text.maps[i].start >= 0xffffffffff600000ULL)
            continue; /* [vsyscall] */
        n++;
        if (k < asked.n && same_map(&asked.maps[k], &text.maps[i]))
            k++;
        else
            CHECK(false, "%s: %#llx-%#llx %s not the same", label,
                  (unsigned long long)text.maps[i].start, (unsigned long long)text.maps[i].end,
                  text.maps[i].path ?: "");
    }
    CHECK(k == n && asked.n == n, "%s: %zu of %zu mappings the same, %zu asked", label, k, n,
          asked.n);
    proc_maps_done(&asked);
    proc_maps_done(&text);
}

/* A stock program, once the dynamic linker has mapped its libraries. */
static pid_t program_child(void)
{
    pid_t pid = fork();
    struct proc_maps m = {};

    if (pid == 0) {
        execl("/usr/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        bool libc = false, program = false;

        /* libc alone is no sign: the child has this test's until it execs */
        if (proc_maps_read(pid, &m) == 0)
            for (size_t k = 0; k < m.n; k++) {
                libc |= m.maps[k].path && strstr(m.maps[k].path, "/libc.so");
                program |= m.maps[k].path && strcmp(m.maps[k].path, "/usr/bin/sleep") == 0;
            }
        proc_maps_done(&m);
        if (libc && program)
            break;
        usleep(10000);
    }
    return pid;
}

/* A child with code in anonymous memory, in a file unlinked since, in a memfd. */
static pid_t odd_child(int ready[2])
{
    pid_t pid = fork();

    if (pid == 0) {
        char path[] = "/tmp/test_proc_maps_XXXXXX";
        int fd = mkstemp(path), mfd = memfd_create("code", 0);
        char c = 1;

        if (fd < 0 || mfd < 0 || ftruncate(fd, 4096) < 0 || ftruncate(mfd, 4096) < 0 ||
            mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED ||
            mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, mfd, 0) == MAP_FAILED ||
            mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) ==
                MAP_FAILED)
            c = 0;
        unlink(path);
        if (write(ready[1], &c, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    return pid;
}

int main(void)
{
    int ready[2];
    pid_t child;
    char c = 0;

    compare(getpid(), "this test");
    child = program_child();
    compare(child, "sleep");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK(pipe(ready) == 0, "pipe");
    child = odd_child(ready);
    CHECK(child > 0 && read(ready[0], &c, 1) == 1 && c == 1, "child mapped its code");
    compare(child, "anonymous, deleted and memfd code");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    {
        struct proc_maps gone = {};

        CHECK(proc_maps_read(child, &gone) == -ENOENT, "a process gone and reaped: ENOENT");
    }
    return CHECK_EXIT();
}
