/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * .eh_frame_hdr: the linker's sorted table of where each FDE of .eh_frame
 * begins. libdw searches it but does not list it; the unwind rows need the
 * list to visit every FDE once.
 */
#ifndef EH_FRAME_HDR_H
#define EH_FRAME_HDR_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/* At most this many FDEs are listed (larger tables are refused): as many
 * as cfi_check.h allows .debug_frame. */
#define EH_FRAME_HDR_FDES_MAX (1U << 20)

/* The ELF addresses where the FDEs of elf begin, ascending, into *ret (to
 * free), and their number into *n. Returns 0, -ENODATA without a table
 * (or one in an encoding linkers do not write), -E2BIG, -ENOMEM. */
int eh_frame_hdr_fde_starts(Elf *elf, uint64_t **ret, size_t *n);

#endif
