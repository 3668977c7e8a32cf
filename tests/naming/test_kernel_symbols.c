/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel frames: kallsyms parsed, modules, and BPF programs.
 *
 * This kernel has no modules: module symbols are read from a fixture in the
 * exact format of /proc/kallsyms (lines of a real one, and module lines as
 * the kernel prints them: "%px %c %s\t[%s]"). BPF programs are real: the
 * test loads one and expects the name and address the BPF subsystem itself
 * reports for it, from the symbolizer, which must notice the new program.
 *
 * Usage: test_kernel_symbols KALLSYMS_FIXTURE
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "kallsyms.h"
#include "macro.h"
#include "symbolizer.h"

static void check_ksym(const struct kallsyms *k, uint64_t addr, const char *want_name,
                       const char *want_module, bool tracer)
{
    const char *name = NULL, *module = NULL;
    int r = kallsyms_lookup(k, addr, &name, &module);

    if (!want_name) {
        CHECK(r == -ENOENT, "kallsyms: 0x%" PRIx64 " -> none (%s)", addr, r == 0 ? name : "none");
        return;
    }
    CHECK(r == 0 && strcmp(name, want_name) == 0 &&
              (want_module ? module && strcmp(module, want_module) == 0 : !module) &&
              kallsyms_is_tracer_frame(name) == tracer,
          "kallsyms: 0x%" PRIx64 " -> %s [%s]%s", addr, r == 0 ? name : "none", module ?: "",
          tracer ? " (tracer kind)" : "");
}

static void test_fixture(const char *path)
{
    static const struct ksym_extent extents[] = {
        {0xffffffffc0022158, 0x100},
        {0xffffffffc0029a60, 0x200},
    };
    struct kallsyms *k = NULL;

    CHECK(kallsyms_new(&k) == 0 && kallsyms_load(k, path) == 0, "fixture %s read", path);
    if (!k)
        return;
    /* one entry per address (aliases, and a program listed twice) */
    CHECK(kallsyms_count(k) == 24, "fixture: 24 addresses (%zu)", kallsyms_count(k));
    check_ksym(k, 0xffffffff821f94a0 + 0x10, "schedule", NULL, false);
    check_ksym(k, 0xffffffff821f8540 + 0x100, "__schedule", NULL, false);
    check_ksym(k, 0xffffffff82400010, NULL, NULL, false); /* data: a boundary only */
    /* modules */
    check_ksym(k, 0xffffffffc0a40010 + 8, "ext4_get_group_number", "ext4", false);
    check_ksym(k, 0xffffffffc0a400a0 + 0x20, "ext4_block_in_group", "ext4", false);
    check_ksym(k, 0xffffffffc0a7c010, NULL, NULL, false); /* module data */
    check_ksym(k, 0xffffffffc0b00000 + 0x10, "nft_do_chain", "nf_tables", false);
    check_ksym(k, 0xffffffffc0b00000 + 0x2000, NULL, NULL, false); /* past a module's last */
    check_ksym(k, 0xffffffffc0201000 + 4, "ftrace_trampoline", "__builtin__ftrace", false);
    /* BPF programs: module "bpf", and of the kind the tracer's frames are */
    check_ksym(k, 0xffffffffc0022158 + 0x20, "bpf_prog_2cedf4d50bc9a5ac_on_exec_btf", "bpf", true);
    check_ksym(k, 0xffffffffc0025b90 + 0x20, "bpf_prog_d072b13a8ec69a9a_sd_fw_ingress", "bpf",
               true);
    check_ksym(k, 0xffffffffc0029a60 + 0x2000, NULL, NULL, false); /* past the last program */

    /* the extents the BPF subsystem gives: exact, and none for a program
     * it does not list (gone, or loaded since) */
    kallsyms_set_extents(k, "bpf", extents, ARRAY_SIZE(extents));
    check_ksym(k, 0xffffffffc0022158 + 0xff, "bpf_prog_2cedf4d50bc9a5ac_on_exec_btf", "bpf", true);
    check_ksym(k, 0xffffffffc0022158 + 0x100, NULL, NULL, false);
    check_ksym(k, 0xffffffffc0029a60 + 0x1ff, "bpf_prog_129fc71284866132_charge_blocked", "bpf",
               true);
    check_ksym(k, 0xffffffffc0029a60 + 0x200, NULL, NULL, false);
    check_ksym(k, 0xffffffffc0025b90 + 0x20, NULL, NULL, false);
    check_ksym(k, 0xffffffffc0a40010 + 8, "ext4_get_group_number", "ext4", false);
    kallsyms_free(k);
}

