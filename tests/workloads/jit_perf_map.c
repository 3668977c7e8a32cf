/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A JIT in miniature: it writes two functions as machine code into
 * anonymous executable memory, describes them in /tmp/perf-PID.map (PID as
 * it sees itself), and blocks from inside them:
 *
 *   - JIT_LEAF_NAME makes the nanosleep syscall itself (the leaf frame is JIT code);
 *   - JIT_CALL_NAME calls back into C, which sleeps (a JIT return address).
 *
 * Both keep a frame pointer, so that the chain reaches back into main. At
 * exit the map is removed and one JSON line gives the truth, with the pid
 * as the host sees it (host_pid: from /proc, which a pid namespace's
 * process still sees as the host's unless it mounts its own).
 *
 *   jit_perf_map [--link TARGET] [--rounds N] [--leaf-name NAME] [--call-name NAME]
 *
 * --link makes /tmp/perf-PID.map a symlink to TARGET instead of writing it:
 * the code is then at JIT_BASE, so that TARGET can be written beforehand.
 * --leaf-name and --call-name name the two functions in the map (what a JIT
 * writes there is its own choice: "-" too).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "blocked_time.h"

#define NOINLINE      __attribute__((noinline))
#define JIT_BASE      0x3f0000000000ULL
#define JIT_CALL_AT   0x100
#define JIT_LEAF_NAME "LazyCompile:*jitSleep jit.js:1"
#define JIT_CALL_NAME "jit trampoline into C"

typedef long (*jit_sleep_fn)(const struct timespec *ts, struct timespec *rem);
typedef void (*jit_call_fn)(void (*fn)(struct blocked_time *), struct blocked_time *arg);

/* push rbp; mov rbp,rsp; mov eax,SYS_nanosleep; syscall; pop rbp; ret */
static const uint8_t leaf_code[] = {0x55, 0x48, 0x89, 0xe5, 0xb8, SYS_nanosleep, 0x00,
                                    0x00, 0x00, 0x0f, 0x05, 0x5d, 0xc3};
/* push rbp; mov rbp,rsp; mov rax,rdi; mov rdi,rsi; call rax; pop rbp; ret */
static const uint8_t call_code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8,
                                    0x48, 0x89, 0xf7, 0xff, 0xd0, 0x5d, 0xc3};

/* The C side of the call: the syscall made here, not in libc (which has no
 * frame pointers), so that this frame is seen too. */
NOINLINE static void called_from_jit_10ms(struct blocked_time *t)
{
    struct timespec ts = {0, 10 * 1000 * 1000};
    struct blocked_mark m = blocked_begin();
    long ret;

    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0L)
                     : "rcx", "r11", "memory");
    blocked_end(t, m);
}

NOINLINE static void run_jit_code(void *code, int rounds, struct blocked_time *leaf,
                                  struct blocked_time *call)
{
    jit_sleep_fn sleep_fn = (jit_sleep_fn)code;
    jit_call_fn call_fn = (jit_call_fn)((char *)code + JIT_CALL_AT);
    struct timespec ts = {0, 10 * 1000 * 1000};

    for (int i = 0; i < rounds; i++) {
        struct blocked_mark m = blocked_begin();

        sleep_fn(&ts, NULL);
        blocked_end(leaf, m);
        call_fn(called_from_jit_10ms, call);
    }
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
}

static void *emit_code(void)
{
    uint8_t *code = mmap((void *)JIT_BASE, 4096, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

    if (code == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memcpy(code, leaf_code, sizeof(leaf_code));
    memcpy(code + JIT_CALL_AT, call_code, sizeof(call_code));
    if (mprotect(code, 4096, PROT_READ | PROT_EXEC) < 0) {
        perror("mprotect");
        exit(1);
    }
    return code;
}

/* The first NSpid field: the pid in the namespace /proc belongs to. */
static int proc_pid(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    int pid = -1;

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "NSpid: %d", &pid) == 1)
            break;
    if (f)
        fclose(f);
    return pid;
}

static const char *leaf_name = JIT_LEAF_NAME, *call_name = JIT_CALL_NAME;

static void write_perf_map(const char *path, void *code)
{
    FILE *f = fopen(path, "w");

    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f, "%lx %zx %s\n", (unsigned long)code, sizeof(leaf_code), leaf_name);
    fprintf(f, "%lx %zx %s\n", (unsigned long)code + JIT_CALL_AT, sizeof(call_code), call_name);
    if (fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    struct blocked_time leaf = {0}, call = {0};
    const char *link_to = NULL;
    char path[64];
    int rounds = 50;
    void *code;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--link") == 0)
            link_to = argv[i + 1];
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--leaf-name") == 0)
            leaf_name = argv[i + 1];
        else if (strcmp(argv[i], "--call-name") == 0)
            call_name = argv[i + 1];
    }
    code = emit_code();
    snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
    if (link_to && symlink(link_to, path) < 0) {
        perror(path);
        return 1;
    }
    if (!link_to)
        write_perf_map(path, code);
    run_jit_code(code, rounds, &leaf, &call);
    unlink(path);
    printf("{\"pid\":%d,\"host_pid\":%d,\"code\":%lu,\"leaf_name\":\"%s\",\"call_name\":\"%s\","
           "\"leaf_offcpu_ns\":%lld,\"call_offcpu_ns\":%lld}\n",
           (int)getpid(), proc_pid(), (unsigned long)code, leaf_name, call_name, leaf.offcpu_ns,
           call.offcpu_ns);
    return 0;
}
