/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A file's call frame information named by what it says, so that files with
 * the same (copies of a program, a container image's files under inodes of
 * their own) share the work of deriving their rows: SHA-256 over all that
 * unwind_rows_derive reads of the file and of its debug file (ELF, program
 * and section headers, section names, the bytes of .eh_frame, .eh_frame_hdr,
 * .debug_frame and of the PT_GNU_EH_FRAME segment).
 *
 * A cryptographic digest because any user can craft a file: one whose digest
 * they could make collide would lend their rows to another user's program.
 * libgcrypt's SHA-256: libsystemd already links it, and it uses the CPU's
 * SHA instructions (2 GB/s here: 0.25 ms for python3.11's CFI, whose rows
 * take 14 ms to derive).
 */
#ifndef CFI_DIGEST_H
#define CFI_DIGEST_H

#include <gelf.h>
#include <stdint.h>

#define CFI_DIGEST_SIZE 32

/* Once, before any thread starts (libgcrypt's rule). -EPROTO if the library
 * is older than the headers. */
int cfi_digest_init(void);

/* The digest of elf's call frame information and of debug's (NULL: no debug
 * file), into out. -ENODATA if a header cannot be read, -E2BIG past 128 MiB of
 * sections, -ENOMEM. */
int cfi_digest(Elf *elf, Elf *debug, uint8_t out[CFI_DIGEST_SIZE]);

#endif