static void test_tracer_names(void)
{
    static const struct {
        const char *name;
        bool tracer;
    } cases[] = {
        {"bpf_prog_6deef7357e7b4530_sd_fw_egress", true},
        {"bpf_prog_6deef7357e7b4530", true},
        {"bpf_trace_run4", true},
        {"__traceiter_sched_switch", true},
        {"__bpf_trace_sched_switch", true},
        {"bpf_prog_realloc", false},
        {"bpf_prog_6deef7357e7b45", false},
        {"schedule", false},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
        CHECK(kallsyms_is_tracer_frame(cases[i].name) == cases[i].tracer, "tracer frame %s: %s",
              cases[i].name, cases[i].tracer ? "yes" : "no");
}

/* Edge cases of the format: aliases, data, zero addresses, garbage. */
static void test_kallsyms_parse(void)
{
    static const char text[] = "ffffffff81000000 T _stext\n"
                               "ffffffff81000000 T startup_64\n"
                               "ffffffff81000100 t do_thing\n"
                               "ffffffff81000200 D some_data\n"
                               "ffffffff81000300 T last_core\n"
                               "0000000000000000 A per_cpu_thing\n"
                               "garbage line\n"
                               "ffffffffc0000000 t mod_func\t[mymod]\n"
                               "ffffffffc0000040 t mod_last\t[mymod]\n"
                               "ffffffffc0100000 t other_func\t[other]\n";
    _cleanup_fclose_ FILE *f = fmemopen((void *)text, strlen(text), "r");
    struct kallsyms *k = NULL;

    CHECK(kallsyms_new(&k) == 0 && f && kallsyms_parse(k, f) == 0, "made-up file read");
    if (!k)
        return;
    CHECK(kallsyms_count(k) == 7, "made-up: 7 symbols kept (%zu)", kallsyms_count(k));
    check_ksym(k, 0xffffffff80ffffff, NULL, NULL, false);
    check_ksym(k, 0xffffffff81000000, "startup_64", NULL, false);
    check_ksym(k, 0xffffffff810001ff, "do_thing", NULL, false);
    check_ksym(k, 0xffffffff81000200, NULL, NULL, false); /* data */
    check_ksym(k, 0xffffffff81000300, "last_core", NULL, false);
    check_ksym(k, 0xffffffff81002000, NULL, NULL, false); /* far past the core's last */
    check_ksym(k, 0xffffffffc0000041, "mod_last", "mymod", false);
    check_ksym(k, 0xffffffffc0080000, NULL, NULL, false); /* between modules */
    check_ksym(k, 0xffffffffc0100010, "other_func", "other", false);
    kallsyms_free(k);
}

/* A socket filter returning 0, named: the smallest program there is. */
static int load_program(const char *name)
{
    struct bpf_insn insns[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
        {.code = BPF_JMP | BPF_EXIT},
    };
    union bpf_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    attr.insns = (uintptr_t)insns;
    attr.insn_cnt = ARRAY_SIZE(insns);
    attr.license = (uintptr_t) "GPL";
    snprintf(attr.prog_name, sizeof(attr.prog_name), "%s", name);
    return (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
}

/* Where the program's code is and its kallsyms name, from the BPF subsystem. */
static int program_symbol(int fd, const char *name, uint64_t *addr, char *buf, size_t size)
{
    struct bpf_prog_info info;
    union bpf_attr attr;
    uint64_t ksym = 0;
    size_t len;

    memset(&info, 0, sizeof(info));
    info.nr_jited_ksyms = 1;
    info.jited_ksyms = (uintptr_t)&ksym;
    memset(&attr, 0, sizeof(attr));
    attr.info.bpf_fd = (uint32_t)fd;
    attr.info.info_len = sizeof(info);
    attr.info.info = (uintptr_t)&info;
    if (syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof(attr)) < 0)
        return -errno;
    if (!ksym)
        return -ENOENT; /* not JITed */
    *addr = ksym;
    len = (size_t)snprintf(buf, size, "bpf_prog_");
    for (size_t i = 0; i < sizeof(info.tag); i++)
        len += (size_t)snprintf(buf + len, size - len, "%02x", info.tag[i]);
    snprintf(buf + len, size - len, "_%s [bpf]", name);
    return 0;
}

/* The address of a function of the kernel proper, from /proc/kallsyms. */
static uint64_t core_function(const char *want)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/kallsyms", "re");
    char line[512], name[256], type;
    uint64_t addr;

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) == 3 &&
            strcmp(name, want) == 0)
            return addr;
    return 0;
}

