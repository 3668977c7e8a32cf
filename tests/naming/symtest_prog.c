/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A process for the symbolizer's tests to name frames in. It prints its pid
 * and lines "CHECK KIND ADDRESS EXPECTED": KIND is "leaf" (a pc inside a
 * function) or "ret" (a return address, looked up as address - 1); EXPECTED
 * is a function name, "!name" for any name but that one, or "-" for an
 * address no symbol holds, which must be named "module+0xOFFSET". Then it
 * waits until its stdin closes.
 */
#include <elf.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <unistd.h>

#ifdef SYMTEST_WITH_LIB
#include "symtest_lib.h"
#endif

static volatile uintptr_t sink;
static jmp_buf escape_env;
static uintptr_t escape_ra;

/* A function with a size of one byte, then bytes no symbol covers, and a
 * function symbol without a size: neither may give the gap a name. */
__asm__(".text\n"
        ".globl symtest_sized\n"
        ".type symtest_sized, @function\n"
        "symtest_sized:\n"
        "\tret\n"
        ".size symtest_sized, 1\n"
        ".fill 63, 1, 0xcc\n"
        ".globl symtest_unsized\n"
        ".type symtest_unsized, @function\n"
        "symtest_unsized:\n"
        ".fill 64, 1, 0xcc\n");
void symtest_sized(void);
void symtest_unsized(void);

__attribute__((noinline)) void symtest_leaf_target(void)
{
    for (int i = 0; i < 8; i++)
        sink += (uintptr_t)i;
}

__attribute__((noinline)) uintptr_t symtest_record_return(void)
{
    sink++;
    return (uintptr_t)__builtin_return_address(0);
}

__attribute__((noinline)) uintptr_t symtest_caller(void)
{
    uintptr_t ra = symtest_record_return();

    sink += ra;
    return ra;
}

__attribute__((noinline, noreturn)) void symtest_escape(void)
{
    escape_ra = (uintptr_t)__builtin_return_address(0);
    longjmp(escape_env, 1);
}

/* Its call is its last instruction: the return address is the first byte
 * past the function, named right only when address - 1 is looked up. */
__attribute__((noinline)) void symtest_end_caller(void)
{
    symtest_escape();
}

static void check(const char *kind, uintptr_t addr, const char *expected)
{
    printf("CHECK %s 0x%" PRIxPTR " %s\n", kind, addr, expected);
}

int main(void)
{
    const Elf64_Ehdr *ld_so = (const Elf64_Ehdr *)getauxval(AT_BASE);
    char c;

    printf("pid %d\n", (int)getpid());
    check("leaf", (uintptr_t)symtest_leaf_target, "symtest_leaf_target");
    check("leaf", (uintptr_t)symtest_leaf_target + 1, "symtest_leaf_target");
    check("ret", (uintptr_t)symtest_leaf_target + 1, "symtest_leaf_target");
    check("ret", (uintptr_t)symtest_leaf_target, "!symtest_leaf_target");
    check("ret", symtest_caller(), "symtest_caller");
    if (setjmp(escape_env) == 0)
        symtest_end_caller();
    check("ret", escape_ra, "symtest_end_caller");
    check("leaf", escape_ra, "!symtest_end_caller");
    check("leaf", (uintptr_t)symtest_sized, "symtest_sized");
    check("leaf", (uintptr_t)symtest_sized + 8, "-");
    check("leaf", (uintptr_t)symtest_unsized + 8, "-");
    /* where a process starts: ld.so's entry point, an unsized label named
     * _start in its debug file (none in Debian's ld.so alone); the return
     * address of its call to _dl_start, the root of every main thread's first
     * frames, is _start's */
    if (ld_so) {
        check("leaf", (uintptr_t)ld_so + ld_so->e_entry, "_start");
        check("ret", (uintptr_t)ld_so + ld_so->e_entry + 8, "_start");
        /* where _start goes on once _dl_start returns: a label of its own
         * in libc6-dbg's file, as addr2line names it */
        check("leaf", (uintptr_t)ld_so + ld_so->e_entry + 8, "_dl_start_user");
        check("ret", (uintptr_t)ld_so + ld_so->e_entry + 9, "_dl_start_user");
    }
#ifdef SYMTEST_WITH_LIB
    {
        uintptr_t ra, fn;

        symtest_lib_exported(&ra, &fn);
        check("ret", ra, "symtest_lib_exported");
        check("leaf", fn + 2, "symtest_lib_internal");
    }
#endif
    printf("ready\n");
    fflush(stdout);
    /* wait for the test to close our stdin */
    while (read(STDIN_FILENO, &c, 1) > 0)
        ;
    return 0;
}
