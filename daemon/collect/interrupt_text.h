/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where the kernel's interrupt entry code lies, from /proc/kallsyms: the BPF
 * side tells a waker in an interrupt from a task by its kernel stack (see
 * bpf/wakers.bpf.h), for want of the per-CPU preempt count.
 */
#ifndef INTERRUPT_TEXT_H
#define INTERRUPT_TEXT_H

#include <stdint.h>

struct text_range {
    uint64_t start, end; /* [start, end); 0, 0: unknown */
};

struct interrupt_text {
    struct text_range
        irq_entry; /* __irqentry_text_start..end: asm_sysvec_*, asm_common_interrupt */
    struct text_range nmi_entry;     /* asm_exc_nmi */
    struct text_range softirq;       /* handle_softirqs */
    struct text_range softirq_entry; /* __softirqentry_text_start..end: __do_softirq */
};

/* Reads path (the format of /proc/kallsyms). A function's end is the next
 * symbol's start. Returns 0, or a negative errno (-ENOENT: no interrupt
 * entry section named, or addresses hidden). */
int interrupt_text_read(const char *path, struct interrupt_text *ret);

#endif
