/* SPDX-License-Identifier: GPL-2.0-only */
#include "call_frames.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>

#define DWARF_REG_RSP 7

/* The CFA as rsp + offset, if that is what the expression says. */
static int32_t rsp_offset(const Dwarf_Op *ops, size_t nops)
{
    int64_t off;

    if (nops != 1)
        return OFFCPU_UNWIND_STOP;
    if (ops[0].atom == DW_OP_bregx && ops[0].number == DWARF_REG_RSP)
        off = (int64_t)ops[0].number2;
    else if (ops[0].atom == DW_OP_breg0 + DWARF_REG_RSP)
        off = (int64_t)ops[0].number;
    else
        return OFFCPU_UNWIND_STOP;
    /* at least the return address; bounded, as the BPF side reads there */
    return off >= 8 && off < (1 << 16) ? (int32_t)off : OFFCPU_UNWIND_STOP;
}

int call_frames_cfa_offset(int fd, uint64_t vaddr, int32_t *ret)
{
    Dwarf_Frame *frame = NULL;
    Dwarf_CFI *cfi;
    Dwarf_Op *ops;
    size_t nops;
    bool signal;
    Elf *elf;

    *ret = OFFCPU_UNWIND_STOP;
    elf_version(EV_CURRENT);
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf)
        return -ENOEXEC;
    cfi = dwarf_getcfi_elf(elf);
    /* a signal frame's "return address" is the interrupted pc: not ours */
    if (cfi && dwarf_cfi_addrframe(cfi, vaddr, &frame) == 0 &&
        dwarf_frame_info(frame, NULL, NULL, &signal) >= 0 && !signal &&
        dwarf_frame_cfa(frame, &ops, &nops) == 0)
        *ret = rsp_offset(ops, nops);
    free(frame);
    if (cfi)
        dwarf_cfi_end(cfi);
    elf_end(elf);
    return 0;
}