static uint64_t reads(struct symbolizer *s)
{
    struct symbolizer_stats st;

    symbolizer_get_stats(s, &st);
    return st.kallsyms_loads;
}

/* What a reader without CAP_SYSLOG gets is told apart from the real thing. */
static void test_hidden_addresses(void)
{
    static const char hidden[] = "0000000000000000 T _stext\n0000000000000000 T do_thing\n";
    static const char shown[] = "ffffffff81000000 T _stext\n";
    /* 6.1 lists per-CPU offsets first, absolute, from 0 */
    static const char absolute_first[] = "0000000000000000 A fixed_percpu_data\n"
                                         "0000000000001000 A cpu_debug_store\n"
                                         "ffffffff81000000 T _stext\n";
    static const char hidden_absolute_first[] = "0000000000000000 A fixed_percpu_data\n"
                                                "0000000000000000 T _stext\n";
    _cleanup_fclose_ FILE *h = fmemopen((void *)hidden, strlen(hidden), "r");
    _cleanup_fclose_ FILE *s = fmemopen((void *)shown, strlen(shown), "r");
    _cleanup_fclose_ FILE *a = fmemopen((void *)absolute_first, strlen(absolute_first), "r");
    _cleanup_fclose_ FILE *ha =
        fmemopen((void *)hidden_absolute_first, strlen(hidden_absolute_first), "r");
    _cleanup_fclose_ FILE *empty = fopen("/dev/null", "re");
    _cleanup_fclose_ FILE *real = fopen("/proc/kallsyms", "re");

    CHECK(h && kallsyms_shows_addresses(h) == 0, "zeros: addresses hidden");
    CHECK(s && kallsyms_shows_addresses(s) == 1, "addresses shown");
    CHECK(a && kallsyms_shows_addresses(a) == 1, "absolute symbols first: the text tells");
    CHECK(ha && kallsyms_shows_addresses(ha) == 0, "absolute symbols first, text hidden");
    CHECK(empty && kallsyms_shows_addresses(empty) == -ENODATA, "empty file: -ENODATA");
    /* run as root, as the daemon is */
    CHECK(real && kallsyms_shows_addresses(real) == 1, "/proc/kallsyms shows root addresses");
}

/* A program loaded since kallsyms was read is named once it shows: its
 * address, unknown, makes kallsyms be read again (the kernel's own functions
 * do not). Once unloaded it names nothing, even before any read. */
static void test_program_loaded(void)
{
    uint64_t addr = 0, schedule = core_function("schedule"), before;
    struct symbolizer *s = NULL;
    char want[128], name[256];
    int fd, r;

    CHECK(symbolizer_new(SIZE_MAX, &s) == 0 && schedule, "symbolizer made, schedule at 0x%" PRIx64,
          schedule);
    if (!s)
        return;
    symbolizer_begin_pass(s);
    symbolizer_kernel_frame(s, 0x1000, false, name, sizeof(name)); /* kallsyms read now */
    fd = load_program("symtest_prog");
    r = fd < 0 ? -errno : program_symbol(fd, "symtest_prog", &addr, want, sizeof(want));
    CHECK(r == 0, "BPF program loaded and JITed at 0x%" PRIx64 " (%d)", addr, r);
    if (r == 0) {
        symbolizer_begin_pass(s);
        before = reads(s);
        r = symbolizer_kernel_frame(s, schedule + 1, false, name, sizeof(name));
        CHECK(r == 0 && strcmp(name, "schedule") == 0 && reads(s) == before,
              "kernel function named without reading kallsyms again -> %s", name);
        r = symbolizer_kernel_frame(s, addr + 1, false, name, sizeof(name));
        CHECK(r == SYMBOLIZER_SKIP && strcmp(name, want) == 0 && reads(s) == before + 1,
              "new BPF program -> %s (want %s, of the tracer's kind: %d), read again", name, want,
              r);
        close(fd);
        symbolizer_begin_pass(s);
        r = symbolizer_kernel_frame(s, addr + 1, false, name, sizeof(name));
        CHECK(r < 0 && strcmp(name, "[unknown]") == 0, "unloaded BPF program -> %s", name);
    }
    symbolizer_free(s);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s KALLSYMS_FIXTURE\n", argv[0]);
        return 2;
    }
    test_tracer_names();
    test_kallsyms_parse();
    test_hidden_addresses();
    test_fixture(argv[1]);
    test_program_loaded();
    return CHECK_EXIT();
}
