/* SPDX-License-Identifier: GPL-2.0-only */
/* The shared library of the symbolizer's test program. */
#ifndef SYMTEST_LIB_H
#define SYMTEST_LIB_H

#include <stdint.h>

/* Calls a function of the library; returns in *ret_ra the return address
 * into symtest_lib_exported and in *ret_fn the address of
 * symtest_lib_internal, both as the library sees them (not through a PLT). */
uintptr_t symtest_lib_exported(uintptr_t *ret_ra, uintptr_t *ret_fn);

#endif
