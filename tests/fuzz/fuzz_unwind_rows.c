/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Drives bytes as an ELF file through the unwind rows' reading of it: the
 * program headers, .eh_frame_hdr's table, .eh_frame (typed SHT_PROGBITS or
 * SHT_X86_64_UNWIND) and its CIEs as cfi_check finds them by offset,
 * .debug_frame (compressed or not) where .eh_frame has no FDE, and libdw's
 * evaluation of the CFI their FDEs point at (a separate debug file's
 * .debug_frame is read by the same code), under the daemon's budget per file;
 * first, as the daemon does, the digest of all that (cfi_digest.h).
 * A file mapped by any process on the host reaches this code, as root:
 * whatever it holds, the answer is rows or an error, and the rows are
 * sorted, none covering another.
 */
#include <gelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfi_digest.h"
#include "unwind_rows.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    elf_version(EV_CURRENT);
    return cfi_digest_init() < 0 ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size ? size : 1); /* libelf may write to its image */
    struct unwind_budget budget = unwind_budget_for_file(NULL, 0);
    uint8_t digest[CFI_DIGEST_SIZE];
    struct unwind_rows rows;
    Elf *elf;

    if (!copy)
        return 0;
    memcpy(copy, data, size);
    elf = elf_memory(copy, size);
    if (elf)
        (void)cfi_digest(elf, NULL, digest);
    if (elf && unwind_rows_derive(elf, NULL, &budget, &rows) == 0) {
        for (size_t i = 1; i < rows.n; i++)
            if (rows.rows[i].pc <= rows.rows[i - 1].pc)
                abort();
        unwind_rows_done(&rows);
    }
    elf_end(elf);
    free(copy);
    return 0;
}
