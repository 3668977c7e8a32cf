/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where per-CPU variables lie relative to one another, from the kernel's
 * BTF (its .data..percpu section): the BPF side reaches this CPU's preempt
 * count from this CPU's run queue, which it can find through the current
 * task, because typed __ksym per-CPU variables need them in kallsyms
 * (CONFIG_KALLSYMS_ALL), which this kernel does not have.
 */
#ifndef PERCPU_VARS_H
#define PERCPU_VARS_H

#include <stdint.h>

struct btf;

/* &to - &from on any one CPU, both per-CPU variables of btf (vmlinux).
 * Returns 0, or a negative errno (-ENOENT: no such section or variable). */
int percpu_var_distance(const struct btf *btf, const char *from, const char *to, int64_t *ret);

#endif
