/* SPDX-License-Identifier: GPL-2.0-only */
#include "symtest_lib.h"

static volatile uintptr_t sink;

/* Hidden: only in .symtab, and its address is not bent to a PLT entry of
 * the executable. */
__attribute__((noinline, visibility("hidden"))) uintptr_t symtest_lib_internal(void)
{
    sink += 3;
    return (uintptr_t)__builtin_return_address(0);
}

__attribute__((noinline)) uintptr_t symtest_lib_exported(uintptr_t *ret_ra, uintptr_t *ret_fn)
{
    *ret_ra = symtest_lib_internal();
    *ret_fn = (uintptr_t)symtest_lib_internal;
    sink += 5;
    return sink;
}
