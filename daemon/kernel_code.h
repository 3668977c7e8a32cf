/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Whether code has been loaded into the kernel or removed from it since
 * last asked: modules, and JITed BPF programs. Both are named from
 * /proc/kallsyms, which must then be read again: a new program is put
 * between older ones, whose names would otherwise stretch over it.
 */
#ifndef KERNEL_CODE_H
#define KERNEL_CODE_H

#include <stddef.h>
#include <stdint.h>

#include "kallsyms.h"

/* A hash of what code is loaded: it changes when a module or a BPF program
 * comes or goes. */
uint64_t kernel_code_hash(void);

/* Where the JITed functions of all BPF programs lie (each program's main
 * function and subprograms), sorted by start: kallsyms lists them without
 * sizes. Returns 0, or -errno when the programs cannot be listed. */
int bpf_code_extents(struct ksym_extent **ret, size_t *ret_n);

#endif
