/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel frame names from /proc/kallsyms, kept current as code comes and
 * goes, at the least cost: kallsyms takes tens of milliseconds to read, and
 * on a busy host BPF programs are loaded and unloaded all the time.
 *
 * Modules that change make it be read again before the next lookup. A BPF
 * program that goes has its functions forgotten at once, so that its code
 * is not named after whatever is put there; one that comes makes kallsyms
 * be read again at the first address nothing names. BPF functions get the
 * exact extents the BPF subsystem gives.
 */
#ifndef KERNEL_SYMBOLS_H
#define KERNEL_SYMBOLS_H

#include <stdint.h>

struct kernel_symbols;

int kernel_symbols_new(struct kernel_symbols **ret);
struct kernel_symbols *kernel_symbols_free(struct kernel_symbols *k);

/* Once per pass: notice the modules and BPF programs that came or went. */
void kernel_symbols_begin_pass(struct kernel_symbols *k);

/* The function holding addr and its module (NULL for the kernel proper).
 * Returns 0 or -ENOENT. The strings live until the next lookup. */
int kernel_symbols_lookup(struct kernel_symbols *k, uint64_t addr, const char **ret_name,
                          const char **ret_module);

/* How many times /proc/kallsyms was read. */
uint64_t kernel_symbols_reads(const struct kernel_symbols *k);

#endif
