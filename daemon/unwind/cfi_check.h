/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A check of a file's .eh_frame (or .debug_frame) before libdw evaluates
 * it: a file any process maps reaches the daemon, and libdw trusts what it
 * reads. A register number
 * in the millions makes it allocate (and clear) gigabytes; an FDE of
 * thousands of instructions, evaluated again for each of its rows, costs
 * their square. This decodes the instructions only to bound both, never to
 * evaluate them.
 */
#ifndef CFI_CHECK_H
#define CFI_CHECK_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind_budget.h"

/* Register numbers allowed: x86-64's DWARF numbers end well below. */
#define CFI_REGISTERS_MAX 128
/* Instructions of one FDE, and the work of all: the rows of an FDE are
 * found by evaluating its CIE's instructions and its own from its start, row
 * by row, and every entry costs a lookup however few instructions it has. */
#define CFI_FDE_OPS_MAX   4096
#define CFI_FILE_WORK_MAX (1ULL << 27)
/* Bytes of one CFI section (a big C++ program's .eh_frame: ~10 MiB); FDEs
 * of .debug_frame, whose list is made here (libdw keeps ~100 bytes for each
 * it evaluates: libLLVM-15 has 98k); CIEs (linkers merge equal ones: Debian's
 * libraries have 1 to 4). */
#define CFI_SECTION_MAX (64U << 20)
#define CFI_FDES_MAX    (1U << 20)
#define CFI_CIES_MAX    (1U << 14)

/* 0 when every CIE and FDE of elf's .eh_frame (SHT_PROGBITS, or
 * SHT_X86_64_UNWIND as lld 15 and later type it) can be evaluated within
 * those bounds; -ENODATA without one; -EBADMSG for what cannot be decoded or
 * names a register beyond; -E2BIG for more entries or work than allowed;
 * what unwind_budget_check says of budget (NULL: none) while it runs. */
int cfi_check(Elf *elf, struct unwind_budget *budget);

/* The same of elf's .debug_frame; and where its FDEs start (ELF addresses,
 * in section order) into *ret (to free), their number into *n. */
int cfi_check_debug_frame(Elf *elf, struct unwind_budget *budget, uint64_t **ret, size_t *n);

#endif
