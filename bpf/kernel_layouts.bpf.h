/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Fields whose type changed between the kernels offcpud runs on. vmlinux.h
 * is the build host's: a field read through it must be of the same kind on
 * every kernel, or CO-RE refuses to relocate it. Each such field is declared
 * here once per layout (libbpf's "___flavour" suffix), and the one the
 * running kernel has is picked at load.
 */
#ifndef KERNEL_LAYOUTS_BPF_H
#define KERNEL_LAYOUTS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

/* mm_struct.flags: an unsigned long up to 6.17, a bitmap struct (mm_flags_t)
 * since; its first word holds the same bits either way. */
struct mm_struct___flags_word {
    unsigned long flags;
} __attribute__((preserve_access_index));

struct mm_flags_bitmap {
    unsigned long first_word;
};

struct mm_struct___flags_bitmap {
    struct mm_flags_bitmap flags;
} __attribute__((preserve_access_index));

/* Where the first word of mm->flags is, from the start of struct mm_struct. */
static __always_inline __u64 mm_flags_offset(void)
{
    if (bpf_core_field_exists(((struct mm_struct___flags_word *)0)->flags))
        return bpf_core_field_offset(struct mm_struct___flags_word, flags);
    return bpf_core_field_offset(struct mm_struct___flags_bitmap, flags);
}

/* The first word of mm->flags into *flags; false if it could not be read.
 * btf: mm came through a BTF pointer, and is read directly (a load the JIT
 * guards, no helper call: this runs at every switch-out); else it is a
 * plain address, read by bpf_probe_read_kernel. */
static __always_inline bool mm_flags_of(const struct mm_struct *mm, const bool btf,
                                        unsigned long *flags)
{
    if (!btf)
        return !bpf_probe_read_kernel(flags, sizeof(*flags), (const void *)mm + mm_flags_offset());
    if (bpf_core_field_exists(((struct mm_struct___flags_word *)0)->flags))
        *flags = ((const struct mm_struct___flags_word *)mm)->flags;
    else
        *flags = ((const struct mm_struct___flags_bitmap *)mm)->flags.first_word;
    return true;
}

#endif
