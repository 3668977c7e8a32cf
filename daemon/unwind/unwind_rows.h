/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Unwind rows: an ELF file's call frame information (.eh_frame, else
 * .debug_frame, its own or its separate debug file's), as the BPF
 * walk reads it. Each row says, from its first address up to the next row's,
 * where the caller's frame is (the CFA: rsp + N, rbp + N, a PLT entry, or a
 * thread's entry where the walk ends) and where rbp was saved. libdw
 * evaluates the CFI; this only sorts what it says into rows.
 *
 * x86-64 only: the return address lies just below the CFA.
 */
#ifndef UNWIND_ROWS_H
#define UNWIND_ROWS_H

#include <gelf.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "offcpu.h"
#include "unwind_budget.h"

/* Rows one file may have: libc has ~20k, a big C++ program ~1M. */
#define UNWIND_ROWS_PER_FILE_MAX (4U << 20)

/* Executable PT_LOAD segments: where a mapping's file offsets lie in ELF
 * addresses. */
#define UNWIND_SEGMENTS_MAX 4

struct unwind_segment {
    uint64_t offset, vaddr, size;
};

struct unwind_rows {
    struct offcpu_unwind_row *rows; /* sorted by pc, none covering the same one */
    size_t n;
    struct unwind_segment segs[UNWIND_SEGMENTS_MAX];
    size_t nsegs;
    bool debug_frame; /* some rows say what .debug_frame does */
};

/* The rows of the ELF file elf, merged where neighbours say the same: from
 * its .eh_frame, and where that has no FDE from its .debug_frame, or (if it
 * has none) from that of debug, its separate debug file (NULL: none); within
 * budget (NULL: none). Returns 0, -ENODATA for a file without usable CFI,
 * -EBADMSG for CFI that cannot be decoded, -E2BIG past the bounds of
 * cfi_check.h or UNWIND_ROWS_PER_FILE_MAX or addresses beyond 4 GiB,
 * -ETIME or -ECANCELED as the budget says, -ENOMEM. */
int unwind_rows_derive(Elf *elf, Elf *debug, struct unwind_budget *budget, struct unwind_rows *ret);

/* An ELF file open to derive its rows from, and its debug file where they
 * would need it (NULL otherwise). */
struct unwind_source {
    Elf *elf, *debug;
    int debug_fd;
};

/* The ELF file open on fd (which stays the caller's) as a source; its debug
 * file is looked for as process pid sees path, the file's name (NULL: not
 * looked for). -ENOEXEC if it is not ELF. */
int unwind_source_open(int fd, pid_t pid, const char *path, struct unwind_source *ret);
void unwind_source_close(struct unwind_source *s);

/* The ELF address of file offset offset in an executable segment of r, or
 * -ENOENT. */
int unwind_rows_vaddr(const struct unwind_rows *r, uint64_t offset, uint64_t *ret);

void unwind_rows_done(struct unwind_rows *r);

#endif
