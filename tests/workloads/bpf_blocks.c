/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A BPF program that blocks, so that one shows in kernel stacks other than
 * at their leaf (where the tracer's own are): a sleepable syscall program
 * copies from user memory whose page is missing in a userfaultfd range,
 * and a thread answers each fault after 10 ms. The off-CPU stack runs
 * through bpf_prog_<tag>_PROGRAM_NAME, which must keep its name. Needs root.
 * At the end one JSON line gives the truth, with the program's name in
 * kallsyms ("ksym").
 *
 *   bpf_blocks [--rounds N] [--hold]
 *
 * --hold keeps the program loaded after the JSON line until stdin closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PROGRAM_NAME "offcpu_test_blk"
#define PAGE         4096

static int uffd;
static char *page;

static int bpf(int cmd, union bpf_attr *attr)
{
    return (int)syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* r6 = *(u64 *)ctx; bpf_copy_from_user(r10 - 8, 8, r6); return 0 */
static int load_program(void)
{
    struct bpf_insn insns[] = {
        {.code = BPF_LDX | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_6, .src_reg = BPF_REG_1},
        {.code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_1, .src_reg = BPF_REG_10},
        {.code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_1, .imm = -8},
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .imm = 8},
        {.code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_3, .src_reg = BPF_REG_6},
        {.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_copy_from_user},
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
        {.code = BPF_JMP | BPF_EXIT},
    };
    union bpf_attr attr;
    static char log[65536];
    int fd;

    memset(&attr, 0, sizeof(attr));
    attr.prog_type = BPF_PROG_TYPE_SYSCALL;
    attr.prog_flags = BPF_F_SLEEPABLE;
    attr.insns = (uintptr_t)insns;
    attr.insn_cnt = sizeof(insns) / sizeof(insns[0]);
    attr.license = (uintptr_t) "GPL";
    attr.log_buf = (uintptr_t)log;
    attr.log_size = sizeof(log);
    attr.log_level = 1;
    snprintf(attr.prog_name, sizeof(attr.prog_name), "%s", PROGRAM_NAME);
    fd = bpf(BPF_PROG_LOAD, &attr);
    if (fd < 0)
        fprintf(stderr, "BPF_PROG_LOAD: %s\n%s\n", strerror(errno), log);
    return fd;
}

/* Each fault on the page is answered 10 ms late. */
static void *answer_faults(void *arg)
{
    static char source[PAGE] __attribute__((aligned(PAGE)));
    struct pollfd pfd = {.fd = uffd, .events = POLLIN};
    struct uffd_msg msg;

    while (poll(&pfd, 1, -1) > 0) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        struct uffdio_copy copy = {.dst = (uintptr_t)page, .src = (uintptr_t)source, .len = PAGE};

        if (read(uffd, &msg, sizeof(msg)) != sizeof(msg))
            continue;
        if (msg.event != UFFD_EVENT_PAGEFAULT)
            continue;
        nanosleep(&ts, NULL);
        if (ioctl(uffd, UFFDIO_COPY, &copy) < 0 && errno != EEXIST)
            perror("UFFDIO_COPY");
    }
    return NULL;
}

static int setup_userfault(void)
{
    struct uffdio_api api = {.api = UFFD_API};
    struct uffdio_register reg = {.mode = UFFDIO_REGISTER_MODE_MISSING};

    uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0)
        return -1;
    page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return -1;
    reg.range.start = (uintptr_t)page;
    reg.range.len = PAGE;
    return ioctl(uffd, UFFDIO_REGISTER, &reg);
}

/* "bpf_prog_<tag>_<name>", as kallsyms lists a program. */
static void ksym_name(int prog, char *buf, size_t size)
{
    struct bpf_prog_info info;
    union bpf_attr attr;
    size_t len;

    memset(&info, 0, sizeof(info));
    memset(&attr, 0, sizeof(attr));
    attr.info.bpf_fd = (uint32_t)prog;
    attr.info.info_len = sizeof(info);
    attr.info.info = (uintptr_t)&info;
    bpf(BPF_OBJ_GET_INFO_BY_FD, &attr);
    len = (size_t)snprintf(buf, size, "bpf_prog_");
    for (size_t i = 0; i < sizeof(info.tag); i++)
        len += (size_t)snprintf(buf + len, size - len, "%02x", info.tag[i]);
    snprintf(buf + len, size - len, "_%s", info.name);
}

int main(int argc, char **argv)
{
    int rounds = 30, prog, runs = 0, hold = 0;
    pthread_t answerer;
    char ksym[64], c;
    uint64_t ctx;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--hold") == 0)
            hold = 1;
    }
    prog = load_program();
    if (prog < 0 || setup_userfault() < 0) {
        perror("setup");
        return 1;
    }
    pthread_create(&answerer, NULL, answer_faults, NULL);
    ctx = (uintptr_t)page;
    for (int i = 0; i < rounds; i++) {
        union bpf_attr attr;

        /* the page goes: the next copy faults again */
        madvise(page, PAGE, MADV_DONTNEED);
        memset(&attr, 0, sizeof(attr));
        attr.test.prog_fd = (uint32_t)prog;
        attr.test.ctx_in = (uintptr_t)&ctx;
        attr.test.ctx_size_in = sizeof(ctx);
        if (bpf(BPF_PROG_TEST_RUN, &attr) == 0)
            runs++;
    }
    ksym_name(prog, ksym, sizeof(ksym));
    printf("{\"pid\":%d,\"ksym\":\"%s\",\"runs\":%d}\n", (int)getpid(), ksym, runs);
    fflush(stdout);
    while (hold && read(STDIN_FILENO, &c, 1) > 0)
        ;
    return runs == rounds ? 0 : 1;
}
