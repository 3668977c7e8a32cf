/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the BPF collector needs of the running kernel, probed before it is
 * loaded: a kernel that lacks something gets one line naming it and the
 * release that brought it, never a verifier's log as the only word.
 */
#ifndef KERNEL_FEATURES_H
#define KERNEL_FEATURES_H

#include <stddef.h>

/* The oldest kernel release with everything the collector needs. */
#define KERNEL_FEATURES_FLOOR "5.17"

/* Writes the names of the missing features ("bpf_loop (5.17), ...") into
 * buf; returns how many are missing (0: the collector can load), or a
 * negative errno. The environment variable OFFCPUD_ASSUME_MISSING (names,
 * comma-separated) makes those count as missing: how the tests play an older
 * kernel on a new one. */
int kernel_features_missing(char *buf, size_t size);

/* Does the kernel keep when each task became runnable (sched_info, of
 * CONFIG_SCHED_INFO, and a task's run queue through its cfs_rq), which
 * tells run-queue time from blocked time? 1 yes, 0 no, or a negative errno
 * (no kernel BTF to tell). */
int kernel_keeps_runnable_since(void);

/* Is name a function in the kernel's BTF (a kfunc a program may call, a
 * function fentry/fexit may name)? 1 yes, 0 no, or a negative errno (no
 * kernel BTF to tell). name in OFFCPUD_ASSUME_MISSING makes it 0. */
int kernel_has_function(const char *name);

/* Does a program at fexit of the kernel's function (in its BTF) load? 1
 * yes; 0 no: not in the BTF, or the kernel refuses (fentry and fexit load
 * with EPERM on some hypervisors' kernels); a negative errno where there is
 * no kernel BTF to tell. "fexit" in OFFCPUD_ASSUME_MISSING makes it 0. It
 * may still not attach (no trampolines on the architecture). */
int kernel_fexit_loads(const char *function);

#endif
