/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Code loaded into the kernel besides vmlinux, as the kernel lists it:
 * modules, and JITed BPF programs (which kallsyms names without sizes).
 */
#ifndef KERNEL_CODE_H
#define KERNEL_CODE_H

#include <stddef.h>
#include <stdint.h>

/* A hash of the modules loaded: it changes when one comes or goes. */
uint64_t modules_hash(void);

/* The ids of the BPF programs loaded, ascending (ids are never reused).
 * Returns 0, or -errno when they cannot be listed. */
int bpf_program_ids(uint32_t **ret, size_t *ret_n);

/* One JITed function of a BPF program: its main function or a subprogram. */
struct bpf_function {
    uint64_t start, len;
    uint32_t prog_id;
};

/* Every JITed function of every BPF program, sorted by start. Returns 0, or
 * -errno when the programs cannot be listed. */
int bpf_functions(struct bpf_function **ret, size_t *ret_n);

#endif
